//! Per-thread records (`ThreadRec`): identity, parking and the OSQ nodes of every thread that
//! uses kslock.
//!
//! A lock's owner word names its owner by `ThreadRec` address, the OSQ tail and links name
//! nodes by record id, and spinners and wakers read other threads' records at any time — also
//! after the thread has exited. So records are **type-stable**: they live in a pool that is never
//! freed; a record whose thread exited goes back on a free list and is reused by a later thread.
//! Reading a stale record is always memory-safe; at worst it gives a stale *hint* (the spin
//! oracle re-checks the lock word, a wake of a reused record is a tolerated spurious wakeup).
//!
//! The first [`SEG_LEN`] records are one static segment, so no allocation happens for the first
//! 64 live threads; beyond that the pool grows by a leaked segment of 64 records, once per 64
//! threads, never on a lock path that already has its record.
//!
//! # Parker state (`ThreadRec::park`)
//!
//! | value      | meaning                                   | set by              |
//! |------------|-------------------------------------------|---------------------|
//! | `EMPTY`    | no token, not sleeping                    | the thread (consume) |
//! | `NOTIFIED` | a wake token is pending                   | any waker (`unpark`) |
//! | `PARKED`   | the thread sleeps (or is about to) on it  | the thread           |
//!
//! A token may be stale (a waker from an earlier wait): every caller of [`ThreadRec::park`]
//! re-checks its own condition and parks again, exactly as a kernel task tolerates a wake_q
//! wakeup that arrives after it stopped waiting.
//!
//! # `parked` flag
//!
//! `1` while the thread is inside any futex wait made by kslock (parker or wait_lock), else `0`.
//! Written only by the thread itself; read by the spin oracle ([`crate::spin`]).

use crate::sync::{loom_const_fn, AtomicU32, Ordering::*};
use crate::sys::{self, Deadline, TimedOut};

/// Parker: no token.
const EMPTY: u32 = 0;
/// Parker: a wake token is pending.
const NOTIFIED: u32 = 1;
/// Parker: the thread sleeps on `park`.
const PARKED: u32 = 2;

/// Records per pool segment.
pub(crate) const SEG_LEN: usize = 64;
/// Segments in the pool table: at most `SEG_LEN * SEGS` threads alive at once.
const SEGS: usize = 1024;

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

/// The record of one thread. See the module doc for the state tables.
#[repr(C, align(128))]
pub(crate) struct ThreadRec {
    /// Parker state (`EMPTY`/`NOTIFIED`/`PARKED`); the futex word of `park`.
    park: AtomicU32,
    /// 1 while the thread sleeps in a kslock futex wait; read by spinners.
    parked: AtomicU32,
    /// The CPU the thread last reported (a hint for the spin oracle).
    pub(crate) cpu: AtomicU32,
    /// Stable id, `>= 1`; `id` names this record in OSQ words. Immutable after creation.
    id: u32,
    /// OSQ node used by `Packed` queues.
    pub(crate) osq_packed: PackedNode,
    /// OSQ node used by `SplitIdLine` queues.
    pub(crate) osq_split: SplitNode,
}

