//! Order statistics of a set of durations (the timeline's figures).

/// Order statistics of a set of durations, ns.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub p50: f64,
    pub mean: f64,
    pub p90: f64,
    pub p99: f64,
}

impl Summary {
    /// The statistics of `v` (all 0 for none).
    pub fn of(mut v: Vec<f64>) -> Summary {
        if v.is_empty() {
            return Summary::default();
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        Summary {
            n,
            p50: v[n / 2],
            mean: v.iter().sum::<f64>() / n as f64,
            p90: v[n * 9 / 10],
            p99: v[n * 99 / 100],
        }
    }
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.n == 0 {
            return write!(f, "-");
        }
        write!(
            f,
            "median {:.0} mean {:.0} p90 {:.0} p99 {:.0} ns (n {})",
            self.p50, self.mean, self.p90, self.p99, self.n
        )
    }
}
