//! Holds: how the exclusive sections of a timeline group into one thread's turns at the lock,
//! and what its handovers and stretched sections cost (the `holds` lines of
//! `lockbench timeline`).
//!
//! | figure | meaning |
//! |---|---|
//! | handover, same CPU / other CPU | handover gaps (module doc of `lockbench::timeline`) split by whether the new holder entered on the CPU the old one last entered on, with the gaps' sum as a share of the window: a new holder on the same CPU could only run once the old one left it (or was switched out), a new holder on the other CPU was running or woken there |
//! | stints | a thread's exclusive sections in a row, from its first enter to its last exit: how long one thread keeps the lock (a turn, a batch, a single barging section), how many a second, and the share of the stints' time in stints at least [`LONG_STINT`] × the median stint |
//! | return | from the end of a thread's stint to the start of its next one: how long the lock takes to come back to a thread (with many threads, the rotation) |
//! | stretched | exclusive sections at least [`STRETCH`] × the median exclusive section, and their excess over the median as a share of the window: the holder was switched out or interrupted inside its section |

use super::summary::Summary;

/// A stint is long at this many times the median stint (the threshold of
/// [`Holds::long_stint_share`]): a turn that ran past its window several times over.
pub const LONG_STINT: f64 = 4.0;
/// A section is stretched at this many times the median exclusive section: longer than any
/// section's own spread (on the development VM, sections in a run spread by less than 1.5× up
/// to their p99 at CS load 20 and 100), so the holder was switched out or interrupted.
pub const STRETCH: f64 = 8.0;

/// One exclusive section, ns from the window's start: enter, exit, thread, CPU of `enter`.
#[derive(Clone, Copy, Debug)]
pub struct Section {
    pub enter: f64,
    pub exit: f64,
    pub tid: usize,
    pub cpu: u16,
}

/// The holds figures (module doc).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Holds {
    pub same_cpu: Summary,
    /// Sum of the same-CPU handover gaps ÷ the window.
    pub same_cpu_share: f64,
    pub other_cpu: Summary,
    /// Sum of the other-CPU handover gaps ÷ the window.
    pub other_cpu_share: f64,
    pub stints_per_s: f64,
    /// Stint lengths, ns.
    pub stint: Summary,
    /// Mean exclusive sections per stint.
    pub ops_per_stint: f64,
    /// Share of the stints' total time in stints of at least [`LONG_STINT`] × the median.
    pub long_stint_share: f64,
    /// From a thread's stint's end to its next stint's start, ns.
    pub ret: Summary,
    /// Sections of at least [`STRETCH`] × the median exclusive section.
    pub stretched: usize,
    /// Their excess over the median, ÷ the window.
    pub stretched_share: f64,
}

