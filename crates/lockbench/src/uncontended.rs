//! `lockbench uncontended`: what one lock + unlock costs when nobody else wants the lock (the
//! issue's "uncontended lock+unlock" target), in a loop that does nothing else.
//!
//! Each lock runs in its own monomorphised, never-inlined loop (`lock; touch the guard;
//! unlock`), one thread, `--ops` pairs per run; every repeat runs all the locks back to back,
//! rotating their order, and the table reports each lock's median ns per pair (min–max over the
//! repeats) and its ratio to parking_lot's lock of the same kind (mutex or rwlock) from the
//! same repeats. Rwlocks report the write pair and the read pair.
//!
//! The matrix's 1-thread, CS load 0 cell measures the same pair inside lockbench's worker loop,
//! whose per-operation bookkeeping (operation counters, the exclusion check, a sampled wait
//! time) the compiler schedules around each lock's own instructions differently; this loop
//! leaves the lock alone. Report both.

use std::hint::black_box;
use std::io::Write;
use std::time::Instant;

use crate::locks::{BenchLock, Kind, LockInfo};

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

/// One lock's runs.
struct Runs {
    info: LockInfo,
    write: Vec<f64>,
    read: Vec<f64>,
}

/// Median ([`crate::stats::median`], as the matrix's cells) and (min, max) of `v` (not empty).
fn summary(v: &[f64]) -> (f64, f64, f64) {
    let (lo, hi) = crate::stats::range(v.iter().copied()).unwrap_or((f64::NAN, f64::NAN));
    (crate::stats::median(v), lo, hi)
}

/// The reference lock for `kind`: parking_lot's.
fn reference(kind: Kind) -> &'static str {
    match kind {
        Kind::Mutex => "parking-lot-mutex",
        Kind::RwLock => "parking-lot-rwlock",
    }
}

/// Runs `locks` (each once per repeat, the order rotating) and writes the table.
pub fn run(locks: &[LockInfo], ops: u64, repeats: u32, out: &mut dyn Write) -> Result<(), String> {
    let mut runs: Vec<Runs> = locks
        .iter()
        .map(|&info| Runs {
            info,
            write: Vec::new(),
            read: Vec::new(),
        })
        .collect();
    let n = runs.len();
    for r in 0..repeats as usize {
        for i in 0..n {
            let lock = &mut runs[(i + r) % n];
            let (w, rd) = (lock.info.uncontended)(ops);
            lock.write.push(w);
            lock.read.extend(rd);
        }
    }
    let median_of = |name: &str, read: bool| {
        runs.iter()
            .find(|l| l.info.name == name)
            .map(|l| summary(if read { &l.read } else { &l.write }).0)
    };
    let mut text = format!(
        "== uncontended: one thread, {ops} lock + unlock pairs per run, median of {repeats} \
         interleaved repeats ==\n{:<36} {:>6} {:>18} {:>9}\n",
        "lock", "pair", "ns (min-max)", "÷ pl"
    );
    for l in &runs {
        for (read, v) in [(false, &l.write), (true, &l.read)] {
            if v.is_empty() {
                continue;
            }
            let (med, lo, hi) = summary(v);
            let vs = median_of(reference(l.info.kind), read)
                .map_or_else(|| "-".to_string(), |p| format!("{:.3}x", med / p));
            text.push_str(&format!(
                "{:<36} {:>6} {:>6.2} ({:.2}-{:.2}) {:>9}\n",
                l.info.name,
                if read { "read" } else { "write" },
                med,
                lo,
                hi,
                vs
            ));
        }
    }
    text.push_str(
        "÷ pl = ns ÷ parking_lot's lock of the same kind (mutex or rwlock) in the same run; \
         lower is faster.\n",
    );
    out.write_all(text.as_bytes()).map_err(|e| e.to_string())
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
    fn the_table_names_every_lock_and_its_ratio_to_parking_lot() {
        let mut out = Vec::new();
        let locks: Vec<LockInfo> = ["std-mutex", "parking-lot-mutex", "std-rwlock"]
            .iter()
            .map(|n| crate::locks::find(n).unwrap())
            .collect();
        run(&locks, 1000, 3, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let row = |name: &str| {
            text.lines()
                .filter(|l| l.starts_with(name))
                .collect::<Vec<_>>()
        };
        assert_eq!(row("std-mutex").len(), 1, "{text}");
        assert!(row("parking-lot-mutex")[0].ends_with("1.000x"), "{text}");
        // std's rwlock: both pairs, and no parking_lot rwlock in the run to divide by.
        assert_eq!(row("std-rwlock").len(), 2, "{text}");
        assert!(row("std-rwlock").iter().all(|l| l.ends_with('-')), "{text}");
    }
}