impl ThreadRec {
    loom_const_fn! {
        fn new(id: u32) -> Self {
            ThreadRec {
                park: AtomicU32::new(EMPTY),
                parked: AtomicU32::new(0),
                cpu: AtomicU32::new(0),
                id,
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

    /// The record's address as a lock owner word (128-byte aligned: the low 7 bits are free
    /// for flags).
    #[inline]
    pub(crate) fn as_owner(&'static self) -> usize {
        self as *const ThreadRec as usize
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
        self.note_cpu();
        r
    }

    /// Sleeps until a wake token arrives (possibly a stale one) or `deadline` passes. Only the
    /// thread itself calls this. `Ok` means a token was consumed; callers re-check their
    /// condition either way.
    pub(crate) fn park(&self, deadline: Deadline) -> Result<(), TimedOut> {
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

// ---------------------------------------------------------------------------------------------
// The pool (native build): a static first segment, leaked segments after it, a free list.
// ---------------------------------------------------------------------------------------------
#[cfg(not(kslock_loom))]
mod pool {
    use super::{ThreadRec, SEGS, SEG_LEN};
    use core::sync::atomic::{AtomicPtr, AtomicU32, Ordering::*};
    use std::cell::Cell;
    use std::sync::Mutex;

    type Seg = [ThreadRec; SEG_LEN];

    static SEG0: Seg = {
        let mut i = 0;
        // Ids are index + 1 so that 0 can mean "none" in OSQ words.
        let mut seg = [const { ThreadRec::new(0) }; SEG_LEN];
        while i < SEG_LEN {
            seg[i] = ThreadRec::new(i as u32 + 1);
            i += 1;
        }
        seg
    };
    /// Segment table; entry 0 is `SEG0`, later entries are leaked boxes published with Release
    /// (pairs with the Acquire load in `by_id`).
    static TABLE: [AtomicPtr<Seg>; SEGS] = [const { AtomicPtr::new(core::ptr::null_mut()) }; SEGS];
    /// Records handed out so far (the high-water mark) and the free list of returned ids.
    static ALLOC: Mutex<(u32, Vec<u32>)> = Mutex::new((0, Vec::new()));
    /// Live records (for tests and the docs' "threads alive" figure).
    pub(crate) static LIVE: AtomicU32 = AtomicU32::new(0);

    thread_local! {
        static CURRENT: Cell<*const ThreadRec> = const { Cell::new(core::ptr::null()) };
        static RELEASE: Releaser = const { Releaser(Cell::new(0)) };
    }

    /// Returns the record to the free list when its thread exits.
    struct Releaser(Cell<u32>);
    impl Drop for Releaser {
        fn drop(&mut self) {
            let id = self.0.get();
            if id != 0 {
                let _ = CURRENT.try_with(|c| c.set(core::ptr::null()));
                LIVE.fetch_sub(1, Relaxed);
                ALLOC.lock().unwrap_or_else(|e| e.into_inner()).1.push(id);
            }
        }
    }

    /// The record with id `id` (`1..=` high-water mark). Never fails for an id that was handed
    /// out; records are never freed.
    #[inline]
    pub(crate) fn by_id(id: u32) -> &'static ThreadRec {
        let i = id as usize - 1;
        let (s, k) = (i / SEG_LEN, i % SEG_LEN);
        if s == 0 {
            return &SEG0[k];
        }
        let seg = TABLE[s].load(Acquire);
        debug_assert!(
            !seg.is_null(),
            "OSQ named a thread record that was never created"
        );
        // SAFETY: segment pointers are published before any id inside them is handed out, and
        // segments are leaked, so the reference is valid for 'static.
        unsafe { &(*seg)[k] }
    }

    /// The calling thread's record, registering the thread on first use.
    #[inline]
    pub(crate) fn current() -> &'static ThreadRec {
        let p = CURRENT.with(|c| c.get());
        if !p.is_null() {
            // SAFETY: CURRENT only ever holds pointers to pool records, which live forever.
            return unsafe { &*p };
        }
        register()
    }

    #[cold]
    fn register() -> &'static ThreadRec {
        let id = {
            let mut a = ALLOC.lock().unwrap_or_else(|e| e.into_inner());
            match a.1.pop() {
                Some(id) => id,
                None => {
                    let id = a.0 + 1;
                    let s = (id as usize - 1) / SEG_LEN;
                    assert!(
                        s < SEGS,
                        "kslock: more than {} threads alive at once",
                        SEGS * SEG_LEN
                    );
                    if s > 0 && TABLE[s].load(Relaxed).is_null() {
                        let base = (s * SEG_LEN) as u32 + 1;
                        let seg: Box<Seg> =
                            Box::new(core::array::from_fn(|k| ThreadRec::new(base + k as u32)));
                        TABLE[s].store(Box::into_raw(seg), Release);
                    }
                    a.0 = id;
                    id
                }
            }
        };
        let rec = by_id(id);
        rec.note_cpu();
        LIVE.fetch_add(1, Relaxed);
        // If the thread is already tearing down its TLS, the record is simply never returned.
        let _ = RELEASE.try_with(|r| r.0.set(id));
        let _ = CURRENT.try_with(|c| c.set(rec));
        rec
    }
}

// ---------------------------------------------------------------------------------------------
// The pool under loom: one leaked record per model thread, per execution.
// ---------------------------------------------------------------------------------------------
#[cfg(kslock_loom)]
mod pool {
    use super::ThreadRec;
    use std::sync::Mutex;

    /// loom runs at most this many threads per model.
    const MAX: usize = 5;

    struct Pool {
        recs: Vec<&'static ThreadRec>,
        owners: Vec<loom::thread::ThreadId>,
    }

    // Every record is created inside the lazy_static initialiser: loom synchronises the init
    // with every later access, so creating a record happens-before any thread reads it (also
    // through a lock's owner word). Keyed by loom's thread id, not a loom thread_local: the
    // model's main thread may keep thread-locals across executions.
    loom::lazy_static! {
        static ref POOL: Mutex<Pool> = Mutex::new(Pool {
            recs: (1..=MAX as u32).map(|id| &*Box::leak(Box::new(ThreadRec::new(id)))).collect(),
            owners: Vec::new(),
        });
    }

    pub(crate) fn by_id(id: u32) -> &'static ThreadRec {
        POOL.lock().unwrap().recs[id as usize - 1]
    }

    pub(crate) fn current() -> &'static ThreadRec {
        let tid = loom::thread::current().id();
        let mut p = POOL.lock().unwrap();
        let i = match p.owners.iter().position(|t| *t == tid) {
            Some(i) => i,
            None => {
                p.owners.push(tid);
                p.owners.len() - 1
            }
        };
        p.recs[i]
    }
}

