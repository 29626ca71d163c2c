//! The kernel mutex (`docs/kernel-locks.md` B) for user space, with a fairness window.
//!
//! One owner word, one-CAS fast paths, optimistic spinning through the OSQ while the owner
//! runs, a FIFO of sleeping waiters behind a small wait_lock, and a handoff that bounds how long
//! the head waiter can lose to threads that barge in. What each mechanism below was measured
//! against, and the variants that were dropped: `docs/experiments.md` in the repository.
//!
//! # The owner word
//!
//! `owner = owner word of the holding thread | flags` (owner words, [`crate::thread`]: a record
//! id and a generation, with bits 0–6 free); all-zero = unlocked, nobody to wake.
//!
//! | bit | name | meaning | set by | cleared by |
//! |-----|------|---------|--------|------------|
//! | 0 | `WAKE_HEAD` | the head waiter sleeps until an unlock wakes it: the next unlock releases the lock and wakes the head | a head waiter about to sleep with no timer, by a CAS that succeeds only while the lock is held (wait_lock held); a head leaving without the lock while the lock is held | the unlock that wakes the head (in its release CAS); the last waiter leaving |
//! | 1 | `HANDOFF` | the head waiter's fairness window is due and it is awake, waiting for the lock: the next unlock hands the lock to the head instead of releasing it | the due head (`try_acquire(handoff)`), only while the lock is owned and not in PICKUP | the unlocker when it hands off or releases (wait_lock held); the head when it stops waiting awake (`stop_asking`, wait_lock held) |
//! | 2 | `PICKUP` | the lock was handed to the thread named in the owner bits, which has not taken it yet | the unlocker, in the same CAS that names the head as owner (wait_lock held) | the head, when it picks the lock up |
//! | 7.. | owner | the owning thread's owner word (record id in bits 7–31, generation in 32–63), 0 = free | the acquiring thread (CAS) or the handing-off unlocker | the owner (unlock) |
//!
//! Waiters are not a flag: the wait list (`list`, its own word) says whether anyone waits; the
//! owner word only carries what the next unlock must *do*. While the head sleeps on its window
//! timer the owner word of a busy lock has no flag at all, so the owner's re-locks and unlocks
//! stay one-CAS fast paths (`docs/kernel-locks.md` B keeps `WAITERS` set as long as anyone
//! waits, which sends every unlock of a contended lock to the slow path).
//!
//! Transitions (`T` = a thread's owner word, `W` = WAKE_HEAD, `H` = HANDOFF, `P` = PICKUP):
//!
//! ```text
//! lock fast      0        -> T            (CAS, Acquire)
//! unlock fast    T        -> 0            (CAS, Release)
//! trylock        0|W      -> T|W          (CAS, Acquire; spinners, woken waiters, try_lock)
//! arm wake       T        -> T|W          (fresh head before sleeping; wait_lock held)
//! unlock, wake   T|W      -> 0            (Release) then wake the head
//! ask handoff    T        -> T|H          (the head when its window is due)
//! hand off       T|H      -> Head|P       (Release, wait_lock held) then unpark the head
//! pick up        Head|P   -> Head         (Acquire, by the head)
//! stop asking    T|H      -> T|W          (the head, awake for too long; wait_lock held)
//! ```
//!
//! # Fairness
//!
//! Threads that are running (the owner re-locking, spinners, new lockers) may take the lock
//! ahead of sleeping waiters: a wakeup costs 2–30 µs, a barging re-lock a few ns. How long the
//! head waiter lets that go on is its **fairness window** ([`crate::fairness`]): from the moment
//! it heads the queue, at most `clamp(queued_at + 4 ms, head_at + min, head_at + max)`, with
//! `min` = 2 spin caps clamped to 20–80 µs and `max` = 1 ms. The head's life:
//!
//! 1. **Fresh head** (just queued, or just became head): it arms `WAKE_HEAD` and sleeps, so the
//!    next unlock wakes it. A lock that is only briefly busy hands over at the first unlock.
//! 2. **Woken, lost the race**: the unlock woke it but another thread took the lock first (it
//!    barged): the lock is busy. The head spins for a moment (the spin oracle's budget), then
//!    sleeps on its window timer, *without* `WAKE_HEAD`: the owner runs unlocks and re-locks
//!    with no flag and wakes nobody.
//! 3. **Due**: at the end of its window the head sets `HANDOFF` and waits awake; the next
//!    unlock hands it the lock (`PICKUP`), after at most one critical section. If the lock is
//!    still on its way to the previous head (`PICKUP`), it asks as soon as that head has
//!    picked it up (the test `mutex_short_windows`). If the owner does not unlock within the
//!    spin budget (it sleeps, or was preempted), the head stops asking (`HANDOFF` →
//!    `WAKE_HEAD`) and sleeps until the unlock wakes it: handing the lock to a sleeping thread
//!    would leave it idle for a whole wakeup.
//!
//! When the lock changes hands and others still wait, the next head is woken to start its own
//! window: the unlocker that hands over wakes it, and a head that took the lock without a
//! handover wakes the next head itself. A head made head by a handover sleeps on its window
//! (it does not race the new owner, whose window has just begun) and then asks with
//! `HANDOFF`. The old owner, whose re-lock now fails, queues at the tail after its pre-queue
//! yields. So when threads outnumber CPUs the lock runs in windows: one thread re-locks from
//! its own cache while the head sleeps on its timer, then ownership moves to the head in FIFO
//! order. The bound: a waiter at queue position k gets the lock within k × (window + the
//! head's timer lateness + one critical section + one handover). Threads that never queue
//! are bounded by the barging limit (below), which sends them to the queue.
//!
//! [`HandoffPolicy::FirstFailure`](crate::policy::HandoffPolicy::FirstFailure) (policy
//! [`crate::policy::KernelHandoff`]) instead asks for the handoff as soon as the woken head
//! loses once, as the kernel does: fair at µs scale, a handover per wakeup.
//! [`RawMutex::unlock_fair`] hands off whenever anyone waits.
//!
//! # Yield before queueing
//!
//! A locker whose optimistic spin fails gives its CPU away (`sched_yield`) and tries again, up
//! to [`crate::spin::PRE_QUEUE_YIELDS`] (4) times, before it queues (switch
//! `KSLOCK_OFF=pre_queue_yield`), as the rwsem's writers and blocked readers do. With more
//! threads than CPUs a spin mostly fails because the owner was preempted; a thread that then
//! sleeps in the queue leaves only by the rotation (one head at a time, one window each), so
//! with work outside the lock the queue fills and a CPU idles. A yield lets the owner run and
//! keeps the locker runnable. After a spin that ran out of budget on a *running* owner the
//! locker yields again only if the yield ran other threads (it took at least 1/16 of the spin
//! cap, [`crate::spin`]'s `timed_yield`): with nothing else runnable a yield returns at once,
//! and spinning again would only poll the batching owner's line. After each yield the locker
//! tries the lock once (spinning again after each yield paid nothing on the suite:
//! `docs/experiments.md`, "Leave-one-out on the whole suite"). Fairness stays with the queue: the
//! head's window bounds how long yielders may barge.
//!
//! # The yield gate
//!
//! Where most of a lock's pre-queue yield phases end in the queue anyway, a locker whose spin
//! failed queues at once (switch `KSLOCK_OFF=yield_gate`): each such yield was a context switch
//! taken from running threads, the owner's included. The lock's spin word keeps an average
//! (weight 1/8) of the share of yield phases that queued ([`crate::spin`]'s `SpinStats`, bits
//! 10–15); above one half the yields are skipped, except by one locker in 8 (picked by the
//! clock's low bits), whose phase keeps the average current.
//!
//! # Quick poll
//!
//! A locker whose fast path failed first polls the lock word alone (`quick_poll`, switch
//! `KSLOCK_OFF=quick_poll`), if nobody spins in the OSQ and nobody waits: up to 16 polls, 1, 2,
//! 4, … pauses apart up to R6's calibrated poll gap ([`crate::spin`]), taking the lock with one
//! CAS when it is free; it gives up after 3 polls in a row that show the same owner (a
//! batching owner), on a sleeping owner or on a handover, and the OSQ spin follows. The OSQ
//! spin costs four RMWs on the lock's only cache line (OSQ join and leave, the spinner
//! admission and the spin-time average) besides the CAS, and when the lock changes hands at
//! every operation (a little work between two sections) those RMWs are most of an
//! acquisition. The poll's bound: 1 + 2 + 4 + 8 + 16 + 11 × 32 = 383 pauses, ≈ 10 µs with a
//! 32-pause gap, reached only where the owner keeps changing; a herd of pollers on a many-core machine is limited by the same OSQ-empty check.
//!
//! **Batch stops.** A free re-check (below) that sees the owner take the lock straight back
//! ends the quick poll, and that locker skips the OSQ spin for its pre-queue yields, as after
//! a spin that ran out on a running owner (`Quick::Batch`). The same sighting stops a spinner
//! (the OSQ head, a queue head that races, `try_lock_spin`) as if its budget ran out: the
//! owner keeps its batch. One rule at the two places the re-check runs (switch
//! `KSLOCK_OFF=batch_stop`).
//!
//! **Free re-check** (switch `KSLOCK_OFF=free_recheck`): a spinner (the
//! quick poll after it has seen an owner, and the OSQ spin) that finds the lock free does not
//! CAS at once: it looks again `recheck_pauses()` later (1/8 of R6's poll gap, ≈ one cross-CPU
//! line transfer) and takes the lock only if it is still free. An owner that re-locks faster
//! than a handover costs keeps its batch. Not where the lock's spins win after short waits
//! ([`crate::spin`]'s statistics, as for "Long sections that end"): there the owner leaves for
//! longer than the wait, and the re-check would idle the lock at every handover ("spins win
//! after short waits": a success rate of at least 56/63 and a mean spin of at most 1 µs). Its
//! bound: the re-check's pauses are budgeted spin steps, so it never extends a spin past the
//! spin's budget.
//!
//! # Barging limit
//!
//! The windows bound queued waiters; a thread that never queues (it keeps winning the lock by
//! its fast path, the quick poll, the spin or after a yield) is bounded by one rule: a thread
//! that has taken contended mutexes for the window maximum ([`crate::fairness::window_ns`],
//! 1 ms) without queueing or sleeping in kslock, while others wait, yields its CPU once at its
//! next contended lock (a head whose window is due, woken onto this CPU, can run and ask for its
//! handover), and if it reaches the limit again still without having queued or slept, it queues
//! at once (no quick poll, spin or yield; switch `KSLOCK_OFF=barge_limit` in experiment
//! builds). Its count starts at its first contended lock with waiters present and ends when it
//! queues or sleeps in any kslock futex wait (`ThreadRec::barging_since`); its cost is one clock
//! read per contended lock while anyone waits, on the slow path only. So every thread that
//! contends passes through the FIFO at least once per two window maxima of barging, and there
//! meets the windows' bound. The test `mutex_barging_limit` bounds the spread with 96 threads and
//! work outside the lock over 6 s (max/min per-thread operations 2.7–4.1 over 10 debug runs on
//! 2026-12-02; 16–17 without the limit over 3 s). There a pass through the queue of 96 takes
//! 650–970 ms (≈ 8 ms per head: two wakeups on an oversubscribed CPU).
//!
//! # One transfer per unlock
//!
//! The release CAS is the unlock's first and only access to the lock's line, as in the rwsem
//! (module doc of [`crate::rwsem`], "One transfer per unlock"): a load of the line before the
//! CAS would fetch it shared when another CPU touched it during the section, and the CAS would
//! fetch it again. The release is `#[inline(always)]`, one CAS with a call only on the slow
//! path, so it inlines into any caller.
//!
//! # No lost wakeup
//!
//! An unlock wakes a sleeping head only if its release CAS consumed `WAKE_HEAD`, or it hands
//! the lock over. A head arms `WAKE_HEAD` with a CAS that succeeds only while the lock is held
//! (if it is free, the head takes it instead), so the unlock of that hold is later in the owner
//! word's modification order and sees the bit. A head that sleeps without `WAKE_HEAD` has a
//! timer (its window) and needs no wakeup. A head leaving the list without the lock passes its
//! turn on: it arms `WAKE_HEAD` for the new head if the lock is held, or wakes it if it is free
//! (issue 8, defect 1).
//!
//! # Ablation (`KSLOCK_OFF`, [`crate::ablate`])
//!
//! In experiment builds (`--cfg kslock_ablate`) every mechanism above can be switched off for
//! an A/B: `barge_limit`, `pre_queue_yield`, `yield_gate`, `quick_poll`, `batch_stop`,
//! `free_recheck` and `trylock_spin_cap` (this module), and `censored_budget`
//! ([`crate::spin`]); the table of all the switches, the rwsem's included, is in `ablate.rs`.
//!
//! # Memory orderings
//!
//! * The lock CASes (fast path, `try_acquire`, the head's pick-up) are Acquire and pair with
//!   the Release of the unlock or handoff CAS that freed or handed over the lock.
//! * Flag RMWs (`WAKE_HEAD`, `HANDOFF`) are Relaxed: they hand nothing over; the owner word's
//!   modification order alone decides which unlock sees them, and the list they describe is
//!   guarded by the wait_lock (Acquire/Release).
//! * Spinners load the owner word Relaxed and then read the record it names (`parked`, `cpu`):
//!   the word holds a record *id*, which [`crate::thread::owner_rec`] turns into a record
//!   through the pool's segment table (Release publication, Acquire load), so the record's
//!   initialisation happens-before those reads whatever ordering the owner word had. Records
//!   are never freed and all their fields are atomics: a stale word gives a stale hint
//!   (re-checked against the word, R1 of [`crate::spin`]), never a bad read.
//!
//! # Misuse
//!
//! Unlocking a mutex this thread does not hold (double unlock, unlock from another thread) fails
//! the unlock fast path and is caught by the slow path, which panics: free, so always on. A
//! blocking `lock` by the thread that already holds the mutex panics instead of deadlocking.
//!
//! Embedders whose locks any thread may release (glibc's normal `pthread_mutex_t`, which
//! programs use as a binary semaphore: the pthread interposer) call
//! [`RawMutex::unlock_on_behalf`], the release the holder would make, made by another thread,
//! and [`RawMutex::lock_or_await_release`], a `lock` that lets the holder wait, like any
//! locker, for that release of its own hold. Both take the existing slow paths with the
//! holder's owner word in place of the caller's; the loom models
//! `loom_mutex_unlock_on_behalf_of_the_holder` and
//! `loom_mutex_holder_awaits_the_release_on_its_behalf` cover them.

