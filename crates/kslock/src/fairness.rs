//! The fairness window: how long others may take a lock (the owner re-locking, spinners, new
//! lockers: *barging*) while its head waiter waits, before the head reserves it (HANDOFF).
//!
//! # Why a window
//!
//! When more threads want a lock than there are CPUs, the lock's throughput is decided by how
//! often ownership moves between threads: a move to a sleeping thread costs a wakeup (≈ 2 µs on
//! the same CPU, 20–30 µs across CPUs on the 2-vCPU development guests) and a move between
//! running threads a cache-line transfer (≈ 0.1–0.4 µs), against critical sections of 27 ns to
//! 3 µs. The best schedule keeps one thread re-locking from its own cache for a while (barging
//! is what makes locks fast) and moves ownership rarely, to a waiter that is already awake.
//!
//! Starvation is bounded the same way: a waiter that has been the head of the queue for its
//! window reserves the lock, and the next unlock hands it over (`docs/kernel-locks.md` B,
//! HANDOFF). The kernel asks for the handoff after one lost race (fair at µs scale, a handover
//! per wakeup); Go's mutex after 1 ms of waiting; parking_lot at a random 0–1 ms. kslock sizes
//! the window from the queue: every waiter should wait about `TARGET_NS` in total, so a head
//! that already waited long in the queue gets a short window and a head that arrived at an
//! empty queue lets the owner batch for up to the maximum:
//!
//! ```text
//! handoff_at = clamp(queued_at + TARGET, head_at + min, head_at + max)
//! ```
//!
//! With n waiters rotating, each head takes ≈ max(min, TARGET / n): 2 waiters batch for the
//! maximum, 96 waiters for the minimum, so a thread waits ≈ n × window for its next turn (the
//! p99.9 wait at 96 threads) and gets its share of the lock once per rotation (fair at ms
//! scale). A window costs one wakeup and one handover, a few µs; the minimum keeps that a small
//! part of it. The window trades throughput for the p99.9 wait at 96 threads and nothing else
//! (`docs/experiments.md`, "Window length" and "What a move costs").
//!
//! # The contract (the mutex; the rwsem's writers use the same windows)
//!
//! 1. **A queued waiter** at position k gets the lock within k × (its window + the head's
//!    timer lateness + one critical section + one handover): each head reserves the lock
//!    (HANDOFF) at the end of its window, and the unlock after that hands it over.
//! 2. **A thread that never queues** is sent to the queue: a thread that has taken contended
//!    mutexes for the window maximum without queueing or sleeping yields once at its next
//!    contended lock while others wait, and queues at the next one past the limit again (the
//!    mutex's barging limit, module doc of `kslock::mutex`); there (1) applies.
//!
//! Measured (test `mutex_barging_limit`, 96 threads on 2 CPUs, work outside the lock, 3 s): the
//! most and fewest operations per thread differ 4.8–6.9× (5 debug runs, 2026-12-02); the
//! suite's fairness pass reports the matrix cells' max/min ratios and STARVED cells.
//!
//! # Numbers
//!
//! | parameter | value | from | override |
//! |-----------|-------|------|----------|
//! | `TARGET_NS` | 4 ms | the kernel rwsem's handoff timeout (`RWSEM_WAIT_TIMEOUT`, ≈ 4 ms), the wait it accepts before reserving the lock | `KSLOCK_WAIT_TARGET_NS` |
//! | min | 2 × the spin cap, clamped to 20–80 µs (40 µs for the Intel guest's ≈ 20 µs cap, up to 80 µs on the AMD guests, whose cap calibrates to 20–40 µs) | the spin cap is calibrated near a sleep/wake round trip (module doc of `spin`, [`crate::spin_cap_ns`]); a handover costs a few µs of the owner's time and the window's timer adds its slack, so 2 round trips keep the overhead to a few % while 96 waiters still rotate in about 10 ms | `KSLOCK_WINDOW_MIN_NS` |
//! | max | `TARGET_NS` / 4 (1 ms), at least the minimum | at most a quarter of the total wait target per window: a waiter never waits more than about a millisecond for the lock to come back when only a few threads want it | `KSLOCK_WINDOW_MAX_NS` |
//!
//! The overrides exist only in experiment builds (`--cfg kslock_ablate`, the crate's `ablate` module),
//! read once per process. [`window_ns`] gives the bounds in force.

