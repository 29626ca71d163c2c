//! The read side: fast paths, the blocked reader's spin and yields, queueing, reader
//! spinning (S4). State tables and rules: the module doc of [`super`].

use super::*;

impl<P: RwSemPolicy> RawRwSem<P> {
    /// The read fast path every read lock shares: add a bias; held unless the count then has a
    /// bit of `fail`, else the slow path. A `fail` with `WAITERS` in it is a read behind
    /// waiters (`behind` of [`read_contended`](Self::read_contended)). Returns whether the
    /// lock is held (false only when `deadline` passed).
    #[inline(always)]
    pub(super) fn read_with(&self, fail: State, deadline: Deadline) -> bool {
        let c = self
            .count
            .fetch_add(READER_BIAS, Acquire)
            .wrapping_add(READER_BIAS);
        if c & fail == 0 {
            self.set_reader_owned(current());
            stats::acquired_read(self);
            return true;
        }
        let w = stats::contended_read(self);
        w.done(self.read_contended(c, deadline, fail & WAITERS))
    }

    /// Acquires a read lock, sleeping if needed (`down_read`).
    #[cfg_attr(feature = "stats", inline(always))]
    #[cfg_attr(not(feature = "stats"), inline)]
    pub fn read(&self) {
        self.read_with(READ_FAILED_MASK, None);
    }

    /// Takes a read lock only where [`read`](Self::read) would not wait: no writer holds the
    /// lock or waits awake for it (a sleeping queued writer does not count; module doc,
    /// "Readers and sleeping writers"). Never spins or sleeps.
    #[inline]
    pub fn try_read(&self) -> bool {
        self.try_read_unless(READ_FAILED_MASK)
    }

    /// Acquires a read lock, giving up at `timeout` from now. Returns whether it is held.
    pub fn try_read_for(&self, timeout: std::time::Duration) -> bool {
        self.read_with(READ_FAILED_MASK, Some(sys::deadline_after(timeout)))
    }

    /// Acquires a read lock, giving up at `deadline`. Returns whether it is held.
    pub fn try_read_until(&self, deadline: std::time::Instant) -> bool {
        let deadline = sys::deadline_from_instant(deadline);
        self.read_with(READ_FAILED_MASK, Some(deadline))
    }

    /// Acquires a read lock that also waits behind every queued thread, asleep or awake: the
    /// kernel's `down_read` rule and glibc's `PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP`
    /// (module doc, "Reads behind waiters"). A thread that already holds a read lock must not
    /// call it while a writer may queue: it would wait for that writer, which waits for it.
    #[inline]
    pub fn read_behind_waiters(&self) {
        self.read_with(READ_FAILED_MASK | WAITERS, None);
    }

    /// [`read_behind_waiters`](Self::read_behind_waiters) without waiting: fails while a
    /// writer holds the lock or anybody waits for it (`down_read_trylock`).
    #[inline]
    pub fn try_read_behind_waiters(&self) -> bool {
        self.try_read_unless(READ_FAILED_MASK | WAITERS)
    }

    /// [`read_behind_waiters`](Self::read_behind_waiters), giving up after `timeout` (a
    /// `timeout` too large for the clock waits for ever). `true` = held.
    pub fn try_read_behind_waiters_for(&self, timeout: std::time::Duration) -> bool {
        let deadline = Some(sys::deadline_after(timeout));
        self.read_with(READ_FAILED_MASK | WAITERS, deadline)
    }

    /// Acquires a read lock that cannot deadlock against an outer read lock held by this thread
    /// (module doc, "Recursive reads"): waits only while a writer holds the lock.
    #[inline]
    pub fn read_recursive(&self) {
        self.read_with(RECURSIVE_READ_FAIL, None);
    }

    /// [`read_recursive`](Self::read_recursive), giving up after `timeout` (a `timeout` too
    /// large for the clock waits for ever). `true` = held.
    pub fn try_read_recursive_for(&self, timeout: std::time::Duration) -> bool {
        self.read_with(RECURSIVE_READ_FAIL, Some(sys::deadline_after(timeout)))
    }

    /// [`read_recursive`](Self::read_recursive), giving up at `deadline`. `true` = held.
    pub fn try_read_recursive_until(&self, deadline: std::time::Instant) -> bool {
        let deadline = sys::deadline_from_instant(deadline);
        self.read_with(RECURSIVE_READ_FAIL, Some(deadline))
    }

    /// `try_read` for nesting: fails only while a writer holds the lock.
    #[inline]
    pub fn try_read_recursive(&self) -> bool {
        self.try_read_unless(RECURSIVE_READ_FAIL)
    }

