//! The four outputs of a [`Report`]: text, JSON, pprof `profile.proto`, flame graph SVG.

use crate::model::{LockReport, Report};
use crate::pprof;
use crate::symbol::Frame;
use std::collections::HashMap;
use std::fmt::Write as _;

/// `ns` as a short human figure.
pub fn human(ns: u64) -> String {
    match ns {
        0..=9_999 => format!("{ns} ns"),
        10_000..=9_999_999 => format!("{:.1} µs", ns as f64 / 1e3),
        10_000_000..=9_999_999_999 => format!("{:.1} ms", ns as f64 / 1e6),
        _ => format!("{:.2} s", ns as f64 / 1e9),
    }
}

/// How a lock is called in reports: its name, or its region.
pub fn lock_label(l: &LockReport) -> String {
    match &l.name {
        Some(n) => format!("{n} ({} {})", l.kind, l.addr),
        None => format!("{} {} in {}", l.kind, l.addr, l.region),
    }
}

fn frame_line(f: &Frame) -> String {
    match &f.location {
        Some(loc) => format!("{} ({loc})", f.function),
        None => format!("{} [{} {}]", f.function, f.object, f.addr),
    }
}

fn stack_lines(o: &mut String, frames: &[Frame], max: usize) {
    for f in frames.iter().take(max) {
        let _ = writeln!(o, "        {}", frame_line(f));
    }
    if frames.len() > max {
        let _ = writeln!(o, "        … {} more", frames.len() - max);
    }
}

/// The text report (mutrace's shape: one block per lock, most wait first).
pub fn text(r: &Report) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "kslock-stat: process {}: {} locks recorded, {} contended; top {} by total wait (stacks and holds sampled 1 in {})",
        r.pid,
        r.locks_recorded,
        r.locks_contended,
        r.locks.len(),
        r.sample_rate
    );
    for (i, l) in r.locks.iter().enumerate() {
        let _ = writeln!(o, "\n#{} {}", i + 1, lock_label(l));
        let _ = writeln!(
            o,
            "    acquisitions {}  contended {} ({:.1}%)  released with waiters {}",
            l.acquisitions,
            l.contended,
            100.0 * l.contended as f64 / l.acquisitions.max(1) as f64,
            l.released_with_waiters
        );
        let _ = writeln!(
            o,
            "    contended ended: spun {}  yielded {}  slept {}  handoff {}  timed out {}",
            l.spun, l.yielded, l.slept, l.handoff, l.timed_out
        );
        let _ = writeln!(
            o,
            "    wait total {}  max {}  p50 {}  p99 {}  p99.9 {}",
            human(l.wait_total_ns),
            human(l.wait_max_ns),
            human(l.wait_p50_ns),
            human(l.wait_p99_ns),
            human(l.wait_p999_ns)
        );
        let _ = writeln!(
            o,
            "    hold (sampled {}) mean {}  max {}",
            l.hold_samples,
            human(l.hold_mean_ns),
            human(l.hold_max_ns)
        );
        if let Some(f) = &l.first_contended_at {
            let _ = writeln!(o, "    first contended at:");
            stack_lines(&mut o, f, 8);
        }
        if let Some(s) = l.stacks.first() {
            let _ = writeln!(
                o,
                "    waited most at ({} samples, ≈ {} of its wait):",
                s.samples,
                human(s.est_wait_ns)
            );
            stack_lines(&mut o, &s.frames, 8);
        }
    }
    if r.dropped_locks + r.dropped_stacks > 0 {
        let _ = writeln!(
            o,
            "\ntables full: {} contentions and {} stack samples not recorded",
            r.dropped_locks, r.dropped_stacks
        );
    }
    o
}

/// The JSON report.
pub fn json(r: &Report) -> String {
    serde_json::to_string_pretty(r).expect("a report serializes")
}

/// Interns strings for the pprof string table (index 0 is "").
struct Strings {
    table: Vec<String>,
    index: HashMap<String, i64>,
}

impl Strings {
    fn new() -> Self {
        let mut s = Strings {
            table: Vec::new(),
            index: HashMap::new(),
        };
        s.get("");
        s
    }
    fn get(&mut self, v: &str) -> i64 {
        if let Some(&i) = self.index.get(v) {
            return i;
        }
        let i = self.table.len() as i64;
        self.table.push(v.to_string());
        self.index.insert(v.to_string(), i);
        i
    }
}

