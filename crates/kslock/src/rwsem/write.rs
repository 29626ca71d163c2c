//! The write side: fast paths, the writer's optimistic spin (`WRITER_WANT`), queueing,
//! `try_write_lock` and first-waiter spinning. State tables and rules: [`super`].

use super::*;
use crate::spin::{pause, recheck_pauses, QUICK_POLLS};

/// How many of a writer's pre-queue yields it spends while readers hold the lock before it
/// spins on them with `WRITER_WANT` (module doc, "Writer meets readers"): 2, a smaller change
/// than 4 and as good in its A/B (`docs/experiments.md`, "A writer meeting readers yields
/// first").
const READER_YIELDS: u32 = 2;
// `yield_before_spin` counts the yield on a writer owner among these.
const _: () = assert!(READER_YIELDS >= 1);

/// A writer yields before spinning on readers only while this lock's average spin is below
/// this many ns (module doc, "Writer meets readers"): about what a yield that returns at once
/// costs, 0.49 µs on the AMD EPYC VM ([`crate::spin`]'s `timed_yield`), rounded up to the
/// estimate's 64 ns units. Spins shorter than that end before such a yield would return.
const YIELD_FIRST_MAX_NS: u64 = 512;

impl<P: RwSemPolicy> RawRwSem<P> {
    /// Acquires the write lock, spinning or sleeping if needed (`down_write`).
    #[cfg_attr(feature = "stats", inline(always))]
    #[cfg_attr(not(feature = "stats"), inline)]
    pub fn write(&self) {
        match self
            .count
            .compare_exchange(0, WRITER_LOCKED, Acquire, Relaxed)
        {
            Ok(_) => self.owner.store(current_word(), Release),
            Err(c) if c == WAITERS | WOKEN && self.take_turn(c) => {}
            Err(_) => {
                let w = stats::contended(self);
                self.write_contended(None);
                return w.acquired();
            }
        }
        stats::acquired(self);
    }

    /// The turn holder's re-lock (module doc, "A woken head sleeps out its window"): the
    /// lock is free with a head writer asleep on its window (or its wakeup in flight, `c`),
    /// and if this thread released it last with the turn it takes it, `WAITERS` and `WOKEN`
    /// kept, as a spinner would. `true` = acquired.
    #[cold]
    #[inline(never)]
    fn take_turn(&self, c: State) -> bool {
        let rec = current();
        let me = rec.owner_word();
        // Only `note_turn` marks the owner word, and only with the switch on.
        if self.owner.load(Relaxed) != me | OWNER_TURN {
            return false;
        }
        let (lock, since) = rec.batch();
        if lock != self.addr()
            || !(cfg!(kslock_loom)
                || sys::now_ns().saturating_sub(since) < crate::fairness::window_ns().0)
        {
            return false; // the turn is over: compete from the slow path
        }
        // Acquire pairs with the Release of the unlock that freed the lock (our own, or a
        // reader's after us).
        if self
            .count
            .compare_exchange(c, c | WRITER_LOCKED, Acquire, Relaxed)
            .is_err()
        {
            return false;
        }
        self.owner.store(me, Release);
        events::count(Ev::rwsem_write_turn_acquired);
        true
    }

    /// Takes the write lock only if the lock is entirely free (no holder, no waiter).
    #[inline]
    pub fn try_write(&self) -> bool {
        if self
            .count
            .compare_exchange(0, WRITER_LOCKED, Acquire, Relaxed)
            .is_ok()
        {
            self.owner.store(current_word(), Release);
            stats::acquired(self);
            return true;
        }
        false
    }

