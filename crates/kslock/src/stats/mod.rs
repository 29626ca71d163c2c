//! Contention statistics per lock and per call stack (feature `stats`; without it this module
//! has no public items and its hooks compile to nothing).
//!
//! Which lock is contended, how often, how long its waiters wait and hold it, how each
//! contended acquisition ended, and the call stacks that waited: the kernel's
//! `CONFIG_LOCK_STAT` and Go's mutex profile, for kslock's locks. [`snapshot`] reads the
//! figures, [`report`] formats the top locks as text, [`Snapshot::to_json`] as JSON;
//! [`set_name`] labels a lock; [`set_enabled`] turns recording off and on at run time.
//! `kslock-stat` (crate `crates/kslock-stat`) gives the same for any dynamically linked
//! program, through the pthread preload ([`write_raw`] is its dump).
//!
//! ```
//! # #[cfg(feature = "stats")] {
//! let m = kslock::Mutex::new(0);
//! kslock::stats::set_name(&m, "counter");
//! *m.lock() += 1;
//! let s = kslock::stats::snapshot();
//! assert_eq!(s.get(&m).unwrap().acquisitions, 1);
//! # }
//! ```
//!
//! # Where it records
//!
//! Only at the API boundary and at the outcomes every lock design has, so that the lock
//! algorithms can change beneath it:
//!
//! | hook | where | what it records |
//! |------|-------|-----------------|
//! | `acquired` | a fast path (or try-lock) that took the lock | one acquisition; a sampled hold starts |
//! | `contended` … `Wait::acquired` / `Wait::done` | around the slow-path call | one contended acquisition, its wait, its outcome, a sampled stack |
//! | `note` | the futex wait (slept), the scheduler yield (yielded), a handed-over pickup (handoff) | the outcome of the wait in progress |
//! | `released` | an unlock | the end of a sampled hold |
//! | `released_with_waiters` | an unlock that takes the slow path | one release with waiters |
//!
//! A contended acquisition ended in exactly one of: **handoff** (the lock was handed to this
//! thread), **slept** (it slept at least once), **yielded** (it yielded, never slept),
//! **spun** (neither: it won by spinning or polling), **timed out** (a timed lock gave up).
//! Read locks of an rw-semaphore are a record of their own (kind `rwsem-read`), beside the
//! write side's (`rwsem-write`).
//!
//! # Memory: preallocated and bounded
//!
//! Nothing on a lock path allocates, takes a lock or reads the environment. The tables are
//! `static`s (zero pages until used):
//!
//! * **Locks:** an open-addressed table of [`MAX_LOCKS`] (4096) records keyed by the lock's
//!   address (+ kind), ≈ 9.5 MiB: 2.4 KiB per record, of which 2 KiB are the exact counters
//!   in 16 shards of 128 bytes (a thread updates its own shard, its sampled holds included:
//!   threads on different CPUs pass no counter line back and forth; [`Snapshot`] sums them).
//!   A lock gets its record at its first contended acquisition (or at [`set_name`]); from
//!   then on its uncontended acquisitions are counted too (a thread's acquisitions since it
//!   last took another lock may count from a little earlier). A lock that was never
//!   contended has no record.
//! * **Acquisition batches:** a thread counts its acquisitions of the last locks it took
//!   (8 entries) with plain stores in a slot of its own and adds a batch to the record when
//!   another lock takes its entry: no RMW and no table probe per acquisition (module
//!   `batch`). 4096 slots of 128 bytes (512 KiB), one per thread for its life; threads past
//!   4096 count with one RMW in the record's shards.
//!   When the table is full, further locks' contentions are counted in
//!   [`Snapshot::dropped_locks`] only. A lock freed and another created at the same address
//!   share a record.
//! * **Stacks:** [`MAX_STACKS`] (2048) call stacks of up to [`MAX_FRAMES`] (32) frames, each
//!   keyed by (lock, frames), ≈ 0.6 MiB; when full, samples are counted in
//!   [`Snapshot::dropped_stacks`].
//! * **Per thread:** a few words of TLS and one frame buffer (256 bytes), no destructor.
//!
//! # Sampling
//!
//! Counts, waits and outcomes are exact. Two things are sampled, one in
//! [`sample_rate`] (default 64, [`set_sample_rate`]) per thread: hold times (from an
//! acquisition to its release, one hold in flight per thread), and call stacks of contended
//! acquisitions (taken before the wait, so the holder does not pay for them; a lock's first
//! contended acquisition always takes one, "where first contended"). Stack samples' waits
//! are exact; [`StackStats`] charge them to their stack, and a profile scales them by the rate.
//!
//! # Call stacks
//!
//! The stack is walked with the C ABI unwinder every Rust program on Linux links
//! (`_Unwind_Backtrace`, libgcc's, reading `.eh_frame`), so it works without frame pointers,
//! in Rust release builds and distribution C programs alike. libgcc finds each frame's
//! unwind table through glibc's `_dl_find_object` (or `dl_iterate_phdr`) and allocates
//! nothing for objects found that way (every object a dynamically linked program loads);
//! code registered with `__register_frame` (JIT compilers) may make it allocate at its first
//! lookup. With glibc 2.35 and libgcc 12 or later the lookup (`_dl_find_object`) takes no
//! lock; before them libgcc's `dl_iterate_phdr` takes the loader's lock, so a walk waits for a
//! concurrent `dlopen`, and a thread that holds that lock while it waits for a lock the
//! walking thread holds would deadlock with it. A walk costs a few µs, hence the sampling. A lock taken inside the walk (by the
//! unwinder itself) is recorded without a stack: a per-thread flag stops recursion.
//!
//! # Fork, thread exit, signals
//!
//! Every record is a set of atomics updated with single RMWs, never under a lock, so a
//! `fork` child inherits consistent counts (the ones in flight at the fork are lost) and
//! records on. The per-thread state is const-initialised TLS without a destructor, usable
//! until the thread's last instruction. A signal handler that locks is recorded like any
//! other caller (a hold sampled around it may be attributed to the wrong unlock).
//!
//! # Accuracy
//!
//! Wait and hold times run from the slow path's entry to its return (from an acquisition to
//! its release): time-stamp-counter differences scaled by the counter's rate measured
//! against `CLOCK_MONOTONIC` where the counter is invariant (x86_64), `CLOCK_MONOTONIC`
//! differences elsewhere (module `stamp`).
//! Percentiles come from a log2 histogram (bucket `i` holds waits in [2^i, 2^(i+1)) ns) with
//! linear interpolation inside the bucket: within a factor of 2 of the true value.
//! Concurrent readers see each counter exactly, and sums across counters to within the
//! acquisitions in flight; acquisition counts to within one batch per thread that is
//! switching locks (module `batch`), exactly once threads stop locking or exit.
// Without the feature the items these docs link to do not exist.
#![cfg_attr(not(feature = "stats"), allow(rustdoc::broken_intra_doc_links))]

