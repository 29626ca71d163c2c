//! Upgradable reads (module doc of [`super`], "Upgradable reads"): the upgradable holder is a
//! reader (one bias in `count`) that also owns `AUX_UPGRADABLE`; an upgrade raises
//! `UPGRADING` and waits for the other readers to drain, then turns its bias into the writer
//! bit in one CAS. State tables and rules: [`super`].

use super::*;

impl<P: RwSemPolicy> RawRwSem<P> {
    /// Acquires an upgradable read lock: it coexists with readers and excludes writers and
    /// other upgradable holders; [`upgrade`](Self::upgrade) later turns it into the write lock
    /// with no writer in between. Waits like a reader, and while another thread holds the
    /// upgradable lock, without holding anything.
    pub fn upgradable_read(&self) {
        self.upgradable_until(None);
    }

    /// Takes an upgradable read lock only if that needs no waiting (`try_read` succeeds and no
    /// other thread holds the upgradable lock).
    pub fn try_upgradable_read(&self) -> bool {
        if !self.try_read() {
            return false;
        }
        if self.take_upgradable_bit() {
            return true;
        }
        // SAFETY: the read lock taken above.
        unsafe { self.read_unlock() };
        false
    }

    /// [`upgradable_read`](Self::upgradable_read), giving up after `timeout` (a `timeout` too
    /// large for the clock waits for ever). `true` = held.
    pub fn try_upgradable_read_for(&self, timeout: std::time::Duration) -> bool {
        self.upgradable_until(Some(sys::deadline_after(timeout)))
    }

    /// [`upgradable_read`](Self::upgradable_read), giving up at `deadline` (one in the past
    /// still takes a lock that needs no waiting). `true` = held.
    pub fn try_upgradable_read_until(&self, deadline: std::time::Instant) -> bool {
        self.upgradable_until(Some(sys::deadline_from_instant(deadline)))
    }

    fn upgradable_until(&self, deadline: Deadline) -> bool {
        loop {
            if !self.read_with(READ_FAILED_MASK, deadline) {
                return false;
            }
            if self.take_upgradable_bit() {
                return true;
            }
            // Another thread is the upgradable holder. Never wait for it with a read lock held:
            // its upgrade waits for every other reader to leave.
            // SAFETY: the read lock taken above.
            unsafe { self.read_unlock() };
            if !self.wait_aux(deadline, AUX_SLEEPERS, |a, _| a & AUX_UPGRADABLE == 0) {
                return false;
            }
        }
    }

    /// Claims `AUX_UPGRADABLE` while holding a read lock. Relaxed: the read lock already
    /// ordered this thread after the last writer; upgradable holders exclude each other only to
    /// keep two upgrades from waiting for each other's reader bias.
    fn take_upgradable_bit(&self) -> bool {
        self.aux.fetch_or(AUX_UPGRADABLE, Relaxed) & AUX_UPGRADABLE == 0
    }

    /// Gives `AUX_UPGRADABLE` up and wakes the threads waiting for it (one RMW: a sleeper set
    /// `AUX_SLEEPERS` with an RMW on the same word, so either it saw the bit clear or we see
    /// its flag). A stale `AUX_DRAIN_SLEEP` of ours goes too.
    fn release_upgradable_bit(&self) {
        let old = self
            .aux
            .fetch_and(!(AUX_UPGRADABLE | AUX_SLEEPERS | AUX_DRAIN_SLEEP), Relaxed);
        if old & AUX_SLEEPERS != 0 {
            sys::futex_wake(&self.aux, i32::MAX);
        }
    }

    /// Panics unless an upgradable lock is held (a load: see "Misuse" in the module doc).
    fn check_upgradable(&self, what: &str) {
        if self.aux.load(Relaxed) & AUX_UPGRADABLE == 0 {
            misuse(what);
        }
    }

    /// Releases an upgradable read lock.
    ///
    /// # Safety
    /// The calling thread holds the upgradable lock. Unlocking a lock that nobody holds
    /// upgradable is detected and panics.
    pub unsafe fn upgradable_unlock(&self) {
        self.check_upgradable("unlock_upgradable of a lock that is not upgradable-locked");
        // The bit first: its holder must always hold a bias or the write lock
        // (`downgrade_to_upgradable` relies on it).
        self.release_upgradable_bit();
        // SAFETY: the upgradable holder's read bias.
        unsafe { self.read_unlock() };
    }

    /// Turns the upgradable lock into a plain read lock; another thread may then take the
    /// upgradable lock.
    ///
    /// # Safety
    /// The calling thread holds the upgradable lock (checked).
    pub unsafe fn downgrade_upgradable(&self) {
        self.check_upgradable("downgrade_upgradable of a lock that is not upgradable-locked");
        self.release_upgradable_bit();
    }

