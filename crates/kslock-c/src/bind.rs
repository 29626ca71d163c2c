//! The condvar ↔ mutex binding word: which mutex a condvar's current waiters use, and how
//! many waiters there are.
//!
//! kslock's [`Condvar`](kslock_core::Condvar) requeues waiters onto *one* mutex and treats a
//! second mutex used while waiters of the first remain as a bug (it panics). POSIX makes that
//! case undefined and allows `EINVAL`, so the C layers keep this word next to the condvar and
//! admit a waiter only if it uses the same mutex as every waiter already admitted:
//!
//! | bits | meaning |
//! |------|---------|
//! | 0–19 | admitted waiters (between [`bind`] and [`unbind`]) |
//! | 20–63 | the mutex's address ÷ 8 (meaningless while the count is 0) |
//!
//! Every admitted waiter counts until it has left the condvar: it unbinds in the callback of
//! `Condvar::wait_raw_then`, after its last access to the condvar and before it waits for the
//! mutex again. So while the count is non-zero no waiter of another mutex can be queued, and a
//! destroy that finds no thread blocked (`Condvar::has_waiters`) only has to wait for the count
//! to drain ([`drained`]) before the memory may be reused: the notified waiters that still
//! count need no lock to leave. (POSIX allows destroying a condvar as soon as no thread is
//! blocked on it, e.g. right after a broadcast, while the woken threads wait for the mutex,
//! which the destroying thread may hold; the Open POSIX Test Suite's
//! `pthread_cond_destroy/2-1` does exactly that.)
//!
//! Orderings: [`bind`] is Relaxed (the condvar's own wait_lock orders its queue); [`unbind`]
//! is Release and the destroy's read of the count Acquire, so a waiter's last accesses to the
//! condvar happen before the destroying thread reuses the memory.

#![allow(dead_code)]

use core::sync::atomic::{
    AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};

/// Waiter-count bits.
const COUNT_BITS: u32 = 20;
/// One waiter.
const COUNT_ONE: u64 = 1;
/// The count field.
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;

/// The key of the mutex at `addr` (its address ÷ 8 above the count).
fn key(addr: usize) -> u64 {
    ((addr as u64) >> 3) << COUNT_BITS
}

/// Admits a waiter that uses the mutex at `addr`. `false`: waiters of another mutex are
/// admitted (→ `EINVAL`), or the count is full (→ `EAGAIN`, reported as `EINVAL` too).
pub(crate) fn bind(word: &AtomicU64, addr: usize) -> bool {
    let k = key(addr);
    let mut cur = word.load(Relaxed);
    loop {
        let n = cur & COUNT_MASK;
        let new = if n == 0 {
            k | COUNT_ONE
        } else if cur & !COUNT_MASK == k && n < COUNT_MASK {
            cur + COUNT_ONE
        } else {
            return false;
        };
        match word.compare_exchange_weak(cur, new, Relaxed, Relaxed) {
            Ok(_) => return true,
            Err(c) => cur = c,
        }
    }
}

/// Releases the admission taken by [`bind`]. Release: pairs with the Acquire in
/// [`has_waiters`] of a destroy (module doc).
pub(crate) fn unbind(word: &AtomicU64) {
    word.fetch_sub(COUNT_ONE, Release);
}

/// Are waiters admitted? Acquire: pairs with [`unbind`].
pub(crate) fn has_waiters(word: &AtomicU64) -> bool {
    word.load(Acquire) & COUNT_MASK != 0
}

/// How long a destroy waits for notified waiters to leave the condvar, ns. A woken waiter
/// leaves as soon as it runs; on an oversubscribed machine that can take a few scheduler ticks
/// (4 ms at HZ 250). Past this the destroy reports `EBUSY`.
const DRAIN_MAX_NS: u128 = 100_000_000;

/// Waits, yielding the CPU, while `busy()` (admitted waiters remain, module doc). `false` if
/// they did not leave within [`DRAIN_MAX_NS`].
pub(crate) fn drained(busy: impl Fn() -> bool) -> bool {
    let start = std::time::Instant::now();
    while busy() {
        if start.elapsed().as_nanos() > DRAIN_MAX_NS {
            return false;
        }
        std::thread::yield_now();
    }
    true
}
