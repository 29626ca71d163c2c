//! Owner-timed turns: the owner of a handed-over mutex ends its own turn.
//!
//! When the lock rotates (module doc of [`super`], "Fairness"), each handover starts a
//! **turn**: the new owner re-locks from its own cache until the turn ends, then hands the lock
//! to the head waiter (the *successor*). The unlocker that makes a handover computes the new
//! turn's end (the successor's fairness window, [`crate::fairness::handoff_at`]) and names the
//! successor; it writes both into the grantee's wait node before the grant, and the grantee
//! copies them into its record at the pick-up ([`begin`]).
//!
//! The owner checks its turn on its unlock fast path: every `every`-th release ([`due_now`], a
//! thread-local countdown) it loads the wait list's word and, if anyone waits, reads the clock
//! and decides ([`verdict`]).
//! `every` adapts so that the checks come about [`CHECK_NS`] apart whatever the section length
//! (one clock read, ≈ 23 ns, per ≈ 2 µs: ≈ 1% at the shortest sections); a check that finds
//! nobody waiting doubles it, up to [`EVERY_QUIET`] ([`quiet`]; mutex module doc, "One transfer
//! per unlock", for its measurement).
//!
//! The successor sleeps on its window's timer and then waits awake for the handover, polling its
//! own wait node, away from the lock's cache line. At the end of the turn the owner hands over
//! if the successor is awake. If it still sleeps (its timer fires late: the timer's slack and a
//! wakeup of an idle vCPU, ≈ 50 + 20–30 µs on the development VM), the owner goes on re-locking
//! (the lock does not idle for a wakeup), yields once after [`YIELD_AFTER_NS`] in case the
//! successor was woken onto this very CPU and waits behind it, and hands over regardless after
//! [`SUCCESSOR_WAIT_NS`]. A turn therefore lasts its window plus the successor's timer lateness;
//! the window minimum ([`crate::fairness`]) is sized with that in mind.
//!
//! Why the owner ends the turn and not the head (whose `HANDOFF` request stays as the backstop
//! for owners without a turn): a head that wakes up to ask for the lock needs a CPU, and with all
//! CPUs busy the scheduler often queues it behind the very owner it should interrupt, where it
//! waits for the owner's time slice (≈ 1.1 ms here; `perf sched timehist`, 96 threads, CS load
//! 100: 245 such waits in 0.5 s while the other CPU idled). The owner is running by definition.
//!
//! An owner without a turn (it took the lock without a handover while others wait) gets the
//! **run limit** instead: after running for the window maximum without waiting in kslock it
//! yields once, with the lock released (module doc of [`super`], "Run limit").
//!
//! The successor's wait is bounded: from its turn's end, `GRANT_WAIT_NS` (4 checks, 8 µs) of
//! polling its wait node, stopping early if the owner sleeps or last ran on its CPU; then it
//! asks for the lock like any due head (`HANDOFF`, module doc of [`super`]). That also covers
//! an owner that left the lock free: a successor never takes a free lock before its turn, so
//! the lock can sit free for at most the rest of the turn plus that wait (the appointed head
//! slept on its window before the turns too). A turn whose owner never checks again (the list
//! emptied) stays in its record; the owner's next checked release of that lock, past the turn's
//! end, hands over, as the run limit would have yielded.
//!
//! The turn travels in the grantee's wait node (`Waiter::turn`): the unlocker writes it under
//! the wait_lock before the grant's Release store, the grantee reads it after the Acquire load
//! that sees the grant. All other fields live in the owner's own [`ThreadRec`] and are touched
//! only by that thread. Under loom the checks are never due (the models reach a turn's end
//! through `HANDOFF` and fair unlocks), and windows are empty, so a successor waits for its
//! grant at once and the models explore that wait.
//!
//! # Measured
//!
//! On the 2-vCPU development VM, the kslock mutex and parking_lot's per process,
//! `lockbench matrix --locks kslock-mutex,parking-lot-mutex --threads 2,8,32,96 --cs-load
//! 1,20,100 --secs 0.5 --warmup 0.1`, four runs per side alternated, medians, kops/s:
//!
//! | A/B | cells | ratio |
//! |---|---|---|
//! | turns (4c2982a, with `skip_spin`, since dropped: module doc of [`super`]) vs baton + pick-up yield (2a27d5b), binaries alternated | 32 / 96 threads, CS load 20 / 100 | 1.11 / 1.10, 1.08 / 1.06 (max/min 1.2–1.8 vs 1.3–1.8; p99.9 wait 4.5–14.2 vs 4.7–14.7 ms) |
//! | same | CS load 1, 8 / 32 / 96 threads | 1.12 / 0.87 / 1.04 (parking_lot's own runs of those cells moved 0.93–1.03 between the two sides) |
//! | same | 2 threads, and 8 threads CS load 20 / 100 | 0.92–1.03 |
//! | `KSLOCK_OFF=grant_wait` (on ÷ off), same binary | all 12 | geo-mean 1.05; CS load 20 at 8 / 32 / 96 threads 1.06 / 1.08 / 1.10; CS load 1 0.996–1.24; CS load 100 0.99–1.01 |
//!
//! (The first two rows were measured with a successor that picked its grant up without the
//! wait_lock, which could return without the lock: the runs where that happened panicked and
//! are not counted; the fix adds one wait_lock round trip per turn.)
//!
//! Where a turn's time goes (lock-events build, `lockbench matrix --locks kslock-mutex --threads
//! 96 --cs-load 20,100 --secs 1`): ≈ 2.7 / 12.5 turns per kop at CS load 20 / 100, turns of
//! ≈ 250 µs (1 474 kops/s at CS load 20) against a window minimum of 2 spin caps (20–80 µs,
//! [`crate::fairness`]); in 44–45% of the turns the owner yielded once for a successor still
//! asleep 80 µs after the turn's end, and 53–54% of the successors that waited awake got their
//! grant within the 8 µs wait, the rest asked with `HANDOFF`. The
//! timer's lateness, not the window, sets the turn's length there, and with it the p99.9 wait
//! at 96 threads (12–15 ms, README).
//!
//! Tried and dropped: an **early wake**, the successor's timer set early by the measured
//! lateness of such timers (an average over ≈ 8 wakeups, at most 80 µs), waiting awake for
//! the rest. Same A/B (`KSLOCK_OFF=early_wake`, four runs per side): geo-mean 1.00, p99.9 wait
//! at 96 threads unchanged (14.2 vs 12.6 ms at CS load 20, 15.2 vs 14.2 at 100), max/min
//! per-thread operations worse (3.0 vs 1.6, 2.6 vs 1.6): the successor's early spin took the
//! CPU the woken and barging threads use. A **repeated yield**, the owner yielding at its
//! turn's end and every 10 µs after while its successor still sleeps (instead of once at
//! 80 µs): binaries alternated, four runs each, `lockbench matrix --locks
//! kslock-mutex,parking-lot-mutex --threads 8,32,96 --cs-load 1,20,100 --secs 0.5`: 0.89–0.95
//! at CS load 20/100 and 32–96 threads (parking_lot's own cells 0.89–1.34 between the sides:
//! the VM changed phase during the runs), max/min per-thread operations at 96 threads, CS
//! load 20, 2.9 vs 1.7; not adopted.
//!
//! Session 13 (lock-events build, `lockbench matrix --locks kslock-mutex --threads 96
//! --cs-load 20,100 --secs 1`, one run per variant, alternated): the p99.9 wait at 96 threads
//! follows Little's law for the queue. A thread queues behind 93 of the 95 others
//! (`mutex_queued_behind` ÷ `mutex_queued`), and 6.5–8.0k queueings a second leave it at the
//! head after 11.7–14.4 ms, against a measured p99.9 of 12.6–16.8 ms. Each departure waits
//! for a wakeup. `perf sched latency` over the CS load 100 cell gives the workers' mean
//! wake-to-run delay as 90–125 µs, and `perf sched timehist` gives a p99 of 1 ms for threads
//! that slept. Three ways to make the successor ready sooner:
//!
//! | variant | p99.9 at CS load 20 / 100 | max/min per-thread ops | kops/s |
//! |---|---|---|---|
//! | none (`6f7b952`) | 11.5–15.7 / 13.6–16.8 ms | 1.4–2.0 / 1.6–2.3 | 1461–1822 / 300–375 |
//! | timer slack 1 ns (`PR_SET_TIMERSLACK` on the waiting thread) | 12.6–13.6 / 14.7 ms | 2.0–2.1 / 1.8–2.5 | 1468–1569 / 304–333 |
//! | successor yield-polls its node for the last ≤ 80 µs before its turn instead of sleeping | 12.6–16.8 / 14.7–16.8 ms | 2.9–3.0 / 2.4–3.1 | 1489–1738 / 323–356 |
//! | the same, and `hand_off` also wakes the waiter after the successor, which yield-polls until it is head | 18.9 / 27.3–29.4 ms | 4.3–5.2 / 3.4–4.5 | 1256–1550 / 259–335 |
//!
//! The yield-polling variants doubled the turns a second, to 5.3–8.7k. The queueings a second
//! rose only to 7.2–9.2k: turns replaced the other ways out of the queue, whose cause was not
//! found. The p99.9 wait did not fall. With a 20 µs window minimum the queueings reached
//! 10.6–10.8k and max/min per-thread ops went to 9–17. None of the variants was adopted.
//!
//! # Where the holding time goes
//!
//! With lock events (feature `lock-events`) every check while anyone waits also counts where
//! the owner is: inside its turn (`mutex_hold_turn`), past its turn's end with its successor
//! still asleep (`mutex_hold_turn_over`), or without a turn, by how it last took a mutex in
//! the slow path: before queueing (`mutex_hold_barged`), from the queue
//! (`mutex_hold_from_queue`), never (`mutex_hold_fast`). The checks come about [`CHECK_NS`]
//! apart in holding time (at CS load 100, ≈ 3.3 µs a section, at every release), so the counts
//! split the holding time. Session 32, the AMD EPYC guest, `lockbench matrix --locks
//! kslock-mutex --threads 8,32,96 --cs-load 1,20,100 --secs 1 --warmup 0.1`, per kop (turn /
//! past the end / from the queue / barged):
//!
//! | cell | split | queueings |
//! |---|---|---|
//! | CS load 100, 8 threads | 671 / 95 / 206 / 25 | 4.8 |
//! | CS load 100, 32 / 96 threads | 381 / 327 / 188 / 92 and 356 / 325 / 200 / 107 | 19.2 / 20.3 |
//! | CS load 20, 32 / 96 threads | 149 / 126 / 73 / 23 and 149 / 130 / 62 / 29 (of ≈ 370 checks) | 4.4 / 4.8 |
//! | CS load 1, 8 / 32 / 96 threads | 11.1 / 1.3 / 2.3 / 8.7, 4.1 / 2.4 / 4.4 / 12.5 and 4.4 / 3.0 / 5.6 / 10.1 (of ≈ 23 checks, one per ≈ 50 sections) | 0.1–0.2 |
//!
//! At 32–96 threads a turn runs as long past its end as inside it: the successor sleeps on its
//! window's timer (slack 50 µs), and in 80–85% of the turns the handover came 50–100 µs after
//! the end. A fifth of the holding goes to heads that took the lock from the queue without a
//! turn, a tenth to lockers that never queued (40–55% at CS load 1, where almost nobody
//! queues). A queued waiter waits for about one such visit by each of the others (Little's
//! law: 93 queued, ≈ 6.5k queueings a second, p99.9 14.7–16.8 ms). A successor timer set 50 µs
//! early (a scratch switch; it then waited awake for the rest) halved the time past the end (365
//! → 186 per kop at CS load 100, 146 → 76 at CS load 20), but heads from the queue held longer
//! (233 → 355), and queueings rose only 8–10% (22.4 → 24.1, 4.7 → 5.2 per kop), within the
//! spread of the 1 s p99.9 (`docs/mutex-tried.md`, session 32).

