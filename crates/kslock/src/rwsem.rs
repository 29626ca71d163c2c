//! The kernel rw-semaphore (kernel-locks.md A) for user space: one atomic add to read-lock,
//! one CAS to write-lock; writers spin through the OSQ while a writer owner runs and for a
//! bounded time on reader owners, keeping new readers out meanwhile (`WRITER_WANT`); blocked
//! readers wait out a writer phase on the count word before they queue and are woken in bulk
//! (up to 256 per wake, also those queued behind writers); the head writer reserves the lock
//! (HANDOFF) against readers while it is awake, and against writers after
//! [`RwSemPolicy::HANDOFF_NS`] (≈ 4 ms) of waiting.
//!
//! # `count` (64 bits)
//!
//! | bits | name | meaning | who sets / clears it |
//! |------|------|---------|----------------------|
//! | 0 | `WRITER_LOCKED` | a writer holds the lock | set by the writer's CAS (fast path, spinner, `try_write_lock` under the wait_lock); cleared by `write_unlock` / `downgrade` (the holder) |
//! | 1 | `WAITERS` | the wait list is non-empty (unlock must wake) | set and cleared **only under the wait_lock**, in the same RMW as the list change's count effect |
//! | 2 | `HANDOFF` | the lock is reserved for the head waiter: no fast-path reader, stealing reader, spinning or non-first writer may take it | set **only under the wait_lock** (a writer past its timeout in `try_write_lock`; `mark_wake` when a writer stole the lock from a head reader past its timeout); cleared only under the wait_lock (the head takes the lock, readers are granted, or the list empties) |
//! | 3 | `WOKEN` | a wakeup of the head **writer** is in flight: unlocks skip `rwsem_wake` (no wait_lock, no second wake); not a kernel bit (Go's `mutexWoken`, kslock's mutex `WOKEN`) | set under the wait_lock by `mark_wake` when it queues the head writer's wakeup | cleared under the wait_lock by a queued writer before each retry, and when a waiter leaves the list |
//! | 4 | `WRITER_WANT` | a running writer (the OSQ holder) waits for the readers to drain: no fast-path, spinning or granted reader joins; not a kernel bit (parking_lot's writer bit set while readers drain plays this part) | the OSQ-holding writer, when it finds the lock held by readers only (RMW) | the same writer: in the CAS that takes the lock, or when its spin ends without it (`drop_want`, which then wakes the waiters an unlock of its own would have woken) |
//! | 5–7 | — | reserved (0) | — |
//! | 8–62 | readers | reader count, `READER_BIAS` = 1 << 8 | any reader (add/sub), `mark_wake` (adds the biases of granted readers) |
//! | 63 | `READ_FAIL` | overflow guard: never set in a valid state (it would take 2^55 read locks) | — (a reader that sees it takes its bias back and panics) |
//!
//! Unlocked = 0. The reader bits do not prove read ownership: a reader whose fast path failed
//! keeps its bias in `count` ("phantom bias") until it steals the lock or queues; so "writer
//! bit + reader biases" is a legal transient state, and whoever removes a phantom bias behaves
//! like a read unlock (wakes when the lock becomes free with waiters) or re-checks the count
//! after queueing.
//!
//! # `owner` (a hint; never proves ownership)
//!
//! | bits | meaning | who writes |
//! |------|---------|------------|
//! | 0 `OWNER_READER` | READER_OWNED: readers hold (or last held) the lock; the address names the last reader | readers on acquire (only if the word changes), `mark_wake` on a grant, `downgrade` |
//! | 1 `OWNER_NONSPINNABLE` | a writer spun on these readers past its bound: writers queue at once until readers next drain | set by a spinning writer (CAS, only while still reader-owned); cleared when a reader unlock or an enqueue finds the lock free, or by a writer's owner store |
//! | 7–63 | the owner's `ThreadRec` address (128-aligned, type-stable) or 0 | a writer stores itself after acquiring and 0 before releasing `count` |
//!
//! In user space nothing disables preemption, so `owner` can lag `count` arbitrarily (a writer
//! preempted between its CAS and its owner store): every spin on a 0 owner is budgeted.
//!
//! # Paths
//!
//! ```text
//!  read:  fetch_add(+BIAS) ──no WRITER/HANDOFF/WANT/READ_FAIL──> held
//!            └─> read_contended: [S4 spin] ─> re-check ─> drop bias, spin on count
//!                                ─> queue: spin on the grant ─> sleep until granted
//!  write: CAS 0 -> WRITER_LOCKED ──> held
//!            └─> write_contended: OSQ spin (writer owner runs / bounded on readers)
//!                                 ─> queue: try_write_lock ─> [head+HANDOFF: spin] ─> sleep
//!  unlock: sub ──WAITERS and lock now free (read) / WAITERS (write)──> wake (S0 policy)
//! ```
//!
//! **Readers and sleeping writers** (a user-space departure from the kernel): `WAITERS` does
//! not keep readers out; only a writer that holds the lock or waits *awake* does (`WRITER_LOCKED`,
//! `WRITER_WANT`, `HANDOFF`). The kernel sends every reader to the queue while anyone waits;
//! with more threads than CPUs someone always waits, so readers slept behind writers that were
//! themselves asleep, and the lock idled through both wakeups (issue 11: 1.1 of 2 CPUs busy at
//! 32 threads, 90% reads). A sleeping writer costs readers nothing here; when it wakes it
//! raises `HANDOFF` and the readers drain within one read section. Its wait stays bounded: it
//! sleeps with its handoff timeout as a timer, and after `MAX_HANDOFF_DROPS` it keeps `HANDOFF`
//! while asleep. If the fast path failed and a re-check finds nothing blocking, the reader holds
//! the lock (its bias is in); if it is the only reader and waiters exist it wakes the queued
//! readers to join it.
//!
//! **Blocked readers** (default policy, S4 `Off`) drop their bias and spin on `count` under the
//! calibrated cap ([`crate::spin_cap_ns`], the cost of the sleep it replaces) while the writer
//! that blocks them runs (the oracle) or waits awake for readers to drain, and join with a CAS
//! as soon as nothing blocks readers. Only then do they queue, and a queued reader still polls
//! its own grant word while such a writer runs before it sleeps.
//!
//! **Queueing** re-checks the count in the same RMW that removes the phantom bias and sets
//! `WAITERS`: a free lock wakes the head, a reader-held lock lets a head reader join. This
//! closes the window in which an unlocker saw the phantom bias, or did not yet see `WAITERS`.
//!
//! **Yield before queueing** (user space): a writer whose spin failed, or a blocked reader whose
//! wait on the count failed, gives its CPU away and tries again, [`PRE_QUEUE_YIELDS`] times,
//! before it queues. With more threads than CPUs a spin mostly fails because the holder was
//! preempted; a thread that then sleeps needs a wakeup and a CPU before it can take the lock
//! again, and once most threads slept that way one CPU idled while the other ran the lock alone
//! (50% reads, 8–96 threads: 1.04–1.4 CPUs busy). A yield lets the preempted holder run and keeps
//! the waiter runnable: both CPUs stay busy (CS load 1: 0.5–0.8× → 0.8× parking_lot; CS load
//! 100: 0.9× → 1.2×). Fairness stays with the queue: a queued writer reserves the lock.
//!
//! **Writer spinning** (seed S2): through the OSQ (one poller per lock), while the owner writer
//! runs (the [`crate::spin`] oracle), on a 0 owner within the budget, and on a reader-owned lock
//! for at most `R = cap × (20 + min(readers, 30)) / 50` — the kernel's `(10 + min(readers,30)/2)`
//! µs with 25 µs scaled to the calibrated spin cap ([`crate::spin_cap_ns`], ≈ 20 µs on the
//! development VM: 8–20 µs). While it spins on readers it holds `WRITER_WANT`, so no new reader
//! joins and the wait is the longest remaining read section; that is why this phase is bounded
//! by R alone and not by the lock's adaptive budget, which learns writer hold times (a budget
//! shrunk below one read section failed every such spin: 2 threads, 90% reads, CS load 100 went
//! from 0.6× to 1.1× parking_lot with this bound). When R expires while the lock is still
//! reader-owned the writer sets `NONSPINNABLE` and gives `WRITER_WANT` up. With
//! [`ReaderOwnedSpin::Never`] writers stop as soon as the lock is reader-held.
//!
//! **Writer waiting**: a head writer that finds the lock held by readers only raises `HANDOFF`
//! at once (it is awake; the readers drain within one read section); against a writer owner it
//! waits for its timeout, as the kernel does. With `HANDOFF` set it spins on the owner
//! (first-waiter spinning, under the cap: `Spin::for_handover`) and retries as soon as the
//! lock looks free instead of sleeping; before it sleeps it drops the reservation (at most
//! `MAX_HANDOFF_DROPS` times per wait), so a sleeping writer never keeps readers out. A writer
//! that has not yet reached its handoff timeout sleeps with that timeout as an extra deadline
//! (user-space addition): when it fires, `try_write_lock` raises `HANDOFF`, so the starvation
//! bound holds even under a stream of spinning readers (S4 `On`), which never let the count drop
//! to zero and so never trigger an unlock wakeup.
//!
//! **Wakeup** (`mark_wake`, wait_lock held): a head writer is woken (never granted; it re-competes
//! and a spinner may win). A head reader is granted together with every queued reader (≤ 256,
//! also those behind writers): pass 1 adds the biases of all of them to `count`, pass 2 unlinks
//! each, copies its `ThreadRec` into a [`WakeQ`] and publishes the grant with a Release store,
//! after which the waker never touches the waiter (its frame may vanish at once). The futex
//! wakes run after the wait_lock is dropped.
//!
//! **Unlock wake path** (seed S0, [`RwSemPolicy::WAKE`]):
//! * `Deferred`: take the wait_lock, `mark_wake`, drop it, wake.
//! * `TrylockIfSpinner` (2015): while a spinner is queued on the OSQ, the unlocker only
//!   *trylocks* the wait_lock. The 2015 patch then trusted the spinner to wake later; that lost
//!   wakeups once handoff existed (why upstream removed it in 2019). kslock keeps the trylock but
//!   makes it safe: a failed trylock sets `AUX_WAKE_PENDING`, issues a SeqCst fence and trylocks
//!   once more; every wait_lock holder, after unlocking, fences and runs a pending wake. By the
//!   fence rules either the second trylock sees the unlock or the holder sees the flag.
//! * `WakeFlag` (2013): `AUX_WAKING` is set by the unlocker that wakes; an unlocker that finds it
//!   set returns at once. The waker clears it with an RMW (AcqRel) *after* taking the wait_lock
//!   and only then reads the queue and count, so every unlocker that skipped is seen.
//!
//! **Reader spinning** (seed S4, [`RwSemPolicy::READER_SPIN`]): `Off` (default) — readers never
//! spin. `Limited` — the reader that wins `AUX_READER_SPINNER` drops its phantom bias and spins
//! through the OSQ while a writer holds the lock; it joins only if no writer/HANDOFF is set and
//! it would not join a reader group with waiters (the stealing rule), and then wakes the queued
//! readers (`mark_wake(ReadOwned)`). `On` — every reader spins like that and joins any lock
//! without a writer or HANDOFF (pre-v5.11); the writer's handoff timer bounds starvation.
//!
//! # Recursive reads
//!
//! `read`/`lock_shared` taken by a thread that already holds a read lock **can deadlock**: as
//! soon as a writer queues, `WAITERS` sends new readers to the slow path, the stealing rule
//! queues them behind the writer, and the writer waits for the outer read lock. `read_recursive`
//! (`lock_shared_recursive`) ignores `WAITERS` and `HANDOFF` and waits only while
//! `WRITER_LOCKED` is set. `WRITER_LOCKED` can only be set while no reader bias is counted, so a
//! recursive read **never blocks while the calling thread holds a read lock on the same
//! RwSem** (plain or recursive, also one obtained by `downgrade`). It overtakes queued writers,
//! so use it only for nesting; without an outer read lock it is a reader that ignores fairness.
//!
//! # Memory orderings
//!
//! * Acquire: the read fast-path add, the write CASes, the queue-path fresh `count` load, the
//!   `mark_wake` head-bias add; each pairs with the Release of the unlock RMW (`read_unlock`
//!   sub, `write_unlock` sub, `downgrade` add) that it reads from or follows in `count`'s RMW
//!   chain.
//! * A reader grant (`Waiter::state = GRANTED`, Release) pairs with the waiter's Acquire load;
//!   the waker read `count` with Acquire first, so the previous writer's data is visible.
//! * `WAITERS` is set with Relaxed RMWs: `count`'s modification order alone decides whether an
//!   unlock RMW sees it or the enqueuer's subsequent count read sees the unlock.
//! * `WRITER_WANT` is raised and dropped with Relaxed RMWs, for the same reason: a reader that
//!   queued because of it did so with an RMW on `count` (the queueing re-check), so either that
//!   RMW follows the drop and sees the bit clear (and grants itself), or the drop follows it and
//!   sees `WAITERS` (and wakes). The writer takes the lock with an Acquire CAS that clears it.
//! * A blocked reader's spin joins with an Acquire CAS, pairing with the Release of the unlock
//!   that cleared what blocked it.
//! * `owner` is a hint re-checked against `count`; it is read Relaxed even where the record it
//!   names is then read by spinners (`is_parked`, `cpu`): an owner word holds a record *id*,
//!   which [`writer_owner`] turns into a record through the pool's segment table (Release
//!   publication, Acquire load: [`crate::thread`]), so the record's initialisation
//!   happens-before those reads whatever ordering `owner` had. Records are never freed and all
//!   their fields are atomics: a stale owner word gives a stale hint, never a bad read. The
//!   stores of `owner` stay Release (free on x86) so that a Relaxed reader's hint is at least as
//!   new as the `count` change it follows.
//! * S0 flags: see above (AcqRel RMWs for `WakeFlag`, SeqCst fences for `TrylockIfSpinner`).
//!
//! # Misuse
//!
//! Always on, because they cost a load or nothing, and each reads before it writes, so a
//! misused lock is never modified and no other thread ever sees a count corrupted by the
//! misuse (a check that subtracts first and restores afterwards lets another thread act on the
//! corrupt value in between: a reader's add can cancel the borrow and a writer then enters):
//!
//! * `write_unlock` / `downgrade` without the writer bit: a load before the RMW (only the
//!   holder clears the bit; a second misuse racing the first is caught by the RMW's old value
//!   and undone).
//! * `read_unlock` with no reader counted: the unlock is a CAS loop that checks the value it
//!   replaces (as cheap as a `fetch_sub` when the count is not changing under it).
//!
//! A `read_unlock` by a thread that holds no read lock while other readers hold one cannot be
//! told from theirs (readers are counted, not named) and releases one of their locks, as in
//! every reader-count lock.
//!
//! `write_unlock` / `downgrade` by a thread other than the owner panics in debug builds and
//! with feature `debug-locks` (it needs the thread record).

