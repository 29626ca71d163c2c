//! The report of a run (its cells, the environment record, the scoreboard) and the exporters
//! (JSON, CSV, SVG).
//!
//! One [`Report`] feeds every output. [`Sink`] rewrites the export files after
//! each cell, so an interrupted run keeps everything measured so far.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::cell::CellResult;
use crate::scoreboard::Scoreboard;
use crate::util::fmt_kops;

/// Where and how the results were obtained.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Env {
    pub cpu_model: String,
    pub online_cpus: usize,
    pub kernel: String,
    pub rustc: String,
    pub git_commit: String,
    pub features: Vec<String>,
    /// "release" or "debug" (debug numbers are meaningless).
    pub profile: String,
    pub command_line: Vec<String>,
    pub started_utc: String,
}

impl Env {
    pub fn capture() -> Env {
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        #[allow(unused_mut)]
        let mut features = Vec::new();
        #[cfg(feature = "kslock")]
        features.push("kslock".to_string());
        Env {
            cpu_model,
            online_cpus: crate::stats::online_cpus(),
            kernel: kernel_release(),
            rustc: env!("LOCKBENCH_RUSTC").to_string(),
            git_commit: env!("LOCKBENCH_GIT").to_string(),
            features,
            profile: if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            }
            .into(),
            command_line: std::env::args().collect(),
            started_utc: utc_timestamp(std::time::SystemTime::now(), true),
        }
    }
}

fn kernel_release() -> String {
    // SAFETY: uname fills the struct; its fields are NUL-terminated.
    unsafe {
        let mut u: libc::utsname = std::mem::zeroed();
        if libc::uname(&mut u) != 0 {
            return "unknown".into();
        }
        let f = |s: &[libc::c_char]| {
            std::ffi::CStr::from_ptr(s.as_ptr())
                .to_string_lossy()
                .into_owned()
        };
        format!("{} {} {}", f(&u.sysname), f(&u.release), f(&u.machine))
    }
}

/// UTC time as `2026-05-01T12:34:56Z` (`iso`) or `20260501T123456Z`.
pub fn utc_timestamp(t: std::time::SystemTime, iso: bool) -> String {
    let secs = t
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86400), secs.rem_euclid(86400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let (hh, mm, ss) = (rem / 3600, rem / 60 % 60, rem % 60);
    if iso {
        format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}Z")
    } else {
        format!("{y:04}{m:02}{d:02}T{hh:02}{mm:02}{ss:02}Z")
    }
}

/// A whole run: the environment plus every cell measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub tool: String,
    pub version: String,
    /// "default", "matrix", "seeds", "workload file", ...
    pub experiment: String,
    pub env: Env,
    pub cells: Vec<CellResult>,
    /// Single-thread calibrations behind the bounds (cells whose config had
    /// no 1-thread run in the matrix).
    #[serde(default)]
    pub calibration: Vec<Calibration>,
    /// Interleaved repeats per cell (the cells report their median).
    #[serde(default)]
    pub repeats: usize,
    /// kslock against the best peer, per lock family (rebuilt from `cells` on every write).
    #[serde(default)]
    pub scoreboard: Scoreboard,
    /// The fairness runs: one run of at least a second per cell, kslock's locks only, that
    /// the scoreboard judges STARVED by (`scoreboard` module doc).
    #[serde(default)]
    pub fairness: Vec<CellResult>,
    /// Uncontended lock + unlock pairs (the suite's kslock and parking_lot locks).
    #[serde(default)]
    pub uncontended: Vec<crate::uncontended::PairResult>,
    /// The run's wall time, seconds (0: not recorded, or the run was cut short).
    #[serde(default)]
    pub wall_s: f64,
}

/// Best single-thread throughput of one cell config.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    pub workload: String,
    pub cs_load: u32,
    pub outside_load: u32,
    pub read_pct: u32,
    #[serde(default)]
    pub lines: u32,
    pub best_lock: String,
    pub kops: f64,
}

impl Report {
    pub fn new(experiment: &str) -> Report {
        Report {
            tool: "lockbench".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            experiment: experiment.into(),
            env: Env::capture(),
            cells: Vec::new(),
            calibration: Vec::new(),
            repeats: 1,
            scoreboard: Default::default(),
            fairness: Vec::new(),
            uncontended: Vec::new(),
            wall_s: 0.0,
        }
    }

    /// Recomputes the scoreboard from the cells.
    pub fn update_scoreboard(&mut self) {
        self.scoreboard = Scoreboard::of_run(&self.cells, &self.fairness);
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("report serialises")
    }

    pub fn from_json(s: &str) -> Result<Report, String> {
        serde_json::from_str(s).map_err(|e| e.to_string())
    }

    pub fn load(path: &Path) -> Result<Report, String> {
        let s = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Report::from_json(&s)
            .map_err(|e| format!("{}: not a lockbench JSON report: {e}", path.display()))
    }
}

