//! Spin budgets and the owner-running oracle: the one place that decides whether a spinner
//! keeps spinning. Every busy-wait in kslock (OSQ, mutex owner spinning, waiter spinning,
//! rwsem writer spinning, reader-owned spinning, `try_lock_spin`, the wait_lock) runs under a
//! [`Spin`] and asks it before each step.
//!
//! # Why
//!
//! The kernel spins while `owner_on_cpu(owner)` and stops on `need_resched()`. User space sees
//! neither, so kslock answers "is the owner running?" with the evidence it has:
//!
//! | rule | evidence | stop spinning when |
//! |------|----------|--------------------|
//! | R1 owner unchanged | the lock word | the owner (or state) the spinner waits on changes: the caller re-evaluates |
//! | R2 owner not parked | `ThreadRec::parked`, raised around every kslock futex wait | the owner sleeps in kslock (it holds this lock and waits for another) |
//! | R3 owner not on my CPU | `ThreadRec::cpu` (rseq cpu_id, refreshed on every slow-path event of the owner) | the owner last ran on the CPU this spinner occupies: it cannot be running, spinning only delays it |
//! | R4 one poller per lock | the OSQ ([`crate::osq`]) | (structural: only the OSQ head polls the lock word; the mutex head waiter is the one extra, as in the kernel) |
//! | R5 budget | ticks since the spin began, read every 16 steps | the time spent exceeds the lock's adaptive budget |
//! | R6 poll backoff | — | (not a stop rule) between two polls of the lock word under the same owner, wait 1, 2, 4 … up to 32 pauses: every poll pulls the lock's cache line away from the running owner (a cross-CPU round trip of 90–430 ns here), so polling every pause slows the owner the spinner waits for |
//!
//! # Budgets (R5)
//!
//! Each lock keeps one `u32` ([`SpinStats`]): an exponentially weighted average (weight 1/8) of
//! how long successful spins took, in ns. A spin's budget is `2 × avg + FLOOR_NS`, clamped to
//! `[FLOOR_NS, cap]`; a lock that has never been spun on starts at `cap / 2`. A spin that runs
//! out of budget halves the average (the hold times are longer than spinning pays for, or the
//! owner was preempted: both say "sleep sooner"). Only the OSQ head updates the average, so the
//! word has a single writer at a time and plain load/store suffice.
//!
//! The **cap** is calibrated once per process near the cost of a sleep/wake round trip. That
//! cost cannot be measured without a second thread, so kslock measures its floor: one
//! `FUTEX_WAKE` with no waiter (a kernel entry on the wake path; ≈ 166 ns on the 2-vCPU KVM
//! development machine, ≈ 60–100 ns on bare metal) and sets
//! `cap = clamp(CAP_SYSCALLS × syscall, 4 µs, 40 µs)` with `CAP_SYSCALLS = 120`: ≈ 20 µs on the
//! development VM, where a cross-CPU futex hand-over measured ≈ 30 µs, and ≈ 7–12 µs on bare
//! metal, where it is a few µs. `KSLOCK_SPIN_CAP_NS` overrides the cap (read once; for
//! experiments).
//!
//! Under loom every budget is 3 steps (the clock is frozen; loom explores the rest).

use crate::sync::{loom_const_fn, spin_hint, AtomicU32, Ordering::Relaxed};
use crate::sys;
use crate::thread::ThreadRec;

/// Smallest budget, ns: below this a spin cannot even cover one cache-line round trip plus a
/// short critical section.
pub(crate) const FLOOR_NS: u32 = 1_000;

