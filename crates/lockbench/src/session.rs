//! Running a plan of cells ([`Group`]s) into one report, with the bounds and the scoreboard
//! kept current after every cell.
//!
//! # Pacing
//!
//! A session may run against a deadline ([`Pace`]): before each cell config it sizes the runs'
//! windows from the time left, less the modelled overhead of the runs still to do (scaled by
//! how far the observed overhead of the runs done was from the model), so a slow machine
//! shortens the windows instead of dropping repeats or overrunning.
//!
//! # Interleaved repeats
//!
//! A cell config (workload, threads, loads, read mix) is measured `repeat` times for every
//! lock of its group, interleaved: repeat `r` runs every lock once, back to back, starting at
//! lock `r mod locks` (the order rotates), so a slow phase of the machine (another tenant of the
//! VM, a frequency change) lands on every lock alike instead of on whichever ran then. Each
//! lock's cell reports the median kops/s of its repeats; its other metrics come from the repeat
//! closest to that median.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::time::Instant;

use crate::cell::CellResult;
use crate::registry::LockInfo;
use crate::results::{Calibration, Report, Sink};
use crate::runner::{CellConfig, Measurement};
use crate::stats::{bound_kops, median, online_cpus};
use crate::util::fmt_kops;
use crate::workload::WorkSpec;

/// A set of locks crossed with a set of thread counts and loads.
#[derive(Clone)]
pub struct Group {
    pub spec: WorkSpec,
    pub locks: Vec<LockInfo>,
    pub threads: Vec<usize>,
    pub cs_loads: Vec<u32>,
    pub outside_loads: Vec<u32>,
    pub read_pcts: Vec<u32>,
    /// Cache lines per section (`data`; `[0]` for the other workloads).
    pub lines: Vec<u32>,
    /// Calibrate the bound with 1-thread runs where `threads` has no 1 (false: no bound).
    pub calibrate: bool,
}

impl Group {
    /// A group with no lines dimension that calibrates its bound.
    pub fn new(
        spec: WorkSpec,
        locks: Vec<LockInfo>,
        threads: Vec<usize>,
        cs_loads: Vec<u32>,
        outside_loads: Vec<u32>,
        read_pcts: Vec<u32>,
    ) -> Group {
        Group {
            spec,
            locks,
            threads,
            cs_loads,
            outside_loads,
            read_pcts,
            lines: vec![0],
            calibrate: true,
        }
    }

    /// Cell configs per lock (every dimension but the locks).
    pub fn configs(&self) -> usize {
        self.threads.len()
            * self.cs_loads.len()
            * self.outside_loads.len()
            * self.read_pcts.len()
            * self.lines.len()
    }

    /// Cells: locks × configs.
    pub fn cells(&self) -> usize {
        self.locks.len() * self.configs()
    }

    /// Does this group run 1-thread calibrations?
    fn calibrates(&self) -> bool {
        self.calibrate && !self.threads.contains(&1)
    }

    /// Runs of `repeat` interleaved repeats, their modelled overhead ([`run_overhead_s`]),
    /// and the calibration runs.
    pub fn cost(&self, repeat: usize) -> (usize, f64, usize) {
        let per_thread_count = self.cells() / self.threads.len().max(1) * repeat.max(1);
        let overhead = self
            .threads
            .iter()
            .map(|&n| per_thread_count as f64 * run_overhead_s(n))
            .sum();
        let calib = if self.calibrates() {
            self.cells() / self.threads.len().max(1)
        } else {
            0
        };
        (self.cells() * repeat.max(1), overhead, calib)
    }
}

/// Timing settings shared by all cells of a run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Timing {
    pub secs: f64,
    pub warmup: f64,
    /// Interleaved repeats per cell (module doc).
    pub repeat: usize,
    pub pin: bool,
}

/// Seconds one run of `threads` threads costs beyond its warm-up and measured window (thread
/// start and join, measured on the 2-vCPU development VM: ≈ 20 ms + 0.3 ms per thread).
pub fn run_overhead_s(threads: usize) -> f64 {
    0.02 + 0.0003 * threads as f64
}

/// Calibration runs are shorter than cells: they only set the scale.
const CALIB_SECS: f64 = 0.25;
const CALIB_WARMUP: f64 = 0.05;
/// A paced session's calibration runs (measured window, warm-up).
pub const PACED_CALIB: (f64, f64) = (0.1, 0.02);
/// A paced run's shortest and longest measured window, seconds.
const PACED_SECS: (f64, f64) = (0.05, 5.0);

/// Workload, cs load, outside load, read percentage, lines.
type CalibKey = (String, u32, u32, u32, u32);

