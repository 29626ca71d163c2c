//! Cheap measurement helpers: a log-bucketed latency histogram, per-thread
//! resource usage, a per-thread PRNG, and the throughput bound.

use serde::{Deserialize, Serialize};

/// Sub-buckets per power of two: values are kept to within 12.5%.
const SUB_BITS: u32 = 3;
const SUB: usize = 1 << SUB_BITS;
const BUCKETS: usize = 64 * SUB;

/// Log-bucketed histogram of nanosecond values (HDR-style: 8 linear
/// sub-buckets per power of two). Fixed size, no allocation when recording.
#[derive(Clone)]
pub struct Histogram {
    counts: Box<[u64; BUCKETS]>,
    max: u64,
    n: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: Box::new([0; BUCKETS]),
            max: 0,
            n: 0,
        }
    }
}

fn bucket_of(v: u64) -> usize {
    if v < SUB as u64 {
        return v as usize;
    }
    let e = 63 - v.leading_zeros(); // >= SUB_BITS
    let sub = (v >> (e - SUB_BITS)) as usize & (SUB - 1);
    ((e - SUB_BITS + 1) as usize) * SUB + sub
}

/// Lowest value that falls in bucket `b`.
fn bucket_low(b: usize) -> u64 {
    if b < SUB {
        return b as u64;
    }
    let e = (b / SUB) as u32 + SUB_BITS - 1;
    let sub = (b % SUB) as u64;
    (1u64 << e) | (sub << (e - SUB_BITS))
}

impl Histogram {
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.counts[bucket_of(ns)] += 1;
        self.n += 1;
        if ns > self.max {
            self.max = ns;
        }
    }

    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += b;
        }
        self.n += other.n;
        self.max = self.max.max(other.max);
    }

    pub fn count(&self) -> u64 {
        self.n
    }

    /// Value at quantile `q` (0..=1): the low edge of the bucket holding it,
    /// capped by the exact maximum.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.n == 0 {
            return 0;
        }
        let rank = ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        let mut seen = 0;
        for (b, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return bucket_low(b).min(self.max);
            }
        }
        self.max
    }

    pub fn summary(&self) -> WaitSummary {
        WaitSummary {
            samples: self.n,
            p50_ns: self.quantile(0.5),
            p99_ns: self.quantile(0.99),
            p999_ns: self.quantile(0.999),
            max_ns: self.max,
        }
    }
}

/// Acquisition wait percentiles from sampled acquisitions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WaitSummary {
    pub samples: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
}

/// Per-thread resource usage (`getrusage(RUSAGE_THREAD)`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Usage {
    pub cpu_ns: u64,
    pub vcsw: u64,
    pub ivcsw: u64,
}

impl Usage {
    pub fn now() -> Usage {
        // SAFETY: getrusage fills the struct we pass.
        let ru = unsafe {
            let mut ru: libc::rusage = std::mem::zeroed();
            libc::getrusage(libc::RUSAGE_THREAD, &mut ru);
            ru
        };
        let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
        Usage {
            cpu_ns: tv(ru.ru_utime) + tv(ru.ru_stime),
            vcsw: ru.ru_nvcsw as u64,
            ivcsw: ru.ru_nivcsw as u64,
        }
    }

    pub fn since(self, start: Usage) -> Usage {
        Usage {
            cpu_ns: self.cpu_ns.saturating_sub(start.cpu_ns),
            vcsw: self.vcsw.saturating_sub(start.vcsw),
            ivcsw: self.ivcsw.saturating_sub(start.ivcsw),
        }
    }

    pub fn add(&mut self, o: Usage) {
        self.cpu_ns += o.cpu_ns;
        self.vcsw += o.vcsw;
        self.ivcsw += o.ivcsw;
    }
}

/// xorshift64* — a few cycles per draw, per thread, no shared state.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        // splitmix64 of the seed so that neighbouring seeds differ.
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Rng((z ^ (z >> 31)) | 1)
    }
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in `0..n` (multiply-shift, no division).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() >> 32) * n) >> 32
    }
}