// ------------------------------------------------------------ CSV

/// One CSV row: [`CellResult`] without its list fields; events are written as
/// `name=per_kop;...`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CsvRow {
    pub workload: String,
    pub lock: String,
    pub kind: String,
    pub ours: bool,
    pub threads: usize,
    pub cs_load: u32,
    pub outside_load: u32,
    pub read_pct: u32,
    pub elapsed_s: f64,
    pub kops: f64,
    pub kops_min: f64,
    pub kops_max: f64,
    pub repeats: usize,
    pub read_kops: f64,
    pub write_kops: f64,
    pub thread_ops_min: u64,
    pub thread_ops_mean: f64,
    pub thread_ops_max: u64,
    pub starved: bool,
    pub wait_samples: u64,
    pub wait_p50_ns: u64,
    pub wait_p99_ns: u64,
    pub wait_p999_ns: u64,
    pub wait_max_ns: u64,
    pub vcsw_per_kop: f64,
    pub ivcsw_per_kop: f64,
    pub cpu_ns_per_op: f64,
    pub cpus_busy: f64,
    pub bound_kops: f64,
    pub efficiency: f64,
    pub events_per_kop: String,
    #[serde(default)]
    pub line_rt_ns_min: f64,
    #[serde(default)]
    pub line_rt_ns_max: f64,
    /// Cache lines per section (`data`; 0 elsewhere).
    #[serde(default)]
    pub lines: u32,
}

impl From<&CellResult> for CsvRow {
    fn from(c: &CellResult) -> CsvRow {
        CsvRow {
            workload: c.workload.clone(),
            lock: c.lock.clone(),
            kind: c.kind.clone(),
            ours: c.ours,
            threads: c.threads,
            cs_load: c.cs_load,
            outside_load: c.outside_load,
            read_pct: c.read_pct,
            elapsed_s: c.elapsed_s,
            kops: c.kops,
            kops_min: c.kops_min,
            kops_max: c.kops_max,
            repeats: c.runs_kops.len(),
            read_kops: c.read_kops,
            write_kops: c.write_kops,
            thread_ops_min: c.thread_ops_min,
            thread_ops_mean: c.thread_ops_mean,
            thread_ops_max: c.thread_ops_max,
            starved: c.starved,
            wait_samples: c.wait_samples,
            wait_p50_ns: c.wait_p50_ns,
            wait_p99_ns: c.wait_p99_ns,
            wait_p999_ns: c.wait_p999_ns,
            wait_max_ns: c.wait_max_ns,
            vcsw_per_kop: c.vcsw_per_kop,
            ivcsw_per_kop: c.ivcsw_per_kop,
            cpu_ns_per_op: c.cpu_ns_per_op,
            cpus_busy: c.cpus_busy,
            bound_kops: c.bound_kops,
            efficiency: c.efficiency,
            events_per_kop: c
                .events_per_kop
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(";"),
            line_rt_ns_min: c.line_rt_ns_min,
            line_rt_ns_max: c.line_rt_ns_max,
            lines: c.lines,
        }
    }
}

pub fn to_csv(cells: &[CellResult]) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    if cells.is_empty() {
        // Still emit the header so an empty file is self-describing.
        let hdr = csv_header();
        w.write_record(&hdr).expect("csv header");
    }
    for c in cells {
        w.serialize(CsvRow::from(c)).expect("csv row");
    }
    String::from_utf8(w.into_inner().expect("csv flush")).expect("utf8 csv")
}

fn csv_header() -> Vec<String> {
    // Serialise a dummy row and keep only the header line.
    let mut w = csv::Writer::from_writer(Vec::new());
    let dummy = CsvRow::from(&CellResult::default());
    w.serialize(dummy).expect("csv");
    let s = String::from_utf8(w.into_inner().expect("csv")).expect("utf8");
    s.lines()
        .next()
        .unwrap_or("")
        .split(',')
        .map(str::to_string)
        .collect()
}

pub fn from_csv(s: &str) -> Result<Vec<CsvRow>, String> {
    csv::Reader::from_reader(s.as_bytes())
        .deserialize()
        .collect::<Result<Vec<CsvRow>, _>>()
        .map_err(|e| e.to_string())
}

// ------------------------------------------------------------ SVG

