//! A reader-writer lock built on kslock's mutex: writers (and, when the lock measures that it
//! pays, readers too) go through the mutex with all of its machinery (quick poll, OSQ spin,
//! yields, FIFO queue, fairness windows and owner-timed turns); readers share the lock through
//! a count word when sharing pays. Experimental (issue 11): not yet the default `RwSem`.
//!
//! # Why
//!
//! On the 2-CPU development guests, with more threads than CPUs, kslock's rwsem ran its 8+
//! thread cells of the default matrix *below its own one-thread rate* wherever the sections
//! were short (50% reads, CS load 1: 18.2k kops/s on 2 CPUs against 31.2k alone; 90% reads,
//! CS load 20: 7.8k against 9.8k): every shared read is two RMWs on the count word, and two
//! CPUs doing them move its cache line at every operation. glibc's rwlock won those cells by
//! sleeping its losers and running one thread on one CPU. kslock's mutex already does that on
//! purpose (its turns), and a scratch build that ran every read through the mutex beat the
//! best peer in 7 of the 9 cells at 8 and 32 threads but lost the long read sections, where
//! readers sharing the lock on both CPUs is worth 1.25–1.33×. So the lock runs reads both ways
//! and picks by measurement (module `mode`).
//!
//! # `count` (64 bits)
//!
//! | bits | name | meaning | set by | cleared by |
//! |------|------|---------|--------|------------|
//! | 0 | `WANT` | a writer holds `m` and waits for the shared readers to leave: no new shared reader joins (recursive readers still do) | the writer that holds `m`, in its first RMW | the same writer: `write_unlock`, `downgrade`, or a timed write that gives up (before it releases `m`) |
//! | 1 | `LOCKED` | the writer holds the write lock: no reader joins | the writer, in the CAS that sees no reader (with `WANT`) | as `WANT`, in the same RMW |
//! | 2 | `UPG` | the holder of `m` holds it as the upgradable read lock (shared readers still join; reads in the `EXCL` mode read shared instead of queueing on `m`) | the thread that took `m` for an upgradable read, or a writer in `downgrade_to_upgradable` (the same RMW that drops `WANT`/`LOCKED`) | that thread: its unlock, `downgrade_upgradable`, or the upgrade's RMW that raises `WANT` (a timed upgrade that gives up restores it) |
//! | 3–7 | — | reserved (0) | — | — |
//! | 8–31 | readers | shared read holds plus *phantom* biases (a reader that found `WANT` or `LOCKED` and takes its bias back); bit 31 set = overflow (a reader that sees it takes its bias back and panics) | shared readers (`fetch_add`) | read unlocks and phantom removals (`fetch_sub`) |
//! | 32–63 | ops | a wrapping count of shared reads and writes, for the mode measurement | the same RMWs that add a reader bias or `WANT` | the mode check, at each epoch's end (one `fetch_and`: the count restarts, module `mode`) |
//!
//! All-zero: unlocked. `WANT`/`LOCKED` are only ever set by the thread that holds `m`, and
//! cleared before it releases `m`: **whoever holds `m` sees them clear**, unless it set them.
//!
//! # `aux` (32 bits; the futex word of a draining writer)
//!
//! | bits | name | meaning | set by | cleared by |
//! |------|------|---------|--------|------------|
//! | 0 | `DRAIN_SLEEP` | the writer sleeps on `aux` until the shared readers leave | the writer (RMW) before its futex wait | the reader removal that leaves no reader while `WANT` is set (RMW, then wakes it); the writer when it finds them gone |
//! | 1 | `EXCL` | the mode: reads go through `m` | the mode check (module `mode`) | the same |
//! | 2 | `BUSY` | a thread runs the mode check | the checker (RMW) | the checker |
//! | 3–4 | phase | 0 normal, 1 probe settling, 2 probe measured, 3 settling back | the checker | the checker |
//! | 5–7 | backoff | probes lost in a row (0–5): the next probe waits `4 << backoff` epochs | the checker | the checker |
//! | 8–15 | epochs | epochs since the last probe | the checker | the checker |
//! | 16–31 | rate | ns per operation of the last measured epoch in the current mode, in 1/8 ns (saturates at 8 µs) | the checker | the checker |
//!
//! A futex wait on `aux` may end early when the checker changes bits 1–31 (`EAGAIN`): the
//! writer re-checks and waits again.
//!
//! `xops` counts the reads taken through `m` since the epoch began (written with plain stores
//! by the holder of `m`; the checker resets it, module `mode`); the epoch's start (µs, low
//! 32 bits of the clock, 0 = none yet) lives in `m`'s embedder word, bytes 16–19 of the lock,
//! which the mutex never touches (type doc of `RawMutex`).
//!
//! # Paths
//!
//! ```text
//!  read (shared):   fetch_add(READER + OP) ──no WANT/LOCKED/overflow──> held
//!                     └─> take the bias back (wake a draining writer if last) ─> poll the
//!                         count while a writer holds `m` ─> turnstile: lock m, add the bias,
//!                         unlock m
//!  read (EXCL):     lock m ──> held (count untouched; `xops` += 1); m busy and held by me
//!                   or by the upgradable holder: a shared read
//!  read_unlock:     m held by me for a read? unlock m : fetch_sub(READER) (last while WANT:
//!                   wake writer); in the EXCL mode m's release CAS is the test
//!  write:           lock m ─> CAS(no reader: + WANT|LOCKED + OP) or fetch_add(WANT + OP) and
//!                   wait for the readers to leave (poll, then sleep on aux) ─> CAS + LOCKED
//!  write_unlock:    fetch_sub(WANT|LOCKED) ─> unlock m
//!  upgradable:      lock m, set UPG ──upgrade──> UPG → WANT in one RMW, then the writer's
//!                   drain (module `upgrade`)
//!  read behind waiters: shared only while nobody holds or waits for m, else the turnstile
//!  try_write_spin:  m's try_lock_spin, then the drain's poll only (module `behind`)
//! ```
//!
//! A reader that holds `m` *is* a shared holder: writers cannot take `m`, other readers still
//! join through the count. So the mode is a hint: any read may go either way at any moment, and
//! no state depends on it; a mode change needs no handshake.
//!
//! **Recursive reads** ([`RawHybridRwSem::read_recursive`]) join while `WANT` is set (a writer
//! waiting for readers, perhaps for this thread's outer read) and never take `m`, so they never
//! block while the calling thread holds a read lock of either kind; they wait only while
//! `LOCKED` is set.
//!
//! **Fairness** is the mutex's (module doc of `kslock::mutex`, "Fairness"): writers and
//! readers that go through `m` queue in its FIFO with its windows. A writer waits for the
//! shared readers in the lock when it takes `m` (no new ones join) — at most the longest
//! read section in progress. A shared reader blocked by a writer polls the count for at most
//! the spin cap, then queues on `m` behind that writer (the turnstile).
//!
//! # Memory orderings
//!
//! * Acquire: the reader's `fetch_add`, the writer's CASes and `fetch_add`, `m`'s lock; each
//!   pairs with the Release of the unlock RMW that precedes it in `count`'s (or `m`'s owner
//!   word's) modification order.
//! * `DRAIN_SLEEP`: the writer's `fetch_or` on `aux`, a SeqCst fence, its load of `count`,
//!   against the last reader's `fetch_sub` on `count`, a SeqCst fence, its load of `aux`: by
//!   the fences' total order either the writer's load sees the reader gone or the reader's
//!   load sees the flag and wakes (store-buffering; a lost wakeup is a loom deadlock in
//!   `tests/loom_hybrid.rs`). The fences are on the cold paths only: the reader's only when
//!   its removal left no reader while `WANT` was set. (With SeqCst RMWs and loads alone, which
//!   loom models as AcqRel, the model at 3 preemptions found the lost wakeup.)
//! * The mode bits, `xops`, the ops half of `count` and the epoch's start are statistics:
//!   Relaxed. No state depends on them, so the loom models do not run the duel (its clock is
//!   frozen there); they set `EXCL` either way and flip it while a reader and a writer run
//!   (`loom_hybrid_mode_flip`). The restart's `fetch_and` only clears the ops half: a writer
//!   CAS that it makes fail is retried (`lock_if_no_reader`) or falls back to the drain.
//!
//! # Status
//!
//! It wins where threads contend for short fixed sections (reads through `m` on ≈ 1 CPU) and
//! is level with the default rwsem or up to 10% behind where the lock is mostly free (a write
//! is four RMWs, `m`'s two and the count's two) or section lengths are random. **Not yet the
//! default**: (1) fairness at 32–96 threads, which is `m`'s queue rotation with every operation
//! in it (the owners that run without a turn for up to the window maximum make the spread;
//! also with the mode pinned); (2) the outside-load and random-length cells; (3) the C library
//! and the preload are not ported (the reads behind waiters their writer-preferring kind needs,
//! and `try_write_spin`, are in module `behind`); (4) one thread runs at 0.74× with 50% reads
//! and short sections. The measurements, the duel against each mode pinned and the variants
//! tried for fairness: `docs/experiments.md`, "The hybrid rw lock".

