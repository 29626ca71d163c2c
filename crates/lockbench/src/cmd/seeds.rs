//! `lockbench seeds`: one A/B experiment per seed idea, printed in the shape
//! of the seed's own table (rows = threads, columns = variants).
//!
//! | seed | A/B | workload |
//! |------|-----|----------|
//! | S0 | rwsem wake policy Deferred / WakeFlag / TrylockIfSpinner | matrix, 50% reads, cs 1 and 20 |
//! | S1 | OSQ node SplitIdLine / Packed (mutex and rwsem) | matrix, writes, cs 1 |
//! | S2 | writer spin on reader-owned Bounded / Never | `file` (fio randrw) |
//! | S3 | `try_lock` / `try_lock_spin` | `tree`, throughput and context switches |
//! | S4 | ReaderSpin On / Limited / Off | matrix, 50% reads, cs {1,20,100}, threads 2..96 |
//!
//! Every seed needs kslock's policy variants; without the `kslock` feature
//! each seed is reported as skipped.

use std::io::Write;

use clap::{Args, ValueEnum};

use crate::args::{parse_threads, Format, RunArgs, ThreadList};
use crate::cell::CellResult;
use crate::registry;
use crate::results::{to_csv, Sink};
use crate::session::{Group, Session, Timing};
use crate::util::fmt_kops;
use crate::workload::WorkSpec;

/// A seed idea.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SeedId {
    #[value(name = "S0")]
    S0,
    #[value(name = "S1")]
    S1,
    #[value(name = "S2")]
    S2,
    #[value(name = "S3")]
    S3,
    #[value(name = "S4")]
    S4,
}

/// `lockbench seeds`' arguments.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct SeedArgs {
    /// Seeds to run (comma-separated) [default: all].
    #[arg(long, value_delimiter = ',', value_enum, ignore_case = true)]
    pub only: Vec<SeedId>,
    /// Thread counts for S4 (the seed's table spans 2..96).
    #[arg(long, default_value = "2,4,8,16,32,64,96", value_parser = parse_threads)]
    pub threads: ThreadList,
    #[command(flatten)]
    pub run: RunArgs,
}

/// Short policy label of a kslock variant, as the seed names it.
fn label(lock: &str) -> &str {
    match lock {
        "kslock-rwsem" => "Off/Deferred/Bounded",
        "kslock-rwsem-reader-spin-on" => "On",
        "kslock-rwsem-reader-spin-limited" => "Limited",
        "kslock-rwsem-wake-flag" => "WakeFlag",
        "kslock-rwsem-trylock-if-spinner" => "TrylockIfSpinner",
        "kslock-rwsem-never-spin-on-readers" => "Never",
        "kslock-mutex-packed-osq" | "kslock-rwsem-packed-osq" => "Packed",
        "kslock-mutex" => "SplitIdLine",
        other => other,
    }
}

/// A pivot column set: metric name, column label of a cell, printed value.
type Column = (
    &'static str,
    fn(&CellResult) -> String,
    fn(&CellResult) -> String,
);

struct Seed {
    id: SeedId,
    title: &'static str,
    claim: &'static str,
    needs: Vec<&'static str>,
    groups: Vec<Group>,
    /// column label of a cell, and the value printed
    columns: Vec<Column>,
}

fn group(spec: WorkSpec, locks: &[&str], threads: &[usize], cs: &[u32], read: u32) -> Group {
    Group::new(
        spec,
        registry::available(locks),
        threads.to_vec(),
        cs.to_vec(),
        vec![0],
        vec![read],
    )
}

fn kops(c: &CellResult) -> String {
    fmt_kops(c.kops)
}

