//! `condvar`: a work queue. Producers push items onto a bounded queue under a mutex and
//! `notify_one` its "not empty" condvar; consumers wait on that condvar while the queue is
//! empty, pop, `notify_one` the "not full" condvar, and do `outside_load` pauses of work
//! outside the lock per item; producers wait on "not full" while the queue is full. Both
//! notifications are made with the mutex held (the common pattern; kslock's condvar treats it
//! specially: module doc of `kslock::condvar`, "Signal under the mutex").
//!
//! Threads `0, 2, 4, …` produce, the others consume (at least 2 threads). An operation is one
//! push or one pop; the cell counts items, i.e. pops ([`Workload::UNIT_IS_READ`]: pops are the
//! workload's reads, pushes its writes), so kops/s = thousands of items a second. Producers do
//! no work of their own: the queue is full most of the time and a pop lets one producer in.
//!
//! **Exactly once.** A producer's items are unique (its number and a sequence number). Every
//! thread keeps a count and a checksum (a wrapping sum of a mix of each item) of what it pushed
//! or popped; at the end the pushes must equal the pops plus what is left in the queue, in
//! count and in checksum, or the run fails. Every section also runs the exclusion check.
//!
//! **Stop.** At the end of the window the coordinator closes the queue ([`Workload::stop`]):
//! under the mutex it sets `closed`, then wakes every waiter of both condvars; a waiter that
//! finds the queue closed returns without an item.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::excl::Excl;
use crate::locks::condvar::BenchCondvar;
use crate::runner::{Ctx, Workload};
use crate::util::pause;

/// Items the queue holds at most.
pub const CAPACITY: usize = 64;
/// The condvar consumers wait on.
const NOT_EMPTY: usize = 0;
/// The condvar producers wait on.
const NOT_FULL: usize = 1;

/// The queue's state, guarded by the mutex.
pub struct Queue {
    items: VecDeque<u64>,
    closed: bool,
}

impl Queue {
    fn new() -> Queue {
        Queue {
            items: VecDeque::with_capacity(CAPACITY),
            closed: false,
        }
    }
}

/// What one side pushed or popped (module doc, "Exactly once").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub count: u64,
    pub sum: u64,
}

impl Tally {
    /// Counts `item`.
    #[inline]
    pub fn add(&mut self, item: u64) {
        self.count += 1;
        self.sum = self.sum.wrapping_add(mix(item));
    }
    fn merge(&mut self, o: Tally) {
        self.count += o.count;
        self.sum = self.sum.wrapping_add(o.sum);
    }
}

/// splitmix64's finaliser: a duplicated item and a lost one do not cancel in the sum.
#[inline]
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `Err` unless every pushed item was popped exactly once or is still queued.
pub fn check_exactly_once(pushed: Tally, popped: Tally, left: Tally) -> Result<(), String> {
    let mut out = popped;
    out.merge(left);
    if pushed == out {
        Ok(())
    } else {
        Err(format!(
            "condvar queue: {} items pushed, {} popped and {} left in the queue (checksums {:#x} \
             vs {:#x}): an item was lost or popped twice",
            pushed.count, popped.count, left.count, pushed.sum, out.sum
        ))
    }
}

/// Is thread `tid` a producer (module doc)?
#[inline]
fn is_producer(tid: usize) -> bool {
    tid.is_multiple_of(2)
}

/// A thread's state: its next item and its tally.
pub struct Local {
    next: u64,
    tally: Tally,
}

/// The `condvar` workload on the mutex + condvar pair `C`.
pub struct CondvarWl<C> {
    pair: C,
    excl: Excl,
    cs_load: u32,
    pushed: [AtomicU64; 2],
    popped: [AtomicU64; 2],
}

impl<C: BenchCondvar<Queue>> CondvarWl<C> {
    /// `cs_load` extra pauses inside each section.
    pub fn new(cs_load: u32) -> Self {
        CondvarWl {
            pair: C::new(Queue::new()),
            excl: Excl::default(),
            cs_load,
            pushed: Default::default(),
            popped: Default::default(),
        }
    }

