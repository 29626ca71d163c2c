//! Per-thread records (`ThreadRec`): identity, parking, the wait node, the deferred-wake link
//! and the OSQ nodes of every thread that uses kslock.
//!
//! Lock words name their owner by an **owner word** (below), the OSQ and the wake chain name
//! records by id, and spinners and wakers read other threads' records at any time, also after
//! those threads exited. So records are **type-stable**: they live in a pool that is never freed
//! ([`pool`]); a record whose thread exited is reused by a later thread.
//!
//! # Owner words
//!
//! `gen << 32 | id << OWNER_SHIFT`, with the low [`OWNER_SHIFT`] = 7 bits left 0 for the flags
//! of the lock that stores the word. `id ≥ 1` names the record (25 bits); `gen ≥ 1` counts how
//! often the record was handed to a thread. A thread that exits while it still holds a lock
//! (`mem::forget(guard)`) leaves its word in that lock; the next thread to get the record has a
//! new `gen`, so it never matches the dead owner's word (issue 8, defect 3): it cannot unlock
//! that lock, and `is_owned_by_current_thread` says no.
//!
//! # Parker state (`ThreadRec::park`)
//!
//! | value      | meaning                                   | set by              |
//! |------------|-------------------------------------------|---------------------|
//! | `EMPTY`    | no token, not sleeping                    | the thread (consume) |
//! | `NOTIFIED` | a wake token is pending                   | any waker (`unpark`) |
//! | `PARKED`   | the thread sleeps (or is about to) on it  | the thread           |
//!
//! ```text
//! park     NOTIFIED -> EMPTY     CAS, Acquire: a token was waiting; return at once
//!          EMPTY -> PARKED       CAS, then FUTEX_WAIT while PARKED; after each wake-up try
//!                                NOTIFIED -> EMPTY (Acquire); on a timeout withdraw with
//!                                PARKED -> EMPTY, unless a token raced in (then take it)
//! unpark   any -> NOTIFIED       swap, Release; FUTEX_WAKE if it was PARKED
//! ```
//!
//! Only the thread itself writes `EMPTY` and `PARKED`; anyone may write `NOTIFIED`. A token's
//! Release swap pairs with the Acquire that consumes it, so what a waker wrote before
//! [`ThreadRec::unpark`] is visible to the woken thread. A token may be stale (a waker from an
//! earlier wait): every caller of [`ThreadRec::park`] re-checks its own condition and parks
//! again, exactly as a kernel task tolerates a wake_q wakeup that arrives after it stopped
//! waiting. No wakeup is lost: a token given before the sleep makes the `EMPTY -> PARKED` CAS
//! fail (or the futex wait return at once), and one given during it wakes the futex.
//!
//! # Deferred wakes ([`WakeQ`])
//!
//! Wakers collect the records to wake under a lock's wait_lock and unpark them after dropping
//! it (the kernel's wake_q), chained through their `wake_next` words, so a wake list of any
//! length costs 4 bytes of stack and no syscall runs under a wait_lock. A record already on
//! another waker's chain stays there; that waker's unpark then carries this waker's state
//! change too (the orderings are on [`WakeQ`]).
//!
//! # Other per-record words
//!
//! | field | values | written by | read by |
//! |-------|--------|------------|---------|
//! | `parked` | 1 inside a kslock futex wait, else 0 | the thread | spinners (the spin oracle, [`crate::spin`]) |
//! | `cpu` | the CPU the thread last reported | the thread | spinners |
//! | `word` | the thread's owner word (changes on reuse) | the pool (registration) | the thread |
//! | `epoch` | the fork epoch in which the record's thread lives ([`pool`]) | the pool | anyone: `epoch != current` = the thread does not exist (a ghost left by `fork()`) |
//! | `in_slow` | slow-path sections the thread is inside (wait_locks held, OSQ membership) | the thread | the fork barrier ([`pool`]) |
//! | `tid` | the kernel thread id of the record's thread | the pool (registration, fork child) | the pool (is the exited thread gone?) |
//! | `wake_next` | 0 = on no wake chain; `QUEUED \| next id` = on one (next 0 = last) | wakers ([`WakeQ`]) | the waker that queued it |
//! | `waiter_busy` | 1 while the record's wait node is in use | the thread | the thread |
//! | `barging_since` | when the thread began taking contended mutexes without queueing or sleeping, or since the barging limit's yield (ns; bit 0 = that yield was made; 0 = not counting) | the thread (mutex slow path) | the thread (its futex waits and queueing reset it; `crate::mutex`, "Barging limit") |
//! | `batch_lock`, `batch_since` | the rwsem whose turn the thread runs (0 = none) and when the run began (ns) | the thread (a release during a head writer's window; its slow path ends the run) | the thread (`crate::rwsem`, "A woken head sleeps out its window") |
//!
//! # The wait node ([`Waiter`])
//!
//! A thread waits on one lock at a time, so each record carries one wait node, which the wait
//! lists of [`crate::wait`] link. Living in the type-stable record (not on the stack, as in the
//! kernel) it stays valid whatever happens to the thread: in a `fork()` child, glibc reuses the
//! stacks of the threads that did not survive, but their nodes, still linked in lock wait lists,
//! are records that no new thread gets ([`pool`]), so the child can take them out. A second,
//! nested wait on the same thread (a lock taken in a signal handler that interrupted a wait)
//! finds the node busy and uses a node on its stack instead ([`WaitSlot`]).