//! # Misuse
//!
//! `write_unlock`/`downgrade` by a thread that does not hold the write lock panic before
//! anything is written (a load of `m`'s owner and of `count`). A `read_unlock` with no read
//! held panics; it is detected by the old value of its `fetch_sub`, which is then undone, so
//! another thread may briefly see a corrupt count (and panic with an overflow message).

mod behind;
mod mode;
mod upgrade;
mod wait;

use crate::mutex::RawMutex;
use crate::policy::DefaultPolicy;
use crate::sync::{loom_const_fn, AtomicU32, AtomicU64, Ordering::*};

type State = u64;

const WANT: State = 1 << 0;
const LOCKED: State = 1 << 1;
const UPG: State = 1 << 2;
const READER: State = 1 << 8;
const READERS: State = 0x00FF_FF00;
const OVERFLOW: State = 1 << 31;
const OP: State = 1 << 32;
const OPS_SHIFT: u32 = 32;

/// Attempts of a writer's CAS on a lock with no shared reader (`lock_if_no_reader`): each
/// failure is another thread's RMW on `count`, and a reader's makes the next attempt see it.
const CAS_TRIES: u32 = 4;

const DRAIN_SLEEP: u32 = 1 << 0;
const EXCL: u32 = 1 << 1;

/// Reader count of a state.
#[inline(always)]
const fn readers(c: State) -> State {
    (c & READERS) >> 8
}

