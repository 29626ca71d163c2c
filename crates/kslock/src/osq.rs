//! The optimistic spin queue (OSQ): an MCS-style queue that lets exactly one spinner per lock
//! poll the lock word, so that spinners do not stampede the owner's cache line
//! (`docs/kernel-locks.md` C). Spinners queue here; the queue head spins on the lock; everyone
//! else spins on a flag in its own node. Any queued spinner may leave (unqueue) when its
//! predecessor stops running or its budget is spent.
//!
//! Bounds: one poller per lock (rule R4 of [`crate::spin`]); at most online CPUs − 1 admitted
//! spinners per lock (the admission count, below), so a spinner never takes the CPU the owner
//! needs; every wait in the queue runs under a [`crate::spin::Spin`] budget, and a wait for a
//! neighbour's unqueue step is a `protocol_wait`, which gives the CPU away every 64 steps.
//!
//! Nodes are per thread (in [`ThreadRec`], never freed) rather than per CPU: a user-space
//! spinner can be preempted, so two spinners may share a CPU, and a spinner never spins on two
//! queues at once (spinning never nests).
//!
//! # State
//!
//! | word | values | who writes |
//! |------|--------|------------|
//! | `tail` (in the lock) | 0 = empty; `id` = the record id (≥ 1) of the last node | xchg by joiners; CAS to 0 / to prev by the last node leaving |
//! | `node.next` | 0 or the successor's id | the successor (links itself); the node itself (unqueue steps A/B, unlock) |
//! | `node.prev` | the predecessor's id (valid while queued) | the node on entry; a leaving predecessor (step C) |
//! | `node.locked` | 1 = this node is the queue head (may poll the lock) | reset by the node on entry; set once by its predecessor |
//! | admitted spinners (the low half of the lock's [`SpinStats`] word) | spinners admitted, ≤ online CPUs − 1 | +1 on admission, −1 on unlock or abandon (not a kernel field: a kernel spinner runs with preemption off, so an OSQ never holds more spinners than CPUs; a user-space one can, and a spinner beyond `CPUs − 1` can only run by taking the CPU an owner or another spinner needs) |
//! | `node.cpu` | CPU the node's thread runs on; polled by the successor (seed S1) | the node's thread on entry: always (`Packed`) or only if changed (`SplitIdLine`) |
//!
//! # Memory orderings
//!
//! * `tail.swap` is AcqRel: Release publishes our reset node to whoever links behind us,
//!   Acquire pairs with the predecessor's Release swap so its node fields are visible.
//! * `prev.next = me` is a Release store after `node.prev = prev` (kernel: `smp_wmb`), so a
//!   predecessor that reads `next` and then rewrites our `prev` in its step C cannot be
//!   overwritten by our own older store.
//! * `locked = 1` (unlock/grant) is Release and pairs with the Acquire load in the waiting
//!   loop / step A; the OSQ is only a throttle (the real lock is taken with an acquire CAS), but
//!   acquire keeps the handover obvious.
//! * unlock's `tail` CAS is Release, pairs with the next joiner's Acquire swap.
//! * Writes to `node.next` by a neighbour (linking in, step C) are `swap`s, not stores. Both are
//!   correct in C11 (the kernel uses `WRITE_ONCE`), but loom 0.7 may place a plain store before a
//!   concurrent RMW of the same word in modification order after that RMW already read the older
//!   value, which breaks RMW atomicity in its model and shows up as a livelock in step A/B. The
//!   swap is on the spinner-joining slow path and costs one locked instruction.

use crate::chaos::{self, Site};
use crate::policy::OsqLayout;
use crate::spin::{protocol_wait, Spin, SpinStats, Stop};
use crate::sync::{loom_const_fn, AtomicU32, Ordering::*};
use crate::thread::{self, by_id, ThreadRec};

/// Borrowed fields of a node in either layout.
struct Node<'a> {
    next: &'a AtomicU32,
    prev: &'a AtomicU32,
    locked: &'a AtomicU32,
    cpu: &'a AtomicU32,
}

#[inline(always)]
fn node(rec: &ThreadRec, layout: OsqLayout) -> Node<'_> {
    match layout {
        OsqLayout::Packed => {
            let n = &rec.osq_packed;
            Node {
                next: &n.next,
                prev: &n.prev,
                locked: &n.locked,
                cpu: &n.cpu,
            }
        }
        OsqLayout::SplitIdLine => {
            let n = &rec.osq_split;
            Node {
                next: &n.next,
                prev: &n.prev,
                locked: &n.locked,
                cpu: &n.cpu,
            }
        }
    }
}

