//! The seed switches: every idea kslock took from a kernel patch discussion can be turned off
//! or swapped, per lock type, at zero cost on the fast path.
//!
//! A policy is a type with associated constants; locks take it as a type parameter with a
//! default (`RawMutex<P = DefaultPolicy>`, `RawRwSem<P = DefaultPolicy>`), so every branch on a
//! policy constant is resolved at compile time. kslock ships [`DefaultPolicy`] and one type per
//! ablation (default except one knob); users may implement the traits for their own
//! combinations.
//!
//! | seed | knob | default | alternatives |
//! |------|------|---------|--------------|
//! | S0 rwsem wake path | [`RwSemPolicy::WAKE`] | [`WakePolicy::Deferred`] | `TrylockIfSpinner` (2015), `WakeFlag` (2013) |
//! | S1 OSQ node layout | `OSQ_LAYOUT` | [`OsqLayout::SplitIdLine`] | `Packed` (kernel today) |
//! | S2 writer spinning on reader owners | [`RwSemPolicy::READER_OWNED_SPIN`] | [`ReaderOwnedSpin::Bounded`] | `Never` (pre-2016) |
//! | S3 adaptive `try_lock` | (an API, not a policy) | `try_lock` never spins | `try_lock_spin()` |
//! | S4 rwsem reader spinning | [`RwSemPolicy::READER_SPIN`] | [`ReaderSpin::Off`] (upstream since v5.11) | `Limited`, `On` |
//! | (kslock) mutex handoff | [`MutexPolicy::HANDOFF`] | [`HandoffPolicy::Window`] | `FirstFailure` (the kernel's) |

/// How an OSQ node is laid out (seed S1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OsqLayout {
    /// `next`, `prev`, `locked` and the polled `cpu` share one cache line; `cpu` is written on
    /// every queue entry (the kernel's layout).
    Packed,
    /// The polled `cpu` sits on its own cache line and is written only when it changes.
    SplitIdLine,
}

/// Whether rwsem readers spin (seed S4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReaderSpin {
    /// Readers never spin; they steal the lock when they can and otherwise queue (upstream
    /// since v5.11).
    Off,
    /// One representative reader spins (through the OSQ) and, once it holds the lock, wakes the
    /// queued readers to join it.
    Limited,
    /// Every reader spins through the OSQ like a writer (pre-v5.11 behaviour).
    On,
}

/// How the rwsem unlock slow path wakes waiters (seed S0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WakePolicy {
    /// Collect the waiters to wake under the wait_lock and wake them after dropping it (today's
    /// kernel; never a futex wake while holding the wait_lock).
    Deferred,
    /// When a writer spins (the OSQ is non-empty) the unlocker only *trylocks* the wait_lock and
    /// leaves the wakeup to whoever holds it (2015; removed upstream in 2019).
    TrylockIfSpinner,
    /// A "wakeup in progress" flag: an unlocker that finds it set returns at once, trusting the
    /// thread that set it to wake (2013 RFC; never merged).
    WakeFlag,
}

/// Whether writers spin while readers own the rwsem (seed S2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReaderOwnedSpin {
    /// Spin for a bounded, adaptive time, then mark the lock NONSPINNABLE until readers drain.
    Bounded,
    /// Stop spinning as soon as the owner is not a running writer (pre-2016 behaviour).
    Never,
}

/// When the head waiter of a mutex reserves the lock (HANDOFF), so that the next unlock hands
/// it over instead of letting others barge ([`crate::fairness`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandoffPolicy {
    /// When its fairness window is due: the owner may keep re-locking (batching) until then,
    /// and the head, which lost to a barger once, sleeps until then instead of being woken by
    /// every unlock (kslock's default).
    Window,
    /// After the head lost one race after a wakeup (the kernel mutex's rule): a handover per
    /// wakeup.
    FirstFailure,
}

/// Policy knobs of [`crate::RawMutex`].
pub trait MutexPolicy: 'static {
    /// OSQ node layout (seed S1).
    const OSQ_LAYOUT: OsqLayout;
    /// When the head waiter reserves the lock.
    const HANDOFF: HandoffPolicy = HandoffPolicy::Window;
}

