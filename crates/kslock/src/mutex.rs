//! The kernel mutex (kernel-locks.md B) for user space.
//!
//! One owner word, one-CAS fast paths, optimistic spinning through the OSQ while the owner
//! runs, a FIFO of sleeping waiters behind a small wait_lock, and handoff so that a woken
//! waiter cannot lose forever to spinners.
//!
//! # The owner word
//!
//! `owner = ThreadRec address | flags` (records are 128-byte aligned, so bits 0–6 are free);
//! all-zero = unlocked, no waiters.
//!
//! | bit | name | meaning | set by | cleared by |
//! |-----|------|---------|--------|------------|
//! | 0 | `WAITERS` | the wait list is non-empty: unlock must take the slow path and wake the head | the first waiter to queue (wait_lock held) | the last waiter to leave (wait_lock held) |
//! | 1 | `HANDOFF` | the head waiter lost a race after waking: the next unlock hands the lock to the head instead of releasing it | the head waiter (`try_acquire(handoff)`), only while the lock is owned and not in PICKUP | the unlocker when it hands off (wait_lock held); the last waiter to leave |
//! | 2 | `PICKUP` | the lock was handed to the record in the owner field, which has not taken it yet | the unlocker, in the same CAS that names the head as owner (wait_lock held) | the head, when it picks the lock up |
//! | 3 | `WOKEN` | a wakeup of the head waiter is in flight: an unlock releases without taking the wait_lock or waking anyone (as Go's `mutexWoken`) | an unlocker that queues the head's wakeup (wait_lock held) | any waiter whose park returns, before it retries; any waiter leaving the list (wait_lock held) |
//! | 7.. | owner | the owning thread's record, 0 = free | the acquiring thread (CAS) or the handing-off unlocker | the owner (unlock) |
//!
//! Transitions (`T` = a thread record, `W` = WAITERS, `H` = HANDOFF, `P` = PICKUP, `K` = WOKEN):
//!
//! ```text
//! lock fast      0        -> T            (CAS, Acquire)
//! unlock fast    T        -> 0            (CAS, Release)
//! trylock        0|W      -> T|W          (CAS, Acquire; spinners, woken waiters, try_lock)
//! queue          x        -> x|W          (first waiter, wait_lock held)
//! ask handoff    T|W      -> T|W|H        (head waiter after losing once)
//! unlock slow    T|W      -> 0|W          (Release) then set WOKEN and wake the head
//! unlock, woken  T|W|K    -> 0|W|K        (Release) nothing else: the woken head retries
//! hand off       T|W|H    -> Head|W|P     (Release, wait_lock held) then wake the head
//! pick up        Head|W|P -> Head|W       (Acquire, by the head)
//! last leaves    T|W|H    -> T            (wait_lock held)
//! ```
//!
//! No lost wakeup through `WOKEN`: an unlock skips the wakeup only if it releases the lock in
//! an RMW that still sees `WOKEN`; the waiter that clears `WOKEN` (an RMW on the same word)
//! re-tries the lock afterwards, before it can sleep again, so it either sees that release or a
//! later unlock sees `WOKEN` clear and wakes the head. A waiter that leaves the list clears
//! `WOKEN` under the wait_lock, so a wakeup owed to a departed head is re-sent to the new head
//! (spare wakeups are harmless: parking re-checks).
//!
//! # Fairness
//!
//! New lockers and spinners may overtake sleeping waiters (throughput: a futex wake costs
//! 2–30 µs, a spin a few hundred ns). Starvation is bounded by the handoff: a woken head that
//! fails to get the lock once sets HANDOFF, and the next unlock gives it the lock directly, so
//! the head waits at most one more critical section after its wakeup; [`RawMutex::unlock_fair`]
//! hands off unconditionally.
//!
//! # Misuse
//!
//! Unlocking a mutex this thread does not hold (double unlock, unlock from another thread) fails
//! the unlock fast path and is caught by the slow path, which panics: free, so always on. A
//! blocking `lock` by the thread that already holds the mutex panics instead of deadlocking.

use core::marker::PhantomData;