/// A pprof profile of wait by call stack, as Go's mutex profile: sample types
/// `contentions/count` and `delay/nanoseconds`, each stack's samples scaled to its lock's
/// exact totals, a `lock` label per sample.
pub fn pprof(r: &Report, duration_ns: u64) -> Vec<u8> {
    use prost::Message;
    let mut st = Strings::new();
    let mut functions: Vec<pprof::Function> = Vec::new();
    let mut fn_ids: HashMap<(String, String), u64> = HashMap::new();
    let mut locations: Vec<pprof::Location> = Vec::new();
    let mut loc_ids: HashMap<u64, u64> = HashMap::new();
    let mut samples = Vec::new();
    let lock_key = st.get("lock");
    for l in &r.locks {
        let label = st.get(&lock_label(l));
        for s in &l.stacks {
            let mut ids = Vec::new();
            // One location per return address; its inlined frames are its lines.
            let mut i = 0;
            for &a in &s.addrs {
                let loc = *loc_ids.entry(a).or_insert_with(|| {
                    let id = locations.len() as u64 + 1;
                    locations.push(pprof::Location {
                        id,
                        mapping_id: 0,
                        address: a,
                        line: Vec::new(),
                    });
                    id
                });
                let fresh = locations[loc as usize - 1].line.is_empty();
                let hex = format!("{a:#x}");
                while i < s.frames.len() && s.frames[i].addr == hex {
                    let f = &s.frames[i];
                    if fresh {
                        let (file, line) = match &f.location {
                            Some(l) => match l.rsplit_once(':') {
                                Some((file, n)) => (file.to_string(), n.parse().unwrap_or(0)),
                                None => (l.clone(), 0),
                            },
                            None => (f.object.clone(), 0),
                        };
                        let fid = *fn_ids
                            .entry((f.function.clone(), file.clone()))
                            .or_insert_with(|| {
                                let id = functions.len() as u64 + 1;
                                let name = st.get(&f.function);
                                let filename = st.get(&file);
                                functions.push(pprof::Function {
                                    id,
                                    name,
                                    system_name: name,
                                    filename,
                                });
                                id
                            });
                        locations[loc as usize - 1].line.push(pprof::Line {
                            function_id: fid,
                            line,
                        });
                    }
                    i += 1;
                }
                ids.push(loc);
            }
            samples.push(pprof::Sample {
                location_id: ids,
                value: vec![s.est_contentions as i64, s.est_wait_ns as i64],
                label: vec![pprof::Label {
                    key: lock_key,
                    str: label,
                    num: 0,
                }],
            });
        }
    }
    let contentions = st.get("contentions");
    let count = st.get("count");
    let delay = st.get("delay");
    let nanoseconds = st.get("nanoseconds");
    let comment = st.get("kslock-stat: lock wait by call stack");
    let time_nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64);
    let p = pprof::Profile {
        sample_type: vec![
            pprof::ValueType {
                r#type: contentions,
                unit: count,
            },
            pprof::ValueType {
                r#type: delay,
                unit: nanoseconds,
            },
        ],
        sample: samples,
        mapping: Vec::new(),
        location: locations,
        function: functions,
        string_table: st.table,
        time_nanos,
        duration_nanos: duration_ns as i64,
        period_type: Some(pprof::ValueType {
            r#type: contentions,
            unit: count,
        }),
        period: r.sample_rate as i64,
        comment: vec![comment],
        default_sample_type: delay,
    };
    p.encode_to_vec()
}

/// The folded stacks of the flame graph: outermost frame first, the lock as the leaf, each
/// stack's estimated wait (ns) as its weight.
pub fn folded(r: &Report) -> Vec<String> {
    let mut lines = Vec::new();
    for l in &r.locks {
        let leaf = format!("[{}]", lock_label(l));
        for s in &l.stacks {
            if s.est_wait_ns == 0 {
                continue;
            }
            let mut names: Vec<String> = s
                .frames
                .iter()
                .rev()
                .map(|f| f.function.replace(';', ":"))
                .collect();
            names.push(leaf.replace(';', ":"));
            lines.push(format!("{} {}", names.join(";"), s.est_wait_ns));
        }
    }
    lines
}

/// The flame graph SVG of wait by call stack (inferno).
pub fn flamegraph(r: &Report) -> Result<Vec<u8>, String> {
    let lines = folded(r);
    let mut opt = inferno::flamegraph::Options::default();
    opt.title = format!("kslock-stat: lock wait by call stack (process {})", r.pid);
    opt.count_name = "ns waited".into();
    let mut out = Vec::new();
    if lines.is_empty() {
        // inferno refuses an empty input; say so in the picture instead.
        let l = ["no contended lock sampled 1".to_string()];
        inferno::flamegraph::from_lines(&mut opt, l.iter().map(String::as_str), &mut out)
    } else {
        inferno::flamegraph::from_lines(&mut opt, lines.iter().map(String::as_str), &mut out)
    }
    .map_err(|e| e.to_string())?;
    Ok(out)
}
