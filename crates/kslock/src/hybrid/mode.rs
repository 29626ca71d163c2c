//! The mode: does the lock run reads through `m` (`EXCL`) or share them through the count?
//! Decided by measurement, a *duel*: the lock runs in one mode, measures its throughput over
//! fixed-length epochs, now and then runs a probe in the other mode and keeps whichever
//! mode ran more operations per second.
//!
//! Why measure instead of a rule: which mode wins depends on the read-section length against a
//! cache-line transfer (a shared read is two RMWs on the count's line, so reads shorter than
//! about two transfers gain nothing from running side by side), on the read share, and on how
//! many CPUs the readers have. The duel needs none of these.
//!
//! | parameter | value | from |
//! |---|---|---|
//! | epoch | 2 × the fairness window maximum (2 ms) | the mutex's turns, which run `m`'s holders in windows of at most 1 ms, must settle within an epoch |
//! | clock reads | one every [`CHECK_EVERY`] (256) operations | the operation counts the lock keeps anyway (`count`'s ops and `xops`); 1 clock read ≈ 25 ns per 256 operations |
//! | probe | 1 epoch settling, 1 measured, in the other mode; 1 settling back if it lost | |
//! | probes apart | `4 << backoff` epochs, `backoff` = probes lost in a row (at most [`MAX_BACKOFF`]): 8 ms to 256 ms | a losing probe costs its two epochs at the losing mode's rate: at most 2 / 131 of the time once backed off |
//! | probe wins if | faster by 1/8 (12.5%) | adjacent 2 ms epochs of one mode differ by up to ≈ 5–10% on the development VM |
//! | workload change | the current mode's rate moves 2× between epochs: `backoff` = 0 | |
//!
//! The epoch's time and operation count live in `epoch`; the state of the duel in `aux`
//! (module doc of [`super`]). The check itself is serialized by `BUSY`: a thread that finds
//! it set skips the check.

use super::*;
use crate::sys;

/// Operations between two clock reads.
const CHECK_EVERY: u32 = 256;
/// Most probes lost in a row that lengthen the wait for the next one.
const MAX_BACKOFF: u32 = 5;
/// Epochs between probes at backoff 0.
const PROBE_BASE: u32 = 4;

const BUSY: u32 = 1 << 2;
const PHASE_SHIFT: u32 = 3;
const BACKOFF_SHIFT: u32 = 5;
const EPOCHS_SHIFT: u32 = 8;
const RATE_SHIFT: u32 = 16;
/// The duel's bits of `aux` (everything but `DRAIN_SLEEP` and `BUSY`).
const DUEL: u32 = !(DRAIN_SLEEP | BUSY);

const NORMAL: u32 = 0;
const PROBE_SETTLE: u32 = 1;
const PROBE: u32 = 2;
const SETTLE_BACK: u32 = 3;

/// `KSLOCK_HYBRID_READS=shared|exclusive` pins the mode (experiment builds only, read once per
/// process; for A/B measurements): `Some(true)` = reads through `m`.
#[cfg(not(kslock_loom))]
fn pinned() -> Option<bool> {
    use std::sync::atomic::{AtomicU8, Ordering::Relaxed};
    static P: AtomicU8 = AtomicU8::new(0);
    match P.load(Relaxed) {
        1 => None,
        2 => Some(false),
        3 => Some(true),
        _ => {
            let v = match crate::ablate::setting("HYBRID_READS").as_deref() {
                Some("shared") => 2,
                Some("exclusive") => 3,
                _ => 1,
            };
            P.store(v, Relaxed);
            [None, Some(false), Some(true)][usize::from(v - 1)]
        }
    }
}
#[cfg(kslock_loom)]
fn pinned() -> Option<bool> {
    None
}

/// The epoch length in µs.
pub(super) fn epoch_us() -> u32 {
    let max_ns = crate::fairness::window_ns().1;
    u32::try_from(2 * max_ns / 1_000)
        .unwrap_or(u32::MAX)
        .max(100)
}

/// The duel's next state from its state `a` (the `DUEL` bits of `aux`) and the epoch that just
/// ended, `rate` = ns per operation in 1/8 ns (`None`: not measurable, restart the epoch).
pub(super) fn decide(a: u32, rate: Option<u32>) -> u32 {
    let Some(rate) = rate else {
        return a & DUEL;
    };
    let rate = rate.clamp(1, 0xFFFF);
    let mut excl = a & EXCL;
    let mut phase = (a >> PHASE_SHIFT) & 3;
    let mut backoff = (a >> BACKOFF_SHIFT) & 7;
    let mut epochs = (a >> EPOCHS_SHIFT) & 0xFF;
    let mut last = a >> RATE_SHIFT;
    match phase {
        NORMAL => {
            if last != 0 && (rate > 2 * last || 2 * rate < last) {
                backoff = 0;
            }
            last = rate;
            epochs += 1;
            if epochs >= PROBE_BASE << backoff {
                excl ^= EXCL;
                phase = PROBE_SETTLE;
                epochs = 0;
            }
        }
        PROBE_SETTLE => phase = PROBE,
        PROBE => {
            if rate + rate / 8 < last {
                phase = NORMAL;
                backoff = 0;
                last = rate;
            } else {
                excl ^= EXCL;
                phase = SETTLE_BACK;
                backoff = (backoff + 1).min(MAX_BACKOFF);
            }
        }
        _ => phase = NORMAL,
    }
    excl | phase << PHASE_SHIFT
        | backoff << BACKOFF_SHIFT
        | epochs << EPOCHS_SHIFT
        | last << RATE_SHIFT
}