    /// Seed S3 for the write side: like [`try_write`](Self::try_write), but when the lock is
    /// held it spins (through the OSQ, under the same rules as a writer's optimistic spin, at
    /// most 1 µs) while that can pay before failing. Never sleeps.
    ///
    /// The 1 µs cap is the mutex's (`RawMutex::try_lock_spin`, whose doc has the reason; the
    /// same switch, `KSLOCK_OFF=trylock_spin_cap`).
    pub fn try_write_spin(&self) -> bool {
        if self.try_write() {
            return true;
        }
        let me = current();
        // At most 1 µs, as the mutex's `try_lock_spin` (its doc).
        self.write_can_spin() && self.write_spin_with(me, Spin::for_trylock(&self.stats, me))
    }

    /// Acquires the write lock, giving up at `timeout` from now.
    pub fn try_write_for(&self, timeout: std::time::Duration) -> bool {
        self.try_write()
            || stats::contended(self).done(self.write_contended(Some(sys::deadline_after(timeout))))
    }

    /// Acquires the write lock, giving up at `deadline`.
    pub fn try_write_until(&self, deadline: std::time::Instant) -> bool {
        let deadline = Some(sys::deadline_from_instant(deadline));
        self.try_write() || stats::contended(self).done(self.write_contended(deadline))
    }

    /// Releases the write lock (`up_write`).
    ///
    /// # Safety
    /// The calling thread holds the write lock. Unlocking a lock that is not write-locked is
    /// detected and panics; unlocking another thread's write lock panics in debug builds and
    /// with feature `debug-locks`.
    #[cfg_attr(feature = "stats", inline(always))]
    #[cfg_attr(not(feature = "stats"), inline)]
    pub unsafe fn write_unlock(&self) {
        if DEBUG_LOCKS {
            self.check_write_owner("write_unlock");
        }
        // The owner hint goes first (a later writer stores its own; a misuse may clear a hint,
        // never the count). The store fetches the lock's line for writing, so the release's
        // CAS finds it here (module doc, "One transfer per unlock").
        self.owner.store(0, Relaxed);
        stats::released(self);
        const WHAT: &str = "write_unlock of a lock that is not write-locked";
        let Some(old) = self.release_unit(WRITER_LOCKED, WRITER_LOCKED, WHAT) else {
            return;
        };
        if old & (WAITERS | WOKEN) == WAITERS {
            stats::released_with_waiters(self);
            self.wake();
        } else if old & (WAITERS | WOKEN) == WAITERS | WOKEN {
            self.note_turn();
        }
    }

    /// A release while the head writer sleeps on its window: this thread holds the turn
    /// (`OWNER_TURN`), unless another thread took the lock and published itself meanwhile.
    #[cold]
    #[inline(never)]
    fn note_turn(&self) {
        if !crate::ablate::on(crate::ablate::Mech::WriterWindow) {
            return;
        }
        let rec = current();
        if rec.batch().0 != self.addr() {
            rec.set_batch(self.addr(), sys::now_ns());
        }
        let _ = self
            .owner
            .compare_exchange(0, rec.owner_word() | OWNER_TURN, Relaxed, Relaxed);
    }

    /// This lock's address (the turn run's key).
    fn addr(&self) -> usize {
        self as *const Self as usize
    }

    /// Turns the write lock into a read lock without letting a writer in between, and lets
    /// queued readers join (`downgrade_write`).
    ///
    /// # Safety
    /// The calling thread holds the write lock (checked as in [`write_unlock`](Self::write_unlock)).
    pub unsafe fn downgrade(&self) {
        let me = current();
        if DEBUG_LOCKS {
            self.check_write_owner("downgrade");
        }
        // Check before writing, as in `write_unlock`.
        if self.count.load(Relaxed) & WRITER_LOCKED == 0 {
            misuse("downgrade of a lock that is not write-locked");
        }
        let old = self
            .count
            .fetch_add(READER_BIAS.wrapping_sub(WRITER_LOCKED), Release);
        if old & WRITER_LOCKED == 0 {
            self.count
                .fetch_sub(READER_BIAS.wrapping_sub(WRITER_LOCKED), Relaxed);
            misuse("downgrade of a lock that is not write-locked");
        }
        self.owner.store(me.owner_word() | OWNER_READER, Release);
        // Statistics: the write hold ends, a read lock is taken without waiting.
        stats::released(self);
        stats::acquired_read(self);
        if old & WAITERS != 0 {
            self.wake_readers_owned(me);
        }
    }

