//! Timed locks, try_lock_spin, fair unlock, and signals interrupting waiters (EINTR).
#![cfg(not(kslock_loom))]

use kslock::{Mutex, RawMutex};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::*};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// These tests time things (holds, timeouts, signal storms): run them one at a time so that
/// their threads do not take each other's CPUs on a 2-CPU machine.
static HEAVY: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn heavy() -> std::sync::MutexGuard<'static, ()> {
    HEAVY.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn try_lock_for_times_out_and_leaves_the_lock_consistent() {
    let _serial = heavy();
    let m = Arc::new(Mutex::new(5));
    let g = m.lock();
    let m2 = m.clone();
    let h = std::thread::spawn(move || {
        let t0 = Instant::now();
        let r = m2.try_lock_for(Duration::from_millis(30));
        (r.is_none(), t0.elapsed())
    });
    let (timed_out, took) = h.join().unwrap();
    assert!(timed_out);
    assert!(
        took >= Duration::from_millis(30),
        "returned early: {took:?}"
    );
    drop(g);
    // Nothing left behind: fast paths work again, no stale WAITERS.
    // SAFETY: we only inspect the raw lock state.
    let raw = unsafe { m.raw() };
    assert!(!raw.is_locked() && !raw.has_waiters());
    assert_eq!(*m.try_lock().unwrap(), 5);
}

#[test]
fn try_lock_until_succeeds_when_released_in_time() {
    let _serial = heavy();
    let m = Arc::new(Mutex::new(()));
    let g = m.lock();
    let m2 = m.clone();
    let go = Arc::new(Barrier::new(2));
    let go2 = go.clone();
    let h = std::thread::spawn(move || {
        go2.wait();
        m2.try_lock_until(Instant::now() + Duration::from_secs(10))
            .is_some()
    });
    go.wait();
    std::thread::sleep(Duration::from_millis(20));
    drop(g);
    assert!(h.join().unwrap());
}

#[test]
fn many_timed_waiters_cancel_without_losing_the_untimed_one() {
    let _serial = heavy();
    // Timed waiters leave the queue around an untimed one; the untimed one must still be woken.
    for _ in 0..20 {
        let m = Arc::new(Mutex::new(0u32));
        let g = m.lock();
        let got = Arc::new(AtomicUsize::new(0));
        let mut hs = vec![];
        for i in 0..6 {
            let (m, got) = (m.clone(), got.clone());
            hs.push(std::thread::spawn(move || {
                if i == 3 {
                    *m.lock() += 1;
                    got.fetch_add(1, Relaxed);
                } else if m.try_lock_for(Duration::from_micros(300 * i)).is_some() {
                    got.fetch_add(1, Relaxed);
                }
            }));
        }
        std::thread::sleep(Duration::from_millis(3));
        drop(g);
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(*m.lock(), 1, "the untimed waiter got the lock exactly once");
        assert!(got.load(Relaxed) >= 1);
    }
}

#[test]
fn try_lock_spin_waits_for_a_running_owner_but_not_a_sleeping_one() {
    let _serial = heavy();
    let m = Arc::new(RawMutex::<kslock::policy::DefaultPolicy>::new());
    // A running owner that releases within 2 µs: a lone try_lock_spin (no other spinner, so the
    // OSQ admits it) succeeds, where try_lock would fail. The owner waits for each attempt
    // before it locks again, so it never competes for the lock or the spinner slot itself.
    let m2 = m.clone();
    let held = Arc::new(AtomicBool::new(false));
    let attempts = Arc::new(AtomicUsize::new(0));
    let (held2, attempts2) = (held.clone(), attempts.clone());
    let h = std::thread::spawn(move || {
        for round in 0..200 {
            m2.lock();
            held2.store(true, Release);
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_micros(2) {}
            held2.store(false, Release);
            // SAFETY: held by this thread.
            unsafe { m2.unlock() };
            // Wait (bounded) for the trier's attempt on this round, then for it to unlock.
            let t0 = Instant::now();
            while attempts2.load(Acquire) <= round && t0.elapsed() < Duration::from_millis(5) {}
            while m2.is_locked() {
                std::hint::spin_loop();
            }
        }
    });
    let (mut spin_ok, mut tries) = (0, 0);
    while !h.is_finished() {
        if held.load(Acquire) {
            tries += 1;
            if m.try_lock_spin() {
                spin_ok += 1;
                // SAFETY: acquired above.
                unsafe { m.unlock() };
            }
            attempts.fetch_add(1, Release);
            while held.load(Acquire) {
                std::hint::spin_loop();
            }
        }
    }
    h.join().unwrap();
    assert!(tries > 20, "the trier saw too few holds: {tries}");
    assert!(
        spin_ok * 2 >= tries,
        "try_lock_spin should mostly win against a running 2 µs hold: {spin_ok}/{tries}"
    );

    // A sleeping owner: try_lock_spin fails promptly (the owner is not running).
    let m3 = m.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    let h = std::thread::spawn(move || {
        m3.lock();
        tx.send(()).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        // SAFETY: held by this thread.
        unsafe { m3.unlock() };
    });
    rx.recv().unwrap();
    let t0 = Instant::now();
    assert!(!m.try_lock_spin());
    assert!(
        t0.elapsed() < Duration::from_millis(100),
        "spun on a sleeping owner: {:?}",
        t0.elapsed()
    );
    h.join().unwrap();
}

