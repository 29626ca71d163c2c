//! The lock table: [`MAX_LOCKS`] records in a `static`, open-addressed by key (the lock's
//! address with its kind's tag in the low bits), linear probing over at most [`MAX_PROBE`]
//! slots. Keys are claimed by one CAS from 0 and never removed.

use core::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering::*,
};

/// Lock records the table holds (module doc of [`super`], "Memory").
pub const MAX_LOCKS: usize = 4096;
/// Call stacks the stack table holds.
pub const MAX_STACKS: usize = 2048;
/// Frames kept of each call stack (the innermost ones).
pub const MAX_FRAMES: usize = 32;
/// Buckets of the wait histogram: bucket `i` holds waits in [2^i, 2^(i+1)) ns (bucket 0 also
/// 0 ns, the last one everything longer).
pub const HIST_BUCKETS: usize = 40;
/// Slots a lookup or insertion probes before it gives up.
pub(super) const MAX_PROBE: usize = 64;

pub(super) use super::keys::{StatsKey, TAG_RWSEM_READ, TAG_RWSEM_WRITE};
/// The tag bits of a key.
pub(super) const TAG_MASK: usize = 7;

/// Shards of each record's exact counters: the thread that records its `n`-th first record
/// updates shard `n % SHARDS`, lines of its own, so that threads running on different CPUs
/// (up to 16, the largest machine this was measured on) do not pass a counter line back and
/// forth at every contended acquisition or sampled hold; the exact counters cost one local
/// RMW each (acquisitions: module `batch`).
/// 2 KiB per record.
pub(super) const SHARDS: usize = 16;

/// The exact counters one shard of threads updates (a record's figures are the sums over its
/// shards). Relaxed: statistics, read by nothing that orders other memory by them. 128 bytes:
/// x86's spatial prefetcher fetches lines in aligned pairs, so a 64-byte shard would still
/// share its pair with the next one's threads (crossbeam's `CachePadded` pads to 128 there for
/// the same reason).
#[repr(align(128))]
pub(super) struct Shard {
    pub(super) acquisitions: AtomicU64,
    /// Contended acquisitions by outcome: spun, yielded, slept, handoff, timed out (their sum
    /// is the contended count).
    pub(super) outcomes: [AtomicU64; 5],
    pub(super) released_with_waiters: AtomicU64,
    pub(super) wait_total: AtomicU64,
    /// Sampled holds and their total length.
    pub(super) hold_samples: AtomicU64,
    pub(super) hold_total: AtomicU64,
    /// The low 8 bits of the shard's wait histogram counts: the wait that wraps a bucket to 0
    /// adds 256 to the record's [`Record::hist`] (one shared RMW in 256 waits, in the spare
    /// bytes of the shard's lines).
    hist_low: [AtomicU8; HIST_BUCKETS],
}
const _: () = assert!(core::mem::size_of::<Shard>() == 128);

/// One lock's figures (fields: [`super::LockStats`]). All Relaxed: they are statistics, read
/// by nothing that orders other memory by them. Past the shards, the hot paths write only
/// a maximum when it grows (after a load) and a histogram bucket in one wait in 256.
#[repr(align(128))]
pub(super) struct Record {
    pub(super) shards: [Shard; SHARDS],
    pub(super) wait_max: AtomicU64,
    pub(super) hold_max: AtomicU64,
    /// The stack slot + 1 of the lock's first contended acquisition (0: none yet).
    pub(super) first_stack: AtomicU32,
    /// The wait histogram's counts past the shards' low bits, in units of 256
    /// ([`Shard::hist_low`]; a bucket's count is this plus the shards' low bits).
    hist: [AtomicU64; HIST_BUCKETS],
    /// A leaked `&'static str` ([`set_name`]); null: no name. Release/Acquire: the name's
    /// box is written before the pointer is published.
    pub(super) name: AtomicPtr<&'static str>,
}

// The module doc's "Memory" figure (2.4 KiB per record).
const _: () = assert!(core::mem::size_of::<Record>() == 2432);

/// Outcome indexes into [`Shard::outcomes`].
pub(super) const SPUN: usize = 0;
pub(super) const YIELDED: usize = 1;
pub(super) const SLEPT: usize = 2;
pub(super) const HANDOFF: usize = 3;
pub(super) const TIMED_OUT: usize = 4;

impl Shard {
    const fn new() -> Self {
        Shard {
            acquisitions: AtomicU64::new(0),
            outcomes: [const { AtomicU64::new(0) }; 5],
            released_with_waiters: AtomicU64::new(0),
            wait_total: AtomicU64::new(0),
            hold_samples: AtomicU64::new(0),
            hold_total: AtomicU64::new(0),
            hist_low: [const { AtomicU8::new(0) }; HIST_BUCKETS],
        }
    }

