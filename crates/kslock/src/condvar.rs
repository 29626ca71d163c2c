//! A condition variable for [`crate::Mutex`], without thundering herds.
//!
//! Waiters queue on the condvar's own FIFO (guarded by its own wait_lock). `notify_one` wakes
//! the head, or, made by the mutex's holder while nobody waits for the mutex, moves it onto the
//! mutex's wait list ("Signal under the mutex", below). `notify_all` wakes only the head and
//! **requeues** every other waiter onto the mutex's wait list: they are woken one at a time by
//! mutex unlocks, as the mutex frees, instead of all at once only to collide on the mutex.
//!
//! # Waiter state (`Waiter::state`)
//!
//! | value | meaning | set by |
//! |-------|---------|--------|
//! | `CV_WAITING` | linked in the condvar list | the waiter, before linking |
//! | `CV_NOTIFIED` | unlinked and woken: re-lock the mutex normally | a notifier (condvar wait_lock held), CAS from `CV_WAITING` |
//! | `CV_REQUEUED` | moved to the mutex's wait list: wait there as a mutex waiter (the mutex may then store its own `GRANTED`, 3) | `notify_all`, or `notify_one` under the mutex (both wait_locks held), CAS from `CV_WAITING` |
//! | `CV_LEAVING` | its park timed out and it claimed its own exit: notifiers skip it; it unlinks itself under the condvar wait_lock | the waiter, CAS from `CV_WAITING` (no lock) |
//! | `CV_DETACHED` | a `CV_LEAVING` waiter that a notifier unlinked for it | a notifier (condvar wait_lock held) |
//!
//! A waiter's timeout and a notification race on one CAS from `CV_WAITING`: whoever wins
//! decides whether the wait timed out or was notified, so a notification is never given to a
//! waiter that then reports a timeout. The notifier's CAS is Release (pairs with the waiter's
//! Acquire loads and its failed CAS) and it never touches the waiter afterwards (the waiter
//! may return at once); it wakes the waiter's type-stable record after unlocking. A notifier
//! that meets a `CV_LEAVING` waiter unlinks it (`CV_DETACHED`, read by the waiter under the
//! condvar wait_lock), so after a `notify_all` the condvar list is empty.
//!
//! **A requeued waiter never touches the condvar again**: from the requeue on it waits only
//! on the mutex (a timeout that fires later finds its CAS failing and leaves the condvar
//! alone). So an embedder that counts its waiters (the C library's `pthread_cond_destroy`)
//! may end a requeued waiter's admission at the requeue ([`Left::Requeued`]): a destroy right
//! after a broadcast then does not wait for the requeued waiters to get the mutex one by one.
//! Lock order: condvar wait_lock, then the mutex's wait_lock (the mutex never takes the
//! condvar's).
//!
//! # Signal under the mutex
//!
//! A `notify_one` made by the thread that holds the waiters' mutex, while nobody waits for that
//! mutex, does not wake the head waiter: it moves it onto the mutex's wait list (both
//! wait_locks held, as `notify_all` moves the others) and arms the mutex's `WAKE_HEAD`, so the
//! notifier's unlock wakes it, after the release. A waiter woken at the signal instead runs
//! while the notifier still holds the mutex: on a busy machine the wakeup preempts the notifier
//! on its own CPU (the scheduler's wakeup preemption), and the woken thread then spins on a
//! mutex whose holder it has just put off the CPU, and yields (R3 of [`crate::spin`]). glibc's
//! condvar wakes at the signal too, but its woken thread sleeps on the mutex at once. Where
//! threads wait for the mutex, the signalled waiter is woken as before: moved, it would queue
//! behind them and their fairness windows (a bounded buffer on one mutex ran several times
//! slower that way). Embedders may keep the wake at the signal
//! ([`Condvar::notify_one_left`]; the preload does for `CLOCK_REALTIME` condvars).
//!
//! The case that asked for it is CPython's GIL under the preload (a pthread mutex and condvar,
//! signalled by `drop_gil` with the mutex held; `scripts/py-queue.py`, and `scripts/cond-bb.c`,
//! a bounded buffer signalled under its mutex): `docs/experiments.md`, "Signal under the
//! mutex". The requeued waiter's admission (the C layers' destroy count) ends at the requeue, by
//! its notifier, as after a broadcast ([`Condvar::notify_one_left`] says which happened). Loom:
//! `loom_condvar_notify_one_under_*`.
//!
//! # The mutex word
//!
//! `mutex` holds the address of the mutex the current waiters use (0 = none yet). Waiting with a
//! second mutex while waiters of the first remain panics (requeueing needs one target).
//!
//! No lost wakeups: a waiter links itself under the condvar lock *before* it unlocks the mutex,
//! so a notifier that holds (or has just released) the mutex after the waiter's unlock sees it.
//! Spurious wakeups of the thread (stale tokens, signals) are absorbed: the waiter re-parks
//! until its state changes or its deadline passes.