    /// Releases a read lock (`up_read`).
    ///
    /// # Safety
    /// The calling thread (or the thread it took the lock over from) holds a read lock.
    /// Unlocking a lock with no reader counted is detected and panics.
    #[cfg_attr(feature = "stats", inline(always))]
    #[cfg_attr(not(feature = "stats"), inline)]
    pub unsafe fn read_unlock(&self) {
        const WHAT: &str = "read_unlock of a lock that is not read-locked";
        stats::released_read(self);
        if let Some(old) = self.release_unit(READER_BIAS, READER_MASK, WHAT) {
            self.after_reader_release(old.wrapping_sub(READER_BIAS));
        }
    }

    /// An unlock's release of one `unit` (a reader bias, or the writer bit) from `count`:
    /// `None` when the common case's CAS (`count == unit` → 0, nobody else counted, no flag)
    /// did it, else the count before the `fetch_sub` that did. The CAS is the unlock's first
    /// access to the lock's line (module doc, "One transfer per unlock"); the value a failed
    /// CAS returns is checked before anything is written (module doc, "Misuse": a count with
    /// none of `held` is never modified; a second misuse racing the first is caught by the
    /// RMW's old value and undone). Then one `fetch_sub`, not a CAS loop: under reader traffic
    /// a loop retries on every other reader's add. Release pairs with the next acquirer's
    /// Acquire.
    #[inline(always)]
    pub(super) fn release_unit(&self, unit: State, held: State, what: &str) -> Option<State> {
        let c = match self.count.compare_exchange(unit, 0, Release, Relaxed) {
            Ok(_) => return None,
            Err(c) => c,
        };
        if c & held == 0 {
            misuse(what);
        }
        let old = self.count.fetch_sub(unit, Release);
        if old & held == 0 {
            self.count.fetch_add(unit, Relaxed);
            misuse(what);
        }
        Some(old)
    }

    #[inline]
    pub(super) fn try_read_unless(&self, fail: State) -> bool {
        let mut c = self.count.load(Relaxed);
        // A CAS loop, not a spin: it retries only when `count` changed under it.
        while c & fail == 0 {
            match self
                .count
                .compare_exchange_weak(c, c + READER_BIAS, Acquire, Relaxed)
            {
                Ok(_) => {
                    self.set_reader_owned(current());
                    stats::acquired_read(self);
                    return true;
                }
                Err(x) => c = x,
            }
        }
        false
    }

    /// A reader bias was removed and `c` is the new count: wake if that freed a lock with
    /// waiters (also used for phantom biases, which may have hidden the release from others).
    #[inline]
    pub(super) fn after_reader_release(&self, c: State) {
        // Not while WRITER_WANT is set: its holder takes the lock (and wakes at its unlock) or
        // wakes the waiters when it gives up (`drop_want`).
        if c & (LOCK_MASK | WAITERS | WOKEN | WRITER_WANT) == WAITERS {
            self.clear_nonspinnable();
            self.wake();
        }
        // An upgrade waits for its own bias to be the last one.
        if c & UPGRADING != 0 && c & READER_MASK == READER_BIAS {
            self.wake_upgrader();
        }
    }

    /// Removes this thread's (phantom) reader bias with read-unlock semantics.
    pub(super) fn drop_reader_bias(&self) {
        let c = self
            .count
            .fetch_sub(READER_BIAS, Release)
            .wrapping_sub(READER_BIAS);
        self.after_reader_release(c);
    }

    /// `owner = me | READER_OWNED` keeping NONSPINNABLE; written only when the word is not
    /// already reader-owned. Which reader it names is a hint nobody acts on, and a store per
    /// read lock would put the owner line in every reader's path (two readers alternating
    /// bounced it on every acquisition).
    #[inline]
    pub(super) fn set_reader_owned(&self, me: &'static ThreadRec) {
        let o = self.owner.load(Relaxed);
        if o & OWNER_READER == 0 {
            self.owner.store(
                me.owner_word() | OWNER_READER | (o & OWNER_NONSPINNABLE),
                Release,
            );
        }
    }

    #[inline]
    pub(super) fn clear_nonspinnable(&self) {
        if self.owner.load(Relaxed) & OWNER_NONSPINNABLE != 0 {
            self.owner.fetch_and(!OWNER_NONSPINNABLE, Relaxed);
        }
    }