    /// Is the lock held (or being taken) by anybody? A snapshot.
    pub fn is_locked(&self) -> bool {
        self.count.load(Relaxed) & LOCK_MASK != 0
    }

    /// Is the lock write-locked? A snapshot.
    pub fn is_write_locked(&self) -> bool {
        self.count.load(Relaxed) & WRITER_LOCKED != 0
    }

    /// Are threads queued? A snapshot.
    pub fn has_waiters(&self) -> bool {
        self.count.load(Relaxed) & WAITERS != 0
    }

    pub(super) fn check_write_owner(&self, what: &str) {
        let o = self.owner.load(Relaxed);
        if self.count.load(Relaxed) & WRITER_LOCKED == 0 {
            return; // reported by the caller's count check, which is always on
        }
        if o & OWNER_READER != 0 || o & !OWNER_FLAGS != current_word() {
            misuse(&format!(
                "{what} by a thread that does not hold the write lock"
            ));
        }
    }

    /// Might spinning pay? (kernel `can_spin`: not NONSPINNABLE; reader-owned only with
    /// `Bounded`; a writer owner that is not asleep.)
    pub(super) fn write_can_spin(&self) -> bool {
        let o = self.owner.load(Acquire);
        if o & OWNER_NONSPINNABLE != 0 {
            return false;
        }
        if o & OWNER_READER != 0 {
            return P::READER_OWNED_SPIN == ReaderOwnedSpin::Bounded;
        }
        writer_owner(o).map_or(true, |r| !r.is_parked())
    }

    /// Seed S2's reader bound R, ns (module doc).
    pub(super) fn reader_spin_bound_ns(c: State) -> u64 {
        let readers = ((c & READER_MASK) >> READER_SHIFT).min(30);
        crate::spin::spin_cap_ns() as u64 * (20 + readers) / 50
    }

    /// Marks the lock NONSPINNABLE if it is still reader-owned as seen (`o`).
    pub(super) fn set_nonspinnable(&self, o: u64) {
        if o & OWNER_READER != 0 && o & OWNER_NONSPINNABLE == 0 {
            let _ = self
                .owner
                .compare_exchange(o, o | OWNER_NONSPINNABLE, Relaxed, Relaxed);
        }
    }

    /// The writer's optimistic spin (`docs/kernel-locks.md` A.4 1). `true`: the write lock is held.
    #[inline(never)]
    pub(super) fn write_optimistic_spin(&self, me: &'static ThreadRec) -> bool {
        self.write_spin_with(me, Spin::new(&self.stats, me))
    }

