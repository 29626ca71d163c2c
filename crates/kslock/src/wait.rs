//! Waiting: the `wait_lock` that guards a lock's waiter list, the FIFO list of on-stack
//! waiters, and the deferred wake list (the kernel's wake_q).
//!
//! # `WaitLock` state
//!
//! | value | meaning |
//! |-------|---------|
//! | 0 | free |
//! | 1 | held, nobody sleeps on it |
//! | 2 | held, a thread may sleep on it (unlock must `FUTEX_WAKE`) |
//!
//! The holder only edits the list and lock words (never a syscall while holding it), so hold
//! times are tens of ns: contenders spin a bounded number of steps ([`Spin`] with the lock's own
//! budget) before sleeping.
//!
//! # Waiter list
//!
//! A circular doubly-linked list of [`Waiter`]s that live on their threads' stacks; the lock
//! stores only `first` (0 = empty, as in the kernel's 2026 `first_waiter` change), the tail is
//! `first.prev`. Every link and `first` change happens under the wait_lock. `first` is also
//! read without it (Relaxed: "am I the head?" hints, re-checked under the lock).
//!
//! A waiter stays linked until it takes itself out under the wait_lock (mutex, writers,
//! cancellations) or a waker unlinks it and publishes a grant (rwsem readers). Wakers never
//! touch a [`Waiter`] after dropping the wait_lock: they copy its `rec` (type-stable) into a
//! [`WakeQ`] and unpark the record after unlocking.

use crate::spin::{Spin, SpinStats};
use crate::sync::{loom_const_fn, AtomicPtr, AtomicU32, Ordering::*, UnsafeCell};
use crate::thread::ThreadRec;
use core::ptr;

const WL_FREE: u32 = 0;
const WL_LOCKED: u32 = 1;
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
        // Acquire pairs with the Release in `unlock`.
        if self
            .0
            .compare_exchange(WL_FREE, WL_LOCKED, Acquire, Relaxed)
            .is_err()
        {
            self.lock_contended(me, stats);
        }
    }

    /// Takes the lock only if it is free at once (seed S0 `TrylockIfSpinner`).
    #[inline]
    pub(crate) fn try_lock(&self) -> bool {
        self.0
            .compare_exchange(WL_FREE, WL_LOCKED, Acquire, Relaxed)
            .is_ok()
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
        while self.0.swap(WL_CONTENDED, Acquire) != WL_FREE {
            let _ = me.futex_wait(&self.0, WL_CONTENDED, None);
        }
    }

    /// Releases the lock.
    #[inline]
    pub(crate) fn unlock(&self) {
        // Release pairs with the Acquire in `lock`.
        if self.0.swap(WL_FREE, Release) == WL_CONTENDED {
            crate::sys::futex_wake(&self.0, 1);
        }
    }
}

/// What a waiter waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Mutex waiter or rwsem writer.
    Write,
    /// rwsem reader.
    Read,
}

/// One waiting thread, on its own stack, linked into a lock's list while it waits.
pub(crate) struct Waiter {
    next: UnsafeCell<*const Waiter>,
    prev: UnsafeCell<*const Waiter>,
    /// The waiting thread (type-stable: safe to unpark after the waiter is gone).
    pub(crate) rec: &'static ThreadRec,
    pub(crate) kind: Kind,
    /// Per-lock protocol state (rwsem: reader grant; condvar: notified/requeued), published
    /// with Release by wakers, read with Acquire by the waiter.
    pub(crate) state: AtomicU32,
    /// Monotonic ns after which this waiter may ask for a handoff (rwsem).
    pub(crate) timeout_ns: u64,
    /// rwsem: this (head) waiter's HANDOFF reservation is set. Guarded by the wait_lock.
    pub(crate) handoff_set: UnsafeCell<bool>,
    /// mutex: handoffs withheld from this waiter because it was asleep. Guarded by the wait_lock.
    denials: UnsafeCell<u32>,
}

impl Waiter {
    pub(crate) fn new(rec: &'static ThreadRec, kind: Kind, state: u32) -> Self {
        Waiter {
            next: UnsafeCell::new(ptr::null()),
            prev: UnsafeCell::new(ptr::null()),
            rec,
            kind,
            state: AtomicU32::new(state),
            timeout_ns: 0,
            handoff_set: UnsafeCell::new(false),
            denials: UnsafeCell::new(0),
        }
    }

    fn get<T: Copy>(c: &UnsafeCell<T>) -> T {
        // SAFETY: list fields are only accessed under the owning lock's wait_lock (caller
        // contract of every `WaitList` method), so there is no concurrent writer.
        c.with_mut(|p| unsafe { *p })
    }
    fn set<T>(c: &UnsafeCell<T>, v: T) {
        // SAFETY: as in `get`.
        c.with_mut(|p| unsafe { *p = v })
    }

    /// The handoff flag (wait_lock held).
    pub(crate) fn handoff_set(&self) -> bool {
        Self::get(&self.handoff_set)
    }
    /// Sets the handoff flag (wait_lock held).
    pub(crate) fn set_handoff(&self, v: bool) {
        Self::set(&self.handoff_set, v)
    }

    /// Counts one withheld handoff and returns the new count (wait_lock held).
    pub(crate) fn deny_handoff(&self) -> u32 {
        let n = Self::get(&self.denials) + 1;
        Self::set(&self.denials, n);
        n
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

/// The deferred wake list (kernel wake_q): records collected under a wait_lock, unparked after
/// it is dropped. Fixed capacity, on the stack: no allocation on any unlock path.
pub(crate) struct WakeQ<const N: usize> {
    recs: [Option<&'static ThreadRec>; N],
    len: usize,
}

impl<const N: usize> WakeQ<N> {
    pub(crate) fn new() -> Self {
        WakeQ {
            recs: [None; N],
            len: 0,
        }
    }

    /// Queues `rec` for a wakeup. Panics past capacity (callers size N to their batch bound).
    pub(crate) fn push(&mut self, rec: &'static ThreadRec) {
        self.recs[self.len] = Some(rec);
        self.len += 1;
    }

    /// Unparks every queued record. Call after dropping the wait_lock.
    pub(crate) fn wake_all(&mut self) {
        for r in self.recs[..self.len].iter().flatten() {
            r.unpark();
        }
        self.len = 0;
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
        let me = current();
        let ws: Vec<Waiter> = (0..5).map(|i| Waiter::new(me, Kind::Write, i)).collect();
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
                        s.0.unlock();
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