#[test]
fn unlock_fair_hands_the_lock_to_the_waiter() {
    let _serial = heavy();
    let m = Arc::new(RawMutex::<kslock::policy::DefaultPolicy>::new());
    m.lock();
    let m2 = m.clone();
    let h = std::thread::spawn(move || {
        m2.lock();
        // SAFETY: held by this thread.
        unsafe { m2.unlock() };
    });
    while !m.has_waiters() {
        std::thread::sleep(Duration::from_millis(1));
    }
    // SAFETY: held by this thread.
    unsafe { lock_api::RawMutexFair::unlock_fair(&*m) };
    // The waiter was handed the lock: we cannot take it back with try_lock until it unlocks.
    assert!(
        !m.try_lock() || {
            // It might already have run and unlocked; then try_lock succeeding is fine.
            // SAFETY: acquired just now.
            unsafe { m.unlock() };
            true
        }
    );
    h.join().unwrap();
    assert!(!m.is_locked());
}

extern "C" fn noop_handler(_: libc::c_int) {}

#[test]
fn signals_interrupting_waiters_lose_nothing() {
    let _serial = heavy();
    // Waiters sleeping in futex_wait get EINTR from a signal storm; the lock must still be
    // handed through every waiter and the shared count must be exact.
    // SAFETY: installing a no-op handler without SA_RESTART so futex waits return EINTR.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = noop_handler as extern "C" fn(libc::c_int) as libc::sighandler_t;
        sa.sa_flags = 0;
        libc::sigemptyset(&mut sa.sa_mask);
        assert_eq!(libc::sigaction(libc::SIGUSR1, &sa, std::ptr::null_mut()), 0);
    }
    let m = Arc::new(Mutex::new(0u64));
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = std::sync::mpsc::channel();
    let hs: Vec<_> = (0..6)
        .map(|_| {
            let (m, tx) = (m.clone(), tx.clone());
            std::thread::spawn(move || {
                // SAFETY: pthread_self has no preconditions.
                tx.send(unsafe { libc::pthread_self() }).unwrap();
                for _ in 0..3000 {
                    let mut g = m.lock();
                    *g += 1;
                    if *g % 500 == 0 {
                        std::thread::sleep(Duration::from_micros(300));
                    }
                }
            })
        })
        .collect();
    let tids: Vec<libc::pthread_t> = (0..6).map(|_| rx.recv().unwrap()).collect();
    let stop2 = stop.clone();
    let signaller = std::thread::spawn(move || {
        let mut sent = 0u64;
        while !stop2.load(Relaxed) {
            for &t in &tids {
                // SAFETY: the threads are alive until `stop` (joined after); ESRCH is ignored.
                unsafe { libc::pthread_kill(t, libc::SIGUSR1) };
                sent += 1;
            }
            std::thread::sleep(Duration::from_micros(50));
        }
        sent
    });
    for h in hs {
        h.join().unwrap();
    }
    stop.store(true, Relaxed);
    let sent = signaller.join().unwrap();
    assert!(sent > 0);
    assert_eq!(
        *m.lock(),
        6 * 3000,
        "an acquisition was lost or duplicated under EINTR"
    );
}
