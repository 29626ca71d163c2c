//! locktorture-style stress of `kslock::Mutex`: more threads than CPUs, random hold times,
//! exclusion verified with a shared check, per-thread acquisitions counted, and starvation
//! bounded.
#![cfg(not(kslock_loom))]

use kslock::policy::{MutexPolicy, PackedOsq};
use kslock::{Mutex, MutexWith};
use rand::{rngs::SmallRng, Rng, SeedableRng};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// The tests of this file each oversubscribe the 2 CPUs on purpose; run them one at a time so
/// that each measures its own lock, not its neighbours'.
static HEAVY: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn heavy() -> std::sync::MutexGuard<'static, ()> {
    HEAVY.lock().unwrap_or_else(|e| e.into_inner())
}

struct Shared {
    /// Not atomic-RMW'd under the lock: a plain read-modify-write that loses updates unless the
    /// mutex excludes.
    counter: std::cell::UnsafeCell<u64>,
    inside: AtomicUsize,
    violations: AtomicUsize,
}
// SAFETY: `counter` is only touched under the mutex (which is what the test checks).
unsafe impl Sync for Shared {}

/// Runs `threads` lockers for `dur`; returns per-thread acquisition counts after checking
/// exclusion and the lost-update counter.
fn torture<P: MutexPolicy>(threads: usize, dur: Duration, max_hold_pauses: u32) -> Vec<u64> {
    let _serial = heavy();
    let m = Arc::new(MutexWith::<P, ()>::new(()));
    let sh = Arc::new(Shared {
        counter: 0.into(),
        inside: AtomicUsize::new(0),
        violations: AtomicUsize::new(0),
    });
    let stop = Arc::new(AtomicBool::new(false));
    let start = Arc::new(Barrier::new(threads + 1));
    let hs: Vec<_> = (0..threads)
        .map(|i| {
            let (m, sh, stop, start) = (m.clone(), sh.clone(), stop.clone(), start.clone());
            std::thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(i as u64 * 7919 + 1);
                let mut n = 0u64;
                start.wait();
                while !stop.load(Relaxed) {
                    let hold = rng.gen_range(0..=max_hold_pauses);
                    let g = m.lock();
                    if sh.inside.fetch_add(1, Relaxed) != 0 {
                        sh.violations.fetch_add(1, Relaxed);
                    }
                    // SAFETY: under the mutex (if it excludes; the counter check below tells).
                    unsafe { *sh.counter.get() += 1 };
                    for _ in 0..hold {
                        core::hint::spin_loop();
                    }
                    // Rarely hold across a sleep (locktorture's long hold), so waiters park.
                    if rng.gen_ratio(1, 4096) {
                        std::thread::sleep(Duration::from_micros(200));
                    }
                    sh.inside.fetch_sub(1, Relaxed);
                    drop(g);
                    n += 1;
                    for _ in 0..rng.gen_range(0..64) {
                        core::hint::spin_loop();
                    }
                }
                n
            })
        })
        .collect();
    start.wait();
    std::thread::sleep(dur);
    stop.store(true, Relaxed);
    let counts: Vec<u64> = hs.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(
        sh.violations.load(Relaxed),
        0,
        "two threads inside the critical section"
    );
    // SAFETY: all threads joined.
    assert_eq!(
        unsafe { *sh.counter.get() },
        counts.iter().sum::<u64>(),
        "lost updates: exclusion failed"
    );
    assert!(!m.is_locked());
    counts
}

/// Starvation bound: every thread completes at least one acquisition, and the most successful
/// thread does at most `ratio` times the work of the least successful one.
fn assert_no_starvation(counts: &[u64], ratio: u64) {
    let (min, max) = (*counts.iter().min().unwrap(), *counts.iter().max().unwrap());
    assert!(min > 0, "a thread never got the lock: {counts:?}");
    assert!(
        max <= ratio * min,
        "starvation: max/min = {max}/{min} > {ratio}: {counts:?}"
    );
}

