//! Command line: the parser and the dispatch to the subcommands ([`crate::cmd`]).

use std::io::Write;

use clap::{Parser, Subcommand};

use crate::cmd::compare::CompareArgs;
use crate::cmd::matrix::MatrixArgs;
use crate::cmd::seeds::SeedArgs;
use crate::cmd::suite::SuiteArgs;
use crate::cmd::timeline::TimelineArgs;
use crate::cmd::uncontended::UncontendedArgs;
use crate::cmd::workload::WorkloadArgs;
use crate::cmd::{compare, matrix, seeds, suite, timeline, uncontended, workload};

const AFTER_HELP: &str = "\
Thread lists: comma-separated counts and ranges; A..B doubles from A and ends at B
(1,2,4..96 = 1,2,4,8,16,32,64,96).

Method: start gate, warm-up, then the coordinator samples every thread's
cache-padded op counter at two timestamps. Every critical section checks mutual
exclusion; a violation aborts the run (exit 1).

Bound: bound = best 1-thread kops/s of the cell config × 1/((1-r) + r/p), with
r = read fraction and p = min(threads, online CPUs): reads run in parallel,
writes serialise. efficiency = kops/s ÷ bound. (Outside load also runs in
parallel, so with --outside-load the efficiency can exceed 1.)";

/// Lock benchmark: kslock against std, parking_lot, glibc pthread and a
/// spinlock. With no subcommand, runs the suite: eleven families (mutex, rwsem at 50/90/99%
/// reads, file, mmap, tree, random, data, condvar), 3 interleaved repeats per cell, paced to
/// --budget seconds (about 6 minutes on 2 CPUs); prints the tables, one scoreboard per family
/// and the overall line, and writes results/{UTC time}/{results.json,results.csv,plot.svg}.
#[derive(Parser, Debug)]
#[command(name = "lockbench", version, after_help = AFTER_HELP, args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    pub cmd: Option<Cmd>,
    #[command(flatten)]
    pub default: SuiteArgs,
}

/// The subcommands.
#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// Run a matrix of locks × threads × loads × read mixes.
    Matrix(MatrixArgs),
    /// One A/B experiment per seed idea (S0..S4), printed as the seed's table.
    Seeds(SeedArgs),
    /// Application-shaped workloads (file, mmap, tree, data, condvar) and random section lengths, against the peers.
    Workload(WorkloadArgs),
    /// Compare two results.json files cell by cell.
    Compare(CompareArgs),
    /// Timestamp every step of every operation of one matrix cell and show where its time
    /// goes: lock held, idle while waited for, handover gaps, cold sections.
    Timeline(TimelineArgs),
    /// One thread, nobody else: ns per lock + unlock pair in a loop that does nothing else,
    /// per lock, against parking_lot's (median of interleaved repeats).
    Uncontended(UncontendedArgs),
    /// List the locks compiled into this binary.
    List,
}

/// Checks what one argument's parser cannot: `Err` is a usage error (clap prints it with the
/// usage and exits 2).
pub fn validate(cli: &Cli) -> Result<(), clap::Error> {
    use clap::CommandFactory;
    let r = match &cli.cmd {
        Some(Cmd::Timeline(t)) => timeline::check(t),
        Some(Cmd::Workload(w)) => workload::check(w),
        _ => Ok(()),
    };
    r.map_err(|msg| Cli::command().error(clap::error::ErrorKind::ValueValidation, msg))
}