/// A deadline for the rest of a session (module doc, "Pacing").
#[derive(Clone, Debug)]
pub struct Pace {
    end: Instant,
    runs_left: usize,
    /// Modelled overhead of the runs left ([`run_overhead_s`]), seconds.
    overhead_left: f64,
    /// Calibration runs left (each [`PACED_CALIB`] plus its overhead).
    calib_left: usize,
    /// Observed and modelled overhead of the runs done, seconds.
    seen: f64,
    modelled: f64,
}

impl Pace {
    /// `groups` (at `repeat` repeats) are to end by `end`.
    pub fn new(end: Instant, groups: &[Group], repeat: usize) -> Pace {
        let (mut runs, mut overhead, mut calib) = (0, 0.0, 0);
        for g in groups {
            let (r, o, c) = g.cost(repeat);
            runs += r;
            overhead += o;
            calib += c;
        }
        Pace {
            end,
            runs_left: runs,
            overhead_left: overhead,
            calib_left: calib,
            seen: 0.0,
            modelled: 0.0,
        }
    }

    /// Observed ÷ modelled overhead so far (1 before any run; kept within 0.5–3).
    fn ratio(&self) -> f64 {
        if self.modelled > 0.0 {
            (self.seen / self.modelled).clamp(0.5, 3.0)
        } else {
            1.0
        }
    }

    /// One run's (measured window, warm-up) from the time left.
    pub fn timing(&self, now: Instant) -> (f64, f64) {
        let left = self.end.saturating_duration_since(now).as_secs_f64();
        let calib = self.calib_left as f64 * (PACED_CALIB.0 + PACED_CALIB.1 + run_overhead_s(1));
        let per = (left - calib - self.overhead_left * self.ratio()) / self.runs_left.max(1) as f64;
        let warmup = (per * 0.2).clamp(0.0, 0.15);
        ((per - warmup).clamp(PACED_SECS.0, PACED_SECS.1), warmup)
    }

    /// A run of `threads` threads took `wall` seconds for a `window` of warm-up and measured
    /// time.
    fn done(&mut self, threads: usize, wall: f64, window: f64) {
        let model = run_overhead_s(threads);
        self.runs_left = self.runs_left.saturating_sub(1);
        self.overhead_left = (self.overhead_left - model).max(0.0);
        self.modelled += model;
        self.seen += (wall - window).max(0.0);
    }
}

/// Runs groups of cells into one report, rewriting the exports after each.
pub struct Session {
    pub report: Report,
    sink: Sink,
    /// best single-thread kops and its lock, per cell config
    best1: BTreeMap<CalibKey, (f64, String)>,
    progress: bool,
    total: usize,
    done: usize,
    cpus: usize,
    /// The deadline, if the session is paced.
    pub pace: Option<Pace>,
}

impl Session {
    /// `total_runs`: cells × repeats (for the progress lines).
    pub fn new(experiment: &str, sink: Sink, total_runs: usize) -> Session {
        Session {
            report: Report::new(experiment),
            sink,
            best1: BTreeMap::new(),
            progress: std::io::stderr().is_terminal(),
            total: total_runs,
            done: 0,
            cpus: online_cpus(),
            pace: None,
        }
    }

    /// Rebuilds the scoreboard and rewrites the exports.
    pub fn write(&mut self) -> Result<(), String> {
        self.report.update_scoreboard();
        self.sink.write(&self.report)
    }

    /// Estimated wall time of `groups`, seconds (for help texts and tests).
    pub fn estimate(groups: &[Group], t: &Timing) -> f64 {
        groups
            .iter()
            .map(|g| {
                let (runs, overhead, calib) = g.cost(t.repeat);
                runs as f64 * (t.secs + t.warmup)
                    + overhead
                    + calib as f64 * (CALIB_SECS + CALIB_WARMUP)
            })
            .sum()
    }

    fn note(&self, msg: &str) {
        if self.progress {
            eprintln!("{msg}");
        }
    }