use core::marker::PhantomData;

use crate::osq::Osq;
use crate::policy::{DefaultPolicy, MutexPolicy};
use crate::spin::SpinStats;
use crate::stats;
use crate::sync::{loom_const_fn, AtomicU32, AtomicU64, Ordering::*};
use crate::sys;
use crate::thread::{current, current_word, OWNER_FLAGS};
use crate::wait::{WaitList, WaitLock};

mod queue;
mod slow;

/// The head waiter sleeps until an unlock wakes it.
const WAKE_HEAD: u64 = 1 << 0;
/// The next unlock hands the lock to the head waiter.
const HANDOFF: u64 = 1 << 1;
/// The lock was handed to the named owner, who has not picked it up yet.
const PICKUP: u64 = 1 << 2;
/// All flag bits.
const FLAGS_MASK: u64 = WAKE_HEAD | HANDOFF | PICKUP;
const _: () = assert!(FLAGS_MASK & !OWNER_FLAGS == 0);

/// The owner word in a lock word (0 = free).
#[inline]
fn owner_of(word: u64) -> u64 {
    word & !OWNER_FLAGS
}

/// The raw kernel-style mutex. Use it through [`Mutex`] (`lock_api`), or directly.
///
/// `P` selects seed policies ([`crate::policy`]); the default costs nothing.
/// Size: 32 bytes on 64-bit targets; all-zero is a valid unlocked mutex. `repr(C)`, with a
/// layout that does not depend on `P` (the condvar relies on that when it requeues onto a
/// mutex it knows only by address) and with bytes 16–19 never touched by the mutex: they are
/// left to an embedder (the pthread interposer keeps glibc's mutex kind there, where glibc's
/// static initialisers write it).
#[repr(C)]
pub struct RawMutex<P: MutexPolicy = DefaultPolicy> {
    owner: AtomicU64,
    list: WaitList,
    /// Bytes 16–19: never read or written by the mutex (type doc).
    _embedder: AtomicU32,
    wait_lock: WaitLock,
    osq: Osq,
    stats: SpinStats,
    _policy: PhantomData<fn() -> P>,
}