use crate::osq::Osq;
use crate::policy::{DefaultPolicy, MutexPolicy};
use crate::spin::{Spin, SpinStats, Stop};
use crate::sync::{loom_const_fn, AtomicUsize, Ordering::*};
use crate::sys::{self, Deadline};
use crate::thread::{current, ThreadRec};
use crate::wait::{Kind, WaitList, WaitLock, Waiter, WakeQ};

/// The wait list is non-empty.
const WAITERS: usize = 1 << 0;
/// The next unlock hands the lock to the head waiter.
const HANDOFF: usize = 1 << 1;
/// The lock was handed to the named owner, who has not picked it up yet.
const PICKUP: usize = 1 << 2;
/// A wakeup of the head waiter is in flight: unlockers release without waking again.
const WOKEN: usize = 1 << 3;
/// All flag bits.
const FLAGS_MASK: usize = WAITERS | HANDOFF | PICKUP | WOKEN;
/// Handoffs an unlocker may withhold from a sleeping head waiter before it hands off anyway.
const MAX_HANDOFF_DENIALS: u32 = 2;

#[inline]
fn owner_of(word: usize) -> usize {
    word & !FLAGS_MASK
}

/// # Safety
/// `owner` is a non-zero owner-word value: the address of a pool record (type-stable).
#[inline]
unsafe fn rec_of(owner: usize) -> &'static ThreadRec {
    // SAFETY: owner words only ever hold `ThreadRec::as_owner()` values, and records are never
    // freed (thread.rs), so the reference is valid even if that thread has exited.
    unsafe { &*(owner as *const ThreadRec) }
}

/// The raw kernel-style mutex. Use it through [`Mutex`] (`lock_api`), or directly.
///
/// `P` selects seed policies ([`crate::policy`]); the default costs nothing.
/// Size: 32 bytes on 64-bit targets; all-zero is a valid unlocked mutex. `repr(C)`: the layout
/// does not depend on `P` (the condvar relies on that when it requeues onto a mutex it knows only
/// by address).
#[repr(C)]
pub struct RawMutex<P: MutexPolicy = DefaultPolicy> {
    owner: AtomicUsize,
    list: WaitList,
    wait_lock: WaitLock,
    osq: Osq,
    stats: SpinStats,
    _policy: PhantomData<fn() -> P>,
}

// SAFETY: all fields are atomics (or guarded by the wait_lock); the type is a lock.
unsafe impl<P: MutexPolicy> Sync for RawMutex<P> {}
// SAFETY: as above; a RawMutex holds no thread-bound data.
unsafe impl<P: MutexPolicy> Send for RawMutex<P> {}

impl<P: MutexPolicy> core::fmt::Debug for RawMutex<P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RawMutex")
            .field("locked", &self.is_locked())
            .finish()
    }
}

impl<P: MutexPolicy> Default for RawMutex<P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P: MutexPolicy> RawMutex<P> {
    loom_const_fn! {
        /// A new, unlocked mutex (all-zero).
        pub fn new() -> Self {
            RawMutex {
                owner: AtomicUsize::new(0),
                wait_lock: WaitLock::new(),
                osq: Osq::new(),
                list: WaitList::new(),
                stats: SpinStats::new(),
                _policy: PhantomData,
            }
        }
    }

    /// Acquires the mutex, spinning while the owner runs and sleeping otherwise.
    ///
    /// # Panics
    /// If the calling thread already holds it (that would deadlock).
    #[inline]
    pub fn lock(&self) {
        let me = current();
        // Acquire pairs with the Release of the unlock that freed the lock.
        if self
            .owner
            .compare_exchange_weak(0, me.as_owner(), Acquire, Relaxed)
            .is_err()
        {
            self.lock_contended(me, None);
        }
    }

    /// Acquires the mutex only if it is free right now. Never spins, never sleeps (like the
    /// kernel's `mutex_trylock`); it may overtake sleeping waiters.
    #[inline]
    pub fn try_lock(&self) -> bool {
        self.try_acquire(current(), false).is_ok()
    }

    /// Seed S3: like [`try_lock`](Self::try_lock), but if the owner is running, spin (through
    /// the OSQ, under the adaptive budget) for it to release before failing. A failed try_lock
    /// usually costs its caller an unlock/relock sequence, which is dearer than a short spin.
    /// Never sleeps.
    pub fn try_lock_spin(&self) -> bool {
        let me = current();
        self.try_acquire(me, false).is_ok() || self.optimistic_spin(me)
    }