use core::marker::PhantomData;

use crate::chaos::{self, Site};
use crate::events::{self, Event as Ev};
use crate::osq::Osq;
use crate::policy::{DefaultPolicy, ReaderOwnedSpin, ReaderSpin, RwSemPolicy, WakePolicy};
use crate::spin::{Spin, SpinStats, Stop};
use crate::sync::{fence, loom_const_fn, AtomicU32, AtomicU64, Ordering::*};
use crate::sys::{self, Deadline};
use crate::thread::{self, current, current_word, Kind, ThreadRec, WaitSlot, Waiter, WakeQ};
use crate::wait::{WaitList, WaitLock};

/// The `count` word's type.
type State = u64;

/// A writer holds the lock.
const WRITER_LOCKED: State = 1 << 0;
/// The wait list is non-empty (wait_lock held to change).
const WAITERS: State = 1 << 1;
/// A wakeup of the head writer is in flight: unlockers need not wake (wait_lock held to set).
///
/// No lost wakeup: an unlock skips `wake` only if its count RMW saw `WOKEN`; the woken writer
/// clears `WOKEN` (an RMW on the same word) before it retries, so either its retry sees that
/// unlock or a later unlock sees `WOKEN` clear and wakes the head again. A waiter leaving the
/// list clears it, so a wakeup owed to a departed head is re-sent to the new one.
const WOKEN: State = 1 << 3;
/// The lock is reserved for the head waiter (wait_lock held to change).
const HANDOFF: State = 1 << 2;
/// A running writer holding the OSQ waits for the readers to drain: new readers stay out
/// (owned by the OSQ holder: only it sets and clears the bit).
const WRITER_WANT: State = 1 << 4;
/// Reader count position.
const READER_SHIFT: u32 = 8;
/// One reader.
const READER_BIAS: State = 1 << READER_SHIFT;
/// Overflow/underflow guard: set only in a corrupted state.
const READ_FAIL: State = 1 << 63;
/// All reader-count bits.
const READER_MASK: State = !(READER_BIAS - 1) & !READ_FAIL;
/// Anybody (writer or readers, phantom biases included) holds the lock.
const LOCK_MASK: State = WRITER_LOCKED | READER_MASK;
/// Any of these sends a fast-path reader to the slow path. `WAITERS` is not one: a sleeping
/// waiter does not keep running readers out (module doc, "Readers and sleeping writers").
const READ_FAILED_MASK: State = WRITER_LOCKED | HANDOFF | WRITER_WANT | READ_FAIL;
/// A reader may not join while any of these is set (the fail mask without the guard).
const READ_BLOCKED: State = WRITER_LOCKED | HANDOFF | WRITER_WANT;

