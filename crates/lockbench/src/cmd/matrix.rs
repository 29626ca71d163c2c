//! `lockbench matrix`: locks × threads × loads × read mixes of the matrix loop; and
//! [`run_groups`], which every table-printing command uses to run its groups and print them.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use crate::args::{lock_parser, parse_threads, Format, RunArgs, ThreadList};
use crate::registry;
use crate::results::{to_csv, Sink};
use crate::session::{Group, Session, Timing};
use crate::table::write_table;
use crate::workload::WorkSpec;

/// `lockbench matrix`'s arguments.
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

/// `lockbench matrix`.
pub fn run(m: &MatrixArgs, out: &mut dyn Write) -> Result<(), String> {
    let g = Group::new(
        WorkSpec::Matrix,
        registry::resolve(&m.locks),
        m.threads.0.clone(),
        m.cs_load.clone(),
        m.outside_load.clone(),
        m.read_pct.clone(),
    );
    crate::runner::set_stats(m.run.stats)?;
    let t = m.run.timing(1.0, 0.2);
    run_groups("matrix", &[g], &t, m.run.out.clone(), m.run.format, out).map(|_| ())
}