/// How often a locker whose spin failed (a mutex locker or rwsem writer), or an rwsem reader
/// whose wait on the count failed, gives its CPU away (`sched_yield`) and tries again before it
/// queues (module docs of [`crate::mutex`] and [`crate::rwsem`], "Yield before queueing"). 4:
/// A/B on the 2-vCPU VM with 0, 2, 4, 8, 16 (rwsem, 50% and 90% reads, CS load 1/20/100, 2–96
/// threads): 0 left one CPU idle at 8+ threads (1.04–1.4 CPUs busy, 0.5–0.8× parking_lot); 2–8
/// kept both busy and were within noise of each other; 16 lost up to 20% at CS load 20.
/// parking_lot's `SpinWait` yields up to 7 times before it parks. None under loom (the yields
/// only delay the queueing, which the models cover).
pub(crate) const PRE_QUEUE_YIELDS: u32 = if cfg!(kslock_loom) { 0 } else { 4 };
/// Cap = this many no-waiter `FUTEX_WAKE`s (see module doc).
#[cfg_attr(kslock_loom, allow(dead_code))]
const CAP_SYSCALLS: u64 = 120;
/// Cap clamp, ns.
#[cfg_attr(kslock_loom, allow(dead_code))]
const CAP_MIN_NS: u64 = 4_000;
/// Cap clamp, ns.
#[cfg_attr(kslock_loom, allow(dead_code))]
const CAP_MAX_NS: u64 = 40_000;
/// The clock is read every this many steps (rdtsc ≈ 10 ns vs pause ≈ 27 ns).
const CLOCK_EVERY: u32 = 16;
/// Most pauses between two polls of an unchanged owner (≈ 0.9 µs at 27 ns a pause).
pub(crate) const MAX_POLL_PAUSES: u32 = 32;

/// The calibrated cap and the tick rate, computed once.
#[derive(Clone, Copy)]
struct Calib {
    cap_ns: u32,
    ticks_per_us: u64,
}

/// Computed once per process, in one atomic word (`cap_ns << 32 | ticks_per_us`; 0 = not yet):
/// threads that race on the first use both compute it and store the same kind of value, and a
/// `fork()` can never catch it half-initialised (as it could a `OnceLock` mid-init).
#[cfg(not(kslock_loom))]
fn calib() -> Calib {
    use core::sync::atomic::{AtomicU64, Ordering::Relaxed as R};
    static C: AtomicU64 = AtomicU64::new(0);
    let v = C.load(R);
    if v != 0 {
        return Calib {
            cap_ns: (v >> 32) as u32,
            ticks_per_us: v as u32 as u64,
        };
    }
    let cap = std::env::var("KSLOCK_SPIN_CAP_NS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or_else(|| (sys::measure_syscall_ns() * CAP_SYSCALLS).clamp(CAP_MIN_NS, CAP_MAX_NS))
        .clamp(1, u32::MAX as u64);
    let tpu = sys::ticks_per_us().clamp(1, u32::MAX as u64);
    C.store(cap << 32 | tpu, R);
    Calib {
        cap_ns: cap as u32,
        ticks_per_us: tpu,
    }
}

#[cfg(kslock_loom)]
fn calib() -> Calib {
    Calib {
        cap_ns: 10_000,
        ticks_per_us: 1,
    }
}

/// The calibrated spin cap in ns (exposed for lockbench's environment record and tests).
pub fn spin_cap_ns() -> u32 {
    calib().cap_ns
}

/// A lock's spin word (4 bytes, so that a mutex fits in 32):
///
/// | bits | meaning | written by |
/// |------|---------|------------|
/// | 16–31 | the EWMA of successful spin durations, ns (0 = no data yet; saturates at 65535 ns, above every cap) | spinners ending a spin (CAS: only these bits) |
/// | 0–15 | spinners the lock's OSQ admitted ([`crate::osq`]) | `admit` / `leave` (fetch_add / fetch_sub of 1, never past 16 bits) |
#[derive(Debug)]
#[repr(transparent)]
pub(crate) struct SpinStats(AtomicU32);

/// The admitted-spinner bits of a spin word.
const ADMITTED_MASK: u32 = 0xFFFF;

impl SpinStats {
    loom_const_fn! {
        pub(crate) fn new() -> Self {
            SpinStats(AtomicU32::new(0))
        }
    }

    fn avg_ns(&self) -> u32 {
        self.0.load(Relaxed) >> 16
    }

    /// Replaces the EWMA bits, leaving the admission count alone (a CAS loop: admissions change
    /// the low bits concurrently).
    fn set_avg_ns(&self, avg: u32) {
        let avg = avg.min(0xFFFF) << 16;
        let mut w = self.0.load(Relaxed);
        while let Err(x) =
            self.0
                .compare_exchange_weak(w, (w & ADMITTED_MASK) | avg, Relaxed, Relaxed)
        {
            w = x;
        }
    }

    /// Admits one more OSQ spinner unless `max` are admitted already. Relaxed: a counter, not a
    /// handover (the OSQ itself orders its nodes).
    pub(crate) fn admit(&self, max: u32) -> bool {
        if self.0.fetch_add(1, Relaxed) & ADMITTED_MASK >= max.min(ADMITTED_MASK - 1) {
            self.0.fetch_sub(1, Relaxed);
            return false;
        }
        true
    }

    /// An admitted spinner left the OSQ.
    pub(crate) fn leave(&self) {
        self.0.fetch_sub(1, Relaxed);
    }

    /// This lock's current budget, ns.
    fn budget_ns(&self, cap: u32) -> u32 {
        match self.avg_ns() {
            0 => cap / 2,
            avg => avg
                .saturating_mul(2)
                .saturating_add(FLOOR_NS)
                .clamp(FLOOR_NS, cap),
        }
    }

    fn record_success(&self, took_ns: u32) {
        let avg = self.avg_ns() as i64;
        let avg = if avg == 0 {
            took_ns as i64
        } else {
            avg + (took_ns as i64 - avg) / 8
        };
        self.set_avg_ns(avg.clamp(1, u32::MAX as i64) as u32);
    }

    fn record_timeout(&self, budget_ns: u32) {
        let avg = match self.avg_ns() {
            0 => budget_ns / 2,
            a => a,
        };
        self.set_avg_ns((avg / 2).max(1));
    }
}

/// Why a spin stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The budget is spent (R5).
    Budget,
    /// The owner sleeps in kslock (R2) or sits on this spinner's CPU (R3).
    OwnerNotRunning,
}

