//! The scoreboard: how kslock's locks compare with the best peer, per lock family.
//!
//! A *family* is one kslock lock in one workload at one read mix, named for what it measures
//! ([`family_name`]: `mutex`, `rwsem-90`, `tree`, `data-mutex`, `condvar`, …). For every cell of the family with at
//! least 2 threads and a peer, the *best peer* is the peer with the highest kops/s in that
//! cell (same run, median of the interleaved repeats), and the cell's score is
//! kslock kops/s ÷ best peer kops/s. The scoreboard reports, per family:
//!
//! * the geometric mean of the scores at threads ≥ 2 and at threads ≥ 8, the worst cell and the
//!   cells won (score ≥ 1.0);
//! * STARVED cells (max/min per-thread operations > 2) at threads ≥ 8, kslock's and the peers',
//!   in the short repeats; and, where the run has them, kslock's *fairness runs* (one run of at
//!   least a second per cell at threads ≥ 8: a short window cannot judge starvation): their
//!   STARVED cells and worst max/min;
//! * the worst p99.9 acquisition wait of kslock's cells (and of the peers' at the same thread
//!   count);
//! * CPU time per operation against the best peer's (geometric mean and worst), and the CPUs
//!   each kept busy;
//! * the *ceiling*: the geometric mean at threads ≥ 8 of the cell's bound (`bound_kops`: the
//!   best 1-thread rate with reads in parallel and writes serialised) ÷
//!   the best peer, the score a lock that reached the bound in every cell would get (cells
//!   without work outside the lock only, where the bound is one). On a
//!   machine with few CPUs the peers come close to the bound, and the ceiling says how much a
//!   score target can ask there;
//! * the cross-CPU line round trips probed around the family's runs ([`crate::probe`]), and the
//!   cells whose kslock and best-peer runs saw round trips at least [`PHASE_APART`]× apart: on
//!   a VM whose vCPUs move between near and far placements, their ratio mixes two machines.
//!
//! The *overall* figure of a run is the geometric mean over its families of each family's
//! geometric mean at threads ≥ 8: every family weighs the same, however many cells it has.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::cell::CellResult;
use crate::stats::range;

/// Serde for ratios that may be undefined (NaN: no cell to average): `null` in JSON.
mod nan_null {
    use super::*;

    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if v.is_finite() {
            s.serialize_f64(*v)
        } else {
            s.serialize_none()
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
    }
}

/// One cell of a family.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScoreCell {
    pub threads: usize,
    pub cs_load: u32,
    pub outside_load: u32,
    /// Cache lines per section (`data`; 0 elsewhere).
    #[serde(default)]
    pub lines: u32,
    pub kops: f64,
    pub best_peer: String,
    pub peer_kops: f64,
    /// kops ÷ peer_kops.
    #[serde(with = "nan_null")]
    pub score: f64,
    pub starved: bool,
    pub wait_p999_ns: u64,
    /// kslock's CPU ns/op ÷ the best peer's.
    #[serde(with = "nan_null")]
    pub cpu_ratio: f64,
    pub cpus_busy: f64,
    pub peer_cpus_busy: f64,
    /// The cell's bound ÷ peer_kops (NaN without a bound; absent in older results).
    #[serde(with = "nan_null", default = "nan")]
    pub ceiling: f64,
    /// kslock's and the best peer's runs saw line round trips [`PHASE_APART`]× apart or more.
    #[serde(default)]
    pub mixed_phase: bool,
    /// kslock's fewest and most operations per thread in the cell's fairness run (module
    /// doc), if it had one.
    #[serde(default)]
    pub fair_thread_ops: Option<[u64; 2]>,
}

impl ScoreCell {
    /// STARVED in the fairness run where the cell has one, else in the short repeats.
    pub fn starved_verdict(&self) -> bool {
        match self.fair_thread_ops {
            Some([min, max]) => max > 2 * min,
            None => self.starved,
        }
    }
}

/// Round trips this many times apart are two phases of the machine (the AMD guest's are ≈ 3–5×
/// apart; one phase's probes spread by well under 2×: [`crate::probe`]).
pub const PHASE_APART: f64 = 2.0;

fn nan() -> f64 {
    f64::NAN
}

