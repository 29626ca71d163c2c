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
//! nobody waiting doubles it, up to [`EVERY_QUIET`] ([`quiet`]; mutex module doc, "Quiet checks
//! and the quiet stop").
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
//! waits for the owner's time slice (`docs/experiments.md`, "Scheduler placement"). The owner
//! is running by definition.
//!
//! An owner without a turn (it took the lock without a handover while others wait) gets the
//! **run limit** instead: after running for the window maximum without waiting in kslock it
//! yields once, with the lock released (module doc of [`super`], "Run limit").
//!
//! The successor's wait is bounded: from its turn's end, `GRANT_WAIT_NS` (4 checks, 8 µs) of
//! polling its wait node, stopping early if the owner sleeps or last ran on its CPU; then it
//! asks for the lock like any due head (`HANDOFF`, module doc of [`super`]). That also covers
//! an owner that left the lock free: a successor never takes a free lock before its turn, so
//! the lock can sit free for at most the rest of the turn plus that wait. A turn whose owner never checks again (the list
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
//! # Where the holding time goes
//!
//! With lock events (feature `lock-events`) every check while anyone waits also counts where
//! the owner is: inside its turn (`mutex_hold_turn`), past its turn's end with its successor
//! still asleep (`mutex_hold_turn_over`), or without a turn, by how it last took a mutex in
//! the slow path: before queueing (`mutex_hold_barged`), from the queue
//! (`mutex_hold_from_queue`), never (`mutex_hold_fast`). The checks come about [`CHECK_NS`]
//! apart in holding time, so the counts split the holding time (the split measured at 96
//! threads: `docs/experiments.md`, "Anatomy of a turn").

use crate::fairness;
use crate::sys;
use crate::thread::{by_id, ThreadRec, Turn};

/// The clock checks aim to come this far apart, ns: a turn ends at most about this late.
pub(super) const CHECK_NS: u64 = 2_000;
/// Largest `every` (releases between two clock checks): 256 releases of the shortest sections
/// (≈ 30 ns each on the development VMs) are ≈ 8 µs.
const EVERY_MAX: u32 = 256;
/// How long past its turn's end an owner re-locks before it yields once for a successor that
/// still sleeps, ns: a timer's slack (50 µs, the kernel's default for normal threads) plus a
/// wakeup of an idle vCPU (≈ 20–30 µs on the development VMs).
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

#[cfg(feature = "stats")]
std::thread_local! {
    /// The calling thread's last [`Entry`] (0: none yet).
    static ENTRY: core::cell::Cell<u8> = const { core::cell::Cell::new(0) };
}

/// Records how the calling thread took a mutex in the slow path (lock events only).
#[inline]
pub(super) fn entered(how: Entry) {
    #[cfg(feature = "stats")]
    ENTRY.with(|e| e.set(how as u8));
    #[cfg(not(feature = "stats"))]
    let _ = how;
}

/// Counts one holding-time sample at a turn check by an owner without a turn (lock events).
fn sample_hold_without_turn() {
    #[cfg(feature = "stats")]
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
