//! `mmap`: an address space under one rwsem (module doc of the parent).

use std::cell::UnsafeCell;
use std::collections::BTreeMap;

use crate::excl::Excl;
use crate::locks::BenchLock;
use crate::runner::{Ctx, Workload};
use crate::util::{pause, CachePadded};

const MMAP_SLOTS: u64 = 1024;
const SLOT_PAGES: u64 = 32;
const PAGE: u64 = 4096;

pub struct MmapWl<L> {
    lock: CachePadded<L>,
    excl: Excl,
    /// start address -> end address of each mapping
    map: UnsafeCell<BTreeMap<u64, u64>>,
    cs_load: u32,
}

// SAFETY: `map` is only touched under `lock`.
unsafe impl<L: BenchLock> Sync for MmapWl<L> {}

impl<L: BenchLock> MmapWl<L> {
    pub fn new(cs_load: u32) -> Self {
        // Half the slots mapped, with varying lengths.
        let map = (0..MMAP_SLOTS)
            .step_by(2)
            .map(|s| {
                let start = s * SLOT_PAGES * PAGE;
                (start, start + (1 + s % SLOT_PAGES) * PAGE)
            })
            .collect();
        MmapWl {
            lock: CachePadded(L::new()),
            excl: Excl::default(),
            map: UnsafeCell::new(map),
            cs_load,
        }
    }

    fn fault(map: &BTreeMap<u64, u64>, addr: u64) -> bool {
        map.range(..=addr)
            .next_back()
            .is_some_and(|(_, &end)| addr < end)
    }
}

impl<L: BenchLock> Workload for MmapWl<L> {
    type Local = u64;
    const EVENT: Option<&'static str> = Some("faults_hit");
    fn handovers(&self) -> Option<u64> {
        Some(self.excl.handovers())
    }
    fn local(&self, _tid: usize) -> u64 {
        0
    }
    fn op(&self, ctx: &mut Ctx, _: &mut u64, read: bool) -> Result<(), String> {
        let addr = ctx.rng.below(MMAP_SLOTS * SLOT_PAGES * PAGE);
        if read && L::RW {
            let g = ctx.acquire(|| self.lock.read());
            self.excl.read_enter()?;
            // SAFETY: shared access under the read lock.
            let hit = Self::fault(unsafe { &*self.map.get() }, addr);
            pause(self.cs_load);
            self.excl.read_exit()?;
            drop(g);
            ctx.events += u64::from(hit);
        } else if read {
            let g = ctx.acquire(|| self.lock.write());
            self.excl.write_enter()?;
            // SAFETY: exclusive access under the lock.
            let hit = Self::fault(unsafe { &*self.map.get() }, addr);
            pause(self.cs_load);
            self.excl.write_exit()?;
            drop(g);
            ctx.events += u64::from(hit);
        } else {
            let start = addr / (SLOT_PAGES * PAGE) * SLOT_PAGES * PAGE;
            let len = (1 + ctx.rng.below(SLOT_PAGES)) * PAGE;
            let g = ctx.acquire(|| self.lock.write());
            self.excl.write_enter()?;
            // SAFETY: exclusive access under the write lock.
            let map = unsafe { &mut *self.map.get() };
            if map.remove(&start).is_none() {
                map.insert(start, start + len);
            }
            pause(self.cs_load);
            self.excl.write_exit()?;
            drop(g);
        }
        Ok(())
    }
}
