//! The mutex's contended paths outside the queue: the trylock core, the spins and yields
//! before queueing, and the unlock slow path (wakes and handovers). The waiting loop is in
//! `queue`; the state machine in the module doc of [`super`].

use super::queue::{Arm, GRANTED};
use super::{owner_of, RawMutex, FLAGS_MASK, HANDOFF, PICKUP, WAKE_HEAD};
use crate::ablate::{self, Mech};
use crate::chaos::{self, Site};
use crate::events::{count, Event};
use crate::fairness;
use crate::policy::MutexPolicy;
use crate::spin::{
    self, pause, poll_gap_pauses, recheck_pauses, Spin, Stop, PRE_QUEUE_YIELDS, QUICK_POLLS,
    QUICK_SAME_OWNER,
};
use crate::sync::Ordering::*;
use crate::sys::{self, Deadline};
use crate::thread::{owner_rec, Kind, ThreadRec, WaitSlot, WakeQ};

/// The quick poll's outcome.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Quick {
    /// It took the lock.
    Won,
    /// The free re-check saw the owner re-lock within a line transfer (a batching owner): the
    /// locker skips the OSQ spin and goes to its pre-queue yields (module doc, "Quick poll").
    Batch,
    /// Neither: spin as usual.
    Lost,
}

impl<P: MutexPolicy> RawMutex<P> {
    /// The trylock core (kernel `__mutex_trylock_common`): takes a free lock (keeping
    /// `WAKE_HEAD`: its unlock then wakes the head), picks up a lock handed to `me`, or fails
    /// with the owner. With `handoff`, a failure also asks the owner to hand the lock over at
    /// unlock (the due head waiter only).
    #[inline]
    pub(super) fn try_acquire(&self, me: &'static ThreadRec, handoff: bool) -> Result<(), u64> {
        let mine = me.owner_word();
        let mut o = self.owner.load(Relaxed);
        loop {
            let (task, flags) = (owner_of(o), o & FLAGS_MASK);
            let new = if task == 0 {
                debug_assert_eq!(
                    flags & (HANDOFF | PICKUP),
                    0,
                    "free mutex with handoff flags: {o:#x}"
                );
                mine | flags
            } else if flags & PICKUP != 0 && task == mine {
                crate::stats::note(crate::stats::Note::Handoff);
                mine | (flags & !PICKUP)
            } else {
                if handoff && flags & (HANDOFF | PICKUP) == 0 {
                    if let Err(x) = self
                        .owner
                        .compare_exchange(o, o | HANDOFF, Relaxed, Relaxed)
                    {
                        o = x;
                        continue;
                    }
                }
                return Err(task);
            };
            // Acquire pairs with the Release of the unlock (or handoff) that freed it.
            match self.owner.compare_exchange(o, new, Acquire, Relaxed) {
                Ok(_) => return Ok(()),
                Err(x) => o = x,
            }
        }
    }

    /// Spins while the lock word names `owner` and the oracle says it runs. `Ok` when the owner
    /// changed (re-try the lock), `Err` when the spin must stop. With `handoff` (a due head
    /// waiting for its handover) also `Ok` when the word carries neither `HANDOFF` nor
    /// `PICKUP`: the request has to be made (again). A due head that found the lock still on
    /// its way to the previous head (`PICKUP`, so it could not ask) must ask as soon as that
    /// head picks it up, or the new owner runs its whole window, and more, with nobody asking.
    #[inline(never)]
    fn spin_on_owner(&self, owner: u64, handoff: bool, spin: &mut Spin<'_>) -> Result<(), Stop> {
        // A word that names no record cannot be polled for running: stop.
        let rec = owner_rec(owner).ok_or(Stop::OwnerNotRunning)?;
        let recheck = !handoff && self.free_recheck();
        let batch_stop = ablate::on(Mech::BatchStop);
        loop {
            let mut o = self.owner.load(Relaxed);
            if recheck && o == 0 {
                // Free: look again a line transfer later (module doc, "Free re-check"); the
                // same owner back re-locks faster than a handover would cost.
                for _ in 0..recheck_pauses() {
                    spin.step()?;
                }
                o = self.owner.load(Relaxed);
                if owner_of(o) == owner && batch_stop {
                    // The owner took it straight back: a batching owner, proven. Leave it
                    // its line (module doc, "Quick poll", the spin's batch stop).
                    count(Event::mutex_spin_batch);
                    return Err(Stop::Budget);
                }
            }
            if owner_of(o) != owner {
                return Ok(());
            }
            spin.step_on(rec)?;
            if handoff && o & (HANDOFF | PICKUP) == 0 {
                // (After a budgeted step: re-asking never spins outside the budget.)
                return Ok(());
            }
        }
    }

