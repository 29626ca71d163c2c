//! What one lock + unlock pair costs when nobody else wants the lock, in a loop that does
//! nothing else: the per-lock loops of `lockbench uncontended` (the command and its table are
//! above the registry).
//!
//! Each lock runs in its own monomorphised, never-inlined loop (`lock; touch the guard;
//! unlock`), one thread, `ops` pairs per run. Rwlocks report the write pair and the read pair.
//!
//! The loops run while the process has another thread ([`IdleThread`], blocked): glibc's lock
//! functions take a shortcut while a process has a single thread (no atomic instructions), and
//! the programs that use locks have threads.
//!
//! The matrix's 1-thread, CS load 0 cell measures the same pair inside lockbench's worker loop,
//! whose per-operation bookkeeping (operation counters, the exclusion check, a sampled wait
//! time) the compiler schedules around each lock's own instructions differently; this loop
//! leaves the lock alone. Report both.

use std::hint::black_box;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::locks::BenchLock;

/// One lock's pair in one mode, over the repeats of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairResult {
    pub lock: String,
    /// "write" (exclusive) or "read" (shared).
    pub pair: String,
    /// Median ns per lock + unlock pair, and the fastest and slowest repeat.
    pub ns: f64,
    pub ns_min: f64,
    pub ns_max: f64,
    /// `ns` ÷ parking_lot's lock of the same kind in the same mode and repeats (`None`: it
    /// did not run).
    pub vs_parking_lot: Option<f64>,
}

/// A thread that blocks until the guard is dropped, so that the process has more than one
/// thread while it lives (module doc).
pub struct IdleThread {
    wake: Option<mpsc::Sender<()>>,
    handle: Option<JoinHandle<()>>,
}

impl IdleThread {
    /// Spawns the thread (it waits on a channel nobody sends on).
    pub fn spawn() -> IdleThread {
        let (tx, rx) = mpsc::channel::<()>();
        let handle = std::thread::Builder::new()
            .name("lockbench-idle".into())
            .spawn(move || {
                // Returns when the sender is dropped.
                let _ = rx.recv();
            })
            .expect("spawn the idle thread");
        IdleThread {
            wake: Some(tx),
            handle: Some(handle),
        }
    }

    /// Is the thread still there (blocked)?
    pub fn is_alive(&self) -> bool {
        self.handle.as_ref().is_some_and(|h| !h.is_finished())
    }
}

impl Drop for IdleThread {
    fn drop(&mut self) {
        drop(self.wake.take());
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

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

    #[test]
    fn the_idle_thread_lives_until_dropped() {
        let idle = IdleThread::spawn();
        let (w, _) = measure::<crate::locks::peers::PthreadMutex<0>>(10_000);
        assert!(w > 0.0);
        assert!(idle.is_alive(), "it blocks while the loops run");
        drop(idle);
    }
}
