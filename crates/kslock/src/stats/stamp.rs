//! The clock of waits and sampled holds: stamps from the CPU's time-stamp counter where it
//! runs at a constant rate (x86_64 with an invariant TSC: `rdtsc`, ≈ 11 ns a read on the AMD
//! EPYC guest against 27 ns for `clock_gettime`, and a contended acquisition reads it twice),
//! scaled to nanoseconds by the rate [`crate::clock`] measures once per process against
//! `CLOCK_MONOTONIC` (the spin budgets' calibration, 200 µs, shared); `CLOCK_MONOTONIC`
//! itself elsewhere.
//!
//! `MULT` holds the scale: 0 not decided yet, 1 no usable counter (the monotonic clock, in
//! ns), else ns per tick in 32.32 fixed point. Relaxed: every thread that decides computes
//! the same value, and a stamp is only ever compared with one taken after the scale was
//! decided (it is decided before the first stamp, [`stamp`]).

use crate::clock::{now_ns, ticks, ticks_per_us};
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

static MULT: AtomicU64 = AtomicU64::new(0);
/// `MULT` when the clock is `CLOCK_MONOTONIC`.
const MONO: u64 = 1;

/// The scale, decided at the first call (module doc).
#[inline(always)]
fn mult() -> u64 {
    match MULT.load(Relaxed) {
        0 => decide(),
        m => m,
    }
}

#[cold]
#[inline(never)]
fn decide() -> u64 {
    let m = if invariant_tsc() {
        // ns per tick = 1000 / ticks per µs, in 32.32 fixed point.
        ((1000u64 << 32) / ticks_per_us()).max(MONO + 1)
    } else {
        MONO
    };
    MULT.store(m, Relaxed);
    m
}

/// Whether the time-stamp counter ticks at a constant rate whatever the CPU's frequency and
/// sleep state (CPUID leaf 0x8000_0007, EDX bit 8: "invariant TSC"), so that its differences
/// measure time.
fn invariant_tsc() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::__cpuid;
        // SAFETY: CPUID exists on every x86_64 CPU; leaf 0x8000_0000 gives the highest
        // extended leaf, checked before 0x8000_0007 is read.
        #[allow(unused_unsafe)]
        unsafe {
            __cpuid(0x8000_0000).eax >= 0x8000_0007 && __cpuid(0x8000_0007).edx & (1 << 8) != 0
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// A stamp of now, for [`since_ns`].
#[inline(always)]
pub(super) fn stamp() -> u64 {
    if mult() == MONO {
        now_ns()
    } else {
        ticks()
    }
}

/// Nanoseconds from `t0` (a [`stamp`]) to now; 0 if the counter went back (a thread moved
/// to a CPU whose counter is behind).
#[inline(always)]
pub(super) fn since_ns(t0: u64) -> u64 {
    let m = mult();
    if m == MONO {
        return now_ns().saturating_sub(t0);
    }
    let d = ticks().saturating_sub(t0);
    ((d as u128 * m as u128) >> 32) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_a_sleep_in_nanoseconds() {
        let t0 = stamp();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let ns = since_ns(t0);
        // A sleep lasts at least its length; 1 s bounds a scale off by a factor of 50.
        assert!((20_000_000..1_000_000_000).contains(&ns), "{ns} ns");
    }
}