use crate::fairness;
use crate::sys;
use crate::thread::{by_id, ThreadRec, Turn};

/// The clock checks aim to come this far apart, ns: a turn ends at most about this late.
pub(super) const CHECK_NS: u64 = 2_000;
/// Largest `every` (releases between two clock checks): 256 releases of the shortest sections
/// (≈ 30 ns each here) are ≈ 8 µs.
const EVERY_MAX: u32 = 256;
/// How long past its turn's end an owner re-locks before it yields once for a successor that
/// still sleeps, ns: a timer's slack (50 µs, the kernel's default for normal threads) plus a
/// wakeup of an idle vCPU (≈ 20–30 µs here).
const YIELD_AFTER_NS: u64 = 80_000;
/// How long past its turn's end an owner waits for a sleeping successor before it hands the lock
/// over anyway (and wakes it), ns: twice [`YIELD_AFTER_NS`].
const SUCCESSOR_WAIT_NS: u64 = 2 * YIELD_AFTER_NS;

/// What the owner does at a checked release.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Release as usual.
    Release,
    /// Hand the lock to the head waiter instead of releasing it: the turn is over.
    HandOff,
    /// Release, then yield once: the run limit of an owner without a turn, or a turn's owner
    /// whose successor may be waiting behind it on its CPU.
    Yield,
}