use crate::chaos::{self, Site};
use crate::sync::{loom_const_fn, AtomicU32, AtomicU64, AtomicUsize, Ordering::*, UnsafeCell};
use crate::sys::{self, Deadline, TimedOut};
use core::ptr;

#[cfg(not(kslock_loom))]
mod hot;
#[cfg(not(kslock_loom))]
mod pool;
#[cfg(not(kslock_loom))]
pub(crate) use pool::{
    by_id, current, current_word, forked, is_dead, records_created, slow_enter, try_by_id,
};

#[cfg(kslock_loom)]
mod loom_pool;
#[cfg(kslock_loom)]
pub(crate) use loom_pool::{by_id, current, current_word, forked, is_dead, slow_enter, try_by_id};

/// Parker: no token.
const EMPTY: u32 = 0;
/// Parker: a wake token is pending.
const NOTIFIED: u32 = 1;
/// Parker: the thread sleeps on `park`.
const PARKED: u32 = 2;

/// Owner words keep this many low bits 0 for the lock's flags.
pub(crate) const OWNER_SHIFT: u32 = 7;
/// The flag bits of an owner word.
pub(crate) const OWNER_FLAGS: u64 = (1 << OWNER_SHIFT) - 1;
/// Record ids are below this (25 bits between the flags and the generation).
#[cfg_attr(kslock_loom, allow(dead_code))]
pub(crate) const MAX_ID: u32 = 1 << (32 - OWNER_SHIFT);

/// The owner word of record `id` in generation `gen`.
#[inline]
pub(crate) const fn owner_word(id: u32, gen: u32) -> u64 {
    (gen as u64) << 32 | (id as u64) << OWNER_SHIFT
}

/// The record id an owner word names (0 = none).
#[inline]
pub(crate) const fn owner_id(word: u64) -> u32 {
    (word as u32) >> OWNER_SHIFT
}

/// The record an owner word names, if any. Lock words are read Relaxed and then decoded here:
/// safe because records are type-stable and [`try_by_id`] reaches them through the pool's
/// Release/Acquire segment table (module doc of [`pool`]), never through the lock word.
#[inline]
pub(crate) fn owner_rec(word: u64) -> Option<&'static ThreadRec> {
    try_by_id(owner_id(word))
}

/// `wake_next`: the record is on a wake chain (the low bits hold the next record's id).
const QUEUED: u32 = 1 << 31;

