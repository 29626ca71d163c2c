//! The default run (`lockbench` with no subcommand): a suite of families judged on what
//! programs do, each kslock lock against the best of std, parking_lot and glibc per cell, in
//! one session paced to `--budget` seconds.
//!
//! | family | workload | locks | threads | loads |
//! |---|---|---|---|---|
//! | `mutex` | matrix, all writes | mutexes | 2, 8, 32, 96 | cs 1, 20, 100 |
//! | `rwsem-50`, `-90`, `-99` | matrix, 50 / 90 / 99 % reads | rwlocks | 2, 8, 32, 96 | cs 1, 20, 100 |
//! | `file`, `mmap` | fio randrw (50 % reads), page faults + mmap (90 %) | rwlocks | 2, 8, 32, 96 | |
//! | `tree` | lock coupling with `try_lock_spin` | mutexes | 2, 8, 32, 96 | |
//! | `random` | geometric section and gap lengths | mutexes | 3, 12, 48 | cs 1, 20, 100 × out 0, 100 |
//! | `data-mutex`, `data-rwsem-90` | 4 and 32 cache lines of data per section, 0 / 90 % reads | mutexes / rwlocks | 2, 8, 32, 96 | |
//! | `condvar` | a bounded work queue, 200 pauses of work per item | mutex + condvar | 2, 8, 32 | |
//!
//! *Mutexes* are kslock-mutex, std-mutex, parking-lot-mutex and pthread-mutex; *rwlocks*
//! kslock-rwsem, std-rwlock, parking-lot-rwlock and pthread-rwlock. Every cell runs
//! [`REPEATS`] interleaved repeats; the session is paced ([`crate::session::Pace`]): each cell
//! config's windows come from the time left, so a slow machine shortens the cells, not the
//! repeats. The matrix and data families calibrate their bound (1-thread runs); the others
//! have none. The scoreboard has one block per family and the overall line (the geometric
//! mean over the families of each family's geo-mean at threads ≥ 8).
//!
//! **Fairness pass.** Short repeats cannot judge starvation (a thread that waits 100 ms in a
//! 200 ms window is STARVED there, fairly or not), so before the families the suite runs each
//! matrix family's cells at 8, 32 and 96 threads once more for kslock's lock alone, for
//! [`FAIR_SECS`] each; the scoreboard takes STARVED and max/min per-thread operations of those
//! cells from these runs (and says so). The peers get no such runs: the budget has no room
//! for them (their STARVED counts come from the short repeats).
//!
//! **Uncontended.** First of all the suite measures one lock + unlock pair of kslock's mutex
//! and rwsem (write and read) and of parking_lot's, one thread with an idle one beside it
//! (`lockbench uncontended`, [`UNCONTENDED_OPS`] pairs × [`UNCONTENDED_REPEATS`] repeats), and
//! prints kslock ÷ parking_lot as a line of its own.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use clap::Args;

use crate::args::{positive_f64, Format};
use crate::cmd::uncontended::{measure_rows, summary_line};
use crate::registry::{self, available, LockInfo};
use crate::results::{to_csv, Sink};
use crate::session::{Group, Pace, Session, Timing, PACED_CALIB};
use crate::table::write_table;
use crate::workload::WorkSpec;

/// The default run's arguments (given without a subcommand).
#[derive(Args, Debug, Clone, PartialEq)]
pub struct SuiteArgs {
    /// Total wall time to aim for, seconds (the per-run time follows from it; every cell runs
    /// 3 interleaved repeats).
    #[arg(long, default_value_t = DEFAULT_BUDGET, value_parser = positive_f64)]
    pub budget: f64,
    /// Export directory [default: results/{UTC timestamp}].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// What to print on stdout.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Run only these families (comma-separated; default: all). The budget is then shared
    /// among them, and the fairness pass covers only their matrix cells.
    #[arg(long, value_delimiter = ',', value_parser = family_name)]
    pub families: Vec<String>,
}

/// A `--families` name: one of [`plan`]'s families.
fn family_name(s: &str) -> Result<String, String> {
    let names: Vec<&str> = plan().families.iter().map(|f| f.name).collect();
    if names.contains(&s) {
        Ok(s.to_string())
    } else {
        Err(format!(
            "unknown family `{s}`; the families are {}",
            names.join(", ")
        ))
    }
}

/// Interleaved repeats of every cell (its result is their median).
pub const REPEATS: usize = 3;
/// `--budget`'s default, seconds: the whole run within 6 minutes on 2 CPUs.
pub const DEFAULT_BUDGET: f64 = 340.0;
/// Seconds kept back for printing and writing the exports at the end.
const RESERVE_S: f64 = 2.0;
/// Pairs per run and repeats of the uncontended measurement (module doc).
pub const UNCONTENDED_OPS: u64 = 2_000_000;
pub const UNCONTENDED_REPEATS: u32 = 5;
/// Its estimated seconds (≈ 15 ns a pair, 6 pair loops a repeat, with margin).
const UNCONTENDED_S: f64 = 1.5;