    /// The reader slow path; `c` is the count after this reader's bias was added. `behind` is
    /// `WAITERS` for a read behind waiters (it never joins while anybody is queued), else 0.
    /// Returns whether the lock is held (false only when `deadline` passed).
    #[cold]
    #[inline(never)]
    pub(super) fn read_contended(&self, c: State, deadline: Deadline, behind: State) -> bool {
        chaos::point(Site::ReadContended);
        events::count(Ev::rwsem_read_slow);
        let me = current();
        if c & READ_FAIL != 0 {
            self.count.fetch_sub(READER_BIAS, Relaxed);
            misuse("reader count overflow (more than 2^55 read locks)");
        }
        if c & behind != 0 {
            // Queued threads go first: queue behind them (the queueing RMW removes our bias).
            return self.read_queue(me, true, deadline, true);
        }
        let mut has_bias = true;
        if P::READER_SPIN != ReaderSpin::Off && behind == 0 {
            match self.reader_try_spin(me, c) {
                ReaderSpinResult::Acquired => return true,
                ReaderSpinResult::Failed => has_bias = false,
                ReaderSpinResult::Skipped => {}
            }
        }
        if has_bias {
            // What blocked the fast path may be gone already (a write section is tens of ns).
            // Acquire pairs with the Release of the unlock that cleared the writer bit.
            let c = self.count.load(Acquire);
            if c & (READ_BLOCKED | behind) == 0 {
                // Our bias is counted and no writer holds or claims the lock: we hold it.
                self.set_reader_owned(me);
                self.after_join(me, c);
                return true;
            }
            if !crate::ablate::on(crate::ablate::Mech::ReaderCountSpin) {
                return self.read_queue(me, true, deadline, true);
            }
            if P::READER_SPIN == ReaderSpin::Off && c & behind == 0 {
                // Wait for the writer phase on the count word before queueing. Without our
                // bias: a phantom bias would keep a WRITER_WANT writer waiting on us.
                self.drop_reader_bias();
                // Where blocked readers mostly end up asleep, queue and sleep at once (module
                // doc, "Readers behind a long write").
                if self.stats.skip_yields() {
                    return self.read_queue(me, false, deadline, false);
                }
                for y in 0..=pre_queue_yields() {
                    // The first yield comes before the first spin (module doc, "Meeting a
                    // writer").
                    if y > 0 || yield_on_writer() {
                        if self.count.load(Relaxed) & behind != 0 {
                            break; // queued threads go first
                        }
                        crate::sync::yield_now();
                    }
                    if self.read_spin(me, behind) {
                        self.stats.record_yields(true);
                        return true;
                    }
                }
                has_bias = false;
            }
        }
        self.read_queue(me, has_bias, deadline, true)
    }

    /// A blocked reader's spin (no bias counted): while a running writer holds the lock, or a
    /// writer waits awake for the readers to drain (`WRITER_WANT`, `HANDOFF`), poll `count` under
    /// the lock's adaptive budget and join as soon as nothing blocks readers. A write section
    /// is usually shorter than a futex sleep and wake (2–30 µs), and a queued reader costs the
    /// writer's unlock a wait_lock round trip. `behind = WAITERS`: a read behind waiters, which
    /// stops (and queues) as soon as anybody is queued. `true`: holds a read lock.
    ///
    /// Under loom it makes one attempt and no spin steps: the steps only delay the queueing
    /// (which the models cover), and they tripled the rwsem models' run time.
    pub(super) fn read_spin(&self, me: &'static ThreadRec, behind: State) -> bool {
        let mut spin = Spin::fixed(&self.stats, me);
        let res = loop {
            let c = self.count.load(Relaxed);
            if c & behind != 0 {
                break Err(Stop::OwnerNotRunning); // queued threads go first
            }
            if c & (READ_BLOCKED | READ_FAIL) == 0 {
                // Acquire pairs with the Release of the writer's unlock.
                if self
                    .count
                    .compare_exchange_weak(c, c + READER_BIAS, Acquire, Relaxed)
                    .is_ok()
                {
                    self.set_reader_owned(me);
                    break Ok(());
                }
            }
            let r = if cfg!(kslock_loom) {
                Err(Stop::Budget)
            } else if c & READ_BLOCKED == 0 {
                spin.step() // lost a race with another reader or writer: budgeted retry
            } else if c & WRITER_LOCKED != 0 {
                match writer_owner(self.owner.load(Relaxed)) {
                    Some(r) => spin.step_on(r),
                    None => spin.step(), // owner not yet published: budgeted
                }
            } else {
                spin.step() // an awake writer waits for readers to drain
            };
            if let Err(e) = r {
                break Err(e);
            }
        };
        let got = spin.finish(res);
        if got {
            events::count(Ev::rwsem_read_spin_acquired);
        }
        if got {
            self.after_join(me, self.count.load(Relaxed));
        }
        got
    }

