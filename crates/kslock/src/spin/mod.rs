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
//! | R6 poll backoff | — | (not a stop rule) between two polls of the lock word under the same owner, wait 1, 2, 4 … pauses, up to the poll gap ([`POLL_GAP_NS`], in calibrated pauses): every poll pulls the lock's cache line away from the running owner (a cross-CPU round trip of 90–430 ns here), so polling every pause slows the owner the spinner waits for |
//!
//! # Budgets (R5)
//!
//! Each lock keeps one `u32` ([`SpinStats`]) with two exponentially weighted averages (weight
//! 1/8) over the spins of its OSQ heads: the time a spin took, failed spins included (their
//! time is the budget they ran out of), and the fraction that got the lock. Their ratio
//! estimates the mean wait for the lock: for exponentially distributed holds, the mean of
//! observations cut off at the budget divided by the fraction not cut off is the maximum
//! likelihood estimate of the mean (a censored sample), whatever the budget was. The budget:
//!
//! * `cap / 2` while the lock has no data;
//! * `FLOOR_NS` when fewer than 16/63 of the spins succeed, or when the estimated mean is
//!   above `cap / 2` (holds as long as a sleep: sleep soon) or below `FLOOR_NS` (the lock
//!   changes hands faster than a cross-CPU line transfer, 90–430 ns here, can follow: the
//!   waiter that wins such races only moves the line between CPUs, and losing them lets the
//!   owner batch on one CPU);
//! * otherwise `SPAN_MEANS × mean + FLOOR_NS` (4 means: an exponential hold outlasts them with
//!   probability 2%), at most the cap.
//!
//! `KSLOCK_OFF=censored_budget` restores the earlier estimator (the average of successful spins
//! only, halved by each spin that ran out of budget; budget `2 × avg + FLOOR_NS`), which with
//! random holds collapsed below the mean hold (`docs/experiments.md`, "Censored spin budgets").
//!
//! The **cap** is calibrated once per process near the cost of a sleep/wake round trip. That
//! cost cannot be measured without a second thread, so kslock measures its floor: one
//! `FUTEX_WAKE` with no waiter (a kernel entry on the wake path; ≈ 166 ns on the 2-vCPU AMD
//! development guest, ≈ 60–100 ns on bare metal) and sets
//! `cap = clamp(CAP_SYSCALLS × syscall, 4 µs, 40 µs)` with `CAP_SYSCALLS = 120`: 20–40 µs on
//! the 2-vCPU development guests (≈ 20 µs on the Intel one, 20–40 µs from one process to the
//! next on the AMD ones; a cross-CPU futex hand-over costs ≈ 30 µs there), ≈ 7–12 µs on bare
//! metal, where it is a few µs.
//! `KSLOCK_SPIN_CAP_NS` overrides the cap (read once; for experiments).
//!
//! # Pauses are calibrated (R6)
//!
//! A `pause` lasts ≈ 27 ns on the AMD EPYC development guests, where R6 and the polls' spacings
//! were tuned, but ≈ 4.6 ns on an Intel Xeon (Cascade Lake) guest and up to ≈ 60 ns on other
//! Intel parts: counted in pauses, a spacing is a different time on each. So every spacing is a
//! time: [`calib`] times the pause once per process (the fastest of 8 rounds of 32 pauses, by
//! the tick counter: ≈ 1–20 µs) and R6's most pauses between two polls are `POLL_GAP_NS` ÷ that
//! (32 on the AMD guests, ≈ 190 on the Intel one). The mutex's quick poll and a successor's
//! looks at the lock word are spaced in fractions and multiples of the same gap (module doc of
//! [`crate::mutex`]). `KSLOCK_POLL_GAP_NS` overrides the gap (read once; for experiments).
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
/// 0 left a CPU idle at 8+ threads, 2–8 were alike, 16 lost at CS load 20 (`docs/experiments.md`,
/// "How many yields"); parking_lot's `SpinWait` yields up to 7 times before it parks. None under
/// loom (the yields only delay the queueing, which the models cover).
///
/// What a yield costs the yielder depends on the kernel. With upstream 79104becf42b
/// ("sched/fair: Forfeit vruntime on yield", also backported to the 6.6 and 6.12 stable lines;
/// the development guests' 6.18 behaves so) a yield with others runnable charges the yielder
/// the rest of its slice, so it stays off the CPU until the others have run theirs, much as if
/// it slept but without a wakeup, and a holder that never yields keeps its CPU
/// (`scripts/sched-yield.c forfeit`; `docs/experiments.md`, "A yield forfeits the slice").
pub(crate) const PRE_QUEUE_YIELDS: u32 = if cfg!(kslock_loom) { 0 } else { 4 };

