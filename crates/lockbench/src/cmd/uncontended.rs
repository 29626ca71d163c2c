//! `lockbench uncontended`: what one lock + unlock costs when nobody else wants the lock, per
//! lock, against parking_lot's lock of the same kind.
//!
//! Every repeat runs all the locks' loops ([`crate::uncontended`]) back to back, rotating their
//! order, and the table reports each lock's median ns per pair (min–max over the repeats) and
//! its ratio to parking_lot's lock of the same kind (mutex or rwlock) from the same repeats.

use std::io::Write;

use clap::Args;

use crate::args::lock_parser;
use crate::registry::{self, Kind, LockInfo};

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

/// Runs `locks` (each once per repeat, the order rotating) and writes the table.
pub fn table(
    locks: &[LockInfo],
    ops: u64,
    repeats: u32,
    out: &mut dyn Write,
) -> Result<(), String> {
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
