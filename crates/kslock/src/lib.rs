//! kslock: the Linux kernel's sleeping locks for user space.
//!
//! The kernel's **mutex** and **rw-semaphore** (with the optimistic spin queue that throttles
//! their spinners), rebuilt on futexes, behind the [`lock_api`] traits: code written for
//! `parking_lot` compiles with only the crate name changed (what is missing: "Missing" below).
//!
//! ```
//! use kslock::{Condvar, Mutex, RwSem};
//! use std::sync::Arc;
//!
//! let state = Arc::new((Mutex::new(0u32), Condvar::new()));
//! let s2 = state.clone();
//! let worker = std::thread::spawn(move || {
//!     let (lock, cvar) = &*s2;
//!     *lock.lock() += 1;
//!     cvar.notify_one();
//! });
//! let (lock, cvar) = &*state;
//! let mut n = lock.lock();
//! cvar.wait_while(&mut n, |n| *n == 0);
//! assert_eq!(*n, 1);
//! drop(n);
//! worker.join().unwrap();
//!
//! let table = RwSem::new(vec![1, 2, 3]);
//! assert_eq!(table.read().len(), 3);
//! table.write().push(4);
//!
//! // Read, decide, then write without letting another writer in between.
//! let r = table.upgradable_read();
//! if !r.contains(&5) {
//!     let mut w = kslock::RwSemUpgradableReadGuard::upgrade(r);
//!     w.push(5);
//! }
//! assert_eq!(*table.read(), [1, 2, 3, 4, 5]);
//! ```
//!
//! # Which type to pick
//!
//! | you want | take | parking_lot name |
//! |---|---|---|
//! | mutual exclusion | [`Mutex<T>`] | `Mutex` |
//! | strict FIFO hand-over on every unlock | [`FairMutex<T>`] | `FairMutex` |
//! | a lock the holding thread may take again | [`ReentrantMutex<T>`] | `ReentrantMutex` |
//! | many readers, few writers | [`RwSem<T>`] (alias [`RwLock<T>`]) | `RwLock` |
//! | read, then maybe write, with no writer in between | [`RwSem::upgradable_read`](lock_api::RwLock::upgradable_read), [`RwSemUpgradableReadGuard::upgrade`](lock_api::RwLockUpgradableReadGuard::upgrade) | the same |
//! | wait for a condition under a [`Mutex`] | [`Condvar`] | `Condvar` |
//! | a lock without data (FFI, your own guards) | [`RawMutex`], [`RawRwSem`] with the [`lock_api`] traits | `RawMutex`, `RawRwLock` |
//! | a seed policy other than the default (experiments) | [`MutexWith<P, T>`], [`RwSemWith<P, T>`], [`RawMutexWith<P>`], [`RawRwSemWith<P>`] ([`policy`]) | — |
//! | a `static` | [`const_mutex`], [`const_fair_mutex`], [`const_reentrant_mutex`], [`const_rwsem`] (or `Mutex::new` in a `static`: `lock_api`'s constructors are `const`) | the same `const_*` names |
//!
//! ```
//! use kslock::lock_api::RawMutex as _;
//!
//! static HITS: kslock::Mutex<u64> = kslock::const_mutex(0);
//! static RAW: kslock::RawMutex = kslock::RawMutex::INIT;
//!
//! *HITS.lock() += 1;
//! RAW.lock();
//! assert!(!RAW.try_lock());
//! // SAFETY: this thread holds RAW.
//! unsafe { RAW.unlock() };
//! ```
//!
//! kslock-only calls live on the raw types and reach the typed locks through
//! `lock_api`: [`RawMutexWith::try_lock_spin`] (seed S3: a `try_lock` that spins while the
//! owner runs), `RawRwSemWith::try_write_spin`, and the timed locks of [`lock_api`]
//! (`try_lock_for`, `try_read_until`, ...).
//!
//! # How kslock differs from parking_lot and std
//!
//! | | kslock | parking_lot 0.12 | std (futex, Linux) |
//! |---|---|---|---|
//! | mutex fairness | running threads may barge ahead of sleeping waiters until the head waiter's **fairness window** ends (from 2 spin caps, 20–80 µs, up to 1 ms, [`fairness`]), then the lock is handed to it: a waiter's wait is bounded | barging; "eventual fairness": a handover on average every 0.5 ms | barging, no bound |
//! | mutex spinning | while the owner runs (a per-thread "parked" flag and CPU id published by every thread), one spinner per lock (OSQ), under an adaptive budget capped near a sleep/wake round trip | a few exponential pause rounds and yields, only while nobody is parked | 100 loads |
//! | rw lock | the kernel rwsem: a writer that waits awake stops the readers' fast path, readers are granted in bulk (≤ 256), the head writer reserves the lock (HANDOFF: against readers at once, against a writer after ≈ 4 ms); writers spin on writer owners and, briefly, on reader owners; upgradable reads (one upgradable holder beside readers; the upgrade keeps new readers out while the others leave) | task-fair; upgradable reads | writer-preferring |
//! | condvar | `notify_all` wakes one waiter and requeues the rest onto the mutex | requeue as well | wakes all |
//! | sizes (x86_64) | `Mutex` 32 B, `RwSem` 40 B, `Condvar` 24 B (a `Mutex<T>` is 32 B + `T`) | 1 B, 8 B, 8 B | 4 B (+ poison), 8 B, 4 B |
//! | policies | seed switches as type parameters ([`policy`]), free on the fast path | — | — |
//! | poisoning | none (as parking_lot) | none | yes |
//! | misuse | a mutex unlock by a thread that does not hold it, and a blocking `lock` by its holder, panic; an rwsem `write_unlock` of a lock that is not write-locked panics (of another thread's write lock: in debug builds and with `debug-locks`) | not checked (deadlock on a re-lock) | deadlock or panic |
//!
//! All-zero is a valid unlocked value of every kslock lock, so they can live in `static`s,
//! in zeroed memory, and inside C structs.
//!
//! Guards are not `Send` (the mutex and the rwsem's writer record the owning thread), so
//! parking_lot's `send_guard` feature has no equivalent.
//!
//! # Cargo features
//!
//! * `arc_lock`, `serde`, `owning_ref`: forwarded to [`lock_api`] (`Arc`-owning guards such
//!   as `ArcMutexGuard` re-exported at the crate root;
//!   `Serialize`/`Deserialize` for the typed locks; `StableAddress` for guards).
//! * `debug-locks`: the misuse checks that need the thread record (an rwsem write unlock by
//!   another thread) in release builds too.
//! * `stats`: contention statistics per lock and call stack ([`stats`]) and the lock event
//!   counters ([`events`]); `lock-events` is its former name.
//!
//! # Missing (compared with parking_lot 0.12)
//!
//! * `Once` / `OnceState`: not a kernel lock; use `std::sync::Once` / `OnceLock`.
//! * `send_guard` (above) and `deadlock_detection`, `hardware-lock-elision`, `nightly`.
//! * [`Condvar`] works with [`Mutex`] only (as parking_lot's works with its `Mutex` only).
//!
//! # Module map
//!
//! | module | what it holds |
//! |---|---|
//! | `sys` | futex, clocks, the current CPU: the only system calls |
//! | `sync` | the loom shim: every atomic, cell, spin hint and yield |
//! | `thread` | type-stable per-thread records, owner words, parking, the deferred wake list, `fork()` handling |
//! | `spin` | spin budgets and the "is the owner running?" oracle; the calibrated cap and pause |
//! | `osq` | the optimistic spin queue: one poller per lock |
//! | `wait` | the wait_lock and the FIFO waiter list |
//! | `mutex` | the kernel mutex, its fairness window and barging limit |
//! | `rwsem` | the kernel rw-semaphore |
//! | `condvar` | the requeueing condition variable |
//! | [`fairness`] | the window a head waiter grants barging threads |
//! | [`policy`] | seed switches (type parameters) |
//! | `ablate` | `KSLOCK_OFF` switches for A/B measurements |
//! | [`events`] | lock event counters (feature `stats`) |
//! | [`stats`] | contention statistics per lock and call stack (feature `stats`) |
//! | `chaos` | delay injection for tests (`--cfg kslock_chaos`) |
//! | [`hybrid`] | an experimental rw lock on the mutex whose reads run shared or through the mutex by measurement; not yet the default `RwSem` |
//! | `fair_mutex`, `remutex`, `rwlock` | `FairMutex`, `ReentrantMutex`, the rwsem's parking_lot names |
//!
//! The design is in each module's doc; the measurements behind it, and the mechanisms tried
//! and dropped, are in `docs/experiments.md` in the repository.
#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

