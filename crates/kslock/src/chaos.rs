//! Delay injection for tests (`--cfg kslock_chaos`): random, seeded, short delays at the
//! slow-path decision points of the OSQ, the mutex, the rwsem, the wait list and the condvar.
//!
//! On a 2-CPU machine a thread is rarely preempted between two steps of a slow path, so the
//! interleavings that a loaded many-core machine produces every second (a waker preempted
//! between publishing a grant and waking, a timed waiter whose timer fires between two
//! checks) almost never happen in a stress test. A chaos build stretches those windows: at
//! every [`point`] a thread draws from its own random stream and, with probability
//! `1 / KSLOCK_CHAOS_RATE` (default 1/3), waits before going on:
//!
//! | draw (of the delayed points) | delay | stands for |
//! |------------------------------|-------|------------|
//! | 60% | 1–511 `pause`s (≈ 0.03–14 µs) | a cache miss storm, an interrupt |
//! | 20% | `sched_yield` | preemption by a runnable peer |
//! | 15% | `nanosleep` 1–64 µs | a page fault, a short preemption |
//! | 5% | `nanosleep` 64–511 µs | preemption for a scheduler slice |
//!
//! Streams are seeded from `KSLOCK_CHAOS_SEED` (default 1) and the thread's record id, so a
//! thread's sequence of delays is reproducible for a given seed (the OS schedule is not).
//! In normal builds [`point`] is an empty `#[inline(always)]` function: no code, no branch.
//! Under loom it is also empty: loom explores the interleavings itself.
//!
//! Every call names its [`Site`], so a failing seed can be narrowed to the points that matter
//! with `KSLOCK_CHAOS_SITES=<comma-separated site names>` (default: all).

/// A decision point where delays are injected. The names say what just happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(dead_code)] // every variant is used in chaos builds; normal builds ignore the argument
pub(crate) enum Site {
    /// OSQ: joined the queue (tail swapped), not yet linked behind the predecessor.
    OsqJoined,
    /// OSQ: about to unqueue (predecessor not running or budget spent).
    OsqUnqueue,
    /// OSQ: the head is passing the queue on.
    OsqUnlock,
    /// Wait list: the wait_lock was just taken.
    WaitLocked,
    /// Wait list: about to drop the wait_lock.
    WaitUnlock,
    /// A waiter returned from `park` (woken, timed out or spurious).
    Unparked,
    /// A waiter is about to park.
    Parking,
    /// A woken (or timed-out) waiter looked at whether it heads the wait list.
    HeadCheck,
    /// A waiter decided to leave the wait list (acquired, or timed out), before unlinking.
    Leaving,
    /// Mutex: the lock fast path failed.
    MutexContended,
    /// Mutex: the unlock released the lock word, before the wake decision.
    MutexReleased,
    /// Mutex: a spinner is about to try the lock.
    MutexSpin,
    /// rwsem: a reader's fast path failed.
    ReadContended,
    /// rwsem: a writer's fast path failed.
    WriteContended,
    /// rwsem: an unlock changed the count, before the wake decision.
    RwReleased,
    /// rwsem: a waker published a grant, before waking.
    Granted,
    /// Condvar: the waiter is queued and about to release the mutex.
    CondQueued,
    /// Condvar: a notifier is about to take the condvar lock.
    CondNotify,
}

#[cfg(not(all(kslock_chaos, not(kslock_loom))))]
#[inline(always)]
pub(crate) fn point(_site: Site) {}

#[cfg(all(kslock_chaos, not(kslock_loom)))]
pub(crate) use imp::point;

#[cfg(all(kslock_chaos, not(kslock_loom)))]
mod imp {
    use super::Site;
    use core::sync::atomic::{AtomicU64, Ordering::Relaxed};
    use std::cell::Cell;

    /// Process-wide settings, read once: (rate, seed, site mask; 0 = unread).
    static RATE: AtomicU64 = AtomicU64::new(0);
    static SEED: AtomicU64 = AtomicU64::new(0);
    static SITES: AtomicU64 = AtomicU64::new(0);

    thread_local! {
        /// This thread's xorshift state (0 = not seeded yet).
        static STATE: Cell<u64> = const { Cell::new(0) };
    }

    fn settings() -> (u64, u64, u64) {
        let r = RATE.load(Relaxed);
        if r != 0 {
            return (r, SEED.load(Relaxed), SITES.load(Relaxed));
        }
        let env = |k: &str| std::env::var(k).ok();
        let rate = env("KSLOCK_CHAOS_RATE")
            .and_then(|v| v.parse::<u64>().ok())
            .filter(|&v| v >= 1)
            .unwrap_or(3);
        let seed = env("KSLOCK_CHAOS_SEED")
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(1);
        let sites = match env("KSLOCK_CHAOS_SITES") {
            None => !0,
            Some(list) => list
                .split(',')
                .filter_map(|n| site_index(n.trim()).map(|i| 1u64 << i))
                .fold(0, |a, b| a | b),
        };
        SEED.store(seed, Relaxed);
        SITES.store(sites, Relaxed);
        RATE.store(rate, Relaxed);
        (rate, seed, sites)
    }

    fn site_index(name: &str) -> Option<u32> {
        const ALL: [Site; 18] = [
            Site::OsqJoined,
            Site::OsqUnqueue,
            Site::OsqUnlock,
            Site::WaitLocked,
            Site::WaitUnlock,
            Site::Unparked,
            Site::Parking,
            Site::HeadCheck,
            Site::Leaving,
            Site::MutexContended,
            Site::MutexReleased,
            Site::MutexSpin,
            Site::ReadContended,
            Site::WriteContended,
            Site::RwReleased,
            Site::Granted,
            Site::CondQueued,
            Site::CondNotify,
        ];
        ALL.iter()
            .position(|s| format!("{s:?}").eq_ignore_ascii_case(name))
            .map(|i| i as u32)
    }

    fn next(seed: u64) -> u64 {
        STATE.with(|s| {
            let mut x = s.get();
            if x == 0 {
                // Seed per thread: the run's seed mixed with the thread's record id.
                let id = crate::thread::current().id() as u64;
                x = (seed ^ id.wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1;
            }
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            s.set(x);
            x
        })
    }

    /// Maybe delay the calling thread (see the module doc).
    pub(crate) fn point(site: Site) {
        let (rate, seed, sites) = settings();
        if sites & (1 << site as u32) == 0 {
            return;
        }
        let r = next(seed);
        if r % rate != 0 {
            return;
        }
        let kind = (r >> 8) % 20;
        let n = (r >> 16) as u32;
        let sleep_us = |us: u32| std::thread::sleep(std::time::Duration::from_micros(us as u64));
        match kind {
            0..=11 => {
                for _ in 0..(n % 511) + 1 {
                    core::hint::spin_loop();
                }
            }
            12..=15 => std::thread::yield_now(),
            16..=18 => sleep_us(n % 64 + 1),
            _ => sleep_us(n % 448 + 64),
        }
    }
}