const PALETTE: [&str; 12] = [
    "#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#000000", "#aec7e8",
];

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// kops/s against threads (log scale), one line per lock, one panel per
/// (workload, critical-section load, outside load, read %, lines) — columns are
/// critical-section loads. kslock's lines are drawn thicker.
pub fn to_svg(cells: &[CellResult]) -> String {
    type PanelKey = (String, u32, u32, u32);
    let mut cs_loads: Vec<u32> = cells.iter().map(|c| c.cs_load).collect();
    cs_loads.sort_unstable();
    cs_loads.dedup();
    let mut rows: Vec<PanelKey> = cells
        .iter()
        .map(|c| (c.workload.clone(), c.read_pct, c.outside_load, c.lines))
        .collect();
    rows.sort();
    rows.dedup();
    let mut locks: Vec<(bool, String)> = Vec::new();
    for c in cells {
        if !locks.iter().any(|(_, l)| *l == c.lock) {
            locks.push((c.ours, c.lock.clone()));
        }
    }
    let color = |lock: &str| {
        let i = locks.iter().position(|(_, l)| l == lock).unwrap_or(0);
        PALETTE[i % PALETTE.len()]
    };

    let (pw, ph) = (380.0, 260.0);
    let (ml, mr, mt, mb) = (60.0, 15.0, 30.0, 40.0);
    let legend_h = 20.0 * locks.len().div_ceil(4) as f64 + 10.0;
    let width = pw * cs_loads.len().max(1) as f64;
    let height = ph * rows.len().max(1) as f64 + legend_h;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    for (i, (ours, lock)) in locks.iter().enumerate() {
        let (x, y) = (10.0 + 180.0 * (i % 4) as f64, 15.0 + 20.0 * (i / 4) as f64);
        let sw = if *ours { 3.0 } else { 1.5 };
        let _ = writeln!(
            s,
            r#"<line x1="{x}" y1="{y}" x2="{}" y2="{y}" stroke="{}" stroke-width="{sw}"/><text x="{}" y="{}">{}</text>"#,
            x + 20.0,
            color(lock),
            x + 25.0,
            y + 4.0,
            xml_escape(lock)
        );
    }
    for (ri, (wl, read_pct, outside, lines)) in rows.iter().enumerate() {
        for (ci, cs) in cs_loads.iter().enumerate() {
            let panel: Vec<&CellResult> = cells
                .iter()
                .filter(|c| {
                    c.workload == *wl
                        && c.read_pct == *read_pct
                        && c.outside_load == *outside
                        && c.lines == *lines
                        && c.cs_load == *cs
                })
                .collect();
            if panel.is_empty() {
                continue;
            }
            let (ox, oy) = (pw * ci as f64, legend_h + ph * ri as f64);
            let (x0, x1, y0, y1) = (ox + ml, ox + pw - mr, oy + ph - mb, oy + mt);
            let mut threads: Vec<usize> = panel.iter().map(|c| c.threads).collect();
            threads.sort_unstable();
            threads.dedup();
            let (tmin, tmax) = (threads[0] as f64, *threads.last().unwrap() as f64);
            let ymax = panel
                .iter()
                .map(|c| c.kops_max.max(c.kops))
                .fold(0.0, f64::max)
                * 1.1;
            let ymax = if ymax > 0.0 { ymax } else { 1.0 };
            let xp = |t: usize| {
                if tmax > tmin {
                    x0 + (x1 - x0) * ((t as f64).log2() - tmin.log2()) / (tmax.log2() - tmin.log2())
                } else {
                    (x0 + x1) / 2.0
                }
            };
            let yp = |k: f64| y0 - (y0 - y1) * k / ymax;
            let _ = writeln!(
                s,
                r#"<text x="{}" y="{}" text-anchor="middle" font-weight="bold">{} · cs-load {} · read {}% · outside {}{}</text>"#,
                (x0 + x1) / 2.0,
                oy + 18.0,
                xml_escape(wl),
                cs,
                read_pct,
                outside,
                if *lines > 0 {
                    format!(" · lines {lines}")
                } else {
                    String::new()
                }
            );
            let _ = writeln!(
                s,
                r#"<path d="M{x0},{y1} L{x0},{y0} L{x1},{y0}" fill="none" stroke="black"/>"#
            );
            for &t in &threads {
                let _ = writeln!(
                    s,
                    r#"<text x="{:.1}" y="{}" text-anchor="middle">{t}</text>"#,
                    xp(t),
                    y0 + 14.0
                );
            }
            let _ = writeln!(
                s,
                r#"<text x="{}" y="{}" text-anchor="middle">threads</text>"#,
                (x0 + x1) / 2.0,
                y0 + 30.0
            );
            for i in 0..=4 {
                let k = ymax / 1.1 * f64::from(i) / 4.0;
                let _ = writeln!(
                    s,
                    r##"<line x1="{x0}" y1="{y:.1}" x2="{x1}" y2="{y:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
                    x0 - 4.0,
                    yp(k) + 4.0,
                    fmt_kops(k),
                    y = yp(k)
                );
            }
            let _ = writeln!(
                s,
                r#"<text x="{}" y="{}" transform="rotate(-90 {} {})" text-anchor="middle">kops/s</text>"#,
                ox + 12.0,
                (y0 + y1) / 2.0,
                ox + 12.0,
                (y0 + y1) / 2.0
            );
            for (ours, lock) in &locks {
                let mut pts: Vec<(usize, f64)> = panel
                    .iter()
                    .filter(|c| c.lock == *lock)
                    .map(|c| (c.threads, c.kops))
                    .collect();
                if pts.is_empty() {
                    continue;
                }
                pts.sort_by_key(|p| p.0);
                let d: Vec<String> = pts
                    .iter()
                    .map(|&(t, k)| format!("{:.1},{:.1}", xp(t), yp(k)))
                    .collect();
                let sw = if *ours { 3.0 } else { 1.5 };
                let _ = writeln!(
                    s,
                    r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="{sw}"><title>{}</title></polyline>"#,
                    d.join(" "),
                    color(lock),
                    xml_escape(lock)
                );
            }
        }
    }
    s.push_str("</svg>\n");
    s
}

