//! A reader-writer lock built on kslock's mutex: writers (and, when the lock measures that it
//! pays, readers too) go through the mutex with all of its machinery (quick poll, OSQ spin,
//! yields, FIFO queue, fairness windows and owner-timed turns); readers share the lock through
//! a count word when sharing pays. Experimental (issue 11): not yet the default `RwSem`.
//!
//! # Why
//!
//! On the 2-CPU development machine, with more threads than CPUs, kslock's rwsem ran its 8+
//! thread cells of the default matrix *below its own one-thread rate* wherever the sections
//! were short (50% reads, CS load 1: 18.2k kops/s on 2 CPUs against 31.2k alone; 90% reads,
//! CS load 20: 7.8k against 9.8k): every shared read is two RMWs on the count word, and two
//! CPUs doing them move its cache line at every operation. glibc's rwlock won those cells by
//! sleeping its losers and running one thread on one CPU. kslock's mutex already does that on
//! purpose (its turns), and a scratch build that ran every read through the mutex beat the
//! best peer in 7 of the 9 cells at 8 and 32 threads (module doc, "Measured") but lost the
//! long read sections, where readers sharing the lock on both CPUs is worth 1.25–1.33×. So
//! the lock runs reads both ways and picks by measurement ("Mode").
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
//! **Fairness** is the mutex's (module doc of [`crate::mutex`], "Fairness"): writers and
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
//! # Measured (session 26, the 2-vCPU Intel guest)
//!
//! One invocation with the default run's rwsem cells and the hybrid beside the default rwsem
//! (`lockbench matrix --locks kslock-rwsem-hybrid,kslock-rwsem,std-rwlock,parking-lot-rwlock,pthread-rwlock
//! --threads 1,2,8,32,96 --cs-load 1,20,100 --read-pct 50,90 --secs 0.4 --warmup 0.08
//! --repeat 3`, commit `0690652`, medians of 3 interleaved repeats), each ÷ the best peer:
//!
//! | family | geo-mean, threads ≥ 2 / ≥ 8 | won | CPU ns/op ÷ best peer | STARVED at 8+ | worst p99.9 |
//! |---|---|---|---|---|---|
//! | hybrid, 50% reads | 1.22x / 1.18x | 9/12 | 0.77x | 5/9 | 10.49 ms |
//! | default rwsem, 50% reads | 1.02x / 1.06x | 3/12 | 1.44x | 2/9 | 0.66 ms |
//! | hybrid, 90% reads | 1.12x / 1.03x | 7/12 | 0.98x | 6/9 | 11.53 ms |
//! | default rwsem, 90% reads | 0.88x / 0.86x | 4/12 | 1.88x | 2/9 | 0.52 ms |
//!
//! Per cell (hybrid ÷ best peer; the default rwsem's ratio in brackets): 50% reads, CS load 1
//! at 2 / 8 / 32 / 96 threads 1.70 / 1.28 / 1.51 / 1.68 (0.88 / 1.09 / 1.35 / 1.68), CS load
//! 20 1.40 / 1.20 / 1.23 / 1.12 (0.83 / 0.89 / 0.96 / 0.92), CS load 100 1.01 / 0.93 / 0.92 /
//! 0.98 (1.00 / 0.96 / 0.96 / 0.98); 90% reads, CS load 1 2.70 / 1.03 / 0.95 / 0.94 (1.08 /
//! 0.62 / 0.60 / 0.64), CS load 20 1.22 / 1.04 / 0.98 / 0.93 (0.84 / 0.84 / 0.83 / 0.83), CS
//! load 100 0.85 / 1.19 / 1.14 / 1.15 (0.88 / 1.24 / 1.23 / 1.22). In the short-section cells
//! the hybrid ran reads through `m` on 1.03–1.22 CPUs (the default rwsem: 2.0); at 90% reads,
//! CS load 100, it chose shared reads (1.85–1.88 CPUs). One thread: 0.74–0.99 (a write is four
//! RMWs, `m`'s two and the count's two, against the default rwsem's two).
//!
//! Other workloads, one invocation each on `0690652`, kslock ÷ the best peer (hybrid; default
//! rwsem), same guest, nothing else running:
//!
//! | command | hybrid | default rwsem |
//! |---|---|---|
//! | `lockbench workload file --locks kslock-rwsem-hybrid,kslock-rwsem,parking-lot-rwlock,pthread-rwlock,std-rwlock --threads 2,8,32 --secs 0.5 --warmup 0.1 --repeat 3` (2 / 8 / 32 threads) | 1.63 / 1.22 / 0.95 (1.10–1.15 CPUs) | 0.92 / 0.82 / 0.66 |
//! | the same with `workload mmap` | 1.74 / 1.01 / 0.92 (1.05–1.14 CPUs) | 0.85 / 0.59 / 0.59 |
//! | `lockbench matrix` (those locks) `--threads 2,8,32,96 --cs-load 1,20,100 --outside-load 100 --read-pct 0,50,90 --secs 0.3 --warmup 0.1 --repeat 3`, geo-mean at ≥ 2 / ≥ 8 threads, 0% / 50% / 90% reads | 0.92 / 0.92, 0.91 / 0.90, 0.92 / 0.91; STARVED at 8+ 6/9 each; worst p99.9 9.4 / 21.0 / 31.5 ms | 0.91 / 0.89, 0.94 / 0.93, 1.03 / 1.02; STARVED 0/9, 4/9, 3/9 |
//! | `lockbench workload random` (those locks) `--threads 2,8,32,96 --outside-load 0,100 --read-pct 50,90 --secs 0.4 --warmup 0.1 --repeat 3`, geo-mean ≥ 2 / ≥ 8, 50% / 90% reads | 1.07 / 1.07, 0.97 / 0.95 | 1.07 / 1.09, 0.99 / 0.98 |
//!
//! So the gain is in the cells where threads contend for short fixed sections; with work
//! outside the lock (the lock mostly free) a write's four RMWs and the turnstile cost it up to
//! 10%, and with random section lengths it is level with the default rwsem.
//!
//! **Not yet the default**: (1) fairness at 32–96 threads: max/min per-thread operations
//! 2.0–10.1 over 0.4 s (the default rwsem 1.1–5.5) and a p99.9 wait of 4–11.5 ms (0.1–0.7
//! ms), 21–31 ms with outside work; also with the mode pinned to reads through `m` (96
//! threads, CS load 1: 8.2 / 7.9 at 50% / 90% reads), so it is `m`'s queue rotation with every
//! operation in it, not the duel's probes (over 1 s, lock-events build, 96 threads, 90% reads,
//! reads pinned through `m`: CS load 1 max/min 3.8, p99.9 12.6 ms; CS load 20 2.3, 11.5 ms —
//! kslock's mutex alone in the same run 2.5 / 4.2 ms and 2.7 / 15.7 ms); (2) the outside-load
//! and random-length cells above; (3) the C library and the preload are not ported (the reads
//! behind waiters their writer-preferring kind needs, and `try_write_spin`, are in module
//! `behind`); (4) one thread runs 0.74× at 50% reads, CS load 1.
//!
//! The duel against each mode pinned (`scripts/ab-ratio.py 1 "duel,sh=KSLOCK_HYBRID_READS:shared,ex=KSLOCK_HYBRID_READS:exclusive"
//! -- matrix --locks kslock-rwsem-hybrid,parking-lot-rwlock,pthread-rwlock --threads 2,8,32
//! --cs-load 1,20,100 --read-pct 50,90 --secs 0.25 --warmup 0.1`, hybrid ÷ best peer,
//! geo-mean of the 18 cells): duel 1.162, shared only 0.676, through `m` only 1.161. The duel
//! followed the better mode in every cell within ≈ 0.05 except 2 threads, 90% reads, CS load
//! 1 (2.26 against 2.54 pinned) and picked shared reads at 90% reads, CS load 100 (1.26 / 1.20
//! at 8 / 32 threads against 1.00 / 0.93 through `m`).
//!
//! **Where the unfairness comes from** (reads pinned through `m`, 1 s cells, `scripts/ab-ratio.py
//! 2 … -- matrix --locks kslock-rwsem-hybrid,pthread-rwlock --threads 32,96 --cs-load 1,20
//! --read-pct 50,90 --secs 1 --warmup 0.1`, two runs per side, medians; scratch switches):
//! max/min per-thread operations 1.6–5.5 and p99.9 0.7–9.4 ms as built; with the mutex's run
//! limit (an owner without a turn yields after the window maximum, 1 ms) at 250 µs instead,
//! 1.5–2.3 and 0.7–8.4 ms, but the geo-mean of kslock ÷ glibc fell 1.091 → 1.009 (96 threads,
//! CS load 1: −15%); with the window maximum itself at 250 µs (`KSLOCK_WINDOW_MAX_NS`),
//! 1.4–1.8 at 1.088 → 1.011; without the run limit (`KSLOCK_OFF=run_limit`) 2.5–10.8 at 1.13.
//! So the owners that run without a turn for up to the window maximum while 95 threads rotate
//! through ≈ 40 µs windows make the spread; a cheaper bound on them is the open lead.
//!
//! Session 27 narrowed that down. Sending an owner stopped by the run limit to the tail of
//! the queue at its next contended lock (instead of letting it barge back) changed neither the
//! spread nor the throughput (`docs/mutex-tried.md`, session 27), so the lone runs are not the
//! whole story. The duel's switching is not it either: with lock events (`hybrid_*`), 1 s
//! cells at 8 / 96 threads, CS load 1 and 100, 50 / 90% reads, the lock spent 88–98% of its
//! ≈ 500 epochs a second in one mode and ran 5–15 probes a second; and over 1 s each mode
//! pinned spreads on its own (`scripts/ab-ratio.py 1 "duel,ex=KSLOCK_HYBRID_READS:exclusive,sh=KSLOCK_HYBRID_READS:shared"
//! -- matrix --locks kslock-rwsem-hybrid,pthread-rwlock --threads 32,96 --cs-load 1,20,100
//! --read-pct 50,90 --secs 1 --warmup 0.1`): max/min through `m` 1.4–3.4 (3.0–3.4 at CS load 1
//! with 32–96 threads; kslock's mutex alone with no reads, 1.3–2.1 in the same kind of run),
//! shared 1.5–5.6, the duel 1.5–4.7 (4.6 and a 29 ms p99.9 at 96 threads, 90% reads, CS load
//! 100, where it runs shared). Geo-mean of kslock ÷ glibc there: duel 1.069, through `m` 1.087,
//! shared 0.672.
//!
//! Tried for the shared mode's fairness and dropped: a write unlock that hands `m` straight
//! to its head waiter while reads are shared (`unlock_fair`, no turn to wait out;
//! `scripts/ab-ratio.py 2`, `--threads 8,32,96 --cs-load 100 --read-pct 50,90 --secs 0.4`
//! against parking_lot's and glibc's rwlocks): geo-mean 1.049 → 0.901, max/min at 96 threads,
//! 90% reads 12.8 → 3.3 but 2.3 → 3.1 at 50%, p99.9 22.0 → 11.5 ms and 11.0 → 13.1 ms.
//! Session 27: a turnstile reader (it holds `m` for one RMW) that hands `m` to its head
//! waiter (`unlock_fair`) instead of a plain unlock: `scripts/ab-ratio.py 2 "on,off=KSLOCK_OFF:…"
//! -- matrix --locks kslock-rwsem-hybrid,pthread-rwlock,parking-lot-rwlock --threads
//! 32,96 --cs-load 20,100 --read-pct 50,90 --secs 1` gave 1.062 against 1.031 (96 threads,
//! 90% reads, CS load 100: p99.9 19.9 → 10.0 ms), but the same with `--threads 2,8,32,96
//! --cs-load 1,20,100 --secs 0.5` 1.152 against 1.161, max/min up and down by cell: dropped.
//!
//! The scratch prototype this design came from (every read through kslock's mutex, writers
//! through it plus a reader count; `--threads 2,8,32 --cs-load 1,20,100 --read-pct 0,50,90`,
//! one run) beat the best peer by 1.05–3.22× in the 50% and 90% cells at CS load 1 and 20 and
//! lost the 90% CS load 100 cells (0.67 / 1.01 / 0.95 at 2 / 8 / 32 threads, where the default
//! rwsem's shared readers reach 0.87 / 1.25 / 1.22); two changes to the default rwsem tried
//! first did not get there: reads as writes through the rwsem's own writer path (geo-mean of
//! 27 cells 0.922 against 0.919: its writers do not run one at a time), and a head writer that
//! sleeps out a fairness window instead of being woken by every unlock (0.843).
//!
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
    /// the checks only when it fails: a free `m` is held by neither (1-thread read + unlock
    /// 23.2 → 16.4 ns with the unlock's CAS first too, `read_unlock`; kslock's mutex: 14.0 ns).
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
