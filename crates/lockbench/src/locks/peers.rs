//! The peer locks: Rust std, parking_lot, glibc pthread, and a TTAS spinlock
//! baseline.

use std::sync::atomic::{AtomicBool, Ordering};

use super::{BenchLock, Pinned, RawGuard, RawUnlock};
use crate::util::CachePadded;

// ---------------------------------------------------------------- std

pub struct StdMutex(std::sync::Mutex<()>);

impl BenchLock for StdMutex {
    const RW: bool = false;
    type W<'a> = std::sync::MutexGuard<'a, ()>;
    type R<'a> = std::sync::MutexGuard<'a, ()>;
    fn new() -> Self {
        StdMutex(std::sync::Mutex::new(()))
    }
    #[inline]
    fn write(&self) -> Self::W<'_> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
    #[inline]
    fn read(&self) -> Self::R<'_> {
        self.write()
    }
    #[inline]
    fn try_write(&self) -> Option<Self::W<'_>> {
        match self.0.try_lock() {
            Ok(g) => Some(g),
            Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }
}

pub struct StdRwLock(std::sync::RwLock<()>);

impl BenchLock for StdRwLock {
    const RW: bool = true;
    type W<'a> = std::sync::RwLockWriteGuard<'a, ()>;
    type R<'a> = std::sync::RwLockReadGuard<'a, ()>;
    fn new() -> Self {
        StdRwLock(std::sync::RwLock::new(()))
    }
    #[inline]
    fn write(&self) -> Self::W<'_> {
        self.0.write().unwrap_or_else(|e| e.into_inner())
    }
    #[inline]
    fn read(&self) -> Self::R<'_> {
        self.0.read().unwrap_or_else(|e| e.into_inner())
    }
    #[inline]
    fn try_write(&self) -> Option<Self::W<'_>> {
        match self.0.try_write() {
            Ok(g) => Some(g),
            Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }
}

// ---------------------------------------------------------------- parking_lot

pub struct PlMutex(parking_lot::Mutex<()>);

impl BenchLock for PlMutex {
    const RW: bool = false;
    type W<'a> = parking_lot::MutexGuard<'a, ()>;
    type R<'a> = parking_lot::MutexGuard<'a, ()>;
    fn new() -> Self {
        PlMutex(parking_lot::Mutex::new(()))
    }
    #[inline]
    fn write(&self) -> Self::W<'_> {
        self.0.lock()
    }
    #[inline]
    fn read(&self) -> Self::R<'_> {
        self.0.lock()
    }
    #[inline]
    fn try_write(&self) -> Option<Self::W<'_>> {
        self.0.try_lock()
    }
}

pub struct PlFairMutex(parking_lot::FairMutex<()>);

impl BenchLock for PlFairMutex {
    const RW: bool = false;
    type W<'a> = parking_lot::FairMutexGuard<'a, ()>;
    type R<'a> = parking_lot::FairMutexGuard<'a, ()>;
    fn new() -> Self {
        PlFairMutex(parking_lot::FairMutex::new(()))
    }
    #[inline]
    fn write(&self) -> Self::W<'_> {
        self.0.lock()
    }
    #[inline]
    fn read(&self) -> Self::R<'_> {
        self.0.lock()
    }
    #[inline]
    fn try_write(&self) -> Option<Self::W<'_>> {
        self.0.try_lock()
    }
}

pub struct PlRwLock(parking_lot::RwLock<()>);

impl BenchLock for PlRwLock {
    const RW: bool = true;
    type W<'a> = parking_lot::RwLockWriteGuard<'a, ()>;
    type R<'a> = parking_lot::RwLockReadGuard<'a, ()>;
    fn new() -> Self {
        PlRwLock(parking_lot::RwLock::new(()))
    }
    #[inline]
    fn write(&self) -> Self::W<'_> {
        self.0.write()
    }
    #[inline]
    fn read(&self) -> Self::R<'_> {
        self.0.read()
    }
    #[inline]
    fn try_write(&self) -> Option<Self::W<'_>> {
        self.0.try_write()
    }
}

// ---------------------------------------------------------------- pthread

/// glibc's `PTHREAD_MUTEX_ADAPTIVE_NP`.
pub const PTHREAD_MUTEX_ADAPTIVE_NP: i32 = 3;
/// glibc's `PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP`.
pub const PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP: i32 = 2;