use crate::chaos::{self, Site};
use crate::mutex::RawMutex;
use crate::policy::MutexPolicy;
use crate::spin::SpinStats;
use crate::sync::{loom_const_fn, AtomicUsize, Ordering::*};
use crate::sys::{self, Deadline};
use crate::thread::{current, Kind, WaitSlot, Waiter, WakeQ};
use crate::wait::{WaitList, WaitLock};

/// `Waiter::state`: linked in the condvar list (module doc's state table).
const CV_WAITING: u32 = 0;
/// Unlinked and woken by a notifier: re-lock the mutex normally.
const CV_NOTIFIED: u32 = 1;
/// Moved onto the mutex's wait list: wait there as a mutex waiter.
const CV_REQUEUED: u32 = 2;
// 3 is the mutex's `GRANTED` (a requeued waiter the mutex handed the lock to).
/// Timed out and claimed its own exit: notifiers skip it.
const CV_LEAVING: u32 = 4;
/// A `CV_LEAVING` waiter that a notifier unlinked for it.
const CV_DETACHED: u32 = 5;

/// How a wait left the condvar, passed to the callback of [`Condvar::wait_raw_then`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Left {
    /// Its deadline passed first (no notification consumed); it took itself off the condvar.
    TimedOut,
    /// A notifier unlinked and woke it; it will re-lock the mutex.
    Notified,
    /// `notify_all` moved it to the mutex's wait list: it stopped touching the condvar at the
    /// requeue, before it ran again (module doc), so its notifier may end an embedder's count
    /// of it ([`Condvar::notify_all`] returns how many it requeued, plus one).
    Requeued,
}

/// A condition variable for kslock mutexes. All-zero is a valid new condvar.
pub struct Condvar {
    lock: WaitLock,
    list: WaitList,
    mutex: AtomicUsize,
    stats: SpinStats,
}

impl core::fmt::Debug for Condvar {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Condvar").finish_non_exhaustive()
    }
}

impl Default for Condvar {
    fn default() -> Self {
        Self::new()
    }
}

/// Whether a timed wait returned because its timeout elapsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitTimeoutResult(bool);

impl WaitTimeoutResult {
    /// `true` if the wait ended because the timeout elapsed (no notification consumed).
    pub fn timed_out(self) -> bool {
        self.0
    }
}

/// The notifier's side of a waiter's state CAS: `true` if `w` was waiting and is now `to`;
/// `false` if it claimed its own exit (`CV_LEAVING`), which the caller has unlinked: it is
/// marked `CV_DETACHED` (module doc). Condvar lock held.
fn claim(w: &Waiter, to: u32) -> bool {
    // Release: pairs with the waiter's Acquire loads and failed CAS; the waiter may return as
    // soon as it sees `to`, so `w` is not touched after this.
    match w.state.compare_exchange(CV_WAITING, to, Release, Relaxed) {
        Ok(_) => true,
        Err(s) => {
            debug_assert_eq!(s, CV_LEAVING);
            // Read by the waiter under the condvar lock, which orders it.
            w.state.store(CV_DETACHED, Relaxed);
            false
        }
    }
}

impl Condvar {
    loom_const_fn! {
        /// A new condvar with no waiters.
        pub fn new() -> Self {
            Condvar {
                lock: WaitLock::new(),
                list: WaitList::new(),
                mutex: AtomicUsize::new(0),
                stats: SpinStats::new(),
            }
        }
    }

