//! Waking: cancellation, the unlock wake path with the S0 policies, `mark_wake`. State tables
//! and rules: [`super`].

use super::*;

impl<P: RwSemPolicy> RawRwSem<P> {
    /// Takes a waiter out after its deadline passed (wait_lock held): if it was the head, the
    /// new head may proceed (or inherits HANDOFF); if the list empties, WAITERS and HANDOFF go.
    ///
    /// # Safety
    /// The wait_lock is held and `w` is linked.
    pub(super) unsafe fn cancel_waiter(&self, w: &Waiter, wq: &mut Wq) {
        chaos::point(Site::Leaving);
        let was_first = self.wait_list.is_first(w);
        // SAFETY: caller contract.
        if unsafe { self.wait_list.remove(w) } {
            self.count.fetch_and(!(WAITERS | HANDOFF | WOKEN), Relaxed);
        } else {
            // A wakeup in flight may have been ours: let the next unlock wake the new head.
            self.count.fetch_and(!WOKEN, Relaxed);
            if was_first {
                // SAFETY: wait_lock held.
                unsafe { self.mark_wake(WakeType::Any, wq) };
            }
        }
    }

    /// The unlock slow path (`rwsem_wake`), through the S0 policy.
    #[cold]
    #[inline(never)]
    pub(super) fn wake(&self) {
        chaos::point(Site::RwReleased);
        events::count(Ev::rwsem_wake);
        let me = current();
        match P::WAKE {
            WakePolicy::Deferred => self.wait_lock.lock(me, &self.stats),
            WakePolicy::WakeFlag => {
                // AcqRel: our count update travels to the waker through this RMW chain.
                if self.aux.fetch_or(AUX_WAKING, AcqRel) & AUX_WAKING != 0 {
                    return; // the flag holder clears it after taking the wait_lock, then looks
                }
                self.wait_lock.lock(me, &self.stats);
                // Clear *before* reading the queue: an unlocker that skipped after this point
                // saw the flag clear and wakes itself; one that skipped before is ordered by
                // this RMW reading its RMW.
                self.aux.fetch_and(!AUX_WAKING, AcqRel);
            }
            WakePolicy::TrylockIfSpinner => {
                if self.osq.has_spinner() {
                    if !self.wait_lock_or_defer(me) {
                        return;
                    }
                } else {
                    self.wait_lock.lock(me, &self.stats);
                }
            }
        }
        let mut wq = Wq::new();
        // SAFETY: wait_lock held.
        unsafe { self.mark_wake(WakeType::Any, &mut wq) };
        self.wait_unlock(me, &mut wq);
    }

    /// S0 `TrylockIfSpinner`: trylock the wait_lock; on failure leave the wake to its holder.
    pub(super) fn wait_lock_or_defer(&self, me: &'static ThreadRec) -> bool {
        if self.wait_lock.try_lock(me) {
            return true;
        }
        self.aux.fetch_or(AUX_WAKE_PENDING, Release);
        // Pairs with the fence in `run_pending_wakes`: either our second trylock sees the
        // holder's unlock, or the holder sees AUX_WAKE_PENDING.
        fence(SeqCst);
        self.wait_lock.try_lock(me)
    }

    /// Drops the wait_lock and runs the deferred wakeups (futex wakes never happen under the
    /// wait_lock).
    pub(super) fn wait_unlock(&self, me: &'static ThreadRec, wq: &mut Wq) {
        self.wait_lock.unlock(me);
        wq.wake_all();
        if P::WAKE == WakePolicy::TrylockIfSpinner {
            self.run_pending_wakes(me, wq);
        }
    }

    /// S0 `TrylockIfSpinner`: after any wait_lock release, perform a wake an unlocker left to us.
    pub(super) fn run_pending_wakes(&self, me: &'static ThreadRec, wq: &mut Wq) {
        loop {
            fence(SeqCst);
            if self.aux.load(Relaxed) & AUX_WAKE_PENDING == 0
                || self.aux.fetch_and(!AUX_WAKE_PENDING, Acquire) & AUX_WAKE_PENDING == 0
            {
                return;
            }
            if !self.wait_lock_or_defer(me) {
                return; // the new holder inherits the pending wake
            }
            // SAFETY: wait_lock held.
            unsafe { self.mark_wake(WakeType::Any, wq) };
            self.wait_lock.unlock(me);
            wq.wake_all();
        }
    }