/// Policy knobs of `RawRwSem`.
pub trait RwSemPolicy: 'static {
    /// OSQ node layout (seed S1).
    const OSQ_LAYOUT: OsqLayout;
    /// Reader spinning (seed S4).
    const READER_SPIN: ReaderSpin;
    /// Unlock wake path (seed S0).
    const WAKE: WakePolicy;
    /// Writer spinning on reader owners (seed S2).
    const READER_OWNED_SPIN: ReaderOwnedSpin;
    /// How long the head waiter waits before it reserves the lock (HANDOFF), ns. The kernel
    /// uses about 4 ms.
    const HANDOFF_NS: u64 = 4_000_000;
}

/// kslock's defaults: the kernel's choices of today, plus S1's split node line.
#[derive(Debug, Clone, Copy, Default)]
pub struct DefaultPolicy;

impl MutexPolicy for DefaultPolicy {
    const OSQ_LAYOUT: OsqLayout = OsqLayout::SplitIdLine;
}
impl RwSemPolicy for DefaultPolicy {
    const OSQ_LAYOUT: OsqLayout = OsqLayout::SplitIdLine;
    const READER_SPIN: ReaderSpin = ReaderSpin::Off;
    const WAKE: WakePolicy = WakePolicy::Deferred;
    const READER_OWNED_SPIN: ReaderOwnedSpin = ReaderOwnedSpin::Bounded;
}

macro_rules! ablation {
    ($(#[$doc:meta])* $name:ident: $layout:ident, $rs:ident, $wake:ident, $ros:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default)]
        pub struct $name;
        impl RwSemPolicy for $name {
            const OSQ_LAYOUT: OsqLayout = OsqLayout::$layout;
            const READER_SPIN: ReaderSpin = ReaderSpin::$rs;
            const WAKE: WakePolicy = WakePolicy::$wake;
            const READER_OWNED_SPIN: ReaderOwnedSpin = ReaderOwnedSpin::$ros;
        }
    };
}

ablation!(
    /// Default, but every reader spins (S4 `On`).
    ReaderSpinOn: SplitIdLine, On, Deferred, Bounded);
ablation!(
    /// Default, but one representative reader spins (S4 `Limited`).
    ReaderSpinLimited: SplitIdLine, Limited, Deferred, Bounded);
ablation!(
    /// Default, but unlockers skip the wakeup while one is in progress (S0 `WakeFlag`).
    WakeFlag: SplitIdLine, Off, WakeFlag, Bounded);
ablation!(
    /// Default, but unlockers only trylock the wait_lock while a writer spins (S0 `TrylockIfSpinner`).
    TrylockIfSpinner: SplitIdLine, Off, TrylockIfSpinner, Bounded);
ablation!(
    /// Default, but writers never spin on reader owners (S2 `Never`).
    NeverSpinOnReaders: SplitIdLine, Off, Deferred, Never);
ablation!(
    /// Default, but OSQ nodes use the kernel's packed layout (S1 `Packed`); also a mutex policy.
    PackedOsq: Packed, Off, Deferred, Bounded);

impl MutexPolicy for PackedOsq {
    const OSQ_LAYOUT: OsqLayout = OsqLayout::Packed;
}

/// A mutex policy: default, but the head waiter reserves the lock after one lost race, as the
/// kernel mutex does ([`HandoffPolicy::FirstFailure`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct KernelHandoff;

impl MutexPolicy for KernelHandoff {
    const OSQ_LAYOUT: OsqLayout = OsqLayout::SplitIdLine;
    const HANDOFF: HandoffPolicy = HandoffPolicy::FirstFailure;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ablations_differ_from_the_default_in_exactly_one_knob() {
        fn knobs<P: RwSemPolicy>() -> [u8; 4] {
            [
                P::OSQ_LAYOUT as u8,
                P::READER_SPIN as u8,
                P::WAKE as u8,
                P::READER_OWNED_SPIN as u8,
            ]
        }
        let d = knobs::<DefaultPolicy>();
        for k in [
            knobs::<ReaderSpinOn>(),
            knobs::<ReaderSpinLimited>(),
            knobs::<WakeFlag>(),
            knobs::<TrylockIfSpinner>(),
            knobs::<NeverSpinOnReaders>(),
            knobs::<PackedOsq>(),
        ] {
            assert_eq!(
                k.iter().zip(d.iter()).filter(|(a, b)| a != b).count(),
                1,
                "{k:?} vs {d:?}"
            );
        }
    }
}
