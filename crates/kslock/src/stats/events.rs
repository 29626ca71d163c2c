//! Lock event counters (feature `stats`, formerly `lock-events`; free when it is off), after the kernel's
//! `lock_events_list.h`: one line per event, named `<lock>_<path>_<event>`, counted process-wide.
//! [`snapshot`] reads them (lockbench reports them per 1000 operations); they exist to explain
//! measurements, not to drive decisions. [`super::set_enabled`] switches them with the rest of
//! the statistics (off: one Relaxed load per event).
//!
//! Counters are sharded over the lock records' 16 cache-line-padded shards, by the same
//! per-thread shard number (`stats::tls`), so that counting
//! does not itself become the contention it measures. Each count is one Relaxed `fetch_add` on
//! the caller's shard; [`snapshot`] sums the shards with Relaxed loads, so a snapshot taken while
//! threads run is a consistent total only to within the events in flight. Without the feature
//! `count` is an empty inline function and no event costs anything (the enum stays, so call
//! sites compile either way).
//!
//! Each event is documented with one line in this file's `Event` list, and [`snapshot`]
//! returns them by name.

macro_rules! events {
    ($($(#[$doc:meta])* $name:ident,)*) => {
        /// A lock event (module doc).
        #[allow(non_camel_case_types, dead_code)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[repr(usize)]
        pub(crate) enum Event { $($(#[$doc])* $name,)* }

        /// Every event's name, in `Event` order.
        #[cfg(feature = "stats")]
        const NAMES: &[&str] = &[$(stringify!($name),)*];
        #[cfg(feature = "stats")]
        const N: usize = NAMES.len();
    };
}

events! {
    /// The mutex lock fast path failed.
    mutex_lock_slow,
    /// An optimistic (OSQ) spin took the mutex.
    mutex_spin_acquired,
    /// A mutex locker's optimistic spin ran out of budget on a running owner.
    mutex_spin_budget,
    /// A mutex locker's optimistic spin stopped: the owner (or OSQ predecessor) is off its CPU.
    mutex_spin_offcpu,
    /// A locker whose spin failed took the mutex after a pre-queue yield.
    mutex_yield_acquired,
    /// A locker queued on the mutex.
    mutex_queued,
    /// A locker whose spin failed skipped its pre-queue yields (the yield gate was closed).
    mutex_yields_gated,
    /// A locker's pre-queue yield phase ended in the queue.
    mutex_yields_queued,
    /// A fresh head armed WAKE_HEAD and slept.
    mutex_head_sleep,
    /// A woken head lost the mutex to a barger.
    mutex_head_lost,
    /// A head slept until its fairness window was due.
    mutex_window_sleep,
    /// A due head asked for the handoff.
    mutex_head_due,
    /// A due head's handover wait ran out and it slept with HANDOFF kept.
    mutex_due_sleep,
    /// An unlock handed the mutex to the head.
    mutex_unlock_handoff,
    /// An unlock released the mutex and woke the head (WAKE_HEAD).
    mutex_unlock_wake,
    /// A new owner woke the next head as it left the queue.
    mutex_owner_wakes_next,
    /// A waiter left the mutex queue without the lock (timeout).
    mutex_wait_timeout,
    /// A locker's quick poll (before the OSQ) took the mutex.
    mutex_quick_acquired,
    /// A locker's quick poll saw the owner re-lock within a line transfer and skipped the spin.
    mutex_quick_batch,
    /// A spinner's free re-check saw the owner re-lock; the spin stopped (budget).
    mutex_spin_batch,
    /// A mutex locker reached the barging limit (`crate::mutex`): it yields once, or queues.
    mutex_barge_limit,
    /// Waiters already queued when a mutex locker queued (sum: ÷ mutex_queued = mean length).
    mutex_queued_behind,
    /// A wait_lock contender slept on it (spin budget spent).
    waitlock_sleep,
    /// Windows measured: a handover picked up, then handed on by the same thread.
    mutex_windows,
    /// µs of those windows (sum; ÷ mutex_windows = mean window).
    mutex_window_us,
    /// The rwsem read fast path failed.
    rwsem_read_slow,
    /// A blocked reader's spin on the count took the read lock.
    rwsem_read_spin_acquired,
    /// A reader queued.
    rwsem_read_queued,
    /// A queued reader slept (its grant spin ended without a grant).
    rwsem_read_sleep,
    /// The rwsem write fast path failed.
    rwsem_write_slow,
    /// A writer's optimistic spin took the lock.
    rwsem_write_spin_acquired,
    /// A writer's gap poll took the lock (before its yield to a writer owner).
    rwsem_write_gap_acquired,
    /// The turn holder re-took the rwsem from its fast path past a head asleep on its window.
    rwsem_write_turn_acquired,
    /// A spinning writer raised WRITER_WANT.
    rwsem_want_set,
    /// A spinning writer gave WRITER_WANT up without the lock.
    rwsem_want_dropped,
    /// A writer did not spin: NONSPINNABLE, or a sleeping writer owner.
    rwsem_write_nospin,
    /// A writer's spin ended: HANDOFF reserved the lock for the head.
    rwsem_spin_stop_handoff,
    /// A writer's spin ended: NONSPINNABLE.
    rwsem_spin_stop_nonspinnable,
    /// A writer's spin ended: its budget or the reader bound ran out.
    rwsem_spin_stop_budget,
    /// A writer's spin ended: the owner does not run.
    rwsem_spin_stop_owner,
    /// A writer queued.
    rwsem_write_queued,
    /// A queued writer slept.
    rwsem_write_sleep,
    /// HANDOFF was raised for the head waiter (a queued writer, or a fair unlock).
    rwsem_handoff_set,
    /// A thread slept on an upgradable wait or an upgrade.
    rwsem_upgrade_sleep,
    /// The rwsem wake path ran (an unlock or give-up found waiters).
    rwsem_wake,
    /// Readers granted by a wake (sum).
    rwsem_readers_granted,
    /// A hybrid rw lock's mode check ended an epoch (`crate::hybrid`, module `mode`).
    hybrid_epochs,
    /// Of those, epochs the lock ran with reads through `m` (`EXCL`).
    hybrid_epochs_excl,
    /// A hybrid duel started a probe of the other mode.
    hybrid_probes,
    /// A probe won: the lock stays in the probed mode.
    hybrid_probe_won,
    /// The current mode's rate moved 2× between two epochs: the probe backoff restarted.
    hybrid_backoff_reset,
}

/// Adds `n` to `e` (nothing without feature `stats`).
#[inline(always)]
pub(crate) fn add(e: Event, n: u64) {
    #[cfg(feature = "stats")]
    imp::add(e, n);
    #[cfg(not(feature = "stats"))]
    let _ = (e, n);
}

#[cfg(feature = "stats")]
mod imp {
    use super::{Event, N, NAMES};
    use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

    #[repr(align(128))]
    struct Shard([AtomicU64; N]);

    use crate::stats::table::SHARDS;
    static COUNTS: [Shard; SHARDS] = [const { Shard([const { AtomicU64::new(0) }; N]) }; SHARDS];

    #[inline]
    pub(crate) fn count(e: Event) {
        add(e, 1);
    }

    #[inline]
    pub(crate) fn add(e: Event, n: u64) {
        if !crate::stats::recording() {
            return;
        }
        let shard = crate::stats::tls::my_shard();
        COUNTS[shard].0[e as usize].fetch_add(n, Relaxed);
    }

    pub fn snapshot() -> Vec<(&'static str, u64)> {
        NAMES
            .iter()
            .enumerate()
            .map(|(i, n)| (*n, COUNTS.iter().map(|s| s.0[i].load(Relaxed)).sum()))
            .collect()
    }
}

/// Counts one `e` (nothing without feature `stats`).
#[inline(always)]
pub(crate) fn count(e: Event) {
    #[cfg(feature = "stats")]
    imp::count(e);
    #[cfg(not(feature = "stats"))]
    let _ = e;
}

/// Every event's total so far, by name (empty without feature `stats`).
pub fn snapshot() -> Vec<(&'static str, u64)> {
    #[cfg(feature = "stats")]
    return imp::snapshot();
    #[cfg(not(feature = "stats"))]
    Vec::new()
}
