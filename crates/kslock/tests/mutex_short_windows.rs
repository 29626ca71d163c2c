//! The mutex's rotation with fairness windows far shorter than a wakeup (10 µs): a due head
//! must still get its handover. Its own test binary, because the window override is read once
//! per process; an experiment build (`--cfg kslock_ablate`), the only build that reads it.
#![cfg(all(kslock_ablate, not(kslock_loom)))]

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Barrier};
use std::time::Duration;

#[test]
fn short_windows_still_rotate() {
    // Before any kslock lock runs in this process (one test in this binary).
    std::env::set_var("KSLOCK_WINDOW_MIN_NS", "10000");
    assert_eq!(kslock::fairness::window_ns().0, 10_000);
    // 48 threads on 2 CPUs re-locking back to back, windows of 10 µs: every turn is a
    // handover whose next head is due before it runs, often while the lock is still on its
    // way to the previous head (PICKUP), when it cannot ask for its own handover yet. A head
    // that then waited on the new owner without asking once that owner had picked the lock up
    // left it batching for scheduler ticks (lockbench, 96 threads, CS load 1–100: max/min
    // per-thread acquisitions 300–15 000; 2.6–2.9 after the fix). Here the old code gave
    // max/min 140–250; the fixed one 1.95–11.5 over 45 debug runs on the 2-CPU VM (most
    // below 5; the tail is a thread whose scheduler slices found the lock taken), so the
    // bound is 32: a quarter of the failure's lowest value, 2.8× the passing tail.
    const THREADS: usize = 48;
    let m = Arc::new(kslock::Mutex::new(0u64));
    let stop = Arc::new(AtomicBool::new(false));
    let start = Arc::new(Barrier::new(THREADS + 1));
    let hs: Vec<_> = (0..THREADS)
        .map(|_| {
            let (m, stop, start) = (m.clone(), stop.clone(), start.clone());
            std::thread::spawn(move || {
                let mut n = 0u64;
                start.wait();
                while !stop.load(Relaxed) {
                    let mut g = m.lock();
                    *g += 1;
                    for _ in 0..20 {
                        core::hint::spin_loop();
                    }
                    drop(g);
                    n += 1;
                }
                n
            })
        })
        .collect();
    start.wait();
    std::thread::sleep(Duration::from_millis(1500));
    stop.store(true, Relaxed);
    let counts: Vec<u64> = hs.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(*m.lock(), counts.iter().sum::<u64>(), "lost updates");
    eprintln!("{THREADS} threads, 10 µs windows: {counts:?}");
    let (min, max) = (*counts.iter().min().unwrap(), *counts.iter().max().unwrap());
    // Under delay injection (`--cfg kslock_chaos`) a third of the slow-path points may sleep
    // up to 511 µs, fifty times the window, so the operations a thread gets in its scheduler
    // slices depend on its delay draws more than on the rotation: with the fix, max/min was
    // 3.0–14.1 over 100 chaos runs here and 18 once in CI (the lowest thread waited no longer
    // than the others, max gap 63–84 ms); the old code gave 5.5–19.7, so the ratio tells the
    // two apart only without chaos. The chaos build still checks the count and completion.
    if cfg!(not(kslock_chaos)) {
        assert!(
            max <= 32 * min,
            "starvation: max/min = {max}/{min}: {counts:?}"
        );
    }
}