    /// [`write_optimistic_spin`](Self::write_optimistic_spin) under the given spin (inlined
    /// into both callers, as the mutex's `spin_with`).
    #[inline(always)]
    fn write_spin_with(&self, me: &'static ThreadRec, mut spin: Spin<'_>) -> bool {
        if !self.osq.lock(me, P::OSQ_LAYOUT, &mut spin) {
            return false;
        }
        let mut reader_deadline: Option<u64> = None;
        let mut reader_steps = 0u32;
        let (mut reader_pauses, gap_pauses) = (1u32, crate::spin::poll_gap_pauses());
        let mut want = false;
        let res = loop {
            let c = self.count.load(Relaxed);
            if c & (LOCK_MASK | HANDOFF) == 0 {
                // Steal (WAITERS kept: spinners overtake sleepers until HANDOFF), consuming our
                // WRITER_WANT in the same CAS.
                let new = (c | WRITER_LOCKED) & !WRITER_WANT;
                if self
                    .count
                    .compare_exchange(c, new, Acquire, Relaxed)
                    .is_ok()
                {
                    want = false;
                    self.owner.store(me.owner_word(), Release);
                    break Ok(());
                }
            } else if c & HANDOFF != 0 {
                events::count(Ev::rwsem_spin_stop_handoff);
                break Err(Stop::OwnerNotRunning); // reserved for the head waiter
            }
            let o = self.owner.load(Acquire);
            if o & OWNER_NONSPINNABLE != 0 {
                events::count(Ev::rwsem_spin_stop_nonspinnable);
                break Err(Stop::OwnerNotRunning);
            }
            let r = if c & WRITER_LOCKED != 0 {
                reader_deadline = None;
                match writer_owner(o) {
                    Some(r) => spin.step_on(r),
                    None => spin.step(), // owner not yet published: budgeted
                }
            } else if c & READER_MASK != 0 {
                if P::READER_OWNED_SPIN == ReaderOwnedSpin::Never {
                    break Err(Stop::OwnerNotRunning);
                }
                if !want && c & WRITER_WANT == 0 {
                    // We run and wait for the readers: keep new ones out so they drain
                    // (module doc, "Writer spinning"). Only the OSQ holder owns this bit.
                    self.count.fetch_or(WRITER_WANT, Relaxed);
                    events::count(Ev::rwsem_want_set);
                    want = true;
                }
                let dl = *reader_deadline
                    .get_or_insert_with(|| sys::now_ns() + Self::reader_spin_bound_ns(c));
                reader_steps += 1;
                // Bounded by R alone, not by the lock's adaptive budget: that budget learns
                // how long writer owners hold, and with WRITER_WANT raised the wait is one
                // reader section (a budget shrunk below it failed every such spin).
                // The clock every 16 polls, and every poll once the backoff makes a poll ≥ 8
                // pauses (≈ 0.2 µs against a ≈ 10 ns clock read), so R overshoots by < 1 µs.
                let r = if (reader_steps % 16 == 0 || reader_pauses >= 8) && sys::now_ns() > dl {
                    Err(Stop::Budget)
                } else if cfg!(kslock_loom) {
                    spin.step() // loom: the frozen clock never passes `dl`
                } else {
                    // R6 of crate::spin: every poll of `count` pulls its line away from the
                    // readers, whose unlocks are RMWs on it; back off 1, 2, 4 … pauses up to the
                    // calibrated poll gap (32 on the AMD VM).
                    for _ in 0..reader_pauses {
                        crate::sync::spin_hint();
                    }
                    reader_pauses = (reader_pauses * 2).min(gap_pauses);
                    Ok(())
                };
                if r.is_err() {
                    self.set_nonspinnable(o);
                }
                r
            } else {
                spin.step() // the steal CAS lost a race
            };
            if let Err(e) = r {
                events::count(match e {
                    Stop::Budget => Ev::rwsem_spin_stop_budget,
                    Stop::OwnerNotRunning => Ev::rwsem_spin_stop_owner,
                });
                break Err(e);
            }
        };
        if want {
            self.drop_want(me);
        }
        self.osq.unlock(me, P::OSQ_LAYOUT, &self.stats);
        spin.finish(res)
    }

    /// A spinning writer gives up its `WRITER_WANT` without taking the lock: readers that
    /// queued because of it are owed a wake (no unlock of ours will come), and so is a head
    /// writer if the lock is free.
    #[cold]
    pub(super) fn drop_want(&self, me: &'static ThreadRec) {
        events::count(Ev::rwsem_want_dropped);
        let c = self.count.fetch_and(!WRITER_WANT, Relaxed) & !WRITER_WANT;
        if c & (WAITERS | WRITER_LOCKED) != WAITERS {
            return; // nobody waits, or the writer holding the lock wakes at its unlock
        }
        let mut wq = Wq::new();
        self.wait_lock.lock(me, &self.stats);
        let wt = if self.count.load(Relaxed) & LOCK_MASK == 0 {
            WakeType::Any
        } else {
            WakeType::Readers
        };
        // SAFETY: wait_lock held.
        unsafe { self.mark_wake(wt, &mut wq) };
        self.wait_unlock(me, &mut wq);
    }