/// The queue: one word in the lock (the admission count lives in the lock's [`SpinStats`]).
/// All-zero = empty.
#[derive(Debug)]
#[repr(transparent)]
pub(crate) struct Osq {
    tail: AtomicU32,
}

/// Most spinners one OSQ admits: the CPUs this process may run on − 1 (one CPU is left for
/// the owner), at least 1. `KSLOCK_OSQ_SPINNERS=<n>` overrides it (read once; for experiments,
/// and for tests that need the admission of a machine with more CPUs).
///
/// The CPUs are counted from the affinity mask (one `sched_getaffinity` syscall), not with
/// `std::thread::available_parallelism`, which also opens `/proc/self/cgroup`: an `open` is a
/// pthread cancellation point, and this runs inside lock paths, so under the pthread preload a
/// thread cancelled in `pthread_cond_wait` acted on it while waiting for the mutex and ran its
/// cleanup handlers without holding it (the Open POSIX Test Suite's `pthread_cond_wait/2-3`,
/// under load).
fn max_spinners() -> u32 {
    #[cfg(not(kslock_loom))]
    {
        use core::sync::atomic::{AtomicU32 as StdU32, Ordering as O};
        static MAX: StdU32 = StdU32::new(0);
        let m = MAX.load(O::Relaxed);
        if m != 0 {
            return m;
        }
        let cpus = affinity_cpus();
        let m = crate::ablate::tunable("OSQ_SPINNERS")
            .map(|v| v.min(u32::MAX as u64) as u32)
            .unwrap_or(cpus.saturating_sub(1))
            .max(1);
        MAX.store(m, O::Relaxed);
        m
    }
    #[cfg(kslock_loom)]
    {
        8 // loom models have at most 3 spinners; admission is plain counting
    }
}