/// An OSQ node with every field on one line (the kernel's layout; seed S1 "Packed").
/// `cpu` (the spinner's CPU, which its successor polls) is rewritten on every `osq_lock`, and
/// `next`/`locked` on the same line are written by neighbours.
#[repr(C, align(128))]
pub(crate) struct PackedNode {
    pub(crate) next: AtomicU32,
    pub(crate) prev: AtomicU32,
    pub(crate) locked: AtomicU32,
    pub(crate) cpu: AtomicU32,
}

/// An OSQ node whose read-mostly `cpu` sits on its own cache line and is written only when it
/// changes (seed S1 "SplitIdLine"): successors polling it never miss on the line that
/// `next`/`prev`/`locked` keep dirtying.
#[repr(C, align(128))]
pub(crate) struct SplitNode {
    pub(crate) next: AtomicU32,
    pub(crate) prev: AtomicU32,
    pub(crate) locked: AtomicU32,
    _pad: [u8; 116],
    pub(crate) cpu: AtomicU32,
}

/// What a waiter waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    /// Mutex waiter, rwsem writer, condvar waiter. (0: an all-zero node is a writer.)
    Write = 0,
    /// rwsem reader.
    Read = 1,
}

/// One waiting thread's node in a lock's wait list ([`crate::wait::WaitList`]).
///
/// The owning thread fills it in before linking it (under the wait_lock); every other field
/// access happens under the wait_lock of the list it is linked in, except `state`, which wakers
/// publish with Release and the waiter reads with Acquire. All-zero is a valid unlinked node.
pub(crate) struct Waiter {
    pub(crate) next: UnsafeCell<*const Waiter>,
    pub(crate) prev: UnsafeCell<*const Waiter>,
    rec: UnsafeCell<*const ThreadRec>,
    kind: UnsafeCell<Kind>,
    /// Per-lock protocol state (rwsem: reader grant; condvar: notified/requeued).
    pub(crate) state: AtomicU32,
    /// Monotonic ns after which this waiter may ask for a handoff.
    timeout_ns: UnsafeCell<u64>,
    /// rwsem: this (head) waiter's HANDOFF reservation is set.
    handoff_set: UnsafeCell<bool>,
    /// rwsem: a fair unlock reserved the lock for this head: it keeps HANDOFF while asleep.
    keep_handoff: UnsafeCell<bool>,
    /// Monotonic ns when the waiter joined the list (its queue wait starts).
    queued_at: UnsafeCell<u64>,
    /// Monotonic ns when the waiter first saw itself at the head (0 = not yet).
    head_at: UnsafeCell<u64>,
}

// SAFETY: the UnsafeCell fields follow the access discipline of the type doc (owner before
// linking, otherwise under the wait_lock of the list the node is linked in).
unsafe impl Sync for Waiter {}
// SAFETY: as above; a node holds no thread-bound data.
unsafe impl Send for Waiter {}

impl Waiter {
    loom_const_fn! {
        pub(crate) fn new() -> Self {
            Waiter {
                next: UnsafeCell::new(ptr::null()),
                prev: UnsafeCell::new(ptr::null()),
                rec: UnsafeCell::new(ptr::null()),
                kind: UnsafeCell::new(Kind::Write),
                state: AtomicU32::new(0),
                timeout_ns: UnsafeCell::new(0),
                handoff_set: UnsafeCell::new(false),
                keep_handoff: UnsafeCell::new(false),
                queued_at: UnsafeCell::new(0),
                head_at: UnsafeCell::new(0),
            }
        }
    }

    #[inline]
    pub(crate) fn get<T: Copy>(c: &UnsafeCell<T>) -> T {
        // SAFETY: node fields other than `state` are written by the owning thread before the
        // node is linked and otherwise only under the wait_lock of the list it is linked in
        // (type doc), so no access races with a write.
        c.with_mut(|p| unsafe { *p })
    }

    #[inline]
    pub(crate) fn set<T>(c: &UnsafeCell<T>, v: T) {
        // SAFETY: as in `get`.
        c.with_mut(|p| unsafe { *p = v })
    }