    /// Every counter of the shard.
    fn counters(&self) -> impl Iterator<Item = &AtomicU64> {
        [
            &self.acquisitions,
            &self.released_with_waiters,
            &self.wait_total,
            &self.hold_samples,
            &self.hold_total,
        ]
        .into_iter()
        .chain(&self.outcomes)
    }

    /// Zeroes the shard.
    fn reset(&self) {
        for c in self.counters() {
            c.store(0, Relaxed);
        }
        for h in &self.hist_low {
            h.store(0, Relaxed);
        }
    }
}

impl Record {
    const fn new() -> Self {
        Record {
            shards: [const { Shard::new() }; SHARDS],
            wait_max: AtomicU64::new(0),
            hold_max: AtomicU64::new(0),
            first_stack: AtomicU32::new(0),
            hist: [const { AtomicU64::new(0) }; HIST_BUCKETS],
            name: AtomicPtr::new(core::ptr::null_mut()),
        }
    }

    /// The sum of one counter over the shards.
    pub(super) fn sum(&self, f: impl Fn(&Shard) -> &AtomicU64) -> u64 {
        self.shards.iter().map(|s| f(s).load(Relaxed)).sum()
    }

    /// Contended acquisitions: the sum of the outcomes.
    pub(super) fn contended(&self) -> u64 {
        (0..5).map(|i| self.sum(|s| &s.outcomes[i])).sum()
    }

    /// The wait histogram's count in bucket `i`.
    pub(super) fn hist(&self, i: usize) -> u64 {
        let low: u64 = self
            .shards
            .iter()
            .map(|s| s.hist_low[i].load(Relaxed) as u64)
            .sum();
        self.hist[i].load(Relaxed) + low
    }

    /// Adds one contended acquisition that waited `ns` and ended in `outcome` (its
    /// acquisition, if it took the lock, is counted as the others are: module `batch`);
    /// `shard` is the calling thread's.
    pub(super) fn add_wait(&self, shard: usize, ns: u64, outcome: usize) {
        let sh = &self.shards[shard];
        sh.outcomes[outcome].fetch_add(1, Relaxed);
        sh.wait_total.fetch_add(ns, Relaxed);
        grow_max(&self.wait_max, ns);
        let b = bucket(ns);
        if sh.hist_low[b].fetch_add(1, Relaxed) == u8::MAX {
            // The count wrapped to 0: carry 256 (a reader in between sees 256 fewer).
            self.hist[b].fetch_add(256, Relaxed);
        }
    }

    /// Adds one sampled hold of `ns`; `shard` is the calling thread's.
    pub(super) fn add_hold(&self, shard: usize, ns: u64) {
        let sh = &self.shards[shard];
        sh.hold_samples.fetch_add(1, Relaxed);
        sh.hold_total.fetch_add(ns, Relaxed);
        grow_max(&self.hold_max, ns);
    }
}

/// Raises the shared maximum `max` to `ns`: a load first, since a maximum rarely grows and a
/// load leaves its line shared between CPUs.
#[inline(always)]
pub(super) fn grow_max(max: &AtomicU64, ns: u64) {
    if ns > max.load(Relaxed) {
        max.fetch_max(ns, Relaxed);
    }
}

/// The histogram bucket of a wait of `ns`.
pub(super) fn bucket(ns: u64) -> usize {
    ((63 - (ns | 1).leading_zeros()) as usize).min(HIST_BUCKETS - 1)
}

/// Keys by slot (0: free). A slot's key is written once (CAS from 0, Relaxed: the record's
/// counters are atomics of their own, zero from the start, and need no publication).
pub(super) static KEYS: [AtomicUsize; MAX_LOCKS] = [const { AtomicUsize::new(0) }; MAX_LOCKS];
/// Records by slot.
pub(super) static RECORDS: [Record; MAX_LOCKS] = [const { Record::new() }; MAX_LOCKS];
/// Contended acquisitions of locks the full table had no record for.
pub(super) static DROPPED_LOCKS: AtomicU64 = AtomicU64::new(0);
/// One in this many acquisitions samples a hold, and contended ones a stack.
static SAMPLE_RATE: AtomicU32 = AtomicU32::new(64);
/// Whether the hooks record ([`set_enabled`]). Relaxed: it orders nothing; a thread sees a
/// change at its next hook, within the store's propagation.
static ENABLED: AtomicBool = AtomicBool::new(true);

/// Whether statistics are being recorded (the default, in a build with feature `stats`).
/// Inline: the lock paths are generic, instantiated in the caller's crate, where a call
/// would cost more than the load.
#[inline]
pub fn enabled() -> bool {
    ENABLED.load(Relaxed)
}