mod ablate;
mod chaos;
mod clock;
mod condvar;
pub use stats::events;
#[cfg(not(kslock_loom))]
mod fair_mutex;
pub mod fairness;
// An experimental rw lock built on the mutex (issue 11); not yet the default `RwSem`.
pub mod hybrid;
mod mutex;
mod osq;
pub mod policy;
#[cfg(not(kslock_loom))]
mod remutex;
// -- rwsem (issue 3) --
mod rwsem;
#[cfg(not(kslock_loom))]
pub use rwsem::{RwSem, RwSemReadGuard, RwSemUpgradableReadGuard, RwSemWith, RwSemWriteGuard};
// -- end rwsem --
#[cfg(not(kslock_loom))]
mod rwlock;
mod spin;
pub mod stats;
mod sync;
mod sys;
mod thread;
mod wait;

pub use condvar::{Condvar, Left, WaitTimeoutResult};
#[cfg(not(kslock_loom))]
pub use fair_mutex::{
    const_fair_mutex, FairMutex, FairMutexGuard, MappedFairMutexGuard, RawFairMutex,
};
#[cfg(not(kslock_loom))]
pub use mutex::{const_mutex, MappedMutexGuard, Mutex, MutexGuard, MutexWith};
#[cfg(not(kslock_loom))]
pub use remutex::{
    const_reentrant_mutex, MappedReentrantMutexGuard, RawThreadId, ReentrantMutex,
    ReentrantMutexGuard,
};
#[cfg(not(kslock_loom))]
pub use rwlock::{
    const_rwlock, const_rwsem, MappedRwLockReadGuard, MappedRwLockWriteGuard, MappedRwSemReadGuard,
    MappedRwSemWriteGuard, RawRwLock, RwLock, RwLockReadGuard, RwLockUpgradableReadGuard,
    RwLockWriteGuard,
};
pub use spin::spin_cap_ns;

