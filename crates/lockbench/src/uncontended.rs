//! What one lock + unlock pair costs when nobody else wants the lock, in a loop that does
//! nothing else: the per-lock loops of `lockbench uncontended` (the command and its table are
//! above the registry).
//!
//! Each lock runs in its own monomorphised, never-inlined loop (`lock; touch the guard;
//! unlock`), one thread, `ops` pairs per run. Rwlocks report the write pair and the read pair.
//!
//! The matrix's 1-thread, CS load 0 cell measures the same pair inside lockbench's worker loop,
//! whose per-operation bookkeeping (operation counters, the exclusion check, a sampled wait
//! time) the compiler schedules around each lock's own instructions differently; this loop
//! leaves the lock alone. Report both.

use std::hint::black_box;
use std::time::Instant;

use crate::locks::BenchLock;

/// One measurement: ns per exclusive (write) pair and, for rwlocks, per shared (read) pair.
pub type UncontendedFn = fn(u64) -> (f64, Option<f64>);

/// The per-lock entry point (registry): one run of `ops` write pairs, then of `ops` read
/// pairs for an rwlock, on one lock made for the run.
pub fn measure<L: BenchLock>(ops: u64) -> (f64, Option<f64>) {
    let lock = Box::new(L::new());
    let write = pairs(ops, || lock.write());
    let read = L::RW.then(|| pairs(ops, || lock.read()));
    (write, read)
}

/// ns per pair of `ops` calls of `acquire` (which locks) and drops of its guard (which unlock);
/// one instance per lock and mode, never inlined into the caller.
#[inline(never)]
fn pairs<G>(ops: u64, acquire: impl Fn() -> G) -> f64 {
    let t = Instant::now();
    for _ in 0..ops {
        let g = acquire();
        black_box(&g);
        drop(g);
    }
    t.elapsed().as_nanos() as f64 / ops.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mutex_reports_a_write_pair_and_an_rwlock_both() {
        let (w, r) = measure::<crate::locks::peers::StdMutex>(1000);
        assert!(w.is_finite() && w > 0.0, "{w}");
        assert!(r.is_none());
        let (w, r) = measure::<crate::locks::peers::StdRwLock>(1000);
        assert!(w > 0.0 && r.is_some_and(|r| r > 0.0));
    }
}