pub(crate) use pool::{by_id, current};

#[cfg(all(test, not(kslock_loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn records_are_stable_per_thread_and_reused_after_exit() {
        let a = current();
        assert!(core::ptr::eq(a, current()));
        assert!(core::ptr::eq(a, by_id(a.id())));
        let other = std::thread::spawn(|| current().id()).join().unwrap();
        assert_ne!(other, a.id());
        // The exited thread's id goes back on the free list and a new thread gets one of the
        // free ids (another test may take it concurrently, so accept any returned id).
        let again = std::thread::spawn(|| current().id()).join().unwrap();
        assert!(again >= 1);
        assert!(pool::LIVE.load(Relaxed) >= 1);
    }

    #[test]
    fn pool_grows_past_the_static_segment() {
        let barrier = Arc::new(std::sync::Barrier::new(SEG_LEN + 9));
        let hs: Vec<_> = (0..SEG_LEN + 8)
            .map(|_| {
                let b = barrier.clone();
                std::thread::spawn(move || {
                    let r = current();
                    b.wait();
                    (r.id(), r as *const ThreadRec as usize)
                })
            })
            .collect();
        barrier.wait();
        let mut ids: Vec<_> = hs.into_iter().map(|h| h.join().unwrap()).collect();
        for (id, addr) in &ids {
            assert_eq!(by_id(*id) as *const ThreadRec as usize, *addr);
            assert_eq!(addr % 128, 0);
        }
        ids.sort();
        ids.dedup_by_key(|x| x.0);
        assert_eq!(ids.len(), SEG_LEN + 8, "live threads never share a record");
    }

    #[test]
    fn unpark_before_park_is_not_lost_and_park_times_out() {
        let me = current();
        me.unpark();
        assert_eq!(me.park(None), Ok(()));
        let d = sys::now_ns() + 1_000_000;
        assert_eq!(me.park(Some(d)), Err(TimedOut));
        assert!(!me.is_parked());
    }

    #[test]
    fn unpark_wakes_a_parked_thread_and_parked_flag_is_visible() {
        let (tx, rx) = std::sync::mpsc::channel();
        let h = std::thread::spawn(move || {
            let me = current();
            tx.send(me.id()).unwrap();
            me.park(None).unwrap();
        });
        let rec = by_id(rx.recv().unwrap());
        let t0 = std::time::Instant::now();
        while !rec.is_parked() {
            assert!(t0.elapsed().as_secs() < 10, "thread never parked");
            std::thread::yield_now();
        }
        rec.unpark();
        h.join().unwrap();
    }
}