fn seeds(s4_threads: &[usize]) -> Vec<Seed> {
    let t = [2, 8, 32];
    vec![
        Seed {
            id: SeedId::S0,
            title: "S0 rwsem wakeup path: Deferred (default) vs WakeFlag vs TrylockIfSpinner",
            claim: "2013 wake flag: +15% AIM7 high_systime; upstream now defers wakeups (wake_q)",
            needs: vec![
                "kslock-rwsem",
                "kslock-rwsem-wake-flag",
                "kslock-rwsem-trylock-if-spinner",
            ],
            groups: vec![group(
                WorkSpec::Matrix,
                &[
                    "kslock-rwsem",
                    "kslock-rwsem-wake-flag",
                    "kslock-rwsem-trylock-if-spinner",
                ],
                &t,
                &[1, 20],
                50,
            )],
            columns: vec![(
                "kops/s",
                |c| {
                    let p = match c.lock.as_str() {
                        "kslock-rwsem" => "Deferred",
                        l => label(l),
                    };
                    format!("cs={} {p}", c.cs_load)
                },
                kops,
            )],
        },
        Seed {
            id: SeedId::S1,
            title: "S1 OSQ node layout: SplitIdLine (default) vs Packed",
            claim: "id on its own line, written if changed: +6.8% UnixBench, +15-22% file copy",
            needs: vec![
                "kslock-mutex",
                "kslock-mutex-packed-osq",
                "kslock-rwsem",
                "kslock-rwsem-packed-osq",
            ],
            groups: vec![group(
                WorkSpec::Matrix,
                &[
                    "kslock-mutex",
                    "kslock-mutex-packed-osq",
                    "kslock-rwsem",
                    "kslock-rwsem-packed-osq",
                ],
                &t,
                &[1],
                0,
            )],
            columns: vec![(
                "kops/s",
                |c| {
                    format!(
                        "{} {}",
                        if c.kind == "mutex" { "mutex" } else { "rwsem" },
                        if c.lock.ends_with("packed-osq") {
                            "Packed"
                        } else {
                            "SplitIdLine"
                        }
                    )
                },
                kops,
            )],
        },
        Seed {
            id: SeedId::S2,
            title:
                "S2 writer spinning on a reader-owned rwsem: Bounded (default) vs Never, fio randrw",
            claim: "READER_OWNED owner state with bounded spinning: +21% fio randrw",
            needs: vec!["kslock-rwsem", "kslock-rwsem-never-spin-on-readers"],
            groups: vec![group(
                WorkSpec::File,
                &["kslock-rwsem", "kslock-rwsem-never-spin-on-readers"],
                &t,
                &[0],
                50,
            )],
            columns: vec![
                (
                    "kops/s",
                    |c| {
                        if c.lock.ends_with("never-spin-on-readers") {
                            "Never"
                        } else {
                            "Bounded"
                        }
                        .into()
                    },
                    kops,
                ),
                (
                    "cpu ns/op",
                    |c| {
                        if c.lock.ends_with("never-spin-on-readers") {
                            "Never"
                        } else {
                            "Bounded"
                        }
                        .into()
                    },
                    |c| format!("{:.0}", c.cpu_ns_per_op),
                ),
            ],
        },
        Seed {
            id: SeedId::S3,
            title: "S3 try_lock vs try_lock_spin on the lock-coupled tree (kslock-mutex)",
            claim: "adaptive-spinning trylock: btrfs/dbench +4% throughput, -16% context switches",
            needs: vec!["kslock-mutex"],
            groups: vec![
                group(
                    WorkSpec::Tree { spin: false },
                    &["kslock-mutex"],
                    &t,
                    &[20],
                    0,
                ),
                group(
                    WorkSpec::Tree { spin: true },
                    &["kslock-mutex"],
                    &t,
                    &[20],
                    0,
                ),
            ],
            columns: vec![
                ("kops/s", |c| trylock_label(c).into(), kops),
                (
                    "vcs/kop",
                    |c| trylock_label(c).into(),
                    |c| format!("{:.2}", c.vcsw_per_kop),
                ),
                (
                    "ics/kop",
                    |c| trylock_label(c).into(),
                    |c| format!("{:.2}", c.ivcsw_per_kop),
                ),
                (
                    "fallbacks/kop",
                    |c| trylock_label(c).into(),
                    |c| {
                        format!(
                            "{:.1}",
                            c.events_per_kop.get("fallbacks").copied().unwrap_or(0.0)
                        )
                    },
                ),
            ],
        },
        Seed {
            id: SeedId::S4,
            title: "S4 rwsem reader optimistic spinning: kops/s, 50% reads",
            claim: "v5.11 removed reader spinning (Off) for stealing + waking all readers",
            needs: vec![
                "kslock-rwsem",
                "kslock-rwsem-reader-spin-on",
                "kslock-rwsem-reader-spin-limited",
            ],
            groups: vec![group(
                WorkSpec::Matrix,
                &[
                    "kslock-rwsem-reader-spin-on",
                    "kslock-rwsem-reader-spin-limited",
                    "kslock-rwsem",
                ],
                s4_threads,
                &[1, 20, 100],
                50,
            )],
            columns: vec![(
                "kops/s",
                |c| {
                    let p = match c.lock.as_str() {
                        "kslock-rwsem" => "Off",
                        l => label(l),
                    };
                    format!("cs={} {p}", c.cs_load)
                },
                kops,
            )],
        },
    ]
}

fn trylock_label(c: &CellResult) -> &'static str {
    if c.workload == "tree" {
        "try_lock_spin"
    } else {
        "try_lock"
    }
}