    /// Prepares the node for a new wait by `rec` (not linked anywhere).
    fn reset(&self, rec: &'static ThreadRec, kind: Kind, state: u32) {
        Self::set(&self.next, ptr::null());
        Self::set(&self.prev, ptr::null());
        Self::set(&self.rec, rec as *const ThreadRec);
        Self::set(&self.kind, kind);
        self.state.store(state, Relaxed);
        Self::set(&self.timeout_ns, 0);
        Self::set(&self.handoff_set, false);
        Self::set(&self.keep_handoff, false);
        Self::set(&self.queued_at, 0);
        Self::set(&self.head_at, 0);
    }

    /// The waiting thread's record.
    #[inline]
    pub(crate) fn rec(&self) -> &'static ThreadRec {
        // SAFETY: set by `reset` to a pool record (type-stable, 'static) before the node is
        // used; a node is only reachable while in use.
        unsafe { &*Self::get(&self.rec) }
    }

    /// What the waiter waits for.
    #[inline]
    pub(crate) fn kind(&self) -> Kind {
        Self::get(&self.kind)
    }

    /// Monotonic ns after which the waiter may ask for a handoff.
    #[inline]
    pub(crate) fn timeout_ns(&self) -> u64 {
        Self::get(&self.timeout_ns)
    }

    /// Sets the handoff timeout (before linking, or under the wait_lock: a head rwsem writer
    /// shortens it to its window).
    pub(crate) fn set_timeout_ns(&self, t: u64) {
        Self::set(&self.timeout_ns, t)
    }

    /// The handoff flag (wait_lock held).
    pub(crate) fn handoff_set(&self) -> bool {
        Self::get(&self.handoff_set)
    }

    /// Sets the handoff flag (wait_lock held).
    pub(crate) fn set_handoff(&self, v: bool) {
        Self::set(&self.handoff_set, v)
    }

    /// Must this head keep its HANDOFF reservation while it sleeps? (wait_lock held.)
    pub(crate) fn keep_handoff(&self) -> bool {
        Self::get(&self.keep_handoff)
    }

    /// Marks the head's reservation as one to keep while asleep (wait_lock held).
    pub(crate) fn set_keep_handoff(&self) {
        Self::set(&self.keep_handoff, true)
    }

    /// When the waiter joined the list (wait_lock held, or before linking).
    pub(crate) fn queued_at(&self) -> u64 {
        Self::get(&self.queued_at)
    }

    /// Records when the waiter joined the list (wait_lock held, or before linking).
    pub(crate) fn set_queued_at(&self, t: u64) {
        Self::set(&self.queued_at, t);
        Self::set(&self.head_at, 0);
    }

    /// When the waiter first saw itself at the head, 0 if it has not (wait_lock held).
    pub(crate) fn head_at(&self) -> u64 {
        Self::get(&self.head_at)
    }

    /// Records the moment the waiter saw itself at the head (wait_lock held).
    pub(crate) fn set_head_at(&self, t: u64) {
        Self::set(&self.head_at, t);
    }
}

/// The wait node of one wait: the record's own node, or (for a nested wait, when the record's
/// node is already in use) a spare one in this slot. The slot must stay in place while the node
/// is linked (the caller's frame keeps it; the borrow of [`WaitSlot::node`] prevents moves).
pub(crate) struct WaitSlot {
    rec: &'static ThreadRec,
    spare: Option<Waiter>,
}

impl WaitSlot {
    /// Claims a node for `rec`'s thread (only that thread calls this).
    pub(crate) fn new(rec: &'static ThreadRec, kind: Kind, state: u32) -> Self {
        let spare = if rec.waiter_busy.swap(1, Relaxed) == 0 {
            rec.waiter.reset(rec, kind, state);
            None
        } else {
            let w = Waiter::new();
            w.reset(rec, kind, state);
            Some(w)
        };
        WaitSlot { rec, spare }
    }

    /// The node.
    #[inline]
    pub(crate) fn node(&self) -> &Waiter {
        self.spare.as_ref().unwrap_or(&self.rec.waiter)
    }
}