/// `owner`: readers own (or last owned) the lock.
const OWNER_READER: u64 = 1 << 0;
/// `owner`: writers must not spin until readers drain.
const OWNER_NONSPINNABLE: u64 = 1 << 1;
/// How often a head writer may drop its HANDOFF reservation before sleeping (per wait).
const MAX_HANDOFF_DROPS: u32 = 2;
/// A head writer that dropped HANDOFF sleeps at most `HANDOFF_NS / REARM_DIV` before it
/// re-raises it (0.5 ms with the kernel's 4 ms): with `MAX_HANDOFF_DROPS` = 2 this adds at
/// most a quarter of the handoff timeout to the writer's bound.
const REARM_DIV: u64 = 8;
/// `owner`: the flag bits.
const OWNER_FLAGS: u64 = OWNER_READER | OWNER_NONSPINNABLE;
const _: () = assert!(OWNER_FLAGS & !thread::OWNER_FLAGS == 0);

/// `aux` (S0 `WakeFlag`): an unlocker is waking; others may return at once.
const AUX_WAKING: u32 = 1 << 0;
/// `aux` (S0 `TrylockIfSpinner`): an unlocker failed to trylock the wait_lock; its holder must
/// wake on its behalf after unlocking.
const AUX_WAKE_PENDING: u32 = 1 << 1;
/// `aux` (S4 `Limited`): a representative reader is spinning.
const AUX_READER_SPINNER: u32 = 1 << 2;

/// `Waiter::state` of a reader: still waiting.
const GRANT_WAITING: u32 = 0;
/// `Waiter::state` of a reader: the lock is held on its behalf (published with Release).
const GRANT_GRANTED: u32 = 1;

/// Readers granted per wake (the kernel's `MAX_READERS_WAKEUP`).
const MAX_READERS_WAKEUP: usize = 256;

/// Whether a waiting writer arms its handoff timeout as an extra sleep deadline. Off under
/// loom, whose clock is frozen and whose timed waits time out at once (the timer would only
/// make every model sleep a busy loop).
const HANDOFF_TIMER: bool = !cfg!(kslock_loom);

/// How often a writer whose spin failed, or a reader whose wait on the count failed, gives
/// its CPU away (`sched_yield`) and tries again before it queues (module doc, "Yield before
/// queueing"). 4: A/B on the 2-vCPU VM with 0, 2, 4, 8, 16 (50% and 90% reads, CS load 1/20/100,
/// 2–96 threads): 0 left one CPU idle at 8+ threads (1.04–1.4 CPUs busy, 0.5–0.8× parking_lot);
/// 2–8 kept both busy and were within noise of each other; 16 lost up to 20% at CS load 20.
/// parking_lot's `SpinWait` yields up to 7 times before it parks. None under loom (the yields
/// only delay the queueing, which the models cover).
const PRE_QUEUE_YIELDS: u32 = if cfg!(kslock_loom) { 0 } else { 4 };

/// Owner checks that need the thread record.
const DEBUG_LOCKS: bool = cfg!(any(debug_assertions, feature = "debug-locks"));

type Wq = WakeQ;