    /// Should a writer whose fast path just failed, and that has yielded `yields` times so
    /// far, yield (again) before it spins? Up to [`READER_YIELDS`] times while readers alone
    /// hold the lock (module doc, "Writer meets readers"), once while a writer holds it
    /// ("Meeting a writer"); not right after a yield that ran nobody (`ran_nobody`; module doc,
    /// "A yield that ran nobody"); never under loom, where yields explore nothing.
    fn yield_before_spin(&self, yields: u32, ran_nobody: bool) -> bool {
        if cfg!(kslock_loom) || yields >= READER_YIELDS.min(pre_queue_yields()) || ran_nobody {
            return false;
        }
        let c = self.count.load(Relaxed);
        if c & WRITER_LOCKED != 0 {
            yields == 0 && yield_on_writer()
        } else {
            c & READER_MASK != 0
                && crate::ablate::on(crate::ablate::Mech::WriterYieldFirst)
                && self.spins_are_short()
        }
    }

    /// The writer's yield gate (module doc, "Writer meets readers"): do this lock's spins end
    /// within [`YIELD_FIRST_MAX_NS`] on average? No data reads as yes (yield first, as before
    /// the gate), and so does the switch `KSLOCK_OFF=writer_yield_gate`.
    fn spins_are_short(&self) -> bool {
        !crate::ablate::on(crate::ablate::Mech::WriterYieldGate)
            || self
                .stats
                .mean_spin_ns()
                .map_or(true, |ns| ns < YIELD_FIRST_MAX_NS)
    }

    /// The writer's gap poll (module doc, "Meeting a writer"): where this lock's spins win
    /// after short waits ([`SpinStats::wins_after_short_waits`]) and nobody queues or spins, a
    /// writer whose fast path failed on a writer owner polls `count` alone instead of yielding
    /// first, and takes the lock at its first sight of it free. It gives up, to yield as before,
    /// when readers, a reservation or a spinner's `WRITER_WANT` show, when the owner sleeps, and
    /// once one owner has held the lock for half a poll gap of pauses (≈ 430 ns here, about what
    /// a yield that runs nobody costs, 0.49 µs: [`crate::spin`]); at most [`QUICK_POLLS`] polls,
    /// 1, 2, then up to [`recheck_pauses`] apart. Not under loom (one CAS, which the models
    /// explore through the spins; the polls only multiply interleavings). `true` = acquired.
    fn writer_gap_poll(&self, me: &'static ThreadRec) -> bool {
        const BUSY: State = LOCK_MASK | HANDOFF | WRITER_WANT;
        // `yield_on_writer` is false under loom: no gap poll there either.
        if !yield_on_writer() || !crate::ablate::on(crate::ablate::Mech::WriterGapPoll) {
            return false;
        }
        // A writer owner alone, nobody queued or spinning (with threads queued, a yield runs
        // one of them), and holders that leave soon.
        if self.count.load(Relaxed) & (BUSY | WAITERS) != WRITER_LOCKED
            || self.osq.has_spinner()
            || !self.stats.wins_after_short_waits()
        {
            return false;
        }
        let (widest, most) = (recheck_pauses(), crate::spin::poll_gap_pauses() / 2);
        let (mut pauses, mut held, mut last) = (1, 0, self.owner.load(Relaxed));
        for _ in 0..QUICK_POLLS {
            pause(pauses);
            held += pauses;
            pauses = (pauses * 2).min(widest);
            let c = self.count.load(Relaxed);
            if c & BUSY == 0 {
                // Steal, WAITERS kept, as the spinners do. Acquire pairs with the Release of
                // the unlock that freed the lock.
                if self
                    .count
                    .compare_exchange(c, c | WRITER_LOCKED, Acquire, Relaxed)
                    .is_err()
                {
                    return false;
                }
                self.owner.store(me.owner_word(), Release);
                events::count(Ev::rwsem_write_gap_acquired);
                return true;
            }
            if c & BUSY != WRITER_LOCKED {
                return false;
            }
            let o = self.owner.load(Relaxed);
            if o != last {
                (last, held) = (o, 0);
            } else if held >= most || writer_owner(o).is_some_and(|r| r.is_parked()) {
                return false;
            }
        }
        false
    }

