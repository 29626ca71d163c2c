//! Reading the tables: [`snapshot`], and its text ([`Snapshot::report`]) and JSON
//! ([`Snapshot::to_json`]) forms. Allocates; never called from a lock path.

use super::stack::{DROPPED_STACKS, STACKS};
use super::table::{
    self, StatsKey, HANDOFF, HIST_BUCKETS, KEYS, RECORDS, SLEPT, SPUN, TAG_MASK, TAG_RWSEM_READ,
    TAG_RWSEM_WRITE, TIMED_OUT, YIELDED,
};
use core::fmt::Write as _;
use core::sync::atomic::Ordering::*;

/// What kind of lock (or side of one) a record counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockKind {
    /// A mutex ([`crate::RawMutex`], and the locks built on it).
    Mutex,
    /// An rw-semaphore's write side.
    RwSemWrite,
    /// An rw-semaphore's read side.
    RwSemRead,
}

impl LockKind {
    /// The kind's name in reports: `mutex`, `rwsem-write`, `rwsem-read`.
    pub fn name(self) -> &'static str {
        match self {
            LockKind::Mutex => "mutex",
            LockKind::RwSemWrite => "rwsem-write",
            LockKind::RwSemRead => "rwsem-read",
        }
    }
}

/// One call stack's share of a lock's contended acquisitions (sampled).
#[derive(Debug, Clone)]
pub struct StackStats {
    /// Return addresses, innermost first (the walk's own frames left out).
    pub frames: Vec<usize>,
    /// Sampled contended acquisitions from this stack.
    pub count: u64,
    /// Their wait, total and longest (ns).
    pub wait_total_ns: u64,
    /// The longest of them (ns).
    pub wait_max_ns: u64,
}

/// One lock's figures (module doc of [`super`]).
#[derive(Debug, Clone)]
pub struct LockStats {
    /// The raw lock's address.
    pub addr: usize,
    /// What it is.
    pub kind: LockKind,
    /// Its [`super::set_name`] name.
    pub name: Option<&'static str>,
    /// Acquisitions since the lock got its record (contended ones included).
    pub acquisitions: u64,
    /// Acquisitions that entered the slow path (timed-out attempts included).
    pub contended: u64,
    /// Contended acquisitions won by spinning or polling (no yield, no sleep).
    pub spun: u64,
    /// Contended acquisitions that yielded the CPU and never slept.
    pub yielded: u64,
    /// Contended acquisitions that slept.
    pub slept: u64,
    /// Contended acquisitions that got the lock handed over.
    pub handoff: u64,
    /// Timed attempts that gave up.
    pub timed_out: u64,
    /// Releases that found waiters (their slow path).
    pub released_with_waiters: u64,
    /// Wait of the contended acquisitions, total (ns).
    pub wait_total_ns: u64,
    /// The longest wait (ns).
    pub wait_max_ns: u64,
    /// Contended acquisitions by wait: bucket `i` counts waits in [2^i, 2^(i+1)) ns.
    pub wait_histogram: [u64; HIST_BUCKETS],
    /// Holds sampled, their total and longest (ns).
    pub hold_samples: u64,
    /// Total of the sampled holds (ns).
    pub hold_total_ns: u64,
    /// The longest sampled hold (ns).
    pub hold_max_ns: u64,
    /// The stack of the lock's first contended acquisition.
    pub first_stack: Option<Vec<usize>>,
    /// Sampled stacks of its contended acquisitions, most wait first.
    pub stacks: Vec<StackStats>,
}

impl LockStats {
    /// The wait (ns) below which a fraction `q` (0–1) of the contended acquisitions waited,
    /// from the histogram (interpolated inside a bucket: within a factor of 2), at most the
    /// longest wait.
    pub fn wait_quantile_ns(&self, q: f64) -> u64 {
        quantile(&self.wait_histogram, q).min(self.wait_max_ns)
    }