/// Total wait to aim for per waiter, ns (module doc).
#[cfg_attr(kslock_loom, allow(dead_code))] // loom: empty windows
pub(crate) const TARGET_NS: u64 = 4_000_000;
/// The window minimum in spin caps (module doc, "Numbers").
#[cfg_attr(kslock_loom, allow(dead_code))] // loom: empty windows
const MIN_CAPS: u64 = 2;
/// Lower clamp of the minimum, ns, for machines whose cap calibrates below 10 µs (bare metal):
/// a window stays several times the few µs a handover costs. Set, not tuned.
#[cfg_attr(kslock_loom, allow(dead_code))] // loom: empty windows
const MIN_FLOOR_NS: u64 = 20_000;
/// Upper clamp of the minimum, ns: 2 × the cap's own ceiling (40 µs); 96 waiters at 80 µs
/// rotate in ≈ 8 ms, under the 10 ms aimed at for the p99.9 wait.
#[cfg_attr(kslock_loom, allow(dead_code))] // loom: empty windows
const MIN_CEIL_NS: u64 = 80_000;

#[derive(Clone, Copy)]
struct Params {
    target: u64,
    min: u64,
    max: u64,
}

#[cfg(not(kslock_loom))]
fn params() -> Params {
    use core::sync::atomic::{AtomicU64, Ordering::Relaxed};
    // (target, min, max), computed once; 0 = not yet. Racing first users compute the same.
    static P: [AtomicU64; 3] = [const { AtomicU64::new(0) }; 3];
    let t = P[0].load(Relaxed);
    if t != 0 {
        return Params {
            target: t,
            min: P[1].load(Relaxed),
            max: P[2].load(Relaxed),
        };
    }
    let env = |k: &str| crate::ablate::tunable(k).filter(|&v| v > 0);
    let target = env("WAIT_TARGET_NS").unwrap_or(TARGET_NS);
    let min = env("WINDOW_MIN_NS").unwrap_or_else(|| {
        (crate::spin::spin_cap_ns() as u64 * MIN_CAPS).clamp(MIN_FLOOR_NS, MIN_CEIL_NS)
    });
    let max = env("WINDOW_MAX_NS").unwrap_or(target / 4).max(min);
    P[1].store(min, Relaxed);
    P[2].store(max, Relaxed);
    P[0].store(target, Relaxed);
    Params { target, min, max }
}

/// Under loom the clock is frozen at 0: empty windows make every head due at once, so the
/// models explore the handoff request on every head wakeup (the not-yet-due path is a park with
/// a deadline, which loom times out at once).
#[cfg(kslock_loom)]
fn params() -> Params {
    Params {
        target: 0,
        min: 0,
        max: 0,
    }
}

/// When may a head waiter that queued at `queued_at` and became head at `head_at` (monotonic
/// ns) reserve the lock? (Module doc.)
#[inline]
pub(crate) fn handoff_at(queued_at: u64, head_at: u64) -> u64 {
    if cfg!(kslock_loom) {
        // Empty windows on a clock frozen at 0 (a head appointed by a handover has head_at 1).
        return 0;
    }
    let p = params();
    queued_at
        .saturating_add(p.target)
        .clamp(head_at.saturating_add(p.min), head_at.saturating_add(p.max))
}

/// The window bounds in ns, (min, max) (for tests and lockbench's environment record).
pub fn window_ns() -> (u64, u64) {
    let p = params();
    (p.min, p.max)
}

#[cfg(all(test, not(kslock_loom)))]
mod tests {
    use super::*;

    #[test]
    fn windows_shrink_as_the_queue_grows() {
        let (min, max) = window_ns();
        assert!(min >= MIN_FLOOR_NS || crate::ablate::tunable("WINDOW_MIN_NS").is_some());
        assert!(max >= min);
        // A head that arrived at an empty queue: the owner may batch for the maximum.
        assert_eq!(handoff_at(1_000, 1_000), 1_000 + max);
        // A head that waited the whole target in the queue: the minimum.
        assert_eq!(handoff_at(0, TARGET_NS * 2), TARGET_NS * 2 + min);
        // In between: the target decides.
        let mid = TARGET_NS - (min + max) / 2;
        let at = handoff_at(0, mid);
        assert!((mid + min..=mid + max).contains(&at), "{at}");
    }
}
