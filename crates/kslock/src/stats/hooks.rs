//! The hooks the locks call (module doc of [`super`], "Where it records"). Without feature
//! `stats` each is an empty `#[inline(always)]` function and [`Wait`] is empty: no code.
//!
//! With the feature, the fast paths that call them (mutex `lock` / `unlock`, rw-semaphore
//! `read` / `write` and their unlocks, and their `lock_api` forwarders) are `inline(always)`
//! instead of `inline`: the hooks' inline part made them large enough for the inliner to
//! leave them as calls, a call on every acquisition (rw-semaphore at 90 % reads, CS load 1,
//! 8-96 threads: recording cost 24 % of throughput as calls, 10 % inlined; 2026-12-04).

#[cfg(feature = "stats")]
use super::{table, tls};

/// A lock kind's tag in the low bits of its record key (locks are 8-byte aligned);
/// implemented in `keys` for the lock types.
#[cfg_attr(not(feature = "stats"), allow(dead_code))]
pub(crate) trait Tagged {
    /// 0: mutex; 1: rw-semaphore (its read side is 2).
    const TAG: usize;
}

/// The record key of `lock`'s write (exclusive) side.
#[cfg(feature = "stats")]
#[inline(always)]
fn key<L: Tagged>(lock: &L) -> usize {
    lock as *const L as usize | L::TAG
}

/// The record key of `lock`'s read side.
#[cfg(feature = "stats")]
#[inline(always)]
fn key_read<L: Tagged>(lock: &L) -> usize {
    lock as *const L as usize | super::keys::TAG_RWSEM_READ
}

/// Whether statistics are being recorded (always false without feature `stats`): for a
/// figure that costs something to compute before it is counted.
#[inline(always)]
pub(crate) fn recording() -> bool {
    #[cfg(feature = "stats")]
    return table::enabled();
    #[cfg(not(feature = "stats"))]
    false
}

/// What the wait in progress did (module doc of [`super`]: the outcomes).
#[allow(dead_code)]
#[derive(Clone, Copy)]
#[repr(u8)]
pub(crate) enum Note {
    /// It gave the CPU away (a scheduler yield).
    Yielded = 1,
    /// It slept (a futex wait).
    Slept = 2,
    /// The lock was handed to it.
    Handoff = 4,
}

/// Notes what the calling thread's wait did.
#[inline(always)]
pub(crate) fn note(n: Note) {
    #[cfg(feature = "stats")]
    tls::note(n as u8);
    #[cfg(not(feature = "stats"))]
    let _ = n;
}

/// `lock` was acquired without waiting (a fast path or a successful try-lock).
#[inline(always)]
pub(crate) fn acquired<L: Tagged>(lock: &L) {
    #[cfg(feature = "stats")]
    tls::acquired(key(lock));
    #[cfg(not(feature = "stats"))]
    let _ = lock;
}

/// `lock`'s read side was acquired without waiting.
#[inline(always)]
pub(crate) fn acquired_read<L: Tagged>(lock: &L) {
    #[cfg(feature = "stats")]
    tls::acquired(key_read(lock));
    #[cfg(not(feature = "stats"))]
    let _ = lock;
}

/// `lock` is being released by the calling thread.
#[inline(always)]
pub(crate) fn released<L: Tagged>(lock: &L) {
    #[cfg(feature = "stats")]
    tls::released(key(lock));
    #[cfg(not(feature = "stats"))]
    let _ = lock;
}

/// A read lock of `lock` is being released by the calling thread.
#[inline(always)]
pub(crate) fn released_read<L: Tagged>(lock: &L) {
    #[cfg(feature = "stats")]
    tls::released(key_read(lock));
    #[cfg(not(feature = "stats"))]
    let _ = lock;
}

/// `lock`'s release takes its slow path: somebody waits.
#[inline(always)]
pub(crate) fn released_with_waiters<L: Tagged>(lock: &L) {
    #[cfg(feature = "stats")]
    tls::released_with_waiters(key(lock));
    #[cfg(not(feature = "stats"))]
    let _ = lock;
}

/// A contended acquisition in progress: from [`contended`] to [`Wait::acquired`] or
/// [`Wait::done`].
#[must_use]
pub(crate) struct Wait {
    #[cfg(feature = "stats")]
    w: tls::Wait,
}

/// The calling thread enters `lock`'s slow path (its fast path failed).
#[inline(always)]
pub(crate) fn contended<L: Tagged>(lock: &L) -> Wait {
    #[cfg(feature = "stats")]
    return Wait {
        w: tls::begin(key(lock)),
    };
    #[cfg(not(feature = "stats"))]
    {
        let _ = lock;
        Wait {}
    }
}

/// The calling thread enters the slow path of a read lock of `lock`.
#[inline(always)]
pub(crate) fn contended_read<L: Tagged>(lock: &L) -> Wait {
    #[cfg(feature = "stats")]
    return Wait {
        w: tls::begin(key_read(lock)),
    };
    #[cfg(not(feature = "stats"))]
    {
        let _ = lock;
        Wait {}
    }
}

impl Wait {
    /// The slow path returned with the lock held.
    #[inline(always)]
    pub(crate) fn acquired(self) {
        #[cfg(feature = "stats")]
        tls::end(self.w, true);
    }

    /// The slow path returned `held` (false: a timed lock gave up); passes it on.
    #[inline(always)]
    pub(crate) fn done(self, held: bool) -> bool {
        #[cfg(feature = "stats")]
        tls::end(self.w, held);
        held
    }
}
