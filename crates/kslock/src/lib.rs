//! kslock: the Linux kernel's sleeping locks for user space.
#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

mod ablate;
mod chaos;
mod condvar;
pub mod events;
#[cfg(not(kslock_loom))]
mod fair_mutex;
pub mod fairness;
mod mutex;
mod osq;
pub mod policy;
#[cfg(not(kslock_loom))]
mod remutex;
// -- rwsem (issue 3) --
mod rwsem;
#[cfg(not(kslock_loom))]
pub use rwsem::{RwSem, RwSemReadGuard, RwSemWith, RwSemWriteGuard};
// -- end rwsem --
#[cfg(not(kslock_loom))]
mod rwlock;
mod spin;
mod sync;
mod sys;
mod thread;
mod wait;

pub use condvar::{Condvar, WaitTimeoutResult};
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
    MappedRwSemWriteGuard, RawRwLock, RwLock, RwLockReadGuard, RwLockWriteGuard,
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
    ArcMutexGuard, ArcReentrantMutexGuard, ArcRwLockReadGuard, ArcRwLockWriteGuard,
};
