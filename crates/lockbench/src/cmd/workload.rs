//! `lockbench workload NAME`: the application-shaped workloads against the peers.

use std::io::Write;

use clap::{Args, ValueEnum};

use crate::args::{lock_parser, parse_threads, RunArgs, ThreadList};
use crate::cmd::matrix::run_groups;
use crate::registry;
use crate::session::Group;
use crate::workload::{
    default_cs_load, default_lines, default_outside_load, default_read_pct, WorkSpec,
};

/// The workloads `lockbench workload` runs.
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
    /// sections that read or read-modify-write --lines random cache lines of a shared table
    Data,
    /// a bounded work queue: producers push, consumers pop and work --outside-load pauses per item
    Condvar,
}

impl WorkloadName {
    /// The loop, its name, and the locks it runs by default.
    pub fn spec(self) -> (WorkSpec, &'static str, &'static str) {
        match self {
            WorkloadName::File => (WorkSpec::File, "file", "rwlocks"),
            WorkloadName::Mmap => (WorkSpec::Mmap, "mmap", "rwlocks"),
            WorkloadName::Tree => (WorkSpec::Tree { spin: true }, "tree", "mutexes"),
            WorkloadName::Random => (WorkSpec::Random, "random", "mutexes"),
            WorkloadName::Data => (WorkSpec::Data, "data", "mutexes"),
            WorkloadName::Condvar => (WorkSpec::Condvar, "condvar", "condvars"),
        }
    }
}

/// `lockbench workload`'s arguments.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct WorkloadArgs {
    pub name: WorkloadName,
    /// Locks [default: rwlocks for file/mmap, mutexes for tree/random/data, the mutexes with a condvar for condvar].
    #[arg(long, value_delimiter = ',', value_parser = lock_parser())]
    pub locks: Vec<String>,
    /// Thread counts, e.g. 1,2,4..96.
    #[arg(long, default_value = "1,2,8,32", value_parser = parse_threads)]
    pub threads: ThreadList,
    /// Extra pause instructions inside each critical section (random: their mean) [default: random 1,20,100, others 0].
    #[arg(long, value_delimiter = ',')]
    pub cs_load: Vec<u32>,
    /// Pause instructions between operations (random: their mean; condvar: a consumer's work per item) [default: condvar 200, others 0].
    #[arg(long, value_delimiter = ',')]
    pub outside_load: Vec<u32>,
    /// Read percent [default: file 50, mmap 90, others 0; condvar: ignored].
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(0..=100))]
    pub read_pct: Vec<u32>,
    /// Cache lines each section touches (data only) [default: 4,32].
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub lines: Vec<u32>,
    #[command(flatten)]
    pub run: RunArgs,
}

/// What one argument's parser cannot check: `--lines` only for `data`; `condvar` needs at
/// least 2 threads and locks with a condvar. `Err` is the usage error's text.
pub fn check(w: &WorkloadArgs) -> Result<(), String> {
    if !w.lines.is_empty() && w.name != WorkloadName::Data {
        return Err("--lines is for the data workload only".into());
    }
    if w.name == WorkloadName::Condvar {
        if w.threads.0.iter().any(|&n| n < 2) {
            return Err("condvar needs at least 2 threads (half produce, half consume)".into());
        }
        let valid = registry::condvar_names();
        if let Some(l) = locks(w).iter().find(|l| l.condvar.is_none()) {
            return Err(format!(
                "{} has no condvar; condvar runs on: {}",
                l.name,
                valid.join(", ")
            ));
        }
    }
    Ok(())
}

/// The locks `w` names, or its workload's default.
fn locks(w: &WorkloadArgs) -> Vec<registry::LockInfo> {
    let (_, _, default_locks) = w.name.spec();
    match (w.locks.is_empty(), default_locks) {
        (true, "condvars") => registry::available(&registry::condvar_names()),
        (true, d) => registry::resolve(&[d.to_string()]),
        (false, _) => registry::resolve(&w.locks),
    }
}

/// `lockbench workload NAME`.
pub fn run(w: &WorkloadArgs, out: &mut dyn Write) -> Result<(), String> {
    let (spec, name, _) = w.name.spec();
    let or = |v: &Vec<u32>, d: Vec<u32>| if v.is_empty() { d } else { v.clone() };
    let read_pcts = if w.name == WorkloadName::Condvar {
        vec![0]
    } else {
        or(&w.read_pct, vec![default_read_pct(name)])
    };
    let mut g = Group::new(
        spec,
        locks(w),
        w.threads.0.clone(),
        or(&w.cs_load, default_cs_load(name)),
        or(&w.outside_load, default_outside_load(name)),
        read_pcts,
    );
    g.lines = or(&w.lines, default_lines(name));
    // A condvar queue needs a producer and a consumer: no 1-thread bound.
    g.calibrate = w.name != WorkloadName::Condvar;
    crate::runner::set_stats(w.run.stats)?;
    let t = w.run.timing(1.0, 0.2);
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