/// A fairness run's measured window, seconds (module doc; its warm-up is a tenth of it).
pub const FAIR_SECS: f64 = 1.0;

/// One family of the suite.
#[derive(Clone)]
pub struct FamilyPlan {
    pub name: &'static str,
    pub group: Group,
}

/// What the suite runs (module doc).
#[derive(Clone)]
pub struct Plan {
    pub families: Vec<FamilyPlan>,
    /// The fairness pass: kslock's lock alone, one run per cell of `fair_secs` (after a
    /// warm-up of a tenth of it).
    pub fairness: Vec<Group>,
    pub fair_secs: f64,
    /// The locks of the uncontended measurement and its pairs per run (module doc).
    pub uncontended: Vec<LockInfo>,
    pub uncontended_ops: u64,
}

fn mutexes() -> Vec<LockInfo> {
    available(&[
        "kslock-mutex",
        "std-mutex",
        "parking-lot-mutex",
        "pthread-mutex",
    ])
}

fn rwlocks() -> Vec<LockInfo> {
    available(&[
        "kslock-rwsem",
        "std-rwlock",
        "parking-lot-rwlock",
        "pthread-rwlock",
    ])
}

/// The suite (module doc).
pub fn plan() -> Plan {
    let threads = vec![2, 8, 32, 96];
    let cs = vec![1, 20, 100];
    let one = |spec, locks, read| {
        let mut g = Group::new(spec, locks, threads.clone(), vec![0], vec![0], vec![read]);
        g.calibrate = false;
        g
    };
    let data = |locks, read| {
        let mut g = Group::new(
            WorkSpec::Data,
            locks,
            threads.clone(),
            vec![0],
            vec![0],
            vec![read],
        );
        g.lines = vec![4, 32];
        g
    };
    let mut random = Group::new(
        WorkSpec::Random,
        mutexes(),
        vec![3, 12, 48],
        cs.clone(),
        vec![0, 100],
        vec![0],
    );
    random.calibrate = false;
    let mut condvar = Group::new(
        WorkSpec::Condvar,
        available(&registry::condvar_names())
            .into_iter()
            .filter(|l| mutexes().iter().any(|m| m.name == l.name))
            .collect(),
        vec![2, 8, 32],
        vec![0],
        vec![200],
        vec![0],
    );
    condvar.calibrate = false;
    let matrix = |locks, read| {
        Group::new(
            WorkSpec::Matrix,
            locks,
            threads.clone(),
            cs.clone(),
            vec![0],
            vec![read],
        )
    };
    let f = |name, group| FamilyPlan { name, group };
    let families = vec![
        f("mutex", matrix(mutexes(), 0)),
        f("rwsem-50", matrix(rwlocks(), 50)),
        f("rwsem-90", matrix(rwlocks(), 90)),
        f("rwsem-99", matrix(rwlocks(), 99)),
        f("file", one(WorkSpec::File, rwlocks(), 50)),
        f("mmap", one(WorkSpec::Mmap, rwlocks(), 90)),
        f("tree", one(WorkSpec::Tree { spin: true }, mutexes(), 0)),
        f("random", random),
        f("data-mutex", data(mutexes(), 0)),
        f("data-rwsem-90", data(rwlocks(), 90)),
        f("condvar", condvar),
    ];
    Plan {
        fairness: fairness_of(&families),
        families,
        fair_secs: FAIR_SECS,
        uncontended: available(&[
            "kslock-mutex",
            "parking-lot-mutex",
            "kslock-rwsem",
            "parking-lot-rwlock",
        ]),
        uncontended_ops: UNCONTENDED_OPS,
    }
}

/// The fairness pass of `families` (module doc): their matrix cells at 8+ threads, kslock's
/// lock alone.
fn fairness_of(families: &[FamilyPlan]) -> Vec<Group> {
    families
        .iter()
        .filter(|f| f.group.spec == WorkSpec::Matrix)
        .map(|f| {
            let mut g = f.group.clone();
            g.locks.retain(|l| l.ours);
            g.threads.retain(|&t| t >= 8);
            g.calibrate = false;
            g
        })
        .filter(|g| !g.locks.is_empty())
        .collect()
}

impl Plan {
    /// The plan cut to the families named in `only` (all of them when it is empty).
    pub fn only(mut self, only: &[String]) -> Plan {
        if !only.is_empty() {
            self.families.retain(|f| only.iter().any(|n| n == f.name));
            self.fairness = fairness_of(&self.families);
        }
        self
    }

    /// The families' groups, in order.
    pub fn groups(&self) -> Vec<Group> {
        self.families.iter().map(|f| f.group.clone()).collect()
    }

