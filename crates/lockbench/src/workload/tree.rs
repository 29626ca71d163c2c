//! `tree`: lock coupling down a 4-ary tree (module doc of the parent).

use crate::excl::Excl;
use crate::locks::BenchLock;
use crate::runner::{Ctx, Workload};
use crate::util::{pause, CachePadded};

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
