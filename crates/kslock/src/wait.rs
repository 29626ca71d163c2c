//! Waiting: the `wait_lock` that guards a lock's waiter list, and the FIFO list of waiters.
//! (The wait nodes and the deferred wake list live with the thread records, [`crate::thread`].)
//!
//! Every kslock lock keeps its sleeping waiters in a [`WaitList`] guarded by a [`WaitLock`], as
//! the kernel's locks keep theirs behind a spinlock. The holder only edits list and lock words,
//! never makes a syscall and never waits for anything while holding it, so hold times are tens
//! of ns and the lock needs no fairness of its own.
//!
//! # `WaitLock`
//!
//! A three-state futex lock (the classic "mutex 3" shape), one `u32`, all-zero = free:
//!
//! | value | name | meaning |
//! |-------|------|---------|
//! | 0 | `WL_FREE` | free |
//! | 1 | `WL_LOCKED` | held, nobody sleeps on it |
//! | 2 | `WL_CONTENDED` | held, a thread may sleep on it: the unlock must `FUTEX_WAKE` one |
//!
//! ```text
//! lock     0 -> 1        CAS, Acquire (fast path; also each try of the bounded spin)
//! sleep    x -> 2        swap, Acquire; a swap that returned 0 took the lock (held as 2),
//!                        otherwise FUTEX_WAIT while the word is 2, then swap again
//! unlock   x -> 0        swap, Release; FUTEX_WAKE one if it returned 2
//! ```
//!
//! A contender spins first, under a [`Spin`] with the owning lock's budget (its steps are not
//! fed into that lock's statistics: a wait_lock hold is a different time), and sleeps only when
//! the spin ends. A thread that takes the lock by the swap holds it as `WL_CONTENDED`, so its
//! unlock wakes the next sleeper even when it was the last: at most one spurious wake per
//! contended episode, never a lost one (a sleeper's `FUTEX_WAIT` on 2 fails at once if the word
//! changed). Holding the wait_lock is a slow-path section for the fork barrier
//! ([`crate::thread`]'s pool): a `fork()` never copies a half-edited list.
//!
//! # Waiter list
//!
//! A circular doubly-linked list of [`Waiter`] nodes (each in its thread's record, or on the
//! stack of a nested wait); the lock stores only `first` (0 = empty, as in the kernel's 2026
//! `first_waiter` change), the tail is `first.prev`.
//!
//! Invariants:
//!
//! 1. Every link and every change of `first` happens under the wait_lock.
//! 2. A linked waiter's node stays valid until it is unlinked: a waiter takes itself out under
//!    the wait_lock (mutex, writers, cancellations) before its frame can go away, or a waker
//!    unlinks it and then publishes its grant (rwsem readers).
//! 3. A waker never touches a [`Waiter`] after publishing its grant: it queues the waiter's
//!    record (type-stable) in a [`crate::thread::WakeQ`] and unparks it after unlocking.
//! 4. `first` is also read without the wait_lock (Relaxed): only as a hint ("am I the head?",
//!    "is anyone waiting?"), which the reader re-checks under the lock or which a lock's own
//!    protocol makes safe (the mutex's turn checks, module doc of `kslock::mutex`).
//!
//! In a `fork()` child, nodes of threads that did not survive the fork may still be linked
//! (ghosts): [`WaitList::purge_ghosts`] takes them out before a lock wakes or grants.
//!
//! # Memory orderings
//!
//! The wait_lock's Acquire (CAS or swap) pairs with the Release swap of the unlock that freed
//! it, so the list a holder sees is the list the previous holder left. The links are plain
//! fields and `first` a Relaxed atomic (for the hints of invariant 4): the wait_lock orders
//! them.

use crate::chaos::{self, Site};
use crate::spin::{Spin, SpinStats};
use crate::sync::{loom_const_fn, AtomicPtr, AtomicU32, Ordering::*};
use crate::thread::{self, ThreadRec, Waiter};
use core::ptr;

/// The wait_lock is free.
const WL_FREE: u32 = 0;
/// Held, nobody sleeps on it.
const WL_LOCKED: u32 = 1;
/// Held, a thread may sleep on it: the unlock wakes one.
const WL_CONTENDED: u32 = 2;

/// A small spin-then-futex lock guarding a waiter list. All-zero = free.
#[derive(Debug)]
#[repr(transparent)]
pub(crate) struct WaitLock(AtomicU32);

impl WaitLock {
    loom_const_fn! {
        pub(crate) fn new() -> Self {
            WaitLock(AtomicU32::new(WL_FREE))
        }
    }

    /// Takes the lock. `stats` is the owning lock's spin statistics (the budget of a short spin).
    #[inline]
    pub(crate) fn lock(&self, me: &'static ThreadRec, stats: &SpinStats) {
        thread::slow_enter(me);
        // Acquire pairs with the Release in `unlock`.
        if self
            .0
            .compare_exchange(WL_FREE, WL_LOCKED, Acquire, Relaxed)
            .is_err()
        {
            self.lock_contended(me, stats);
        }
        chaos::point(Site::WaitLocked);
    }