    /// The quick poll (module doc, "Quick poll"): while nobody spins in the OSQ and nobody
    /// waits, poll the lock word up to [`QUICK_POLLS`] times, 1, 2, 4, … pauses apart up to
    /// R6's poll gap, and take the lock when it is free, with no RMW on the lock's line but
    /// that CAS. Gives up when the same owner (or the same free word) shows
    /// [`QUICK_SAME_OWNER`] polls in a row (an owner that batches: leave it its line), when
    /// the owner sleeps, or on a handover; says
    /// [`Quick::Batch`] when the free re-check saw the owner take the lock straight back. Not
    /// run under loom: its one RMW is `try_acquire`, which the models explore through the
    /// other spins, and its polls only multiply interleavings.
    fn quick_poll(&self, me: &'static ThreadRec) -> Quick {
        if cfg!(kslock_loom)
            || !ablate::on(Mech::QuickPoll)
            || self.osq.has_spinner()
            || !self.list.is_empty()
        {
            return Quick::Lost;
        }
        let (mut pauses, mut last, mut same) = (1, 0, 0);
        // The owner the poll saw last (0 before it saw one) and whether a free word is
        // looked at again before the CAS (module doc, "Free re-check").
        let mut last_owned = owner_of(self.owner.load(Relaxed));
        let recheck = self.free_recheck();
        // The polls' spacing doubles up to R6's poll gap, the OSQ spinner's widest (module
        // doc, "Quick poll"), and a free word is looked at again `recheck_pauses()` later.
        let (widest, wait) = (poll_gap_pauses(), recheck_pauses());
        let batch_stop = ablate::on(Mech::BatchStop);
        for _ in 0..QUICK_POLLS {
            let o = self.owner.load(Relaxed);
            let owner = owner_of(o);
            if owner != 0 {
                last_owned = owner;
            }
            if owner == last {
                same += 1;
                if same == QUICK_SAME_OWNER {
                    return Quick::Lost;
                }
            } else {
                (last, same) = (owner, 0);
            }
            if owner == 0 {
                if recheck && last_owned != 0 {
                    // Free right after an owner: does that owner take it straight back
                    // within about a line transfer?
                    pause(wait);
                    let again = owner_of(self.owner.load(Relaxed));
                    if again == last_owned {
                        // A re-lock within a line transfer: a batching owner, proven.
                        if batch_stop {
                            return Quick::Batch;
                        }
                        same += 1;
                        last = again;
                        if same >= QUICK_SAME_OWNER {
                            return Quick::Lost;
                        }
                        continue;
                    }
                }
                if self.try_acquire(me, false).is_ok() {
                    return Quick::Won;
                }
            } else if o & PICKUP != 0 || !owner_rec(owner).is_some_and(|r| !r.is_parked()) {
                return Quick::Lost;
            }
            pause(pauses);
            pauses = (pauses * 2).min(widest);
        }
        Quick::Lost
    }

    /// `try_lock_spin`'s spin as a non-waiter: join the OSQ, and as its head poll the lock
    /// while the owner runs, within [`Spin::for_trylock`]'s budget. `true` = acquired.
    pub(super) fn optimistic_spin(&self, me: &'static ThreadRec) -> bool {
        self.spin_with(me, Spin::for_trylock(&self.stats, me))
            .is_ok()
    }

    /// [`optimistic_spin`](Self::optimistic_spin), saying why it failed: `Budget` when the
    /// owner kept the lock for the whole budget while running, `OwnerNotRunning` when the owner
    /// (or the OSQ predecessor) is off its CPU or too many threads spin already.
    fn try_optimistic_spin(&self, me: &'static ThreadRec) -> Result<(), Stop> {
        self.spin_with(me, Spin::new(&self.stats, me))
    }

    /// [`try_optimistic_spin`](Self::try_optimistic_spin) under the given spin. Inlined into
    /// both callers, so that the lock path's spin compiles without a branch on the trylock
    /// cap (code layout moves the contended cells: `docs/experiments.md`, "Code layout moves
    /// cells by as much as the changes do").
    #[inline(always)]
    fn spin_with(&self, me: &'static ThreadRec, mut spin: Spin<'_>) -> Result<(), Stop> {
        let owner = owner_of(self.owner.load(Relaxed));
        if owner != 0 && !owner_rec(owner).is_some_and(|r| spin.owner_running(r)) {
            return Err(Stop::OwnerNotRunning);
        }
        if !self.osq.lock(me, P::OSQ_LAYOUT, &mut spin) {
            spin.failed(Stop::OwnerNotRunning);
            return Err(Stop::OwnerNotRunning);
        }
        let r = self.poll(me, false, &mut spin);
        self.osq.unlock(me, P::OSQ_LAYOUT, &self.stats);
        spin.finish(r);
        r
    }