    /// Acquires the mutex unless `timeout` passes first. `true` = acquired.
    pub fn try_lock_for(&self, timeout: std::time::Duration) -> bool {
        self.lock_until(sys::deadline_after(timeout))
    }

    /// Acquires the mutex unless `deadline` passes first. `true` = acquired.
    pub fn try_lock_until(&self, deadline: std::time::Instant) -> bool {
        self.lock_until(sys::deadline_from_instant(deadline))
    }

    /// `lock` with a monotonic deadline (ns): the fast path, then the timed slow path.
    fn lock_until(&self, deadline: u64) -> bool {
        let me = current();
        self.owner
            .compare_exchange(0, me.as_owner(), Acquire, Relaxed)
            .is_ok()
            || self.lock_contended(me, Some(deadline))
    }

    /// Releases the mutex. Sleeping waiters may be overtaken by running lockers (see the
    /// module doc's fairness section).
    ///
    /// # Safety
    /// The calling thread holds the mutex. (Violations are detected and panic: see "Misuse".)
    #[inline]
    pub unsafe fn unlock(&self) {
        self.release(false);
    }

    /// Releases the mutex and, if anyone waits, hands it directly to the head waiter.
    ///
    /// # Safety
    /// The calling thread holds the mutex.
    pub unsafe fn unlock_fair(&self) {
        self.release(true);
    }

    /// The unlock fast path: one CAS from "held by me, no flags" to 0.
    #[inline]
    fn release(&self, fair: bool) {
        let me = current();
        // Release pairs with the Acquire of the next acquisition.
        if self
            .owner
            .compare_exchange(me.as_owner(), 0, Release, Relaxed)
            .is_err()
        {
            self.unlock_slow(me, fair);
        }
    }

    /// Is the mutex held by some thread (a hint)?
    #[inline]
    pub fn is_locked(&self) -> bool {
        owner_of(self.owner.load(Relaxed)) != 0
    }

    /// Are threads sleeping on the mutex (a hint)?
    #[inline]
    pub fn has_waiters(&self) -> bool {
        self.owner.load(Relaxed) & WAITERS != 0
    }

    /// Does the calling thread hold the mutex?
    pub fn is_owned_by_current_thread(&self) -> bool {
        owner_of(self.owner.load(Relaxed)) == current().as_owner()
    }