/// How many CPUs the affinity mask of this thread allows (1 if it cannot be read). A plain
/// syscall: no cancellation point (see [`max_spinners`]).
#[cfg(not(kslock_loom))]
fn affinity_cpus() -> u32 {
    // SAFETY: an all-zero cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { core::mem::zeroed() };
    // SAFETY: `set` is a writable cpu_set_t of the size passed.
    let r =
        unsafe { libc::sched_getaffinity(0, core::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if r != 0 {
        return 1;
    }
    // SAFETY: `set` is an initialised cpu_set_t.
    unsafe { libc::CPU_COUNT(&set) }.max(1) as u32
}

impl Osq {
    loom_const_fn! {
        pub(crate) fn new() -> Self {
            Osq {
                tail: AtomicU32::new(0),
            }
        }
    }

    /// Is anyone queued (a spinner exists)? Relaxed: a hint (seed S0 `TrylockIfSpinner`).
    #[inline]
    pub(crate) fn has_spinner(&self) -> bool {
        self.tail.load(Relaxed) != 0
    }

    /// Joins the queue and waits to become its head. `true`: `me` is the head and must call
    /// [`Osq::unlock`]; `false`: the wait was abandoned (predecessor not running, budget spent)
    /// and `me` is no longer queued.
    pub(crate) fn lock(
        &self,
        me: &'static ThreadRec,
        layout: OsqLayout,
        spin: &mut Spin<'_>,
    ) -> bool {
        // Queue membership is a slow-path section: a fork never copies a half-linked queue.
        thread::slow_enter(me);
        let stats = spin.stats();
        if !stats.admit(max_spinners()) {
            me.slow_exit();
            return false;
        }
        if self.join(me, layout, spin) {
            return true;
        }
        stats.leave();
        me.slow_exit();
        false
    }

    /// `lock` after admission.
    fn join(&self, me: &'static ThreadRec, layout: OsqLayout, spin: &mut Spin<'_>) -> bool {
        let n = node(me, layout);
        let cpu = me.cpu.load(Relaxed);
        n.locked.store(0, Relaxed);
        n.next.store(0, Relaxed);
        match layout {
            OsqLayout::Packed => n.cpu.store(cpu, Relaxed),
            OsqLayout::SplitIdLine => {
                if n.cpu.load(Relaxed) != cpu {
                    n.cpu.store(cpu, Relaxed);
                }
            }
        }
        let old = self.tail.swap(me.id(), AcqRel);
        if old == 0 {
            return true;
        }
        chaos::point(Site::OsqJoined);
        n.prev.store(old, Relaxed);
        // An RMW, not a plain store (see "Memory orderings").
        node(by_id(old), layout).next.swap(me.id(), Release);

        // Wait for the grant while the predecessor runs and the budget lasts.
        loop {
            if n.locked.load(Acquire) != 0 {
                return true;
            }
            let pid = n.prev.load(Relaxed);
            let pred = by_id(pid);
            let pcpu = node(pred, layout).cpu.load(Relaxed);
            if let Err(Stop::Budget | Stop::OwnerNotRunning) = spin.step_behind(pred, pcpu) {
                break;
            }
        }
        chaos::point(Site::OsqUnqueue);
        self.unqueue(me, layout)
    }

    /// Leaves the queue (steps A, B, C of `docs/kernel-locks.md` C). Returns `true` if a grant
    /// won the race (then `me` is the head after all).
    #[cold]
    fn unqueue(&self, me: &'static ThreadRec, layout: OsqLayout) -> bool {
        let n = node(me, layout);
        let mut i = 0;
        // Step A: unlink from prev (`prev.next = 0`), unless a grant arrives first.
        let mut prev;
        loop {
            prev = n.prev.load(Relaxed);
            let pnext = node(by_id(prev), layout).next;
            if pnext.load(Relaxed) == me.id()
                && pnext.compare_exchange(me.id(), 0, Relaxed, Relaxed).is_ok()
            {
                break;
            }
            // Acquire pairs with the Release grant in `unlock`.
            if n.locked.load(Acquire) != 0 {
                return true;
            }
            protocol_wait(&mut i);
        }
        // Step B: stabilise next (or become the tail's old value again).
        let next = match self.wait_next(me, layout, prev) {
            None => return false,
            Some(next) => next,
        };
        // Step C: link prev and next; `next` is stuck in its step A (its prev.next is 0).
        node(by_id(next), layout).prev.store(prev, Relaxed);
        node(by_id(prev), layout).next.swap(next, Release);
        false
    }

    /// Step B / unlock helper: returns our successor after detaching it from our node, or
    /// `None` after moving `tail` from us back to `prev_id` (0 when unlocking).
    fn wait_next(&self, me: &'static ThreadRec, layout: OsqLayout, prev_id: u32) -> Option<u32> {
        let n = node(me, layout);
        let mut i = 0;
        loop {
            // Acquire pairs with the next joiner's AcqRel swap: if it is not us anymore, a
            // successor exists and will link itself into `n.next`.
            if self.tail.load(Relaxed) == me.id()
                && self
                    .tail
                    .compare_exchange(me.id(), prev_id, AcqRel, Relaxed)
                    .is_ok()
            {
                return None;
            }
            if n.next.load(Relaxed) != 0 {
                let next = n.next.swap(0, Acquire);
                if next != 0 {
                    return Some(next);
                }
            }
            protocol_wait(&mut i);
        }
    }

    /// Leaves the head position, granting it to the successor if there is one. `stats` is the
    /// spin word the head was admitted through.
    pub(crate) fn unlock(&self, me: &'static ThreadRec, layout: OsqLayout, stats: &SpinStats) {
        chaos::point(Site::OsqUnlock);
        stats.leave();
        if self
            .tail
            .compare_exchange(me.id(), 0, Release, Relaxed)
            .is_ok()
        {
            me.slow_exit();
            return;
        }
        let n = node(me, layout);
        let next = match n.next.swap(0, Acquire) {
            0 => self.wait_next(me, layout, 0),
            id => Some(id),
        };
        if let Some(next) = next {
            // Release pairs with the Acquire loads of `locked` in `lock` and step A.
            node(by_id(next), layout).locked.store(1, Release);
        }
        me.slow_exit();
    }
}

#[cfg(all(test, not(kslock_loom)))]
mod tests {
    use super::*;
    use crate::spin::SpinStats;
    use crate::thread::current;
    use std::sync::atomic::{AtomicBool, AtomicUsize};
    use std::sync::Arc;

    fn hammer(layout: OsqLayout) {
        // The OSQ head is exclusive: at most one thread between lock() == true and unlock().
        let q = Arc::new((
            Osq::new(),
            AtomicUsize::new(0),
            AtomicUsize::new(0),
            SpinStats::new(),
        ));
        let stop = Arc::new(AtomicBool::new(false));
        let hs: Vec<_> = (0..6)
            .map(|_| {
                let (q, stop) = (q.clone(), stop.clone());
                std::thread::spawn(move || {
                    let me = current();
                    let (mut got, mut gave_up) = (0, 0);
                    while !stop.load(Relaxed) {
                        let mut spin = Spin::new(&q.3, me);
                        if q.0.lock(me, layout, &mut spin) {
                            assert_eq!(q.1.fetch_add(1, Relaxed), 0, "two OSQ heads");
                            for _ in 0..20 {
                                core::hint::spin_loop();
                            }
                            q.1.fetch_sub(1, Relaxed);
                            q.0.unlock(me, layout, &q.3);
                            got += 1;
                        } else {
                            gave_up += 1;
                        }
                    }
                    q.2.fetch_add(got, Relaxed);
                    (got, gave_up)
                })
            })
            .collect();
        std::thread::sleep(std::time::Duration::from_millis(300));
        stop.store(true, Relaxed);
        for h in hs {
            h.join().unwrap();
        }
        assert!(q.2.load(Relaxed) > 0);
        assert_eq!(q.0.tail.load(Relaxed), 0, "queue empty at the end");
    }

    #[test]
    fn osq_head_is_exclusive_packed() {
        hammer(OsqLayout::Packed);
    }

    #[test]
    fn osq_head_is_exclusive_split() {
        hammer(OsqLayout::SplitIdLine);
    }
}

#[cfg(all(test, kslock_loom))]
mod loom_tests {
    use super::*;
    use crate::spin::SpinStats;
    use crate::thread::current;
    use loom::sync::atomic::AtomicUsize;
    use loom::sync::Arc;

    /// The queue, the count of heads inside, the spin statistics.
    type Q = (Osq, AtomicUsize, SpinStats);

    /// One spinner: join, and as head check it is the only one, then release.
    fn spin_once(q: &Q, layout: OsqLayout) {
        let me = current();
        let mut spin = Spin::new(&q.2, me);
        if q.0.lock(me, layout, &mut spin) {
            assert_eq!(q.1.fetch_add(1, Relaxed), 0, "two OSQ heads");
            q.1.fetch_sub(1, Relaxed);
            q.0.unlock(me, layout, &q.2);
        }
    }

    /// Three spinners join, possibly abandon (each `Spin` lasts 3 steps under loom, so step A/B/C
    /// unqueues happen), and release: at most one head at a time, and the queue ends empty.
    ///
    /// Explored with at most [`THREE_SPINNER_PREEMPTIONS`] preemptions whatever
    /// `LOOM_MAX_PREEMPTIONS` says: with three, some schedule keeps two unqueuers' step A/B
    /// loops re-reading values loom keeps stale and passes loom's branch limit (even raised to
    /// 20 000); the two-spinner models run at the full bound.
    fn model(layout: OsqLayout) {
        let mut b = loom::model::Builder::new();
        b.preemption_bound = Some(b.preemption_bound.map_or(THREE_SPINNER_PREEMPTIONS, |p| {
            p.min(THREE_SPINNER_PREEMPTIONS)
        }));
        // `Builder::check` logs nothing (only `loom::model` installs loom's logger): count the
        // executions here, in the line `scripts/loom-iterations.sh` reads.
        let runs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let n = runs.clone();
        b.check(move || {
            n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let q = Arc::new((Osq::new(), AtomicUsize::new(0), SpinStats::new()));
            let run = move |q: Arc<Q>| spin_once(&q, layout);
            let hs: Vec<_> = (0..2)
                .map(|_| {
                    let q = q.clone();
                    loom::thread::spawn(move || run(q))
                })
                .collect();
            run(q.clone());
            for h in hs {
                h.join().unwrap();
            }
            assert_eq!(q.0.tail.load(Relaxed), 0, "queue not empty at the end");
        });
        eprintln!(
            "Completed in {} iterations",
            runs.load(std::sync::atomic::Ordering::Relaxed)
        );
    }

    /// The preemption bound of the three-spinner models (see [`model`]).
    const THREE_SPINNER_PREEMPTIONS: usize = 2;

    #[test]
    fn loom_osq_split() {
        model(OsqLayout::SplitIdLine);
    }

    /// Two spinners, at the full preemption bound.
    fn two(layout: OsqLayout) {
        loom::model(move || {
            let q = Arc::new((Osq::new(), AtomicUsize::new(0), SpinStats::new()));
            let q2 = q.clone();
            let h = loom::thread::spawn(move || spin_once(&q2, layout));
            spin_once(&q, layout);
            h.join().unwrap();
            assert_eq!(q.0.tail.load(Relaxed), 0, "queue not empty at the end");
        });
    }

    #[test]
    fn loom_osq_packed_two_threads() {
        two(OsqLayout::Packed);
    }

    #[test]
    fn loom_osq_split_two_threads() {
        two(OsqLayout::SplitIdLine);
    }
}