    /// The writer slow path. Returns whether the lock is held (false only past `deadline`).
    #[cold]
    #[inline(never)]
    pub(super) fn write_contended(&self, deadline: Deadline) -> bool {
        chaos::point(Site::WriteContended);
        events::count(Ev::rwsem_write_slow);
        let me = current();
        if me.batch().0 != 0 {
            me.set_batch(0, 0); // a turn run ends at the slow path
        }
        if self.writer_gap_poll(me) {
            return true;
        }
        let mut yields = 0;
        let mut ran_nobody = false;
        loop {
            if self.yield_before_spin(yields, ran_nobody) {
                // Readers or a writer hold the lock: yield before spinning on them.
            } else if !self.write_can_spin() {
                events::count(Ev::rwsem_write_nospin);
            } else if self.write_optimistic_spin(me) {
                events::count(Ev::rwsem_write_spin_acquired);
                return true;
            }
            if yields == pre_queue_yields() {
                break;
            }
            yields += 1;
            let (_, ran_others) = crate::spin::timed_yield();
            // A yield that returned at once found nothing else to run on this CPU: yielding
            // again only lets the readers on the other CPU batch on (module doc).
            ran_nobody = crate::ablate::on(crate::ablate::Mech::QuickYieldSpins) && !ran_others;
            if self.try_write() {
                return true;
            }
        }
        events::count(Ev::rwsem_write_queued);
        let slot = WaitSlot::new(me, Kind::Write, 0);
        let w = slot.node();
        let queued_at = sys::now_ns();
        w.set_timeout_ns(queued_at.saturating_add(P::HANDOFF_NS));
        let mut wq = Wq::new();
        let mut dropped_handoffs = 0;
        let mut windowed = false;
        self.wait_lock.lock(me, &self.stats);
        // SAFETY: wait_lock held; `w` stays here until it unlinks itself under the wait_lock.
        if unsafe { self.wait_list.push_back(w) } {
            // Relaxed: count's RMW order alone decides who sees whom (module doc).
            self.count.fetch_or(WAITERS, Relaxed);
        } else {
            // Let head readers join readers, or wake the head if the lock is free.
            let c = self.count.load(Relaxed);
            if c & WRITER_LOCKED == 0 {
                let wt = if c & READER_MASK != 0 {
                    WakeType::Readers
                } else {
                    self.clear_nonspinnable();
                    WakeType::Any
                };
                // SAFETY: wait_lock held.
                if unsafe { self.mark_wake(wt, &mut wq) } {
                    self.wait_unlock(me, &mut wq);
                    self.wait_lock.lock(me, &self.stats);
                }
            }
        }
        loop {
            // wait_lock held here. Clear WOKEN before every retry that may end in a sleep.
            self.count.fetch_and(!WOKEN, Relaxed);
            // SAFETY: wait_lock held; `w` is linked.
            let handoff = match unsafe { self.try_write_lock(w, me) } {
                Ok(()) => {
                    self.wait_unlock(me, &mut wq);
                    return true;
                }
                Err(handoff) => handoff,
            };
            // SAFETY: wait_lock held; `w` is linked.
            let kept = if handoff {
                None
            } else {
                unsafe { self.keep_woken(w, queued_at, &mut windowed) }
            };
            if kept == Some(false) {
                continue; // the writer owner left: retry (wait_lock held)
            }
            self.wait_unlock(me, &mut wq);
            if !(handoff && self.first_waiter_spin(me)) {
                let mut rearm = None;
                if handoff && dropped_handoffs < MAX_HANDOFF_DROPS {
                    // About to sleep while holding the reservation: the lock would sit idle
                    // for our whole wakeup (2–30 µs) after the owner releases. Drop it; we are
                    // past our timeout, so the first retry after waking re-raises it. At most
                    // MAX_HANDOFF_DROPS times per wait, which keeps the wait bounded.
                    self.wait_lock.lock(me, &self.stats);
                    if self.count.load(Relaxed) & LOCK_MASK == 0 {
                        // Released since our spin gave up: retry now, reservation kept
                        // (wait_lock held, as the loop expects).
                        continue;
                    }
                    // A fair unlock's reservation is kept: its release wakes us.
                    if !(w.handoff_set() && w.keep_handoff()) {
                        dropped_handoffs += 1;
                        if w.handoff_set() {
                            self.count.fetch_and(!HANDOFF, Relaxed);
                            w.set_handoff(false);
                        }
                        // That retry must not depend on an unlock waking us: spinning readers
                        // (S4 `On`) can keep the count above zero for ever, so no read unlock
                        // ever sees the lock free (issue 8, defect 2). Sleep at most REARM of
                        // the handoff timeout, then re-raise.
                        rearm = Some(sys::now_ns().saturating_add(P::HANDOFF_NS / REARM_DIV));
                    }
                    self.wait_unlock(me, &mut wq);
                }
                let timer = if rearm.is_some() {
                    rearm
                } else if kept == Some(true)
                    || HANDOFF_TIMER && !handoff && sys::now_ns() < w.timeout_ns()
                {
                    Some(w.timeout_ns())
                } else {
                    None
                };
                let (park_until, is_user) = match (deadline, timer) {
                    (Some(d), Some(t)) if t < d => (Some(t), false),
                    (Some(d), _) => (Some(d), true),
                    (None, t) => (t, false),
                };
                events::count(Ev::rwsem_write_sleep);
                if me.park(park_until).is_err() && is_user {
                    self.wait_lock.lock(me, &self.stats);
                    // SAFETY: wait_lock held; a writer is only unlinked by itself.
                    unsafe { self.cancel_waiter(w, &mut wq) };
                    self.wait_unlock(me, &mut wq);
                    return false;
                }
            }
            self.wait_lock.lock(me, &self.stats);
        }
    }