    /// Takes the lock only if it is free at once (seed S0 `TrylockIfSpinner`).
    #[inline]
    pub(crate) fn try_lock(&self, me: &'static ThreadRec) -> bool {
        thread::slow_enter(me);
        let ok = self
            .0
            .compare_exchange(WL_FREE, WL_LOCKED, Acquire, Relaxed)
            .is_ok();
        if !ok {
            me.slow_exit();
        }
        ok
    }

    #[cold]
    fn lock_contended(&self, me: &'static ThreadRec, stats: &SpinStats) {
        let mut spin = Spin::new(stats, me);
        while spin.step().is_ok() {
            if self.0.load(Relaxed) == WL_FREE
                && self
                    .0
                    .compare_exchange(WL_FREE, WL_LOCKED, Acquire, Relaxed)
                    .is_ok()
            {
                return;
            }
        }
        // Don't feed the wait_lock's spins into the lock's statistics: a different hold time.
        // Sleep: mark contended so that the holder's unlock wakes us.
        crate::events::count(crate::events::Event::waitlock_sleep);
        while self.0.swap(WL_CONTENDED, Acquire) != WL_FREE {
            let _ = me.futex_wait(&self.0, WL_CONTENDED, None);
        }
    }

    /// Releases the lock (taken by `me`).
    #[inline]
    pub(crate) fn unlock(&self, me: &'static ThreadRec) {
        chaos::point(Site::WaitUnlock);
        // Release pairs with the Acquire in `lock`.
        if self.0.swap(WL_FREE, Release) == WL_CONTENDED {
            crate::sys::futex_wake(&self.0, 1);
        }
        me.slow_exit();
    }
}

/// The FIFO list head stored in a lock: a pointer to the first waiter (null = empty).
#[derive(Debug)]
#[repr(transparent)]
pub(crate) struct WaitList {
    first: AtomicPtr<Waiter>,
}

impl WaitList {
    loom_const_fn! {
        pub(crate) fn new() -> Self {
            WaitList {
                first: AtomicPtr::new(ptr::null_mut()),
            }
        }
    }

    /// The head waiter (wait_lock held), or null.
    #[inline]
    pub(crate) fn first(&self) -> *const Waiter {
        self.first.load(Relaxed)
    }

    /// Is `w` the head? Without the wait_lock this is a hint.
    #[inline]
    pub(crate) fn is_first(&self, w: &Waiter) -> bool {
        ptr::eq(self.first.load(Relaxed), w)
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.first.load(Relaxed).is_null()
    }

    /// How many waiters are linked (a walk: for event counts and tests).
    ///
    /// # Safety
    /// The wait_lock is held.
    #[cfg_attr(not(feature = "stats"), allow(dead_code))]
    pub(crate) unsafe fn len(&self) -> u64 {
        let mut n = 0;
        // SAFETY: caller contract.
        unsafe {
            self.for_each(|_| {
                n += 1;
                true
            })
        };
        n
    }

    /// Appends `w` at the tail. Returns `true` if the list was empty.
    ///
    /// # Safety
    /// The wait_lock is held; `w` is not linked and stays at its address until unlinked.
    pub(crate) unsafe fn push_back(&self, w: &Waiter) -> bool {
        let first = self.first.load(Relaxed);
        let wp = w as *const Waiter;
        if first.is_null() {
            Waiter::set(&w.next, wp);
            Waiter::set(&w.prev, wp);
            self.first.store(wp as *mut Waiter, Relaxed);
            return true;
        }
        // SAFETY: linked waiters are alive (they unlink themselves, under the wait_lock, before
        // their frames go away); the caller holds the wait_lock.
        let tail = unsafe { &*Waiter::get(&(*first).prev) };
        Waiter::set(&w.prev, tail as *const Waiter);
        Waiter::set(&w.next, first as *const Waiter);
        Waiter::set(&tail.next, wp);
        // SAFETY: as above.
        unsafe { Waiter::set(&(*first).prev, wp) };
        false
    }

    /// Unlinks `w`. Returns `true` if the list is now empty.
    ///
    /// # Safety
    /// The wait_lock is held and `w` is linked in this list.
    pub(crate) unsafe fn remove(&self, w: &Waiter) -> bool {
        let wp = w as *const Waiter;
        let next = Waiter::get(&w.next);
        if ptr::eq(next, wp) {
            self.first.store(ptr::null_mut(), Relaxed);
            return true;
        }
        let prev = Waiter::get(&w.prev);
        // SAFETY: neighbours of a linked waiter are linked, hence alive; wait_lock held.
        unsafe {
            Waiter::set(&(*prev).next, next);
            Waiter::set(&(*next).prev, prev);
        }
        if ptr::eq(self.first.load(Relaxed), wp) {
            self.first.store(next as *mut Waiter, Relaxed);
        }
        false
    }

