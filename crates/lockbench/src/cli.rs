//! Command line: argument types, the default plan, and command dispatch.

use std::io::Write;
use std::path::PathBuf;

use clap::builder::PossibleValuesParser;
use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::locks::{self, Kind, LockInfo};
use crate::matrix::{write_table, Group, Session, Timing};
use crate::results::{to_csv, Sink};
use crate::runner::WorkSpec;

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
/// spinlock. With no subcommand, runs the default mutex + rwsem matrix
/// (about 5 minutes: 3 interleaved repeats per cell), prints the table and the
/// scoreboard, and writes results/{UTC time}/{results.json,results.csv,plot.svg}.
#[derive(Parser, Debug)]
#[command(name = "lockbench", version, after_help = AFTER_HELP, args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    pub cmd: Option<Cmd>,
    #[command(flatten)]
    pub default: DefaultArgs,
}

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

#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// Run a matrix of locks × threads × loads × read mixes.
    Matrix(MatrixArgs),
    /// One A/B experiment per seed idea (S0..S4), printed as the seed's table.
    Seeds(SeedArgs),
    /// Application-shaped workloads (file, mmap, tree) and random section lengths, against the peers.
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

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    Csv,
    Json,
}

/// Options shared by every measuring command.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct RunArgs {
    /// Measured seconds per cell.
    #[arg(long, value_parser = positive_f64)]
    pub secs: Option<f64>,
    /// Warm-up seconds per cell (not measured).
    #[arg(long, value_parser = nonneg_f64)]
    pub warmup: Option<f64>,
    /// Runs per cell; the table reports the median and min-max.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,
    /// Pin worker i to CPU i mod online CPUs.
    #[arg(long)]
    pub pin: bool,
    /// What to print on stdout.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Also write results.json, results.csv and plot.svg here (rewritten
    /// after every cell).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

fn lock_parser() -> PossibleValuesParser {
    let mut v: Vec<&'static str> = locks::names();
    v.extend(["all", "mutexes", "rwlocks"]);
    PossibleValuesParser::new(v)
}

#[derive(Args, Debug, Clone, PartialEq)]
pub struct MatrixArgs {
    /// Locks to run (comma-separated; also all, mutexes, rwlocks).
    #[arg(long, value_delimiter = ',', value_parser = lock_parser(), default_value = "all")]
    pub locks: Vec<String>,
    /// Thread counts, e.g. 1,2,4..96.
    #[arg(long, default_value = "1,2,4,8,16,32", value_parser = parse_threads)]
    pub threads: ThreadList,
    /// Pause instructions inside the critical section (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "1,20,100")]
    pub cs_load: Vec<u32>,
    /// Pause instructions between two acquisitions (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "0")]
    pub outside_load: Vec<u32>,
    /// Percent of operations that read-lock, 0-100 (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "0", value_parser = clap::value_parser!(u32).range(0..=100))]
    pub read_pct: Vec<u32>,
    #[command(flatten)]
    pub run: RunArgs,
}

fn single_lock_parser() -> PossibleValuesParser {
    PossibleValuesParser::new(locks::names())
}

#[derive(Args, Debug, Clone, PartialEq)]
pub struct TimelineArgs {
    /// The lock to record.
    #[arg(long, value_parser = single_lock_parser())]
    pub lock: String,
    /// Threads.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: u32,
    /// Pause instructions inside the critical section.
    #[arg(long, default_value_t = 1)]
    pub cs_load: u32,
    /// Pause instructions between two acquisitions.
    #[arg(long, default_value_t = 0)]
    pub outside_load: u32,
    /// Percent of operations that read-lock, 0-100 (rwlocks).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub read_pct: u32,
    /// Operations per thread (threads × ops at most 8000000).
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(100..=8_000_000))]
    pub ops: u64,
    /// Pin worker i to CPU i mod online CPUs.
    #[arg(long)]
    pub pin: bool,
    /// Also write every stamp here as CSV (clock ticks; the rate in the first line).
    #[arg(long)]
    pub raw: Option<PathBuf>,
}

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