/// One bounded spin: created when a spinner starts, consulted before every step.
pub(crate) struct Spin<'a> {
    stats: &'a SpinStats,
    me: &'static ThreadRec,
    start: u64,
    limit_ticks: u64,
    budget_ns: u32,
    /// Feed the outcome into `stats` (false for handover waits).
    learn: bool,
    /// A wait for a promised handover ([`Spin::for_handover`]): yields to an owner on this CPU.
    handover: bool,
    steps: u32,
    my_cpu: u32,
    /// Pauses before the next poll of the same owner (R6 backoff), and that owner.
    poll_pauses: u32,
    last_owner: *const ThreadRec,
}

impl<'a> Spin<'a> {
    /// Starts a spin for `me` on the lock whose statistics are `stats`, under the lock's
    /// adaptive budget (R5): a race for a lock that may free up.
    pub(crate) fn new(stats: &'a SpinStats, me: &'static ThreadRec) -> Self {
        let budget = stats.budget_ns(calib().cap_ns);
        Self::with_budget(stats, me, budget, true, false)
    }

    /// Starts a wait for a handover that the owner will make at its next unlock (a due head
    /// waiter: the lock is promised to it). Budget: the whole cap, not the lock's average, which
    /// measures races for a free lock and sinks to the floor on a saturated lock, below a
    /// critical section. Not fed into the statistics.
    pub(crate) fn for_handover(stats: &'a SpinStats, me: &'static ThreadRec) -> Self {
        Self::with_budget(stats, me, calib().cap_ns, false, true)
    }

    /// Starts a wait whose length the lock's statistics do not predict (a reader waiting out a
    /// writer phase, a reader waiting for its grant): the whole cap, the cost of the sleep it
    /// replaces, and not fed into the statistics (their single writer is the OSQ head).
    pub(crate) fn fixed(stats: &'a SpinStats, me: &'static ThreadRec) -> Self {
        Self::with_budget(stats, me, calib().cap_ns, false, false)
    }