/// A `sched_yield` that took at least this long ran another thread (two context switches and
/// that thread's slice) rather than returning at once: 1/16 of the spin cap, ≈ 7.5 no-waiter
/// futex syscalls (the calibration above), 1.25–2.5 µs for caps of 20–40 µs: between a yield
/// with nothing else to run (≈ 0.5 µs) and one that another thread on the same CPU yields back
/// (≈ 2.6 µs: two switches and its yield), as measured on the development guests.
fn yield_switched_ns() -> u64 {
    u64::from(crate::spin_cap_ns() / 16)
}

/// Yields the CPU and says what the yield did: the clock after it (`sys::now_ns`), and whether
/// it ran another thread (it took at least [`yield_switched_ns`]) rather than returning at once
/// with nothing else to run. The mutex's pre-queue yields and the rwsem writer's yields before
/// spinning.
pub(crate) fn timed_yield() -> (u64, bool) {
    let t = sys::now_ns();
    crate::sync::yield_now();
    let back = sys::now_ns();
    (back, back.saturating_sub(t) >= yield_switched_ns())
}
/// Cap = this many no-waiter `FUTEX_WAKE`s (see module doc).
#[cfg_attr(kslock_loom, allow(dead_code))]
const CAP_SYSCALLS: u64 = 120;
/// Cap clamp, ns.
#[cfg_attr(kslock_loom, allow(dead_code))]
const CAP_MIN_NS: u64 = 4_000;
/// Cap clamp, ns.
#[cfg_attr(kslock_loom, allow(dead_code))]
const CAP_MAX_NS: u64 = 40_000;
/// The clock is read every this many steps (rdtsc ≈ 10 ns vs pause ≈ 5–27 ns).
const CLOCK_EVERY: u32 = 16;
/// R6: the longest wait between two polls of an unchanged owner, ns: 32 pauses of ≈ 27 ns on
/// the AMD EPYC VM, where the backoff was tuned (module doc, "Pauses are calibrated").
#[cfg_attr(kslock_loom, allow(dead_code))]
const POLL_GAP_NS: u64 = 864;

/// The calibrated cap, the tick rate and the poll gap in pauses, computed once.
#[derive(Clone, Copy)]
struct Calib {
    cap_ns: u32,
    ticks_per_us: u64,
    gap_pauses: u32,
}

/// Computed once per process, in one atomic word (`cap_ns << 32 | ticks_per_us << 16 |
/// gap_pauses`, the last two clamped to 1..=65535; 0 = not yet): threads that race on the
/// first use both compute it and store the same kind of value, and a `fork()` can never catch
/// it half-initialised (as it could a `OnceLock` mid-init).
#[cfg(not(kslock_loom))]
fn calib() -> Calib {
    use core::sync::atomic::{AtomicU64, Ordering::Relaxed as R};
    static C: AtomicU64 = AtomicU64::new(0);
    let v = C.load(R);
    if v != 0 {
        return Calib {
            cap_ns: (v >> 32) as u32,
            ticks_per_us: (v >> 16) & 0xFFFF,
            gap_pauses: v as u32 & 0xFFFF,
        };
    }
    let env = crate::ablate::tunable;
    let cap = env("SPIN_CAP_NS")
        .unwrap_or_else(|| (sys::measure_syscall_ns() * CAP_SYSCALLS).clamp(CAP_MIN_NS, CAP_MAX_NS))
        .clamp(1, u32::MAX as u64);
    let tpu = sys::ticks_per_us().clamp(1, 0xFFFF);
    let gap_ns = env("POLL_GAP_NS").unwrap_or(POLL_GAP_NS);
    let gap = (gap_ns.saturating_mul(1000) / pause_ps(tpu)).clamp(1, 0xFFFF);
    C.store(cap << 32 | tpu << 16 | gap, R);
    Calib {
        cap_ns: cap as u32,
        ticks_per_us: tpu,
        gap_pauses: gap as u32,
    }
}