    /// Wakes one waiter (the longest waiting). Returns whether one was woken; notifications
    /// are not buffered (with no waiter, nothing happens). Never blocks on a timeout: it takes
    /// only the condvar's short internal lock (and the mutex's, see below).
    ///
    /// Called with the waiters' mutex held (the usual pattern) while nobody waits for the
    /// mutex, it does not wake the waiter but moves it onto the mutex's wait list, and the
    /// unlock wakes it after the release (module doc, "Signal under the mutex").
    pub fn notify_one(&self) -> bool {
        self.notify_one_left(true).is_some()
    }

    /// [`notify_one`](Self::notify_one), telling how the waiter left: `None` (nobody waited),
    /// [`Left::Notified`] (woken now) or [`Left::Requeued`] (module doc, "Signal under the
    /// mutex": moved to the mutex's wait list, to be woken by its unlock; it stopped touching
    /// the condvar at the requeue, so an embedder that counts its waiters ends its count here).
    /// `may_requeue` false: always wake (the preload's `CLOCK_REALTIME` condvars: the
    /// `crates/kslock-c` README says why).
    pub fn notify_one_left(&self, may_requeue: bool) -> Option<Left> {
        if self.list.is_empty() {
            return None;
        }
        chaos::point(Site::CondNotify);
        let me = current();
        let mut wake = WakeQ::new();
        self.lock.lock(me, &self.stats);
        // SAFETY: condvar lock held.
        let how = unsafe {
            let moved = if may_requeue {
                self.requeue_head(&mut wake)
            } else {
                None
            };
            moved.or_else(|| self.wake_head(&mut wake).then_some(Left::Notified))
        };
        self.lock.unlock(me);
        wake.wake_all();
        how
    }

    /// Signal under the mutex (module doc): if waiters are queued, the calling thread holds
    /// their mutex and nobody waits for it, moves the first waiter that has not claimed its own
    /// exit to the mutex's wait list, as `notify_all` moves all but the head; waiters that
    /// claimed their exit on the way are detached. The mutex's unlock wakes it.
    /// `Some(Left::Requeued)` if one was moved; `None` otherwise (the caller then wakes the head,
    /// if any is left).
    ///
    /// # Safety
    /// The condvar lock is held.
    unsafe fn requeue_head(&self, wake: &mut WakeQ) -> Option<Left> {
        if self.list.is_empty() {
            return None;
        }
        // SAFETY: with waiters queued (condvar lock held), `mutex` is the `RawMutex<P>` they
        // unlocked, which outlives them; `RawMutex` is `repr(C)` with a layout independent of
        // `P` (as in `notify_all`).
        let m = unsafe { &*(self.mutex.load(Relaxed) as *const RawMutex) };
        if !m.is_owned_by_current_thread() {
            return None;
        }
        let me = current();
        let (mlock, mlist, mstats) = m.requeue_parts();
        mlock.lock(me, mstats);
        // SAFETY: mutex wait_lock held.
        unsafe { mlist.purge_ghosts() };
        if !mlist.is_empty() {
            // It would queue behind the mutex's waiters and their windows: wake it to compete.
            mlock.unlock(me);
            return None;
        }
        // SAFETY: condvar lock held.
        unsafe { self.list.purge_ghosts() };
        let mut moved = false;
        // SAFETY: both wait_locks held; linked waiters are alive; `f` unlinks only its own
        // node. The waiter, once it sees `CV_REQUEUED`, takes the mutex wait_lock (held here)
        // before it touches the mutex list, so the push below happens before.
        unsafe {
            self.list.for_each(|w| {
                self.list.remove(w);
                // Its wait for the mutex starts now (the fairness window).
                w.set_queued_at(sys::now_ns());
                moved = claim(w, CV_REQUEUED);
                if moved {
                    mlist.push_back(w);
                    // This thread holds the mutex: its unlock wakes the new head.
                    m.requeued(wake);
                }
                !moved
            })
        };
        mlock.unlock(me);
        moved.then_some(Left::Requeued)
    }