/// Rows = threads, columns = `col(cell)` in first-seen order.
fn pivot(
    out: &mut dyn Write,
    cells: &[CellResult],
    metric: &str,
    col: fn(&CellResult) -> String,
    val: fn(&CellResult) -> String,
) -> std::io::Result<()> {
    let mut cols: Vec<String> = Vec::new();
    let mut threads: Vec<usize> = Vec::new();
    for c in cells {
        let l = col(c);
        if !cols.contains(&l) {
            cols.push(l);
        }
        if !threads.contains(&c.threads) {
            threads.push(c.threads);
        }
    }
    threads.sort_unstable();
    let w = cols.iter().map(|c| c.len()).max().unwrap_or(8).max(9);
    let mw = metric.len().max(10);
    write!(out, "  {metric:<mw$}")?;
    for c in &cols {
        write!(out, " {c:>w$}")?;
    }
    writeln!(out)?;
    for t in threads {
        write!(out, "  {:<mw$}", format!("{t} thr"))?;
        for c in &cols {
            let v = cells
                .iter()
                .find(|x| x.threads == t && col(x) == *c)
                .map_or("-".to_string(), val);
            write!(out, " {v:>w$}")?;
        }
        writeln!(out)?;
    }
    Ok(())
}

pub fn run(a: &SeedArgs, out: &mut dyn Write) -> Result<(), String> {
    let all = seeds(&a.threads.0);
    let chosen: Vec<&Seed> = all
        .iter()
        .filter(|s| a.only.is_empty() || a.only.contains(&s.id))
        .collect();
    let t = Timing {
        secs: a.run.secs.unwrap_or(0.5),
        warmup: a.run.warmup.unwrap_or(0.1),
        repeat: a.run.repeat as usize,
        pin: a.run.pin,
    };
    let runnable = |s: &Seed| s.needs.iter().all(|n| registry::find(n).is_some());
    let total = chosen
        .iter()
        .filter(|s| runnable(s))
        .flat_map(|s| s.groups.iter().map(Group::cells))
        .sum::<usize>()
        * t.repeat.max(1);
    let mut session = Session::new("seeds", Sink::new(a.run.out.clone())?, total);
    let io = |e: std::io::Error| e.to_string();
    for s in chosen {
        let missing: Vec<&str> = s
            .needs
            .iter()
            .copied()
            .filter(|n| registry::find(n).is_none())
            .collect();
        if a.run.format == Format::Table {
            writeln!(out, "\n{}\n  seed: {}", s.title, s.claim).map_err(io)?;
        }
        if !missing.is_empty() {
            if a.run.format == Format::Table {
                writeln!(
                    out,
                    "  skipped: needs {} (this binary was built without kslock's locks; use --features kslock)",
                    missing.join(", ")
                )
                .map_err(io)?;
            }
            continue;
        }
        let first = session.report.cells.len();
        for g in &s.groups {
            session.run_group(g, &t)?;
        }
        if a.run.format == Format::Table {
            let cells = &session.report.cells[first..];
            for &(metric, col, val) in &s.columns {
                pivot(out, cells, metric, col, val).map_err(io)?;
            }
        }
    }
    match a.run.format {
        Format::Table => Ok(()),
        Format::Csv => out
            .write_all(to_csv(&session.report.cells).as_bytes())
            .map_err(io),
        Format::Json => writeln!(out, "{}", session.report.to_json()).map_err(io),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::tests::sample_cell;

    #[test]
    fn seed_table_shape() {
        let mut cells = Vec::new();
        for t in [2, 8] {
            for (l, k) in [("kslock-rwsem-reader-spin-on", 1.0), ("kslock-rwsem", 2.0)] {
                let mut c = sample_cell(l, t, k * t as f64);
                c.cs_load = 20;
                cells.push(c);
            }
        }
        let s4 = &seeds(&[2, 8])[4];
        let (m, col, val) = s4.columns[0];
        let mut buf = Vec::new();
        pivot(&mut buf, &cells, m, col, val).unwrap();
        let s = String::from_utf8(buf).unwrap();
        let lines: Vec<&str> = s.lines().collect();
        assert!(
            lines[0].contains("cs=20 On") && lines[0].contains("cs=20 Off"),
            "{s}"
        );
        assert!(
            lines[1].starts_with("  2 thr") && lines[2].starts_with("  8 thr"),
            "{s}"
        );
        assert!(lines[2].contains("16.0"), "{s}");
    }

    #[test]
    fn seeds_skip_cleanly_without_kslock() {
        if cfg!(feature = "kslock") {
            return;
        }
        let args = SeedArgs {
            only: vec![],
            threads: ThreadList(vec![2]),
            run: RunArgs {
                secs: Some(0.05),
                warmup: Some(0.0),
                repeat: 1,
                pin: false,
                format: Format::Table,
                out: None,
                stats: false,
            },
        };
        let mut buf = Vec::new();
        run(&args, &mut buf).unwrap();
        let s = String::from_utf8(buf).unwrap();
        assert_eq!(s.matches("skipped").count(), 5, "{s}");
    }
}