    /// [`try_optimistic_spin`](Self::try_optimistic_spin), counting its outcome.
    fn counted_spin(&self, me: &'static ThreadRec) -> Result<(), Stop> {
        let r = self.try_optimistic_spin(me);
        count(match r {
            Ok(()) => Event::mutex_spin_acquired,
            Err(Stop::Budget) => Event::mutex_spin_budget,
            Err(Stop::OwnerNotRunning) => Event::mutex_spin_offcpu,
        });
        r
    }

    /// The head waiter's spin (no OSQ, concurrent with the OSQ head, as in the kernel): polls
    /// until it gets the lock or the spin must stop. With `handoff` (a due head) it keeps the
    /// handover asked for and waits for it up to the spin cap ([`Spin::for_handover`]);
    /// otherwise it races for the lock under the lock's adaptive budget. `true` = acquired.
    pub(super) fn waiter_spin(&self, me: &'static ThreadRec, handoff: bool) -> bool {
        let mut spin = if handoff {
            Spin::for_handover(&self.stats, me)
        } else {
            Spin::new(&self.stats, me)
        };
        let r = self.poll(me, handoff, &mut spin);
        spin.finish(r)
    }

    /// The spinner's loop: try the lock (asking for `handoff` if so told), and while it is held
    /// spin on its owner; `Ok` once acquired, `Err` when the spin must stop.
    fn poll(&self, me: &'static ThreadRec, handoff: bool, spin: &mut Spin<'_>) -> Result<(), Stop> {
        loop {
            chaos::point(Site::MutexSpin);
            match self.try_acquire(me, handoff) {
                Ok(()) => return Ok(()),
                Err(owner) => self.spin_on_owner(owner, handoff, spin)?,
            }
        }
    }

    /// Does a spinner that finds the lock free look again [`recheck_pauses`] later before
    /// its CAS (module doc, "Free re-check")? Not where the lock's spins win after short
    /// waits (long sections that end, with the owner away after them), and not under loom,
    /// where the wait only multiplies interleavings of the same CAS.
    fn free_recheck(&self) -> bool {
        !cfg!(kslock_loom) && ablate::on(Mech::FreeRecheck) && !self.stats.wins_after_short_waits()
    }

    /// The lock slow path. `false` only when `deadline` passed.
    #[cold]
    pub(super) fn lock_contended(&self, me: &'static ThreadRec, deadline: Deadline) -> bool {
        self.lock_slow(me, deadline, false)
    }

    /// The slow path; `own_hold_waits`: a lock held by `me` is waited for like any other
    /// (`RawMutex::lock_or_await_release`) instead of being a self-deadlock. The spins then
    /// stop at once (R3: the owner last ran on this CPU) and `me` queues; the release made on
    /// its behalf wakes it or hands it the lock, as for any waiter.
    pub(super) fn lock_slow(
        &self,
        me: &'static ThreadRec,
        deadline: Deadline,
        own_hold_waits: bool,
    ) -> bool {
        chaos::point(Site::MutexContended);
        count(Event::mutex_lock_slow);
        match self.try_acquire(me, false) {
            Ok(()) => return true,
            Err(owner) if owner == me.owner_word() && !own_hold_waits => {
                panic!("kslock: Mutex locked again by the thread that holds it (self-deadlock)")
            }
            Err(_) => {}
        }
        // The barging limit (module doc): past it, give the CPU away once, so that a head
        // whose window is due can run and ask for its handover; past it again, queue.
        if self.barged_too_long(me) {
            count(Event::mutex_barge_limit);
            if !me.barge_yield(sys::now_ns()) {
                crate::sync::yield_now();
                if self.try_acquire(me, false).is_ok() {
                    return true;
                }
            } else {
                return self.queue(me, deadline);
            }
        }
        let quick = self.quick_poll(me);
        if quick == Quick::Won {
            count(Event::mutex_quick_acquired);
            return true;
        }
        // Spin; when the spin fails, give the CPU away and try again, up to
        // PRE_QUEUE_YIELDS times, before queueing (module doc, "Yield before queueing").
        // After a spin that ran out of budget on a running owner, go on only if the yield
        // ran other threads: with nobody else to run on this CPU, yielding and trying again
        // only polls a batching owner's line.
        // A proven batching owner is not spun on: the spin would poll its line (a transfer
        // at each of its re-locks) and take the lock in its gaps; yield (and, with nobody
        // else to run, queue) as after a spin that ran out on a running owner.
        let why = if quick == Quick::Batch {
            count(Event::mutex_quick_batch);
            Stop::Budget
        } else {
            match self.counted_spin(me) {
                Ok(()) => return true,
                Err(why) => why,
            }
        };
        let yields = if !ablate::on(Mech::PreQueueYield) || self.stats.skip_yields() {
            0
        } else {
            PRE_QUEUE_YIELDS
        };
        for _ in 0..yields {
            let (_, ran_others) = spin::timed_yield();
            if self.try_acquire(me, false).is_ok() {
                count(Event::mutex_yield_acquired);
                self.stats.record_yields(true);
                return true;
            }
            if why == Stop::Budget && !ran_others {
                break;
            }
        }
        if yields != 0 {
            count(Event::mutex_yields_queued);
            self.stats.record_yields(false);
        } else {
            count(Event::mutex_yields_gated);
        }
        self.queue(me, deadline)
    }

