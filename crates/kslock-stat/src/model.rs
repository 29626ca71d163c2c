//! A dump, symbolized: the locks by total wait, each with its figures, its first contended
//! stack and its sampled stacks (scaled to the lock's exact totals).

use crate::raw::{Dump, Lock, Stack};
use crate::symbol::{Frame, Symbolizer};
use serde::Serialize;

/// The preload's file name; its own frames are left out of every stack.
pub const PRELOAD: &str = "libkslock_stat_preload.so";

/// A sampled stack of one lock.
#[derive(Debug, Clone, Serialize)]
pub struct StackReport {
    /// Innermost first, the preload's own frames left out.
    pub frames: Vec<Frame>,
    /// The raw return addresses (innermost first, the preload's left out).
    #[serde(skip)]
    pub addrs: Vec<u64>,
    pub samples: u64,
    pub sampled_wait_ns: u64,
    pub max_wait_ns: u64,
    /// The share of the lock's contended acquisitions and wait charged to this stack:
    /// its samples scaled so that the lock's stacks add up to its exact totals.
    pub est_contentions: u64,
    pub est_wait_ns: u64,
}

/// One lock.
#[derive(Debug, Clone, Serialize)]
pub struct LockReport {
    pub addr: String,
    pub kind: &'static str,
    /// The name given with `kslock::stats::set_name`, else the symbol the lock lies in.
    pub name: Option<String>,
    /// Where it lives: the symbol's object, or heap / stack / anonymous memory.
    pub region: String,
    pub acquisitions: u64,
    pub contended: u64,
    pub spun: u64,
    pub yielded: u64,
    pub slept: u64,
    pub handoff: u64,
    pub timed_out: u64,
    pub released_with_waiters: u64,
    pub wait_total_ns: u64,
    pub wait_max_ns: u64,
    pub wait_p50_ns: u64,
    pub wait_p99_ns: u64,
    pub wait_p999_ns: u64,
    pub wait_histogram: Vec<u64>,
    pub hold_samples: u64,
    pub hold_mean_ns: u64,
    pub hold_max_ns: u64,
    pub first_contended_at: Option<Vec<Frame>>,
    /// Most wait first.
    pub stacks: Vec<StackReport>,
}

/// The whole report of one process.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub pid: u32,
    pub sample_rate: u32,
    pub locks_recorded: usize,
    pub locks_contended: usize,
    pub dropped_locks: u64,
    pub dropped_stacks: u64,
    /// Most wait first.
    pub locks: Vec<LockReport>,
}

/// The wait below which a fraction `q` of `hist`'s counts lie (kslock's estimate).
fn quantile(hist: &[u64], q: f64) -> u64 {
    let n: u64 = hist.iter().sum();
    if n == 0 {
        return 0;
    }
    let target = (q * n as f64).max(1.0);
    let mut seen = 0.0;
    for (i, &c) in hist.iter().enumerate() {
        if c == 0 {
            continue;
        }
        if seen + c as f64 >= target {
            let lo = if i == 0 { 0.0 } else { (1u64 << i) as f64 };
            let hi = (1u64 << (i + 1)) as f64;
            return (lo + (hi - lo) * ((target - seen) / c as f64)) as u64;
        }
        seen += c as f64;
    }
    1u64 << hist.len()
}

fn kind(key: u64) -> &'static str {
    match key & 7 {
        1 => "rwsem-write",
        2 => "rwsem-read",
        _ => "mutex",
    }
}

/// The stack's return addresses without the preload's frames (those before the first frame
/// outside it).
fn trim(sym: &Symbolizer<'_>, frames: &[u64]) -> Vec<u64> {
    let first = frames
        .iter()
        .position(|&f| !sym.in_object(f, PRELOAD))
        .unwrap_or(frames.len());
    frames[first..].to_vec()
}

fn symbolize(sym: &mut Symbolizer<'_>, addrs: &[u64]) -> Vec<Frame> {
    addrs.iter().flat_map(|&a| sym.frames(a)).collect()
}

fn lock_report(d: &Dump, sym: &mut Symbolizer<'_>, l: &Lock) -> LockReport {
    let addr = l.key & !7;
    let mut stacks: Vec<&Stack> = d.stacks.values().filter(|s| s.lock == l.key).collect();
    stacks.sort_by_key(|s| (std::cmp::Reverse(s.wait_total), s.slot));
    let sampled_wait: u64 = stacks.iter().map(|s| s.wait_total).sum();
    let sampled_count: u64 = stacks.iter().map(|s| s.count).sum();
    let scale = |v: u64, total: u64, sampled: u64| -> u64 {
        if sampled == 0 {
            0
        } else {
            (v as f64 * total as f64 / sampled as f64).round() as u64
        }
    };
    let stacks = stacks
        .into_iter()
        .map(|s| {
            let addrs = trim(sym, &s.frames);
            StackReport {
                frames: symbolize(sym, &addrs),
                addrs,
                samples: s.count,
                sampled_wait_ns: s.wait_total,
                max_wait_ns: s.wait_max,
                est_contentions: scale(s.count, l.contended, sampled_count),
                est_wait_ns: scale(s.wait_total, l.wait_total, sampled_wait),
            }
        })
        .collect();
    let first = (l.first_stack > 0)
        .then(|| d.stacks.get(&(l.first_stack - 1)))
        .flatten()
        .map(|s| {
            let a = trim(sym, &s.frames);
            symbolize(sym, &a)
        });
    let name = l.name.clone().or_else(|| sym.data_symbol(addr));
    LockReport {
        addr: format!("{addr:#x}"),
        kind: kind(l.key),
        region: sym
            .map_of(addr)
            .filter(|m| m.path.starts_with('/'))
            .map(|m| crate::symbol::short(&m.path).to_string())
            .unwrap_or_else(|| sym.region(addr)),
        name,
        acquisitions: l.acquisitions,
        contended: l.contended,
        spun: l.spun,
        yielded: l.yielded,
        slept: l.slept,
        handoff: l.handoff,
        timed_out: l.timed_out,
        released_with_waiters: l.released_with_waiters,
        wait_total_ns: l.wait_total,
        wait_max_ns: l.wait_max,
        wait_p50_ns: quantile(&l.hist, 0.5).min(l.wait_max),
        wait_p99_ns: quantile(&l.hist, 0.99).min(l.wait_max),
        wait_p999_ns: quantile(&l.hist, 0.999).min(l.wait_max),
        wait_histogram: l.hist.clone(),
        hold_samples: l.hold_samples,
        hold_mean_ns: l.hold_total.checked_div(l.hold_samples).unwrap_or(0),
        hold_max_ns: l.hold_max,
        first_contended_at: first,
        stacks,
    }
}

/// Symbolizes the `top` locks of `d` by total wait (all locks are counted in the totals).
pub fn build(d: &Dump, top: usize) -> Report {
    let mut sym = Symbolizer::new(&d.maps);
    let mut locks: Vec<&Lock> = d.locks.iter().collect();
    locks.sort_by_key(|l| (std::cmp::Reverse(l.wait_total), l.key));
    Report {
        pid: d.pid,
        sample_rate: d.sample,
        locks_recorded: d.locks.len(),
        locks_contended: d.locks.iter().filter(|l| l.contended > 0).count(),
        dropped_locks: d.dropped_locks,
        dropped_stacks: d.dropped_stacks,
        locks: locks
            .into_iter()
            .take(top)
            .map(|l| lock_report(d, &mut sym, l))
            .collect(),
    }
}