    /// A slow-path reader joined; `c` is a count read after its join. If it is the only
    /// reader and waiters exist, it opened a reader group: queued readers may join it.
    fn after_join(&self, me: &'static ThreadRec, c: State) {
        if c & WAITERS != 0 && (c & READER_MASK) >> READER_SHIFT == 1 {
            self.wake_readers_owned(me);
        }
    }

    /// Queues a reader and waits for its grant. `spin`: it may spin on its grant before it
    /// sleeps, and whether it had to sleep feeds the lock's yield estimate (module doc,
    /// "Readers behind a long write"); a reader the gate sent here does neither.
    pub(super) fn read_queue(
        &self,
        me: &'static ThreadRec,
        has_bias: bool,
        deadline: Deadline,
        spin: bool,
    ) -> bool {
        events::count(Ev::rwsem_read_queued);
        let slot = WaitSlot::new(me, Kind::Read, GRANT_WAITING);
        let w = slot.node();
        w.set_timeout_ns(sys::now_ns().saturating_add(P::HANDOFF_NS));
        let mut wq = Wq::new();
        self.wait_lock.lock(me, &self.stats);
        let mut adj: State = if has_bias {
            READER_BIAS.wrapping_neg()
        } else {
            0
        };
        if self.wait_list.is_empty() {
            // No waiters means no WAITERS/HANDOFF; if no writer holds it now and no upgrade
            // waits for the readers to leave, our counted bias is a read lock. Acquire pairs
            // with the last writer's Release.
            if has_bias && self.count.load(Acquire) & (WRITER_LOCKED | UPGRADING) == 0 {
                self.set_reader_owned(me);
                self.wait_unlock(me, &mut wq);
                return true;
            }
            adj = adj.wrapping_add(WAITERS);
        }
        // SAFETY: wait_lock held; `w` stays at this address until it is unlinked under the
        // wait_lock (by a granting waker or by our own cancellation below).
        let first = unsafe { self.wait_list.push_back(w) };
        // The re-check: one RMW removes our phantom bias (and sets WAITERS), and its result
        // says whether an unlocker may have missed us.
        let c = self.count.fetch_add(adj, AcqRel).wrapping_add(adj);
        if has_bias && c & UPGRADING != 0 && c & READER_MASK == READER_BIAS {
            // Our phantom bias was the last besides the upgrader's. (A futex wake under the
            // wait_lock, in this rare race only.)
            self.wake_upgrader();
        }
        if c & LOCK_MASK == 0 {
            self.clear_nonspinnable();
            // SAFETY: wait_lock held.
            unsafe { self.mark_wake(WakeType::Any, &mut wq) };
        } else if c & WRITER_LOCKED == 0 && first {
            // SAFETY: wait_lock held.
            unsafe { self.mark_wake(WakeType::Readers, &mut wq) };
        }
        self.wait_unlock(me, &mut wq);
        if spin {
            let granted = self.grant_spin(me, w);
            self.stats.record_yields(granted);
            if granted {
                return handed();
            }
        }

        loop {
            // Acquire pairs with the grant's Release store in `mark_wake`.
            if w.state.load(Acquire) == GRANT_GRANTED {
                return handed();
            }
            events::count(Ev::rwsem_read_sleep);
            if me.park(deadline).is_err() {
                self.wait_lock.lock(me, &self.stats);
                if w.state.load(Acquire) == GRANT_GRANTED {
                    self.wait_unlock(me, &mut wq);
                    return handed();
                }
                // SAFETY: wait_lock held; not granted, so still linked.
                unsafe { self.cancel_waiter(w, &mut wq) };
                self.wait_unlock(me, &mut wq);
                return false;
            }
        }
    }