extern "C" {
    // In glibc but not exported by the `libc` crate for every target.
    fn pthread_rwlockattr_setkind_np(attr: *mut libc::pthread_rwlockattr_t, pref: i32) -> i32;
}

/// `pthread_mutex_t` of type `TYPE` (0 = default), initialised in place in a
/// box so it never moves.
pub struct PthreadMutex<const TYPE: i32>(Pinned<libc::pthread_mutex_t>);

impl<const TYPE: i32> RawUnlock for PthreadMutex<TYPE> {
    #[inline]
    unsafe fn unlock_mode(&self, _read: bool) {
        // SAFETY: caller holds the mutex; it was initialised in `new`.
        let r = unsafe { libc::pthread_mutex_unlock(self.0.get()) };
        debug_assert_eq!(r, 0);
    }
}

impl<const TYPE: i32> BenchLock for PthreadMutex<TYPE> {
    const RW: bool = false;
    type W<'a> = RawGuard<'a, Self, false>;
    type R<'a> = RawGuard<'a, Self, false>;
    fn new() -> Self {
        // SAFETY: zeroed storage is then initialised by pthread_mutex_init
        // before use and never moves (it is boxed).
        unsafe {
            let p = Pinned(Box::new(CachePadded(std::cell::UnsafeCell::new(
                std::mem::zeroed(),
            ))));
            let mut attr: libc::pthread_mutexattr_t = std::mem::zeroed();
            assert_eq!(libc::pthread_mutexattr_init(&mut attr), 0);
            if TYPE != 0 {
                assert_eq!(libc::pthread_mutexattr_settype(&mut attr, TYPE), 0);
            }
            assert_eq!(libc::pthread_mutex_init(p.get(), &attr), 0);
            libc::pthread_mutexattr_destroy(&mut attr);
            PthreadMutex(p)
        }
    }
    #[inline]
    fn write(&self) -> Self::W<'_> {
        // SAFETY: initialised in `new`.
        let r = unsafe { libc::pthread_mutex_lock(self.0.get()) };
        assert_eq!(r, 0, "pthread_mutex_lock");
        RawGuard(self)
    }
    #[inline]
    fn read(&self) -> Self::R<'_> {
        self.write()
    }
    #[inline]
    fn try_write(&self) -> Option<Self::W<'_>> {
        // SAFETY: initialised in `new`.
        (unsafe { libc::pthread_mutex_trylock(self.0.get()) } == 0).then(|| RawGuard(self))
    }
}

impl<const TYPE: i32> Drop for PthreadMutex<TYPE> {
    fn drop(&mut self) {
        // SAFETY: unlocked (all guards borrowed self and are gone).
        unsafe { libc::pthread_mutex_destroy(self.0.get()) };
    }
}

/// `pthread_rwlock_t` of kind `KIND` (0 = default), initialised in place.
pub struct PthreadRwLock<const KIND: i32>(Pinned<libc::pthread_rwlock_t>);

impl<const KIND: i32> RawUnlock for PthreadRwLock<KIND> {
    #[inline]
    unsafe fn unlock_mode(&self, _read: bool) {
        // SAFETY: caller holds the lock; initialised in `new`.
        let r = unsafe { libc::pthread_rwlock_unlock(self.0.get()) };
        debug_assert_eq!(r, 0);
    }
}