    /// Unlinks waiters from the head until one is notified (queued in `wake`); waiters that
    /// claimed their own exit on the way are detached (module doc). Returns whether one was.
    ///
    /// # Safety
    /// The condvar lock is held.
    unsafe fn wake_head(&self, wake: &mut WakeQ) -> bool {
        // SAFETY: condvar lock held (caller).
        unsafe { self.list.purge_ghosts() };
        let mut woke = false;
        // SAFETY: condvar lock held; linked waiters are alive; `f` unlinks only its own node.
        unsafe {
            self.list.for_each(|w| {
                let rec = w.rec();
                self.list.remove(w);
                woke = claim(w, CV_NOTIFIED);
                if woke {
                    wake.push(rec);
                }
                !woke
            })
        };
        woke
    }

    /// Are threads blocked in a wait on this condvar (queued, not yet notified or timed out)?
    /// A hint: it can change as soon as it is read.
    pub fn has_waiters(&self) -> bool {
        !self.list.is_empty()
    }

    /// Wakes every waiter: the head now, the others by requeueing them onto the mutex, which
    /// wakes them one per unlock. Returns how many waiters were notified (0 when none waited;
    /// not buffered): the woken head and the requeued waiters ([`Left::Requeued`]), which are
    /// all the others. Never blocks on a timeout: it takes only the condvar's and the mutex's
    /// short internal locks.
    pub fn notify_all(&self) -> usize {
        if self.list.is_empty() {
            return 0;
        }
        chaos::point(Site::CondNotify);
        let me = current();
        let mut wake = WakeQ::new();
        self.lock.lock(me, &self.stats);
        // SAFETY: condvar lock held.
        let mut n = usize::from(unsafe { self.wake_head(&mut wake) });
        // (With no head woken, `wake_head` detached every waiter: the list is empty.)
        if !self.list.is_empty() {
            // SAFETY: `mutex` was set by the waiters' `wait_raw` to the `RawMutex<P>` they
            // unlocked; a mutex outlives the waiters that will re-lock it, and `RawMutex` is
            // `repr(C)` with a layout independent of `P`.
            let m = unsafe { &*(self.mutex.load(Relaxed) as *const RawMutex) };
            let (mlock, mlist, mstats) = m.requeue_parts();
            mlock.lock(me, mstats);
            let now = sys::now_ns();
            // SAFETY: both wait_locks held; every waiter in the list is linked and alive; the
            // walk unlinks only the node it is given.
            unsafe {
                self.list.for_each(|w| {
                    // Their wait for the mutex starts now (the fairness window).
                    w.set_queued_at(now);
                    // The waiter then takes the mutex wait_lock (held by us) before touching
                    // the mutex list, so the splice below happens before.
                    if claim(w, CV_REQUEUED) {
                        n += 1;
                    } else {
                        self.list.remove(w);
                    }
                    true
                });
                mlist.append(&self.list);
                m.requeued(&mut wake);
            }
            mlock.unlock(me);
        }
        self.lock.unlock(me);
        wake.wake_all();
        n
    }

    /// Blocks until notified, atomically releasing the guard's mutex; re-locks it before
    /// returning. Spurious returns do not happen (but check your predicate anyway: another
    /// thread may have changed it before you re-locked).
    ///
    /// Timeout: none; it waits for a notification for ever.
    ///
    /// # Panics
    /// If other threads are waiting on this condvar with a different mutex.
    #[cfg(not(kslock_loom))]
    pub fn wait<T: ?Sized>(&self, guard: &mut crate::MutexGuard<'_, T>) {
        // SAFETY: the guard proves this thread holds the mutex.
        unsafe { self.wait_raw(lock_api::MutexGuard::mutex(guard).raw(), None) };
    }

    /// Like [`wait`](Self::wait), but gives up after `timeout`.
    ///
    /// Timeout: the wait ends (`timed_out()`) once `timeout` has elapsed on the monotonic
    /// clock, `Duration::ZERO` times out at once (after releasing and re-taking the mutex), and
    /// a `timeout` past the clock's range means no timeout. The mutex is held again on return
    /// either way.
    ///
    /// # Panics
    /// If other threads are waiting on this condvar with a different mutex.
    #[cfg(not(kslock_loom))]
    pub fn wait_for<T: ?Sized>(
        &self,
        guard: &mut crate::MutexGuard<'_, T>,
        timeout: std::time::Duration,
    ) -> WaitTimeoutResult {
        // SAFETY: the guard proves this thread holds the mutex.
        WaitTimeoutResult(unsafe {
            self.wait_raw(
                lock_api::MutexGuard::mutex(guard).raw(),
                Some(sys::deadline_after(timeout)),
            )
        })
    }