#[cfg(feature = "stats")]
mod batch;
pub mod events;
mod hooks;
mod keys;
#[cfg(feature = "stats")]
mod raw;
#[cfg(feature = "stats")]
mod snapshot;
#[cfg(feature = "stats")]
mod stack;
#[cfg(feature = "stats")]
mod stamp;
#[cfg(feature = "stats")]
mod table;
#[cfg(feature = "stats")]
mod tls;

pub(crate) use hooks::*;
#[cfg(feature = "stats")]
pub use keys::StatsKey;
#[cfg(feature = "stats")]
pub use raw::write_raw;
#[cfg(feature = "stats")]
pub use snapshot::{report, snapshot, LockKind, LockStats, Snapshot, StackStats};
#[cfg(feature = "stats")]
pub use table::{
    enabled, sample_rate, set_enabled, set_name, set_sample_rate, HIST_BUCKETS, MAX_FRAMES,
    MAX_LOCKS, MAX_STACKS,
};

/// Zeroes every lock's and stack's figures (names, keys and stack slots stay: the bound is
/// the tables', not per reset). For measurements in phases (lockbench's `--stats` per cell):
/// call it while no thread locks; an update racing it may survive in part.
#[cfg(feature = "stats")]
pub fn reset() {
    table::reset_records();
    batch::reset();
}