impl Drop for WaitSlot {
    fn drop(&mut self) {
        if self.spare.is_none() {
            self.rec.waiter_busy.store(0, Relaxed);
        }
    }
}

/// The record of one thread. See the module doc for the state tables.
#[repr(C, align(128))]
pub(crate) struct ThreadRec {
    /// Parker state (`EMPTY`/`NOTIFIED`/`PARKED`); the futex word of `park`.
    park: AtomicU32,
    /// 1 while the thread sleeps in a kslock futex wait; read by spinners.
    parked: AtomicU32,
    /// The CPU the thread last reported (a hint for the spin oracle).
    pub(crate) cpu: AtomicU32,
    /// Stable id, `>= 1`; names this record in OSQ words and owner words. Immutable.
    id: u32,
    /// The owner word of the thread that uses the record now.
    word: AtomicU64,
    /// Fork epoch in which the record's thread lives.
    epoch: AtomicU32,
    /// Slow-path sections the thread is in (fork barrier).
    in_slow: AtomicU32,
    /// Deferred-wake chain link (`QUEUED | next id`, or 0).
    wake_next: AtomicU32,
    /// Pool list link: the next id on the free list or the exit list ([`pool`]), or 0.
    free_next: AtomicU32,
    /// The kernel thread id of the record's thread (the pool reuses the record once no thread
    /// with this id is left in the process).
    tid: AtomicU32,
    /// 1 while `waiter` is in use.
    waiter_busy: AtomicU32,
    /// Feature `lock-events`: when this thread last picked up a handed-over lock (the start of
    /// its fairness window, for the window-length event); 0 = none (only the thread itself).
    window_start: AtomicU64,
    /// When the thread first took a contended mutex without queueing since it last queued or
    /// slept in kslock (or since the barging limit's yield), ns, with bit 0 set once that
    /// yield was made; 0 = not counting (the mutex's barging limit; only the thread itself).
    barging_since: AtomicU64,
    /// The rwsem whose turn this thread runs (`crate::rwsem`, "A woken head sleeps out its
    /// window"; 0 = none) and when the run began (ns). Only the thread itself.
    batch_lock: AtomicUsize,
    batch_since: AtomicU64,
    /// The wait node.
    waiter: Waiter,
    /// OSQ node used by `Packed` queues.
    pub(crate) osq_packed: PackedNode,
    /// OSQ node used by `SplitIdLine` queues.
    pub(crate) osq_split: SplitNode,
}

impl ThreadRec {
    loom_const_fn! {
        /// A record with id `id` that no thread uses yet. Apart from `id`, all-zero.
        fn new(id: u32) -> Self {
            ThreadRec {
                park: AtomicU32::new(EMPTY),
                parked: AtomicU32::new(0),
                cpu: AtomicU32::new(0),
                id,
                word: AtomicU64::new(0),
                epoch: AtomicU32::new(0),
                in_slow: AtomicU32::new(0),
                wake_next: AtomicU32::new(0),
                free_next: AtomicU32::new(0),
                tid: AtomicU32::new(0),
                waiter_busy: AtomicU32::new(0),
                window_start: AtomicU64::new(0),
                barging_since: AtomicU64::new(0),
                batch_lock: AtomicUsize::new(0),
                batch_since: AtomicU64::new(0),
                waiter: Waiter::new(),
                osq_packed: PackedNode {
                    next: AtomicU32::new(0),
                    prev: AtomicU32::new(0),
                    locked: AtomicU32::new(0),
                    cpu: AtomicU32::new(0),
                },
                osq_split: SplitNode {
                    next: AtomicU32::new(0),
                    prev: AtomicU32::new(0),
                    locked: AtomicU32::new(0),
                    _pad: [0; 116],
                    cpu: AtomicU32::new(0),
                },
            }
        }
    }

    /// This record's stable id (`>= 1`).
    #[inline]
    pub(crate) fn id(&self) -> u32 {
        self.id
    }

