//! `random`: the matrix loop with geometric section and gap lengths (module doc of the parent).

use crate::excl::Excl;
use crate::locks::BenchLock;
use crate::runner::{Ctx, Workload};
use crate::stats::Rng;
use crate::util::{pause, CachePadded};

/// A geometric draw with mean `mean` (0 for mean 0): the number of failures
/// before the first success at p = 1 / (mean + 1), by inversion of the
/// exponential with rate ln(1 + 1/mean).
#[inline]
pub fn geometric(rng: &mut Rng, mean: u32) -> u32 {
    if mean == 0 {
        return 0;
    }
    // u in (0, 1]: 53 random bits, never 0 (ln(0) is -inf).
    let u = ((rng.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64;
    let n = -u.ln() / (1.0 + 1.0 / f64::from(mean)).ln();
    n.min(f64::from(u32::MAX)) as u32
}

/// The matrix loop with geometric section and gap lengths (module doc).
pub struct RandomWl<L> {
    lock: CachePadded<L>,
    excl: Excl,
    cs_mean: u32,
}

impl<L: BenchLock> RandomWl<L> {
    pub fn new(cs_mean: u32) -> Self {
        RandomWl {
            lock: CachePadded(L::new()),
            excl: Excl::default(),
            cs_mean,
        }
    }
}

impl<L: BenchLock> Workload for RandomWl<L> {
    type Local = ();
    fn handovers(&self) -> Option<u64> {
        Some(self.excl.handovers())
    }
    fn local(&self, _tid: usize) {}
    #[inline]
    fn op(&self, ctx: &mut Ctx, _: &mut (), read: bool) -> Result<(), String> {
        let n = geometric(&mut ctx.rng, self.cs_mean);
        if read && L::RW {
            let g = ctx.acquire(|| self.lock.read());
            self.excl.read_enter()?;
            pause(n);
            self.excl.read_exit()?;
            drop(g);
        } else {
            let g = ctx.acquire(|| self.lock.write());
            self.excl.write_enter()?;
            pause(n);
            self.excl.write_exit()?;
            drop(g);
        }
        Ok(())
    }
    #[inline]
    fn outside(&self, ctx: &mut Ctx, outside_mean: u32) {
        let n = geometric(&mut ctx.rng, outside_mean);
        pause(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometric_draws_have_the_asked_mean_and_a_long_tail() {
        let mut rng = Rng::new(7);
        assert_eq!(geometric(&mut rng, 0), 0);
        for mean in [1u32, 20, 100] {
            let n = 200_000;
            let draws: Vec<u32> = (0..n).map(|_| geometric(&mut rng, mean)).collect();
            let avg = draws.iter().map(|&d| f64::from(d)).sum::<f64>() / n as f64;
            assert!(
                (avg - f64::from(mean)).abs() < 0.03 * f64::from(mean) + 0.02,
                "mean {mean}: average {avg}"
            );
            // P(X >= 3 × mean) = (1 - p)^(3 × mean): 12.5% for mean 1, → e^-3 ≈ 5% for
            // large means; a fixed length has none.
            let want = (f64::from(mean) / f64::from(mean + 1)).powi(3 * mean as i32);
            let tail = draws.iter().filter(|&&d| d >= 3 * mean).count() as f64 / n as f64;
            assert!(
                (tail / want - 1.0).abs() < 0.1,
                "mean {mean}: tail {tail}, want {want}"
            );
        }
    }
}
