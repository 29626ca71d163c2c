//! The `lock_api` traits for [`RawHybridRwSem`] and its typed lock.

use super::RawHybridRwSem;

/// A reader-writer lock with data on [`RawHybridRwSem`] (experimental; module doc of
/// `kslock::hybrid`).
pub type HybridRwSem<T> = lock_api::RwLock<RawHybridRwSem, T>;
/// A read guard of [`HybridRwSem`].
pub type HybridRwSemReadGuard<'a, T> = lock_api::RwLockReadGuard<'a, RawHybridRwSem, T>;
/// A write guard of [`HybridRwSem`].
pub type HybridRwSemWriteGuard<'a, T> = lock_api::RwLockWriteGuard<'a, RawHybridRwSem, T>;

// SAFETY: shared holds exclude the write hold and the write hold excludes everybody (module
// doc of `kslock::hybrid`); unlocks need the locking thread (GuardNoSend: reads through `m`
// and the writer are owned by their thread).
unsafe impl lock_api::RawRwLock for RawHybridRwSem {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = RawHybridRwSem::new();
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
    fn is_locked(&self) -> bool {
        RawHybridRwSem::is_locked(self)
    }
    fn is_locked_exclusive(&self) -> bool {
        self.is_write_locked()
    }
}

// SAFETY: `downgrade` turns the write hold into a shared hold in one RMW (no writer between).
unsafe impl lock_api::RawRwLockDowngrade for RawHybridRwSem {
    unsafe fn downgrade(&self) {
        // SAFETY: forwarded caller contract.
        unsafe { RawHybridRwSem::downgrade(self) }
    }
}

// SAFETY: a recursive read waits only while a writer holds the lock, which cannot happen
// while the caller holds a read lock (module doc, "Recursive reads").
unsafe impl lock_api::RawRwLockRecursive for RawHybridRwSem {
    fn lock_shared_recursive(&self) {
        self.read_recursive()
    }
    fn try_lock_shared_recursive(&self) -> bool {
        self.read_recursive_until(None)
    }
}

// SAFETY: as for `RawRwLockRecursive`, with a deadline.
unsafe impl lock_api::RawRwLockRecursiveTimed for RawHybridRwSem {
    fn try_lock_shared_recursive_for(&self, timeout: Self::Duration) -> bool {
        self.read_recursive_until(Some(crate::sys::deadline_after(timeout)))
    }
    fn try_lock_shared_recursive_until(&self, timeout: Self::Instant) -> bool {
        self.read_recursive_until(Some(crate::sys::deadline_from_instant(timeout)))
    }
}

// SAFETY: the timed forms end with the lock held (true) or untouched (false).
unsafe impl lock_api::RawRwLockTimed for RawHybridRwSem {
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

// SAFETY: the fair unlocks release like the plain ones, handing `m` to its head waiter.
unsafe impl lock_api::RawRwLockFair for RawHybridRwSem {
    unsafe fn unlock_shared_fair(&self) {
        // SAFETY: forwarded caller contract.
        unsafe { self.read_unlock_fair() }
    }
    unsafe fn unlock_exclusive_fair(&self) {
        // SAFETY: forwarded caller contract.
        unsafe { self.write_unlock_fair() }
    }
}