    /// Cells and runs of the families.
    pub fn cells(&self) -> (usize, usize) {
        let cells: usize = self.families.iter().map(|f| f.group.cells()).sum();
        (cells, cells * REPEATS)
    }

    /// Estimated seconds of the fairness pass.
    pub fn fairness_estimate(&self) -> f64 {
        self.fairness
            .iter()
            .map(|g| {
                let (runs, overhead, _) = g.cost(1);
                runs as f64 * self.fair_secs * 1.1 + overhead
            })
            .sum()
    }

    /// The windows (measured, warm-up) a run of `budget` seconds starts its families with, and
    /// the estimated wall time: the fairness pass, the paced families, their calibrations and
    /// the reserve.
    pub fn estimate(&self, budget: f64) -> ((f64, f64), f64) {
        let now = Instant::now();
        let groups = self.groups();
        let fair = self.fairness_estimate() + UNCONTENDED_S;
        let pace = Pace::new(
            now + std::time::Duration::from_secs_f64((budget - RESERVE_S - fair).max(0.0)),
            &groups,
            REPEATS,
        );
        let (secs, warmup) = pace.timing(now);
        let mut est = RESERVE_S + fair;
        for g in &groups {
            let (runs, overhead, calib) = g.cost(REPEATS);
            est += runs as f64 * (secs + warmup)
                + overhead
                + calib as f64
                    * (PACED_CALIB.0 + PACED_CALIB.1 + crate::session::run_overhead_s(1));
        }
        ((secs, warmup), est)
    }
}

/// The suite: plan, run (paced), print, and write the exports.
pub fn run(a: &SuiteArgs, out: &mut dyn Write) -> Result<(), String> {
    run_plan(&plan().only(&a.families), a, out)
}

