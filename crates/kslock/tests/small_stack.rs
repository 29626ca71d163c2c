//! Issue 8, defect 4: every lock path runs in a few hundred bytes of stack, so threads with the
//! smallest stacks glibc allows can use kslock, also when their registration grows the record
//! pool (C programs and the preload often run 64 KiB threads; std's mutex works at 16 KiB).
#![cfg(not(kslock_loom))]

use kslock::{Condvar, Mutex, RwSem};
use std::sync::{Arc, Barrier};
use std::time::Duration;

/// glibc's PTHREAD_STACK_MIN on x86_64.
const SMALL: usize = 16 * 1024;

fn exercise(m: &Mutex<u64>, rw: &RwSem<u64>, cv: &Condvar) {
    for _ in 0..200 {
        *m.lock() += 1;
        *rw.write() += 1;
        let _r = rw.read();
    }
    if let Some(mut g) = m.try_lock_for(Duration::from_micros(50)) {
        *g += 1;
    }
    let mut g = m.lock();
    let _ = cv.wait_for(&mut g, Duration::from_micros(100));
}

#[test]
fn locks_work_in_threads_with_minimal_stacks_that_grow_the_pool() {
    let m = Arc::new(Mutex::new(0u64));
    let rw = Arc::new(RwSem::new(0u64));
    let cv = Arc::new(Condvar::new());
    // Keep more than one pool segment (64 records) of threads alive, so that the small-stack
    // threads below register into new segments.
    const PARKED: usize = 80;
    let release = Arc::new(Barrier::new(PARKED + 1));
    let parked: Vec<_> = (0..PARKED)
        .map(|_| {
            let (m, release) = (m.clone(), release.clone());
            std::thread::spawn(move || {
                *m.lock() += 1;
                release.wait();
            })
        })
        .collect();
    let small: Vec<_> = (0..8)
        .map(|_| {
            let (m, rw, cv) = (m.clone(), rw.clone(), cv.clone());
            std::thread::Builder::new()
                .stack_size(SMALL)
                .spawn(move || exercise(&m, &rw, &cv))
                .unwrap()
        })
        .collect();
    for h in small {
        h.join().expect("a small-stack thread failed");
    }
    release.wait();
    for h in parked {
        h.join().unwrap();
    }
    assert!(*m.lock() >= PARKED as u64 + 8 * 200);
    assert_eq!(*rw.read(), 8 * 200);
}