    /// The trylock core (kernel `__mutex_trylock_common`): takes a free lock (keeping
    /// WAITERS), picks up a lock handed to `me`, or fails with the owner. With `handoff`, a
    /// failure also asks the owner to hand the lock over at unlock (head waiter only).
    #[inline]
    fn try_acquire(&self, me: &'static ThreadRec, handoff: bool) -> Result<(), usize> {
        let mine = me.as_owner();
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
    /// changed (re-try the lock), `Err` when the spin must stop.
    #[inline(never)]
    fn spin_on_owner(&self, owner: usize, spin: &mut Spin<'_>) -> Result<(), Stop> {
        // SAFETY: `owner` came from the owner word (non-zero).
        let rec = unsafe { rec_of(owner) };
        while owner_of(self.owner.load(Relaxed)) == owner {
            spin.step_on(rec)?;
        }
        Ok(())
    }

    /// Optimistic spinning as a non-waiter: join the OSQ, and as its head poll the lock while
    /// the owner runs, within the lock's budget. `true` = acquired.
    fn optimistic_spin(&self, me: &'static ThreadRec) -> bool {
        let mut spin = Spin::new(&self.stats, me);
        let owner = owner_of(self.owner.load(Relaxed));
        // SAFETY: non-zero owner word value.
        if owner != 0 && !spin.owner_running(unsafe { rec_of(owner) }) {
            return false;
        }
        if !self.osq.lock(me, P::OSQ_LAYOUT, &mut spin) {
            spin.failed(Stop::OwnerNotRunning);
            return false;
        }
        let r = self.poll(me, false, &mut spin);
        self.osq.unlock(me, P::OSQ_LAYOUT);
        spin.finish(r)
    }

    /// The head waiter's spin (no OSQ, concurrent with the OSQ head, as in the kernel): keeps
    /// HANDOFF requested and polls until it gets the lock or the spin must stop.
    fn waiter_spin(&self, me: &'static ThreadRec) -> bool {
        let mut spin = Spin::new(&self.stats, me);
        let r = self.poll(me, true, &mut spin);
        spin.finish(r)
    }

    /// The spinner's loop: try the lock (asking for `handoff` if so told), and while it is held
    /// spin on its owner; `Ok` once acquired, `Err` when the spin must stop.
    fn poll(&self, me: &'static ThreadRec, handoff: bool, spin: &mut Spin<'_>) -> Result<(), Stop> {
        loop {
            match self.try_acquire(me, handoff) {
                Ok(()) => return Ok(()),
                Err(owner) => self.spin_on_owner(owner, spin)?,
            }
        }
    }

    /// The lock slow path. `false` only when `deadline` passed.
    #[cold]
    fn lock_contended(&self, me: &'static ThreadRec, deadline: Deadline) -> bool {
        match self.try_acquire(me, false) {
            Ok(()) => return true,
            Err(owner) if owner == me.as_owner() => {
                panic!("kslock: Mutex locked again by the thread that holds it (self-deadlock)")
            }
            Err(_) => {}
        }
        if self.optimistic_spin(me) {
            return true;
        }
        let w = Waiter::new(me, Kind::Write, 0);
        self.wait_lock.lock(me, &self.stats);
        if self.try_acquire(me, false).is_ok() {
            self.wait_lock.unlock();
            return true;
        }
        // SAFETY: wait_lock held; `w` lives on this frame until `wait_in_queue` unlinks it.
        if unsafe { self.list.push_back(&w) } {
            self.owner.fetch_or(WAITERS, Relaxed);
        }
        // SAFETY: `w` is linked and the wait_lock is held.
        unsafe { self.wait_in_queue(me, &w, deadline) }
    }

    /// The waiting loop of a queued waiter; returns with `w` unlinked and the wait_lock
    /// dropped. `false` only when `deadline` passed.
    ///
    /// # Safety
    /// The wait_lock is held and `w` (owned by `me`) is linked in this mutex's list.
    pub(crate) unsafe fn wait_in_queue(
        &self,
        me: &'static ThreadRec,
        w: &Waiter,
        deadline: Deadline,
    ) -> bool {
        let mut first = false;
        let acquired = loop {
            // wait_lock held here. Before every retry that may be followed by a sleep, clear
            // WOKEN so that a later unlock wakes the head again (module doc). This also covers a
            // condvar waiter that was woken after being requeued onto this mutex.
            self.owner.fetch_and(!WOKEN, Relaxed);
            // A handoff to us is picked up here, ordered by the wait_lock.
            if self.try_acquire(me, first).is_ok() {
                break true;
            }
            self.wait_lock.unlock();
            let timed_out = me.park(deadline).is_err();
            first = self.list.is_first(w);
            if first && (self.try_acquire(me, true).is_ok() || self.waiter_spin(me)) {
                self.wait_lock.lock(me, &self.stats);
                break true;
            }
            self.wait_lock.lock(me, &self.stats);
            // Under the wait_lock no handoff to us can be in flight: take one that landed,
            // else leave.
            if timed_out {
                break self.try_acquire(me, false).is_ok();
            }
        };
        // SAFETY: wait_lock held, `w` linked.
        if unsafe { self.list.remove(w) } {
            // Last waiter gone: no one to wake, no one to hand to.
            self.owner.fetch_and(!(WAITERS | HANDOFF | WOKEN), Relaxed);
        } else {
            // A wakeup in flight may have been meant for us: let the next unlock wake the head.
            self.owner.fetch_and(!WOKEN, Relaxed);
        }
        self.wait_lock.unlock();
        if acquired {
            me.note_cpu();
        }
        acquired
    }

    /// The unlock slow path: flags are set, or the caller does not hold the lock (misuse).
    #[cold]
    fn unlock_slow(&self, me: &'static ThreadRec, fair: bool) {
        let mine = me.as_owner();
        let mut o = self.owner.load(Relaxed);
        let handoff = loop {
            if owner_of(o) != mine {
                panic!(
                    "kslock: Mutex unlocked by a thread that does not hold it (double unlock, or unlock from another thread)"
                );
            }
            if o & HANDOFF != 0 || (fair && o & WAITERS != 0) {
                break true;
            }
            // Release the lock, keeping WAITERS and WOKEN: Release pairs with the next acquirer's
            // Acquire. No waiters, or a woken head already on its way: done.
            match self
                .owner
                .compare_exchange(o, o & (WAITERS | WOKEN), Release, Relaxed)
            {
                Ok(_) if o & WAITERS == 0 || o & WOKEN != 0 => return,
                Ok(_) => break false,
                Err(x) => o = x,
            }
        };
        let mut wake = WakeQ::<1>::new();
        self.wait_lock.lock(me, &self.stats);
        let head = self.list.first();
        if !head.is_null() {
            // SAFETY: linked waiters are alive while the wait_lock is held.
            wake.push(unsafe { (*head).rec });
        }
        // A head that sleeps cannot pick the lock up before its wakeup lands (≈ 2–30 µs): handing
        // it the lock would leave the lock idle that long. Release instead and let it re-ask once
        // it runs, at most MAX_HANDOFF_DENIALS times, which keeps its wait bounded.
        // `unlock_fair` always hands off.
        let handoff = handoff
            && (fair
                || head.is_null()
                // SAFETY: linked waiters are alive while the wait_lock is held.
                || unsafe { !(*head).rec.is_parked() || (*head).deny_handoff() > MAX_HANDOFF_DENIALS });
        let mut o = self.owner.load(Relaxed);
        loop {
            let woken = if head.is_null() { 0 } else { WOKEN };
            let new = if handoff && !head.is_null() {
                // SAFETY: as above.
                unsafe { (*head).rec.as_owner() | PICKUP | (o & WAITERS) | woken }
            } else if owner_of(o) == mine {
                // Plain release (no handoff, or the waiters left meanwhile), keeping WAITERS.
                (o & WAITERS) | woken
            } else if woken != 0 && o & WOKEN == 0 {
                // Released before taking the wait_lock (no handoff was due): mark the wakeup we
                // are about to send, leaving the current owner's bits (HANDOFF too) alone.
                o | WOKEN
            } else {
                break;
            };
            // Release pairs with the head's Acquire pick-up (or the next acquirer). Our own
            // release or handoff consumes HANDOFF; a foreign owner's word keeps it.
            let new = if owner_of(o) == mine {
                new & !HANDOFF
            } else {
                new
            };
            match self.owner.compare_exchange(o, new, Release, Relaxed) {
                Ok(_) => break,
                Err(x) => o = x,
            }
        }
        self.wait_lock.unlock();
        wake.wake_all();
    }

    /// Condvar support: the wait_lock and list, for requeueing condvar waiters.
    pub(crate) fn requeue_parts(&self) -> (&WaitLock, &WaitList, &SpinStats) {
        (&self.wait_lock, &self.list, &self.stats)
    }

    /// Condvar support: marks the wait list non-empty after a requeue (wait_lock held).
    pub(crate) fn set_waiters(&self) {
        self.owner.fetch_or(WAITERS, Relaxed);
    }
}

#[cfg(not(kslock_loom))]
mod api {
    use super::*;

