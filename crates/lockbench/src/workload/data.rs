//! `data`: critical sections that read or write `lines` cache lines of shared data, so that a
//! handover costs what it costs in a real program: the data moves with the lock.
//!
//! A table of [`SLOTS`] slots, each one cache line, sits behind one lock. An operation draws
//! `lines` random slots (before it takes the lock: the draw is not part of the section), then,
//! holding the lock,
//!
//! * as a writer, read-modify-writes each slot: checks its invariant, then adds one to both of
//!   its words;
//! * as a reader, reads each slot, checks its invariant and folds the slot into a checksum.
//!
//! **Invariant**: a slot's two words are equal whenever no writer is inside. A writer stores
//! the first word, then the second, so a reader or another writer that the lock let in beside
//! it can see them differ; the section then fails the run (as the exclusion check does, which
//! runs too). The words are relaxed atomics: under a broken lock the race is a detected wrong
//! value, not undefined behaviour; on x86_64 their loads and stores are plain moves.
//!
//! The table is 256 KiB: it stays in the caches, and what a section pays is the lines' trips
//! from the CPU of the previous holder.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::excl::Excl;
use crate::locks::BenchLock;
use crate::runner::{Ctx, Workload};
use crate::util::{pause, CachePadded};

/// Slots in the table (one cache line each).
pub const SLOTS: usize = 4096;

/// One cache line of shared data: two words that must be equal (module doc).
#[repr(C, align(64))]
#[derive(Default)]
pub struct Slot {
    a: AtomicU64,
    b: AtomicU64,
}

/// The `data` workload on lock `L`.
pub struct DataWl<L> {
    lock: CachePadded<L>,
    excl: Excl,
    slots: Box<[Slot]>,
    lines: usize,
    cs_load: u32,
}

impl<L: BenchLock> DataWl<L> {
    /// `lines` slots per operation (at least 1, at most [`SLOTS`]), `cs_load` extra pauses
    /// inside each section.
    pub fn new(lines: u32, cs_load: u32) -> Self {
        DataWl {
            lock: CachePadded(L::new()),
            excl: Excl::default(),
            slots: (0..SLOTS).map(|_| Slot::default()).collect(),
            lines: (lines as usize).clamp(1, SLOTS),
            cs_load,
        }
    }
}

/// The invariant failed: a writer was inside beside this section.
#[cold]
fn torn(i: usize, a: u64, b: u64) -> String {
    format!(
        "data slot {i} torn ({a} != {b}): a writer was inside beside this section (the lock \
         let two threads in)"
    )
}

/// Reads `slots[i]` for every `i` in `picks`, checking the invariant; returns the checksum.
#[inline]
fn read_slots(slots: &[Slot], picks: &[u16]) -> Result<u64, String> {
    let mut sum = 0u64;
    for &i in picks {
        let s = &slots[usize::from(i)];
        let (a, b) = (s.a.load(Relaxed), s.b.load(Relaxed));
        if a != b {
            return Err(torn(usize::from(i), a, b));
        }
        sum = sum.rotate_left(5) ^ a;
    }
    Ok(sum)
}

/// Adds one to both words of `slots[i]` for every `i` in `picks`, checking the invariant
/// first.
#[inline]
fn write_slots(slots: &[Slot], picks: &[u16]) -> Result<(), String> {
    for &i in picks {
        let s = &slots[usize::from(i)];
        let (a, b) = (s.a.load(Relaxed), s.b.load(Relaxed));
        if a != b {
            return Err(torn(usize::from(i), a, b));
        }
        s.a.store(a.wrapping_add(1), Relaxed);
        s.b.store(b.wrapping_add(1), Relaxed);
    }
    Ok(())
}

impl<L: BenchLock> Workload for DataWl<L> {
    /// The slots the next operation touches.
    type Local = Vec<u16>;
    fn handovers(&self) -> Option<u64> {
        Some(self.excl.handovers())
    }
    fn local(&self, _tid: usize) -> Vec<u16> {
        vec![0; self.lines]
    }
    #[inline]
    fn op(&self, ctx: &mut Ctx, picks: &mut Vec<u16>, read: bool) -> Result<(), String> {
        for p in picks.iter_mut() {
            *p = ctx.rng.below(SLOTS as u64) as u16;
        }
        if read && L::RW {
            let g = ctx.acquire(|| self.lock.read());
            self.excl.read_enter()?;
            let sum = read_slots(&self.slots, picks)?;
            pause(self.cs_load);
            self.excl.read_exit()?;
            drop(g);
            std::hint::black_box(sum);
        } else {
            let g = ctx.acquire(|| self.lock.write());
            self.excl.write_enter()?;
            if read {
                std::hint::black_box(read_slots(&self.slots, picks)?);
            } else {
                write_slots(&self.slots, picks)?;
            }
            pause(self.cs_load);
            self.excl.write_exit()?;
            drop(g);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<Slot>(), 64);
        assert_eq!(std::mem::align_of::<Slot>(), 64);
    }

    #[test]
    fn writes_keep_the_invariant_and_a_torn_slot_is_caught() {
        let slots: Vec<Slot> = (0..8).map(|_| Slot::default()).collect();
        write_slots(&slots, &[1, 3, 3]).unwrap();
        assert_eq!(slots[3].a.load(Relaxed), 2);
        let sum = read_slots(&slots, &[1, 3]).unwrap();
        assert_ne!(sum, 0);
        // A writer half way through slot 5, as another thread would see it.
        slots[5].a.store(7, Relaxed);
        let e = read_slots(&slots, &[0, 5]).unwrap_err();
        assert!(e.contains("slot 5 torn (7 != 0)"), "{e}");
        assert!(write_slots(&slots, &[5]).is_err());
    }
}