/// The hybrid rw lock (module doc). 48 bytes; all-zero is unlocked.
#[derive(Debug)]
pub struct RawHybridRwSem {
    /// Writers, and readers in the `EXCL` mode.
    m: RawMutex<DefaultPolicy>,
    /// `WANT`, `LOCKED`, shared readers, operation count (module doc table).
    count: AtomicU64,
    /// `DRAIN_SLEEP` and the mode (module doc table); a futex word.
    aux: AtomicU32,
    /// Reads taken through `m` this epoch (plain stores by `m`'s holder).
    xops: AtomicU32,
}

#[cfg(not(kslock_loom))]
const _: () = assert!(core::mem::size_of::<RawHybridRwSem>() == 48);

impl Default for RawHybridRwSem {
    fn default() -> Self {
        Self::new()
    }
}

impl RawHybridRwSem {
    loom_const_fn! {
        /// An unlocked lock (all-zero).
        pub fn new() -> Self {
            RawHybridRwSem {
                m: RawMutex::new(),
                count: AtomicU64::new(0),
                aux: AtomicU32::new(0),
                xops: AtomicU32::new(0),
            }
        }
    }

    /// Acquires a read lock: through `m` in the `EXCL` mode, else shared (module doc). A
    /// thread that holds `m` already (a read through it, or the upgradable lock) reads shared,
    /// so a nested read never waits for itself unless a writer waits (as in any rwsem).
    #[inline]
    pub fn read(&self) {
        if self.aux.load(Relaxed) & EXCL != 0 && self.read_through_m() {
            return;
        }
        self.read_shared(None);
    }

    /// A read in the `EXCL` mode: takes `m`, unless the upgradable holder or this thread
    /// holds it (`false`: the read is then a shared one). `m`'s free-lock CAS comes first and
    /// the checks only when it fails: a free `m` is held by neither (the uncontended read then
    /// costs about a mutex lock; `read_unlock` likewise makes `m`'s release CAS the test).
    #[inline]
    fn read_through_m(&self) -> bool {
        if !self.m.try_lock_free() {
            if self.count.load(Relaxed) & UPG != 0 || self.m.is_owned_by_current_thread() {
                return false;
            }
            self.m.lock();
        }
        self.count_excl_op();
        true
    }

    /// A shared read: the `fetch_add`, then, if a writer holds or drains the lock, the
    /// blocked reader's wait. `false` only past `deadline`.
    #[inline]
    fn read_shared(&self, deadline: Option<u64>) -> bool {
        let old = self.count.fetch_add(READER + OP, Acquire);
        if old & (WANT | LOCKED | OVERFLOW) != 0 {
            return self.read_blocked(old, deadline, false);
        }
        self.count_shared_op(old);
        true
    }