/// Counts the duel's events of one decision, `a` → `next` (feature `lock-events`).
fn count_decision(a: u32, next: u32) {
    use crate::events::{count, Event};
    count(Event::hybrid_epochs);
    if a & EXCL != 0 {
        count(Event::hybrid_epochs_excl);
    }
    let phase = |x: u32| (x >> PHASE_SHIFT) & 3;
    let backoff = |x: u32| (x >> BACKOFF_SHIFT) & 7;
    match (phase(a), phase(next)) {
        (NORMAL, PROBE_SETTLE) => count(Event::hybrid_probes),
        (PROBE, NORMAL) => count(Event::hybrid_probe_won),
        (NORMAL, NORMAL) if backoff(a) != 0 && backoff(next) == 0 => {
            count(Event::hybrid_backoff_reset)
        }
        _ => {}
    }
}

impl RawHybridRwSem {
    /// After a shared read's or a write's RMW on `count` that returned `old`: every
    /// [`CHECK_EVERY`]-th operation checks the epoch.
    #[inline(always)]
    pub(super) fn count_shared_op(&self, old: State) {
        if ((old >> OPS_SHIFT) as u32) % CHECK_EVERY == CHECK_EVERY - 1 {
            self.check_epoch();
        }
    }

    /// After a read through `m` (the caller holds `m`, so it alone writes `xops`).
    #[inline(always)]
    pub(super) fn count_excl_op(&self) {
        let n = self.xops.load(Relaxed).wrapping_add(1);
        self.xops.store(n, Relaxed);
        if n % CHECK_EVERY == 0 {
            self.check_epoch();
        }
    }

    /// The operations counted since the epoch began, and a fresh count for the next one: the
    /// ops half of `count` cleared by one RMW (shared readers and writers add to it
    /// concurrently: none is lost), `xops` set to 0. The holder of `m` adds to `xops` with a
    /// load and a store, so a checker that does not hold `m` (a shared read that came due in
    /// the `EXCL` mode) may see its 0 overwritten: that epoch then counts the previous one's
    /// reads through `m` too, and one measurement is off (no state depends on it).
    fn take_ops(&self) -> u32 {
        let c = self
            .count
            .fetch_and(!(u64::from(u32::MAX) << OPS_SHIFT), Relaxed);
        let x = self.xops.swap(0, Relaxed);
        ((c >> OPS_SHIFT) as u32).wrapping_add(x)
    }

    /// Ends the epoch if it is over: measure, decide, start the next one.
    #[cold]
    #[inline(never)]
    fn check_epoch(&self) {
        if cfg!(kslock_loom) {
            return; // frozen clock: the models flip the mode themselves
        }
        let now_us = ((sys::now_ns() / 1_000) as u32) | 1;
        let start = self.m.embedder_word().load(Relaxed);
        let elapsed = now_us.wrapping_sub(start);
        let len = epoch_us();
        if start != 0 && elapsed < len {
            return;
        }
        let a = self.aux.load(Relaxed);
        if a & BUSY != 0
            || self
                .aux
                .compare_exchange(a, a | BUSY, Relaxed, Relaxed)
                .is_err()
        {
            return;
        }
        let n = self.take_ops();
        // An epoch that ran much longer than `len` spans an idle stretch: not a measurement.
        let rate = (start != 0 && n != 0 && elapsed < 4 * len)
            .then(|| (u64::from(elapsed) * 8_000 / u64::from(n)).min(0xFFFF) as u32);
        let next = match pinned() {
            None => decide(a & DUEL, rate),
            Some(true) => EXCL,
            Some(false) => 0,
        };
        if crate::stats::recording() {
            count_decision(a & DUEL, next);
        }
        self.m.embedder_word().store(now_us, Relaxed);
        let mut cur = self.aux.load(Relaxed);
        loop {
            // DRAIN_SLEEP belongs to the writer and its readers: keep it as it is.
            let new = (cur & DRAIN_SLEEP) | next;
            match self.aux.compare_exchange(cur, new, Relaxed, Relaxed) {
                Ok(_) => return,
                Err(x) => cur = x,
            }
        }
    }

    /// Sets the mode until the next epoch's decision (tests and loom models; a pinned mode,
    /// `KSLOCK_HYBRID_READS`, is re-applied at the next epoch).
    #[doc(hidden)]
    pub fn set_exclusive_reads(&self, on: bool) {
        if on {
            self.aux.fetch_or(EXCL, Relaxed);
        } else {
            self.aux.fetch_and(!EXCL, Relaxed);
        }
    }
}
