//! `file`: fio `randrw` on one shared file, as in seed S2 (module doc of the parent).

use std::cell::UnsafeCell;

use crate::excl::Excl;
use crate::locks::BenchLock;
use crate::runner::{Ctx, Workload};
use crate::util::{pause, CachePadded};

const BLOCK_WORDS: usize = 512; // 4 KiB
const FILE_BLOCKS: u64 = 256;

pub struct FileWl<L> {
    lock: CachePadded<L>,
    excl: Excl,
    blocks: UnsafeCell<Vec<[u64; BLOCK_WORDS]>>,
    cs_load: u32,
}

// SAFETY: `blocks` is only touched under `lock` (shared for reads,
// exclusive for writes), which the exclusion check verifies.
unsafe impl<L: BenchLock> Sync for FileWl<L> {}

impl<L: BenchLock> FileWl<L> {
    pub fn new(cs_load: u32) -> Self {
        FileWl {
            lock: CachePadded(L::new()),
            excl: Excl::default(),
            blocks: UnsafeCell::new(vec![[0u64; BLOCK_WORDS]; FILE_BLOCKS as usize]),
            cs_load,
        }
    }
}

impl<L: BenchLock> Workload for FileWl<L> {
    type Local = Box<[u64; BLOCK_WORDS]>;
    fn handovers(&self) -> Option<u64> {
        Some(self.excl.handovers())
    }
    fn local(&self, _tid: usize) -> Self::Local {
        Box::new([0; BLOCK_WORDS])
    }
    fn op(&self, ctx: &mut Ctx, buf: &mut Self::Local, read: bool) -> Result<(), String> {
        let b = ctx.rng.below(FILE_BLOCKS) as usize;
        if read && L::RW {
            let g = ctx.acquire(|| self.lock.read());
            self.excl.read_enter()?;
            // SAFETY: shared access under the read lock.
            let blocks = unsafe { &*self.blocks.get() };
            buf.copy_from_slice(&blocks[b]);
            pause(self.cs_load);
            self.excl.read_exit()?;
            drop(g);
            std::hint::black_box(&buf);
        } else if read {
            let g = ctx.acquire(|| self.lock.write());
            self.excl.write_enter()?;
            // SAFETY: exclusive access under the lock.
            let blocks = unsafe { &*self.blocks.get() };
            buf.copy_from_slice(&blocks[b]);
            pause(self.cs_load);
            self.excl.write_exit()?;
            drop(g);
            std::hint::black_box(&buf);
        } else {
            let stamp = ctx.rng.next_u64();
            let g = ctx.acquire(|| self.lock.write());
            self.excl.write_enter()?;
            // SAFETY: exclusive access under the write lock.
            let blocks = unsafe { &mut *self.blocks.get() };
            for (i, w) in blocks[b].iter_mut().enumerate() {
                *w = stamp.wrapping_add(i as u64);
            }
            pause(self.cs_load);
            self.excl.write_exit()?;
            drop(g);
        }
        Ok(())
    }
}