    /// Turns the write lock into an upgradable read lock without letting a writer in between,
    /// and lets queued readers join.
    ///
    /// # Safety
    /// The calling thread holds the write lock (checked as in `downgrade`).
    pub unsafe fn downgrade_to_upgradable(&self) {
        // No other thread can hold the bit: its holder would hold a bias or the write lock.
        let old = self.aux.fetch_or(AUX_UPGRADABLE, Relaxed);
        debug_assert_eq!(
            old & AUX_UPGRADABLE,
            0,
            "upgradable bit held beside a writer"
        );
        // SAFETY: forwarded caller contract.
        unsafe { self.downgrade() };
    }

    /// Turns the upgradable lock into the write lock, waiting for the other readers to leave.
    /// New readers stay out meanwhile (`UPGRADING`); no writer can come in between.
    ///
    /// # Safety
    /// The calling thread holds the upgradable lock (checked).
    pub unsafe fn upgrade(&self) {
        self.check_upgradable("upgrade of a lock that is not upgradable-locked");
        self.upgrade_until(None);
    }

    /// Turns the upgradable lock into the write lock if no other reader holds it now.
    ///
    /// # Safety
    /// The calling thread holds the upgradable lock (checked).
    pub unsafe fn try_upgrade(&self) -> bool {
        self.check_upgradable("try_upgrade of a lock that is not upgradable-locked");
        self.try_convert() && {
            stats::acquired(self);
            true
        }
    }

    /// [`upgrade`](Self::upgrade), giving up after `timeout`: the upgradable lock is then still
    /// held. `true` = now the write lock.
    ///
    /// # Safety
    /// The calling thread holds the upgradable lock (checked).
    pub unsafe fn try_upgrade_for(&self, timeout: std::time::Duration) -> bool {
        self.check_upgradable("try_upgrade_for of a lock that is not upgradable-locked");
        self.upgrade_until(Some(sys::deadline_after(timeout)))
    }

    /// [`upgrade`](Self::upgrade), giving up at `deadline`: the upgradable lock is then still
    /// held. `true` = now the write lock.
    ///
    /// # Safety
    /// The calling thread holds the upgradable lock (checked).
    pub unsafe fn try_upgrade_until(&self, deadline: std::time::Instant) -> bool {
        self.check_upgradable("try_upgrade_until of a lock that is not upgradable-locked");
        self.upgrade_until(Some(sys::deadline_from_instant(deadline)))
    }

    /// The upgrade: keep new readers out (`UPGRADING`), spin under the cap, then sleep on
    /// `aux` until the reader unlock that leaves our bias alone wakes us (`wake_upgrader`).
    /// Statistics: an upgrade is an acquisition of the write side (contended when it waits);
    /// the read hold ends at the conversion ([`Self::try_convert`]).
    fn upgrade_until(&self, deadline: Deadline) -> bool {
        if self.try_convert() {
            stats::acquired(self);
            return true;
        }
        stats::contended(self).done(self.upgrade_wait(deadline))
    }

    /// [`Self::upgrade_until`] past its first conversion attempt.
    fn upgrade_wait(&self, deadline: Deadline) -> bool {
        let me = current();
        // Relaxed: only the upgradable holder sets or clears the bit; a reader that queued
        // because of it did so with an RMW on `count`, ordered against our clearing RMW.
        self.count.fetch_or(UPGRADING, Relaxed);
        let mut spin = Spin::fixed(&self.stats, me);
        loop {
            if self.try_convert() {
                spin.succeeded();
                return true;
            }
            if cfg!(kslock_loom) || spin.step().is_err() {
                break;
            }
        }
        loop {
            let drained = self.wait_aux(deadline, AUX_DRAIN_SLEEP, |_, c| {
                c & READER_MASK == READER_BIAS
            });
            if self.try_convert() {
                return true;
            }
            if !drained {
                // Timed out: stop keeping readers out, and let the ones that queued meanwhile
                // join our read lock.
                let c = self.count.fetch_and(!UPGRADING, Relaxed);
                if c & WAITERS != 0 {
                    self.wake_readers_owned(me);
                }
                return false;
            }
        }
    }

    /// If our bias is the only one: bias → writer bit, `UPGRADING` cleared, in one CAS, then
    /// give `AUX_UPGRADABLE` up (the write guard's unlock is a plain write unlock).
    fn try_convert(&self) -> bool {
        let mut c = self.count.load(Relaxed);
        while c & READER_MASK == READER_BIAS && c & WRITER_LOCKED == 0 {
            let new = (c - READER_BIAS + WRITER_LOCKED) & !UPGRADING;
            // Acquire pairs with the Release of the last reader unlocks: their reads happen
            // before our writes.
            match self.count.compare_exchange_weak(c, new, Acquire, Relaxed) {
                Ok(_) => {
                    stats::released_read(self);
                    self.owner.store(current_word(), Release);
                    self.release_upgradable_bit();
                    return true;
                }
                Err(x) => c = x,
            }
        }
        false
    }

