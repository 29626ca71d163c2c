//! One cell's result ([`CellResult`]): what the scoreboard, the report and the exporters read.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Everything measured for one (workload, lock, threads, loads, mix) cell.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CellResult {
    pub workload: String,
    pub lock: String,
    /// "mutex" or "rwlock"
    pub kind: String,
    /// kslock's own lock (not a peer)
    pub ours: bool,
    pub threads: usize,
    pub cs_load: u32,
    pub outside_load: u32,
    pub read_pct: u32,
    /// Cache lines of shared data per section (`data`; 0 elsewhere).
    #[serde(default)]
    pub lines: u32,
    /// Measured window of the median run, seconds.
    pub elapsed_s: f64,
    /// Median over repeats, thousands of operations per second.
    pub kops: f64,
    pub kops_min: f64,
    pub kops_max: f64,
    /// kops/s of every repeat, in run order.
    pub runs_kops: Vec<f64>,
    pub read_kops: f64,
    pub write_kops: f64,
    /// Operations per thread during the median run's window.
    pub thread_ops_min: u64,
    pub thread_ops_mean: f64,
    pub thread_ops_max: u64,
    /// locktorture's rule: max > 2 × min.
    pub starved: bool,
    pub wait_samples: u64,
    pub wait_p50_ns: u64,
    pub wait_p99_ns: u64,
    pub wait_p999_ns: u64,
    pub wait_max_ns: u64,
    /// Voluntary context switches per 1000 operations.
    pub vcsw_per_kop: f64,
    /// Involuntary context switches per 1000 operations.
    pub ivcsw_per_kop: f64,
    /// User + system CPU time per operation, nanoseconds.
    pub cpu_ns_per_op: f64,
    /// CPUs kept busy: the workers' CPU time ÷ the measured window (an idle CPU shows here).
    #[serde(default)]
    pub cpus_busy: f64,
    /// Best single-thread kops/s of this cell config × allowed parallelism.
    pub bound_kops: f64,
    /// kops / bound_kops.
    pub efficiency: f64,
    /// Workload events per 1000 operations (e.g. tree `fallbacks`).
    pub events_per_kop: BTreeMap<String, f64>,
    /// The fastest and slowest cross-CPU line round trip probed around the cell's runs, ns
    /// ([`crate::probe`]; 0 where no probe worked).
    #[serde(default)]
    pub line_rt_ns_min: f64,
    #[serde(default)]
    pub line_rt_ns_max: f64,
}

impl CellResult {
    /// The cell's identity (everything but the lock and the measurements).
    pub fn cell_key(&self) -> (String, usize, u32, u32, u32, u32) {
        (
            self.workload.clone(),
            self.threads,
            self.cs_load,
            self.outside_load,
            self.read_pct,
            self.lines,
        )
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn sample_cell(lock: &str, threads: usize, kops: f64) -> CellResult {
        let mut c = CellResult {
            workload: "matrix".into(),
            lock: lock.into(),
            kind: "mutex".into(),
            ours: lock.starts_with("kslock"),
            threads,
            cs_load: 20,
            kops,
            kops_min: kops * 0.9,
            kops_max: kops * 1.1,
            runs_kops: vec![kops * 0.9, kops, kops * 1.1],
            thread_ops_min: 10,
            thread_ops_mean: 12.5,
            thread_ops_max: 30,
            starved: true,
            wait_p99_ns: 12345,
            cpu_ns_per_op: 1.0 / 3.0,
            efficiency: 0.1 + 0.2,
            line_rt_ns_min: 118.25,
            line_rt_ns_max: 503.5,
            ..CellResult::default()
        };
        c.events_per_kop.insert("fallbacks".into(), 1.25);
        c
    }
}
