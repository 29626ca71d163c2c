//! Application-shaped workloads (`lockbench workload NAME`).
//!
//! * `file` — fio `randrw` on one shared file, as in seed S2: the file is 256
//!   blocks of 4 KiB behind one lock; a reader copies a random block out
//!   under the read lock (`read(2)` into a user buffer), a writer rewrites a
//!   random block under the write lock (`write(2)`). Default mix 50% reads
//!   (fio's `rwmixread`).
//! * `mmap` — an address space under one rwsem (`mmap_lock`): 1024 slots of
//!   32 pages; readers are page faults (find the mapping that contains a
//!   random address, ordered-map predecessor lookup); writers are
//!   mmap/munmap (map a random slot if it is free, unmap it otherwise).
//!   Default mix 90% reads.
//! * `tree` — btrfs/dbench-like lock coupling: a 4-ary tree of depth 3 (85
//!   nodes, one lock each). A descent write-locks the root, then at each
//!   level try-locks the chosen child while still holding the parent
//!   (`try_write_spin`, i.e. kslock's `try_lock_spin`, where the lock has
//!   it); on success it drops the parent, on failure it drops the parent
//!   first and then blocks on the child (the unlock/relock fallback whose cost
//!   seed S3 avoids). The leaf is held for `cs_load` pauses. All operations
//!   are writes. `tree-nospin` (seed S3's A side) uses plain `try_write`.
//! * `random` — the matrix loop (lock, pauses, unlock, pauses) with random
//!   lengths: each critical section and each gap between two operations
//!   draws its pause count from a geometric distribution (the discrete
//!   exponential: memoryless, many short sections and a long tail) whose mean
//!   is `--cs-load` (default 1, 20 and 100) and `--outside-load`. The draw is
//!   made before the lock is taken, so it is not part of the critical
//!   section. A lock tuned to one fixed section length meets every length
//!   here.
//!
//! For the other workloads `--cs-load` adds that many pauses inside every
//! critical section on top of the workload's own work.

use std::cell::UnsafeCell;
use std::collections::BTreeMap;

use crate::locks::{BenchLock, CachePadded};
use crate::runner::{pause, Ctx, Excl, Workload};

/// Default `--cs-load` of each workload.
pub fn default_cs_load(name: &str) -> Vec<u32> {
    match name {
        "random" => vec![1, 20, 100],
        _ => vec![0],
    }
}

/// Default read percentage of each workload.
pub fn default_read_pct(name: &str) -> u32 {
    match name {
        "file" => 50,
        "mmap" => 90,
        _ => 0,
    }
}

// ------------------------------------------------------------ file

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

// ------------------------------------------------------------ mmap

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

// ------------------------------------------------------------ tree

const TREE_FANOUT: usize = 4;
const TREE_DEPTH: usize = 3;
/// Pauses spent "searching" an inner node while holding it.
const TREE_NODE_WORK: u32 = 4;

struct Node<L> {
    lock: L,
    excl: Excl,
}

/// Lock-coupled tree; `SPIN` selects `try_write_spin` for the coupling step.
pub struct TreeWl<L, const SPIN: bool> {
    nodes: Vec<CachePadded<Node<L>>>,
    cs_load: u32,
}

impl<L: BenchLock, const SPIN: bool> TreeWl<L, SPIN> {
    pub fn new(cs_load: u32) -> Self {
        let mut count = 0;
        let mut level = 1;
        for _ in 0..=TREE_DEPTH {
            count += level;
            level *= TREE_FANOUT;
        }
        TreeWl {
            nodes: (0..count)
                .map(|_| {
                    CachePadded(Node {
                        lock: L::new(),
                        excl: Excl::default(),
                    })
                })
                .collect(),
            cs_load,
        }
    }
}

impl<L: BenchLock, const SPIN: bool> Workload for TreeWl<L, SPIN> {
    type Local = ();
    const EVENT: Option<&'static str> = Some("fallbacks");
    fn local(&self, _tid: usize) {}
    /// Summed over the nodes: each node's lock hands over on its own.
    fn handovers(&self) -> Option<u64> {
        Some(self.nodes.iter().map(|n| n.excl.handovers()).sum())
    }
    fn op(&self, ctx: &mut Ctx, _: &mut (), _read: bool) -> Result<(), String> {
        let mut idx = 0;
        let mut node = &self.nodes[0];
        let mut g = ctx.acquire(|| node.lock.write());
        for _ in 0..TREE_DEPTH {
            node.excl.write_enter()?;
            pause(TREE_NODE_WORK);
            node.excl.write_exit()?;
            idx = idx * TREE_FANOUT + 1 + ctx.rng.below(TREE_FANOUT as u64) as usize;
            let child = &self.nodes[idx];
            let got = if SPIN {
                child.lock.try_write_spin()
            } else {
                child.lock.try_write()
            };
            match got {
                Some(cg) => g = cg, // drops the parent after taking the child
                None => {
                    drop(g);
                    ctx.events += 1;
                    g = child.lock.write();
                }
            }
            node = child;
        }
        node.excl.write_enter()?;
        pause(self.cs_load);
        node.excl.write_exit()?;
        drop(g);
        Ok(())
    }
}

// ------------------------------------------------------------ random

/// A geometric draw with mean `mean` (0 for mean 0): the number of failures
/// before the first success at p = 1 / (mean + 1), by inversion of the
/// exponential with rate ln(1 + 1/mean).
#[inline]
pub fn geometric(rng: &mut crate::stats::Rng, mean: u32) -> u32 {
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
        let mut rng = crate::stats::Rng::new(7);
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