/// Runs `plan` as the suite (the tests run smaller plans).
pub fn run_plan(plan: &Plan, a: &SuiteArgs, out: &mut dyn Write) -> Result<(), String> {
    let start = Instant::now();
    let dir = a.out.clone().unwrap_or_else(|| {
        PathBuf::from("results").join(crate::results::utc_timestamp(
            std::time::SystemTime::now(),
            false,
        ))
    });
    let (cells, runs) = plan.cells();
    if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        eprintln!(
            "lockbench: suite, {} families, {cells} cells, {runs} runs, about {:.0} s; results in {}",
            plan.families.len(),
            a.budget,
            dir.display()
        );
    }
    let groups = plan.groups();
    let fair_runs: usize = plan.fairness.iter().map(Group::cells).sum();
    let mut s = Session::new("suite", Sink::new(Some(dir.clone()))?, runs + fair_runs);
    s.report.repeats = REPEATS;
    s.report.uncontended =
        measure_rows(&plan.uncontended, plan.uncontended_ops, UNCONTENDED_REPEATS);
    for g in &plan.fairness {
        s.run_fairness(g, plan.fair_secs, plan.fair_secs * 0.1)?;
    }
    let end = start + std::time::Duration::from_secs_f64((a.budget - RESERVE_S).max(0.0));
    s.pace = Some(Pace::new(end, &groups, REPEATS));
    // (The paced windows replace `secs` and `warmup`.)
    let t = Timing {
        secs: 0.0,
        warmup: 0.0,
        repeat: REPEATS,
        pin: false,
    };
    for g in &groups {
        s.run_group(g, &t)?;
    }
    s.report.wall_s = start.elapsed().as_secs_f64();
    s.write()?;
    let io = |e: std::io::Error| format!("writing output: {e}");
    match a.format {
        Format::Table => {
            write_table(out, &s.report.cells).map_err(io)?;
            if !s.report.fairness.is_empty() {
                writeln!(
                    out,
                    "\n== fairness pass: one {:.1} s run per cell, kslock's lock alone (its \
                     STARVED verdicts in the scoreboard) ==",
                    plan.fair_secs
                )
                .map_err(io)?;
                write_table(out, &s.report.fairness).map_err(io)?;
            }
            out.write_all(s.report.scoreboard.to_text(REPEATS).as_bytes())
                .map_err(io)?;
            let line = summary_line(
                &s.report.uncontended,
                plan.uncontended_ops,
                UNCONTENDED_REPEATS,
            );
            out.write_all(line.as_bytes()).map_err(io)?;
            writeln!(
                out,
                "\nsuite wall time {:.0} s (budget {:.0} s); results written to {}",
                start.elapsed().as_secs_f64(),
                a.budget,
                dir.display()
            )
            .map_err(io)?;
        }
        Format::Csv => out
            .write_all(to_csv(&s.report.cells).as_bytes())
            .map_err(io)?,
        Format::Json => writeln!(out, "{}", s.report.to_json()).map_err(io)?,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_plan_fits_the_budget() {
        let p = plan();
        let ((secs, warmup), est) = p.estimate(DEFAULT_BUDGET);
        let fair = p.fairness_estimate();
        assert!(fair >= 36.0, "36 runs of 1 s: {fair} s");
        assert!(
            p.fairness
                .iter()
                .all(|g| g.threads == [8, 32, 96] && g.cs_loads.len() == 3),
            "every matrix cell at 8+ threads"
        );
        assert!(
            (0.95 * DEFAULT_BUDGET..=DEFAULT_BUDGET + 1e-6).contains(&est),
            "estimate {est} s"
        );
        assert!(
            est <= 345.0,
            "the default run stays within 6 minutes: {est} s"
        );
        assert!(secs >= 0.15, "measured window {secs} s");
        assert!(warmup > 0.0 && warmup <= 0.15, "warm-up {warmup} s");
        // A budget too small to fit gives the shortest windows, and says so in the estimate.
        let ((secs, _), est) = p.estimate(20.0);
        assert_eq!(secs, 0.05);
        assert!(est > 20.0, "{est}");
    }

    #[test]
    fn every_family_has_cells_at_8_threads_and_more_against_peers() {
        let p = plan();
        assert_eq!(p.families.len(), 11);
        for f in &p.families {
            let g = &f.group;
            assert!(g.threads.iter().any(|&t| t >= 8), "{}", f.name);
            assert!(
                g.locks.iter().filter(|l| !l.ours).count() >= 3,
                "{}",
                f.name
            );
            if cfg!(feature = "kslock-rwsem") {
                assert_eq!(g.locks.iter().filter(|l| l.ours).count(), 1, "{}", f.name);
                let kind = g.locks[0].kind.name();
                assert_eq!(
                    crate::scoreboard::family_name(g.spec.name(), kind, g.read_pcts[0]),
                    f.name,
                    "the scoreboard names the family as the plan does"
                );
            }
        }
    }

    /// Every family, cut to one cell config of two locks, runs through the suite's path: one
    /// scoreboard block per family, the overall line, the exports and the wall time.
    #[cfg(feature = "kslock-rwsem")]
    #[test]
    fn a_tiny_suite_scores_every_family() {
        let mut p = plan();
        for f in &mut p.families {
            let g = &mut f.group;
            g.threads = vec![8];
            g.cs_loads.truncate(1);
            g.outside_loads.truncate(1);
            g.lines.truncate(1);
            g.locks.truncate(2);
        }
        for g in &mut p.fairness {
            g.threads = vec![8];
            g.cs_loads.truncate(1);
        }
        p.fair_secs = 0.05;
        p.uncontended_ops = 10_000;
        let dir = std::env::temp_dir().join(format!("lockbench-suite-{}", std::process::id()));
        let a = SuiteArgs {
            budget: 6.0,
            out: Some(dir.clone()),
            format: Format::Table,
            families: Vec::new(),
        };
        let mut out = Vec::new();
        run_plan(&p, &a, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        for f in &p.families {
            assert!(
                text.contains(&format!("\n{}: kslock-", f.name)),
                "{}: {text}",
                f.name
            );
        }
        assert!(text.contains("overall: "), "{text}");
        assert!(
            text.contains("== fairness pass: one 0.1 s run per cell"),
            "{text}"
        );
        assert_eq!(
            text.matches("STARVED over 0.1 s (one fairness run per cell")
                .count(),
            4,
            "the matrix families' verdicts come from the fairness runs: {text}"
        );
        assert!(text.contains("suite wall time "), "{text}");
        assert!(
            text.contains("uncontended, kslock ÷ parking_lot (")
                && text.contains("mutex ")
                && text.contains("rwsem write ")
                && text.contains("rwsem read "),
            "{text}"
        );
        let r = crate::results::Report::load(&dir.join("results.json")).unwrap();
        assert_eq!(r.scoreboard.families.len(), 11);
        assert!(r.scoreboard.overall_8.is_some_and(|x| x > 0.0));
        assert!(r.wall_s > 0.0);
        assert_eq!(r.uncontended.len(), 6, "{:?}", r.uncontended);
        assert!(r.cells.iter().all(|c| c.runs_kops.len() == REPEATS));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn families_cut_the_plan_and_its_fairness_pass() {
        let p = plan().only(&["file".into(), "rwsem-90".into()]);
        let names: Vec<&str> = p.families.iter().map(|f| f.name).collect();
        assert_eq!(names, ["rwsem-90", "file"]);
        assert_eq!(p.fairness.len(), 1, "rwsem-90's matrix cells only");
        assert_eq!(plan().only(&[]).families.len(), 11);
        assert!(family_name("rwsem-75")
            .unwrap_err()
            .contains("the families are mutex, rwsem-50"));
    }
}