/// One family's summary (module doc).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Family {
    /// What the family measures ([`family_name`]).
    #[serde(default)]
    pub name: String,
    pub workload: String,
    pub read_pct: u32,
    pub lock: String,
    pub peers: Vec<String>,
    pub cells: Vec<ScoreCell>,
    #[serde(with = "nan_null")]
    pub geomean_2: f64,
    #[serde(with = "nan_null")]
    pub geomean_8: f64,
    pub worst: Option<ScoreCell>,
    pub won: usize,
    pub compared: usize,
    /// kslock cells at threads ≥ 8 that are STARVED, of `starved_checked`.
    pub starved: usize,
    pub starved_checked: usize,
    /// Peer cells at threads ≥ 8 that are STARVED, of `peer_starved_checked`.
    pub peer_starved: usize,
    pub peer_starved_checked: usize,
    /// kslock's worst p99.9 wait (any thread count) and where.
    pub worst_p999_ns: u64,
    pub worst_p999_threads: usize,
    pub worst_p999_cs: u32,
    #[serde(with = "nan_null")]
    pub cpu_ratio_geomean: f64,
    #[serde(with = "nan_null")]
    pub cpu_ratio_worst: f64,
    /// Geometric mean of the cells' `ceiling` at threads ≥ 8 (module doc).
    #[serde(with = "nan_null", default = "nan")]
    pub ceiling_8: f64,
    /// The fastest and slowest line round trip of the family's cells, ns (0: none probed).
    #[serde(default)]
    pub line_rt_ns_min: f64,
    #[serde(default)]
    pub line_rt_ns_max: f64,
    /// Scored cells with `mixed_phase`.
    #[serde(default)]
    pub mixed_phase: usize,
    /// kslock's fairness runs (module doc): cells checked, STARVED among them, the shortest
    /// window (s), and the worst max/min per-thread operations (∞ as null: a thread did none)
    /// with its threads and cs load.
    #[serde(default)]
    pub fair_checked: usize,
    #[serde(default)]
    pub fair_starved: usize,
    #[serde(default)]
    pub fair_secs: f64,
    #[serde(with = "nan_null", default = "nan")]
    pub fair_worst_max_min: f64,
    #[serde(default)]
    pub fair_worst_threads: usize,
    #[serde(default)]
    pub fair_worst_cs: u32,
}

/// Every family of a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Scoreboard {
    pub families: Vec<Family>,
    /// The geometric mean over the families of their `geomean_8` (module doc; `None`: no
    /// family has cells at 8 threads or more).
    #[serde(default)]
    pub overall_8: Option<f64>,
}

/// A family's name: the matrix loop's families by lock kind and read mix (`mutex`,
/// `rwsem-50`), the others by workload, with the kind where the workload runs both (`data`) or
/// not the kind it was made for (`tree` on an rwlock: `tree-rwsem-0`).
pub fn family_name(workload: &str, kind: &str, read_pct: u32) -> String {
    let rw = kind == "rwlock";
    match (workload, rw) {
        ("matrix", false) => "mutex".into(),
        ("matrix", true) => format!("rwsem-{read_pct}"),
        ("data", false) => "data-mutex".into(),
        ("data", true) => format!("data-rwsem-{read_pct}"),
        ("file" | "mmap", true) => workload.into(),
        ("file" | "mmap", false) => format!("{workload}-mutex"),
        (_, false) => workload.into(),
        (_, true) => format!("{workload}-rwsem-{read_pct}"),
    }
}

/// Geometric mean of the finite positive values (NaN if none).
pub fn geomean(v: impl Iterator<Item = f64>) -> f64 {
    let (mut s, mut n) = (0.0, 0);
    for x in v.filter(|x| x.is_finite() && *x > 0.0) {
        s += x.ln();
        n += 1;
    }
    if n == 0 {
        f64::NAN
    } else {
        (s / n as f64).exp()
    }
}

impl Scoreboard {
    /// Builds the scoreboard of `cells` (any run; families without a peer are skipped), the
    /// families in the order their first cell ran.
    pub fn of(cells: &[CellResult]) -> Scoreboard {
        Scoreboard::of_run(cells, &[])
    }

