//! `lockbench timeline`: record one cell's stamps, analyse them, print the report (and write
//! the raw stamps).

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use crate::args::single_lock_parser;
use crate::registry::{self, Kind};
use crate::timeline::{analyse, write_raw, write_report, TimelineCfg, MAX_STAMPS};

/// `lockbench timeline`'s arguments.
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

/// What one argument's parser cannot check: that the stamps fit ([`MAX_STAMPS`]). `Err` is
/// the usage error's text.
pub fn check(t: &TimelineArgs) -> Result<(), String> {
    let stamps = u64::from(t.threads) * t.ops;
    if stamps > MAX_STAMPS as u64 {
        return Err(format!(
            "--threads {} × --ops {} = {stamps} stamps; at most {MAX_STAMPS} fit (lower --ops)",
            t.threads, t.ops,
        ));
    }
    Ok(())
}

/// `lockbench timeline`: record, analyse, print (and write the raw stamps).
pub fn run(t: &TimelineArgs, out: &mut dyn Write) -> Result<(), String> {
    let info = registry::find(&t.lock).ok_or_else(|| format!("unknown lock {}", t.lock))?;
    let cfg = TimelineCfg {
        threads: t.threads as usize,
        cs_load: t.cs_load,
        outside_load: t.outside_load,
        read_pct: t.read_pct,
        ops: t.ops as usize,
        pin: t.pin,
    };
    let rec = (info.timeline)(&cfg)?;
    if let Some(path) = &t.raw {
        write_raw(path, &rec).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let rw = info.kind == Kind::RwLock;
    let r = analyse(&rec.threads, rec.ns_per_tick);
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
    write_report(out, &title, rw, &r).map_err(|e| e.to_string())?;
    if r.overlaps > 0 {
        return Err(format!(
            "{} overlapping sections: the lock let two threads in, or the CPUs' clocks disagree",
            r.overlaps
        ));
    }
    Ok(())
}