/// What `mark_wake` may do (the kernel's wake types).
#[derive(Clone, Copy, PartialEq, Eq)]
enum WakeType {
    /// The lock is (or was just) free: wake a head writer or grant the readers.
    Any,
    /// Readers hold the lock, the caller does not: only let head readers join.
    Readers,
    /// The caller holds a read lock (downgrade, stealing/spinning reader): grant head readers
    /// without the trial bias.
    ReadOwned,
}

/// Result of a reader's optimistic spin attempt.
enum ReaderSpinResult {
    /// Did not spin; the phantom bias is still counted.
    Skipped,
    /// Holds the read lock.
    Acquired,
    /// Spun and failed; the bias was dropped.
    Failed,
}

#[cold]
#[inline(never)]
#[track_caller]
fn misuse(what: &str) -> ! {
    panic!("kslock: RwSem {what}")
}

/// The record of a writer named by `owner` (None: no owner, reader-owned, or an unknown word).
/// `owner` may have been read Relaxed: records are reached through the pool's own
/// Release/Acquire table ([`thread::owner_rec`]), not through this word.
#[inline]
fn writer_owner(o: u64) -> Option<&'static ThreadRec> {
    if o & OWNER_READER != 0 {
        return None;
    }
    thread::owner_rec(o & !OWNER_FLAGS)
}

/// The kernel rw-semaphore. All-zero is unlocked; see the module doc for the state tables.
///
/// `P` picks the seed policies ([`crate::policy`]); the default costs nothing on the fast path.
#[repr(C)]
pub struct RawRwSem<P: RwSemPolicy = DefaultPolicy> {
    /// Writer bit, waiters, handoff, reader count (module doc table).
    count: AtomicU64,
    /// Owner hint: `ThreadRec` address | `OWNER_READER` | `OWNER_NONSPINNABLE`.
    owner: AtomicU64,
    /// The FIFO of sleeping waiters (guarded by `wait_lock`).
    wait_list: WaitList,
    /// Writers' (and S4 readers') spinner queue.
    osq: Osq,
    /// Guards `wait_list`, `WAITERS`, `HANDOFF`.
    wait_lock: WaitLock,
    /// The adaptive spin budget of this lock.
    stats: SpinStats,
    /// Policy flags: `AUX_WAKING`, `AUX_WAKE_PENDING`, `AUX_READER_SPINNER`.
    aux: AtomicU32,
    _policy: PhantomData<fn() -> P>,
}

#[cfg(not(kslock_loom))]
const _: () = assert!(core::mem::size_of::<RawRwSem>() <= 56);

impl<P: RwSemPolicy> core::fmt::Debug for RawRwSem<P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let c = self.count.load(Relaxed);
        f.debug_struct("RawRwSem")
            .field("writer", &(c & WRITER_LOCKED != 0))
            .field("readers", &((c & READER_MASK) >> READER_SHIFT))
            .field("waiters", &(c & WAITERS != 0))
            .field("handoff", &(c & HANDOFF != 0))
            .finish()
    }
}

impl<P: RwSemPolicy> Default for RawRwSem<P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P: RwSemPolicy> RawRwSem<P> {
    loom_const_fn! {
        /// An unlocked rw-semaphore (all-zero).
        pub fn new() -> Self {
            RawRwSem {
                count: AtomicU64::new(0),
                owner: AtomicU64::new(0),
                wait_list: WaitList::new(),
                osq: Osq::new(),
                wait_lock: WaitLock::new(),
                stats: SpinStats::new(),
                aux: AtomicU32::new(0),
                _policy: PhantomData,
            }
        }
    }

    // ---------------------------------------------------------------------------------------
    // Read side
    // ---------------------------------------------------------------------------------------

    /// Acquires a read lock, sleeping if needed (`down_read`).
    #[inline]
    pub fn read(&self) {
        let c = self
            .count
            .fetch_add(READER_BIAS, Acquire)
            .wrapping_add(READER_BIAS);
        if c & READ_FAILED_MASK == 0 {
            self.set_reader_owned(current());
            return;
        }
        self.read_contended(c, None);
    }

    /// Takes a read lock only if no writer holds it and nobody waits (`down_read_trylock`).
    /// Never spins or sleeps.
    #[inline]
    pub fn try_read(&self) -> bool {
        self.try_read_unless(READ_FAILED_MASK)
    }

    /// Acquires a read lock, giving up at `timeout` from now. Returns whether it is held.
    pub fn try_read_for(&self, timeout: std::time::Duration) -> bool {
        self.read_timed(sys::deadline_after(timeout))
    }

    /// Acquires a read lock, giving up at `deadline`. Returns whether it is held.
    pub fn try_read_until(&self, deadline: std::time::Instant) -> bool {
        self.read_timed(sys::deadline_from_instant(deadline))
    }

    /// Acquires a read lock that cannot deadlock against an outer read lock held by this thread
    /// (module doc, "Recursive reads"): waits only while a writer holds the lock.
    #[inline]
    pub fn read_recursive(&self) {
        let c = self
            .count
            .fetch_add(READER_BIAS, Acquire)
            .wrapping_add(READER_BIAS);
        if c & (WRITER_LOCKED | READ_FAIL) == 0 {
            self.set_reader_owned(current());
            return;
        }
        self.read_contended(c, None);
    }

    /// `try_read` for nesting: fails only while a writer holds the lock.
    #[inline]
    pub fn try_read_recursive(&self) -> bool {
        self.try_read_unless(WRITER_LOCKED | READ_FAIL)
    }

    /// Releases a read lock (`up_read`).
    ///
    /// # Safety
    /// The calling thread (or the thread it took the lock over from) holds a read lock.
    /// Unlocking a lock with no reader counted is detected and panics.
    #[inline]
    pub unsafe fn read_unlock(&self) {
        // Check before writing (module doc, "Misuse"): a lock with no reader counted is not
        // modified. A load and one fetch_sub, not a CAS loop: under reader traffic a CAS loop
        // retries on every other reader's add.
        if self.count.load(Relaxed) & READER_MASK == 0 {
            misuse("read_unlock of a lock that is not read-locked");
        }
        // Release pairs with the next writer's Acquire.
        let old = self.count.fetch_sub(READER_BIAS, Release);
        if old & READER_MASK == 0 {
            // Another misused unlock took the last bias between our check and our RMW.
            self.count.fetch_add(READER_BIAS, Relaxed);
            misuse("read_unlock of a lock that is not read-locked");
        }
        self.after_reader_release(old.wrapping_sub(READER_BIAS));
    }

    #[inline]
    fn try_read_unless(&self, fail: State) -> bool {
        let mut c = self.count.load(Relaxed);
        // A CAS loop, not a spin: it retries only when `count` changed under it.
        while c & fail == 0 {
            match self
                .count
                .compare_exchange_weak(c, c + READER_BIAS, Acquire, Relaxed)
            {
                Ok(_) => {
                    self.set_reader_owned(current());
                    return true;
                }
                Err(x) => c = x,
            }
        }
        false
    }

