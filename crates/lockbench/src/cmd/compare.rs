//! `lockbench compare OLD.json NEW.json`: per-cell ratios, a summary, and the two runs'
//! scoreboards side by side, family by family, with the overall line (rebuilt from the cells
//! and fairness runs, so reports written before the scoreboard or the suite existed compare
//! too).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use crate::cell::CellResult;
use crate::results::Report;
use crate::scoreboard::{Family, Scoreboard};
use crate::util::fmt_kops;

/// `lockbench compare`'s arguments.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct CompareArgs {
    pub old: PathBuf,
    pub new: PathBuf,
    /// Changes within ±this percent count as unchanged in the summary.
    #[arg(long, default_value_t = 5.0)]
    pub threshold: f64,
}

type Key = (String, String, usize, u32, u32, u32, u32);

fn key(c: &CellResult) -> Key {
    (
        c.workload.clone(),
        c.lock.clone(),
        c.threads,
        c.cs_load,
        c.outside_load,
        c.read_pct,
        c.lines,
    )
}

/// One matched cell.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub key: Key,
    pub old: f64,
    pub new: f64,
}

impl Row {
    pub fn ratio(&self) -> f64 {
        if self.old > 0.0 {
            self.new / self.old
        } else {
            f64::NAN
        }
    }
}

/// Cells present in both reports (by workload, lock, threads, loads, mix),
/// plus counts of cells only in the old / only in the new report.
pub fn matched(old: &Report, new: &Report) -> (Vec<Row>, usize, usize) {
    let o: BTreeMap<Key, f64> = old.cells.iter().map(|c| (key(c), c.kops)).collect();
    let n: BTreeMap<Key, f64> = new.cells.iter().map(|c| (key(c), c.kops)).collect();
    let rows: Vec<Row> = o
        .iter()
        .filter_map(|(k, &ov)| {
            n.get(k).map(|&nv| Row {
                key: k.clone(),
                old: ov,
                new: nv,
            })
        })
        .collect();
    let only_old = o.keys().filter(|k| !n.contains_key(*k)).count();
    let only_new = n.keys().filter(|k| !o.contains_key(*k)).count();
    (rows, only_old, only_new)
}

pub use crate::scoreboard::geomean;

/// How many rows [`family_rows`] gives.
const FAMILY_ROWS: usize = 9;

