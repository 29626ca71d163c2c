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

/// 200 holds of 500 ns (under the spin cap of a try_lock_spin, 1 µs) by a running owner, each
/// met by one `try_lock_spin`: (wins, tries). The owner waits for each attempt before it locks
/// again, so it never competes for the lock or the spinner slot itself.
fn spin_against_running_owner(m: &Arc<RawMutex>) -> (usize, usize) {
    let m2 = m.clone();
    let held = Arc::new(AtomicBool::new(false));
    let attempts = Arc::new(AtomicUsize::new(0));
    let (held2, attempts2) = (held.clone(), attempts.clone());
    let h = std::thread::spawn(move || {
        for round in 0..200 {
            m2.lock();
            held2.store(true, Release);
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_nanos(500) {}
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
    (spin_ok, tries)
}

#[test]
fn try_lock_spin_waits_for_a_running_owner_but_not_a_sleeping_one() {
    let _serial = heavy();
    let m = Arc::new(RawMutex::new());
    // A running owner that releases within 500 ns: a lone try_lock_spin (no other spinner, so the
    // OSQ admits it) succeeds, where try_lock would fail.
    //
    // try_lock wins about 1 in 200 of these (it only wins when the hold happens to end between
    // the trier's check of `held` and its CAS); a spin that waits for the running owner wins
    // most. Require 1 in 5 in one of three rounds of 200 holds, of which the trier saw more
    // than 20: no try_lock reaches it, and a neighbour that takes a CPU for one round (the
    // owner and the trier then share a CPU, and the trier rightly stops spinning, or misses
    // the holds) does not fail the test. Chaos builds delay the spinner and the trier on
    // purpose: no ratio and no count of seen holds there (CI once saw 20 of 200 under chaos,
    // beside the binary's other tests).
    let mut results = Vec::new();
    for _ in 0..3 {
        let (spin_ok, tries) = spin_against_running_owner(&m);
        results.push((spin_ok, tries));
        if cfg!(kslock_chaos) || (tries > 20 && spin_ok * 5 >= tries) {
            break;
        }
    }
    let (spin_ok, tries) = *results.last().unwrap();
    assert!(
        cfg!(kslock_chaos) || tries > 20,
        "the trier saw too few holds: (wins, tries) per round {results:?}"
    );
    assert!(
        cfg!(kslock_chaos) || spin_ok * 5 >= tries,
        "try_lock_spin should win against a running 500 ns hold: (wins, tries) per round {results:?}"
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
    let m = Arc::new(RawMutex::new());
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

/// Runs `rounds` short rounds of `f(round, thread, mutex)` on `threads` persistent threads that
/// start each round together. Every round must end with every thread done: a round whose threads
/// stay blocked for `STALL` is a lost wakeup (someone sleeps with the lock free and nobody is
/// left to wake it), reported with its round number and the lock's state. Short rounds put
/// many round ends (the moments when no later unlock can rescue a stranded sleeper) in a run.
fn rounds_must_finish(rounds: usize, threads: usize, f: fn(usize, usize, &Mutex<u64>)) {
    const STALL: Duration = Duration::from_secs(10);
    let m = Arc::new(Mutex::new(0u64));
    let done = Arc::new(AtomicUsize::new(0));
    let start = Arc::new(Barrier::new(threads + 1));
    let hs: Vec<_> = (0..threads)
        .map(|i| {
            let (m, done, start) = (m.clone(), done.clone(), start.clone());
            std::thread::spawn(move || {
                for round in 0..rounds {
                    start.wait();
                    f(round, i, &m);
                    done.fetch_add(1, Release);
                }
            })
        })
        .collect();
    for round in 0..rounds {
        start.wait();
        let t0 = Instant::now();
        let target = (round + 1) * threads;
        while done.load(Acquire) < target {
            // SAFETY: only inspects the raw state.
            let raw = unsafe { m.raw() };
            assert!(
                t0.elapsed() < STALL,
                "round {round}: {} of {threads} threads still blocked after {STALL:?} with \
                 nobody left to wake them (lost wakeup); locked {}, waiters {}",
                target - done.load(Acquire),
                raw.is_locked(),
                raw.has_waiters(),
            );
            std::thread::yield_now();
        }
        // SAFETY: only inspects the raw state.
        let raw = unsafe { m.raw() };
        assert!(!raw.is_locked() && !raw.has_waiters(), "round {round}");
    }
    for h in hs {
        h.join().unwrap();
    }
}

/// Busy-holds for `us` microseconds (a critical section that takes real time in any build).
fn hold_us(us: u64) {
    let t = Instant::now();
    while t.elapsed() < Duration::from_micros(us) {
        std::hint::spin_loop();
    }
}

#[test]
fn timed_waiters_leaving_never_strand_a_sleeper() {
    let _serial = heavy();
    // Defect 1 of issue 8: a timed head waiter that times out right after it was woken must
    // pass the wakeup on. Rounds of untimed lockers, timed lockers with timeouts of the order of
    // the waits, and stealers that only try_lock; at the end of each round every thread must
    // have finished. A stranded sleeper shows as a stalled round. (The window needs a
    // preemption at the right moment: a chaos build injects those on 2 CPUs.)
    let rounds = if cfg!(kslock_chaos) { 20_000 } else { 5_000 };
    rounds_must_finish(rounds, 6, |round, i, m| {
        {
            let x = (round * 31 + i * 17) % 97;
            match (i + round) % 6 {
                // A holder that sleeps in the critical section (locktorture's long hold), so
                // that the others queue and park behind it.
                0 => {
                    let mut g = m.lock();
                    *g += 1;
                    std::thread::sleep(Duration::from_micros(x as u64 % 40));
                }
                1 | 2 => {
                    let mut g = m.lock();
                    *g += 1;
                    hold_us((x % 4) as u64);
                }
                3 | 4 => {
                    let t = Duration::from_micros((x % 80) as u64 + 1);
                    if let Some(mut g) = m.try_lock_for(t) {
                        *g += 1;
                    }
                }
                _ => {
                    for _ in 0..400 {
                        if let Some(mut g) = m.try_lock() {
                            *g += 1;
                            break;
                        }
                        std::hint::spin_loop();
                    }
                }
            }
        }
    });
}