/// The raw kernel mutex with a chosen seed policy ([`policy`]); [`RawMutex`] is the default.
pub use mutex::RawMutex as RawMutexWith;
/// The raw kernel mutex with the default policy: use it through [`Mutex`] (`lock_api`), or
/// directly. 32 bytes; all-zero is unlocked.
pub type RawMutex = RawMutexWith<policy::DefaultPolicy>;

/// The raw kernel rw-semaphore with a chosen seed policy ([`policy`]); [`RawRwSem`] is the
/// default.
pub use rwsem::RawRwSem as RawRwSemWith;
/// The raw kernel rw-semaphore with the default policy: use it through [`RwSem`]
/// (`lock_api`), or directly. 40 bytes; all-zero is unlocked.
pub type RawRwSem = RawRwSemWith<policy::DefaultPolicy>;

/// `lock_api`, which defines the lock traits and the typed locks and guards kslock builds on.
pub use lock_api;

#[cfg(all(feature = "arc_lock", not(kslock_loom)))]
pub use lock_api::{
    ArcMutexGuard, ArcReentrantMutexGuard, ArcRwLockReadGuard, ArcRwLockUpgradableReadGuard,
    ArcRwLockWriteGuard,
};

/// Thread records created so far (the record pool's high-water mark). For kslock's own tests
/// (`tests/thread_exit.rs`): not part of the API.
#[doc(hidden)]
#[cfg(not(kslock_loom))]
pub fn __thread_records_created() -> u32 {
    thread::records_created()
}

/// The crate README's example runs as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