/// The holds of exclusive sections `secs` (in entry order, non-overlapping) in a window of
/// `window` ns; `k` converts the sections' times to ns.
pub fn holds(secs: &[Section], k: f64, window: f64) -> Holds {
    let mut h = Holds::default();
    if secs.is_empty() || window <= 0.0 {
        return h;
    }
    let (mut same, mut other) = (vec![], vec![]);
    // Stints as (thread, first enter, last exit, sections).
    let mut stints: Vec<(usize, f64, f64, usize)> = vec![];
    for (i, s) in secs.iter().enumerate() {
        match stints.last_mut() {
            Some(t) if t.0 == s.tid => {
                t.2 = s.exit;
                t.3 += 1;
            }
            _ => stints.push((s.tid, s.enter, s.exit, 1)),
        }
        if let Some(p) = i.checked_sub(1).map(|j| &secs[j]) {
            if p.tid != s.tid {
                let gap = (s.enter - p.exit) * k;
                if p.cpu == s.cpu {
                    same.push(gap)
                } else {
                    other.push(gap)
                }
            }
        }
    }
    let share = |v: &[f64]| v.iter().sum::<f64>() / window;
    (h.same_cpu_share, h.other_cpu_share) = (share(&same), share(&other));
    (h.same_cpu, h.other_cpu) = (Summary::of(same), Summary::of(other));
    let lens: Vec<f64> = stints.iter().map(|t| (t.2 - t.1) * k).collect();
    h.stints_per_s = stints.len() as f64 * 1e9 / window;
    h.ops_per_stint = secs.len() as f64 / stints.len() as f64;
    h.stint = Summary::of(lens.clone());
    let total: f64 = lens.iter().sum();
    if total > 0.0 {
        let long = h.stint.p50 * LONG_STINT;
        h.long_stint_share = lens.iter().filter(|&&l| l >= long).sum::<f64>() / total;
    }
    let mut last_exit: std::collections::HashMap<usize, f64> = Default::default();
    let mut ret = vec![];
    for t in &stints {
        if let Some(x) = last_exit.insert(t.0, t.2) {
            ret.push((t.1 - x) * k);
        }
    }
    h.ret = Summary::of(ret);
    let sec_lens: Vec<f64> = secs.iter().map(|s| (s.exit - s.enter) * k).collect();
    let median = Summary::of(sec_lens.clone()).p50;
    let stretched: Vec<f64> = sec_lens
        .into_iter()
        .filter(|&l| l >= median * STRETCH)
        .collect();
    h.stretched = stretched.len();
    h.stretched_share = stretched.iter().map(|l| l - median).sum::<f64>() / window;
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn x(enter: f64, exit: f64, tid: usize, cpu: u16) -> Section {
        Section {
            enter,
            exit,
            tid,
            cpu,
        }
    }

    #[test]
    fn stints_handovers_by_cpu_returns_and_stretched_sections() {
        // Thread 0 on CPU 0 holds three sections, hands over to thread 1 on CPU 1 (gap 2),
        // which holds two (one stretched: 100 against a median of 10), then to thread 2 on CPU
        // 1 (same CPU, gap 20), then back to thread 0 on CPU 0 (gap 5).
        let secs = [
            x(0.0, 10.0, 0, 0),
            x(11.0, 21.0, 0, 0),
            x(22.0, 32.0, 0, 0),
            x(34.0, 44.0, 1, 1),
            x(45.0, 145.0, 1, 1),
            x(165.0, 175.0, 2, 1),
            x(180.0, 190.0, 0, 0),
        ];
        let h = holds(&secs, 1.0, 1000.0);
        assert_eq!((h.same_cpu.n, h.same_cpu.p50), (1, 20.0));
        assert_eq!(h.other_cpu.n, 2);
        assert!((h.same_cpu_share - 0.020).abs() < 1e-12, "{h:?}");
        assert!((h.other_cpu_share - 0.007).abs() < 1e-12, "{h:?}");
        // Stints: 0..32, 34..145, 165..175, 180..190: lengths 32, 111, 10, 10.
        assert_eq!(h.stint.n, 4);
        assert!((h.stints_per_s - 4e6).abs() < 1e-6);
        assert!((h.ops_per_stint - 7.0 / 4.0).abs() < 1e-12);
        // Median stint 32 (sorted 10, 10, 32, 111; index 2): none is 4× that but 111 < 128.
        assert_eq!(h.long_stint_share, 0.0);
        // Thread 0 came back after 180 - 32.
        assert_eq!((h.ret.n, h.ret.p50), (1, 148.0));
        // Median section 10: the 100 one is stretched by 90.
        assert_eq!(h.stretched, 1);
        assert!((h.stretched_share - 0.090).abs() < 1e-12, "{h:?}");
    }

    #[test]
    fn a_long_stint_takes_its_share_and_nothing_is_empty() {
        // Four stints of 10 and one of 100 (≥ 4 × the median 10): 100 / 140 of the stint time.
        let mut secs = vec![];
        for (i, len) in [10.0, 10.0, 100.0, 10.0, 10.0].into_iter().enumerate() {
            let t = i as f64 * 200.0;
            secs.push(x(t, t + len, i % 2, 0));
        }
        let h = holds(&secs, 1.0, 1000.0);
        assert!((h.long_stint_share - 100.0 / 140.0).abs() < 1e-12, "{h:?}");
        assert_eq!(holds(&[], 1.0, 1000.0), Holds::default());
    }
}