    /// The mean sampled hold (ns), 0 without samples.
    pub fn hold_mean_ns(&self) -> u64 {
        self.hold_total_ns
            .checked_div(self.hold_samples)
            .unwrap_or(0)
    }

    /// The stack that waited longest in total, if any was sampled.
    pub fn worst_stack(&self) -> Option<&StackStats> {
        self.stacks.first()
    }
}

/// The wait below which a fraction `q` of the counts in `hist` lie (0 when empty).
pub(super) fn quantile(hist: &[u64], q: f64) -> u64 {
    let n: u64 = hist.iter().sum();
    if n == 0 {
        return 0;
    }
    let target = (q.clamp(0.0, 1.0) * n as f64).max(1.0);
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
    1u64 << HIST_BUCKETS
}

/// Every lock's figures at one moment (each counter exact; module doc, "Accuracy").
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// Locks with a record, most wait first.
    pub locks: Vec<LockStats>,
    /// The sampling rate in force ([`super::sample_rate`]).
    pub sample_rate: u32,
    /// Contended acquisitions of locks the full table could not hold.
    pub dropped_locks: u64,
    /// Stack samples the full stack table could not hold.
    pub dropped_stacks: u64,
    /// The lock event counters ([`crate::events`]), by name.
    pub events: Vec<(&'static str, u64)>,
}

/// Reads every record.
pub fn snapshot() -> Snapshot {
    let mut stacks: Vec<(usize, usize, StackStats)> = Vec::new();
    for (i, s) in STACKS.iter().enumerate() {
        // Acquire pairs with the Release of `stack::record`'s `ready` store.
        if s.ready.load(Acquire) == 0 || s.count.load(Relaxed) == 0 {
            continue;
        }
        let depth = (s.depth.load(Relaxed) as usize).min(s.frames.len());
        let st = StackStats {
            frames: s.frames[..depth].iter().map(|f| f.load(Relaxed)).collect(),
            count: s.count.load(Relaxed),
            wait_total_ns: s.wait_total.load(Relaxed),
            wait_max_ns: s.wait_max.load(Relaxed),
        };
        stacks.push((s.lock.load(Relaxed), i, st));
    }
    let mut locks = Vec::new();
    for (slot, k) in KEYS.iter().enumerate() {
        let key = k.load(Relaxed);
        if key == 0 {
            continue;
        }
        let r = &RECORDS[slot];
        let kind = match key & TAG_MASK {
            TAG_RWSEM_WRITE => LockKind::RwSemWrite,
            TAG_RWSEM_READ => LockKind::RwSemRead,
            _ => LockKind::Mutex,
        };
        // Acquire pairs with the Release of `set_name`.
        let name = r.name.load(Acquire);
        // SAFETY: a non-null name is a leaked `Box<&'static str>`, never freed.
        let name = (!name.is_null()).then(|| unsafe { *name });
        let first = r.first_stack.load(Relaxed) as usize;
        let mut mine: Vec<StackStats> = stacks
            .iter()
            .filter(|(l, _, _)| *l == key)
            .map(|(_, _, s)| s.clone())
            .collect();
        mine.sort_by_key(|s| core::cmp::Reverse(s.wait_total_ns));
        let o = |i: usize| r.sum(|s| &s.outcomes[i]);
        locks.push(LockStats {
            addr: key & !TAG_MASK,
            kind,
            name,
            acquisitions: r.acquisitions(key),
            contended: r.contended(),
            spun: o(SPUN),
            yielded: o(YIELDED),
            slept: o(SLEPT),
            handoff: o(HANDOFF),
            timed_out: o(TIMED_OUT),
            released_with_waiters: r.sum(|s| &s.released_with_waiters),
            wait_total_ns: r.sum(|s| &s.wait_total),
            wait_max_ns: r.wait_max.load(Relaxed),
            wait_histogram: core::array::from_fn(|i| r.hist(i)),
            hold_samples: r.sum(|s| &s.hold_samples),
            hold_total_ns: r.sum(|s| &s.hold_total),
            hold_max_ns: r.hold_max.load(Relaxed),
            first_stack: stacks
                .iter()
                .find(|(_, i, _)| first != 0 && *i == first - 1)
                .map(|(_, _, s)| s.frames.clone()),
            stacks: mine,
        });
    }
    locks.sort_by_key(|l| (core::cmp::Reverse(l.wait_total_ns), l.addr));
    Snapshot {
        locks,
        sample_rate: table::sample_rate(),
        dropped_locks: table::DROPPED_LOCKS.load(Relaxed),
        dropped_stacks: DROPPED_STACKS.load(Relaxed),
        events: crate::events::snapshot(),
    }
}