    /// Like [`wait`](Self::wait), but gives up at `deadline`.
    ///
    /// Timeout: the wait ends (`timed_out()`) once the monotonic clock reaches `deadline`; a
    /// deadline in the past times out at once (after releasing and re-taking the mutex). The
    /// mutex is held again on return either way.
    ///
    /// # Panics
    /// If other threads are waiting on this condvar with a different mutex.
    #[cfg(not(kslock_loom))]
    pub fn wait_until<T: ?Sized>(
        &self,
        guard: &mut crate::MutexGuard<'_, T>,
        deadline: std::time::Instant,
    ) -> WaitTimeoutResult {
        // SAFETY: the guard proves this thread holds the mutex.
        WaitTimeoutResult(unsafe {
            self.wait_raw(
                lock_api::MutexGuard::mutex(guard).raw(),
                Some(sys::deadline_from_instant(deadline)),
            )
        })
    }

    /// Waits while `condition` holds (checked with the mutex held, before each wait); returns
    /// with the mutex held once it is false.
    ///
    /// Timeout: none; it waits for ever while the condition holds.
    ///
    /// # Panics
    /// If other threads are waiting on this condvar with a different mutex.
    #[cfg(not(kslock_loom))]
    pub fn wait_while<T: ?Sized, F: FnMut(&mut T) -> bool>(
        &self,
        guard: &mut crate::MutexGuard<'_, T>,
        mut condition: F,
    ) {
        while condition(&mut **guard) {
            self.wait(guard);
        }
    }

    /// Waits while `condition` holds, for at most `timeout` in total: returns as soon as the
    /// condition is false (checked with the mutex held, before each wait) or a wait times out.
    ///
    /// Timeout: the deadline is `now + timeout`, taken once at the call (a `timeout` past the
    /// clock's range means no deadline); when a wait reaches it the function returns
    /// `timed_out() == true` at once, without evaluating the condition again (parking_lot's
    /// semantics; std's `wait_timeout_while` re-checks). The mutex is held on return.
    ///
    /// # Panics
    /// If other threads are waiting on this condvar with a different mutex.
    #[cfg(not(kslock_loom))]
    pub fn wait_while_for<T: ?Sized, F: FnMut(&mut T) -> bool>(
        &self,
        guard: &mut crate::MutexGuard<'_, T>,
        condition: F,
        timeout: std::time::Duration,
    ) -> WaitTimeoutResult {
        match std::time::Instant::now().checked_add(timeout) {
            Some(deadline) => self.wait_while_until(guard, condition, deadline),
            None => {
                self.wait_while(guard, condition);
                WaitTimeoutResult(false)
            }
        }
    }

    /// Waits while `condition` holds, until `deadline`: returns as soon as the condition is
    /// false (checked with the mutex held, before each wait) or a wait reaches the deadline.
    ///
    /// Timeout: when a wait reaches `deadline` the function returns `timed_out() == true` at
    /// once, without evaluating the condition again (parking_lot's semantics); a deadline in
    /// the past still evaluates the condition once and, if it holds, waits (releasing and
    /// re-taking the mutex) and times out at once. The mutex is held on return.
    ///
    /// # Panics
    /// If other threads are waiting on this condvar with a different mutex.
    #[cfg(not(kslock_loom))]
    pub fn wait_while_until<T: ?Sized, F: FnMut(&mut T) -> bool>(
        &self,
        guard: &mut crate::MutexGuard<'_, T>,
        mut condition: F,
        deadline: std::time::Instant,
    ) -> WaitTimeoutResult {
        let mut result = WaitTimeoutResult(false);
        while !result.timed_out() && condition(&mut **guard) {
            result = self.wait_until(guard, deadline);
        }
        result
    }