/// Starts this thread's turn `t` with the lock at `lock` (no turn if `t.end` is 0). At a
/// pick-up.
pub(super) fn begin(me: &ThreadRec, lock: usize, t: Turn) {
    started();
    me.set_turn(if t.end == 0 { 0 } else { lock }, t);
}

/// Is a check due at this release? (A thread-local countdown over all of the thread's mutex
/// releases; the caller then loads the wait list's word and checks only if anyone waits.)
#[inline]
pub(super) fn due_now() -> bool {
    crate::thread::count_run_check()
}

/// Largest `every` that due checks finding nobody waiting grow it to ([`quiet`]).
const EVERY_QUIET: u32 = 16;

/// A due check found nobody waiting: the releases between two checks double, up to
/// [`EVERY_QUIET`], so that an uncontended thread loads the wait list's word at one release in
/// 16; a quiet check once the spacing has reached 16 turns the countdown off until the thread
/// next contends ([`started`]; module doc of [`super`], "One transfer per unlock").
/// (No clock read here: the clock-driven `verdict` adapts them while anyone waits.)
#[inline]
pub(super) fn quiet() {
    use crate::ablate::{on, Mech};
    if !on(Mech::QuietChecks) {
        return;
    }
    if on(Mech::QuietStop) && crate::thread::run_check_every() >= EVERY_QUIET {
        crate::thread::stop_run_checks();
    } else {
        crate::thread::adapt_run_checks(0, CHECK_NS, EVERY_QUIET);
    }
}

