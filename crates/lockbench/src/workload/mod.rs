//! The loop bodies the runner times, and [`run_any`], the per-lock entry point that picks one
//! per cell.
//!
//! * `matrix` — lock; `cs_load` pauses; unlock; `outside_load` pauses (the default run's
//!   body, after locktest).
//! * `file` — fio `randrw` on one shared file, as in seed S2: the file is 256
//!   blocks of 4 KiB behind one lock; a reader copies a random block out
//!   under the read lock (`read(2)` into a user buffer), a writer rewrites a
//!   random block under the write lock (`write(2)`). Default mix 50% reads
//!   (fio's `rwmixread`).
//! * `mmap` — an address space under one rwsem (`mmap_lock`): 1024 slots of
//!   32 pages; readers are page faults (find the mapping that contains a
//!   random address, ordered-map predecessor lookup); writers are
//!   mmap/munmap (map a random slot if it is free, unmap it otherwise).
//!   Default mix 90% reads.
//! * `tree` — btrfs/dbench-like lock coupling: a 4-ary tree of depth 3 (85
//!   nodes, one lock each). A descent write-locks the root, then at each
//!   level try-locks the chosen child while still holding the parent
//!   (`try_write_spin`, i.e. kslock's `try_lock_spin`, where the lock has
//!   it); on success it drops the parent, on failure it drops the parent
//!   first and then blocks on the child (the unlock/relock fallback whose cost
//!   seed S3 avoids). The leaf is held for `cs_load` pauses. All operations
//!   are writes. `tree-nospin` (seed S3's A side) uses plain `try_write`.
//! * `random` — the matrix loop (lock, pauses, unlock, pauses) with random
//!   lengths: each critical section and each gap between two operations
//!   draws its pause count from a geometric distribution (the discrete
//!   exponential: memoryless, many short sections and a long tail) whose mean
//!   is `--cs-load` (default 1, 20 and 100) and `--outside-load`. The draw is
//!   made before the lock is taken, so it is not part of the critical
//!   section. A lock tuned to one fixed section length meets every length
//!   here.
//! * `data` — each section reads (reader) or read-modify-writes (writer)
//!   `--lines` random cache lines of a 4096-line table behind the lock, and
//!   checks an invariant in each line ([`data`]): the data moves with the lock.
//! * `condvar` — a bounded work queue under a mutex with "not empty" and "not
//!   full" condvars; producers push, consumers pop and work `--outside-load`
//!   pauses per item; every item must come out exactly once ([`condvar`]).
//!
//! For the other workloads `--cs-load` adds that many pauses inside every
//! critical section on top of the workload's own work.

use crate::locks::condvar::BenchCondvar;
use crate::locks::BenchLock;
use crate::runner::{run, CellConfig, RunOutcome};

pub mod condvar;
pub mod data;
pub mod file;
pub mod matrix;
pub mod mmap;
pub mod random;
pub mod tree;

/// Which loop to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkSpec {
    /// lock; cs_load pauses; unlock; outside_load pauses.
    Matrix,
    /// fio randrw-like block copy / modify on one shared "file".
    File,
    /// page-fault-like lookups and mmap/munmap-like updates of an interval map.
    Mmap,
    /// lock-coupled tree descent; `spin` selects `try_write_spin` over
    /// `try_write` for the coupling step.
    Tree { spin: bool },
    /// the matrix loop with random (geometric) critical-section and outside lengths.
    Random,
    /// sections that read or write `lines` cache lines of shared data.
    Data,
    /// a bounded work queue: a mutex and two condvars ([`run_condvar`]).
    Condvar,
}

impl WorkSpec {
    pub fn name(self) -> &'static str {
        match self {
            WorkSpec::Matrix => "matrix",
            WorkSpec::File => "file",
            WorkSpec::Mmap => "mmap",
            WorkSpec::Tree { spin: true } => "tree",
            WorkSpec::Tree { spin: false } => "tree-nospin",
            WorkSpec::Random => "random",
            WorkSpec::Data => "data",
            WorkSpec::Condvar => "condvar",
        }
    }
}

/// Registry entry point: dispatch once per cell to a monomorphised loop.
pub fn run_any<L: BenchLock>(spec: &WorkSpec, cfg: &CellConfig) -> RunOutcome {
    match *spec {
        WorkSpec::Matrix => run(&matrix::MatrixWl::<L>::new(cfg.cs_load), cfg),
        WorkSpec::File => run(&file::FileWl::<L>::new(cfg.cs_load), cfg),
        WorkSpec::Mmap => run(&mmap::MmapWl::<L>::new(cfg.cs_load), cfg),
        WorkSpec::Tree { spin: true } => run(&tree::TreeWl::<L, true>::new(cfg.cs_load), cfg),
        WorkSpec::Tree { spin: false } => run(&tree::TreeWl::<L, false>::new(cfg.cs_load), cfg),
        WorkSpec::Random => run(&random::RandomWl::<L>::new(cfg.cs_load), cfg),
        WorkSpec::Data => run(&data::DataWl::<L>::new(cfg.lines, cfg.cs_load), cfg),
        WorkSpec::Condvar => Err(
            "the condvar workload runs on a mutex + condvar pair, not on a \
                                  lock alone (run_condvar)"
                .into(),
        ),
    }
}

/// The condvar workload's entry point, per mutex + condvar pair.
pub fn run_condvar<C: BenchCondvar<condvar::Queue>>(cfg: &CellConfig) -> RunOutcome {
    run(&condvar::CondvarWl::<C>::new(cfg.cs_load), cfg)
}