    /// Takes every `fork()` ghost (module doc) out of the list. Returns `true` if it removed
    /// any. Costs one load of a global when this process never forked.
    ///
    /// # Safety
    /// The wait_lock is held.
    pub(crate) unsafe fn purge_ghosts(&self) -> bool {
        if !thread::forked() {
            return false;
        }
        let mut purged = false;
        // SAFETY: wait_lock held (caller); the callback unlinks only the node it is given.
        unsafe {
            self.for_each(|w| {
                if thread::is_dead(w.rec()) {
                    self.remove(w);
                    purged = true;
                }
                true
            })
        };
        purged
    }

    /// Moves every waiter of `other` to the tail of `self`, preserving order.
    ///
    /// # Safety
    /// Both lists' wait_locks are held.
    pub(crate) unsafe fn append(&self, other: &WaitList) {
        let of = other.first.load(Relaxed);
        if of.is_null() {
            return;
        }
        other.first.store(ptr::null_mut(), Relaxed);
        let sf = self.first.load(Relaxed);
        if sf.is_null() {
            self.first.store(of, Relaxed);
            return;
        }
        // SAFETY: all four are linked waiters (alive); both wait_locks held.
        unsafe {
            let st = Waiter::get(&(*sf).prev);
            let ot = Waiter::get(&(*of).prev);
            Waiter::set(&(*st).next, of as *const Waiter);
            Waiter::set(&(*of).prev, st);
            Waiter::set(&(*ot).next, sf as *const Waiter);
            Waiter::set(&(*sf).prev, ot);
        }
    }

    /// Calls `f` on each waiter from the head, in order; `f` may unlink the waiter it is given
    /// (the next pointer is read before the call). Stops when `f` returns `false`.
    ///
    /// # Safety
    /// The wait_lock is held for the whole walk.
    pub(crate) unsafe fn for_each(&self, mut f: impl FnMut(&Waiter) -> bool) {
        let first = self.first.load(Relaxed);
        if first.is_null() {
            return;
        }
        // SAFETY: linked waiters are alive while the wait_lock is held.
        let last = unsafe { Waiter::get(&(*first).prev) };
        let mut cur = first as *const Waiter;
        loop {
            // SAFETY: `cur` is linked (alive) when read; its next is read before `f` may unlink it.
            let (w, next) = unsafe { (&*cur, Waiter::get(&(*cur).next)) };
            let at_end = ptr::eq(cur, last);
            if !f(w) || at_end {
                return;
            }
            cur = next;
        }
    }
}

#[cfg(all(test, not(kslock_loom)))]
mod tests {
    use super::*;
    use crate::thread::current;
    use std::sync::Arc;

    #[test]
    fn list_is_fifo_and_removal_keeps_order() {
        let wl = WaitList::new();
        let ws: Vec<Waiter> = (0..5)
            .map(|i| {
                let w = Waiter::new();
                w.state.store(i, Relaxed);
                w
            })
            .collect();
        let order = |wl: &WaitList| {
            let mut v = vec![];
            // SAFETY: single-threaded test; the list is only touched here.
            unsafe {
                wl.for_each(|w| {
                    v.push(w.state.load(Relaxed));
                    true
                })
            };
            v
        };
        // SAFETY: single-threaded; waiters outlive the list use.
        unsafe {
            assert!(wl.push_back(&ws[0]));
            for w in &ws[1..] {
                assert!(!wl.push_back(w));
            }
            assert_eq!(order(&wl), [0, 1, 2, 3, 4]);
            assert!(!wl.remove(&ws[0]));
            assert!(!wl.remove(&ws[3]));
            assert_eq!(order(&wl), [1, 2, 4]);
            assert!(wl.is_first(&ws[1]));
            let other = WaitList::new();
            assert!(other.push_back(&ws[0]));
            wl.append(&other);
            assert!(other.is_empty());
            assert_eq!(order(&wl), [1, 2, 4, 0]);
            for w in [&ws[1], &ws[2], &ws[4]] {
                assert!(!wl.remove(w));
            }
            assert!(wl.remove(&ws[0]));
            assert!(wl.is_empty());
        }
    }

    #[test]
    fn wait_lock_excludes_under_contention() {
        let s = Arc::new((
            WaitLock::new(),
            SpinStats::new(),
            AtomicU32::new(0),
            AtomicU32::new(0),
        ));
        let hs: Vec<_> = (0..8)
            .map(|_| {
                let s = s.clone();
                std::thread::spawn(move || {
                    let me = current();
                    for _ in 0..20_000 {
                        s.0.lock(me, &s.1);
                        let v = s.2.load(Relaxed);
                        s.2.store(v + 1, Relaxed);
                        assert_eq!(s.3.fetch_add(1, Relaxed), 0, "two wait_lock holders");
                        s.3.fetch_sub(1, Relaxed);
                        s.0.unlock(me);
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(s.2.load(Relaxed), 8 * 20_000);
    }
}