    /// The owner word of the thread using this record now.
    #[inline]
    pub(crate) fn owner_word(&self) -> u64 {
        self.word.load(Relaxed)
    }

    /// Is the thread inside a kslock futex wait right now? (Relaxed: a hint, re-checked.)
    #[inline]
    pub(crate) fn is_parked(&self) -> bool {
        self.parked.load(Relaxed) != 0
    }

    /// Records the CPU this thread runs on (only the thread itself calls this).
    #[inline]
    pub(crate) fn note_cpu(&self) {
        let c = sys::current_cpu();
        if self.cpu.load(Relaxed) != c {
            self.cpu.store(c, Relaxed);
        }
    }

    /// rwsem: the lock whose turn this thread runs and when the run began (0 = none; only the
    /// thread itself).
    #[inline]
    pub(crate) fn batch(&self) -> (usize, u64) {
        (
            self.batch_lock.load(Relaxed),
            self.batch_since.load(Relaxed),
        )
    }

    /// rwsem: starts (or with `lock` 0 ends) this thread's turn run (only the thread itself).
    #[inline]
    pub(crate) fn set_batch(&self, lock: usize, since: u64) {
        self.batch_lock.store(lock, Relaxed);
        self.batch_since.store(since, Relaxed);
    }

    /// Since when (ns) has this thread contended for mutexes without queueing or sleeping?
    /// Starts the count at `now` if it was not counting (only the thread itself).
    #[inline]
    pub(crate) fn barging_since(&self, now: u64) -> u64 {
        let t = self.barging_since.load(Relaxed);
        if t == 0 {
            self.barging_since.store((now & !1).max(2), Relaxed);
            return now;
        }
        t & !1
    }

    /// Restarts the count of [`barging_since`](Self::barging_since) at `now` after the
    /// barging limit's yield, and says whether this count had already yielded once (only the
    /// thread itself). The flag is bit 0 of the word.
    #[inline]
    pub(crate) fn barge_yield(&self, now: u64) -> bool {
        let had = self.barging_since.load(Relaxed) & 1 != 0;
        self.barging_since.store((now & !1).max(2) | 1, Relaxed);
        had
    }

    /// Ends the count of [`barging_since`](Self::barging_since): the thread queued or slept
    /// (only the thread itself).
    #[inline]
    pub(crate) fn stop_barging(&self) {
        self.barging_since.store(0, Relaxed);
    }

    /// Records the start of this thread's window (event counting; only the thread itself).
    #[inline]
    pub(crate) fn set_window_start(&self, t: u64) {
        self.window_start.store(t, Relaxed);
    }

    /// Takes the start of this thread's window, 0 if none (only the thread itself).
    #[inline]
    pub(crate) fn take_window_start(&self) -> u64 {
        self.window_start.swap(0, Relaxed)
    }

    /// Leaves a slow-path section entered with [`slow_enter`] (only the thread itself).
    #[inline]
    pub(crate) fn slow_exit(&self) {
        // Release: everything the section did happens-before a fork barrier that reads 0.
        let n = self.in_slow.load(Relaxed);
        self.in_slow.store(n - 1, Release);
    }

    /// A futex wait with the `parked` flag raised around it, so spinners stop spinning on a
    /// lock this thread holds while it sleeps. Only the thread itself calls this.
    pub(crate) fn futex_wait(
        &self,
        word: &AtomicU32,
        expected: u32,
        deadline: Deadline,
    ) -> Result<(), TimedOut> {
        self.parked.store(1, Relaxed);
        let r = sys::futex_wait(word, expected, deadline);
        self.parked.store(0, Relaxed);
        self.barging_since.store(0, Relaxed);
        self.note_cpu();
        r
    }

    /// Sleeps until a wake token arrives (possibly a stale one) or `deadline` passes. Only the
    /// thread itself calls this. `Ok` means a token was consumed; callers re-check their
    /// condition either way.
    pub(crate) fn park(&self, deadline: Deadline) -> Result<(), TimedOut> {
        chaos::point(Site::Parking);
        let r = self.park_inner(deadline);
        chaos::point(Site::Unparked);
        r
    }

