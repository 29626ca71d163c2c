//! The locks under test: the [`BenchLock`] interface and its adapters ([`peers`], and
//! [`kslock`] with the `kslock` feature).
//!
//! Every lock implements [`BenchLock`], a guard-based interface: the timed
//! loops are generic over it, so each lock gets its own monomorphised runner
//! and the only dynamic dispatch is the one registry call per cell (the
//! registry, above the runners, names the adapters).
//!
//! Mutexes implement `read` as `write` (a reader is exclusive) and report
//! `RW = false`. The adapters depend on nothing in the crate above [`crate::util`].

use std::cell::UnsafeCell;

use crate::util::CachePadded;

pub mod condvar;
pub mod peers;

#[cfg(feature = "kslock")]
pub mod kslock;

/// A lock as the benchmark sees it.
pub trait BenchLock: Send + Sync + 'static {
    /// True for reader-writer locks (reads may run in parallel).
    const RW: bool;
    /// Exclusive guard; unlocks on drop.
    type W<'a>
    where
        Self: 'a;
    /// Shared guard; unlocks on drop. For mutexes it is the exclusive guard.
    type R<'a>
    where
        Self: 'a;
    fn new() -> Self;
    fn write(&self) -> Self::W<'_>;
    fn read(&self) -> Self::R<'_>;
    fn try_write(&self) -> Option<Self::W<'_>>;
    /// `try_lock` that may spin while the owner runs (seed S3). Locks that
    /// have no such operation fall back to a plain `try_write`.
    fn try_write_spin(&self) -> Option<Self::W<'_>> {
        self.try_write()
    }
}

/// Locks whose unlock is a plain method (pthread, spinlock, lock_api raw
/// locks) share this guard; it is generic, so the unlock call is static.
pub trait RawUnlock {
    /// # Safety
    /// The caller holds the lock in the given mode.
    unsafe fn unlock_mode(&self, read: bool);
}

/// Guard that calls [`RawUnlock::unlock_mode`] on drop. Build one only
/// after the lock was acquired (beware `bool::then_some`, which would build
/// — and drop, i.e. unlock — it even on failure; use `then`).
pub struct RawGuard<'a, L: RawUnlock, const READ: bool>(pub(crate) &'a L);

impl<L: RawUnlock, const READ: bool> Drop for RawGuard<'_, L, READ> {
    #[cfg_attr(feature = "stats", inline(always))]
    #[cfg_attr(not(feature = "stats"), inline)]
    fn drop(&mut self) {
        // SAFETY: a guard is only built right after acquiring in this mode.
        unsafe { self.0.unlock_mode(READ) }
    }
}

/// Interior storage that never moves (pthread objects must stay where they
/// were initialised).
pub(crate) struct Pinned<T>(pub(crate) Box<CachePadded<UnsafeCell<T>>>);

impl<T> Pinned<T> {
    pub(crate) fn get(&self) -> *mut T {
        self.0 .0.get()
    }
}

// SAFETY: the contents are only touched through the thread-safe pthread API.
unsafe impl<T> Send for Pinned<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for Pinned<T> {}
