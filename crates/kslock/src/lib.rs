//! kslock: the Linux kernel's sleeping locks for user space.
//!
//! * [`Mutex`] / [`RawMutex`]: the kernel mutex — one-CAS fast paths, optimistic spinning
//!   through an OSQ while the owner runs, a FIFO wait list with handoff against starvation,
//!   [`RawMutex::try_lock_spin`], timed and fair unlocks.
//! * [`Condvar`]: a condition variable for [`Mutex`] that requeues instead of stampeding.
//!
//! Module map: `sys` (futex, clocks: the only syscalls), `sync` (loom shim), `thread`
//! (type-stable per-thread records), `spin` (budgets and the "is the owner running?" oracle),
//! `osq` (optimistic spin queue), `wait` (wait_lock, waiter list, wake list), `policy` (seed
//! switches).
#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

mod ablate;
mod chaos;
mod condvar;
pub mod events;
pub mod fairness;
mod mutex;
mod osq;
pub mod policy;
// -- rwsem (issue 3) --
mod rwsem;
pub use rwsem::RawRwSem;
#[cfg(not(kslock_loom))]
pub use rwsem::{RwSem, RwSemReadGuard, RwSemWith, RwSemWriteGuard};
// -- end rwsem --
mod spin;
mod sync;
mod sys;
mod thread;
mod wait;

pub use condvar::{Condvar, WaitTimeoutResult};
pub use mutex::RawMutex;
#[cfg(not(kslock_loom))]
pub use mutex::{const_mutex, MappedMutexGuard, Mutex, MutexGuard, MutexWith};
pub use spin::spin_cap_ns;
