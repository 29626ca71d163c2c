//! Switches that turn one mechanism off, and tunables that override one derived number, for
//! A/B measurements ("ablation"). They exist only in experiment builds
//! (`RUSTFLAGS="--cfg kslock_ablate"`, as `kslock_chaos` is a build of its own): there
//! `KSLOCK_OFF=<comma-separated names>` is read once per process, and [`tunable`] reads
//! `KSLOCK_<NAME>` once per number. In every other build every mechanism is on, every number is
//! the derived one, and no lock path reads the environment (`std::env::var` allocates and takes
//! std's environment lock: under the preload that would be malloc re-entry from inside
//! `pthread_mutex_lock`). Every mechanism a switch names is on by default; its module doc
//! describes it, and `docs/experiments.md` (in the repository) gives its measured A/B.
//!
//! | name | mechanism | where |
//! |------|-----------|-------|
//! | `barge_limit` | a thread that has taken contended mutexes without queueing or sleeping for the fairness window's maximum, while others wait, yields once at its next contended lock, and queues at once the next time it reaches the limit | [`crate::mutex`] `lock_slow` |
//! | `reader_count_spin` | a reader blocked by a writer drops its bias and spins on `count` (with yields) before it queues (off: it queues at once) | [`crate::rwsem`] `read_contended` |
//! | `rw_pre_queue_yield` | an rwsem writer whose spin failed, and a blocked reader whose count spin failed, yield and retry before queueing (off: no yields before queueing) | [`crate::rwsem`] `read_contended`, `write_contended` |
//! | `pre_queue_yield` | a locker whose spin failed yields and retries before it queues | [`crate::mutex`] `lock_contended` |
//! | `yield_gate` | where most of a mutex's pre-queue yield phases end in the queue, a locker whose spin failed queues without them; where most of an rwsem's blocked readers end up asleep, a blocked reader queues and sleeps at once (one in 8 still runs the phase, to keep the estimate) | [`crate::mutex`] `lock_slow`, [`crate::rwsem`] `read_contended` |
//! | `quick_poll` | a locker polls the lock word alone before it joins the OSQ | [`crate::mutex`] `lock_contended` |
//! | `free_recheck` | a spinner that finds the mutex free looks again ≈ one line transfer later and takes it only if it is still free, unless the lock's spins win after short waits | [`crate::mutex`] `quick_poll`, `spin_on_owner` |
//! | `trylock_spin_cap` | `try_lock_spin`'s and `try_write_spin`'s spins stop after 1 µs (off: they run the lock's whole budget) | [`crate::mutex`] `RawMutex::try_lock_spin`, [`crate::rwsem`] `try_write_spin` |
//! | `censored_budget` | spin budgets from the mean hold estimated over all spins, failed ones included (off: the average of successful spins, halved by each failure) | [`crate::spin`] `SpinStats` |
//! | `writer_yield_first` | a writer that finds the lock held by readers yields (up to twice) before it spins on them | [`crate::rwsem`] `write_contended` |
//! | `writer_yield_gate` | the writer's yield before spinning on readers happens only while the lock's average spin is below 512 ns (off: whatever the spins take) | [`crate::rwsem`] `write_contended` |
//! | `quick_yield_spins` | a writer whose yield before spinning returned at once (it ran nobody) spins next instead of yielding again (off: up to two yields on readers regardless) | [`crate::rwsem`] `write_contended` |
//! | `yield_on_writer` | a reader blocked by a writer, or a writer that finds a writer owner, yields once before it spins | [`crate::rwsem`] `read_contended`, `write_contended` |
//! | `writer_gap_poll` | where the lock's spins win after short waits and nobody queues or spins, a writer that finds a writer owner polls the lock for up to ≈ 430 ns instead of yielding first | [`crate::rwsem`] `writer_gap_poll` |
//! | `batch_stop` | a free re-check that sees the owner take the mutex straight back ends the attempt: the quick poll stops and the locker skips the OSQ spin for its pre-queue yields; a spinner (OSQ head, queue head, `try_lock_spin`) stops as if its budget ran out (off: the re-check counts as one same-owner poll, and the spinner spins on) | [`crate::mutex`] `quick_poll`, `spin_on_owner`, `lock_slow` |
//! | `writer_window` | a queued head writer that loses its retry to a writer owner sets `WOKEN` again and sleeps on its fairness window's timer, so that no unlock wakes it before the window ends, then reserves the lock; meanwhile the writer that released last re-takes the lock from its fast path for up to the window minimum (off: the head clears `WOKEN`, and the next unlock wakes it again) | [`crate::rwsem`] `write_contended`, `write`, `write_unlock` |
//!
//! Unknown names are ignored (so a list written for a later version still runs).