    fn read_timed(&self, deadline: u64) -> bool {
        let c = self
            .count
            .fetch_add(READER_BIAS, Acquire)
            .wrapping_add(READER_BIAS);
        if c & READ_FAILED_MASK == 0 {
            self.set_reader_owned(current());
            return true;
        }
        self.read_contended(c, Some(deadline))
    }

    /// A reader bias was removed and `c` is the new count: wake if that freed a lock with
    /// waiters (also used for phantom biases, which may have hidden the release from others).
    #[inline]
    fn after_reader_release(&self, c: State) {
        // Not while WRITER_WANT is set: its holder takes the lock (and wakes at its unlock) or
        // wakes the waiters when it gives up (`drop_want`).
        if c & (LOCK_MASK | WAITERS | WOKEN | WRITER_WANT) == WAITERS {
            self.clear_nonspinnable();
            self.wake();
        }
    }

    /// Removes this thread's (phantom) reader bias with read-unlock semantics.
    fn drop_reader_bias(&self) {
        let c = self
            .count
            .fetch_sub(READER_BIAS, Release)
            .wrapping_sub(READER_BIAS);
        self.after_reader_release(c);
    }

    /// `owner = me | READER_OWNED` keeping NONSPINNABLE; written only when the word is not
    /// already reader-owned. Which reader it names is a hint nobody acts on, and a store per
    /// read lock would put the owner line in every reader's path (two readers alternating
    /// bounced it on every acquisition).
    #[inline]
    fn set_reader_owned(&self, me: &'static ThreadRec) {
        let o = self.owner.load(Relaxed);
        if o & OWNER_READER == 0 {
            self.owner.store(
                me.owner_word() | OWNER_READER | (o & OWNER_NONSPINNABLE),
                Release,
            );
        }
    }

    #[inline]
    fn clear_nonspinnable(&self) {
        if self.owner.load(Relaxed) & OWNER_NONSPINNABLE != 0 {
            self.owner.fetch_and(!OWNER_NONSPINNABLE, Relaxed);
        }
    }

    /// The reader slow path; `c` is the count after this reader's bias was added. Returns
    /// whether the lock is held (false only when `deadline` passed).
    #[cold]
    #[inline(never)]
    fn read_contended(&self, c: State, deadline: Deadline) -> bool {
        chaos::point(Site::ReadContended);
        events::count(Ev::rwsem_read_slow);
        let me = current();
        if c & READ_FAIL != 0 {
            self.count.fetch_sub(READER_BIAS, Relaxed);
            misuse("reader count overflow (more than 2^55 read locks)");
        }
        let mut has_bias = true;
        if P::READER_SPIN != ReaderSpin::Off {
            match self.reader_try_spin(me, c) {
                ReaderSpinResult::Acquired => return true,
                ReaderSpinResult::Failed => has_bias = false,
                ReaderSpinResult::Skipped => {}
            }
        }
        if has_bias {
            // What blocked the fast path may be gone already (a write section is tens of ns).
            // Acquire pairs with the Release of the unlock that cleared the writer bit.
            let c = self.count.load(Acquire);
            if c & READ_BLOCKED == 0 {
                // Our bias is counted and no writer holds or claims the lock: we hold it.
                self.set_reader_owned(me);
                let readers = (c & READER_MASK) >> READER_SHIFT;
                if readers == 1 && c & WAITERS != 0 {
                    self.wake_readers_owned(me);
                }
                return true;
            }
            if P::READER_SPIN == ReaderSpin::Off {
                // Wait for the writer phase on the count word before queueing. Without our
                // bias: a phantom bias would keep a WRITER_WANT writer waiting on us.
                self.drop_reader_bias();
                for y in 0..=PRE_QUEUE_YIELDS {
                    if y > 0 {
                        crate::sync::yield_now();
                    }
                    if self.read_spin(me) {
                        return true;
                    }
                }
                has_bias = false;
            }
        }
        self.read_queue(me, has_bias, deadline)
    }

    /// A blocked reader's spin (no bias counted): while a running writer holds the lock, or a
    /// writer waits awake for the readers to drain (`WRITER_WANT`, `HANDOFF`), poll `count` under
    /// the lock's adaptive budget and join as soon as nothing blocks readers. A write section
    /// is usually shorter than a futex sleep and wake (2–30 µs), and a queued reader costs the
    /// writer's unlock a wait_lock round trip. `true`: holds a read lock.
    ///
    /// Under loom it makes one attempt and no spin steps: the steps only delay the queueing
    /// (which the models cover), and they tripled the rwsem models' run time.
    fn read_spin(&self, me: &'static ThreadRec) -> bool {
        let mut spin = Spin::fixed(&self.stats, me);
        let res = loop {
            let c = self.count.load(Relaxed);
            if c & (READ_BLOCKED | READ_FAIL) == 0 {
                // Acquire pairs with the Release of the writer's unlock.
                if self
                    .count
                    .compare_exchange_weak(c, c + READER_BIAS, Acquire, Relaxed)
                    .is_ok()
                {
                    self.set_reader_owned(me);
                    break Ok(());
                }
            }
            let r = if cfg!(kslock_loom) {
                Err(Stop::Budget)
            } else if c & READ_BLOCKED == 0 {
                spin.step() // lost a race with another reader or writer: budgeted retry
            } else if c & WRITER_LOCKED != 0 {
                match writer_owner(self.owner.load(Relaxed)) {
                    Some(r) => spin.step_on(r),
                    None => spin.step(), // owner not yet published: budgeted
                }
            } else {
                spin.step() // an awake writer waits for readers to drain
            };
            if let Err(e) = r {
                break Err(e);
            }
        };
        let got = spin.finish(res);
        if got {
            events::count(Ev::rwsem_read_spin_acquired);
        }
        let c = self.count.load(Relaxed);
        if got && c & WAITERS != 0 && (c & READER_MASK) >> READER_SHIFT == 1 {
            // Queued readers may join the group this reader opened.
            self.wake_readers_owned(me);
        }
        got
    }