/// Turns recording on or off for the whole process. Off, each acquisition costs one load of
/// this flag and nothing else: no table probe, no clock, no stack; the figures recorded so
/// far stay readable ([`super::snapshot`]). A hold sampled before the switch still ends at its
/// release (the release hook is not switched), so no hold is charged across an off period.
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Relaxed);
}

/// The first slot of `key`'s probe sequence (Fibonacci hashing of the address).
#[inline(always)]
fn home(key: usize) -> usize {
    (key as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) as usize >> (usize::BITS - 12)
}
const _: () = assert!(MAX_LOCKS == 1 << 12);

/// `key`'s record, if it has one.
#[inline(always)]
pub(super) fn find(key: usize) -> Option<&'static Record> {
    let h = home(key);
    match KEYS[h].load(Relaxed) {
        k if k == key => Some(&RECORDS[h]),
        0 => None,
        _ => find_probe(key, h),
    }
}

/// [`find`] past the home slot.
#[cold]
#[inline(never)]
fn find_probe(key: usize, h: usize) -> Option<&'static Record> {
    for i in 1..MAX_PROBE {
        let s = (h + i) % MAX_LOCKS;
        match KEYS[s].load(Relaxed) {
            k if k == key => return Some(&RECORDS[s]),
            0 => return None,
            _ => {}
        }
    }
    None
}

/// `key`'s record, created if it has none; `None` when its probe sequence is full.
pub(super) fn find_or_insert(key: usize) -> Option<&'static Record> {
    let h = home(key);
    for i in 0..MAX_PROBE {
        let s = (h + i) % MAX_LOCKS;
        let mut k = KEYS[s].load(Relaxed);
        if k == 0 {
            k = match KEYS[s].compare_exchange(0, key, Relaxed, Relaxed) {
                Ok(_) => return Some(&RECORDS[s]),
                Err(x) => x,
            };
        }
        if k == key {
            return Some(&RECORDS[s]);
        }
    }
    None
}

/// Zeroes the records' and stacks' figures ([`super::reset`]).
pub(super) fn reset_records() {
    for (k, r) in KEYS.iter().zip(&RECORDS) {
        if k.load(Relaxed) == 0 {
            continue;
        }
        for c in [&r.wait_max, &r.hold_max].into_iter().chain(&r.hist) {
            c.store(0, Relaxed);
        }
        r.shards.iter().for_each(Shard::reset);
        r.first_stack.store(0, Relaxed);
    }
    for s in &super::stack::STACKS {
        s.count.store(0, Relaxed);
        s.wait_total.store(0, Relaxed);
        s.wait_max.store(0, Relaxed);
    }
    DROPPED_LOCKS.store(0, Relaxed);
    super::stack::DROPPED_STACKS.store(0, Relaxed);
}

/// The sampling rate (module doc of [`super`], "Sampling"): one in this many.
pub fn sample_rate() -> u32 {
    SAMPLE_RATE.load(Relaxed)
}

/// Sets the sampling rate: one hold in `rate` acquisitions, one stack in `rate` contended
/// acquisitions, per thread (1: every one; 0 reads as 1). Threads pick the new rate up at
/// their next sample.
pub fn set_sample_rate(rate: u32) {
    SAMPLE_RATE.store(rate.max(1), Relaxed);
}

/// Names `lock` in reports, and gives it a record now, so that all its acquisitions are
/// counted (not only those after its first contention). An rw-semaphore's read side takes
/// the same name. Allocates (16 bytes per call, kept for the program's life); `false` when
/// the table is full.
pub fn set_name<L: StatsKey + ?Sized>(lock: &L, name: &'static str) -> bool {
    let key = lock.stats_key();
    let keys = if key & TAG_MASK == TAG_RWSEM_WRITE {
        &[key, key - TAG_RWSEM_WRITE + TAG_RWSEM_READ][..]
    } else {
        &[key][..]
    };
    let mut ok = true;
    for &k in keys {
        match find_or_insert(k) {
            Some(r) => {
                let b = Box::into_raw(Box::new(name));
                // Release pairs with the Acquire of `super::snapshot`'s name read.
                r.name.store(b, Release);
            }
            None => ok = false,
        }
    }
    ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_counts_carry_past_the_shards_low_bits() {
        static LOCK: u64 = 0;
        let key = &LOCK as *const u64 as usize;
        let r = find_or_insert(key).expect("a record");
        // 1000 waits in one bucket over two shards: each shard's low byte wraps thrice.
        for i in 0..1000 {
            r.add_wait(i % 2, 100, SPUN);
        }
        r.add_wait(0, 5000, SLEPT);
        assert_eq!(r.hist(bucket(100)), 1000);
        assert_eq!(r.hist(bucket(5000)), 1);
        assert_eq!(r.contended(), 1001);
        assert_eq!(r.wait_max.load(Relaxed), 5000);
    }
}