/// The calling thread contends for a mutex (its slow lock or unlock path, or a turn): its
/// release countdown runs again if [`quiet`] had turned it off.
#[inline]
pub(super) fn started() {
    crate::thread::start_run_checks();
}

/// How the calling thread last took a mutex in the slow path, for the holding-time samples of
/// the lock events (module doc, "Where the holding time goes"). Not kept without the feature.
#[derive(Clone, Copy)]
pub(super) enum Entry {
    /// Before queueing: the first try, the quick poll, a spin, a pre-queue yield.
    Barged = 1,
    /// From the wait queue (a handover, or a head that took the lock).
    FromQueue = 2,
}

#[cfg(feature = "lock-events")]
std::thread_local! {
    /// The calling thread's last [`Entry`] (0: none yet).
    static ENTRY: core::cell::Cell<u8> = const { core::cell::Cell::new(0) };
}

/// Records how the calling thread took a mutex in the slow path (lock events only).
#[inline]
pub(super) fn entered(how: Entry) {
    #[cfg(feature = "lock-events")]
    ENTRY.with(|e| e.set(how as u8));
    #[cfg(not(feature = "lock-events"))]
    let _ = how;
}

/// Counts one holding-time sample at a turn check by an owner without a turn (lock events).
fn sample_hold_without_turn() {
    #[cfg(feature = "lock-events")]
    {
        use crate::events::Event;
        crate::events::count(match ENTRY.with(|e| e.get()) {
            1 => Event::mutex_hold_barged,
            2 => Event::mutex_hold_from_queue,
            _ => Event::mutex_hold_fast,
        });
    }
}

