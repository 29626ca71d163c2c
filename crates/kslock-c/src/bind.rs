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
//! Every admitted waiter counts until it has left the condvar's queue (it unbinds after
//! `wait_raw` returns), so while the count is non-zero no waiter of another mutex can be queued.
//! The RMWs are Relaxed: the word guards no other data (the condvar's own wait_lock orders
//! the queue).

#![allow(dead_code)]

use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

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

/// Releases the admission taken by [`bind`].
pub(crate) fn unbind(word: &AtomicU64) {
    word.fetch_sub(COUNT_ONE, Relaxed);
}

/// Are waiters admitted?
pub(crate) fn has_waiters(word: &AtomicU64) -> bool {
    word.load(Relaxed) & COUNT_MASK != 0
}