    /// Queues a reader and waits for its grant.
    fn read_queue(&self, me: &'static ThreadRec, has_bias: bool, deadline: Deadline) -> bool {
        events::count(Ev::rwsem_read_queued);
        let slot = WaitSlot::new(me, Kind::Read, GRANT_WAITING);
        let w = slot.node();
        w.set_timeout_ns(sys::now_ns().saturating_add(P::HANDOFF_NS));
        let mut wq = Wq::new();
        self.wait_lock.lock(me, &self.stats);
        let mut adj: State = if has_bias {
            READER_BIAS.wrapping_neg()
        } else {
            0
        };
        if self.wait_list.is_empty() {
            // No waiters means no WAITERS/HANDOFF; if no writer holds it now, our counted
            // bias is a read lock. Acquire pairs with the last writer's Release.
            if has_bias && self.count.load(Acquire) & WRITER_LOCKED == 0 {
                self.set_reader_owned(me);
                self.wait_unlock(me, &mut wq);
                return true;
            }
            adj = adj.wrapping_add(WAITERS);
        }
        // SAFETY: wait_lock held; `w` stays at this address until it is unlinked under the
        // wait_lock (by a granting waker or by our own cancellation below).
        let first = unsafe { self.wait_list.push_back(w) };
        // The re-check: one RMW removes our phantom bias (and sets WAITERS), and its result
        // says whether an unlocker may have missed us.
        let c = self.count.fetch_add(adj, AcqRel).wrapping_add(adj);
        if c & LOCK_MASK == 0 {
            self.clear_nonspinnable();
            // SAFETY: wait_lock held.
            unsafe { self.mark_wake(WakeType::Any, &mut wq) };
        } else if c & WRITER_LOCKED == 0 && first {
            // SAFETY: wait_lock held.
            unsafe { self.mark_wake(WakeType::Readers, &mut wq) };
        }
        self.wait_unlock(me, &mut wq);
        if self.grant_spin(me, w) {
            return true;
        }

        loop {
            // Acquire pairs with the grant's Release store in `mark_wake`.
            if w.state.load(Acquire) == GRANT_GRANTED {
                return true;
            }
            events::count(Ev::rwsem_read_sleep);
            if me.park(deadline).is_err() {
                self.wait_lock.lock(me, &self.stats);
                if w.state.load(Acquire) == GRANT_GRANTED {
                    self.wait_unlock(me, &mut wq);
                    return true;
                }
                // SAFETY: wait_lock held; not granted, so still linked.
                unsafe { self.cancel_waiter(w, &mut wq) };
                self.wait_unlock(me, &mut wq);
                return false;
            }
        }
    }

    /// A queued reader's spin before it sleeps (the rwsem's counterpart of the mutex's waiter
    /// spinning): poll the reader's own grant word, which no one else polls, while a *running
    /// writer* holds the lock, under the lock's adaptive budget. The grant arrives when that
    /// writer unlocks; catching it here saves the futex sleep and the waker's futex wake (a
    /// granted reader that is not parked needs no syscall), which cost 2–30 µs against
    /// critical sections of tens of ns. No spin while readers hold the lock (a queued writer
    /// is ahead of us, so the grant is at least a whole writer phase away) or while the owner
    /// sleeps or shares our CPU. `true` = granted.
    ///
    /// Not run under loom: it only delays the park (the grant check after it is the one the
    /// park loop makes), and its budgeted steps multiply the model's state space (rwsem models
    /// 25 s → 294 s).
    fn grant_spin(&self, me: &'static ThreadRec, w: &Waiter) -> bool {
        if cfg!(kslock_loom) {
            return false;
        }
        let mut spin = Spin::fixed(&self.stats, me);
        loop {
            // Acquire pairs with the grant's Release store in `mark_wake`.
            if w.state.load(Acquire) == GRANT_GRANTED {
                spin.succeeded();
                return true;
            }
            let o = self.owner.load(Relaxed);
            let c = self.count.load(Relaxed);
            let r = match writer_owner(o) {
                Some(r) if c & WRITER_LOCKED != 0 => spin.step_on(r),
                // An awake writer waits for the readers to drain: its section and our grant
                // follow within a few critical sections.
                _ if c & WRITER_LOCKED == 0 && c & (WRITER_WANT | HANDOFF) != 0 => spin.step(),
                _ => Err(Stop::OwnerNotRunning),
            };
            if let Err(stop) = r {
                spin.failed(stop);
                return w.state.load(Acquire) == GRANT_GRANTED;
            }
        }
    }

    /// A stealing / spinning reader (or downgrade) holds a read lock and waiters exist: let
    /// queued readers join.
    fn wake_readers_owned(&self, me: &'static ThreadRec) {
        let mut wq = Wq::new();
        self.wait_lock.lock(me, &self.stats);
        // SAFETY: wait_lock held.
        unsafe { self.mark_wake(WakeType::ReadOwned, &mut wq) };
        self.wait_unlock(me, &mut wq);
    }

    /// Seed S4: a reader's optimistic spin on a writer owner.
    fn reader_try_spin(&self, me: &'static ThreadRec, c: State) -> ReaderSpinResult {
        if c & HANDOFF != 0 || self.owner.load(Relaxed) & OWNER_NONSPINNABLE != 0 {
            return ReaderSpinResult::Skipped;
        }
        let limited = P::READER_SPIN == ReaderSpin::Limited;
        if limited
            && (c & WRITER_LOCKED == 0
                || self.aux.fetch_or(AUX_READER_SPINNER, Acquire) & AUX_READER_SPINNER != 0)
        {
            return ReaderSpinResult::Skipped;
        }
        // A spinner keeps no phantom bias (it would hide the writer's release from unlockers).
        self.drop_reader_bias();
        let got = self.reader_optimistic_spin(me);
        if limited {
            self.aux.fetch_and(!AUX_READER_SPINNER, Release);
        }
        if !got {
            return ReaderSpinResult::Failed;
        }
        if self.count.load(Relaxed) & WAITERS != 0 {
            self.wake_readers_owned(me);
        }
        ReaderSpinResult::Acquired
    }

    #[inline(never)]
    fn reader_optimistic_spin(&self, me: &'static ThreadRec) -> bool {
        let mut spin = Spin::new(&self.stats, me);
        if !self.osq.lock(me, P::OSQ_LAYOUT, &mut spin) {
            return false;
        }
        let res = loop {
            let c = self.count.load(Relaxed);
            let o = self.owner.load(Acquire);
            if o & OWNER_NONSPINNABLE != 0 || c & HANDOFF != 0 {
                break Err(Stop::OwnerNotRunning);
            }
            if c & WRITER_LOCKED == 0 {
                if P::READER_SPIN == ReaderSpin::Limited && c & WAITERS != 0 && c & READER_MASK != 0
                {
                    // The stealing rule: don't extend a reader group while others wait.
                    break Err(Stop::OwnerNotRunning);
                }
                let old = self.count.fetch_add(READER_BIAS, Acquire);
                if old & (WRITER_LOCKED | HANDOFF | READ_FAIL) == 0 {
                    self.set_reader_owned(me);
                    break Ok(());
                }
                self.drop_reader_bias();
            }
            let r = match writer_owner(o) {
                Some(r) if c & WRITER_LOCKED != 0 => spin.step_on(r),
                _ => spin.step(),
            };
            if let Err(e) = r {
                break Err(e);
            }
        };
        self.osq.unlock(me, P::OSQ_LAYOUT, &self.stats);
        spin.finish(res)
    }

    // ---------------------------------------------------------------------------------------
    // Write side
    // ---------------------------------------------------------------------------------------