    /// A queued reader's spin before it sleeps (the rwsem's counterpart of the mutex's waiter
    /// spinning): poll the reader's own grant word, which no one else polls, while a *running
    /// writer* holds the lock or an awake writer waits for the readers to drain (`WRITER_WANT`,
    /// `HANDOFF`), under the calibrated cap (`Spin::fixed`). The grant arrives when that
    /// writer unlocks; catching it here saves the futex sleep and the waker's futex wake (a
    /// granted reader that is not parked needs no syscall), which cost 2–30 µs against
    /// critical sections of tens of ns. No spin while readers hold the lock with no writer
    /// awake (a queued writer is ahead of us, so the grant is at least a whole writer phase
    /// away) or while the owner sleeps or shares our CPU. `true` = granted.
    ///
    /// Not run under loom: it only delays the park (the grant check after it is the one the
    /// park loop makes), and its budgeted steps multiply the model's state space (rwsem models
    /// 25 s → 294 s).
    pub(super) fn grant_spin(&self, me: &'static ThreadRec, w: &Waiter) -> bool {
        if cfg!(kslock_loom) {
            return false;
        }
        let mut spin = Spin::fixed(&self.stats, me);
        loop {
            // Acquire pairs with the grant's Release store in `mark_wake`.
            if w.state.load(Acquire) == GRANT_GRANTED {
                spin.succeeded();
                return true;
            }
            let o = self.owner.load(Relaxed);
            let c = self.count.load(Relaxed);
            let r = match writer_owner(o) {
                Some(r) if c & WRITER_LOCKED != 0 => spin.step_on(r),
                // An awake writer waits for the readers to drain: its section and our grant
                // follow within a few critical sections.
                _ if c & WRITER_LOCKED == 0 && c & (WRITER_WANT | HANDOFF) != 0 => spin.step(),
                _ => Err(Stop::OwnerNotRunning),
            };
            if let Err(stop) = r {
                spin.failed(stop);
                return w.state.load(Acquire) == GRANT_GRANTED;
            }
        }
    }

    /// A stealing / spinning reader (or downgrade) holds a read lock and waiters exist: let
    /// queued readers join.
    pub(super) fn wake_readers_owned(&self, me: &'static ThreadRec) {
        let mut wq = Wq::new();
        self.wait_lock.lock(me, &self.stats);
        // SAFETY: wait_lock held.
        unsafe { self.mark_wake(WakeType::ReadOwned, &mut wq) };
        self.wait_unlock(me, &mut wq);
    }

    /// Seed S4: a reader's optimistic spin on a writer owner.
    pub(super) fn reader_try_spin(&self, me: &'static ThreadRec, c: State) -> ReaderSpinResult {
        if c & HANDOFF != 0 || self.owner.load(Relaxed) & OWNER_NONSPINNABLE != 0 {
            return ReaderSpinResult::Skipped;
        }
        let limited = P::READER_SPIN == ReaderSpin::Limited;
        if limited
            && (c & WRITER_LOCKED == 0
                || self.aux.fetch_or(AUX_READER_SPINNER, Acquire) & AUX_READER_SPINNER != 0)
        {
            return ReaderSpinResult::Skipped;
        }
        // A spinner keeps no phantom bias (it would hide the writer's release from unlockers).
        self.drop_reader_bias();
        let got = self.reader_optimistic_spin(me);
        if limited {
            self.aux.fetch_and(!AUX_READER_SPINNER, Release);
        }
        if !got {
            return ReaderSpinResult::Failed;
        }
        if self.count.load(Relaxed) & WAITERS != 0 {
            self.wake_readers_owned(me);
        }
        ReaderSpinResult::Acquired
    }

    #[inline(never)]
    pub(super) fn reader_optimistic_spin(&self, me: &'static ThreadRec) -> bool {
        let mut spin = Spin::new(&self.stats, me);
        if !self.osq.lock(me, P::OSQ_LAYOUT, &mut spin) {
            return false;
        }
        let res = loop {
            let c = self.count.load(Relaxed);
            let o = self.owner.load(Acquire);
            if o & OWNER_NONSPINNABLE != 0 || c & HANDOFF != 0 {
                break Err(Stop::OwnerNotRunning);
            }
            if c & WRITER_LOCKED == 0 {
                if P::READER_SPIN == ReaderSpin::Limited && c & WAITERS != 0 && c & READER_MASK != 0
                {
                    // The stealing rule: don't extend a reader group while others wait.
                    break Err(Stop::OwnerNotRunning);
                }
                let old = self.count.fetch_add(READER_BIAS, Acquire);
                if old & (WRITER_LOCKED | HANDOFF | UPGRADING | READ_FAIL) == 0 {
                    self.set_reader_owned(me);
                    break Ok(());
                }
                self.drop_reader_bias();
            }
            let r = match writer_owner(o) {
                Some(r) if c & WRITER_LOCKED != 0 => spin.step_on(r),
                _ => spin.step(),
            };
            if let Err(e) = r {
                break Err(e);
            }
        };
        self.osq.unlock(me, P::OSQ_LAYOUT, &self.stats);
        spin.finish(res)
    }
}

/// A queued reader's grant arrived: the waker counted its bias, so the lock was handed to it
/// (the statistics' "handoff" outcome). Returns `true`, the read lock held.
#[inline(always)]
fn handed() -> bool {
    stats::note(stats::Note::Handoff);
    true
}
