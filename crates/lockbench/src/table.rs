//! The human table of a run's cells: one block per cell config, rows per thread count × lock.

use std::io::Write;

use crate::cell::CellResult;
use crate::stats::online_cpus;
use crate::util::fmt_kops;

fn us(ns: u64) -> String {
    let u = ns as f64 / 1000.0;
    if u >= 100.0 {
        format!("{u:.0}")
    } else if u >= 1.0 {
        format!("{u:.1}")
    } else {
        format!("{u:.2}")
    }
}

/// The table's round-trip column: `min-max` ns, one figure when they round alike, `-` with no
/// probe.
fn rt_cell(c: &CellResult) -> String {
    let (lo, hi) = (c.line_rt_ns_min.round(), c.line_rt_ns_max.round());
    match (lo, hi) {
        (l, _) if l <= 0.0 => "-".into(),
        (l, h) if l == h => format!("{l:.0}"),
        (l, h) => format!("{l:.0}-{h:.0}"),
    }
}

/// kslock's lock vs the best peer in the same cell (None for peers or when no
/// peer ran in the cell).
pub fn vs_best_peer(cells: &[CellResult], c: &CellResult) -> Option<f64> {
    if !c.ours {
        return None;
    }
    let best = cells
        .iter()
        .filter(|o| !o.ours && o.cell_key() == c.cell_key())
        .map(|o| o.kops)
        .fold(0.0, f64::max);
    (best > 0.0).then(|| c.kops / best)
}

/// The human table: one block per cell config, rows per thread count × lock.
pub fn write_table(out: &mut dyn Write, cells: &[CellResult]) -> std::io::Result<()> {
    let mut groups: Vec<(String, u32, u32, u32, u32)> = Vec::new();
    for c in cells {
        let k = (
            c.workload.clone(),
            c.cs_load,
            c.outside_load,
            c.read_pct,
            c.lines,
        );
        if !groups.contains(&k) {
            groups.push(k);
        }
    }
    for (wl, cs, outside, read, lines) in groups {
        let lines_txt = if lines > 0 {
            format!(", lines {lines}")
        } else {
            String::new()
        };
        writeln!(
            out,
            "\n== {wl}: cs-load {cs}, outside-load {outside}, read {read}%{lines_txt} =="
        )?;
        writeln!(
            out,
            "{:>4}  {:<38} {:>9} {:>17} {:>5} {:>7}  {:>22}  {:>25}  {:>7} {:>7} {:>7} {:>5} {:>9}",
            "thr",
            "lock",
            "kops/s",
            "(min-max)",
            "eff",
            "vs-peer",
            "ops/thread min/mean/max",
            "wait µs p50/p99/p99.9/max",
            "vcs/kop",
            "ics/kop",
            "cpu ns/op",
            "cpus",
            "rt ns"
        )?;
        let mut block: Vec<&CellResult> = cells
            .iter()
            .filter(|c| {
                c.workload == wl
                    && c.cs_load == cs
                    && c.outside_load == outside
                    && c.read_pct == read
                    && c.lines == lines
            })
            .collect();
        block.sort_by_key(|c| c.threads);
        let mut last_t = 0;
        for c in block {
            if c.threads != last_t && last_t != 0 {
                writeln!(out)?;
            }
            last_t = c.threads;
            let vs = vs_best_peer(cells, c).map_or("-".to_string(), |r| format!("{r:.2}x"));
            let name = if c.kind == "rwlock" && c.read_pct > 0 {
                format!(
                    "{} [r {} / w {}]",
                    c.lock,
                    fmt_kops(c.read_kops),
                    fmt_kops(c.write_kops)
                )
            } else {
                c.lock.clone()
            };
            let mut extra = String::new();
            for (k, v) in &c.events_per_kop {
                extra.push_str(&format!("  {k}/kop {v:.1}"));
            }
            writeln!(
                out,
                "{:>4}  {:<38} {:>9} {:>17} {:>5} {:>7}  {:>22}  {:>25}  {:>7.2} {:>7.2} {:>7.0} {:>5.2} {:>9}{}{}",
                c.threads,
                name,
                fmt_kops(c.kops),
                format!("({}-{})", fmt_kops(c.kops_min), fmt_kops(c.kops_max)),
                // (No bound: the group ran no calibration, e.g. the condvar queue.)
                if c.bound_kops > 0.0 {
                    format!("{:.2}", c.efficiency)
                } else {
                    "-".into()
                },
                vs,
                format!(
                    "{}/{:.0}/{}",
                    c.thread_ops_min, c.thread_ops_mean, c.thread_ops_max
                ),
                format!(
                    "{}/{}/{}/{}",
                    us(c.wait_p50_ns),
                    us(c.wait_p99_ns),
                    us(c.wait_p999_ns),
                    us(c.wait_max_ns)
                ),
                c.vcsw_per_kop,
                c.ivcsw_per_kop,
                c.cpu_ns_per_op,
                c.cpus_busy,
                rt_cell(c),
                if c.starved { "  STARVED" } else { "" },
                extra
            )?;
        }
    }
    writeln!(
        out,
        "\neff = kops/s ÷ bound; bound = best 1-thread kops/s of the cell × 1/((1-r) + r/p), \
         r = read fraction, p = min(threads, {} CPUs). STARVED: max ops/thread > 2 × min. \
         cpus = CPU time of the workers ÷ the measured window. \
         rt ns = the fastest-slowest cross-CPU line round trip probed around the cell's runs \
         (a VM's vCPUs may move between near and far placements: compare cells of one phase). \
         handovers/kop (feature `handovers`): exclusive entries by another thread than the \
         previous exclusive one.",
        online_cpus()
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::tests::sample_cell;

    #[test]
    fn vs_peer_ratio() {
        let cells = vec![
            sample_cell("kslock-mutex", 2, 300.0),
            sample_cell("std-mutex", 2, 100.0),
            sample_cell("pthread-mutex", 2, 150.0),
            sample_cell("std-mutex", 4, 1000.0),
        ];
        assert_eq!(vs_best_peer(&cells, &cells[0]), Some(2.0));
        assert_eq!(vs_best_peer(&cells, &cells[1]), None);
        let mut t = Vec::new();
        write_table(&mut t, &cells).unwrap();
        let t = String::from_utf8(t).unwrap();
        assert!(t.contains("2.00x"), "{t}");
        assert!(t.contains("STARVED"));
        assert!(t.contains(" 118-504"), "the round-trip range: {t}");
    }
}
