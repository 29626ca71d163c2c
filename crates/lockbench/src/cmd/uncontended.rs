//! `lockbench uncontended`: what one lock + unlock costs when nobody else wants the lock, per
//! lock, against parking_lot's lock of the same kind.
//!
//! Every repeat runs all the locks' loops ([`crate::uncontended`]) back to back, rotating their
//! order, while the process has an idle thread ([`IdleThread`]: glibc's single-thread shortcut
//! would flatter its locks), and the table reports each lock's median ns per pair (min–max
//! over the repeats) and its ratio to parking_lot's lock of the same kind (mutex or rwlock)
//! from the same repeats.

use std::io::Write;

use clap::Args;

use crate::args::lock_parser;
use crate::registry::{self, Kind, LockInfo};
use crate::uncontended::{IdleThread, PairResult};

/// `lockbench uncontended`'s arguments.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct UncontendedArgs {
    /// Locks to run (comma-separated; also all, mutexes, rwlocks).
    #[arg(long, value_delimiter = ',', value_parser = lock_parser(), default_value = "all")]
    pub locks: Vec<String>,
    /// Lock + unlock pairs per run.
    #[arg(long, default_value_t = 20_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub ops: u64,
    /// Interleaved repeats (the table reports the median).
    #[arg(long, default_value_t = 7, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,
}

/// `lockbench uncontended`.
pub fn run(u: &UncontendedArgs, out: &mut dyn Write) -> Result<(), String> {
    table(&registry::resolve(&u.locks), u.ops, u.repeat, out)
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

/// Runs `locks` (each once per repeat, the order rotating) with an idle thread in the process
/// ([`IdleThread`]); one row per lock and mode.
pub fn measure_rows(locks: &[LockInfo], ops: u64, repeats: u32) -> Vec<PairResult> {
    let idle = IdleThread::spawn();
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
    debug_assert!(idle.is_alive());
    drop(idle);
    let median_of = |name: &str, read: bool| {
        runs.iter()
            .find(|l| l.info.name == name)
            .map(|l| summary(if read { &l.read } else { &l.write }).0)
    };
    let mut rows = Vec::new();
    for l in &runs {
        for (read, v) in [(false, &l.write), (true, &l.read)] {
            if v.is_empty() {
                continue;
            }
            let (ns, ns_min, ns_max) = summary(v);
            rows.push(PairResult {
                lock: l.info.name.to_string(),
                pair: if read { "read" } else { "write" }.into(),
                ns,
                ns_min,
                ns_max,
                vs_parking_lot: median_of(reference(l.info.kind), read).map(|p| ns / p),
            });
        }
    }
    rows
}

/// The table of `rows` (`ops` pairs per run, `repeats` repeats).
pub fn write_table(
    rows: &[PairResult],
    ops: u64,
    repeats: u32,
    out: &mut dyn Write,
) -> Result<(), String> {
    let mut text = format!(
        "== uncontended: one thread (and an idle one), {ops} lock + unlock pairs per run, median \
         of {repeats} interleaved repeats ==\n{:<36} {:>6} {:>18} {:>9}\n",
        "lock", "pair", "ns (min-max)", "÷ pl"
    );
    for r in rows {
        let vs = r
            .vs_parking_lot
            .map_or_else(|| "-".to_string(), |x| format!("{x:.3}x"));
        text.push_str(&format!(
            "{:<36} {:>6} {:>6.2} ({:.2}-{:.2}) {:>9}\n",
            r.lock, r.pair, r.ns, r.ns_min, r.ns_max, vs
        ));
    }
    text.push_str(
        "÷ pl = ns ÷ parking_lot's lock of the same kind (mutex or rwlock) in the same run; \
         lower is faster.\n",
    );
    out.write_all(text.as_bytes()).map_err(|e| e.to_string())
}

/// Runs `locks` and writes the table.
pub fn table(
    locks: &[LockInfo],
    ops: u64,
    repeats: u32,
    out: &mut dyn Write,
) -> Result<(), String> {
    write_table(&measure_rows(locks, ops, repeats), ops, repeats, out)
}

/// The suite's line: kslock's pairs ÷ parking_lot's (`rows` of [`measure_rows`]).
pub fn summary_line(rows: &[PairResult], ops: u64, repeats: u32) -> String {
    let part = |lock: &str, pair: &str| {
        rows.iter()
            .find(|r| r.lock == lock && r.pair == pair)
            .and_then(|r| r.vs_parking_lot.map(|x| (r.ns, r.ns / x, x)))
            .map(|(ns, pl, x)| format!("{ns:.2} ÷ {pl:.2} ns = {x:.2}x"))
    };
    let mut parts = Vec::new();
    if let Some(p) = part("kslock-mutex", "write") {
        parts.push(format!("mutex {p}"));
    }
    if let Some(p) = part("kslock-rwsem", "write") {
        parts.push(format!("rwsem write {p}"));
    }
    if let Some(p) = part("kslock-rwsem", "read") {
        parts.push(format!("rwsem read {p}"));
    }
    if parts.is_empty() {
        return String::new();
    }
    format!(
        "uncontended, kslock ÷ parking_lot (one lock + unlock pair, one thread and an idle one, \
         median of {repeats} repeats of {ops} pairs): {}\n",
        parts.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_names_every_lock_and_its_ratio_to_parking_lot() {
        let mut out = Vec::new();
        let locks: Vec<LockInfo> = ["std-mutex", "parking-lot-mutex", "std-rwlock"]
            .iter()
            .map(|n| registry::find(n).unwrap())
            .collect();
        table(&locks, 1000, 3, &mut out).unwrap();
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