/// Checks what one argument's parser cannot: `Err` is a usage error (clap prints it with the
/// usage and exits 2).
pub fn validate(cli: &Cli) -> Result<(), clap::Error> {
    use clap::CommandFactory;
    if let Some(Cmd::Timeline(t)) = &cli.cmd {
        let stamps = u64::from(t.threads) * t.ops;
        if stamps > crate::timeline::MAX_STAMPS as u64 {
            return Err(Cli::command().error(
                clap::error::ErrorKind::ValueValidation,
                format!(
                    "--threads {} × --ops {} = {stamps} stamps; at most {} fit (lower --ops)",
                    t.threads,
                    t.ops,
                    crate::timeline::MAX_STAMPS
                ),
            ));
        }
    }
    Ok(())
}

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

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum WorkloadName {
    /// fio randrw on one shared file (read lock copies a block, write lock modifies one)
    File,
    /// page faults (read) and mmap/munmap (write) on an interval map under one rwsem
    Mmap,
    /// lock-coupled tree descent with try_lock_spin and unlock/relock fallback
    Tree,
    /// the matrix loop with random (geometric) section and gap lengths, means --cs-load and --outside-load
    Random,
}

#[derive(Args, Debug, Clone, PartialEq)]
pub struct WorkloadArgs {
    pub name: WorkloadName,
    /// Locks [default: rwlocks for file/mmap, mutexes for tree].
    #[arg(long, value_delimiter = ',', value_parser = lock_parser())]
    pub locks: Vec<String>,
    /// Thread counts, e.g. 1,2,4..96.
    #[arg(long, default_value = "1,2,8,32", value_parser = parse_threads)]
    pub threads: ThreadList,
    /// Extra pause instructions inside each critical section (random: their mean) [default: random 1,20,100, others 0].
    #[arg(long, value_delimiter = ',')]
    pub cs_load: Vec<u32>,
    /// Pause instructions between operations (random: their mean).
    #[arg(long, value_delimiter = ',', default_value = "0")]
    pub outside_load: Vec<u32>,
    /// Read percent [default: file 50, mmap 90, tree and random 0].
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(0..=100))]
    pub read_pct: Vec<u32>,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Args, Debug, Clone, PartialEq)]
pub struct CompareArgs {
    pub old: PathBuf,
    pub new: PathBuf,
    /// Changes within ±this percent count as unchanged in the summary.
    #[arg(long, default_value_t = 5.0)]
    pub threshold: f64,
}

/// Parsed `--threads`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadList(pub Vec<usize>);

pub fn parse_threads(s: &str) -> Result<ThreadList, String> {
    const HELP: &str =
        "expected comma-separated thread counts or ranges A..B (doubling), e.g. 1,2,4..96";
    let mut v = Vec::new();
    for item in s.split(',').map(str::trim) {
        let num = |x: &str| -> Result<usize, String> {
            match x.trim().parse::<usize>() {
                Ok(n) if (1..=4096).contains(&n) => Ok(n),
                _ => Err(format!("bad thread count `{x}` (1..=4096); {HELP}")),
            }
        };
        if let Some((a, b)) = item.split_once("..") {
            let (a, b) = (num(a)?, num(b)?);
            if a > b {
                return Err(format!("empty range `{item}`; {HELP}"));
            }
            let mut t = a;
            while t < b {
                v.push(t);
                t *= 2;
            }
            v.push(b);
        } else {
            v.push(num(item)?);
        }
    }
    v.sort_unstable();
    v.dedup();
    Ok(ThreadList(v))
}

fn positive_f64(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x > 0.0 && x.is_finite() => Ok(x),
        _ => Err(format!("`{s}` is not a positive number of seconds")),
    }
}

fn nonneg_f64(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x >= 0.0 && x.is_finite() => Ok(x),
        _ => Err(format!("`{s}` is not a number of seconds >= 0")),
    }
}

/// Resolve lock names and the aliases all / mutexes / rwlocks.
pub fn resolve_locks(names: &[String]) -> Vec<LockInfo> {
    let reg = locks::registry();
    let mut out: Vec<LockInfo> = Vec::new();
    for n in names {
        let add: Vec<LockInfo> = match n.as_str() {
            "all" => reg.clone(),
            "mutexes" => reg
                .iter()
                .filter(|l| l.kind == Kind::Mutex)
                .copied()
                .collect(),
            "rwlocks" => reg
                .iter()
                .filter(|l| l.kind == Kind::RwLock)
                .copied()
                .collect(),
            name => reg.iter().filter(|l| l.name == name).copied().collect(),
        };
        for l in add {
            if !out.iter().any(|o| o.name == l.name) {
                out.push(l);
            }
        }
    }
    out
}