    /// Has `me` taken contended mutexes without queueing or sleeping for longer than the
    /// fairness window's maximum while others wait here? (Module doc, "Barging limit".) Not
    /// under loom, whose clock is frozen.
    fn barged_too_long(&self, me: &'static ThreadRec) -> bool {
        if cfg!(kslock_loom) || !ablate::on(Mech::BargeLimit) || self.list.is_empty() {
            return false;
        }
        let now = sys::now_ns();
        now.saturating_sub(me.barging_since(now)) >= fairness::window_ns().1
    }

    /// Queues `me` and waits in the queue (the end of the slow path).
    fn queue(&self, me: &'static ThreadRec, deadline: Deadline) -> bool {
        count(Event::mutex_queued);
        me.stop_barging();
        let slot = WaitSlot::new(me, Kind::Write, 0);
        let w = slot.node();
        self.wait_lock.lock(me, &self.stats);
        if self.try_acquire(me, false).is_ok() {
            self.wait_lock.unlock(me);
            return true;
        }
        // SAFETY: wait_lock held.
        unsafe { self.list.purge_ghosts() };
        w.set_queued_at(sys::now_ns());
        if crate::stats::recording() {
            // SAFETY: wait_lock held.
            crate::events::add(Event::mutex_queued_behind, unsafe { self.list.len() });
        }
        // SAFETY: wait_lock held; `w` stays in `slot` until `wait_in_queue` unlinks it.
        unsafe { self.list.push_back(w) };
        // SAFETY: `w` is linked and the wait_lock is held.
        unsafe { self.wait_in_queue(me, w, deadline) }
    }

    /// The unlock slow path: a flag is set, `fair` was asked, or the caller does not hold the
    /// lock (misuse).
    #[cold]
    pub(super) fn unlock_slow(&self, me: &'static ThreadRec, fair: bool) {
        if !self.release_slow(me, me.owner_word(), fair) {
            panic!(
                "kslock: Mutex unlocked by a thread that does not hold it (double unlock, or unlock from another thread)"
            );
        }
    }

    /// Releases a hold of another thread (`RawMutex::unlock_on_behalf`): the release its owner
    /// would make. `false` if the lock is free, or on its way to a new owner (`PICKUP`:
    /// that owner has not returned from its lock yet, so there is no hold to release).
    pub(super) fn release_on_behalf(&self, me: &'static ThreadRec) -> bool {
        let holder = owner_of(self.owner.load(Relaxed));
        holder != 0 && self.release_slow(me, holder, false)
    }

    /// The release of `holder`'s hold (an owner word), by `me` (the holder itself, or a thread
    /// releasing on its behalf). `false`, with nothing changed, if the lock word does not name
    /// `holder` or carries `PICKUP`.
    fn release_slow(&self, me: &'static ThreadRec, holder: u64, fair: bool) -> bool {
        let mut o = self.owner.load(Relaxed);
        loop {
            if owner_of(o) != holder || o & PICKUP != 0 {
                return false;
            }
            if o & HANDOFF != 0 || (fair && !self.list.is_empty()) {
                break;
            }
            // Release, consuming WAKE_HEAD: we wake the head. Release pairs with the next
            // acquirer's Acquire.
            match self.owner.compare_exchange(o, 0, Release, Relaxed) {
                Ok(_) => {
                    if o & WAKE_HEAD != 0 {
                        chaos::point(Site::MutexReleased);
                        count(Event::mutex_unlock_wake);
                        self.wake_head(me);
                    }
                    return true;
                }
                Err(x) => o = x,
            }
        }
        self.hand_off(me, holder, fair);
        true
    }

