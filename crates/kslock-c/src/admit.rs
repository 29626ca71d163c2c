//! The condvar's admission count: how many waiters may still touch a condvar, so that
//! `pthread_cond_destroy` knows when its memory may be reused.
//!
//! The C layers keep this word (a plain count) next to kslock's [`Condvar`](kslock_core::Condvar).
//! A waiter enters ([`enter`]) before it queues and counts until it has left the condvar: it leaves
//! ([`leave`]) in the callback of `Condvar::wait_raw_then`, after its last access to the condvar
//! and before it waits for the mutex again, except a waiter that `notify_all` (or a `notify_one`
//! made with the mutex held) requeued onto the mutex: that one stopped touching the condvar at
//! the requeue, and its notifier ends its admission ([`release_requeued`] after a broadcast,
//! [`leave`] on its behalf after a signal: the notification's last access to the condvar). So a
//! destroy that
//! finds no thread blocked (`Condvar::has_waiters`) only has to wait for the count to drain
//! ([`drained`]) before the memory may be reused: the waiters that still count are notified or
//! timed out and need no lock to leave, and the requeued ones, which need the mutex, no longer
//! count. (POSIX allows destroying a condvar as soon as no thread is blocked on it, e.g. right
//! after a broadcast, while the woken threads wait for the mutex, which the destroying thread may
//! hold; the Open POSIX Test Suite's `pthread_cond_destroy/2-1` destroys right after a broadcast
//! and then overwrites the memory.)
//!
//! Which mutex the waiters use is the condvar's own business: `wait_raw_then` refuses (→ `EINVAL`)
//! a wait with a second mutex while threads are blocked with the first. Threads requeued onto the
//! first mutex are no longer blocked on the condvar, so a woken waiter may go on to wait with
//! another mutex at once (the Open POSIX Test Suite's `pthread_cond_timedwait/2-5` does).
//!
//! Orderings: [`enter`] is Relaxed (the condvar's own wait_lock orders its queue); [`leave`] and
//! [`release_requeued`] are Release and the destroy's read of the count Acquire, so a waiter's (or
//! broadcaster's) last accesses to the condvar happen before the destroying thread reuses the
//! memory.

#![allow(dead_code)]

use core::sync::atomic::{
    AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};

/// Admits a waiter (it may touch the condvar until it leaves).
pub(crate) fn enter(word: &AtomicU64) {
    word.fetch_add(1, Relaxed);
}

/// Ends the admission taken by [`enter`]: the waiter's own, or a signalled waiter's that the
/// signal requeued onto the mutex (module doc). Release: pairs with the Acquire in [`any`] of a
/// destroy (module doc).
pub(crate) fn leave(word: &AtomicU64) {
    release(word, 1);
}

/// Ends `n` admissions. Release: pairs with the Acquire in [`any`] of a destroy.
fn release(word: &AtomicU64, n: usize) {
    debug_assert!(n as u64 <= word.load(Relaxed));
    word.fetch_sub(n as u64, Release);
}

/// Ends the admissions of the waiters that a `notify_all` returning `notified` requeued: all
/// of them but the woken head (module doc). The broadcaster's last access to the condvar.
pub(crate) fn release_requeued(word: &AtomicU64, notified: usize) {
    if notified > 1 {
        release(word, notified - 1);
    }
}

/// Are waiters admitted? Acquire: pairs with [`leave`] and [`release_requeued`].
pub(crate) fn any(word: &AtomicU64) -> bool {
    word.load(Acquire) != 0
}

/// How long a destroy waits for admitted waiters that are not blocked to leave, ns. They need
/// no lock (module doc), only a CPU: on an oversubscribed machine a woken thread may wait a few
/// scheduler slices (4 ms at HZ 250) before it runs. Past this the destroy reports `EBUSY`;
/// the bound exists for waiters a destroy cannot see blocking (the preload's futex waiters,
/// with a mutex glibc serves), which would otherwise keep it waiting for ever.
const DRAIN_MAX_NS: u128 = 1_000_000_000;

/// Waits, yielding the CPU, while `busy()` (admitted waiters remain, module doc). `false` as
/// soon as `blocked()` (a thread is blocked on the condvar: `EBUSY`), or if they did not leave
/// within [`DRAIN_MAX_NS`].
pub(crate) fn drained(blocked: impl Fn() -> bool, busy: impl Fn() -> bool) -> bool {
    let start = std::time::Instant::now();
    loop {
        if blocked() {
            return false;
        }
        if !busy() {
            return true;
        }
        if start.elapsed().as_nanos() > DRAIN_MAX_NS {
            return false;
        }
        std::thread::yield_now();
    }
}
