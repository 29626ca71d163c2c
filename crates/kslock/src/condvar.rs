//! A condition variable for [`crate::Mutex`], without thundering herds.
//!
//! Waiters queue on the condvar's own FIFO (guarded by its own wait_lock). `notify_one` wakes
//! the head. `notify_all` wakes only the head and **requeues** every other waiter onto the
//! mutex's wait list: they are woken one at a time by mutex unlocks, as the mutex frees, instead
//! of all at once only to collide on the mutex.
//!
//! # Waiter state (`Waiter::state`)
//!
//! | value | meaning | set by (condvar wait_lock held) |
//! |-------|---------|---------------------------------|
//! | `CV_WAITING` | linked in the condvar list | the waiter, before linking |
//! | `CV_NOTIFIED` | unlinked and woken: re-lock the mutex normally | a notifier |
//! | `CV_REQUEUED` | moved to the mutex's wait list: wait there as a mutex waiter | `notify_all` (mutex wait_lock held too) |
//!
//! The notifier stores the state with Release and never touches the waiter afterwards (the
//! waiter may return at once); it wakes the waiter's type-stable record after unlocking.
//! Lock order: condvar wait_lock, then the mutex's wait_lock (the mutex never takes the
//! condvar's).
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
use crate::thread::{current, Kind, WaitSlot, WakeQ};
use crate::wait::{WaitList, WaitLock};

const CV_WAITING: u32 = 0;
const CV_NOTIFIED: u32 = 1;
const CV_REQUEUED: u32 = 2;

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
    /// only the condvar's short internal lock.
    pub fn notify_one(&self) -> bool {
        if self.list.is_empty() {
            return false;
        }
        chaos::point(Site::CondNotify);
        let me = current();
        let mut wake = WakeQ::new();
        self.lock.lock(me, &self.stats);
        // SAFETY: condvar lock held.
        unsafe { self.list.purge_ghosts() };
        let head = self.list.first();
        if !head.is_null() {
            // SAFETY: linked waiters are alive while the condvar lock is held.
            let w = unsafe { &*head };
            let rec = w.rec();
            // SAFETY: condvar lock held, `w` linked here.
            unsafe { self.list.remove(w) };
            // Release pairs with the waiter's Acquire load; `w` is not touched after this.
            w.state.store(CV_NOTIFIED, Release);
            wake.push(rec);
        }
        self.lock.unlock(me);
        let woke = !head.is_null();
        wake.wake_all();
        woke
    }

    /// Are threads blocked in a wait on this condvar (queued, not yet notified or timed out)?
    /// A hint: it can change as soon as it is read.
    pub fn has_waiters(&self) -> bool {
        !self.list.is_empty()
    }

    /// Wakes every waiter: the head now, the others by requeueing them onto the mutex, which
    /// wakes them one per unlock. Returns how many waiters were notified (0 when none waited;
    /// not buffered). Never blocks on a timeout: it takes only the condvar's and the mutex's
    /// short internal locks.
    pub fn notify_all(&self) -> usize {
        if self.list.is_empty() {
            return 0;
        }
        chaos::point(Site::CondNotify);
        let me = current();
        let mut wake = WakeQ::new();
        let mut n = 0;
        self.lock.lock(me, &self.stats);
        // SAFETY: condvar lock held.
        unsafe { self.list.purge_ghosts() };
        let head = self.list.first();
        if !head.is_null() {
            // SAFETY: linked waiters are alive while the condvar lock is held.
            let w = unsafe { &*head };
            // SAFETY: condvar lock held, `w` linked here.
            unsafe { self.list.remove(w) };
            n += 1;
            if !self.list.is_empty() {
                // SAFETY: `mutex` was set by the waiters' `wait_raw` to the `RawMutex<P>` they
                // unlocked; a mutex outlives the waiters that will re-lock it, and `RawMutex` is
                // `repr(C)` with a layout independent of `P`.
                let m = unsafe { &*(self.mutex.load(Relaxed) as *const RawMutex) };
                let (mlock, mlist, mstats) = m.requeue_parts();
                mlock.lock(me, mstats);
                let now = sys::now_ns();
                // SAFETY: both wait_locks held; every waiter in the list is linked and alive.
                unsafe {
                    self.list.for_each(|r| {
                        n += 1;
                        // Their wait for the mutex starts now (the fairness window).
                        r.set_queued_at(now);
                        // Release: pairs with the waiter's Acquire; it then takes the mutex
                        // wait_lock (held by us) before touching the mutex list.
                        r.state.store(CV_REQUEUED, Release);
                        true
                    });
                    mlist.append(&self.list);
                    m.requeued(&mut wake);
                }
                mlock.unlock(me);
            }
            let rec = w.rec();
            w.state.store(CV_NOTIFIED, Release);
            wake.push(rec);
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
        unsafe { self.wait_raw_then(m, deadline, |_| {}) }
    }

    /// [`wait_raw`](Self::wait_raw), calling `left(timed_out)` once, on the waiting thread,
    /// right after its last access to this condvar and before it waits for `m` again. From
    /// then on the wait no longer touches the condvar, so an embedder that counts its waiters
    /// can let a destroy of the condvar go ahead while notified waiters still wait for the
    /// mutex (POSIX allows destroying a condvar once no thread is blocked on it, e.g. right
    /// after a broadcast; glibc's `pthread_cond_destroy` waits only for woken waiters to
    /// leave the condvar).
    ///
    /// # Panics
    /// If other threads are waiting on this condvar with a different mutex.
    ///
    /// # Safety
    /// The calling thread holds `m`.
    pub unsafe fn wait_raw_then<P: MutexPolicy, F: FnOnce(bool)>(
        &self,
        m: &RawMutex<P>,
        deadline: Deadline,
        left: F,
    ) -> bool {
        let me = current();
        let maddr = m as *const RawMutex<P> as usize;
        let (timed_out, requeued) = {
            // The wait node lives in `slot` until it is unlinked: by a notifier, by our timeout
            // path, or by the mutex wait loop after a requeue. It is released before `m.lock()`
            // below, which may need it for the mutex's own wait list.
            let slot = WaitSlot::new(me, Kind::Write, CV_WAITING);
            let w = slot.node();
            self.lock.lock(me, &self.stats);
            let cur = self.mutex.load(Relaxed);
            if cur != maddr {
                if cur != 0 && !self.list.is_empty() {
                    self.lock.unlock(me);
                    panic!("kslock: Condvar waited on with two different mutexes at once");
                }
                self.mutex.store(maddr, Relaxed);
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
                    self.lock.lock(me, &self.stats);
                    if w.state.load(Relaxed) == CV_WAITING {
                        // SAFETY: condvar lock held; still WAITING means still linked here.
                        unsafe { self.list.remove(w) };
                        timed_out = true;
                    }
                    self.lock.unlock(me);
                    break;
                }
            }
            let requeued = !timed_out && w.state.load(Acquire) == CV_REQUEUED;
            // Unlinked (by a notifier, or by us under the condvar lock, now released): this
            // wait touches the condvar no more.
            left(timed_out);
            if requeued {
                let (mlock, _, mstats) = m.requeue_parts();
                mlock.lock(me, mstats);
                // SAFETY: `w` was moved to `m`'s list under both locks; mutex wait_lock held.
                unsafe { m.wait_in_queue(me, w, None) };
            }
            (timed_out, requeued)
        };
        if !requeued {
            m.lock();
        }
        timed_out
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
