//! `lock_api` implementations and the typed aliases.

use super::RawRwSem;
use crate::policy::{DefaultPolicy, RwSemPolicy};

// SAFETY: `write` excludes every other holder; `read` excludes writers (module doc).
unsafe impl<P: RwSemPolicy> lock_api::RawRwLock for RawRwSem<P> {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = RawRwSem::new();
    // The owner check of `write_unlock` needs the locking thread.
    type GuardMarker = lock_api::GuardNoSend;

    #[inline]
    fn lock_shared(&self) {
        self.read()
    }
    #[inline]
    fn try_lock_shared(&self) -> bool {
        self.try_read()
    }
    #[inline]
    unsafe fn unlock_shared(&self) {
        // SAFETY: forwarded caller contract.
        unsafe { self.read_unlock() }
    }
    #[inline]
    fn lock_exclusive(&self) {
        self.write()
    }
    #[inline]
    fn try_lock_exclusive(&self) -> bool {
        self.try_write()
    }
    #[inline]
    unsafe fn unlock_exclusive(&self) {
        // SAFETY: forwarded caller contract.
        unsafe { self.write_unlock() }
    }
    #[inline]
    fn is_locked(&self) -> bool {
        RawRwSem::is_locked(self)
    }
    #[inline]
    fn is_locked_exclusive(&self) -> bool {
        self.is_write_locked()
    }
}

// SAFETY: `downgrade` keeps the lock held throughout (writer bit → one reader bias in one RMW).
unsafe impl<P: RwSemPolicy> lock_api::RawRwLockDowngrade for RawRwSem<P> {
    unsafe fn downgrade(&self) {
        // SAFETY: forwarded caller contract.
        unsafe { RawRwSem::downgrade(self) }
    }
}

// SAFETY: a recursive read waits only for WRITER_LOCKED, which cannot be set while this
// thread's read lock is counted (module doc, "Recursive reads").
unsafe impl<P: RwSemPolicy> lock_api::RawRwLockRecursive for RawRwSem<P> {
    fn lock_shared_recursive(&self) {
        self.read_recursive()
    }
    fn try_lock_shared_recursive(&self) -> bool {
        self.try_read_recursive()
    }
}

// SAFETY: the timed variants acquire exactly like the untimed ones or leave the lock
// untouched (a cancelled waiter is unlinked under the wait_lock).
unsafe impl<P: RwSemPolicy> lock_api::RawRwLockTimed for RawRwSem<P> {
    type Duration = std::time::Duration;
    type Instant = std::time::Instant;
    fn try_lock_shared_for(&self, timeout: Self::Duration) -> bool {
        self.try_read_for(timeout)
    }
    fn try_lock_shared_until(&self, timeout: Self::Instant) -> bool {
        self.try_read_until(timeout)
    }
    fn try_lock_exclusive_for(&self, timeout: Self::Duration) -> bool {
        self.try_write_for(timeout)
    }
    fn try_lock_exclusive_until(&self, timeout: Self::Instant) -> bool {
        self.try_write_until(timeout)
    }
}

/// A reader-writer lock protecting a `T`, built on the kernel rw-semaphore.
pub type RwSem<T> = lock_api::RwLock<RawRwSem<DefaultPolicy>, T>;
/// [`RwSem`] with a chosen seed policy (see [`crate::policy`]).
pub type RwSemWith<P, T> = lock_api::RwLock<RawRwSem<P>, T>;
/// Shared guard of an [`RwSem`].
pub type RwSemReadGuard<'a, T> = lock_api::RwLockReadGuard<'a, RawRwSem<DefaultPolicy>, T>;
/// Exclusive guard of an [`RwSem`].
pub type RwSemWriteGuard<'a, T> = lock_api::RwLockWriteGuard<'a, RawRwSem<DefaultPolicy>, T>;
