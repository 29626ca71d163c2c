//! The cross-CPU line round trip, probed around every run.
//!
//! Two threads, pinned to the first two CPUs the process may use, pass one cache line back and
//! forth (`ROUNDS` round trips in `BATCHES` batches) and the fastest batch gives the time
//! of one round trip: the cost of moving a line to the other CPU and back, which every
//! handover, every poll of a lock word held on the other CPU and every section that touches
//! data last written there pays.
//!
//! Why: on a VM the host places the vCPUs, and the round trip changes with the placement, every
//! few seconds (on the 2-vCPU AMD EPYC development guest ≈ 30 ns, presumably two hyperthreads
//! of one core, ≈ 100–170 ns or ≈ 470–560 ns). Cells that move data between the CPUs run up to
//! 3× slower in the far phase, whichever lock runs, so a ratio between two locks is comparable
//! only where both ran in the same phase; each cell reports the fastest and slowest probe of its
//! runs (`line_rt_ns_min` / `line_rt_ns_max`).
//!
//! On a machine with many CPUs the first two are one sample of its distances, not all of them.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::time::{Duration, Instant};

use crate::util::CachePadded;

/// Round trips per batch.
const ROUNDS: u64 = 256;
/// Batches per probe; the fastest counts (a batch a preemption hit is slower, never faster).
const BATCHES: u32 = 4;
/// A probe whose other side does not answer within this long (it was not scheduled) gives up.
const GIVE_UP: Duration = Duration::from_millis(50);

/// The first two CPUs in the calling thread's affinity mask, if it has two.
fn two_cpus() -> Option<(usize, usize)> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity writes it.
    let set = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return None;
        }
        set
    };
    // SAFETY: `set` is an initialised cpu_set_t.
    let mut cpus = (0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) });
    Some((cpus.next()?, cpus.next()?))
}

/// Pins the calling thread to `cpu`; `false` if the kernel refused.
fn pin(cpu: usize) -> bool {
    // SAFETY: cpu_set_t is plain data; sched_setaffinity reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// One round trip of a cache line between the process's first two CPUs, ns (module doc); `None`
/// with fewer than two CPUs, when pinning fails, or when a side was not scheduled in time.
pub fn line_round_trip_ns() -> Option<f64> {
    let (a, b) = two_cpus()?;
    // The line: odd values are the first side's moves, even ones the answers.
    let line = CachePadded(AtomicU64::new(0));
    let failed = AtomicBool::new(false);
    let best = std::thread::scope(|s| {
        let answerer = s.spawn(|| {
            if !pin(b) {
                failed.store(true, Relaxed);
                return;
            }
            let end = u64::from(BATCHES) * ROUNDS;
            for i in 0..end {
                if !wait_for(&line, 2 * i + 1, &failed) {
                    return;
                }
                line.store(2 * i + 2, Release);
            }
        });
        let asker = s.spawn(|| {
            if !pin(a) {
                failed.store(true, Relaxed);
                return f64::INFINITY;
            }
            let mut best = f64::INFINITY;
            for batch in 0..u64::from(BATCHES) {
                let t0 = Instant::now();
                for i in batch * ROUNDS..(batch + 1) * ROUNDS {
                    // Release / Acquire: each side's move is seen with the other's answer.
                    line.store(2 * i + 1, Release);
                    if !wait_for(&line, 2 * i + 2, &failed) {
                        return f64::INFINITY;
                    }
                }
                best = best.min(t0.elapsed().as_nanos() as f64 / ROUNDS as f64);
            }
            best
        });
        let best = asker.join().unwrap_or(f64::INFINITY);
        if best.is_infinite() {
            // Release the answerer if it still waits.
            failed.store(true, Relaxed);
        }
        let _ = answerer.join();
        best
    });
    (best.is_finite() && !failed.load(Relaxed)).then_some(best)
}

/// Spins until `line` holds `v`; `false` if the probe failed or the other side did not answer
/// within [`GIVE_UP`] (the clock is read every 1024 polls).
fn wait_for(line: &AtomicU64, v: u64, failed: &AtomicBool) -> bool {
    let start = Instant::now();
    let mut polls = 0u32;
    while line.load(Acquire) != v {
        polls = polls.wrapping_add(1);
        if polls.is_multiple_of(1024) && (failed.load(Relaxed) || start.elapsed() > GIVE_UP) {
            failed.store(true, Relaxed);
            return false;
        }
        std::hint::spin_loop();
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probe_measures_a_round_trip_where_two_cpus_are_allowed() {
        if two_cpus().is_none() {
            assert_eq!(line_round_trip_ns(), None, "one CPU: nothing to measure");
            return;
        }
        // A side kept off its CPU for the give-up time (tests run beside each other) fails
        // one probe; five in a row would be no scheduling hiccup.
        let ns = (0..5)
            .find_map(|_| line_round_trip_ns())
            .expect("five probes on two CPUs all failed");
        assert!(
            ns > 1.0 && ns < 1e6,
            "a round trip of {ns} ns is no cache line transfer"
        );
    }
}