    /// Acquires the write lock, spinning or sleeping if needed (`down_write`).
    #[inline]
    pub fn write(&self) {
        if self
            .count
            .compare_exchange(0, WRITER_LOCKED, Acquire, Relaxed)
            .is_ok()
        {
            self.owner.store(current_word(), Release);
            return;
        }
        self.write_contended(None);
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
            return true;
        }
        false
    }

    /// Seed S3 for the write side: like [`try_write`](Self::try_write), but when the lock is
    /// held it spins (through the OSQ, under the same rules as a writer's optimistic spin)
    /// while that can pay before failing. Never sleeps.
    pub fn try_write_spin(&self) -> bool {
        if self.try_write() {
            return true;
        }
        let me = current();
        self.write_can_spin() && self.write_optimistic_spin(me)
    }

    /// Acquires the write lock, giving up at `timeout` from now.
    pub fn try_write_for(&self, timeout: std::time::Duration) -> bool {
        self.try_write() || self.write_contended(Some(sys::deadline_after(timeout)))
    }

    /// Acquires the write lock, giving up at `deadline`.
    pub fn try_write_until(&self, deadline: std::time::Instant) -> bool {
        self.try_write() || self.write_contended(Some(sys::deadline_from_instant(deadline)))
    }

    /// Releases the write lock (`up_write`).
    ///
    /// # Safety
    /// The calling thread holds the write lock. Unlocking a lock that is not write-locked is
    /// detected and panics; unlocking another thread's write lock panics in debug builds and
    /// with feature `debug-locks`.
    #[inline]
    pub unsafe fn write_unlock(&self) {
        if DEBUG_LOCKS {
            self.check_write_owner("write_unlock");
        }
        // Check before writing: a lock that is not write-locked is never modified, so no other
        // thread sees a count corrupted by a misuse (only this thread's holder clears the bit).
        if self.count.load(Relaxed) & WRITER_LOCKED == 0 {
            misuse("write_unlock of a lock that is not write-locked");
        }
        self.owner.store(0, Relaxed);
        let old = self.count.fetch_sub(WRITER_LOCKED, Release);
        if old & WRITER_LOCKED == 0 {
            // Another misused unlock cleared the bit between our check and our RMW.
            self.count.fetch_add(WRITER_LOCKED, Relaxed);
            misuse("write_unlock of a lock that is not write-locked");
        }
        if old & (WAITERS | WOKEN) == WAITERS {
            self.wake();
        }
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

    fn check_write_owner(&self, what: &str) {
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
    fn write_can_spin(&self) -> bool {
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
    fn reader_spin_bound_ns(c: State) -> u64 {
        let readers = ((c & READER_MASK) >> READER_SHIFT).min(30);
        crate::spin::spin_cap_ns() as u64 * (20 + readers) / 50
    }

    /// Marks the lock NONSPINNABLE if it is still reader-owned as seen (`o`).
    fn set_nonspinnable(&self, o: u64) {
        if o & OWNER_READER != 0 && o & OWNER_NONSPINNABLE == 0 {
            let _ = self
                .owner
                .compare_exchange(o, o | OWNER_NONSPINNABLE, Relaxed, Relaxed);
        }
    }

    /// The writer's optimistic spin (kernel-locks.md A.4 1). `true`: the write lock is held.
    #[inline(never)]
    fn write_optimistic_spin(&self, me: &'static ThreadRec) -> bool {
        let mut spin = Spin::new(&self.stats, me);
        if !self.osq.lock(me, P::OSQ_LAYOUT, &mut spin) {
            return false;
        }
        let mut reader_deadline: Option<u64> = None;
        let mut reader_steps = 0u32;
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
                let r = if reader_steps % 16 == 0 && sys::now_ns() > dl {
                    Err(Stop::Budget)
                } else if cfg!(kslock_loom) {
                    spin.step() // loom: the frozen clock never passes `dl`
                } else {
                    crate::sync::spin_hint();
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
    fn drop_want(&self, me: &'static ThreadRec) {
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

    /// The writer slow path. Returns whether the lock is held (false only past `deadline`).
    #[cold]
    #[inline(never)]
    fn write_contended(&self, deadline: Deadline) -> bool {
        chaos::point(Site::WriteContended);
        events::count(Ev::rwsem_write_slow);
        let me = current();
        let mut yields = 0;
        loop {
            if !self.write_can_spin() {
                events::count(Ev::rwsem_write_nospin);
            } else if self.write_optimistic_spin(me) {
                events::count(Ev::rwsem_write_spin_acquired);
                return true;
            }
            if yields == PRE_QUEUE_YIELDS {
                break;
            }
            yields += 1;
            crate::sync::yield_now();
            if self.try_write() {
                return true;
            }
        }
        events::count(Ev::rwsem_write_queued);
        let slot = WaitSlot::new(me, Kind::Write, 0);
        let w = slot.node();
        w.set_timeout_ns(sys::now_ns().saturating_add(P::HANDOFF_NS));
        let mut wq = Wq::new();
        let mut dropped_handoffs = 0;
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
            self.wait_unlock(me, &mut wq);
            if !(handoff && self.first_waiter_spin(me)) {
                let mut rearm = None;
                if handoff && dropped_handoffs < MAX_HANDOFF_DROPS {
                    // About to sleep while holding the reservation: the lock would sit idle
                    // for our whole wakeup (2–30 µs) after the owner releases. Drop it; we are
                    // past our timeout, so the first retry after waking re-raises it. At most
                    // MAX_HANDOFF_DROPS times per wait, which keeps the wait bounded.
                    dropped_handoffs += 1;
                    self.wait_lock.lock(me, &self.stats);
                    if w.handoff_set() {
                        self.count.fetch_and(!HANDOFF, Relaxed);
                        w.set_handoff(false);
                    }
                    self.wait_unlock(me, &mut wq);
                    // That retry must not depend on an unlock waking us: spinning readers
                    // (S4 `On`) can keep the count above zero for ever, so no read unlock ever
                    // sees the lock free (issue 8, defect 2). Sleep at most REARM of the
                    // handoff timeout, then re-raise.
                    rearm = Some(sys::now_ns().saturating_add(P::HANDOFF_NS / REARM_DIV));
                }
                let timer = if rearm.is_some() {
                    rearm
                } else if HANDOFF_TIMER && !handoff && sys::now_ns() < w.timeout_ns() {
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

    /// `try_write_lock` (kernel-locks.md A.4 4) for the queued writer `w`. `Err(true)`: `w`
    /// is the head and HANDOFF is set (it should spin on the owner).
    ///
    /// # Safety
    /// The wait_lock is held and `w` is linked.
    unsafe fn try_write_lock(&self, w: &Waiter, me: &'static ThreadRec) -> Result<(), bool> {
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
    fn first_waiter_spin(&self, me: &'static ThreadRec) -> bool {
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

    // ---------------------------------------------------------------------------------------
    // Waking
    // ---------------------------------------------------------------------------------------

    /// Takes a waiter out after its deadline passed (wait_lock held): if it was the head, the
    /// new head may proceed (or inherits HANDOFF); if the list empties, WAITERS and HANDOFF go.
    ///
    /// # Safety
    /// The wait_lock is held and `w` is linked.
    unsafe fn cancel_waiter(&self, w: &Waiter, wq: &mut Wq) {
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
    fn wake(&self) {
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
    fn wait_lock_or_defer(&self, me: &'static ThreadRec) -> bool {
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
    fn wait_unlock(&self, me: &'static ThreadRec, wq: &mut Wq) {
        self.wait_lock.unlock(me);
        wq.wake_all();
        if P::WAKE == WakePolicy::TrylockIfSpinner {
            self.run_pending_wakes(me, wq);
        }
    }

    /// S0 `TrylockIfSpinner`: after any wait_lock release, perform a wake an unlocker left to us.
    fn run_pending_wakes(&self, me: &'static ThreadRec, wq: &mut Wq) {
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

    /// `rwsem_mark_wake` (kernel-locks.md A.5): decide whom to wake; queue their records in
    /// `wq`. Returns whether anything was queued.
    ///
    /// # Safety
    /// The wait_lock is held.
    unsafe fn mark_wake(&self, wt: WakeType, wq: &mut Wq) -> bool {
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
        if self.count.load(Relaxed) & (READ_FAIL | WRITER_WANT) != 0 {
            // A running writer waits for the readers to drain: it takes the lock and wakes at
            // its unlock, or gives up and wakes (`drop_want`). (A re-check in the trial below.)
            return false;
        }
        let mut trial: State = 0;
        if wt != WakeType::ReadOwned {
            // Claim the lock for the head reader before counting the batch, so a writer
            // cannot slip in. Acquire pairs with the last unlock's Release: the grantees
            // (synchronising with our grant store) see the previous writer's data.
            trial = READER_BIAS;
            let old = self.count.fetch_add(READER_BIAS, Acquire);
            if old & WRITER_WANT != 0 && old & WRITER_LOCKED == 0 {
                // WRITER_WANT came up since the check above: leave the lock to its holder.
                self.count.fetch_sub(READER_BIAS, Relaxed);
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

// -------------------------------------------------------------------------------------------
// lock_api
// -------------------------------------------------------------------------------------------

#[cfg(not(kslock_loom))]
mod api {
    use super::RawRwSem;
    use crate::policy::{DefaultPolicy, RwSemPolicy};

    // SAFETY: `write` excludes every other holder; `read` excludes writers (module doc).
    unsafe impl<P: RwSemPolicy> lock_api::RawRwLock for RawRwSem<P> {
        #[allow(clippy::declare_interior_mutable_const)]
        const INIT: Self = RawRwSem::new();
        // The owner check of `write_unlock` needs the locking thread.
        type GuardMarker = lock_api::GuardNoSend;

        #[inline]
        fn lock_shared(&self) {
            self.read()
        }
        #[inline]
        fn try_lock_shared(&self) -> bool {
            self.try_read()
        }
        #[inline]
        unsafe fn unlock_shared(&self) {
            // SAFETY: forwarded caller contract.
            unsafe { self.read_unlock() }
        }
        #[inline]
        fn lock_exclusive(&self) {
            self.write()
        }
        #[inline]
        fn try_lock_exclusive(&self) -> bool {
            self.try_write()
        }
        #[inline]
        unsafe fn unlock_exclusive(&self) {
            // SAFETY: forwarded caller contract.
            unsafe { self.write_unlock() }
        }
        #[inline]
        fn is_locked(&self) -> bool {
            RawRwSem::is_locked(self)
        }
        #[inline]
        fn is_locked_exclusive(&self) -> bool {
            self.is_write_locked()
        }
    }

    // SAFETY: `downgrade` keeps the lock held throughout (writer bit → one reader bias in one RMW).
    unsafe impl<P: RwSemPolicy> lock_api::RawRwLockDowngrade for RawRwSem<P> {
        unsafe fn downgrade(&self) {
            // SAFETY: forwarded caller contract.
            unsafe { RawRwSem::downgrade(self) }
        }
    }

    // SAFETY: a recursive read waits only for WRITER_LOCKED, which cannot be set while this
    // thread's read lock is counted (module doc, "Recursive reads").
    unsafe impl<P: RwSemPolicy> lock_api::RawRwLockRecursive for RawRwSem<P> {
        fn lock_shared_recursive(&self) {
            self.read_recursive()
        }
        fn try_lock_shared_recursive(&self) -> bool {
            self.try_read_recursive()
        }
    }

    // SAFETY: the timed variants acquire exactly like the untimed ones or leave the lock
    // untouched (a cancelled waiter is unlinked under the wait_lock).
    unsafe impl<P: RwSemPolicy> lock_api::RawRwLockTimed for RawRwSem<P> {
        type Duration = std::time::Duration;
        type Instant = std::time::Instant;
        fn try_lock_shared_for(&self, timeout: Self::Duration) -> bool {
            self.try_read_for(timeout)
        }
        fn try_lock_shared_until(&self, timeout: Self::Instant) -> bool {
            self.try_read_until(timeout)
        }
        fn try_lock_exclusive_for(&self, timeout: Self::Duration) -> bool {
            self.try_write_for(timeout)
        }
        fn try_lock_exclusive_until(&self, timeout: Self::Instant) -> bool {
            self.try_write_until(timeout)
        }
    }

    /// A reader-writer lock protecting a `T`, built on the kernel rw-semaphore.
    pub type RwSem<T> = lock_api::RwLock<RawRwSem<DefaultPolicy>, T>;
    /// [`RwSem`] with a chosen seed policy (see [`crate::policy`]).
    pub type RwSemWith<P, T> = lock_api::RwLock<RawRwSem<P>, T>;
    /// Shared guard of an [`RwSem`].
    pub type RwSemReadGuard<'a, T> = lock_api::RwLockReadGuard<'a, RawRwSem<DefaultPolicy>, T>;
    /// Exclusive guard of an [`RwSem`].
    pub type RwSemWriteGuard<'a, T> = lock_api::RwLockWriteGuard<'a, RawRwSem<DefaultPolicy>, T>;
}

#[cfg(not(kslock_loom))]
pub use api::{RwSem, RwSemReadGuard, RwSemWith, RwSemWriteGuard};

#[cfg(all(test, not(kslock_loom)))]
mod tests {
    use super::*;

    #[test]
    fn size_and_zero_init() {
        assert!(core::mem::size_of::<RawRwSem>() <= 56);
        // SAFETY: all-zero is the documented unlocked state.
        let z: RawRwSem = unsafe { core::mem::zeroed() };
        assert!(!z.is_locked());
        z.write();
        // SAFETY: held.
        unsafe { z.write_unlock() };
        z.read();
        // SAFETY: held.
        unsafe { z.read_unlock() };
        assert_eq!(z.count.load(Relaxed), 0);
    }

    #[test]
    fn masks_are_disjoint() {
        assert_eq!(
            READER_MASK & (WRITER_LOCKED | WAITERS | HANDOFF | WOKEN | READ_FAIL),
            0
        );
        assert_eq!(READER_MASK.count_ones(), 55);
        assert_eq!(OWNER_FLAGS & 127, OWNER_FLAGS);
    }
}