/// Default `--cs-load` of each workload.
pub fn default_cs_load(name: &str) -> Vec<u32> {
    match name {
        "random" => vec![1, 20, 100],
        _ => vec![0],
    }
}

/// Default read percentage of each workload.
pub fn default_read_pct(name: &str) -> u32 {
    match name {
        "file" => 50,
        "mmap" => 90,
        _ => 0,
    }
}

/// Default `--outside-load` of each workload (condvar: a consumer's work per item).
pub fn default_outside_load(name: &str) -> Vec<u32> {
    match name {
        "condvar" => vec![200],
        _ => vec![0],
    }
}

/// Default `--lines` of each workload (0: the workload touches no shared data lines).
pub fn default_lines(name: &str) -> Vec<u32> {
    match name {
        "data" => vec![4, 32],
        _ => vec![0],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// A "lock" that does not lock: the checker must catch it.
    struct NoLock;
    impl BenchLock for NoLock {
        const RW: bool = true;
        type W<'a> = ();
        type R<'a> = ();
        fn new() -> Self {
            NoLock
        }
        fn write(&self) {}
        fn read(&self) {}
        fn try_write(&self) -> Option<()> {
            Some(())
        }
    }

    #[test]
    fn broken_lock_is_caught() {
        let cfg = CellConfig {
            threads: 4,
            cs_load: 50,
            outside_load: 0,
            read_pct: 50,
            lines: 0,
            secs: 0.3,
            warmup: 0.0,
            pin: false,
        };
        let r = run_any::<NoLock>(&WorkSpec::Matrix, &cfg);
        let e = r.expect_err("a lock that does not exclude must fail the run");
        assert!(e.contains("mutual exclusion violated"), "{e}");
    }

    /// A lock that panics: the run reports it instead of hanging.
    struct PanicLock;
    impl BenchLock for PanicLock {
        const RW: bool = false;
        type W<'a> = ();
        type R<'a> = ();
        fn new() -> Self {
            PanicLock
        }
        fn write(&self) {
            panic!("PanicLock::write (expected by the test)");
        }
        fn read(&self) {}
        fn try_write(&self) -> Option<()> {
            None
        }
    }

    #[test]
    fn panicking_lock_is_reported() {
        let cfg = CellConfig {
            threads: 2,
            cs_load: 1,
            outside_load: 0,
            read_pct: 0,
            lines: 0,
            secs: 5.0,
            warmup: 5.0,
            pin: false,
        };
        let t = Instant::now();
        let e = run_any::<PanicLock>(&WorkSpec::Matrix, &cfg).unwrap_err();
        assert!(e.contains("panicked"), "{e}");
        assert!(t.elapsed() < Duration::from_secs(3), "stopped early");
    }

    #[test]
    fn a_cell_reports_its_handovers_only_with_the_feature() {
        let cfg = CellConfig {
            threads: 1,
            cs_load: 1,
            outside_load: 0,
            read_pct: 0,
            lines: 0,
            secs: 0.1,
            warmup: 0.05,
            pin: false,
        };
        let m = run_any::<crate::locks::peers::StdMutex>(&WorkSpec::Matrix, &cfg).unwrap();
        assert!(m.writes > 0);
        // One thread hands over at most once: its first entry, which a loaded machine may delay
        // past the warm-up; its re-entries never count.
        let h = m.events.get("handovers").copied();
        if crate::excl::COUNT_HANDOVERS {
            assert!(matches!(h, Some(0 | 1)), "{:?}", m.events);
        } else {
            assert_eq!(h, None, "{:?}", m.events);
        }
    }

    #[test]
    fn a_broken_lock_fails_the_data_workload() {
        let cfg = CellConfig {
            threads: 4,
            cs_load: 0,
            outside_load: 0,
            read_pct: 50,
            lines: 32,
            secs: 0.3,
            warmup: 0.0,
            pin: false,
        };
        let e = run_any::<NoLock>(&WorkSpec::Data, &cfg).unwrap_err();
        assert!(
            e.contains("mutual exclusion violated") || e.contains("torn"),
            "{e}"
        );
        let m = run_any::<crate::locks::peers::PlRwLock>(&WorkSpec::Data, &cfg).unwrap();
        assert!(m.reads > 0 && m.writes > 0, "{m:?}");
    }

    #[test]
    fn the_condvar_queue_counts_items_and_stops_its_waiters() {
        use crate::locks::condvar::{PthreadCv, StdCv};
        let cfg = CellConfig {
            threads: 5,
            cs_load: 0,
            outside_load: 50,
            read_pct: 0,
            lines: 0,
            secs: 0.1,
            warmup: 0.02,
            pin: false,
        };
        // 3 producers and 2 consumers that work on each item: the queue is full, the producers
        // wait on it at the stop.
        let m = run_condvar::<StdCv<condvar::Queue>>(&cfg).unwrap();
        assert!(m.reads > 0 && m.writes > 0, "{m:?}");
        assert_eq!(m.ops(), m.reads, "an item is counted at its pop");
        assert_eq!(m.per_thread.len(), 5);
        // 2 and 2 and no work: either side may be waiting at the stop.
        let m = run_condvar::<PthreadCv<condvar::Queue>>(&CellConfig {
            threads: 4,
            outside_load: 0,
            ..cfg
        })
        .unwrap();
        assert!(m.reads > 0, "{m:?}");
    }
}
