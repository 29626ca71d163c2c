//! The locks under test and the registry that names them.
//!
//! Every lock implements [`BenchLock`], a guard-based interface: the timed
//! loops are generic over it, so each lock gets its own monomorphised runner
//! and the only dynamic dispatch is the one registry call per cell.
//!
//! Mutexes implement `read` as `write` (a reader is exclusive) and report
//! `RW = false`.

use std::cell::UnsafeCell;

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

/// 128-byte alignment: the adjacent-line prefetcher on x86_64 pulls lines in
/// pairs, so a 64-byte pad is not enough to keep a lock away from counters.
/// The wrapper starts on a 128-byte boundary and its size is a multiple of
/// 128, so nothing else shares its lines.
#[repr(C, align(128))]
#[derive(Default)]
pub struct CachePadded<T>(pub T);

impl<T> std::ops::Deref for CachePadded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
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
    #[inline]
    fn drop(&mut self) {
        // SAFETY: a guard is only built right after acquiring in this mode.
        unsafe { self.0.unlock_mode(READ) }
    }
}

/// What kind of lock a registry entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Mutex,
    RwLock,
}

/// The per-lock entry point: runs one cell of any workload. The match on the
/// workload happens once per cell, outside the timed loop.
pub type RunFn =
    fn(&crate::runner::WorkSpec, &crate::runner::CellConfig) -> crate::runner::RunOutcome;

/// One registry entry.
#[derive(Clone, Copy)]
pub struct LockInfo {
    pub name: &'static str,
    pub kind: Kind,
    /// kslock's own lock (as opposed to a peer).
    pub ours: bool,
    pub help: &'static str,
    pub run: RunFn,
    /// The `timeline` command's recorder for this lock.
    pub timeline: TimelineFn,
    /// The `uncontended` command's loops for this lock.
    pub uncontended: crate::uncontended::UncontendedFn,
}

/// The per-lock entry point of `lockbench timeline`.
pub type TimelineFn =
    fn(&crate::timeline::TimelineCfg) -> Result<crate::timeline::Recording, String>;

macro_rules! entry {
    ($name:expr, $ty:ty, $ours:expr, $help:expr) => {
        $crate::locks::LockInfo {
            name: $name,
            kind: if <$ty as $crate::locks::BenchLock>::RW {
                $crate::locks::Kind::RwLock
            } else {
                $crate::locks::Kind::Mutex
            },
            ours: $ours,
            help: $help,
            run: $crate::runner::run_any::<$ty>,
            timeline: $crate::timeline::record::<$ty>,
            uncontended: $crate::uncontended::measure::<$ty>,
        }
    };
}
pub(crate) use entry;

/// All locks compiled into this binary, kslock's first.
pub fn registry() -> Vec<LockInfo> {
    #[allow(unused_mut)]
    let mut v = Vec::new();
    #[cfg(feature = "kslock")]
    v.extend(kslock::entries());
    v.extend(peers::entries());
    v
}

/// Names of all registered locks (for usage messages).
pub fn names() -> Vec<&'static str> {
    registry().iter().map(|l| l.name).collect()
}

pub fn find(name: &str) -> Option<LockInfo> {
    registry().into_iter().find(|l| l.name == name)
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
