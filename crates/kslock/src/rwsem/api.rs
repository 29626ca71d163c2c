//! `lock_api` implementations and the typed aliases.

use super::RawRwSem;
use crate::policy::{DefaultPolicy, RwSemPolicy};

// SAFETY: `write` excludes every other holder; `read` excludes writers (module doc).
unsafe impl<P: RwSemPolicy> lock_api::RawRwLock for RawRwSem<P> {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = RawRwSem::new();
    // The owner check of `write_unlock` needs the locking thread.
    type GuardMarker = lock_api::GuardNoSend;

    #[cfg_attr(feature = "stats", inline(always))]
    #[cfg_attr(not(feature = "stats"), inline)]
    fn lock_shared(&self) {
        self.read()
    }
    #[inline]
    fn try_lock_shared(&self) -> bool {
        self.try_read()
    }
    #[cfg_attr(feature = "stats", inline(always))]
    #[cfg_attr(not(feature = "stats"), inline)]
    unsafe fn unlock_shared(&self) {
        // SAFETY: forwarded caller contract.
        unsafe { self.read_unlock() }
    }
    #[cfg_attr(feature = "stats", inline(always))]
    #[cfg_attr(not(feature = "stats"), inline)]
    fn lock_exclusive(&self) {
        self.write()
    }
    #[inline]
    fn try_lock_exclusive(&self) -> bool {
        self.try_write()
    }
    #[cfg_attr(feature = "stats", inline(always))]
    #[cfg_attr(not(feature = "stats"), inline)]
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

// SAFETY: as `RawRwLockRecursive` when they return true; on false the lock is untouched.
unsafe impl<P: RwSemPolicy> lock_api::RawRwLockRecursiveTimed for RawRwSem<P> {
    fn try_lock_shared_recursive_for(&self, timeout: Self::Duration) -> bool {
        self.try_read_recursive_for(timeout)
    }
    fn try_lock_shared_recursive_until(&self, timeout: Self::Instant) -> bool {
        self.try_read_recursive_until(timeout)
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

// SAFETY: the fair unlocks release exactly like the plain ones; the reservation they add only
// restricts who takes the lock next.
unsafe impl<P: RwSemPolicy> lock_api::RawRwLockFair for RawRwSem<P> {
    unsafe fn unlock_shared_fair(&self) {
        // SAFETY: forwarded caller contract.
        unsafe { self.read_unlock_fair() }
    }
    unsafe fn unlock_exclusive_fair(&self) {
        // SAFETY: forwarded caller contract.
        unsafe { self.write_unlock_fair() }
    }
    unsafe fn bump_shared(&self) {
        if self.has_waiters() {
            // SAFETY: forwarded caller contract; re-taken before returning.
            unsafe { lock_api::RawRwLockFair::unlock_shared_fair(self) };
            self.read();
        }
    }
    unsafe fn bump_exclusive(&self) {
        if self.has_waiters() {
            // SAFETY: forwarded caller contract; re-taken before returning.
            unsafe { lock_api::RawRwLockFair::unlock_exclusive_fair(self) };
            self.write();
        }
    }
}

// SAFETY: an upgradable holder holds a reader bias (so no writer enters) and the upgradable
// bit (so no other upgradable holder); the upgrade turns that bias into the writer bit in one
// CAS once it is the only one (module doc, "Upgradable reads").
unsafe impl<P: RwSemPolicy> lock_api::RawRwLockUpgrade for RawRwSem<P> {
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
        unsafe { RawRwSem::upgrade(self) }
    }
    unsafe fn try_upgrade(&self) -> bool {
        // SAFETY: forwarded caller contract.
        unsafe { RawRwSem::try_upgrade(self) }
    }
}

// SAFETY: as for the plain unlocks; see `RawRwLockFair`.
unsafe impl<P: RwSemPolicy> lock_api::RawRwLockUpgradeFair for RawRwSem<P> {
    unsafe fn unlock_upgradable_fair(&self) {
        // SAFETY: forwarded caller contract.
        unsafe { self.upgradable_unlock_fair() }
    }
    unsafe fn bump_upgradable(&self) {
        if self.has_waiters() {
            // SAFETY: forwarded caller contract; re-taken before returning.
            unsafe { lock_api::RawRwLockUpgradeFair::unlock_upgradable_fair(self) };
            self.upgradable_read();
        }
    }
}

// SAFETY: both downgrades keep a reader bias counted throughout, so no writer enters.
unsafe impl<P: RwSemPolicy> lock_api::RawRwLockUpgradeDowngrade for RawRwSem<P> {
    unsafe fn downgrade_upgradable(&self) {
        // SAFETY: forwarded caller contract.
        unsafe { RawRwSem::downgrade_upgradable(self) }
    }
    unsafe fn downgrade_to_upgradable(&self) {
        // SAFETY: forwarded caller contract.
        unsafe { RawRwSem::downgrade_to_upgradable(self) }
    }
}

// SAFETY: as the untimed variants when they return true; on false the lock is as before.
unsafe impl<P: RwSemPolicy> lock_api::RawRwLockUpgradeTimed for RawRwSem<P> {
    fn try_lock_upgradable_for(&self, timeout: Self::Duration) -> bool {
        self.try_upgradable_read_for(timeout)
    }
    fn try_lock_upgradable_until(&self, timeout: Self::Instant) -> bool {
        self.try_upgradable_read_until(timeout)
    }
    unsafe fn try_upgrade_for(&self, timeout: Self::Duration) -> bool {
        // SAFETY: forwarded caller contract.
        unsafe { RawRwSem::try_upgrade_for(self, timeout) }
    }
    unsafe fn try_upgrade_until(&self, timeout: Self::Instant) -> bool {
        // SAFETY: forwarded caller contract.
        unsafe { RawRwSem::try_upgrade_until(self, timeout) }
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
/// Upgradable read guard of an [`RwSem`].
pub type RwSemUpgradableReadGuard<'a, T> =
    lock_api::RwLockUpgradableReadGuard<'a, RawRwSem<DefaultPolicy>, T>;
