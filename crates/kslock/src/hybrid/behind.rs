//! Reads that wait behind every queued thread (glibc's writer-preferring rwlock kind, the
//! kernel's `down_read` rule) and the seed S3 write (`try_write_spin`). State tables: [`super`].

use super::*;

impl RawHybridRwSem {
    /// Is anybody in `m` or waiting for it (a writer holding or draining, a read through `m`,
    /// the upgradable lock, or any queued thread)? A hint, re-checked by the caller's RMW.
    fn anybody_at_m(&self) -> bool {
        self.m.is_locked() || self.m.has_waiters()
    }

    /// Acquires a read lock that also waits behind every thread in or queued for `m`: shared at
    /// once only while `m` is free and nobody waits for it, else through `m` behind them (the
    /// turnstile). A thread that already holds a read lock must not call it while a writer may
    /// queue: it would wait for that writer, which waits for it.
    pub fn read_behind_waiters(&self) {
        self.read_behind_until(None);
    }

    /// [`read_behind_waiters`](Self::read_behind_waiters) without waiting: fails while anybody
    /// holds or waits for `m`, or a writer holds or drains the lock.
    pub fn try_read_behind_waiters(&self) -> bool {
        !self.anybody_at_m() && self.try_read()
    }

    /// [`read_behind_waiters`](Self::read_behind_waiters), giving up after `timeout`.
    pub fn try_read_behind_waiters_for(&self, timeout: std::time::Duration) -> bool {
        self.read_behind_until(Some(crate::sys::deadline_after(timeout)))
    }

    /// [`read_behind_waiters`](Self::read_behind_waiters), giving up at `deadline`.
    pub fn try_read_behind_waiters_until(&self, deadline: std::time::Instant) -> bool {
        self.read_behind_until(Some(crate::sys::deadline_from_instant(deadline)))
    }

    fn read_behind_until(&self, deadline: Option<u64>) -> bool {
        if self.try_read_behind_waiters() {
            return true;
        }
        // Queue on `m` like a writer; holding it, no writer holds or drains the lock.
        self.turnstile(deadline)
    }

    /// Seed S3 for the write side: the write lock if `m` can be had by spinning while its
    /// holder runs (the mutex's `try_lock_spin`) and the shared readers then leave within the
    /// poll budget (the spin cap, new readers kept out by `WANT`). Never sleeps.
    pub fn try_write_spin(&self) -> bool {
        if !self.m.try_lock_spin() {
            return false;
        }
        if self.lock_if_no_reader() {
            return true;
        }
        self.raise_want();
        if self.drain_polling() {
            return true;
        }
        // Readers stayed: give up.
        self.abandon_write();
        false
    }
}