    /// The wait protocol on a raw mutex: unlocks `m`, waits for a notification, re-locks `m`.
    ///
    /// Timeout: `deadline` is an absolute `CLOCK_MONOTONIC` time in ns (`None` = no timeout);
    /// returns `true` if it passed before a notification (a waiter already requeued onto the
    /// mutex by `notify_all` counts as notified and waits for the mutex without a deadline).
    /// The mutex is held again on return.
    ///
    /// # Panics
    /// If other threads are waiting on this condvar with a different mutex.
    ///
    /// # Safety
    /// The calling thread holds `m`.
    pub unsafe fn wait_raw<P: MutexPolicy>(&self, m: &RawMutex<P>, deadline: Deadline) -> bool {
        // SAFETY: forwarded caller contract.
        match unsafe { self.wait_raw_then(m, deadline, || true, |_| {}) } {
            Some(timed_out) => timed_out,
            None => panic!("kslock: Condvar waited on with two different mutexes at once"),
        }
    }

    /// [`wait_raw`](Self::wait_raw), calling `left(how)` once, on the waiting thread, after
    /// its last access to this condvar and before it waits for `m` again. From then on the
    /// wait no longer touches the condvar, so an embedder that counts its waiters can let a
    /// destroy of the condvar go ahead while notified waiters still wait for the mutex (POSIX
    /// allows destroying a condvar once no thread is blocked on it, e.g. right after a
    /// broadcast; glibc's `pthread_cond_destroy` waits only for woken waiters to leave the
    /// condvar). A [`Left::Requeued`] waiter stopped touching the condvar already at its
    /// requeue, before this call: its notifier may end its count (module doc).
    ///
    /// `stay()` runs under the condvar's lock just before the waiter queues: if it returns
    /// `false` the wait does not queue and returns at once as timed out (`Some(true)`, after
    /// `left(Left::TimedOut)`), with `m` still held. A notification made after an embedder's
    /// own flag changed takes this lock after the change, so a `stay` that reads the flag
    /// sees it or the notification sees the waiter (the preload's cancellation slices use it).
    ///
    /// Returns `None`, without waiting (and without calling `left`), if other threads are
    /// blocked on this condvar with a different mutex; `m` is still held then.
    ///
    /// # Safety
    /// The calling thread holds `m`.
    pub unsafe fn wait_raw_then<P: MutexPolicy, F: FnOnce(Left)>(
        &self,
        m: &RawMutex<P>,
        deadline: Deadline,
        stay: impl FnOnce() -> bool,
        left: F,
    ) -> Option<bool> {
        let me = current();
        let maddr = m as *const RawMutex<P> as usize;
        let how = {
            // The wait node lives in `slot` until it is unlinked: by a notifier, by our timeout
            // path, or by the mutex after a requeue. It is released before `m.lock()`
            // below, which may need it for the mutex's own wait list.
            let slot = WaitSlot::new(me, Kind::Write, CV_WAITING);
            let w = slot.node();
            self.lock.lock(me, &self.stats);
            let cur = self.mutex.load(Relaxed);
            if cur != maddr {
                if cur != 0 && !self.list.is_empty() {
                    self.lock.unlock(me);
                    return None;
                }
                self.mutex.store(maddr, Relaxed);
            }
            if !stay() {
                self.lock.unlock(me);
                left(Left::TimedOut);
                return Some(true);
            }
            // SAFETY: condvar lock held; `w` stays in `slot` until it is unlinked.
            unsafe { self.list.push_back(w) };
            self.lock.unlock(me);
            chaos::point(Site::CondQueued);
            // SAFETY: caller holds `m`.
            unsafe { m.unlock() };

            let mut timed_out = false;
            while w.state.load(Acquire) == CV_WAITING {
                if me.park(deadline).is_err() {
                    chaos::point(Site::Leaving);
                    // The timeout's side of the state CAS (module doc). Acquire on failure:
                    // pairs with the notifier's Release CAS.
                    if w.state
                        .compare_exchange(CV_WAITING, CV_LEAVING, Relaxed, Acquire)
                        .is_ok()
                    {
                        self.lock.lock(me, &self.stats);
                        if w.state.load(Relaxed) == CV_LEAVING {
                            // SAFETY: condvar lock held; not detached means still linked here.
                            unsafe { self.list.remove(w) };
                        }
                        self.lock.unlock(me);
                        timed_out = true;
                    }
                    break;
                }
            }
            // Out of the condvar list: by our timeout, by a notifier (CV_NOTIFIED), or moved
            // to the mutex's (CV_REQUEUED, or already the mutex's GRANTED).
            let how = if timed_out {
                Left::TimedOut
            } else if w.state.load(Acquire) == CV_NOTIFIED {
                Left::Notified
            } else {
                Left::Requeued
            };
            // This wait touches the condvar no more.
            left(how);
            if how == Left::Requeued {
                // A contended acquisition of `m` (the `m.lock()` below records the others).
                let st = crate::stats::contended(m);
                let (mlock, _, mstats) = m.requeue_parts();
                mlock.lock(me, mstats);
                // SAFETY: `w` was moved to `m`'s list under both locks (and may have been
                // granted the lock since); mutex wait_lock held.
                unsafe { m.wait_in_queue(me, w, None) };
                st.acquired();
            }
            how
        };
        if how != Left::Requeued {
            m.lock();
        }
        Some(how == Left::TimedOut)
    }
}