fn available(names: &[&str]) -> Vec<LockInfo> {
    names.iter().filter_map(|n| locks::find(n)).collect()
}

/// The default run: a representative mutex and rwsem matrix against the
/// peers, sized to `budget` seconds.
pub fn default_plan(budget: f64) -> (Vec<Group>, Timing) {
    let threads = vec![1, 2, 8, 32, 96];
    let cs = vec![1, 20, 100];
    let groups = vec![
        Group {
            spec: WorkSpec::Matrix,
            locks: available(&[
                "kslock-mutex",
                "std-mutex",
                "parking-lot-mutex",
                "pthread-mutex",
            ]),
            threads: threads.clone(),
            cs_loads: cs.clone(),
            outside_loads: vec![0],
            read_pcts: vec![0],
        },
        Group {
            spec: WorkSpec::Matrix,
            locks: available(&[
                "kslock-rwsem",
                "std-rwlock",
                "parking-lot-rwlock",
                "pthread-rwlock",
            ]),
            threads,
            cs_loads: cs,
            outside_loads: vec![0],
            read_pcts: vec![50, 90],
        },
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
                .map(|&n| per_thread_count as f64 * crate::matrix::run_overhead_s(n))
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

/// Interleaved repeats of every cell in the default run (its cells report the median).
pub const DEFAULT_REPEATS: usize = 3;

fn timing(r: &RunArgs, secs: f64, warmup: f64) -> Timing {
    Timing {
        secs: r.secs.unwrap_or(secs),
        warmup: r.warmup.unwrap_or(warmup),
        repeat: r.repeat as usize,
        pin: r.pin,
    }
}

/// Run `groups` and print the result on `out` in `format`.
pub fn run_groups(
    experiment: &str,
    groups: &[Group],
    t: &Timing,
    out_dir: Option<PathBuf>,
    format: Format,
    out: &mut dyn Write,
) -> Result<Session, String> {
    let total = groups.iter().map(Group::cells).sum::<usize>() * t.repeat.max(1);
    let sink = Sink::new(out_dir)?;
    let mut s = Session::new(experiment, sink, total);
    for g in groups {
        s.run_group(g, t)?;
    }
    print_report(&s, format, out)?;
    Ok(s)
}

fn print_report(s: &Session, format: Format, out: &mut dyn Write) -> Result<(), String> {
    let r = match format {
        Format::Table => write_table(out, &s.report.cells)
            .and_then(|()| out.write_all(s.report.scoreboard.to_text(s.report.repeats).as_bytes())),
        Format::Csv => out.write_all(to_csv(&s.report.cells).as_bytes()),
        Format::Json => writeln!(out, "{}", s.report.to_json()),
    };
    r.map_err(|e| format!("writing output: {e}"))
}

/// `lockbench timeline`: record, analyse, print (and write the raw stamps).
fn timeline(t: &TimelineArgs, out: &mut dyn Write) -> Result<(), String> {
    let info = locks::find(&t.lock).ok_or_else(|| format!("unknown lock {}", t.lock))?;
    let cfg = crate::timeline::TimelineCfg {
        threads: t.threads as usize,
        cs_load: t.cs_load,
        outside_load: t.outside_load,
        read_pct: t.read_pct,
        ops: t.ops as usize,
        pin: t.pin,
    };
    let rec = (info.timeline)(&cfg)?;
    if let Some(path) = &t.raw {
        crate::timeline::write_raw(path, &rec).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let rw = info.kind == Kind::RwLock;
    let r = crate::timeline::analyse(&rec.threads, rec.ns_per_tick);
    let title = format!(
        "timeline {}: {} threads, CS load {}, outside load {}, {}{} ops per thread, {} CPUs",
        t.lock,
        t.threads,
        t.cs_load,
        t.outside_load,
        if rw {
            format!("{}% reads, ", t.read_pct)
        } else {
            String::new()
        },
        t.ops,
        crate::stats::online_cpus()
    );
    crate::timeline::write_report(out, &title, rw, &r).map_err(|e| e.to_string())?;
    if r.overlaps > 0 {
        return Err(format!(
            "{} overlapping sections: the lock let two threads in, or the CPUs' clocks disagree",
            r.overlaps
        ));
    }
    Ok(())
}

/// Execute a parsed command line. Errors are for the user (exit 1).
pub fn execute(cli: Cli, out: &mut dyn Write) -> Result<(), String> {
    match cli.cmd {
        None => {
            let d = cli.default;
            let (groups, t) = default_plan(d.budget);
            let dir = d.out.unwrap_or_else(|| {
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
        Some(Cmd::Matrix(m)) => {
            let locks = resolve_locks(&m.locks);
            let g = Group {
                spec: WorkSpec::Matrix,
                locks,
                threads: m.threads.0.clone(),
                cs_loads: m.cs_load.clone(),
                outside_loads: m.outside_load.clone(),
                read_pcts: m.read_pct.clone(),
            };
            let t = timing(&m.run, 1.0, 0.2);
            run_groups("matrix", &[g], &t, m.run.out.clone(), m.run.format, out).map(|_| ())
        }
        Some(Cmd::Workload(w)) => {
            let (spec, name, default_locks) = match w.name {
                WorkloadName::File => (WorkSpec::File, "file", "rwlocks"),
                WorkloadName::Mmap => (WorkSpec::Mmap, "mmap", "rwlocks"),
                WorkloadName::Tree => (WorkSpec::Tree { spin: true }, "tree", "mutexes"),
                WorkloadName::Random => (WorkSpec::Random, "random", "mutexes"),
            };
            let cs_loads = if w.cs_load.is_empty() {
                crate::workload::default_cs_load(name)
            } else {
                w.cs_load.clone()
            };
            let names = if w.locks.is_empty() {
                vec![default_locks.to_string()]
            } else {
                w.locks.clone()
            };
            let read_pcts = if w.read_pct.is_empty() {
                vec![crate::workload::default_read_pct(name)]
            } else {
                w.read_pct.clone()
            };
            let g = Group {
                spec,
                locks: resolve_locks(&names),
                threads: w.threads.0.clone(),
                cs_loads,
                outside_loads: w.outside_load.clone(),
                read_pcts,
            };
            let t = timing(&w.run, 1.0, 0.2);
            run_groups(
                &format!("workload {name}"),
                &[g],
                &t,
                w.run.out.clone(),
                w.run.format,
                out,
            )
            .map(|_| ())
        }
        Some(Cmd::Seeds(s)) => crate::seeds::run(&s, out),
        Some(Cmd::Compare(c)) => crate::compare::run(&c, out),
        Some(Cmd::Timeline(t)) => timeline(&t, out),
        Some(Cmd::Uncontended(u)) => {
            crate::uncontended::run(&resolve_locks(&u.locks), u.ops, u.repeat, out)
        }
        Some(Cmd::List) => {
            let mut text = String::new();
            for l in locks::registry() {
                text.push_str(&format!(
                    "{:<36} {:<7} {}\n",
                    l.name,
                    if l.kind == Kind::Mutex {
                        "mutex"
                    } else {
                        "rwlock"
                    },
                    l.help
                ));
            }
            if !cfg!(feature = "kslock") {
                text.push_str(
                    "(kslock's locks are not compiled in: build with --features kslock)\n",
                );
            }
            out.write_all(text.as_bytes()).map_err(|e| e.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
    fn thread_lists() {
        assert_eq!(
            parse_threads("1,2,4..96").unwrap().0,
            vec![1, 2, 4, 8, 16, 32, 64, 96]
        );
        assert_eq!(parse_threads("3").unwrap().0, vec![3]);
        assert_eq!(parse_threads("8,1,8").unwrap().0, vec![1, 8]);
        assert_eq!(parse_threads("2..2").unwrap().0, vec![2]);
        assert!(parse_threads("0").is_err());
        assert!(parse_threads("8..2").is_err());
        assert!(parse_threads("x").is_err());
        assert!(parse_threads("1,,2").is_err());
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
        let l = resolve_locks(&m.locks);
        assert_eq!(l.len(), 2);
        assert_eq!(l[1].kind, Kind::RwLock);
    }

    #[test]
    fn defaults_and_aliases() {
        let cli = parse(&[]).unwrap();
        assert!(cli.cmd.is_none());
        assert_eq!(cli.default.format, Format::Table);
        let mx = resolve_locks(&["mutexes".into()]);
        assert!(mx.iter().all(|l| l.kind == Kind::Mutex));
        assert!(mx.iter().any(|l| l.name == "spin-ttas"));
        let all = resolve_locks(&["all".into(), "std-mutex".into()]);
        assert_eq!(all.len(), locks::registry().len());
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
