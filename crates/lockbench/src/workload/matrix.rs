//! `matrix`: the locktest loop (lock; `cs_load` pauses; unlock), the default run's body.

use crate::excl::Excl;
use crate::locks::BenchLock;
use crate::runner::{Ctx, Workload};
use crate::util::{pause, CachePadded};

/// The locktest loop: lock; `cs_load` pauses (checked); unlock.
pub struct MatrixWl<L> {
    lock: CachePadded<L>,
    excl: Excl,
    cs_load: u32,
}

impl<L: BenchLock> MatrixWl<L> {
    pub fn new(cs_load: u32) -> Self {
        MatrixWl {
            lock: CachePadded(L::new()),
            excl: Excl::default(),
            cs_load,
        }
    }
}

impl<L: BenchLock> Workload for MatrixWl<L> {
    type Local = ();
    fn local(&self, _tid: usize) {}
    fn handovers(&self) -> Option<u64> {
        Some(self.excl.handovers())
    }
    #[inline]
    fn op(&self, ctx: &mut Ctx, _: &mut (), read: bool) -> Result<(), String> {
        if read && L::RW {
            let g = ctx.acquire(|| self.lock.read());
            self.excl.read_enter()?;
            pause(self.cs_load);
            self.excl.read_exit()?;
            drop(g);
        } else {
            let g = ctx.acquire(|| self.lock.write());
            self.excl.write_enter()?;
            pause(self.cs_load);
            self.excl.write_exit()?;
            drop(g);
        }
        Ok(())
    }
}
