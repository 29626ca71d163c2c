//! `lockbench workload NAME`: the application-shaped workloads against the peers.

use std::io::Write;

use clap::{Args, ValueEnum};

use crate::args::{lock_parser, parse_threads, RunArgs, ThreadList};
use crate::cmd::matrix::run_groups;
use crate::registry;
use crate::session::Group;
use crate::workload::{default_cs_load, default_read_pct, WorkSpec};

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
}

/// `lockbench workload`'s arguments.
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

/// `lockbench workload NAME`.
pub fn run(w: &WorkloadArgs, out: &mut dyn Write) -> Result<(), String> {
    let (spec, name, default_locks) = match w.name {
        WorkloadName::File => (WorkSpec::File, "file", "rwlocks"),
        WorkloadName::Mmap => (WorkSpec::Mmap, "mmap", "rwlocks"),
        WorkloadName::Tree => (WorkSpec::Tree { spin: true }, "tree", "mutexes"),
        WorkloadName::Random => (WorkSpec::Random, "random", "mutexes"),
    };
    let cs_loads = if w.cs_load.is_empty() {
        default_cs_load(name)
    } else {
        w.cs_load.clone()
    };
    let names = if w.locks.is_empty() {
        vec![default_locks.to_string()]
    } else {
        w.locks.clone()
    };
    let read_pcts = if w.read_pct.is_empty() {
        vec![default_read_pct(name)]
    } else {
        w.read_pct.clone()
    };
    let g = Group {
        spec,
        locks: registry::resolve(&names),
        threads: w.threads.0.clone(),
        cs_loads,
        outside_loads: w.outside_load.clone(),
        read_pcts,
    };
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