    /// Takes a shared read lock if no writer holds or waits for the lock. Never waits.
    #[inline]
    pub fn try_read(&self) -> bool {
        let old = self.count.fetch_add(READER + OP, Acquire);
        if old & (WANT | LOCKED | OVERFLOW) != 0 {
            self.drop_bias(old);
            return false;
        }
        true
    }

    /// Acquires a read lock, giving up at `timeout` from now.
    pub fn try_read_for(&self, timeout: std::time::Duration) -> bool {
        self.read_shared(Some(crate::sys::deadline_after(timeout)))
    }

    /// Acquires a read lock, giving up at `deadline`.
    pub fn try_read_until(&self, deadline: std::time::Instant) -> bool {
        self.read_shared(Some(crate::sys::deadline_from_instant(deadline)))
    }

    /// A read lock that never blocks while the calling thread holds a read lock of this lock:
    /// it joins while a writer waits for readers (`WANT`) and waits only while a writer holds
    /// the lock (`LOCKED`). It overtakes waiting writers: use it for nesting.
    #[inline]
    pub fn read_recursive(&self) {
        let old = self.count.fetch_add(READER + OP, Acquire);
        if old & (LOCKED | OVERFLOW) != 0 {
            self.read_blocked(old, None, true);
        }
    }

    /// [`read_recursive`](Self::read_recursive) that gives up at `deadline` (monotonic ns);
    /// `None` = only if it need not wait.
    #[cfg_attr(kslock_loom, allow(dead_code))] // lock_api only
    fn read_recursive_until(&self, deadline: Option<u64>) -> bool {
        let old = self.count.fetch_add(READER + OP, Acquire);
        if old & (LOCKED | OVERFLOW) == 0 {
            return true;
        }
        match deadline {
            Some(_) => self.read_blocked(old, deadline, true),
            None => {
                self.drop_bias(old);
                false
            }
        }
    }

    /// Releases a read lock (either kind).
    ///
    /// # Safety
    /// The calling thread holds a read lock of this lock.
    #[inline]
    pub unsafe fn read_unlock(&self) {
        // In the `EXCL` mode, with neither `UPG` nor `LOCKED` set (a read then is a shared
        // one, or a misuse), `m`'s release CAS is the test: no load of `m`'s word before it
        // (one line transfer when the lock moves between CPUs). A thread that does not hold
        // `m` holds a shared read.
        let cas_first =
            self.aux.load(Relaxed) & EXCL != 0 && self.count.load(Relaxed) & (UPG | LOCKED) == 0;
        if cas_first && self.m.unlock_if_owned() {
            return;
        }
        if !cas_first && self.holds_m_for_read() {
            // SAFETY: held by this thread (checked).
            unsafe { self.m.unlock() };
            return;
        }
        if readers(self.remove_bias()) == 0 {
            self.count.fetch_add(READER, Relaxed);
            panic!("read_unlock of a kslock hybrid rwsem that is not read-locked");
        }
    }

    /// Is the calling thread's read one through `m`? It holds `m`, and `m` is neither its
    /// write lock (a misuse: panics) nor its upgradable lock (its read is then a shared one:
    /// reads do not take `m` while `UPG` is set).
    #[inline]
    fn holds_m_for_read(&self) -> bool {
        if !self.m.is_owned_by_current_thread() {
            return false;
        }
        let c = self.count.load(Relaxed);
        if c & LOCKED != 0 {
            panic!("read_unlock by the writer of a kslock hybrid rwsem");
        }
        c & UPG == 0
    }

    /// Acquires the write lock.
    #[inline]
    pub fn write(&self) {
        self.m.lock();
        self.write_held_m(None);
    }

    /// Takes the write lock only if nobody holds the lock and `m` is free. Never waits.
    pub fn try_write(&self) -> bool {
        if !self.m.try_lock() {
            return false;
        }
        if self.lock_if_no_reader() {
            return true;
        }
        // SAFETY: locked just above by this thread.
        unsafe { self.m.unlock() };
        false
    }

    /// With `m` held: take the write lock in one CAS if no shared reader is counted. A CAS
    /// that fails while the fresh value still shows no reader (only the operation count
    /// moved: a reader came and went, or the mode check restarted the count) is tried again,
    /// at most [`CAS_TRIES`] times in all, so `try_write` does not fail on a free lock for
    /// that.
    #[inline]
    fn lock_if_no_reader(&self) -> bool {
        let mut c = self.count.load(Relaxed);
        for _ in 0..CAS_TRIES {
            if readers(c) != 0 {
                return false;
            }
            match self.count.compare_exchange(
                c,
                c.wrapping_add(WANT + LOCKED + OP),
                Acquire,
                Relaxed,
            ) {
                Ok(old) => {
                    self.count_shared_op(old);
                    return true;
                }
                Err(x) => c = x,
            }
        }
        false
    }