/// One family's scoreboard as (row name, value) pairs, in the order `compare` prints them.
fn family_rows(f: &Family) -> [(&'static str, String); FAMILY_ROWS] {
    let worst = f.worst.as_ref().map_or("-".into(), |w| {
        format!("{:.2}x ({} thr, cs {})", w.score, w.threads, w.cs_load)
    });
    [
        ("geo-mean, threads ≥ 2", format!("{:.2}x", f.geomean_2)),
        ("geo-mean, threads ≥ 8", format!("{:.2}x", f.geomean_8)),
        ("ceiling, threads ≥ 8", format!("{:.2}x", f.ceiling_8)),
        ("worst cell", worst),
        ("cells won", format!("{}/{}", f.won, f.compared)),
        (
            "STARVED at 8+ threads",
            format!("{}/{}", f.starved, f.starved_checked),
        ),
        (
            "STARVED, fairness runs",
            if f.fair_checked == 0 {
                "-".into()
            } else {
                format!(
                    "{}/{}, max/min {:.2}",
                    f.fair_starved, f.fair_checked, f.fair_worst_max_min
                )
            },
        ),
        (
            "worst p99.9 wait",
            format!("{:.2} ms", f.worst_p999_ns as f64 / 1e6),
        ),
        (
            "CPU ns/op ÷ best peer",
            format!("{:.2}x", f.cpu_ratio_geomean),
        ),
    ]
}

/// The scoreboards of both runs, family by family (matched by workload, read mix and lock).
pub fn write_scoreboards(out: &mut dyn Write, old: &Report, new: &Report) -> std::io::Result<()> {
    let (o, n) = (
        Scoreboard::of_run(&old.cells, &old.fairness),
        Scoreboard::of_run(&new.cells, &new.fairness),
    );
    if o.families.is_empty() && n.families.is_empty() {
        return Ok(());
    }
    writeln!(out, "\nscoreboards (kslock ÷ best peer; old → new):")?;
    let id = |f: &Family| (f.workload.clone(), f.read_pct, f.lock.clone());
    // The new run's families in its order, then any only in the old one.
    let mut ids: Vec<_> = Vec::new();
    for k in n.families.iter().chain(&o.families).map(id) {
        if !ids.contains(&k) {
            ids.push(k);
        }
    }
    for k in ids {
        let fo = o.families.iter().find(|f| id(f) == k);
        let fnew = n.families.iter().find(|f| id(f) == k);
        let name = fo.or(fnew).map_or("", |f| f.name.as_str());
        writeln!(out, "  {name}: {} ({}, {}% reads)", k.2, k.0, k.1)?;
        let (ro, rn) = (fo.map(family_rows), fnew.map(family_rows));
        for i in 0..FAMILY_ROWS {
            let cell = |r: &Option<[(&str, String); FAMILY_ROWS]>| {
                r.as_ref().map_or("-".to_string(), |r| r[i].1.clone())
            };
            let name = ro.as_ref().or(rn.as_ref()).map_or("", |r| r[i].0);
            writeln!(out, "    {name:<24} {:>22} → {}", cell(&ro), cell(&rn))?;
        }
    }
    for (name, lock, pair) in [
        ("uncontended mutex", "kslock-mutex", "write"),
        ("uncontended rwsem write", "kslock-rwsem", "write"),
        ("uncontended rwsem read", "kslock-rwsem", "read"),
    ] {
        let vs = |r: &Report| {
            r.uncontended
                .iter()
                .find(|p| p.lock == lock && p.pair == pair)
                .and_then(|p| p.vs_parking_lot)
                .map_or("-".to_string(), |x| format!("{x:.2}x"))
        };
        if !old.uncontended.is_empty() || !new.uncontended.is_empty() {
            writeln!(
                out,
                "    {name:<24} {:>22} → {} (÷ parking_lot)",
                vs(old),
                vs(new)
            )?;
        }
    }
    writeln!(
        out,
        "  overall: geo-mean over families of each one's geo-mean at threads ≥ 8 ({} → {} \
         families)\n    {:<24} {:>22} → {:.2}x",
        o.families.len(),
        n.families.len(),
        "overall",
        format!("{:.2}x", o.overall_8.unwrap_or(f64::NAN)),
        n.overall_8.unwrap_or(f64::NAN)
    )?;
    Ok(())
}

pub fn write(
    out: &mut dyn Write,
    old: &Report,
    new: &Report,
    threshold: f64,
) -> std::io::Result<()> {
    let (rows, only_old, only_new) = matched(old, new);
    writeln!(
        out,
        "old: {} ({}, {})\nnew: {} ({}, {})",
        old.env.started_utc,
        old.env.git_commit,
        old.experiment,
        new.env.started_utc,
        new.env.git_commit,
        new.experiment
    )?;
    if old.env.cpu_model != new.env.cpu_model || old.env.online_cpus != new.env.online_cpus {
        writeln!(
            out,
            "warning: different machines ({} × {} vs {} × {})",
            old.env.online_cpus, old.env.cpu_model, new.env.online_cpus, new.env.cpu_model
        )?;
    }
    writeln!(
        out,
        "\n{:<8} {:<34} {:>4} {:>4} {:>4} {:>5} {:>10} {:>10} {:>7}",
        "workload", "lock", "thr", "cs", "out", "read%", "old kops", "new kops", "new/old"
    )?;
    let lim = 1.0 + threshold / 100.0;
    for r in &rows {
        let (w, l, t, cs, o, rd, lines) = &r.key;
        // (`data` cells: the workload and its lines, "data/32".)
        let w = if *lines > 0 {
            format!("{w}/{lines}")
        } else {
            w.clone()
        };
        let ratio = r.ratio();
        let mark = if ratio > lim {
            "  +"
        } else if ratio < 1.0 / lim {
            "  -"
        } else {
            ""
        };
        writeln!(
            out,
            "{w:<8} {l:<34} {t:>4} {cs:>4} {o:>4} {rd:>5} {:>10} {:>10} {ratio:>7.3}{mark}",
            fmt_kops(r.old),
            fmt_kops(r.new)
        )?;
    }
    writeln!(out, "\nsummary (geometric mean of new/old per lock):")?;
    let mut by_lock: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for r in &rows {
        by_lock.entry(r.key.1.as_str()).or_default().push(r.ratio());
    }
    for (l, v) in &by_lock {
        writeln!(
            out,
            "  {l:<34} {:>7.3}  ({} cells)",
            geomean(v.iter().copied()),
            v.len()
        )?;
    }
    let better = rows.iter().filter(|r| r.ratio() > lim).count();
    let worse = rows.iter().filter(|r| r.ratio() < 1.0 / lim).count();
    writeln!(
        out,
        "  {:<34} {:>7.3}  ({} cells: {better} faster, {worse} slower, {} within ±{threshold}%)",
        "all",
        geomean(rows.iter().map(Row::ratio)),
        rows.len(),
        rows.len() - better - worse
    )?;
    if only_old + only_new > 0 {
        writeln!(
            out,
            "  unmatched cells: {only_old} only in old, {only_new} only in new"
        )?;
    }
    write_scoreboards(out, old, new)
}

pub fn run(a: &CompareArgs, out: &mut dyn Write) -> Result<(), String> {
    let old = Report::load(&a.old)?;
    let new = Report::load(&a.new)?;
    write(out, &old, &new, a.threshold).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::tests::sample_cell;

    #[test]
    fn ratios_and_summary() {
        let mut old = Report::new("a");
        let mut new = Report::new("b");
        old.cells = vec![
            sample_cell("std-mutex", 2, 100.0),
            sample_cell("std-mutex", 4, 100.0),
            sample_cell("spin-ttas", 2, 50.0),
        ];
        new.cells = vec![
            sample_cell("std-mutex", 2, 200.0),
            sample_cell("std-mutex", 4, 50.0),
            sample_cell("pthread-mutex", 2, 1.0),
        ];
        let (rows, oo, on) = matched(&old, &new);
        assert_eq!(rows.len(), 2);
        assert_eq!((oo, on), (1, 1));
        assert_eq!(rows[0].ratio(), 2.0);
        assert!((geomean(rows.iter().map(Row::ratio)) - 1.0).abs() < 1e-12);
        let mut buf = Vec::new();
        write(&mut buf, &old, &new, 5.0).unwrap();
        let s = String::from_utf8(buf).unwrap();
        assert!(s.contains("1 faster, 1 slower"), "{s}");
        assert!(s.contains("1 only in old, 1 only in new"), "{s}");
    }

    #[test]
    fn scoreboards_side_by_side() {
        let mut old = Report::new("a");
        let mut new = Report::new("b");
        old.cells = vec![
            sample_cell("kslock-mutex", 8, 50.0),
            sample_cell("std-mutex", 8, 100.0),
        ];
        new.cells = vec![
            sample_cell("kslock-mutex", 8, 150.0),
            sample_cell("std-mutex", 8, 100.0),
        ];
        new.cells[0].bound_kops = 200.0;
        let mut buf = Vec::new();
        write_scoreboards(&mut buf, &old, &new).unwrap();
        let s = String::from_utf8(buf).unwrap();
        assert!(s.contains("0.50x → 1.50x"), "{s}");
        assert!(s.contains("0/1 → 1/1"), "{s}");
        assert!(s.contains("NaNx → 2.00x"), "{s}");
        assert!(
            s.contains("  mutex: kslock-mutex (matrix, 0% reads)"),
            "{s}"
        );
        assert!(s.contains("STARVED, fairness runs"), "{s}");
        // One family each: the overall is its geo-mean at 8+ threads.
        assert!(
            s.lines()
                .any(|l| l.trim_start().starts_with("overall") && l.ends_with("0.50x → 1.50x")),
            "{s}"
        );
    }
}