    fn with_budget(
        stats: &'a SpinStats,
        me: &'static ThreadRec,
        budget_ns: u32,
        learn: bool,
        handover: bool,
    ) -> Self {
        let c = calib();
        me.note_cpu();
        Spin {
            stats,
            me,
            start: sys::ticks(),
            limit_ticks: budget_ns as u64 * c.ticks_per_us / 1000,
            budget_ns,
            learn,
            handover,
            steps: 0,
            my_cpu: me.cpu.load(Relaxed),
            poll_pauses: 1,
            last_owner: core::ptr::null(),
        }
    }

    /// The statistics of the lock this spin is on.
    #[inline]
    pub(crate) fn stats(&self) -> &'a SpinStats {
        self.stats
    }

    /// R2 + R3: may `owner` be running right now? (`owner` is a hint the caller re-checks
    /// against the lock word.)
    #[inline]
    pub(crate) fn owner_running(&self, owner: &ThreadRec) -> bool {
        if owner.is_parked() {
            return false;
        }
        core::ptr::eq(owner, self.me) || owner.cpu.load(Relaxed) != self.my_cpu
    }

    /// R5: has this spin used up its budget? (Reads the clock.)
    #[inline]
    fn spent(&self) -> bool {
        sys::ticks().wrapping_sub(self.start) > self.limit_ticks
    }

    /// One step: pause, then R5 (and, every `CLOCK_EVERY` steps, refresh this CPU for R3).
    /// `Err(Stop::Budget)` when the budget is spent; the step is not taken then.
    #[inline]
    pub(crate) fn step(&mut self) -> Result<(), Stop> {
        self.steps += 1;
        if cfg!(kslock_loom) {
            if self.steps > 3 {
                return Err(Stop::Budget);
            }
        } else if self.steps % CLOCK_EVERY == 0 {
            if self.spent() {
                return Err(Stop::Budget);
            }
            self.me.note_cpu();
            self.my_cpu = self.me.cpu.load(Relaxed);
        }
        spin_hint();
        Ok(())
    }

    /// Waits before the next poll of a lock held by `owner`: `Err(OwnerNotRunning)` if R2/R3
    /// say it cannot run, else R6: pause `poll_pauses` steps (each under R5), doubling them up
    /// to `MAX_POLL_PAUSES` while the owner stays the same, back to 1 when it changes.
    #[inline]
    pub(crate) fn step_on(&mut self, owner: &ThreadRec) -> Result<(), Stop> {
        if !self.owner_running(owner) {
            if self.handover && !owner.is_parked() {
                // R3 in a handover wait: the owner, which will hand us the lock at its next
                // unlock, is runnable on this very CPU (our wakeup preempted it). Give it the
                // CPU back rather than leave: stopping here would send us to sleep and make the
                // handover one to a sleeper, the lock idle for our wakeup.
                crate::sync::yield_now();
                self.my_cpu = {
                    self.me.note_cpu();
                    self.me.cpu.load(Relaxed)
                };
                // The yield may have lasted the owner's whole scheduler slice (ms): apply R5
                // now rather than at the next 16th step.
                if !cfg!(kslock_loom) && self.spent() {
                    return Err(Stop::Budget);
                }
                return self.step();
            }
            return Err(Stop::OwnerNotRunning);
        }
        if !core::ptr::eq(owner, self.last_owner) {
            self.last_owner = owner;
            self.poll_pauses = 1;
        }
        for _ in 0..self.poll_pauses {
            self.step()?;
        }
        self.poll_pauses = (self.poll_pauses * 2).min(MAX_POLL_PAUSES);
        Ok(())
    }

    /// One OSQ step behind a predecessor that last reported `cpu` (R2/R3 on the node's view).
    #[inline]
    pub(crate) fn step_behind(&mut self, pred: &ThreadRec, cpu: u32) -> Result<(), Stop> {
        if pred.is_parked() || (!core::ptr::eq(pred, self.me) && cpu == self.my_cpu) {
            return Err(Stop::OwnerNotRunning);
        }
        self.step()
    }

    /// The spin ended with the lock acquired: feed its duration into the lock's average.
    pub(crate) fn succeeded(self) {
        if !self.learn {
            return;
        }
        let tpu = calib().ticks_per_us.max(1);
        let ns = sys::ticks().wrapping_sub(self.start).saturating_mul(1000) / tpu;
        self.stats.record_success(ns.min(u32::MAX as u64) as u32);
    }

    /// Ends the spin with its outcome (`Ok`: the lock was acquired), feeding the lock's
    /// statistics as [`succeeded`](Self::succeeded) / [`failed`](Self::failed) do; returns
    /// whether the lock was acquired.
    pub(crate) fn finish(self, outcome: Result<(), Stop>) -> bool {
        match outcome {
            Ok(()) => {
                self.succeeded();
                true
            }
            Err(why) => {
                self.failed(why);
                false
            }
        }
    }

    /// The spin ended without the lock; `why` decides whether the budget shrinks.
    pub(crate) fn failed(self, why: Stop) {
        if why == Stop::Budget && self.learn {
            self.stats.record_timeout(self.budget_ns);
        }
    }
}