    /// The head writer's window (module doc, "A woken head sleeps out its window"; switch
    /// `writer_window`): a head writer that just lost its retry to a writer owner sets `WOKEN`
    /// again, so that the owner's unlocks skip the wake while it batches, and sleeps on its
    /// window's timer (the caller's `timer`), after which its retry reserves the lock. The
    /// window is [`crate::fairness::handoff_at`] from the first such loss (`windowed`), and
    /// it also becomes the writer's handoff timeout. `None`: not kept (not the head, not a
    /// writer owner, or the window is over); `Some(true)`: kept; `Some(false)`: the owner
    /// released meanwhile, retry now (`WOKEN` is cleared by the retry).
    ///
    /// Under loom the clock is frozen, so the window is kept once per wait, which explores
    /// an unlock that skips its wake while the head sleeps on a timer.
    ///
    /// # Safety
    /// The wait_lock is held and `w` is linked.
    unsafe fn keep_woken(&self, w: &Waiter, queued_at: u64, windowed: &mut bool) -> Option<bool> {
        if !crate::ablate::on(crate::ablate::Mech::WriterWindow)
            || self.stats.wins_after_short_waits()
            || !self.wait_list.is_first(w)
            || self.count.load(Relaxed) & (WRITER_LOCKED | HANDOFF) != WRITER_LOCKED
        {
            return None;
        }
        let first = !*windowed;
        *windowed = true;
        let now = sys::now_ns();
        // (Not under loom, whose frozen clock would make every such head due at once.)
        if first && !cfg!(kslock_loom) {
            let end = crate::fairness::handoff_at(queued_at, now);
            // The timeout is read under the wait_lock (`mark_wake`), which we hold.
            w.set_timeout_ns(w.timeout_ns().min(end));
        }
        let open = if cfg!(kslock_loom) {
            first
        } else {
            now < w.timeout_ns()
        };
        if !open {
            return None;
        }
        // WOKEN is set only under the wait_lock (held) and our retry cleared it. Relaxed as the
        // retry's clear: count's RMW order decides which unlocks see it (`WOKEN`'s doc).
        let old = self.count.fetch_or(WOKEN, Relaxed);
        Some(old & WRITER_LOCKED != 0)
    }