#[test]
fn mutex_excludes_and_bounds_starvation_oversubscribed() {
    let counts = torture::<kslock::policy::DefaultPolicy>(16, Duration::from_millis(1500), 200);
    // With handoff on, no thread of 16 on 2 CPUs is starved. locktorture flags max > 2 × min;
    // measured here max/min = 1.6–1.9 over 1.5 s (3 runs on the 2-vCPU VM, 206027f), 1.9–2.1 on
    // 4fa5d40 with these tests serialised, and 1.8–2.95
    // on 4fa5d40 with a loom build competing for the CPUs. The test allows 4× for noisy CI
    // machines; a lock that lets spinners starve sleepers exceeds it.
    eprintln!("16 threads: {counts:?}");
    assert_no_starvation(&counts, 4);
}

#[test]
fn mutex_excludes_with_packed_osq() {
    let counts = torture::<PackedOsq>(6, Duration::from_millis(500), 50);
    assert!(counts.iter().all(|&c| c > 0), "{counts:?}");
}

#[test]
fn mutex_excludes_with_short_sections_two_threads() {
    let counts = torture::<kslock::policy::DefaultPolicy>(2, Duration::from_millis(500), 1);
    assert!(counts.iter().sum::<u64>() > 1000);
}

#[test]
fn wait_is_bounded_under_a_stream_of_lockers() {
    let _serial = heavy();
    // A stream of 8 lockers keeps the lock busy; a late arrival's acquisition wait must stay
    // bounded (handoff): measure the worst of 200 acquisitions.
    let m = Arc::new(Mutex::new(0u64));
    let stop = Arc::new(AtomicBool::new(false));
    let hs: Vec<_> = (0..8)
        .map(|_| {
            let (m, stop) = (m.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Relaxed) {
                    let mut g = m.lock();
                    *g += 1;
                    for _ in 0..100 {
                        core::hint::spin_loop();
                    }
                }
            })
        })
        .collect();
    let worst = AtomicU64::new(0);
    for _ in 0..200 {
        let t0 = Instant::now();
        let g = m.lock();
        worst.fetch_max(t0.elapsed().as_micros() as u64, Relaxed);
        drop(g);
        std::thread::sleep(Duration::from_micros(100));
    }
    stop.store(true, Relaxed);
    for h in hs {
        h.join().unwrap();
    }
    // Generous bound for a noisy 2-CPU VM: without handoff a waiter can lose for whole
    // scheduler slices many times over.
    let w = worst.load(Relaxed);
    assert!(w < 200_000, "worst acquisition wait {w} µs");
}

/// A mutex used as a binary semaphore: each holder passes its hold to a releaser thread, which
/// releases it with `unlock_on_behalf` while the other lockers, and the holder itself (locking
/// again with `lock_or_await_release`), wait, spin or sleep. Exclusion holds, every release
/// finds the hold, and no locker is stranded.
#[test]
fn holds_released_on_behalf_of_the_holder_exclude() {
    use kslock::RawMutex;
    use lock_api::RawMutex as _;
    let _g = heavy();
    const LOCKERS: usize = 4;
    const PER_LOCKER: u64 = 2_000;
    let m = Arc::new(RawMutex::INIT);
    let inside = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let releaser = {
        let (m, inside) = (m.clone(), inside.clone());
        std::thread::spawn(move || {
            let mut n = 0u64;
            while rx.recv().is_ok() {
                assert_eq!(inside.fetch_sub(1, SeqCst), 1, "two holders at once");
                // SAFETY: the holder handed its hold over and will not release it itself.
                assert!(unsafe { m.unlock_on_behalf() }, "the hold was not there");
                n += 1;
            }
            n
        })
    };
    let lockers: Vec<_> = (0..LOCKERS)
        .map(|_| {
            let (m, inside, tx) = (m.clone(), inside.clone(), tx.clone());
            std::thread::spawn(move || {
                for _ in 0..PER_LOCKER {
                    assert!(m.lock_or_await_release(None));
                    assert_eq!(inside.fetch_add(1, SeqCst), 0, "two holders at once");
                    tx.send(()).unwrap();
                }
            })
        })
        .collect();
    drop(tx);
    for l in lockers {
        l.join().unwrap();
    }
    assert_eq!(releaser.join().unwrap(), LOCKERS as u64 * PER_LOCKER);
    assert!(!m.is_locked() && !m.has_waiters());
    // Not locked: nothing to release.
    // SAFETY: no hold exists.
    assert!(!unsafe { m.unlock_on_behalf() });
}