    /// Sleeps on `aux` until `ready(aux, count)` holds, or `deadline` passes (`false`). Yields
    /// [`PRE_QUEUE_YIELDS`] times first. The sleeper raises its `flag` (`AUX_SLEEPERS` for a
    /// wait for the upgradable bit, `AUX_DRAIN_SLEEP` for the upgrade), then (SeqCst fence)
    /// reads `count`; a waker changes its word, then (SeqCst fence, [`Self::wake_upgrader`]) or
    /// in the same RMW ([`Self::release_upgradable_bit`]) reads and clears the flag: one of the
    /// two sees the other. The futex compares the whole word, so the flags must not suffer ABA:
    /// only the upgrader raises `AUX_DRAIN_SLEEP` (the one flag it sleeps on), and a waiter for
    /// the bit that sleeps on an `AUX_SLEEPERS` raised again by another waiter sleeps on a bit
    /// that is held again (loom found the lost wakeup one shared flag had).
    fn wait_aux(&self, deadline: Deadline, flag: u32, ready: impl Fn(u32, State) -> bool) -> bool {
        for y in 0..=PRE_QUEUE_YIELDS {
            if y > 0 {
                crate::sync::yield_now();
            }
            if ready(self.aux.load(Relaxed), self.count.load(Relaxed)) {
                return true;
            }
        }
        loop {
            let a = self.aux.fetch_or(flag, Relaxed) | flag;
            fence(SeqCst);
            if ready(a, self.count.load(Relaxed)) {
                return true;
            }
            events::count(Ev::rwsem_upgrade_sleep);
            if sys::futex_wait(&self.aux, a, deadline).is_err() {
                return ready(self.aux.load(Relaxed), self.count.load(Relaxed));
            }
        }
    }

    /// A reader bias left while `UPGRADING` is set and only the upgrader's remains: wake the
    /// upgrader if it sleeps (the partner of the fence in [`Self::wait_aux`]).
    #[cold]
    #[inline(never)]
    pub(super) fn wake_upgrader(&self) {
        fence(SeqCst);
        if self.aux.load(Relaxed) & AUX_DRAIN_SLEEP != 0
            && self.aux.fetch_and(!AUX_DRAIN_SLEEP, Relaxed) & AUX_DRAIN_SLEEP != 0
        {
            sys::futex_wake(&self.aux, i32::MAX);
        }
    }

    /// Releases a read lock fairly: if anyone waits, the lock is first reserved for the head
    /// waiter (`HANDOFF`, so the waiters the release wakes are not overtaken).
    ///
    /// # Safety
    /// As [`read_unlock`](Self::read_unlock).
    pub unsafe fn read_unlock_fair(&self) {
        self.reserve_for_head();
        // SAFETY: forwarded caller contract.
        unsafe { self.read_unlock() }
    }

    /// Releases the write lock fairly: if anyone waits, the lock is first reserved for the head
    /// waiter (`HANDOFF`, so the waiters the release wakes are not overtaken).
    ///
    /// # Safety
    /// As [`write_unlock`](Self::write_unlock).
    pub unsafe fn write_unlock_fair(&self) {
        self.reserve_for_head();
        // SAFETY: forwarded caller contract.
        unsafe { self.write_unlock() }
    }

    /// Releases the upgradable lock fairly: if anyone waits, the lock is first reserved for
    /// the head waiter (`HANDOFF`, so the waiters the release wakes are not overtaken).
    ///
    /// # Safety
    /// As [`upgradable_unlock`](Self::upgradable_unlock).
    pub unsafe fn upgradable_unlock_fair(&self) {
        self.reserve_for_head();
        // SAFETY: forwarded caller contract.
        unsafe { self.upgradable_unlock() }
    }

    /// The fair unlocks' first step: if anyone waits, reserve the lock for the head waiter
    /// (`HANDOFF`, under the wait_lock), so that the waiters the release wakes are not overtaken
    /// by running threads (parking_lot's `unlock_*_fair`). A head reader is then granted with
    /// the other queued readers, a head writer takes the lock as soon as the holders leave.
    fn reserve_for_head(&self) {
        if self.count.load(Relaxed) & WAITERS == 0 {
            return;
        }
        let me = current();
        self.wait_lock.lock(me, &self.stats);
        // SAFETY: wait_lock held.
        unsafe { self.wait_list.purge_ghosts() };
        let head = self.wait_list.first();
        if !head.is_null() {
            // SAFETY: linked waiters are alive while the wait_lock is held.
            let head = unsafe { &*head };
            if self.count.load(Relaxed) & HANDOFF == 0 {
                self.count.fetch_or(HANDOFF, Relaxed);
                head.set_handoff(true);
                events::count(Ev::rwsem_handoff_set);
            }
            // Also when the head raised HANDOFF itself: a head writer drops its own reservation
            // before it sleeps, and this one must outlast our release.
            head.set_keep_handoff();
        }
        self.wait_lock.unlock(me);
    }
}