    pub fn run_group(&mut self, g: &Group, t: &Timing) -> Result<(), String> {
        let mut threads = g.threads.clone();
        threads.sort_unstable();
        threads.dedup();
        self.report.repeats = t.repeat.max(1);
        for &cs in &g.cs_loads {
            for &outside in &g.outside_loads {
                for &read_pct in &g.read_pcts {
                    for &lines in &g.lines {
                        let key = (g.spec.name().to_string(), cs, outside, read_pct, lines);
                        if g.calibrates() && !self.best1.contains_key(&key) {
                            self.calibrate(g, &key, t)?;
                        }
                        for &n in &threads {
                            let (secs, warmup) = match &self.pace {
                                Some(p) => p.timing(Instant::now()),
                                None => (t.secs, t.warmup),
                            };
                            let cfg = CellConfig {
                                threads: n,
                                cs_load: cs,
                                outside_load: outside,
                                read_pct,
                                lines,
                                secs,
                                warmup,
                                pin: t.pin,
                            };
                            let runs = self.run_interleaved(g, &cfg, t.repeat)?;
                            for (lock, runs) in g.locks.iter().zip(runs) {
                                let cell = cell_from_runs(g.spec, lock, &cfg, &runs);
                                if n == 1 {
                                    self.offer_best(&key, cell.kops, lock.name);
                                }
                                self.report.cells.push(cell);
                            }
                            self.apply_bounds();
                            self.report.update_scoreboard();
                            self.sink.write(&self.report)?;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// One run of every cell of `g` with windows of `secs` (after `warmup`), into the report's
    /// fairness runs instead of its cells (no repeats, no bound).
    pub fn run_fairness(&mut self, g: &Group, secs: f64, warmup: f64) -> Result<(), String> {
        for &cs in &g.cs_loads {
            for &outside in &g.outside_loads {
                for &read_pct in &g.read_pcts {
                    for &lines in &g.lines {
                        for &n in &g.threads {
                            let cfg = CellConfig {
                                threads: n,
                                cs_load: cs,
                                outside_load: outside,
                                read_pct,
                                lines,
                                secs,
                                warmup,
                                pin: false,
                            };
                            for lock in &g.locks {
                                let m = self.run_once(g.spec, lock, &cfg)?;
                                let kops = m.kops();
                                let cell = cell_from(g.spec, lock, &cfg, &m, kops, &[kops]);
                                self.report.fairness.push(cell);
                            }
                            self.write()?;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// `repeat` rounds of every lock of `g` on one cell config, the order rotating by one lock
    /// per round (module doc). Returns the runs per lock, in `g.locks` order.
    fn run_interleaved(
        &mut self,
        g: &Group,
        cfg: &CellConfig,
        repeat: usize,
    ) -> Result<Vec<Vec<Measurement>>, String> {
        let n = g.locks.len();
        let mut runs: Vec<Vec<Measurement>> = (0..n).map(|_| Vec::new()).collect();
        for r in 0..repeat.max(1) {
            for k in 0..n {
                let i = (k + r) % n;
                let m = self.run_once(g.spec, &g.locks[i], cfg)?;
                runs[i].push(m);
            }
        }
        Ok(runs)
    }

    fn run_once(
        &mut self,
        spec: WorkSpec,
        lock: &LockInfo,
        cfg: &CellConfig,
    ) -> Result<Measurement, String> {
        self.done += 1;
        let start = Instant::now();
        let m = lock.run_cell(&spec, cfg).map_err(|e| {
            format!(
                "{} with {} threads, cs-load {}, read {}% ({}): {e}",
                lock.name,
                cfg.threads,
                cfg.cs_load,
                cfg.read_pct,
                spec.name()
            )
        })?;
        self.note(&format!(
            "[{}/{}] {:<28} {} t={:<3} cs={:<3} out={:<3} read={:>3}%  {} kops/s",
            self.done,
            self.total,
            lock.name,
            spec.name(),
            cfg.threads,
            cfg.cs_load,
            cfg.outside_load,
            cfg.read_pct,
            fmt_kops(m.kops())
        ));
        if let Some(p) = &mut self.pace {
            p.done(
                cfg.threads,
                start.elapsed().as_secs_f64(),
                cfg.secs + cfg.warmup,
            );
        }
        Ok(m)
    }

    fn offer_best(&mut self, key: &CalibKey, kops: f64, lock: &str) {
        let e = self
            .best1
            .entry(key.clone())
            .or_insert((0.0, String::new()));
        if kops > e.0 {
            *e = (kops, lock.to_string());
        }
    }

    fn calibrate(&mut self, g: &Group, key: &CalibKey, t: &Timing) -> Result<(), String> {
        let (secs, warmup) = if self.pace.is_some() {
            PACED_CALIB
        } else {
            (CALIB_SECS.min(t.secs.max(0.05)), CALIB_WARMUP.min(t.warmup))
        };
        for lock in &g.locks {
            let cfg = CellConfig {
                threads: 1,
                cs_load: key.1,
                outside_load: key.2,
                read_pct: key.3,
                lines: key.4,
                secs,
                warmup,
                pin: t.pin,
            };
            self.note(&format!("calibrating {} 1 thread {:?}", lock.name, key));
            let m = lock
                .run_cell(&g.spec, &cfg)
                .map_err(|e| format!("{}: {e}", lock.name))?;
            self.offer_best(key, m.kops(), lock.name);
            if let Some(p) = &mut self.pace {
                p.calib_left = p.calib_left.saturating_sub(1);
            }
        }
        let (kops, best_lock) = self.best1[key].clone();
        self.report.calibration.push(Calibration {
            workload: key.0.clone(),
            cs_load: key.1,
            outside_load: key.2,
            read_pct: key.3,
            lines: key.4,
            best_lock,
            kops,
        });
        Ok(())
    }

    /// Recompute every cell's bound and efficiency from the current
    /// single-thread bests (a better 1-thread result raises earlier bounds).
    fn apply_bounds(&mut self) {
        for c in &mut self.report.cells {
            let key = (
                c.workload.clone(),
                c.cs_load,
                c.outside_load,
                c.read_pct,
                c.lines,
            );
            if let Some((best, _)) = self.best1.get(&key) {
                c.bound_kops = bound_kops(*best, c.read_pct, c.threads, self.cpus);
                c.efficiency = if c.bound_kops > 0.0 {
                    c.kops / c.bound_kops
                } else {
                    0.0
                };
            }
        }
    }
}

/// The cell of one lock from its repeats: median kops/s, the other metrics from the repeat
/// closest to the median.
pub fn cell_from_runs(
    spec: WorkSpec,
    lock: &LockInfo,
    cfg: &CellConfig,
    runs: &[Measurement],
) -> CellResult {
    let kops: Vec<f64> = runs.iter().map(Measurement::kops).collect();
    let med = median(&kops);
    let mi = (0..runs.len())
        .min_by(|&a, &b| (kops[a] - med).abs().total_cmp(&(kops[b] - med).abs()))
        .unwrap_or(0);
    let mut c = cell_from(spec, lock, cfg, &runs[mi], med, &kops);
    (c.line_rt_ns_min, c.line_rt_ns_max) = rt_range(runs.iter().flat_map(|m| &m.line_rt_ns));
    c
}

/// The fastest and slowest of some line round trips, ns ((0, 0) for none).
fn rt_range<'a>(rts: impl IntoIterator<Item = &'a f64>) -> (f64, f64) {
    crate::stats::range(rts.into_iter().copied()).unwrap_or((0.0, 0.0))
}

pub fn cell_from(
    spec: WorkSpec,
    lock: &LockInfo,
    cfg: &CellConfig,
    m: &Measurement,
    kops: f64,
    runs: &[f64],
) -> CellResult {
    let ops = m.ops().max(1) as f64;
    let kop = ops / 1000.0;
    let min = m.per_thread.iter().copied().min().unwrap_or(0);
    let max = m.per_thread.iter().copied().max().unwrap_or(0);
    let mean = m.per_thread.iter().sum::<u64>() as f64 / m.per_thread.len().max(1) as f64;
    let rt = rt_range(&m.line_rt_ns);
    let per_s = |n: u64| {
        if m.elapsed_s > 0.0 {
            n as f64 / m.elapsed_s / 1000.0
        } else {
            0.0
        }
    };
    CellResult {
        workload: spec.name().into(),
        lock: lock.name.into(),
        kind: lock.kind.name().into(),
        ours: lock.ours,
        threads: cfg.threads,
        cs_load: cfg.cs_load,
        outside_load: cfg.outside_load,
        read_pct: cfg.read_pct,
        lines: cfg.lines,
        elapsed_s: m.elapsed_s,
        kops,
        kops_min: runs.iter().copied().fold(f64::INFINITY, f64::min),
        kops_max: runs.iter().copied().fold(0.0, f64::max),
        runs_kops: runs.to_vec(),
        read_kops: per_s(m.reads),
        write_kops: per_s(m.writes),
        thread_ops_min: min,
        thread_ops_mean: mean,
        thread_ops_max: max,
        starved: max > 2 * min,
        wait_samples: m.wait.samples,
        wait_p50_ns: m.wait.p50_ns,
        wait_p99_ns: m.wait.p99_ns,
        wait_p999_ns: m.wait.p999_ns,
        wait_max_ns: m.wait.max_ns,
        vcsw_per_kop: m.usage.vcsw as f64 / kop,
        ivcsw_per_kop: m.usage.ivcsw as f64 / kop,
        cpu_ns_per_op: m.usage.cpu_ns as f64 / ops,
        cpus_busy: if m.elapsed_s > 0.0 {
            m.usage.cpu_ns as f64 / 1e9 / m.elapsed_s
        } else {
            0.0
        },
        bound_kops: 0.0,
        efficiency: 0.0,
        events_per_kop: m
            .events
            .iter()
            .map(|(k, &v)| (k.clone(), v as f64 / kop))
            .collect(),
        line_rt_ns_min: rt.0,
        line_rt_ns_max: rt.1,
    }
}