/// The [`Snapshot::report`] of a fresh snapshot's top 10 locks.
pub fn report() -> String {
    snapshot().report(10)
}

/// `ns` as a short human figure (ns, µs, ms, s).
fn human(ns: u64) -> String {
    match ns {
        0..=9_999 => format!("{ns} ns"),
        10_000..=9_999_999 => format!("{:.1} µs", ns as f64 / 1e3),
        10_000_000..=9_999_999_999 => format!("{:.1} ms", ns as f64 / 1e6),
        _ => format!("{:.2} s", ns as f64 / 1e9),
    }
}

/// A JSON string literal of `s`.
fn json_str(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn json_frames(f: &[usize]) -> String {
    let v: Vec<String> = f.iter().map(|a| format!("\"{a:#x}\"")).collect();
    format!("[{}]", v.join(","))
}

impl Snapshot {
    /// The figures of `lock`, if it has a record (a write side for an rw-semaphore).
    pub fn get<L: StatsKey + ?Sized>(&self, lock: &L) -> Option<&LockStats> {
        let key = lock.stats_key();
        self.locks
            .iter()
            .find(|l| l.addr == key & !TAG_MASK && l.kind != LockKind::RwSemRead)
    }

    /// The figures of the read side of the rw-semaphore `lock`.
    pub fn get_read<L: StatsKey + ?Sized>(&self, lock: &L) -> Option<&LockStats> {
        let addr = lock.stats_key() & !TAG_MASK;
        self.locks
            .iter()
            .find(|l| l.addr == addr && l.kind == LockKind::RwSemRead)
    }

    /// A text report of the `top` locks by total wait: counts, outcomes, wait percentiles,
    /// sampled holds and the stack that waited most (return addresses; `kslock-stat`
    /// symbolizes them).
    pub fn report(&self, top: usize) -> String {
        let mut o = String::new();
        let contended = self.locks.iter().filter(|l| l.contended > 0).count();
        let _ = writeln!(
            o,
            "kslock lock statistics: {} locks recorded, {} contended (sample rate 1/{}); top {} by wait",
            self.locks.len(),
            contended,
            self.sample_rate,
            top.min(self.locks.len())
        );
        for (i, l) in self.locks.iter().take(top).enumerate() {
            let _ = writeln!(
                o,
                "\n#{} {} {:#x}{}",
                i + 1,
                l.kind.name(),
                l.addr,
                l.name.map(|n| format!(" \"{n}\"")).unwrap_or_default()
            );
            let _ = writeln!(
                o,
                "   acquisitions {}  contended {} ({:.1}%)  released with waiters {}",
                l.acquisitions,
                l.contended,
                100.0 * l.contended as f64 / l.acquisitions.max(1) as f64,
                l.released_with_waiters
            );
            let _ = writeln!(
                o,
                "   contended ended: spun {}  yielded {}  slept {}  handoff {}  timed out {}",
                l.spun, l.yielded, l.slept, l.handoff, l.timed_out
            );
            let _ = writeln!(
                o,
                "   wait total {}  max {}  p50 {}  p99 {}  p99.9 {}",
                human(l.wait_total_ns),
                human(l.wait_max_ns),
                human(l.wait_quantile_ns(0.5)),
                human(l.wait_quantile_ns(0.99)),
                human(l.wait_quantile_ns(0.999))
            );
            let _ = writeln!(
                o,
                "   hold (sampled {}) mean {}  max {}",
                l.hold_samples,
                human(l.hold_mean_ns()),
                human(l.hold_max_ns)
            );
            if let Some(s) = l.worst_stack() {
                let _ = writeln!(
                    o,
                    "   waited most at ({} samples, {}): {}",
                    s.count,
                    human(s.wait_total_ns),
                    json_frames(&s.frames)
                );
            }
        }
        if self.dropped_locks + self.dropped_stacks > 0 {
            let _ = writeln!(
                o,
                "\ntables full: {} contentions and {} stack samples not recorded",
                self.dropped_locks, self.dropped_stacks
            );
        }
        let ev: Vec<String> = self
            .events
            .iter()
            .filter(|e| e.1 > 0)
            .map(|(n, c)| format!("{n} {c}"))
            .collect();
        if !ev.is_empty() {
            let _ = writeln!(o, "\nlock events: {}", ev.join(", "));
        }
        o
    }

    /// The snapshot as JSON: `{"sample_rate", "dropped_locks", "dropped_stacks", "locks":
    /// [{"addr", "kind", "name", the counters of [`LockStats`] by their field names,
    /// "wait_p50_ns", "wait_p99_ns", "wait_p999_ns", "first_stack", "stacks"}], "events"}`;
    /// addresses are hex strings.
    pub fn to_json(&self) -> String {
        let mut o = String::new();
        let _ = write!(
            o,
            "{{\"sample_rate\":{},\"dropped_locks\":{},\"dropped_stacks\":{},\"locks\":[",
            self.sample_rate, self.dropped_locks, self.dropped_stacks
        );
        for (i, l) in self.locks.iter().enumerate() {
            if i > 0 {
                o.push(',');
            }
            let _ = write!(
                o,
                "{{\"addr\":\"{:#x}\",\"kind\":\"{}\",\"name\":{},\"acquisitions\":{},\"contended\":{},\
                 \"spun\":{},\"yielded\":{},\"slept\":{},\"handoff\":{},\"timed_out\":{},\
                 \"released_with_waiters\":{},\"wait_total_ns\":{},\"wait_max_ns\":{},\
                 \"wait_p50_ns\":{},\"wait_p99_ns\":{},\"wait_p999_ns\":{},\"wait_histogram\":{:?},\
                 \"hold_samples\":{},\"hold_total_ns\":{},\"hold_max_ns\":{},\"first_stack\":{},\"stacks\":[",
                l.addr,
                l.kind.name(),
                l.name.map(json_str).unwrap_or_else(|| "null".into()),
                l.acquisitions,
                l.contended,
                l.spun,
                l.yielded,
                l.slept,
                l.handoff,
                l.timed_out,
                l.released_with_waiters,
                l.wait_total_ns,
                l.wait_max_ns,
                l.wait_quantile_ns(0.5),
                l.wait_quantile_ns(0.99),
                l.wait_quantile_ns(0.999),
                l.wait_histogram,
                l.hold_samples,
                l.hold_total_ns,
                l.hold_max_ns,
                l.first_stack
                    .as_deref()
                    .map(json_frames)
                    .unwrap_or_else(|| "null".into()),
            );
            for (j, s) in l.stacks.iter().enumerate() {
                if j > 0 {
                    o.push(',');
                }
                let _ = write!(
                    o,
                    "{{\"count\":{},\"wait_total_ns\":{},\"wait_max_ns\":{},\"frames\":{}}}",
                    s.count,
                    s.wait_total_ns,
                    s.wait_max_ns,
                    json_frames(&s.frames)
                );
            }
            o.push_str("]}");
        }
        o.push_str("],\"events\":{");
        for (i, (n, c)) in self.events.iter().enumerate() {
            if i > 0 {
                o.push(',');
            }
            let _ = write!(o, "{}:{c}", json_str(n));
        }
        o.push_str("}}");
        o
    }
}