    // SAFETY: `lock`/`try_lock` give exclusive ownership until `unlock` (module doc), and
    // unlocking requires the locking thread (GuardNoSend).
    unsafe impl<P: MutexPolicy> lock_api::RawMutex for RawMutex<P> {
        #[allow(clippy::declare_interior_mutable_const)]
        const INIT: Self = RawMutex::new();
        type GuardMarker = lock_api::GuardNoSend;

        #[inline]
        fn lock(&self) {
            RawMutex::lock(self)
        }
        #[inline]
        fn try_lock(&self) -> bool {
            RawMutex::try_lock(self)
        }
        #[inline]
        unsafe fn unlock(&self) {
            // SAFETY: forwarded caller contract.
            unsafe { RawMutex::unlock(self) }
        }
        #[inline]
        fn is_locked(&self) -> bool {
            RawMutex::is_locked(self)
        }
    }

    // SAFETY: as for RawMutex; `unlock_fair` hands the lock to the head waiter.
    unsafe impl<P: MutexPolicy> lock_api::RawMutexFair for RawMutex<P> {
        unsafe fn unlock_fair(&self) {
            // SAFETY: forwarded caller contract.
            unsafe { RawMutex::unlock_fair(self) }
        }
        unsafe fn bump(&self) {
            if self.has_waiters() {
                // SAFETY: forwarded caller contract; we re-take the lock before returning.
                unsafe { RawMutex::unlock_fair(self) };
                RawMutex::lock(self);
            }
        }
    }

