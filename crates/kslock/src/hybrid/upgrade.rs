//! Upgradable reads: one thread at a time holds `m` with `UPG` set in `count`. It excludes
//! writers and other upgradable holders (they need `m`) but not shared readers, and it upgrades
//! the way a writer takes the lock: raise `WANT`, wait for the shared readers, take `LOCKED`.
//! Reads in the `EXCL` mode check `UPG` and read shared while it is set, so they do not queue
//! behind an upgradable holder (a read that checked just before `UPG` was set may still queue
//! on `m` behind it until it unlocks). State table: [`super`].

use super::*;

impl RawHybridRwSem {
    /// Acquires the upgradable read lock.
    pub fn upgradable_read(&self) {
        self.m.lock();
        self.count.fetch_or(UPG, Relaxed);
    }

    /// Takes the upgradable read lock if `m` is free. Never waits.
    pub fn try_upgradable_read(&self) -> bool {
        self.m.try_lock() && {
            self.count.fetch_or(UPG, Relaxed);
            true
        }
    }

    /// Acquires the upgradable read lock, giving up at `deadline` (monotonic ns).
    #[cfg_attr(kslock_loom, allow(dead_code))] // lock_api only
    pub(super) fn upgradable_read_until(&self, deadline: u64) -> bool {
        self.m.lock_until(deadline) && {
            self.count.fetch_or(UPG, Relaxed);
            true
        }
    }

    fn check_upgradable(&self, what: &str) {
        if !self.m.is_owned_by_current_thread() || self.count.load(Relaxed) & UPG == 0 {
            panic!("{what} of a kslock hybrid rwsem by a thread that does not hold its upgradable lock");
        }
    }

    /// Releases the upgradable read lock.
    ///
    /// # Safety
    /// The calling thread holds the upgradable read lock.
    pub unsafe fn upgradable_unlock(&self) {
        self.check_upgradable("upgradable_unlock");
        self.count.fetch_and(!UPG, Release);
        // SAFETY: the holder of `UPG` holds `m` (checked).
        unsafe { self.m.unlock() };
    }

    /// Releases the upgradable read lock, handing `m` to its head waiter.
    ///
    /// # Safety
    /// The calling thread holds the upgradable read lock.
    pub unsafe fn upgradable_unlock_fair(&self) {
        self.check_upgradable("upgradable_unlock");
        self.count.fetch_and(!UPG, Release);
        // SAFETY: as in `upgradable_unlock`.
        unsafe { self.m.unlock_fair() };
    }

    /// Turns the upgradable read lock into the write lock, waiting for the shared readers.
    ///
    /// # Safety
    /// The calling thread holds the upgradable read lock.
    pub unsafe fn upgrade(&self) {
        self.check_upgradable("upgrade");
        self.upgrade_until(None);
    }

    /// Upgrades only if no shared reader holds the lock. Never waits.
    ///
    /// # Safety
    /// The calling thread holds the upgradable read lock.
    pub unsafe fn try_upgrade(&self) -> bool {
        self.check_upgradable("try_upgrade");
        let c = self.count.load(Relaxed);
        readers(c) == 0
            && self
                .count
                .compare_exchange(
                    c,
                    (c - UPG).wrapping_add(WANT + LOCKED + OP),
                    Acquire,
                    Relaxed,
                )
                .is_ok()
    }

    /// Upgrades, giving up at `deadline` (monotonic ns): on `false` the caller still holds
    /// the upgradable read lock.
    ///
    /// # Safety
    /// The calling thread holds the upgradable read lock.
    #[cfg_attr(kslock_loom, allow(dead_code))] // lock_api only
    pub(super) unsafe fn try_upgrade_by(&self, deadline: u64) -> bool {
        self.check_upgradable("try_upgrade");
        self.upgrade_until(Some(deadline))
    }

    /// `UPG` → `WANT` in one RMW (no writer can come between: we hold `m`), then the
    /// writer's drain.
    fn upgrade_until(&self, deadline: Option<u64>) -> bool {
        let old = self
            .count
            .fetch_add(WANT.wrapping_sub(UPG).wrapping_add(OP), Acquire);
        self.count_shared_op(old);
        self.drain(deadline, true)
    }

    /// Turns the upgradable read lock into a shared read lock.
    ///
    /// # Safety
    /// The calling thread holds the upgradable read lock.
    pub unsafe fn downgrade_upgradable(&self) {
        self.check_upgradable("downgrade_upgradable");
        // A reader bias in, `UPG` out, in one RMW; Release as an unlock.
        self.count
            .fetch_add(READER.wrapping_sub(UPG).wrapping_add(OP), Release);
        // SAFETY: the holder of `UPG` holds `m`.
        unsafe { self.m.unlock() };
    }

    /// Turns the write lock into the upgradable read lock (readers may join again).
    ///
    /// # Safety
    /// The calling thread holds the write lock.
    pub unsafe fn downgrade_to_upgradable(&self) {
        self.check_writer("downgrade_to_upgradable");
        // WANT and LOCKED out, UPG in; `m` stays held. Release: joining readers see the data.
        self.count
            .fetch_add(UPG.wrapping_sub(WANT + LOCKED), Release);
    }
}
