//! The system layer: the only module that makes system calls.
//!
//! * futex wait (optionally until an absolute `CLOCK_MONOTONIC` deadline) and wake;
//! * the monotonic clock and a cheap cycle counter for spin budgets;
//! * the CPU the calling thread runs on (rseq when glibc registered it, `getcpu` otherwise).
//!
//! Under `--cfg kslock_loom` the futex is modelled with a loom mutex + condvar (the futex
//! hash-bucket lock), so a lost wakeup shows up as a loom deadlock; a timed wait models the timer
//! firing at once, which exercises every cancellation path.

#[cfg(not(kslock_loom))]
mod linux;
#[cfg(not(kslock_loom))]
pub(crate) use linux::*;

#[cfg(kslock_loom)]
mod loom_model;
#[cfg(kslock_loom)]
pub(crate) use loom_model::*;

/// A futex wait ended because its deadline passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TimedOut;

/// An absolute point on `CLOCK_MONOTONIC`, in nanoseconds. `None` deadlines mean "forever".
pub(crate) type Deadline = Option<u64>;

/// Turns a `std::time::Instant` into a monotonic deadline (both are `CLOCK_MONOTONIC` on Linux,
/// but `Instant` has no public epoch, so go through "time remaining").
pub(crate) fn deadline_from_instant(t: std::time::Instant) -> u64 {
    let left = t.saturating_duration_since(std::time::Instant::now());
    deadline_after(left)
}

/// A monotonic deadline `d` from now (saturating).
pub(crate) fn deadline_after(d: std::time::Duration) -> u64 {
    now_ns().saturating_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}