/// One `pause` (a spin step), picoseconds: the fastest of 8 rounds of 32, timed with the tick
/// counter (`tpu` ticks a µs); the fastest round is the one no interrupt or preemption hit.
#[cfg(not(kslock_loom))]
fn pause_ps(tpu: u64) -> u64 {
    const N: u64 = 32;
    let mut best = u64::MAX;
    for _ in 0..8 {
        let t0 = sys::ticks();
        for _ in 0..N {
            spin_hint();
        }
        best = best.min(sys::ticks().wrapping_sub(t0));
    }
    (best * 1_000_000 / (tpu * N)).max(1)
}

#[cfg(kslock_loom)]
fn calib() -> Calib {
    Calib {
        cap_ns: 10_000,
        ticks_per_us: 1,
        gap_pauses: 32,
    }
}

/// R6's longest wait between two polls of an unchanged owner, in pauses (module doc, "Pauses
/// are calibrated"): the unit the other pollers' spacings are derived from.
#[inline]
pub(crate) fn poll_gap_pauses() -> u32 {
    calib().gap_pauses
}

/// The free re-check's wait (mutex module doc, "Free re-check"; the rwsem writer's gap poll),
/// in calibrated pauses: 1/8 of R6's poll gap, the quick polls' widest spacing (≈ 108 ns,
/// about one cross-CPU line transfer on the development VMs: module doc, "Pauses are
/// calibrated").
pub(crate) fn recheck_pauses() -> u32 {
    (poll_gap_pauses() / RECHECK_GAP_DIV).max(1)
}

/// [`recheck_pauses`]' share of the poll gap.
const RECHECK_GAP_DIV: u32 = 8;

/// The quick polls' bounds (mutex module doc, "Quick poll"; the rwsem writer's gap poll): at
/// most 16 polls, 1, 2, 4, … pauses apart, up to R6's poll gap for the mutex (32 pauses of
/// ≈ 27 ns on the AMD VM where it was tuned, ≈ 864 ns, ≈ 10 µs in all) and up to
/// [`recheck_pauses`] for the rwsem writer (≈ 108 ns; it also stops once one owner held the
/// lock for half a poll gap of pauses); and the mutex's poll stops after 3 polls in a row
/// that see the same owner: an owner that re-locks back to back shows the same word for
/// ever, and polling it would pull its line away at every re-lock (tried: without this
/// stop, 0.90–0.96× at CS load 1 with no outside work).
pub(crate) const QUICK_POLLS: u32 = 16;
pub(crate) const QUICK_SAME_OWNER: u32 = 3;