// ------------------------------------------------------------ sink

/// Export directory that is rewritten after every cell.
pub struct Sink {
    pub dir: Option<PathBuf>,
}

impl Sink {
    pub fn new(dir: Option<PathBuf>) -> Result<Sink, String> {
        if let Some(d) = &dir {
            std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
        }
        Ok(Sink { dir })
    }

    /// Write results.json, results.csv and plot.svg (atomically: write to a
    /// temporary name, then rename).
    pub fn write(&self, report: &Report) -> Result<(), String> {
        let Some(dir) = &self.dir else { return Ok(()) };
        let put = |name: &str, data: String| -> Result<(), String> {
            let tmp = dir.join(format!(".{name}.tmp"));
            let dst = dir.join(name);
            std::fs::write(&tmp, data).map_err(|e| format!("{}: {e}", tmp.display()))?;
            std::fs::rename(&tmp, &dst).map_err(|e| format!("{}: {e}", dst.display()))
        };
        put("results.json", report.to_json())?;
        put("results.csv", to_csv(&report.cells))?;
        put("plot.svg", to_svg(&report.cells))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::tests::sample_cell;

    #[test]
    fn json_round_trip() {
        let mut r = Report::new("test");
        r.cells.push(sample_cell("std-mutex", 2, 1234.5678));
        r.cells.push(sample_cell("kslock-mutex", 4, 0.1));
        let back = Report::from_json(&r.to_json()).unwrap();
        assert_eq!(back, r);
        assert!(Report::from_json("{}").is_err());
    }

    #[test]
    fn csv_round_trip() {
        let cells = vec![
            sample_cell("std-mutex", 2, 1234.5678),
            sample_cell("pthread-mutex", 32, 1.0 / 7.0),
        ];
        let text = to_csv(&cells);
        let rows = from_csv(&text).unwrap();
        let want: Vec<CsvRow> = cells.iter().map(CsvRow::from).collect();
        assert_eq!(rows, want);
        assert_eq!(rows[0].events_per_kop, "fallbacks=1.25");
        // empty result sets still carry the header
        let empty = to_csv(&[]);
        assert!(empty.starts_with("workload,lock,kind,"));
        assert!(from_csv(&empty).unwrap().is_empty());
    }

    #[test]
    fn svg_has_a_line_per_lock_and_panel() {
        let mut cells = vec![];
        for cs in [1, 100] {
            for t in [1, 2, 8] {
                for l in ["std-mutex", "pthread-mutex"] {
                    let mut c = sample_cell(l, t, 100.0 * t as f64);
                    c.cs_load = cs;
                    cells.push(c);
                }
            }
        }
        let svg = to_svg(&cells);
        assert!(svg.starts_with("<svg"));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), 4);
        assert!(svg.contains("cs-load 100"));
        assert!(!svg.contains("NaN"));
        // a single-point panel still renders
        assert!(!to_svg(&cells[..1]).contains("NaN"));
    }

    #[test]
    fn timestamps() {
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(951_782_400 + 3661);
        assert_eq!(utc_timestamp(t, true), "2000-02-29T01:01:01Z");
        assert_eq!(utc_timestamp(t, false), "20000229T010101Z");
    }

    #[test]
    fn sink_rewrites_files() {
        let dir = std::env::temp_dir().join(format!("lockbench-sink-{}", std::process::id()));
        let sink = Sink::new(Some(dir.clone())).unwrap();
        let mut r = Report::new("test");
        sink.write(&r).unwrap();
        r.cells.push(sample_cell("std-mutex", 2, 5.0));
        sink.write(&r).unwrap();
        let back = Report::load(&dir.join("results.json")).unwrap();
        assert_eq!(back.cells.len(), 1);
        let csv = std::fs::read_to_string(dir.join("results.csv")).unwrap();
        assert_eq!(from_csv(&csv).unwrap().len(), 1);
        assert!(std::fs::read_to_string(dir.join("plot.svg"))
            .unwrap()
            .contains("<polyline"));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
