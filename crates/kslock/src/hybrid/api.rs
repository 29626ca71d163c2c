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

/// An upgradable read guard of [`HybridRwSem`].
pub type HybridRwSemUpgradableReadGuard<'a, T> =
    lock_api::RwLockUpgradableReadGuard<'a, RawHybridRwSem, T>;

// SAFETY: the upgradable holder holds `m`, which excludes writers and other upgradable
// holders; its upgrade drains the shared readers like a writer (module `upgrade`).
unsafe impl lock_api::RawRwLockUpgrade for RawHybridRwSem {
    fn lock_upgradable(&self) {
        self.upgradable_read()
    }
    fn try_lock_upgradable(&self) -> bool {
        self.try_upgradable_read()
    }
    unsafe fn unlock_upgradable(&self) {
        // SAFETY: forwarded caller contract.
        unsafe { self.upgradable_unlock() }
    }
    unsafe fn upgrade(&self) {
        // SAFETY: forwarded caller contract.
        unsafe { RawHybridRwSem::upgrade(self) }
    }
    unsafe fn try_upgrade(&self) -> bool {
        // SAFETY: forwarded caller contract.
        unsafe { RawHybridRwSem::try_upgrade(self) }
    }
}

// SAFETY: as the plain upgradable unlock, handing `m` to its head waiter.
unsafe impl lock_api::RawRwLockUpgradeFair for RawHybridRwSem {
    unsafe fn unlock_upgradable_fair(&self) {
        // SAFETY: forwarded caller contract.
        unsafe { self.upgradable_unlock_fair() }
    }
}

// SAFETY: both downgrades change the hold in one RMW on `count` with `m` held throughout
// (or released only after the reader bias is in), so no writer enters in between.
unsafe impl lock_api::RawRwLockUpgradeDowngrade for RawHybridRwSem {
    unsafe fn downgrade_upgradable(&self) {
        // SAFETY: forwarded caller contract.
        unsafe { RawHybridRwSem::downgrade_upgradable(self) }
    }
    unsafe fn downgrade_to_upgradable(&self) {
        // SAFETY: forwarded caller contract.
        unsafe { RawHybridRwSem::downgrade_to_upgradable(self) }
    }
}

// SAFETY: as the untimed forms when they return true; on false the hold is as before.
unsafe impl lock_api::RawRwLockUpgradeTimed for RawHybridRwSem {
    fn try_lock_upgradable_for(&self, timeout: Self::Duration) -> bool {
        self.upgradable_read_until(crate::sys::deadline_after(timeout))
    }
    fn try_lock_upgradable_until(&self, timeout: Self::Instant) -> bool {
        self.upgradable_read_until(crate::sys::deadline_from_instant(timeout))
    }
    unsafe fn try_upgrade_for(&self, timeout: Self::Duration) -> bool {
        // SAFETY: forwarded caller contract.
        unsafe { self.try_upgrade_by(crate::sys::deadline_after(timeout)) }
    }
    unsafe fn try_upgrade_until(&self, timeout: Self::Instant) -> bool {
        // SAFETY: forwarded caller contract.
        unsafe { self.try_upgrade_by(crate::sys::deadline_from_instant(timeout)) }
    }
}
