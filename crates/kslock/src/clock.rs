//! The clocks every other module reads: `CLOCK_MONOTONIC` and the tick counter with its rate.
//! A leaf (it uses no other kslock module), so that `sys` (which calls into `stats`) and
//! `stats` can both use it. Under `--cfg kslock_loom` the locks read `sys`'s model clocks
//! instead; `stats` still reads these.
#![cfg_attr(kslock_loom, allow(dead_code))]

/// `CLOCK_MONOTONIC` now, in nanoseconds (vDSO, ≈ 23 ns here).
pub(crate) fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A cheap, monotonic-enough tick counter for spin budgets: `rdtsc` on x86_64 (≈ 10 ns),
/// the monotonic clock elsewhere. Convert with [`ticks_per_us`].
#[inline]
pub(crate) fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: rdtsc has no preconditions on x86_64.
    unsafe {
        core::arch::x86_64::_rdtsc()
    }
    #[cfg(not(target_arch = "x86_64"))]
    now_ns()
}

/// Ticks of [`ticks`] per microsecond, measured once against `CLOCK_MONOTONIC` (≈ 200 µs).
/// Measured once per process and kept in an atomic (racing first callers both measure; no
/// once-lock that a `fork()` could catch mid-initialisation).
pub(crate) fn ticks_per_us() -> u64 {
    use core::sync::atomic::{AtomicU64, Ordering::Relaxed};
    static TPU: AtomicU64 = AtomicU64::new(0);
    let v = TPU.load(Relaxed);
    if v != 0 {
        return v;
    }
    let v = if cfg!(not(target_arch = "x86_64")) {
        1000
    } else {
        let (n0, t0) = (now_ns(), ticks());
        let mut n1 = n0;
        while n1 - n0 < 200_000 {
            n1 = now_ns();
        }
        let t1 = ticks();
        ((t1 - t0) * 1000 / (n1 - n0).max(1)).max(1)
    };
    TPU.store(v, Relaxed);
    v
}
