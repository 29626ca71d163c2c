//! Rotation yields: a thread that contends for a mutex gives its CPU away after its next
//! release, at most once per [`INTERVAL_CAPS`] spin caps, so that the scheduler rotates the
//! contending threads at a fine grain and their CPU shares even out.
//!
//! # Why
//!
//! When threads outnumber CPUs and nobody sleeps, how many operations a thread completes is
//! its share of CPU time, and the kernel's scheduler does not split that evenly between 96
//! runnable threads on 2 CPUs over a second. Session 33 (AMD EPYC 2-vCPU guest, Linux 6.18)
//! measured it with `LOCKBENCH_DUMP_THREADS=1 lockbench workload random --locks <lock>
//! --threads 96 --cs-load 20 --outside-load 50 --secs 1` (per-thread CPU time from
//! `getrusage(RUSAGE_THREAD)`):
//!
//! | lock | max/min per-thread ops | max/min CPU time | max/min ops per CPU ms | switches per thread (voluntary / involuntary) |
//! |---|---|---|---|---|
//! | kslock (before) | 2.77 | 2.46 (13.3–32.7 ms) | 1.17 | 1.6 / 106 |
//! | spin-ttas (never sleeps nor yields) | 1.71 | 1.62 | 1.09 | 0 / 135 |
//! | std (futex, sleeps) | 2.42 | 2.38 | 1.09 | 44 / 9 |
//! | glibc (futex, sleeps) | 1.44 | 1.21 | 1.23 | 569 / 14 |
//! | parking_lot (yields) | 1.22 | 1.16 | 1.09 | 0.8 / 1 297 |
//!
//! The spread in operations is the spread in CPU time (correlation 0.98), not the lock's
//! order: every lock serves a thread at about the same rate per CPU millisecond. The locks
//! whose threads leave their CPU hundreds of times a second (glibc's sleeps, parking_lot's
//! yields) get even shares; kslock's bargers rarely leave theirs (over 3 s the spread was still
//! 1.83). A thread that contends therefore yields once in a while, right after a release, when
//! it holds nothing and its next acquisition has not begun: the yield does not lengthen any
//! wait for the lock.
//!
//! # The rule
//!
//! A locker that enters the slow path (it found the lock taken) *owes* a rotation yield if its
//! last one is [`INTERVAL_CAPS`] spin caps ago ([`crate::spin_cap_ns`]: 5 × 40 µs = 200 µs on
//! the AMD guest). The owed yield comes after its next release of a mutex (the release
//! countdown is set to that release, `crate::thread::check_next_release`; the release itself is
//! the usual CAS). A yield before queueing, or queueing, is the thread's rotation: it drops
//! the owed yield and restarts the interval, so a thread that gets the lock by a handover does
//! not end its turn (module doc of `turn`) with a yield, and a turn's owner re-locks on the
//! fast path and owes nothing. An uncontended thread never yields.
//!
//! Cost: a yield that runs another thread takes ≈ 2.6 µs here (1/16 cap), so at most ≈ 1.3%
//! of a contending thread's time. In the cell above the threads then left their CPUs about
//! twice as often (involuntary switches 85 → 151 a second each, with the first version, which
//! yielded at the slow path's entry; 376 with 50 µs); 25 caps (1 ms) evened out less (below).
//!
//! # Measured (session 33, AMD EPYC 2-vCPU guest; switch `KSLOCK_OFF=rotation_yield`)
//!
//! One binary, `scripts/ab-ratio.py RUNS "off=KSLOCK_OFF:rotation_yield,on" -- <cells>`,
//! kslock ÷ parking_lot, medians of alternated runs; max/min per-thread ops and p99.9 wait:
//!
//! | cells (`lockbench … --locks kslock-mutex,parking-lot-mutex --warmup 0.1`) | what | off → on |
//! |---|---|---|
//! | `matrix --threads 8,32,96 --cs-load 1,20,100 --outside-load 0,100 --secs 0.4`, 3 runs | geo-mean of the 18 cells | 1.032 → 1.064 |
//! | same | 96 threads, outside load 100, CS load 1 / 20 / 100: max/min; p99.9 | 15.1 / 38.3 / 7.8 → 3.0 / 4.1 / 2.1; 58.7 / 33.6 / 18.9 → 0.0 / 8.4 / 6.8 ms |
//! | same | 32 threads, outside load 100, CS load 20 / 100: max/min; p99.9 | 4.0 / 2.8 → 1.7 / 1.8; 2.0 / 15.7 → 0.0 / 2.6 ms |
//! | same | 96 threads, CS load 1, no outside work: max/min; p99.9 | 7.3 → 3.7; 13.6 → 3.7 ms |
//! | same | 96 threads, CS load 20 / 100, no outside work (the queue's rotation): max/min; p99.9 | 2.5 / 2.5 → 3.6 / 4.9; 15.7 / 16.8 → 15.7 / 16.8 ms |
//! | `matrix --threads 96 --cs-load 20,100 --secs 1`, 4 runs | max/min; p99.9 | 1.7 / 1.7 → 1.8 / 1.8; 14.7 / 16.8 → 14.7 / 16.8 ms |
//! | `matrix --threads 32,96 --cs-load 1,20,100 --outside-load 0,100 --secs 1`, 2 runs | geo-mean of the 12 cells | 1.032 → 1.035 |
//! | same | 96 threads, outside load 100, CS load 1 / 20 / 100: max/min; p99.9 | 2.9 / 6.1 / 4.6 → 2.0 / 1.9 / 2.0; 18.9 / 32.5 / 27.3 → 0.0 / 1.6 / 14.2 ms |
//!
//! Over 0.4 s the queue's cells at 96 threads spread more with the yields; over 1 s (the
//! target's measure) they do not. The first version, which kept an owed yield through the
//! queue (a thread granted the lock by a handover then yielded after the first release of its
//! turn), on geometric section lengths (`workload random --threads 16,48,96 --cs-load 1,20,100
//! --outside-load 0,50 --secs 0.6`, 2 runs): geo-mean of the 18 cells 1.010 → 1.002; 96
//! threads, mean CS load 20 / 100 with outside load 50: max/min 4.4 / 2.1 → 2.0 / 1.8, p99.9
//! 23.1 / 16.8 → 7.6 / 8.9 ms (25 caps, 1 ms: 5.1 / 2.3 and 13.6 / 9.2 ms). Single cells move
//! by up to ± 0.1 between runs, CS load 1 most. Yielding before the acquisition instead (at the
//! slow path's entry) evened the CPU shares as well but lengthened the waits it sat in: p99.9
//! at 96 threads, CS load 1 with outside load 100, 10.5 → 37.7 ms.

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