/// The check itself (module doc): hand over, yield, or release.
#[cold]
#[inline(never)]
pub(super) fn verdict(me: &ThreadRec, lock: usize) -> Verdict {
    let now = sys::now_ns();
    crate::thread::adapt_run_checks(me.note_check(now), CHECK_NS, EVERY_MAX);
    let (turn_lock, t) = me.turn();
    if turn_lock == lock {
        if now < t.end {
            crate::events::count(crate::events::Event::mutex_hold_turn);
            return Verdict::Release;
        }
        let over = now.saturating_sub(t.end);
        if t.succ != 0 && by_id(t.succ).is_parked() && over < SUCCESSOR_WAIT_NS {
            crate::events::count(crate::events::Event::mutex_hold_turn_over);
            if over >= YIELD_AFTER_NS && me.turn_yield_once() {
                crate::events::count(crate::events::Event::mutex_turn_yield);
                return Verdict::Yield;
            }
            return Verdict::Release;
        }
        me.set_turn(0, Turn::default());
        return Verdict::HandOff;
    }
    sample_hold_without_turn();
    if !crate::ablate::on(crate::ablate::Mech::RunLimit) {
        return Verdict::Release;
    }
    if now.saturating_sub(me.running_since(now)) >= fairness::window_ns().1 {
        crate::events::count(crate::events::Event::mutex_run_yield);
        return Verdict::Yield;
    }
    Verdict::Release
}

#[cfg(all(test, not(kslock_loom)))]
mod tests {
    use super::*;
    use crate::thread::current;

    #[test]
    fn a_turn_ends_with_a_handover_and_an_owner_without_one_yields_past_the_window_max() {
        let me = current();
        let lock = 0x1000;
        // A turn that has not ended: release as usual.
        begin(
            me,
            lock,
            Turn {
                end: sys::now_ns() + 1_000_000_000,
                succ: 0,
            },
        );
        assert_eq!(verdict(me, lock), Verdict::Release);
        // Ended, no successor asleep: hand over, and the turn is gone.
        begin(me, lock, Turn { end: 1, succ: 0 });
        assert_eq!(verdict(me, lock), Verdict::HandOff);
        assert_eq!(me.turn().0, 0);
        // No turn, and running (releasing with waiters, no wait) for the window maximum:
        // the run limit yields once; a fresh run releases.
        me.reset_running_since(sys::now_ns() - fairness::window_ns().1 - 1);
        assert_eq!(verdict(me, lock), Verdict::Yield);
        me.reset_running_since(sys::now_ns());
        assert_eq!(verdict(me, lock), Verdict::Release);
        // A turn with another lock is no turn with this one.
        begin(me, 0x2000, Turn { end: 1, succ: 0 });
        assert_eq!(verdict(me, lock), Verdict::Release);
        // No turn at all (end 0) is recorded as none.
        begin(me, lock, Turn::default());
        assert_eq!(me.turn().0, 0);
    }

    #[test]
    fn checks_that_find_nobody_waiting_spread_to_16_releases_then_stop() {
        // Releases of uncontended mutexes: every due check finds nobody waiting
        // (`waiters_at_check` then calls `quiet`), and the checks double their spacing up to
        // EVERY_QUIET; the quiet check that finds it there turns the countdown off (module doc of
        // `super`, "Quiet stop") until the thread contends again.
        std::thread::spawn(|| {
            let run = || -> Vec<usize> {
                (0..100)
                    .filter(|_| {
                        let due = due_now();
                        if due {
                            quiet();
                        }
                        due
                    })
                    .collect()
            };
            assert_eq!(run(), [] as [usize; 0], "a fresh thread counts nothing");
            started();
            let due_at = run();
            let gaps: Vec<usize> = due_at.windows(2).map(|w| w[1] - w[0]).collect();
            if crate::ablate::on(crate::ablate::Mech::QuietStop) {
                assert_eq!(gaps, [1, 2, 4, 8], "{due_at:?}");
                started();
                assert_eq!(
                    run(),
                    [0],
                    "on again: due at once, then quiet at the widest spacing"
                );
            } else {
                assert_eq!(gaps[..6], [1, 2, 4, 8, 16, 16], "{due_at:?}");
            }
        })
        .join()
        .unwrap();
    }
}