/// `n` pauses: the quick polls' waits (they never run under loom, so no model yield).
#[inline]
pub(crate) fn pause(n: u32) {
    for _ in 0..n {
        core::hint::spin_loop();
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
/// | 22–31 | the EWMA of spin durations, failed spins included, in 64 ns units (saturates at 65 µs, above every cap) | spinners ending a spin (CAS: only bits 16–31) |
/// | 16–21 | the EWMA of the fraction of spins that got the lock, 0–63 (bits 16–31 all 0 = no data yet) | as above |
/// | 10–15 | the EWMA of the fraction of pre-queue yield phases that ended in the queue (mutex) or of blocked readers that slept (rwsem), 0–63 (0 = no data, or they win: the yields run) | lockers ending a yield phase, blocked readers ending their spins ([`SpinStats::record_yields`], CAS: only bits 10–15) |
/// | 0–9 | spinners the lock's OSQ admitted ([`crate::osq`]) | `admit` (CAS, never past [`ADMITTED_MASK`] − 1) / `leave` (fetch_sub of 1) |
#[derive(Debug)]
#[repr(transparent)]
pub(crate) struct SpinStats(AtomicU32);

/// The admitted-spinner bits of a spin word.
const ADMITTED_MASK: u32 = 0x3FF;
/// The yield-phase estimate: bits 10–15, 0–63 for the fraction of phases that queued.
const YIELD_SHIFT: u32 = 10;
const YIELD_MAX: u32 = (1 << 6) - 1;
/// The bits a spin's estimates leave alone (admissions and the yield estimate).
const LOW_MASK: u32 = 0xFFFF;
/// [`SpinStats::yields_fail`]: above this share of yield phases that queued (/63, one half)
/// the mutex skips its pre-queue yields (and an rwsem's blocked readers sleep at once). Lock
/// events put the share at 0.69–0.99 with CS load 20–100 and no work outside the lock and at
/// 0–0.19 with outside load 100 at 8+ threads (module doc of [`crate::mutex`], "The yield
/// gate"); the half lies between them and was not tuned (no other value was measured).
const YIELD_GATE: u32 = 32;
/// One in this many lockers of a lock whose yield phases mostly queue still runs the phase
/// ([`SpinStats::skip_yields`]): the estimate needs outcomes to notice a change.
const YIELD_PROBE: u64 = 8;
/// The spin-time estimate: bits 22–31, in units of `TIME_UNIT_NS`.
const TIME_SHIFT: u32 = 22;
const TIME_MAX: u32 = (1 << 10) - 1;
const TIME_UNIT_NS: u64 = 64;
/// The success-rate estimate: bits 16–21, 0–63 for 0–1.
const RATE_SHIFT: u32 = 16;
const RATE_MAX: u32 = (1 << 6) - 1;
/// Below this success rate (16/63 ≈ 25%) the budget is the floor: spins mostly lose, to a
/// batching owner or to other spinners (module doc, "Budgets").
const RATE_MIN: u32 = 16;
/// [`SpinStats::wins_after_short_waits`]: the success rate (/63) and the mean spin (ns) at or
/// within which a lock's spins count as winning after short waits. Between the estimates of
/// long sections that end (60/63, 410–540 ns with sections and gaps of ≈ 460 ns) and those of
/// a batching owner (26–50/63, 1.3–4 µs), as printed by a scratch build on the Intel guest
/// (`docs/experiments.md`, "Long sections that end").
const SHORT_WIN_RATE: u32 = 56;
/// See [`SHORT_WIN_RATE`].
const SHORT_WIN_NS: u64 = 1_000;
/// A budget spans this many estimated mean holds: an exponential hold outlasts 4 means with
/// probability e^-4 ≈ 2%.
const SPAN_MEANS: u64 = 4;

impl SpinStats {
    loom_const_fn! {
        pub(crate) fn new() -> Self {
            SpinStats(AtomicU32::new(0))
        }
    }

    /// The two estimates: (spin time, 64 ns units; success rate, /63).
    fn estimates(&self) -> (u32, u32) {
        let w = self.0.load(Relaxed);
        (w >> TIME_SHIFT, (w >> RATE_SHIFT) & RATE_MAX)
    }

    /// Replaces the estimate bits, leaving the admission count alone (a CAS loop: admissions
    /// change the low bits concurrently).
    fn set_estimates(&self, time: u32, rate: u32) {
        self.set_estimate_bits(time.min(TIME_MAX) << TIME_SHIFT | rate.min(RATE_MAX) << RATE_SHIFT);
    }

    /// Replaces bits 16–31 with those of `est` (its low 16 bits are 0). No write when they hold
    /// `est` already (a settled average): each RMW takes the lock's line from the owner.
    fn set_estimate_bits(&self, est: u32) {
        self.replace_bits(!LOW_MASK, est);
    }

    /// Replaces the bits of `mask` with `new` (which has no bits outside `mask`), leaving the
    /// others alone (a CAS loop: admissions and the other estimates change concurrently); no
    /// write when they hold `new` already.
    fn replace_bits(&self, mask: u32, new: u32) {
        let mut w = self.0.load(Relaxed);
        while w & mask != new {
            match self
                .0
                .compare_exchange_weak(w, (w & !mask) | new, Relaxed, Relaxed)
            {
                Ok(_) => return,
                Err(x) => w = x,
            }
        }
    }

    /// Do this lock's pre-queue yield phases mostly end in the queue (more than
    /// [`YIELD_GATE`] / 63 of them; module doc of [`crate::mutex`], "The yield gate")? No data
    /// reads as no.
    pub(crate) fn yields_fail(&self) -> bool {
        self.yield_share() > YIELD_GATE
    }

    /// The yield estimate: the share of yield phases that queued, 0–63 (bits 10–15).
    fn yield_share(&self) -> u32 {
        (self.0.load(Relaxed) >> YIELD_SHIFT) & YIELD_MAX
    }

    /// Does this locker skip its pre-queue yields (the yield gate: module doc of
    /// [`crate::mutex`], "The yield gate"; the rwsem's blocked readers: module doc of
    /// [`crate::rwsem`], "Readers behind a long write")? Where most of the lock's yield phases
    /// end in the queue, all but one in [`YIELD_PROBE`] lockers do (the clock's low bits pick
    /// the probes).
    pub(crate) fn skip_yields(&self) -> bool {
        crate::ablate::on(crate::ablate::Mech::YieldGate)
            && self.yields_fail()
            && (sys::now_ns() >> 10) % YIELD_PROBE != 0
    }

    /// Feeds one pre-queue yield phase into its estimate: it got the lock (`won`) or queued.
    /// Not under loom: a statistic, whose RMW on the spin word only multiplies the models'
    /// interleavings (the rwsem models took 173 s with it against 72 s at 2 preemptions).
    pub(crate) fn record_yields(&self, won: bool) {
        if cfg!(kslock_loom) {
            return;
        }
        let x = if won { 0 } else { YIELD_MAX as i32 };
        let f = ewma(self.yield_share() as i32, x).clamp(0, YIELD_MAX as i32);
        self.replace_bits(YIELD_MAX << YIELD_SHIFT, (f as u32) << YIELD_SHIFT);
    }

    /// Do this lock's spins win after short waits: a success rate of at least
    /// [`SHORT_WIN_RATE`] / 63 and a mean spin of at most [`SHORT_WIN_NS`]? (The mutex's free
    /// re-check is then off: module doc of [`crate::mutex`], "Free re-check".) No data yet reads
    /// as no, and so does the old estimator
    /// (`KSLOCK_OFF=censored_budget`), whose word holds no success rate.
    pub(crate) fn wins_after_short_waits(&self) -> bool {
        if !crate::ablate::on(crate::ablate::Mech::CensoredBudget) {
            return false;
        }
        let (time, rate) = self.estimates();
        rate >= SHORT_WIN_RATE && spin_ns(time).is_some_and(|ns| ns <= SHORT_WIN_NS)
    }

    /// This lock's average spin, ns (spins that ran out of budget count with the time they
    /// ran), or `None` before its first recorded spin. The rwsem writer's yield first reads it
    /// (module doc of [`crate::rwsem`], "Writer meets readers").
    pub(crate) fn mean_spin_ns(&self) -> Option<u64> {
        spin_ns(self.estimates().0)
    }

    /// Admits one more OSQ spinner unless `max` are admitted already. Relaxed: a counter, not a
    /// handover (the OSQ itself orders its nodes). A load first: a refused spinner (the usual
    /// case when threads outnumber CPUs) then makes no RMW on the lock's line, which the
    /// owner's next lock or unlock would have to take back.
    pub(crate) fn admit(&self, max: u32) -> bool {
        let max = max.min(ADMITTED_MASK - 1);
        let mut w = self.0.load(Relaxed);
        loop {
            if w & ADMITTED_MASK >= max {
                return false;
            }
            // A CAS, not a fetch_add: the count may never carry into the yield estimate.
            match self.0.compare_exchange_weak(w, w + 1, Relaxed, Relaxed) {
                Ok(_) => return true,
                Err(x) => w = x,
            }
        }
    }

    /// An admitted spinner left the OSQ.
    pub(crate) fn leave(&self) {
        self.0.fetch_sub(1, Relaxed);
    }

    /// This lock's current budget, ns (module doc, "Budgets").
    fn budget_ns(&self, cap: u32) -> u32 {
        if !crate::ablate::on(crate::ablate::Mech::CensoredBudget) {
            return match self.0.load(Relaxed) >> 16 {
                0 => cap / 2,
                avg => (avg * 2 + FLOOR_NS).min(cap),
            };
        }
        match self.estimates() {
            (0, 0) => cap / 2,
            (_, rate) if rate < RATE_MIN => FLOOR_NS,
            (time, rate) => {
                let mean = time as u64 * TIME_UNIT_NS * RATE_MAX as u64 / rate as u64;
                if mean > cap as u64 / 2 || mean < FLOOR_NS as u64 {
                    FLOOR_NS
                } else {
                    (mean * SPAN_MEANS + FLOOR_NS as u64).min(cap as u64) as u32
                }
            }
        }
    }

    /// Feeds one spin into the estimates: it took `took_ns` and got the lock (`won`) or ran
    /// out of budget after `took_ns`.
    fn record(&self, took_ns: u32, won: bool) {
        if !crate::ablate::on(crate::ablate::Mech::CensoredBudget) {
            // The old estimator: the average of successful spins (ns, bits 16–31), halved by
            // every spin that ran out of budget.
            let (avg, took) = ((self.0.load(Relaxed) >> 16) as i64, took_ns as i64);
            let avg = match (avg, won) {
                (0, true) => took,
                (a, true) => a + (took - a) / 8,
                (0, false) => took / 4,
                (a, false) => a / 2,
            };
            return self.set_estimate_bits((avg.clamp(1, 0xFFFF) as u32) << 16);
        }
        let x = (took_ns as u64).div_ceil(TIME_UNIT_NS).min(TIME_MAX as u64) as i32;
        let r = if won { RATE_MAX as i32 } else { 0 };
        let (time, rate) = match self.estimates() {
            (0, 0) => (x, r),
            (t, p) => (ewma(t as i32, x), ewma(p as i32, r)),
        };
        self.set_estimates(time.max(1) as u32, rate as u32);
    }
}

/// The spin-time estimate (bits 22–31) in ns, `None` while it holds no data (0).
fn spin_ns(time: u32) -> Option<u64> {
    (time != 0).then(|| u64::from(time) * TIME_UNIT_NS)
}

/// One step of an exponentially weighted average with weight 1/8, rounded to the nearest
/// (it settles within 4 units of a constant input).
fn ewma(avg: i32, x: i32) -> i32 {
    avg + (x - avg + 4).div_euclid(8)
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
    /// Pauses before the next poll of the same owner (R6 backoff), their most, and that owner.
    poll_pauses: u32,
    gap_pauses: u32,
    last_owner: *const ThreadRec,
}

impl<'a> Spin<'a> {
    /// Starts a spin for `me` on the lock whose statistics are `stats`, under the lock's
    /// adaptive budget (R5): a race for a lock that may free up.
    pub(crate) fn new(stats: &'a SpinStats, me: &'static ThreadRec) -> Self {
        let budget = stats.budget_ns(calib().cap_ns);
        Self::with_budget(stats, me, budget, true, false)
    }

    /// The spin of a `try_lock_spin` / `try_write_spin`: [`Spin::new`]'s budget, at most
    /// [`FLOOR_NS`], and not fed into the statistics, which estimate the lock's uncapped races
    /// (doc of `RawMutex::try_lock_spin`). With `KSLOCK_OFF=trylock_spin_cap`, [`Spin::new`].
    pub(crate) fn for_trylock(stats: &'a SpinStats, me: &'static ThreadRec) -> Self {
        if !crate::ablate::on(crate::ablate::Mech::TrylockSpinCap) {
            return Self::new(stats, me);
        }
        let budget = stats.budget_ns(calib().cap_ns).min(FLOOR_NS);
        Self::with_budget(stats, me, budget, false, false)
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
            gap_pauses: c.gap_pauses,
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

    /// Clock ticks since this spin started. (Reads the clock.)
    #[inline]
    fn elapsed_ticks(&self) -> u64 {
        sys::ticks().wrapping_sub(self.start)
    }

    /// R5: has this spin used up its budget? (Reads the clock.)
    #[inline]
    fn spent(&self) -> bool {
        self.elapsed_ticks() > self.limit_ticks
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
    /// to the poll gap while the owner stays the same, back to 1 when it changes.
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
        self.poll_pauses = (self.poll_pauses * 2).min(self.gap_pauses);
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
        self.stats.record(ns.min(u32::MAX as u64) as u32, true);
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
            self.stats.record(self.budget_ns, false);
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
mod tests;