impl<const KIND: i32> BenchLock for PthreadRwLock<KIND> {
    const RW: bool = true;
    type W<'a> = RawGuard<'a, Self, false>;
    type R<'a> = RawGuard<'a, Self, true>;
    fn new() -> Self {
        // SAFETY: as for PthreadMutex::new.
        unsafe {
            let p = Pinned(Box::new(CachePadded(std::cell::UnsafeCell::new(
                std::mem::zeroed(),
            ))));
            let mut attr: libc::pthread_rwlockattr_t = std::mem::zeroed();
            assert_eq!(libc::pthread_rwlockattr_init(&mut attr), 0);
            if KIND != 0 {
                assert_eq!(pthread_rwlockattr_setkind_np(&mut attr, KIND), 0);
            }
            assert_eq!(libc::pthread_rwlock_init(p.get(), &attr), 0);
            libc::pthread_rwlockattr_destroy(&mut attr);
            PthreadRwLock(p)
        }
    }
    #[inline]
    fn write(&self) -> Self::W<'_> {
        // SAFETY: initialised in `new`.
        let r = unsafe { libc::pthread_rwlock_wrlock(self.0.get()) };
        assert_eq!(r, 0, "pthread_rwlock_wrlock");
        RawGuard(self)
    }
    #[inline]
    fn read(&self) -> Self::R<'_> {
        // SAFETY: initialised in `new`.
        let r = unsafe { libc::pthread_rwlock_rdlock(self.0.get()) };
        assert_eq!(r, 0, "pthread_rwlock_rdlock");
        RawGuard(self)
    }
    #[inline]
    fn try_write(&self) -> Option<Self::W<'_>> {
        // SAFETY: initialised in `new`.
        (unsafe { libc::pthread_rwlock_trywrlock(self.0.get()) } == 0).then(|| RawGuard(self))
    }
}

impl<const KIND: i32> Drop for PthreadRwLock<KIND> {
    fn drop(&mut self) {
        // SAFETY: unlocked (all guards are gone).
        unsafe { libc::pthread_rwlock_destroy(self.0.get()) };
    }
}

// ---------------------------------------------------------------- spin-ttas

/// Test-and-test-and-set spinlock: the "no sleeping at all" baseline. It
/// polls with `pause` and calls `sched_yield` every 64 failed polls so that
/// oversubscribed cells (threads > CPUs) still finish.
pub struct SpinTtas(AtomicBool);

/// Failed polls between two `sched_yield` calls.
const TTAS_POLLS_PER_YIELD: u32 = 64;

impl RawUnlock for SpinTtas {
    #[inline]
    unsafe fn unlock_mode(&self, _read: bool) {
        self.0.store(false, Ordering::Release);
    }
}

impl SpinTtas {
    #[cold]
    fn lock_contended(&self) {
        let mut polls = 0u32;
        loop {
            while self.0.load(Ordering::Relaxed) {
                polls += 1;
                if polls.is_multiple_of(TTAS_POLLS_PER_YIELD) {
                    std::thread::yield_now();
                } else {
                    std::hint::spin_loop();
                }
            }
            if !self.0.swap(true, Ordering::Acquire) {
                return;
            }
        }
    }
}

impl BenchLock for SpinTtas {
    const RW: bool = false;
    type W<'a> = RawGuard<'a, Self, false>;
    type R<'a> = RawGuard<'a, Self, false>;
    fn new() -> Self {
        SpinTtas(AtomicBool::new(false))
    }
    #[inline]
    fn write(&self) -> Self::W<'_> {
        if self.0.swap(true, Ordering::Acquire) {
            self.lock_contended();
        }
        RawGuard(self)
    }
    #[inline]
    fn read(&self) -> Self::R<'_> {
        self.write()
    }
    #[inline]
    fn try_write(&self) -> Option<Self::W<'_>> {
        (!self.0.load(Ordering::Relaxed) && !self.0.swap(true, Ordering::Acquire))
            .then(|| RawGuard(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A failed try must leave the holder's lock held (regression: building
    /// the guard eagerly with `then_some` unlocked it on failure).
    fn try_semantics<L: BenchLock>() {
        let l = L::new();
        let g = l.write();
        assert!(l.try_write().is_none());
        assert!(l.try_write_spin().is_none());
        assert!(
            l.try_write().is_none(),
            "a failed try_write released the lock"
        );
        drop(g);
        let g = l.try_write().expect("free lock");
        drop(g);
        drop(l.read());
        assert!(l.try_write().is_some());
    }

    #[test]
    fn try_write_fails_without_side_effects() {
        try_semantics::<StdMutex>();
        try_semantics::<StdRwLock>();
        try_semantics::<PlMutex>();
        try_semantics::<PlFairMutex>();
        try_semantics::<PlRwLock>();
        try_semantics::<PthreadMutex<0>>();
        try_semantics::<PthreadMutex<PTHREAD_MUTEX_ADAPTIVE_NP>>();
        try_semantics::<PthreadRwLock<0>>();
        try_semantics::<PthreadRwLock<PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP>>();
        try_semantics::<SpinTtas>();
    }
}