#[cfg(all(test, not(kslock_loom)))]
mod tests {
    use super::*;
    use crate::Mutex;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    #[test]
    fn wait_for_times_out_with_the_mutex_held() {
        let m = Mutex::new(0);
        let cv = Condvar::new();
        let mut g = m.lock();
        let t0 = Instant::now();
        let r = cv.wait_for(&mut g, Duration::from_millis(20));
        assert!(r.timed_out());
        assert!(t0.elapsed() >= Duration::from_millis(20));
        assert!(m.is_locked());
        *g += 1;
        drop(g);
        assert!(!cv.notify_one(), "the timed-out waiter left the queue");
    }

    #[test]
    fn notify_one_wakes_a_waiter() {
        let pair = Arc::new((Mutex::new(false), Condvar::new()));
        let p2 = pair.clone();
        let h = std::thread::spawn(move || {
            let mut g = p2.0.lock();
            p2.1.wait_while(&mut g, |ready| !*ready);
        });
        loop {
            let mut g = pair.0.lock();
            *g = true;
            let woke = pair.1.notify_one();
            drop(g);
            if woke || h.is_finished() {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        h.join().unwrap();
    }

    #[test]
    fn notify_one_under_the_mutex_requeues_and_the_unlock_wakes() {
        // Module doc, "Signal under the mutex": the holder's notify_one moves the waiter to the
        // mutex's list (nobody else waits for it); the waiter runs once the holder unlocks.
        let pair = Arc::new((Mutex::new(0u32), Condvar::new()));
        let p2 = pair.clone();
        let h = std::thread::spawn(move || {
            let mut g = p2.0.lock();
            p2.1.wait_while(&mut g, |v| *v == 0);
            *g += 1;
        });
        while !pair.1.has_waiters() {
            std::thread::yield_now();
        }
        let mut g = pair.0.lock();
        *g = 1;
        assert_eq!(pair.1.notify_one_left(true), Some(Left::Requeued));
        assert!(!pair.1.has_waiters());
        // SAFETY: a read-only look at the raw mutex, which stays locked by `g`.
        let raw = unsafe { pair.0.raw() };
        assert!(raw.has_waiters(), "the waiter waits for the mutex now");
        drop(g);
        h.join().unwrap();
        assert_eq!(*pair.0.lock(), 2);
        // Not holding the mutex: nobody to notify, and a later waiter is woken directly.
        assert_eq!(pair.1.notify_one_left(true), None);
    }

    #[test]
    #[should_panic(expected = "two different mutexes")]
    fn two_mutexes_panic() {
        let cv = Arc::new(Condvar::new());
        let m1 = Arc::new(Mutex::new(()));
        let (cv2, m12) = (cv.clone(), m1.clone());
        std::thread::spawn(move || {
            let mut g = m12.lock();
            let _ = cv2.wait_for(&mut g, Duration::from_secs(5));
        });
        std::thread::sleep(Duration::from_millis(50));
        let m2 = Mutex::new(());
        let mut g = m2.lock();
        cv.wait_for(&mut g, Duration::from_millis(1));
    }
}