    /// [`Scoreboard::of`] with the run's fairness runs (module doc).
    pub fn of_run(cells: &[CellResult], fairness: &[CellResult]) -> Scoreboard {
        let mut keys: Vec<(String, String, u32, String)> = Vec::new();
        for c in cells.iter().filter(|c| c.ours) {
            let k = (
                c.workload.clone(),
                c.kind.clone(),
                c.read_pct,
                c.lock.clone(),
            );
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        let families: Vec<Family> = keys
            .into_iter()
            .filter_map(|(w, kind, read, lock)| family(cells, fairness, &w, &kind, read, &lock))
            .collect();
        let overall_8 =
            Some(geomean(families.iter().map(|f| f.geomean_8))).filter(|x| x.is_finite());
        Scoreboard {
            families,
            overall_8,
        }
    }

    /// The overall line (module doc), or nothing for fewer than two families.
    pub fn overall_text(&self) -> String {
        let n = self
            .families
            .iter()
            .filter(|f| f.geomean_8.is_finite())
            .count();
        if n < 2 {
            return String::new();
        }
        let each: Vec<String> = self
            .families
            .iter()
            .map(|f| format!("{} {:.2}x", f.name, f.geomean_8))
            .collect();
        format!(
            "\noverall: {:.2}x, the geometric mean over {n} families of each family's geo-mean at \
             threads ≥ 8 ({})\n",
            self.overall_8.unwrap_or(f64::NAN),
            each.join(", ")
        )
    }

    /// The human summary printed after the table.
    pub fn to_text(&self, repeats: usize) -> String {
        let mut s = String::new();
        if self.families.is_empty() {
            return s;
        }
        let _ = writeln!(
            s,
            "\n== scoreboard: kslock ÷ best peer in the same cell (median of {repeats} interleaved repeat{}) ==",
            if repeats == 1 { "" } else { "s" }
        );
        for f in &self.families {
            let _ = writeln!(
                s,
                "\n{}: {} ({}, {}% reads) vs {}",
                f.name,
                f.lock,
                f.workload,
                f.read_pct,
                f.peers.join(", ")
            );
            let mut threads: Vec<usize> = f.cells.iter().map(|c| c.threads).collect();
            threads.sort_unstable();
            threads.dedup();
            let mut rows: Vec<(u32, u32, u32)> = f
                .cells
                .iter()
                .map(|c| (c.lines, c.cs_load, c.outside_load))
                .collect();
            rows.sort_unstable();
            rows.dedup();
            let _ = write!(s, "  {:<14}", "cs/out \\ thr");
            for t in &threads {
                let _ = write!(s, " {t:>8}");
            }
            let _ = writeln!(s);
            for (lines, cs, out) in &rows {
                let label = if *lines > 0 {
                    format!("{cs}/{out} {lines} lines")
                } else {
                    format!("{cs}/{out}")
                };
                let _ = write!(s, "  {label:<14}");
                for t in &threads {
                    let v = f
                        .cells
                        .iter()
                        .find(|c| {
                            c.threads == *t
                                && c.cs_load == *cs
                                && c.outside_load == *out
                                && c.lines == *lines
                        })
                        .map_or("-".to_string(), |c| {
                            let mark = if c.starved_verdict() { "!" } else { "" };
                            format!("{:.2}x{mark}", c.score)
                        });
                    let _ = write!(s, " {v:>8}");
                }
                let _ = writeln!(s);
            }
            let worst = f.worst.as_ref().map_or("-".to_string(), |w| {
                let lines = if w.lines > 0 {
                    format!(", {} lines", w.lines)
                } else {
                    String::new()
                };
                format!(
                    "{:.2}x ({} thr, cs {}, out {}{lines}, vs {})",
                    w.score, w.threads, w.cs_load, w.outside_load, w.best_peer
                )
            });
            let _ = writeln!(
                s,
                "  geo-mean {:.2}x (threads ≥ 2), {:.2}x (threads ≥ 8); worst {worst}; won {}/{}",
                f.geomean_2, f.geomean_8, f.won, f.compared
            );
            if f.ceiling_8.is_finite() {
                let _ = writeln!(
                    s,
                    "  ceiling (each cell's bound ÷ best peer, geo-mean at threads ≥ 8): {:.2}x",
                    f.ceiling_8
                );
            }
            if f.fair_checked > 0 {
                let worst = if f.fair_worst_max_min.is_finite() {
                    format!("{:.2}", f.fair_worst_max_min)
                } else {
                    "∞ (a thread did nothing)".into()
                };
                let _ = writeln!(
                    s,
                    "  STARVED over {:.1} s (one fairness run per cell at 8+ threads, kslock only): \
                     {}/{}; worst max/min ops per thread {worst} ({} thr, cs {})",
                    f.fair_secs,
                    f.fair_starved,
                    f.fair_checked,
                    f.fair_worst_threads,
                    f.fair_worst_cs
                );
            }
            let _ = writeln!(
                s,
                "  STARVED at 8+ threads in the short repeats: kslock {}/{}, peers {}/{}; worst p99.9 wait {:.2} ms ({} thr, cs {})",
                f.starved,
                f.starved_checked,
                f.peer_starved,
                f.peer_starved_checked,
                f.worst_p999_ns as f64 / 1e6,
                f.worst_p999_threads,
                f.worst_p999_cs
            );
            let busy = |v: &mut dyn Iterator<Item = f64>| {
                let v: Vec<f64> = v.collect();
                v.iter().sum::<f64>() / v.len().max(1) as f64
            };
            let _ = writeln!(
                s,
                "  CPU ns/op ÷ best peer's: geo-mean {:.2}x, worst {:.2}x; CPUs busy (mean of cells) kslock {:.2}, best peer {:.2}",
                f.cpu_ratio_geomean,
                f.cpu_ratio_worst,
                busy(&mut f.cells.iter().map(|c| c.cpus_busy)),
                busy(&mut f.cells.iter().map(|c| c.peer_cpus_busy)),
            );
            if f.line_rt_ns_min > 0.0 {
                let _ = writeln!(
                    s,
                    "  line round trip {:.0}-{:.0} ns; cells whose kslock and best-peer runs saw round trips {PHASE_APART}x apart: {}/{}",
                    f.line_rt_ns_min, f.line_rt_ns_max, f.mixed_phase, f.compared
                );
            }
        }
        s.push_str(
            "  (! = STARVED, max ops/thread > 2 × min: in the cell's fairness run where it has \
             one, else in the median short repeat)\n",
        );
        s.push_str(&self.overall_text());
        s
    }
}

fn family(
    cells: &[CellResult],
    fairness: &[CellResult],
    w: &str,
    kind: &str,
    read: u32,
    lock: &str,
) -> Option<Family> {
    let in_family = |c: &&CellResult| c.workload == w && c.kind == kind && c.read_pct == read;
    let peers: BTreeSet<String> = cells
        .iter()
        .filter(in_family)
        .filter(|c| !c.ours)
        .map(|c| c.lock.clone())
        .collect();
    if peers.is_empty() {
        return None;
    }
    let mut fam = Family {
        name: family_name(w, kind, read),
        workload: w.to_string(),
        read_pct: read,
        lock: lock.to_string(),
        peers: peers.into_iter().collect(),
        cells: Vec::new(),
        geomean_2: f64::NAN,
        geomean_8: f64::NAN,
        worst: None,
        won: 0,
        compared: 0,
        starved: 0,
        starved_checked: 0,
        peer_starved: 0,
        peer_starved_checked: 0,
        worst_p999_ns: 0,
        worst_p999_threads: 0,
        worst_p999_cs: 0,
        cpu_ratio_geomean: f64::NAN,
        cpu_ratio_worst: f64::NAN,
        ceiling_8: f64::NAN,
        line_rt_ns_min: 0.0,
        line_rt_ns_max: 0.0,
        mixed_phase: 0,
        fair_checked: 0,
        fair_starved: 0,
        fair_secs: 0.0,
        fair_worst_max_min: f64::NAN,
        fair_worst_threads: 0,
        fair_worst_cs: 0,
    };
    // Every probed round trip of the scored cells (the family's range).
    let mut family_rts = Vec::new();
    for c in cells.iter().filter(in_family).filter(|c| c.lock == lock) {
        if c.wait_p999_ns > fam.worst_p999_ns {
            fam.worst_p999_ns = c.wait_p999_ns;
            fam.worst_p999_threads = c.threads;
            fam.worst_p999_cs = c.cs_load;
        }
        let same: Vec<&CellResult> = cells
            .iter()
            .filter(|o| !o.ours && o.kind == kind && o.cell_key() == c.cell_key())
            .collect();
        if c.threads >= 8 {
            fam.starved_checked += 1;
            fam.starved += usize::from(c.starved);
            fam.peer_starved_checked += same.len();
            fam.peer_starved += same.iter().filter(|o| o.starved).count();
        }
        let Some(best) = same.iter().max_by(|a, b| a.kops.total_cmp(&b.kops)) else {
            continue;
        };
        if c.threads < 2 || best.kops <= 0.0 {
            continue;
        }
        // The round trips of both sides' runs (0: not probed).
        let probed: Vec<f64> = [c, *best]
            .iter()
            .flat_map(|x| [x.line_rt_ns_min, x.line_rt_ns_max])
            .filter(|&x| x > 0.0)
            .collect();
        let rts = range(probed.iter().copied());
        family_rts.extend(probed);
        fam.cells.push(ScoreCell {
            threads: c.threads,
            cs_load: c.cs_load,
            outside_load: c.outside_load,
            lines: c.lines,
            kops: c.kops,
            best_peer: best.lock.clone(),
            peer_kops: best.kops,
            score: c.kops / best.kops,
            starved: c.starved,
            wait_p999_ns: c.wait_p999_ns,
            cpu_ratio: if best.cpu_ns_per_op > 0.0 {
                c.cpu_ns_per_op / best.cpu_ns_per_op
            } else {
                f64::NAN
            },
            cpus_busy: c.cpus_busy,
            peer_cpus_busy: best.cpus_busy,
            // (With work outside the lock the bound is no bound: that work runs in parallel.)
            ceiling: if c.bound_kops > 0.0 && c.outside_load == 0 {
                c.bound_kops / best.kops
            } else {
                f64::NAN
            },
            mixed_phase: rts.is_some_and(|(lo, hi)| hi >= PHASE_APART * lo),
            fair_thread_ops: fairness
                .iter()
                .find(|f| f.lock == lock && f.cell_key() == c.cell_key())
                .map(|f| [f.thread_ops_min, f.thread_ops_max]),
        });
    }
    if fam.cells.is_empty() {
        return None;
    }
    fam.geomean_2 = geomean(fam.cells.iter().map(|c| c.score));
    fam.geomean_8 = geomean(fam.cells.iter().filter(|c| c.threads >= 8).map(|c| c.score));
    fam.worst = fam
        .cells
        .iter()
        .min_by(|a, b| a.score.total_cmp(&b.score))
        .cloned();
    fam.compared = fam.cells.len();
    fam.mixed_phase = fam.cells.iter().filter(|c| c.mixed_phase).count();
    (fam.line_rt_ns_min, fam.line_rt_ns_max) = range(family_rts).unwrap_or((0.0, 0.0));
    fam.won = fam.cells.iter().filter(|c| c.score >= 1.0).count();
    fam.cpu_ratio_geomean = geomean(fam.cells.iter().map(|c| c.cpu_ratio));
    fam.ceiling_8 = geomean(
        fam.cells
            .iter()
            .filter(|c| c.threads >= 8)
            .map(|c| c.ceiling),
    );
    fam.cpu_ratio_worst = fam
        .cells
        .iter()
        .map(|c| c.cpu_ratio)
        .filter(|r| r.is_finite())
        .fold(f64::NAN, f64::max);
    for c in &fam.cells {
        let Some([min, max]) = c.fair_thread_ops else {
            continue;
        };
        fam.fair_checked += 1;
        fam.fair_starved += usize::from(max > 2 * min);
        let mm = if min > 0 {
            max as f64 / min as f64
        } else {
            f64::INFINITY
        };
        if fam.fair_worst_max_min.is_nan() || mm > fam.fair_worst_max_min {
            (
                fam.fair_worst_max_min,
                fam.fair_worst_threads,
                fam.fair_worst_cs,
            ) = (mm, c.threads, c.cs_load);
        }
    }
    fam.fair_secs = fairness
        .iter()
        .filter(|f| f.lock == lock && f.workload == w && f.read_pct == read)
        .map(|f| f.elapsed_s)
        .fold(f64::NAN, f64::min);
    if fam.fair_secs.is_nan() {
        fam.fair_secs = 0.0;
    }
    Some(fam)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::tests::sample_cell;

    #[test]
    fn scores_against_the_best_peer() {
        let mut cells = vec![
            sample_cell("kslock-mutex", 2, 300.0),
            sample_cell("std-mutex", 2, 100.0),
            sample_cell("pthread-mutex", 2, 150.0),
            sample_cell("kslock-mutex", 8, 50.0),
            sample_cell("std-mutex", 8, 100.0),
            sample_cell("kslock-mutex", 1, 10.0),
            sample_cell("std-mutex", 1, 20.0),
        ];
        cells[3].starved = true;
        cells[3].wait_p999_ns = 9_000_000;
        // No bound at 2 threads; at 8 threads the bound is 1.2 × the best peer.
        cells[3].bound_kops = 120.0;
        let sb = Scoreboard::of(&cells);
        assert_eq!(sb.families.len(), 1);
        let f = &sb.families[0];
        assert_eq!(f.compared, 2, "1-thread cells are not scored");
        assert_eq!(f.won, 1);
        assert!((f.geomean_2 - 1.0).abs() < 1e-12, "sqrt(2 × 0.5)");
        assert!((f.geomean_8 - 0.5).abs() < 1e-12);
        let w = f.worst.as_ref().unwrap();
        assert_eq!((w.threads, w.best_peer.as_str()), (8, "std-mutex"));
        assert_eq!((f.starved, f.starved_checked), (1, 1));
        assert_eq!(f.worst_p999_ns, 9_000_000);
        assert_eq!(f.cells[0].best_peer, "pthread-mutex");
        assert!(f.cells[0].ceiling.is_nan());
        let mut outside = cells.clone();
        outside.iter_mut().for_each(|c| c.outside_load = 100);
        assert!(Scoreboard::of(&outside).families[0].ceiling_8.is_nan());
        assert!((f.ceiling_8 - 1.2).abs() < 1e-12);
        let t = sb.to_text(3);
        assert!(t.contains("threads ≥ 8): 1.20x"), "{t}");
        assert!(t.contains("0.50x!"), "{t}");
        assert!(t.contains("won 1/2"), "{t}");
        // Every sample cell saw round trips of 118 and 504 ns: two phases.
        assert_eq!(f.mixed_phase, 2);
        assert!(
            t.contains("line round trip 118-504 ns; cells whose kslock and best-peer runs saw round trips 2x apart: 2/2"),
            "{t}"
        );
        // A fairness run of the 8-thread cell: its verdict replaces the short repeats'.
        let mut fair = cells[3].clone();
        (fair.thread_ops_min, fair.thread_ops_max, fair.elapsed_s) = (100, 150, 1.0);
        let fb = Scoreboard::of_run(&cells, &[fair.clone()]);
        let ff = &fb.families[0];
        assert_eq!((ff.fair_starved, ff.fair_checked), (0, 1));
        assert!((ff.fair_worst_max_min - 1.5).abs() < 1e-12);
        assert!(!ff.cells[1].starved_verdict() && ff.cells[1].starved);
        let ft = fb.to_text(3);
        assert!(ft.contains("0.50x "), "no '!' from the fair run: {ft}");
        assert!(
            ft.contains("STARVED over 1.0 s (one fairness run per cell at 8+ threads, kslock only): 0/1; worst max/min ops per thread 1.50 (8 thr, cs 20)"),
            "{ft}"
        );
        fair.thread_ops_min = 0;
        let ff = &Scoreboard::of_run(&cells, &[fair]).families[0];
        assert_eq!(ff.fair_starved, 1);
        assert!(ff.fair_worst_max_min.is_infinite());
        assert!(
            t.contains("STARVED at 8+ threads in the short repeats"),
            "{t}"
        );
        assert!(!t.contains("STARVED over"), "no fairness runs: {t}");
        // One phase: no cell is mixed.
        let mut near = cells.clone();
        near.iter_mut()
            .for_each(|c| (c.line_rt_ns_min, c.line_rt_ns_max) = (118.0, 150.0));
        assert_eq!(Scoreboard::of(&near).families[0].mixed_phase, 0);
    }
}
