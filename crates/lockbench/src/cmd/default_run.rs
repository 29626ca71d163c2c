//! The default run (`lockbench` with no subcommand): a representative mutex and rwsem matrix
//! against the peers, sized to `--budget` seconds.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use crate::args::{positive_f64, Format};
use crate::cmd::matrix::run_groups;
use crate::registry::available;
use crate::session::{run_overhead_s, Group, Session, Timing};
use crate::workload::WorkSpec;

/// The default run's arguments (given without a subcommand).
#[derive(Args, Debug, Clone, PartialEq)]
pub struct DefaultArgs {
    /// Total wall time to aim for, seconds (the per-run time follows from it; every cell runs
    /// 3 interleaved repeats).
    #[arg(long, default_value_t = 285.0, value_parser = positive_f64)]
    pub budget: f64,
    /// Export directory [default: results/{UTC timestamp}].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// What to print on stdout.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// Interleaved repeats of every cell in the default run (its cells report the median).
pub const DEFAULT_REPEATS: usize = 3;

/// The default run: a representative mutex and rwsem matrix against the
/// peers, sized to `budget` seconds.
pub fn default_plan(budget: f64) -> (Vec<Group>, Timing) {
    let threads = vec![1, 2, 8, 32, 96];
    let cs = vec![1, 20, 100];
    let groups = vec![
        Group::new(
            WorkSpec::Matrix,
            available(&[
                "kslock-mutex",
                "std-mutex",
                "parking-lot-mutex",
                "pthread-mutex",
            ]),
            threads.clone(),
            cs.clone(),
            vec![0],
            vec![0],
        ),
        Group::new(
            WorkSpec::Matrix,
            available(&[
                "kslock-rwsem",
                "std-rwlock",
                "parking-lot-rwlock",
                "pthread-rwlock",
            ]),
            threads,
            cs,
            vec![0],
            vec![50, 90],
        ),
    ];
    // Every run: a warm-up of a fifth of the run (at most 150 ms), the measured window, and
    // the thread start/join overhead; DEFAULT_REPEATS interleaved repeats per cell.
    let runs: usize = groups.iter().map(Group::cells).sum::<usize>() * DEFAULT_REPEATS;
    let overhead: f64 = groups
        .iter()
        .map(|g| {
            let per_thread_count = g.cells() / g.threads.len().max(1) * DEFAULT_REPEATS;
            g.threads
                .iter()
                .map(|&n| per_thread_count as f64 * run_overhead_s(n))
                .sum::<f64>()
        })
        .sum();
    let per = ((budget - overhead) / runs.max(1) as f64).max(0.06);
    let warmup = (per * 0.2).min(0.15);
    let secs = (per - warmup).clamp(0.05, 5.0);
    (
        groups,
        Timing {
            secs,
            warmup,
            repeat: DEFAULT_REPEATS,
            pin: false,
        },
    )
}

/// The default run: plan, run, print, and write the exports.
pub fn run(d: &DefaultArgs, out: &mut dyn Write) -> Result<(), String> {
    let (groups, t) = default_plan(d.budget);
    let dir = d.out.clone().unwrap_or_else(|| {
        PathBuf::from("results").join(crate::results::utc_timestamp(
            std::time::SystemTime::now(),
            false,
        ))
    });
    let est = Session::estimate(&groups, &t);
    if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        eprintln!(
            "lockbench: default run, {} cells, about {:.0} s; results in {}",
            groups.iter().map(Group::cells).sum::<usize>(),
            est,
            dir.display()
        );
    }
    run_groups("default", &groups, &t, Some(dir.clone()), d.format, out)?;
    if d.format == Format::Table {
        writeln!(out, "results written to {}", dir.display()).map_err(|e| e.to_string())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_plan_fits_the_budget() {
        let (groups, t) = default_plan(285.0);
        let est = Session::estimate(&groups, &t);
        assert!((250.0..=300.0).contains(&est), "estimate {est}");
        assert_eq!(t.repeat, DEFAULT_REPEATS);
        assert!(t.secs >= 0.3, "measured window {} s", t.secs);
        assert!(groups[0].threads.contains(&96));
        assert!(groups.iter().all(|g| !g.locks.is_empty()));
        assert_eq!(groups[1].read_pcts, vec![50, 90]);
        let (groups, t) = default_plan(100.0);
        let est = Session::estimate(&groups, &t);
        assert!((85.0..=115.0).contains(&est), "estimate {est}");
    }
}