#[cfg(not(kslock_loom))]
const _: () = {
    assert!(core::mem::size_of::<RawMutex>() == 32);
    assert!(core::mem::offset_of!(RawMutex, _embedder) == 16);
};

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
                owner: AtomicU64::new(0),
                list: WaitList::new(),
                _embedder: AtomicU32::new(0),
                wait_lock: WaitLock::new(),
                osq: Osq::new(),
                stats: SpinStats::new(),
                _policy: PhantomData,
            }
        }
    }

    /// Acquires the mutex, spinning while the owner runs and sleeping otherwise.
    ///
    /// # Panics
    /// If the calling thread already holds it (that would deadlock).
    #[cfg_attr(feature = "stats", inline(always))]
    #[cfg_attr(not(feature = "stats"), inline)]
    pub fn lock(&self) {
        // Acquire pairs with the Release of the unlock that freed the lock.
        if self
            .owner
            .compare_exchange_weak(0, current_word(), Acquire, Relaxed)
            .is_err()
        {
            let w = stats::contended(self);
            self.lock_contended(current(), None);
            return w.acquired();
        }
        stats::acquired(self);
    }

    /// Bytes 16–19, which the mutex never reads or writes (type doc): an embedder's word (the
    /// hybrid rw lock keeps its mode epoch's start there).
    #[inline]
    pub(crate) fn embedder_word(&self) -> &AtomicU32 {
        &self._embedder
    }

    /// The lock fast path alone: one CAS from free (no flags) to held by the calling thread.
    /// For embedders that decide what to do with a busy lock themselves (the hybrid rw lock).
    #[inline]
    pub(crate) fn try_lock_free(&self) -> bool {
        // Acquire pairs with the Release of the unlock that freed the lock.
        self.owner
            .compare_exchange_weak(0, current_word(), Acquire, Relaxed)
            .is_ok()
    }

    /// Acquires the mutex only if it is free right now. Never spins, never sleeps (like the
    /// kernel's `mutex_trylock`); it may overtake sleeping waiters.
    #[inline]
    pub fn try_lock(&self) -> bool {
        let held = self
            .owner
            .compare_exchange(0, current_word(), Acquire, Relaxed)
            .is_ok()
            || self.try_acquire(current(), false).is_ok();
        if held {
            stats::acquired(self);
        }
        held
    }

    /// Seed S3: like [`try_lock`](Self::try_lock), but if the owner is running, spin (through
    /// the OSQ, under the adaptive budget, at most 1 µs, the budget floor) for it to release
    /// before failing. A failed try_lock usually costs its caller an unlock/relock sequence,
    /// which is dearer than a short spin. Never sleeps.
    ///
    /// Why at most 1 µs (switch `KSLOCK_OFF=trylock_spin_cap`): the caller of a try_lock
    /// usually holds another lock (lock coupling), and every µs it spins, everyone queued on
    /// that lock waits too (`docs/experiments.md`, "`try_lock_spin` capped at 1 µs"). The
    /// capped spin does not feed the lock's statistics, which estimate its uncapped races.
    pub fn try_lock_spin(&self) -> bool {
        let me = current();
        let held = self.try_acquire(me, false).is_ok() || self.optimistic_spin(me);
        if held {
            stats::acquired(self);
        }
        held
    }

    /// Acquires the mutex unless `timeout` passes first (a `timeout` too large for the clock
    /// waits for ever). `true` = acquired.
    pub fn try_lock_for(&self, timeout: std::time::Duration) -> bool {
        self.lock_until(sys::deadline_after(timeout))
    }

    /// Acquires the mutex unless `deadline` passes first (a deadline in the past still takes a
    /// free mutex). `true` = acquired.
    pub fn try_lock_until(&self, deadline: std::time::Instant) -> bool {
        self.lock_until(sys::deadline_from_instant(deadline))
    }

    /// `lock` with a monotonic deadline (ns): the fast path, then the timed slow path.
    pub(crate) fn lock_until(&self, deadline: u64) -> bool {
        if self
            .owner
            .compare_exchange(0, current_word(), Acquire, Relaxed)
            .is_ok()
        {
            stats::acquired(self);
            return true;
        }
        let w = stats::contended(self);
        w.done(self.lock_contended(current(), Some(deadline)))
    }

    /// Locks the mutex like [`lock`](Self::lock) (or [`try_lock_for`](Self::try_lock_for) with
    /// a `timeout`), except that a thread that holds it already waits like any other locker
    /// until a thread releases that hold on its behalf
    /// ([`unlock_on_behalf`](Self::unlock_on_behalf)), instead of panicking. This is glibc's
    /// normal mutex, which a thread may lock again to wait for another thread's unlock (a
    /// binary semaphore; the pthread interposer). Without a timeout, a hold that nobody
    /// releases blocks for ever, as in glibc. `false` = the timeout passed first. (No fast
    /// path: its callers usually hold the lock; the slow path takes a free one first.)
    pub fn lock_or_await_release(&self, timeout: Option<std::time::Duration>) -> bool {
        let w = stats::contended(self);
        w.done(self.lock_slow(current(), timeout.map(sys::deadline_after), true))
    }

    /// Releases the mutex. Sleeping waiters may be overtaken by running lockers within the head
    /// waiter's fairness window (module doc).
    ///
    /// # Safety
    /// The calling thread holds the mutex. (Violations are detected and panic: see "Misuse".)
    #[cfg_attr(feature = "stats", inline(always))]
    #[cfg_attr(not(feature = "stats"), inline)]
    pub unsafe fn unlock(&self) {
        stats::released(self);
        self.release(false);
    }

    /// Releases the mutex and, if anyone waits, hands it directly to the head waiter.
    ///
    /// # Safety
    /// The calling thread holds the mutex.
    pub unsafe fn unlock_fair(&self) {
        stats::released(self);
        self.release(true);
    }

    /// The unlock fast path: one CAS from "held by me, no flags" to 0, the unlock's first and
    /// only access to the lock's line (module doc, "One transfer per unlock"); the slow path
    /// when the CAS fails (a flag is set) or the unlock is `fair`.
    #[inline(always)]
    fn release(&self, fair: bool) {
        // Release pairs with the Acquire of the next acquisition.
        if fair
            || self
                .owner
                .compare_exchange(current_word(), 0, Release, Relaxed)
                .is_err()
        {
            stats::released_with_waiters(self);
            self.unlock_slow(current(), fair);
        }
    }

    /// Releases the mutex if the calling thread holds it and says whether it did: for
    /// embedders that must report an unlock by a thread that does not hold the mutex as an
    /// error rather than a panic (the pthread interposer's `EPERM`). One ownership check, the
    /// unlock fast path's own CAS.
    #[inline]
    pub fn unlock_if_owned(&self) -> bool {
        let me = current_word();
        stats::released(self);
        // Release pairs with the Acquire of the next acquisition.
        match self.owner.compare_exchange(me, 0, Release, Relaxed) {
            Ok(_) => true,
            Err(o) if owner_of(o) == me => {
                stats::released_with_waiters(self);
                self.unlock_slow(current(), false);
                true
            }
            Err(_) => false,
        }
    }

    /// Releases the mutex whichever thread holds it, and says whether it did: `false` when it
    /// is not locked, or is being handed to a new owner whose lock has not returned yet. For
    /// embedders whose locks any thread may release: glibc lets any thread unlock a normal
    /// `pthread_mutex_t`, which programs use as a binary semaphore (the pthread interposer).
    ///
    /// # Safety
    /// Nobody else releases the hold this call releases (its holder included): the caller
    /// takes over the holder's unlock.
    pub unsafe fn unlock_on_behalf(&self) -> bool {
        self.unlock_if_owned() || self.release_on_behalf(current())
    }

    /// Is the mutex held by some thread (a hint)?
    #[inline]
    pub fn is_locked(&self) -> bool {
        owner_of(self.owner.load(Relaxed)) != 0
    }

    /// Are threads waiting in the queue (a hint)?
    #[inline]
    pub fn has_waiters(&self) -> bool {
        !self.list.is_empty()
    }

    /// Does the calling thread hold the mutex?
    pub fn is_owned_by_current_thread(&self) -> bool {
        owner_of(self.owner.load(Relaxed)) == current_word()
    }

    /// Condvar support: the wait_lock, list and spin statistics, for requeueing condvar
    /// waiters.
    pub(crate) fn requeue_parts(&self) -> (&WaitLock, &WaitList, &SpinStats) {
        (&self.wait_lock, &self.list, &self.stats)
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

        #[cfg_attr(feature = "stats", inline(always))]
        #[cfg_attr(not(feature = "stats"), inline)]
        fn lock(&self) {
            RawMutex::lock(self)
        }
        #[inline]
        fn try_lock(&self) -> bool {
            RawMutex::try_lock(self)
        }
        #[cfg_attr(feature = "stats", inline(always))]
        #[cfg_attr(not(feature = "stats"), inline)]
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
mod tests;