/// A wait for a neighbour's in-flight protocol step (OSQ unqueue, a waker publishing a
/// grant): not a spin on a lock, so no budget applies; it is bounded by the neighbour finishing
/// a few instructions. To stay bounded when that neighbour is preempted on an oversubscribed
/// machine, every 64th step gives the CPU away.
#[inline]
pub(crate) fn protocol_wait(i: &mut u32) {
    *i = i.wrapping_add(1);
    if *i % 64 == 0 {
        #[cfg(not(kslock_loom))]
        std::thread::yield_now();
    }
    spin_hint();
}

#[cfg(all(test, not(kslock_loom)))]
mod tests {
    use super::*;
    use crate::thread;

    #[test]
    fn cap_is_calibrated_within_its_clamp() {
        let c = spin_cap_ns() as u64;
        if std::env::var("KSLOCK_SPIN_CAP_NS").is_err() {
            assert!((CAP_MIN_NS..=CAP_MAX_NS).contains(&c), "cap {c} ns");
        }
    }

    #[test]
    fn budget_adapts_to_hold_times() {
        let s = SpinStats::new();
        let cap = 20_000;
        assert_eq!(s.budget_ns(cap), cap / 2, "no data: half the cap");
        for _ in 0..64 {
            s.record_success(500);
        }
        let b = s.budget_ns(cap);
        assert!(
            (FLOOR_NS..=3_000).contains(&b),
            "short holds give short budgets: {b}"
        );
        for _ in 0..64 {
            s.record_success(50_000);
        }
        assert_eq!(s.budget_ns(cap), cap, "the cap bounds every budget");
        for _ in 0..40 {
            s.record_timeout(cap);
        }
        assert_eq!(
            s.budget_ns(cap),
            FLOOR_NS + 2,
            "repeated timeouts shrink to the floor"
        );
    }

    #[test]
    fn a_spin_is_bounded_by_its_budget() {
        let s = SpinStats::new();
        let mut sp = Spin::new(&s, thread::current());
        let t0 = std::time::Instant::now();
        let mut n = 0u64;
        while sp.step().is_ok() {
            n += 1;
            assert!(
                t0.elapsed().as_millis() < 1000,
                "spin ran away after {n} steps"
            );
        }
        sp.failed(Stop::Budget);
        assert!(s.avg_ns() > 0);
    }

    #[test]
    fn a_parked_owner_stops_the_spin() {
        let (tx, rx) = std::sync::mpsc::channel();
        let h = std::thread::spawn(move || {
            let me = thread::current();
            tx.send(me.id()).unwrap();
            let _ = me.park(Some(crate::sys::now_ns() + 5_000_000_000));
        });
        let owner = thread::by_id(rx.recv().unwrap());
        while !owner.is_parked() {
            std::thread::yield_now();
        }
        let s = SpinStats::new();
        let mut sp = Spin::new(&s, thread::current());
        assert_eq!(sp.step_on(owner), Err(Stop::OwnerNotRunning));
        owner.unpark();
        h.join().unwrap();
    }
}