    fn park_inner(&self, deadline: Deadline) -> Result<(), TimedOut> {
        // Acquire pairs with the Release swap in `unpark`: what the waker wrote before
        // unparking is visible once the token is consumed.
        if self
            .park
            .compare_exchange(NOTIFIED, EMPTY, Acquire, Relaxed)
            .is_ok()
        {
            return Ok(());
        }
        if self
            .park
            .compare_exchange(EMPTY, PARKED, Acquire, Acquire)
            .is_err()
        {
            // The only other state is NOTIFIED (only this thread writes PARKED/EMPTY).
            self.park.store(EMPTY, Relaxed);
            return Ok(());
        }
        loop {
            let r = self.futex_wait(&self.park, PARKED, deadline);
            if self
                .park
                .compare_exchange(NOTIFIED, EMPTY, Acquire, Relaxed)
                .is_ok()
            {
                return Ok(());
            }
            if r.is_err() {
                // Timed out: withdraw, unless a token raced in (then take it: we were woken).
                return match self.park.compare_exchange(PARKED, EMPTY, Acquire, Acquire) {
                    Ok(_) => Err(TimedOut),
                    Err(_) => {
                        self.park.store(EMPTY, Relaxed);
                        Ok(())
                    }
                };
            }
        }
    }

    /// Gives the thread a wake token and wakes it if it sleeps. Callable on any record at any
    /// time, also one whose thread has moved on (the token is then stale and harmless).
    pub(crate) fn unpark(&self) {
        // Release pairs with the Acquire token consumption in `park`.
        if self.park.swap(NOTIFIED, Release) == PARKED {
            sys::futex_wake(&self.park, 1);
        }
    }
}

/// The deferred wake list (the kernel's wake_q): records collected under a wait_lock and
/// unparked after it is dropped, chained through their `wake_next` words, so a wake list of any
/// length costs 4 bytes of stack.
///
/// Protocol (per record): [`push`](Self::push) is called **after** the state change the woken
/// thread waits for was published. If the record is already on another waker's chain, `push`
/// leaves it there: its RMW on `wake_next` is read by that waker's `swap` in
/// [`wake_all`](Self::wake_all) (Release → Acquire), which happens before that waker's
/// `unpark`, so the woken thread sees this waker's state change too. A record leaves a chain
/// (`swap(0)`) before it is unparked, so it can be queued again at once.
pub(crate) struct WakeQ {
    head: u32,
}

impl WakeQ {
    pub(crate) const fn new() -> Self {
        WakeQ { head: 0 }
    }

    /// Queues `rec` for a wakeup (see the type doc for when to call it).
    pub(crate) fn push(&mut self, rec: &'static ThreadRec) {
        // AcqRel: Release publishes our state change to the waker that owns the chain if the
        // record is already on one; Acquire pairs with that waker's `swap(0)` otherwise.
        if rec.wake_next.fetch_or(QUEUED, AcqRel) & QUEUED == 0 {
            // Ours now: link it in front. An RMW, not a store: a concurrent `push` may have
            // OR-ed QUEUED in since our claim, and a plain store would cut its Release off from
            // our `swap` in `wake_all` (a release sequence continues only through RMWs).
            rec.wake_next.fetch_or(self.head, Relaxed);
            self.head = rec.id;
        }
    }

    /// Unparks every queued record. Call after dropping the wait_lock.
    pub(crate) fn wake_all(&mut self) {
        let mut id = core::mem::replace(&mut self.head, 0);
        while id != 0 {
            let rec = by_id(id);
            // AcqRel: Acquire pairs with other wakers' `push` RMWs (their state changes reach
            // the woken thread through our unpark); Release lets the next `push` claim it.
            id = rec.wake_next.swap(0, AcqRel) & !QUEUED;
            rec.unpark();
        }
    }
}

impl Drop for WakeQ {
    fn drop(&mut self) {
        // A chain must never be dropped unwoken: its records could never be queued again.
        self.wake_all();
    }
}