/// Execute a parsed command line. Errors are for the user (exit 1).
pub fn execute(cli: Cli, out: &mut dyn Write) -> Result<(), String> {
    match cli.cmd {
        None => suite::run(&cli.default, out),
        Some(Cmd::Matrix(m)) => matrix::run(&m, out),
        Some(Cmd::Workload(w)) => workload::run(&w, out),
        Some(Cmd::Seeds(s)) => seeds::run(&s, out),
        Some(Cmd::Compare(c)) => compare::run(&c, out),
        Some(Cmd::Timeline(t)) => timeline::run(&t, out),
        Some(Cmd::Uncontended(u)) => uncontended::run(&u, out),
        Some(Cmd::List) => out
            .write_all(crate::registry::list_text().as_bytes())
            .map_err(|e| e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::Format;
    use crate::cmd::seeds::SeedId;
    use crate::cmd::workload::WorkloadName;
    use crate::registry::{resolve, Kind};
    use clap::error::ErrorKind;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("lockbench").chain(args.iter().copied()))
    }

    #[test]
    fn uncontended_args() {
        let cli = parse(&["uncontended", "--locks", "mutexes", "--ops", "5"]).unwrap();
        let Some(Cmd::Uncontended(u)) = cli.cmd else {
            panic!("not uncontended")
        };
        assert_eq!((u.locks, u.ops, u.repeat), (vec!["mutexes".into()], 5, 7));
        let err = |args: &[&str]| parse(args).unwrap_err().kind();
        assert_eq!(
            err(&["uncontended", "--ops", "0"]),
            ErrorKind::ValueValidation
        );
        assert_eq!(
            err(&["uncontended", "--locks", "x"]),
            ErrorKind::InvalidValue
        );
    }

    #[test]
    fn matrix_args() {
        let cli = parse(&[
            "matrix",
            "--locks",
            "std-mutex,pthread-rwlock",
            "--threads",
            "1,4..16",
            "--cs-load",
            "1,100",
            "--read-pct",
            "0,50",
            "--secs",
            "0.5",
            "--repeat",
            "3",
            "--pin",
            "--format",
            "json",
        ])
        .unwrap();
        let Some(Cmd::Matrix(m)) = cli.cmd else {
            panic!()
        };
        assert_eq!(m.locks, vec!["std-mutex", "pthread-rwlock"]);
        assert_eq!(m.threads.0, vec![1, 4, 8, 16]);
        assert_eq!(m.cs_load, vec![1, 100]);
        assert_eq!(m.outside_load, vec![0]);
        assert_eq!(m.read_pct, vec![0, 50]);
        assert_eq!(m.run.secs, Some(0.5));
        assert_eq!(m.run.repeat, 3);
        assert!(m.run.pin);
        assert_eq!(m.run.format, Format::Json);
        let l = resolve(&m.locks);
        assert_eq!(l.len(), 2);
        assert_eq!(l[1].kind, Kind::RwLock);
    }

    #[test]
    fn defaults_and_subcommands() {
        let cli = parse(&[]).unwrap();
        assert!(cli.cmd.is_none());
        assert_eq!(cli.default.format, Format::Table);
        let cli = parse(&["seeds", "--only", "S0,s4"]).unwrap();
        assert!(
            matches!(cli.cmd, Some(Cmd::Seeds(ref s)) if s.only == vec![SeedId::S0, SeedId::S4])
        );
        let cli = parse(&["workload", "tree", "--threads", "2"]).unwrap();
        assert!(matches!(cli.cmd, Some(Cmd::Workload(ref w)) if w.name == WorkloadName::Tree));
    }

    #[test]
    fn bad_arguments_exit_2_with_valid_values() {
        let e = parse(&["matrix", "--locks", "no-such-lock"]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidValue);
        assert_eq!(e.exit_code(), 2);
        let msg = e.to_string();
        assert!(
            msg.contains("std-mutex") && msg.contains("pthread-rwlock"),
            "{msg}"
        );
        for bad in [
            &["matrix", "--threads", "0"][..],
            &["matrix", "--read-pct", "101"],
            &["matrix", "--secs", "-1"],
            &["matrix", "--format", "xml"],
            &["matrix", "--repeat", "0"],
            &["workload", "nope"],
            &["seeds", "--only", "S9"],
            &["frobnicate"],
            &["--budget", "10", "matrix"],
        ] {
            let e = parse(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad:?}: {e}");
        }
        let e = parse(&["--format", "xml"]).unwrap_err();
        assert!(e.to_string().contains("table"), "{e}");
    }
}
