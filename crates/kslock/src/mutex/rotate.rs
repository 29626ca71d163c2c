//! Rotation yields: a thread that contends for a mutex gives its CPU away after its next
//! release, at most once per [`INTERVAL_CAPS`] spin caps, so that the scheduler rotates the
//! contending threads at a fine grain and their CPU shares even out.
//!
//! # Why
//!
//! When threads outnumber CPUs and nobody sleeps, how many operations a thread completes is
//! its share of CPU time, and the kernel's scheduler does not split that evenly between 96
//! runnable threads on 2 CPUs over a second. Every lock serves a thread at about the same rate
//! per CPU millisecond; the locks whose threads leave their CPU hundreds of times a second
//! (glibc's sleeps, parking_lot's yields) get even shares, and kslock's bargers rarely leave
//! theirs (measured with per-thread CPU times: `docs/experiments.md`, "Rotation yield"). A
//! thread that contends therefore yields once in a while, right after a release, when it holds
//! nothing and its next acquisition has not begun: the yield does not lengthen any wait for
//! the lock.
//!
//! # The rule
//!
//! A locker that enters the slow path (it found the lock taken) *owes* a rotation yield if its
//! last one is [`INTERVAL_CAPS`] spin caps ago ([`crate::spin_cap_ns`]: 100–200 µs for caps of
//! 20–40 µs). The owed yield comes after its next release of a mutex (the release countdown is
//! set to that release, `crate::thread::check_next_release`; the release itself is the usual
//! CAS). A yield before queueing, or queueing, is the thread's rotation: it drops the owed
//! yield and restarts the interval, so a thread that gets the lock by a handover does not end
//! its turn (module doc of `turn`) with a yield, and a turn's owner re-locks on the fast path
//! and owes nothing. An uncontended thread never yields.
//!
//! Bound on the cost: a yield that runs another thread takes about 1/16 of a cap, so a
//! contending thread spends at most ≈ 1.3% of its time in rotation yields. The interval: 50 µs
//! evened the shares as well and cost more yields, 25 caps (1 ms) evened them less.
//! Yielding at the slow path's entry instead would put the yield inside the measured wait.

use crate::sys;

/// The interval between two rotation yields of one thread, in spin caps (module doc).
pub(super) const INTERVAL_CAPS: u64 = 5;

/// The interval, ns.
fn interval_ns() -> u64 {
    INTERVAL_CAPS * u64::from(crate::spin_cap_ns())
}

/// At the slow path's entry: owe a rotation yield if the last one is an interval ago.
#[inline]
pub(super) fn arm() {
    if cfg!(kslock_loom) || !crate::ablate::on(crate::ablate::Mech::RotationYield) {
        return;
    }
    if imp::arm_at(sys::now_ns(), interval_ns()) {
        crate::events::count(crate::events::Event::mutex_rotation_owed);
    }
}

/// At a release whose countdown ran out: is a rotation yield owed? (Clears it.)
#[inline]
pub(super) fn take() -> bool {
    imp::take()
}

/// The owed yield, after the release.
#[cold]
pub(super) fn after_release() {
    crate::sync::yield_now();
    imp::yielded(sys::now_ns());
}

/// The thread left its CPU in the slow path (a yield before queueing) or queues (it will
/// sleep, or get the lock by a handover, whose turn must not end in a yield): that counts as
/// its rotation, and any owed yield is dropped. `now`: the caller's clock reading after it.
#[inline]
pub(super) fn left_cpu(now: u64) {
    imp::take();
    imp::yielded(now);
}

#[cfg(not(kslock_loom))]
mod imp {
    use core::cell::Cell;

    std::thread_local! {
        /// When this thread last made a rotation yield (ns, `sys::now_ns`; 0 = never).
        static LAST: Cell<u64> = const { Cell::new(0) };
        /// A rotation yield is owed at this thread's next release.
        static OWED: Cell<bool> = const { Cell::new(false) };
    }

    /// Owes a yield if none is owed and the last one is `interval` before `now`; then the next
    /// release runs the check path. `true` = owed now.
    pub(super) fn arm_at(now: u64, interval: u64) -> bool {
        if OWED.with(Cell::get) || now.saturating_sub(LAST.with(Cell::get)) < interval {
            return false;
        }
        OWED.with(|o| o.set(true));
        crate::thread::check_next_release();
        true
    }

    pub(super) fn take() -> bool {
        OWED.with(|o| o.replace(false))
    }

    pub(super) fn yielded(now: u64) {
        LAST.with(|l| l.set(now));
    }
}

/// Under loom no yield is ever owed (the models explore the lock, not the scheduler).
#[cfg(kslock_loom)]
mod imp {
    pub(super) fn arm_at(_: u64, _: u64) -> bool {
        false
    }

    pub(super) fn take() -> bool {
        false
    }

    pub(super) fn yielded(_: u64) {}
}

#[cfg(all(test, not(kslock_loom)))]
mod tests {
    use super::imp;

    #[test]
    fn a_yield_is_owed_once_per_interval() {
        // A fresh thread: its thread-locals start at "never yielded, nothing owed".
        std::thread::spawn(|| {
            assert!(!imp::take(), "nothing owed before contending");
            assert!(
                imp::arm_at(1_000_000, 200_000),
                "the first contention owes a yield"
            );
            assert!(!imp::arm_at(1_000_001, 200_000), "owed already");
            assert!(imp::take());
            assert!(!imp::take(), "taken once");
            imp::yielded(1_000_000);
            assert!(!imp::arm_at(1_150_000, 200_000), "within the interval");
            assert!(!imp::take());
            assert!(imp::arm_at(1_200_000, 200_000), "an interval later");
            assert!(imp::take());
        })
        .join()
        .unwrap();
    }
}