/// Parallelism a mix allows on `p = min(threads, cpus)` CPUs when reads run
/// in parallel and writes serialise (Amdahl's law with the write fraction as
/// the serial part):
///
/// ```text
///   r = read fraction (read_pct / 100), p = min(threads, online CPUs)
///   parallelism(r, p) = 1 / ((1 - r) + r / p)
///   bound = best single-thread kops/s of the cell config × parallelism
///   efficiency = measured kops/s / bound
/// ```
///
/// r = 0 (a mutex workload) gives 1: a lock cannot beat one thread running
/// alone. r = 1 gives p. Work outside the critical section (`--outside-load`)
/// also runs in parallel, which this bound ignores, so with outside load an
/// efficiency above 1 is possible and means "the lock is not the bottleneck".
pub fn parallelism(read_pct: u32, threads: usize, cpus: usize) -> f64 {
    let p = threads.min(cpus).max(1) as f64;
    let r = f64::from(read_pct.min(100)) / 100.0;
    1.0 / ((1.0 - r) + r / p)
}

/// See [`parallelism`].
pub fn bound_kops(best_one_thread_kops: f64, read_pct: u32, threads: usize, cpus: usize) -> f64 {
    best_one_thread_kops * parallelism(read_pct, threads, cpus)
}

/// Median of a non-empty slice (mean of the middle two for even lengths).
/// The smallest and largest of `v` (`None` when empty).
pub fn range(v: impl IntoIterator<Item = f64>) -> Option<(f64, f64)> {
    v.into_iter().fold(None, |r, x| {
        Some(r.map_or((x, x), |(lo, hi): (f64, f64)| (lo.min(x), hi.max(x))))
    })
}

pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let n = s.len();
    if n == 0 {
        return 0.0;
    }
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

pub fn online_cpus() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    if n > 0 {
        n as usize
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    }
}

/// Pin the calling thread to one CPU (round-robin over online CPUs).
pub fn pin_to(cpu: usize) {
    // SAFETY: cpu_set_t is plain data; sched_setaffinity reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_is_the_smallest_and_largest() {
        assert_eq!(range([]), None);
        assert_eq!(range([3.0]), Some((3.0, 3.0)));
        assert_eq!(range([3.0, -1.5, 7.25, 2.0]), Some((-1.5, 7.25)));
    }

    #[test]
    fn buckets_round_trip() {
        for v in [0u64, 1, 7, 8, 9, 15, 16, 100, 1000, 12345, 1 << 40] {
            let b = bucket_of(v);
            assert!(bucket_low(b) <= v, "{v}");
            assert!(bucket_of(bucket_low(b)) == b, "{v}");
            if b + 1 < BUCKETS {
                assert!(bucket_low(b + 1) > v, "{v}");
            }
        }
    }

    #[test]
    fn quantiles() {
        let mut h = Histogram::default();
        for v in 1..=1000u64 {
            h.record(v);
        }
        let s = h.summary();
        assert_eq!(s.samples, 1000);
        assert_eq!(s.max_ns, 1000);
        assert!((448..=500).contains(&s.p50_ns), "{}", s.p50_ns);
        assert!((880..=990).contains(&s.p99_ns), "{}", s.p99_ns);
        let mut h2 = Histogram::default();
        h2.record(5000);
        h.merge(&h2);
        assert_eq!(h.summary().max_ns, 5000);
        assert_eq!(Histogram::default().summary(), WaitSummary::default());
    }

    #[test]
    fn bound_formula() {
        // mutex mix: no parallelism at any thread count
        assert_eq!(parallelism(0, 32, 2), 1.0);
        // all reads: p = min(threads, cpus)
        assert_eq!(parallelism(100, 32, 2), 2.0);
        assert_eq!(parallelism(100, 1, 2), 1.0);
        assert_eq!(parallelism(100, 8, 16), 8.0);
        // 50% reads on 2 CPUs: 1 / (0.5 + 0.25) = 4/3
        assert!((parallelism(50, 8, 2) - 4.0 / 3.0).abs() < 1e-12);
        // 90% reads on 2 CPUs: 1 / (0.1 + 0.45)
        assert!((parallelism(90, 2, 2) - 1.0 / 0.55).abs() < 1e-12);
        assert!((bound_kops(1000.0, 50, 8, 2) - 4000.0 / 3.0).abs() < 1e-9);
        // one thread: the bound is the best single-thread throughput
        assert_eq!(bound_kops(1234.0, 90, 1, 2), 1234.0);
    }

    #[test]
    fn rng_below_is_in_range_and_spread() {
        let mut r = Rng::new(1);
        let mut hits = [0u32; 100];
        for _ in 0..100_000 {
            hits[r.below(100) as usize] += 1;
        }
        assert!(hits.iter().all(|&h| h > 700 && h < 1300));
    }

    #[test]
    fn median_works() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }
}