    /// `rwsem_mark_wake` (`docs/kernel-locks.md` A.5): decide whom to wake; queue their records in
    /// `wq`. Returns whether anything was queued.
    ///
    /// # Safety
    /// The wait_lock is held.
    pub(super) unsafe fn mark_wake(&self, wt: WakeType, wq: &mut Wq) -> bool {
        // SAFETY: wait_lock held.
        if unsafe { self.wait_list.purge_ghosts() } && self.wait_list.is_empty() {
            self.count.fetch_and(!(WAITERS | HANDOFF | WOKEN), Relaxed);
        }
        let first = self.wait_list.first();
        if first.is_null() {
            return false;
        }
        // SAFETY: linked waiters are alive while the wait_lock is held.
        let head = unsafe { &*first };
        if head.kind() == Kind::Write {
            if wt == WakeType::Any {
                self.count.fetch_or(WOKEN, Relaxed);
                wq.push(head.rec());
                return true;
            }
            return false;
        }
        if self.count.load(Relaxed) & (READ_FAIL | WRITER_WANT | UPGRADING) != 0 {
            // A running writer or an upgrader waits for the readers to drain: it takes the lock
            // and wakes at its unlock, or gives up and wakes (`drop_want`, a timed upgrade's
            // cancellation). (A re-check in the trial below.)
            return false;
        }
        let mut trial: State = 0;
        if wt != WakeType::ReadOwned {
            // Claim the lock for the head reader before counting the batch, so a writer
            // cannot slip in. Acquire pairs with the last unlock's Release: the grantees
            // (synchronising with our grant store) see the previous writer's data.
            trial = READER_BIAS;
            let old = self.count.fetch_add(READER_BIAS, Acquire);
            if old & (WRITER_WANT | UPGRADING) != 0 && old & WRITER_LOCKED == 0 {
                // WRITER_WANT or UPGRADING came up since the check above: leave the lock to
                // its holder (and wake an upgrader our trial bias kept waiting).
                let c = self
                    .count
                    .fetch_sub(READER_BIAS, Relaxed)
                    .wrapping_sub(READER_BIAS);
                if c & UPGRADING != 0 && c & READER_MASK == READER_BIAS {
                    self.wake_upgrader();
                }
                return false;
            }
            if old & WRITER_LOCKED != 0 {
                // A writer stole the lock. If the head waited long enough, reserve the lock
                // for it in the same RMW that removes the trial bias.
                let mut undo = READER_BIAS.wrapping_neg();
                if old & HANDOFF == 0 && sys::now_ns() >= head.timeout_ns() {
                    undo = undo.wrapping_add(HANDOFF);
                    head.set_handoff(true);
                }
                self.count.fetch_add(undo, Relaxed);
                return false;
            }
            self.set_reader_owned(head.rec());
        }
        // Pass 1: count the readers to grant (writers keep their places).
        let (mut woken, mut writers, mut more) = (0usize, false, false);
        // SAFETY: wait_lock held.
        unsafe {
            self.wait_list.for_each(|w| {
                if w.kind() == Kind::Write {
                    writers = true;
                } else if woken == MAX_READERS_WAKEUP {
                    more = true;
                    return false;
                } else {
                    woken += 1;
                }
                true
            })
        };
        let c = self.count.load(Relaxed); // HANDOFF/WAITERS only change under the wait_lock
        let mut adj = (woken as State * READER_BIAS).wrapping_sub(trial);
        if !writers && !more {
            adj = adj.wrapping_sub(WAITERS | (c & WOKEN));
        }
        if c & HANDOFF != 0 {
            adj = adj.wrapping_sub(HANDOFF); // the head reader's reservation is used up
        }
        if adj != 0 {
            self.count.fetch_add(adj, Relaxed);
        }
        events::add(Ev::rwsem_readers_granted, woken as u64);
        // Pass 2: unlink and grant. After the Release store the waiter may return at once; we
        // only queue its (type-stable) record for the wakeup.
        let mut left = woken;
        // SAFETY: wait_lock held; the callback unlinks only the waiter it is given.
        unsafe {
            self.wait_list.for_each(|w| {
                if left == 0 {
                    return false;
                }
                if w.kind() == Kind::Read {
                    let rec = w.rec();
                    self.wait_list.remove(w);
                    w.state.store(GRANT_GRANTED, Release);
                    wq.push(rec);
                    chaos::point(Site::Granted);
                    left -= 1;
                }
                true
            })
        };
        true
    }
}