    /// Acquires the write lock, giving up at `timeout` from now.
    pub fn try_write_for(&self, timeout: std::time::Duration) -> bool {
        self.write_timed(crate::sys::deadline_after(timeout))
    }

    /// Acquires the write lock, giving up at `deadline`.
    pub fn try_write_until(&self, deadline: std::time::Instant) -> bool {
        self.write_timed(crate::sys::deadline_from_instant(deadline))
    }

    fn write_timed(&self, deadline: u64) -> bool {
        self.m.lock_until(deadline) && self.write_held_m(Some(deadline))
    }

    /// With `m` held: raise `WANT`, wait for the shared readers, take `LOCKED`. `false` (with
    /// `m` released and `WANT` dropped) only past `deadline`.
    #[inline]
    fn write_held_m(&self, deadline: Option<u64>) -> bool {
        if self.lock_if_no_reader() {
            return true;
        }
        self.raise_want();
        self.drain(deadline, false)
    }

    /// With `m` held: raise `WANT` (no new shared reader joins), counting a write.
    fn raise_want(&self) {
        let old = self.count.fetch_add(WANT + OP, Acquire);
        self.count_shared_op(old);
    }

    /// Releases the write lock.
    ///
    /// # Safety
    /// The calling thread holds the write lock.
    #[inline]
    pub unsafe fn write_unlock(&self) {
        self.check_writer("write_unlock");
        // Release pairs with the next reader's or writer's Acquire.
        self.count.fetch_sub(WANT + LOCKED, Release);
        // SAFETY: the writer holds `m` (checked).
        unsafe { self.m.unlock() };
    }

    /// Releases the write lock, handing `m` to its head waiter if anyone waits.
    ///
    /// # Safety
    /// The calling thread holds the write lock.
    pub unsafe fn write_unlock_fair(&self) {
        self.check_writer("write_unlock");
        self.count.fetch_sub(WANT + LOCKED, Release);
        // SAFETY: as in `write_unlock`.
        unsafe { self.m.unlock_fair() };
    }

    /// Releases a read lock; a read held through `m` hands `m` to its head waiter.
    ///
    /// # Safety
    /// The calling thread holds a read lock of this lock.
    pub unsafe fn read_unlock_fair(&self) {
        if self.holds_m_for_read() {
            // SAFETY: held by this thread (checked).
            unsafe { self.m.unlock_fair() };
        } else {
            // SAFETY: forwarded.
            unsafe { self.read_unlock() };
        }
    }

    /// Turns the write lock into a shared read lock without letting a writer in between.
    ///
    /// # Safety
    /// The calling thread holds the write lock.
    pub unsafe fn downgrade(&self) {
        self.check_writer("downgrade");
        // One RMW: add a reader bias, drop WANT and LOCKED (both set). Release: readers that
        // join next see the writer's data.
        self.count
            .fetch_add(READER.wrapping_sub(WANT + LOCKED), Release);
        // SAFETY: the writer holds `m`.
        unsafe { self.m.unlock() };
    }

    pub(super) fn check_writer(&self, what: &str) {
        if !self.m.is_owned_by_current_thread() || self.count.load(Relaxed) & LOCKED == 0 {
            panic!("{what} of a kslock hybrid rwsem by a thread that does not hold its write lock");
        }
    }

    /// Is the lock held in any mode (a hint)?
    pub fn is_locked(&self) -> bool {
        readers(self.count.load(Relaxed)) != 0 || self.m.is_locked()
    }

    /// Does a writer hold the lock (a hint)?
    pub fn is_write_locked(&self) -> bool {
        self.count.load(Relaxed) & LOCKED != 0
    }

    /// Does anybody wait for `m` (a hint)?
    pub fn has_waiters(&self) -> bool {
        self.m.has_waiters()
    }

    /// Are reads currently taken through `m` (the mode; a hint, for tests and lockbench)?
    pub fn reads_exclusive(&self) -> bool {
        self.aux.load(Relaxed) & EXCL != 0
    }
}

#[cfg(not(kslock_loom))]
mod api;
#[cfg(not(kslock_loom))]
pub use api::{
    HybridRwSem, HybridRwSemReadGuard, HybridRwSemUpgradableReadGuard, HybridRwSemWriteGuard,
};

#[cfg(all(test, not(kslock_loom)))]
mod tests;