    // SAFETY: timed acquisitions give the same exclusion as `lock` when they return true.
    unsafe impl<P: MutexPolicy> lock_api::RawMutexTimed for RawMutex<P> {
        type Duration = std::time::Duration;
        type Instant = std::time::Instant;
        fn try_lock_for(&self, timeout: Self::Duration) -> bool {
            RawMutex::try_lock_for(self, timeout)
        }
        fn try_lock_until(&self, timeout: Self::Instant) -> bool {
            RawMutex::try_lock_until(self, timeout)
        }
    }
}

/// A mutual-exclusion lock protecting a `T`, with kernel-mutex behaviour ([`RawMutex`]).
#[cfg(not(kslock_loom))]
pub type Mutex<T> = lock_api::Mutex<RawMutex, T>;
/// A [`Mutex`] with a non-default policy (e.g. `MutexWith<kslock::policy::PackedOsq, T>`).
#[cfg(not(kslock_loom))]
pub type MutexWith<P, T> = lock_api::Mutex<RawMutex<P>, T>;
/// RAII guard of a [`Mutex`].
#[cfg(not(kslock_loom))]
pub type MutexGuard<'a, T> = lock_api::MutexGuard<'a, RawMutex, T>;
/// A guard of a mapped [`Mutex`] borrow.
#[cfg(not(kslock_loom))]
pub type MappedMutexGuard<'a, T> = lock_api::MappedMutexGuard<'a, RawMutex, T>;

/// Creates a [`Mutex`] in a `const` context (e.g. a `static`).
#[cfg(not(kslock_loom))]
pub const fn const_mutex<T>(val: T) -> Mutex<T> {
    Mutex::const_new(RawMutex::new(), val)
}

#[cfg(all(test, not(kslock_loom)))]
mod tests {
    use super::*;

    #[test]
    fn size_and_zero_init() {
        assert!(core::mem::size_of::<RawMutex>() <= 40);
        assert_eq!(core::mem::size_of::<RawMutex>(), 32);
        // SAFETY: all-zero is documented as a valid unlocked mutex.
        let m: RawMutex = unsafe { core::mem::zeroed() };
        assert!(!m.is_locked());
        assert!(m.try_lock());
        assert!(m.is_owned_by_current_thread());
        // SAFETY: held by this thread.
        unsafe { m.unlock() };
        assert!(!m.is_locked());
    }

    #[test]
    fn try_lock_fails_while_held_and_never_waits() {
        let m = std::sync::Arc::new(RawMutex::<DefaultPolicy>::new());
        m.lock();
        let m2 = m.clone();
        let t0 = std::time::Instant::now();
        assert!(!std::thread::spawn(move || m2.try_lock()).join().unwrap());
        assert!(t0.elapsed() < std::time::Duration::from_secs(1));
        // SAFETY: held by this thread.
        unsafe { m.unlock() };
    }

    #[test]
    #[should_panic(expected = "does not hold it")]
    fn double_unlock_panics() {
        let m = RawMutex::<DefaultPolicy>::new();
        m.lock();
        // SAFETY: deliberately violated on the second call to test the misuse check.
        unsafe {
            m.unlock();
            m.unlock();
        }
    }

    #[test]
    #[should_panic(expected = "does not hold it")]
    fn unlock_by_another_thread_panics() {
        let m = std::sync::Arc::new(RawMutex::<DefaultPolicy>::new());
        // Register this thread first: records of exited threads are reused, and the locker's
        // record must not become ours.
        assert!(!m.is_owned_by_current_thread());
        let m2 = m.clone();
        std::thread::spawn(move || m2.lock()).join().unwrap();
        // SAFETY: deliberately violated to test the misuse check.
        unsafe { m.unlock() };
    }

    #[test]
    #[should_panic(expected = "self-deadlock")]
    fn relock_by_owner_panics() {
        let m = RawMutex::<DefaultPolicy>::new();
        m.lock();
        m.lock();
    }
}
