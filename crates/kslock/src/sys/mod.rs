//! The system layer: the only module that makes system calls.
//!
//! | call | what it promises | used for |
//! |------|------------------|----------|
//! | `futex_wait(word, expected, deadline)` | sleeps while `*word == expected`; `Err(TimedOut)` only once the absolute `CLOCK_MONOTONIC` deadline (ns) has passed, every other return (woken, `EAGAIN`, `EINTR`, spurious) `Ok`: callers re-check their condition | parking ([`crate::thread`]), the wait_lock |
//! | `futex_wake(word, n)` | wakes at most `n` sleepers; harmless on a word nobody sleeps on, so a waker may wake memory the waiter has already left | unpark, wait_lock unlock |
//! | `now_ns()` | `CLOCK_MONOTONIC` in ns (vDSO, no syscall) | windows, deadlines, turns |
//! | `ticks()`, `ticks_per_us()` | a cheap tick counter (`rdtsc` on x86_64, ≈ 10 ns a read; the monotonic clock elsewhere) and its rate, measured once against the clock | [`crate::spin`] |
//! | `measure_syscall_ns()` | the fastest of 8 rounds of 16 no-waiter `FUTEX_WAKE`s, ns | the spin cap's calibration |
//! | `current_cpu()` | the CPU the thread runs on: glibc's registered rseq `cpu_id` (< 1 ns) when available, `sched_getcpu` otherwise; a hint (the thread may migrate at once) | rule R3 of [`crate::spin`] |
//!
//! Deadlines are absolute, so a restart after `EINTR` never extends a wait;
//! `deadline_after` saturates, so a timeout too large for the clock waits for ever.
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