    /// Wakes the head waiter (after a release that consumed `WAKE_HEAD`).
    fn wake_head(&self, me: &'static ThreadRec) {
        let mut wake = WakeQ::new();
        self.wait_lock.lock(me, &self.stats);
        // SAFETY: wait_lock held.
        unsafe { self.list.purge_ghosts() };
        let head = self.list.first();
        if !head.is_null() {
            // SAFETY: linked waiters are alive while the wait_lock is held.
            wake.push(unsafe { (*head).rec() });
        }
        self.wait_lock.unlock(me);
        wake.wake_all();
    }

    /// The handoff: the head asked (`HANDOFF`: its window is due) or the unlock is `fair`.
    /// Under the wait_lock, the unlocker unlinks the head on its behalf, marks it `GRANTED` and
    /// names it owner (`PICKUP`): the new owner's pick-up is one CAS, with no wait_lock and no
    /// list work on its path. The lock goes to the head awake (it waits for exactly this) or
    /// asleep (it waited longer than the spin cap: the lock then idles for its wakeup, at most
    /// about one long critical section).
    ///
    /// The next waiter becomes head here, and this thread wakes it, after the new owner, to
    /// start its own fairness window (it sleeps on the window's timer). `holder`: the owner
    /// word of the hold being released (this thread's, or the holder's it releases for).
    fn hand_off(&self, me: &'static ThreadRec, holder: u64, fair: bool) {
        let _ = fair;
        count(Event::mutex_unlock_handoff);
        if crate::stats::recording() {
            let t0 = me.take_window_start();
            if t0 != 0 {
                count(Event::mutex_windows);
                crate::events::add(
                    Event::mutex_window_us,
                    sys::now_ns().saturating_sub(t0) / 1000,
                );
            }
        }
        let mut wake = WakeQ::new();
        self.wait_lock.lock(me, &self.stats);
        // SAFETY: wait_lock held.
        unsafe { self.list.purge_ghosts() };
        let head = self.list.first();
        if head.is_null() {
            // The asking head left meanwhile: release.
            let o = self.owner.swap(0, Release);
            debug_assert_eq!(owner_of(o), holder);
            self.wait_lock.unlock(me);
            return;
        }
        // SAFETY: linked waiters are alive while the wait_lock is held.
        let h = unsafe { &*head };
        let rec = h.rec();
        // SAFETY: wait_lock held, `h` linked.
        unsafe { self.list.remove(h) };
        let next = self.list.first();
        let mut baton = WakeQ::new();
        if !next.is_null() {
            // SAFETY: as above.
            let n = unsafe { &*next };
            // The next head's window starts now. (At least 1: 0 means "not head yet", and
            // loom's clock stays at 0.)
            n.set_head_at(sys::now_ns().max(1));
            baton.push(n.rec());
        }
        // Release: the grant and the unlink happen-before the pick-up, which reads
        // the owner word with Acquire (in the waiter's try_acquire). Only the owner (we) and
        // wait_lock holders (we) change an owned word's flags: a swap does.
        h.state.store(GRANTED, Release);
        let o = self.owner.swap(rec.owner_word() | PICKUP, Release);
        debug_assert_eq!(owner_of(o), holder);
        wake.push(rec);
        self.wait_lock.unlock(me);
        // The new owner first (it usually waits awake: no syscall), then the next head, which
        // sets its timer for the end of its window.
        wake.wake_all();
        baton.wake_all();
    }

    /// Condvar support: waiters were appended to this mutex's list (wait_lock held). If one of
    /// them is the head, its window must start: arm `WAKE_HEAD` if the lock is held, else wake it
    /// now (the caller queues it in `wake`).
    ///
    /// # Safety
    /// The wait_lock is held.
    pub(crate) unsafe fn requeued(&self, wake: &mut WakeQ) {
        if let Arm::Free = self.arm_wake_head() {
            let head = self.list.first();
            if !head.is_null() {
                // SAFETY: linked waiters are alive while the wait_lock is held.
                wake.push(unsafe { (*head).rec() });
            }
        }
    }
}
