//! Per-thread batches of acquisition counts: a thread counts its acquisitions of the locks it
//! uses most recently with plain loads and stores in a slot of its own, and adds a batch to the
//! lock's record only when another lock takes its entry. An acquisition then costs no atomic
//! RMW and no table probe: at CS load 1 the count's probe and RMW were about half of what
//! recording cost (`docs/experiments.md`, "Contention statistics: what recording costs").
//!
//! # Slots
//!
//! [`MAX_THREADS`] slots in a `static` (zero pages until used), handed out once, in order, at
//! a thread's first recorded acquisition and never reused (a thread's exit runs no kslock
//! code: the TLS has no destructor, module `tls`); a thread that finds them all taken counts
//! in the record's shards with one RMW each, as it would without batches. A slot holds
//! [`ENTRIES`] (lock key, count) pairs, the key's entry picked by its hash: the count is the
//! thread's acquisitions of that lock since the entry was claimed. 128 bytes a slot (the
//! shards' line-pair padding, module `table`), 512 KiB in all.
//!
//! # Orderings and accuracy
//!
//! Only the slot's thread writes it; everything is Relaxed (statistics, ordering nothing).
//! A reader ([`pending`]) adds a lock's entries over every slot to its record's shards, so a
//! snapshot of threads that are not locking (or have exited) is exact. While a thread moves an
//! entry's batch to the record (an eviction, three stores) a concurrent reader may count that
//! batch twice or not at all: off by at most one batch per thread, until the next read.

use super::table::{find, Record, TAG_MASK};
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

/// Threads that get a slot (module doc, "Slots").
pub(super) const MAX_THREADS: usize = 4096;
/// (key, count) entries per slot: a thread that alternates between up to this many locks
/// (fewer when their keys collide) keeps them all batched.
const ENTRIES: usize = 8;

/// One thread's entries.
#[repr(align(128))]
pub(super) struct Slot {
    keys: [AtomicUsize; ENTRIES],
    counts: [AtomicU64; ENTRIES],
}
const _: () = assert!(core::mem::size_of::<Slot>() == 128);

static SLOTS: [Slot; MAX_THREADS] = [const {
    Slot {
        keys: [const { AtomicUsize::new(0) }; ENTRIES],
        counts: [const { AtomicU64::new(0) }; ENTRIES],
    }
}; MAX_THREADS];
/// Slots handed out (counts on past [`MAX_THREADS`]: those threads got none).
static HANDED: AtomicUsize = AtomicUsize::new(0);

/// A slot for the calling thread (its index), if any is left.
pub(super) fn claim() -> Option<usize> {
    let i = HANDED.fetch_add(1, Relaxed);
    (i < MAX_THREADS).then_some(i)
}

/// The slots handed out so far.
fn used() -> &'static [Slot] {
    &SLOTS[..HANDED.load(Relaxed).min(MAX_THREADS)]
}

/// The entry of `key` in a slot: Fibonacci hashing of the lock's address, plus the kind's tag
/// (the low bits), so that an rw-semaphore's read and write keys never share an entry.
#[inline(always)]
fn entry(key: usize) -> usize {
    let addr = (key & !TAG_MASK) as u64;
    ((addr.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 61) as usize + (key & TAG_MASK)) % ENTRIES
}
const _: () = assert!(ENTRIES == 1 << 3);

/// Counts one acquisition of `key` in slot `slot` if the slot holds `key`'s entry (the lock
/// fast paths' case); `false` (nothing counted) otherwise.
#[inline(always)]
pub(super) fn bump(slot: usize, key: usize) -> bool {
    let s = &SLOTS[slot];
    let e = entry(key);
    let hit = s.keys[e].load(Relaxed) == key;
    if hit {
        let c = &s.counts[e];
        c.store(c.load(Relaxed) + 1, Relaxed);
    }
    hit
}

/// Counts one acquisition of `key` in slot `slot`; `shard` is the calling thread's (for an
/// eviction).
#[inline(always)]
pub(super) fn count(slot: usize, key: usize, shard: usize) {
    let s = &SLOTS[slot];
    let e = entry(key);
    if s.keys[e].load(Relaxed) == key {
        let c = &s.counts[e];
        c.store(c.load(Relaxed) + 1, Relaxed);
    } else {
        evict(s, e, key, shard);
    }
}

/// Moves entry `e`'s batch to its lock's record (dropped if the lock has none: its
/// acquisitions before its record are not counted, module doc of [`super`]) and gives the
/// entry to `key`, with this acquisition.
#[cold]
#[inline(never)]
fn evict(s: &Slot, e: usize, key: usize, shard: usize) {
    let old = s.keys[e].load(Relaxed);
    let n = s.counts[e].load(Relaxed);
    if n != 0 {
        if let Some(r) = find(old) {
            r.shards[shard].acquisitions.fetch_add(n, Relaxed);
        }
    }
    s.counts[e].store(1, Relaxed);
    s.keys[e].store(key, Relaxed);
}

/// `key`'s acquisitions still in threads' batches.
pub(super) fn pending(key: usize) -> u64 {
    used()
        .iter()
        .flat_map(|s| s.keys.iter().zip(&s.counts))
        .filter(|(k, _)| k.load(Relaxed) == key)
        .map(|(_, c)| c.load(Relaxed))
        .sum()
}

/// Zeroes every batch (`table::reset`'s conditions).
pub(super) fn reset() {
    for c in used().iter().flat_map(|s| &s.counts) {
        c.store(0, Relaxed);
    }
}

impl Record {
    /// The lock's acquisitions: its shards' and those still batched (`key` is the lock's).
    pub(super) fn acquisitions(&self, key: usize) -> u64 {
        self.sum(|s| &s.acquisitions) + pending(key)
    }
}