/// A switchable mechanism.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum Mech {
    BargeLimit = 1 << 0,
    ReaderCountSpin = 1 << 2,
    RwPreQueueYield = 1 << 3,
    PreQueueYield = 1 << 4,
    WriterYieldFirst = 1 << 5,
    QuickPoll = 1 << 6,
    CensoredBudget = 1 << 7,
    YieldOnWriter = 1 << 9,
    FreeRecheck = 1 << 13,
    QuickYieldSpins = 1 << 17,
    TrylockSpinCap = 1 << 19,
    WriterGapPoll = 1 << 20,
    BatchStop = 1 << 21,
    WriterWindow = 1 << 23,
    YieldGate = 1 << 24,
    WriterYieldGate = 1 << 25,
}

const NAMES: [(&str, Mech); 16] = [
    ("barge_limit", Mech::BargeLimit),
    ("reader_count_spin", Mech::ReaderCountSpin),
    ("rw_pre_queue_yield", Mech::RwPreQueueYield),
    ("pre_queue_yield", Mech::PreQueueYield),
    ("writer_yield_first", Mech::WriterYieldFirst),
    ("quick_poll", Mech::QuickPoll),
    ("censored_budget", Mech::CensoredBudget),
    ("yield_on_writer", Mech::YieldOnWriter),
    ("free_recheck", Mech::FreeRecheck),
    ("quick_yield_spins", Mech::QuickYieldSpins),
    ("trylock_spin_cap", Mech::TrylockSpinCap),
    ("writer_gap_poll", Mech::WriterGapPoll),
    ("batch_stop", Mech::BatchStop),
    ("writer_window", Mech::WriterWindow),
    ("yield_gate", Mech::YieldGate),
    ("writer_yield_gate", Mech::WriterYieldGate),
];

/// Is `m` on (not listed in `KSLOCK_OFF`)? Outside experiment builds, and under loom, every
/// mechanism is on.
#[inline]
pub(crate) fn on(m: Mech) -> bool {
    off_mask() & m as u32 == 0
}

/// `KSLOCK_<name>` parsed as a number, in experiment builds only (callers compute it once per
/// process and cache it; this reads the environment each call). `None` in every other build.
#[cfg(all(kslock_ablate, not(kslock_loom)))]
#[cold]
pub(crate) fn tunable(name: &str) -> Option<u64> {
    std::env::var(format!("KSLOCK_{name}"))
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
}

/// `None`: outside experiment builds nothing overrides a derived number.
#[cfg(not(all(kslock_ablate, not(kslock_loom))))]
#[cfg_attr(kslock_loom, allow(dead_code))] // the callers are not built under loom
#[inline(always)]
pub(crate) fn tunable(_name: &str) -> Option<u64> {
    None
}

/// `KSLOCK_<name>` as a string, in experiment builds only (see [`tunable`]).
#[cfg(all(kslock_ablate, not(kslock_loom)))]
#[cold]
pub(crate) fn setting(name: &str) -> Option<String> {
    std::env::var(format!("KSLOCK_{name}")).ok()
}

/// `None` outside experiment builds.
#[cfg(not(all(kslock_ablate, not(kslock_loom))))]
#[cfg_attr(kslock_loom, allow(dead_code))] // the callers are not built under loom
#[inline(always)]
pub(crate) fn setting(_name: &str) -> Option<String> {
    None
}

/// Bit 31 of [`MASK`]: `KSLOCK_OFF` was read.
#[cfg(all(kslock_ablate, not(kslock_loom)))]
const READ: u32 = 1 << 31;
/// The switches that are off, and [`READ`].
#[cfg(all(kslock_ablate, not(kslock_loom)))]
static MASK: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);

/// The mask: one load where it was read already (inline, no call: a call through the GOT costs
/// 2–5 ns on a guest whose kernel runs with IBRS, and a switch must cost the same on both sides
/// of an A/B), else [`read_mask`].
#[cfg(all(kslock_ablate, not(kslock_loom)))]
#[inline]
fn off_mask() -> u32 {
    let m = MASK.load(core::sync::atomic::Ordering::Relaxed);
    if m & READ != 0 {
        return m;
    }
    read_mask()
}

/// Reads `KSLOCK_OFF` into [`MASK`] (once per process, or a few times if threads race: each
/// stores the same value).
#[cfg(all(kslock_ablate, not(kslock_loom)))]
#[cold]
#[inline(never)]
fn read_mask() -> u32 {
    let off = std::env::var("KSLOCK_OFF").unwrap_or_default();
    let m = off
        .split(',')
        .filter_map(|n| NAMES.iter().find(|(k, _)| *k == n.trim()))
        .fold(READ, |a, (_, mech)| a | *mech as u32);
    MASK.store(m, core::sync::atomic::Ordering::Relaxed);
    m
}

/// Every mechanism on: a constant the compiler folds into every [`on`] test.
#[cfg(not(all(kslock_ablate, not(kslock_loom))))]
#[inline(always)]
fn off_mask() -> u32 {
    let _ = NAMES;
    0
}