    /// `try_write_lock` (`docs/kernel-locks.md` A.4 4) for the queued writer `w`. `Err(true)`: `w`
    /// is the head and HANDOFF is set (it should spin on the owner).
    ///
    /// # Safety
    /// The wait_lock is held and `w` is linked.
    pub(super) unsafe fn try_write_lock(
        &self,
        w: &Waiter,
        me: &'static ThreadRec,
    ) -> Result<(), bool> {
        let first = self.wait_list.is_first(w);
        let mut n = 0;
        // SAFETY: wait_lock held.
        unsafe {
            self.wait_list.for_each(|_| {
                n += 1;
                n < 2
            })
        };
        let only = n == 1;
        let mut c = self.count.load(Relaxed);
        loop {
            let handoff = c & HANDOFF != 0;
            if handoff && !first {
                return Err(false); // reserved for the head
            }
            let new = if c & LOCK_MASK != 0 {
                if handoff {
                    w.set_handoff(true); // inherited or ours
                    return Err(true);
                }
                // Against a writer: reserve only past the timeout, as the kernel does. Against
                // readers, the head reserves at once: it is awake and will spin while they
                // drain, and it drops the reservation before it sleeps (module doc, "Writer
                // waiting").
                let readers_only = c & WRITER_LOCKED == 0 && first;
                if !readers_only && sys::now_ns() < w.timeout_ns() {
                    return Err(false);
                }
                c | HANDOFF
            } else {
                let mut new = (c | WRITER_LOCKED) & !(HANDOFF | WOKEN);
                if only {
                    new &= !WAITERS;
                }
                new
            };
            match self.count.compare_exchange(c, new, Acquire, Relaxed) {
                Ok(_) => {
                    if new & HANDOFF != 0 {
                        events::count(Ev::rwsem_handoff_set);
                        let head = self.wait_list.first();
                        // SAFETY: non-empty (w is linked); linked waiters are alive.
                        unsafe { (*head).set_handoff(true) };
                        return Err(w.handoff_set());
                    }
                    // SAFETY: wait_lock held, `w` linked.
                    unsafe { self.wait_list.remove(w) };
                    self.owner.store(me.owner_word(), Release);
                    return Ok(());
                }
                Err(x) => c = x,
            }
        }
    }

    /// First-waiter spinning: the head writer holding the HANDOFF reservation spins on the
    /// owner instead of sleeping. `true`: the lock looks free, retry at once.
    pub(super) fn first_waiter_spin(&self, me: &'static ThreadRec) -> bool {
        let mut spin = Spin::for_handover(&self.stats, me);
        loop {
            let c = self.count.load(Relaxed);
            if c & LOCK_MASK == 0 {
                return true;
            }
            let o = self.owner.load(Acquire);
            let wr = writer_owner(o).filter(|_| c & WRITER_LOCKED != 0);
            let r = if let Some(r) = wr {
                spin.step_on(r)
            } else if c & WRITER_LOCKED == 0
                && (P::READER_OWNED_SPIN == ReaderOwnedSpin::Never || o & OWNER_NONSPINNABLE != 0)
            {
                return false;
            } else {
                spin.step()
            };
            if r.is_err() {
                // Not fed into the lock's statistics: the head's spin is not an OSQ spin.
                return false;
            }
        }
    }
}