    fn push(&self, ctx: &mut Ctx, l: &mut Local) -> Result<(), String> {
        let mut g = ctx.acquire(|| self.pair.lock());
        while g.items.len() >= CAPACITY {
            if g.closed {
                return Ok(());
            }
            g = self.pair.wait(NOT_FULL, g);
        }
        self.excl.write_enter()?;
        g.items.push_back(l.next);
        pause(self.cs_load);
        self.excl.write_exit()?;
        self.pair.notify_one(NOT_EMPTY);
        drop(g);
        l.tally.add(l.next);
        l.next += 1;
        Ok(())
    }

    fn pop(&self, ctx: &mut Ctx, l: &mut Local) -> Result<(), String> {
        let mut g = ctx.acquire(|| self.pair.lock());
        while g.items.is_empty() {
            if g.closed {
                return Ok(());
            }
            g = self.pair.wait(NOT_EMPTY, g);
        }
        self.excl.write_enter()?;
        let item = g.items.pop_front();
        pause(self.cs_load);
        self.excl.write_exit()?;
        self.pair.notify_one(NOT_FULL);
        drop(g);
        if let Some(item) = item {
            l.tally.add(item);
        }
        Ok(())
    }
}

impl<C: BenchCondvar<Queue>> Workload for CondvarWl<C> {
    type Local = Local;
    const ROLES: bool = true;
    const UNIT_IS_READ: bool = true;
    const STOP_WAKES: bool = true;
    fn handovers(&self) -> Option<u64> {
        Some(self.excl.handovers())
    }
    fn local(&self, tid: usize) -> Local {
        Local {
            next: (tid as u64) << 40,
            tally: Tally::default(),
        }
    }
    /// Consumers read (pop), producers write (push).
    fn role(&self, tid: usize) -> bool {
        !is_producer(tid)
    }
    #[inline]
    fn op(&self, ctx: &mut Ctx, l: &mut Local, read: bool) -> Result<(), String> {
        if read {
            self.pop(ctx, l)
        } else {
            self.push(ctx, l)
        }
    }
    /// A consumer's work on the item it popped.
    #[inline]
    fn outside(&self, ctx: &mut Ctx, outside_load: u32) {
        if !is_producer(ctx.tid) {
            pause(outside_load);
        }
    }
    fn stop(&self) {
        let mut g = self.pair.lock();
        g.closed = true;
        drop(g);
        self.pair.notify_all(NOT_EMPTY);
        self.pair.notify_all(NOT_FULL);
    }
    fn finish(&self, tid: usize, l: Local) {
        let side = if is_producer(tid) {
            &self.pushed
        } else {
            &self.popped
        };
        side[0].fetch_add(l.tally.count, Relaxed);
        // (Wrapping, as `Tally::add`.)
        side[1].fetch_add(l.tally.sum, Relaxed);
    }
    fn check(&self) -> Result<(), String> {
        let load = |s: &[AtomicU64; 2]| Tally {
            count: s[0].load(Relaxed),
            sum: s[1].load(Relaxed),
        };
        let mut left = Tally::default();
        for &item in &self.pair.lock().items {
            left.add(item);
        }
        check_exactly_once(load(&self.pushed), load(&self.popped), left)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_or_doubled_item_fails_the_check() {
        let (mut pushed, mut popped, mut left) = Default::default();
        for i in 0..10u64 {
            Tally::add(&mut pushed, i);
        }
        for i in 0..7u64 {
            Tally::add(&mut popped, i);
        }
        for i in 7..10u64 {
            Tally::add(&mut left, i);
        }
        check_exactly_once(pushed, popped, left).unwrap();
        // Item 3 popped twice and item 8 lost: the counts agree, the checksums do not.
        let mut twice = popped;
        twice.add(3);
        let mut lost = Tally::default();
        lost.add(7);
        lost.add(9);
        let e = check_exactly_once(pushed, twice, lost).unwrap_err();
        assert!(e.contains("lost or popped twice"), "{e}");
        // One item missing altogether.
        assert!(check_exactly_once(pushed, popped, Tally::default()).is_err());
    }
}
