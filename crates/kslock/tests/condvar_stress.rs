//! Condvar under stress: no lost wakeups (every produced item is consumed, every waiter of a
//! broadcast wakes), requeued waiters are woken by mutex unlocks, timeouts mixed in.
#![cfg(not(kslock_loom))]

use kslock::{Condvar, Mutex};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering::*};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn producer_consumer_loses_no_wakeup() {
    const ITEMS: usize = 20_000;
    const CONSUMERS: usize = 6;
    let q = Arc::new((Mutex::new((VecDeque::new(), false)), Condvar::new()));
    let consumed = Arc::new(AtomicUsize::new(0));
    let hs: Vec<_> = (0..CONSUMERS)
        .map(|i| {
            let (q, consumed) = (q.clone(), consumed.clone());
            std::thread::spawn(move || {
                let mut g = q.0.lock();
                loop {
                    if let Some(_item) = g.0.pop_front() {
                        consumed.fetch_add(1, Relaxed);
                        continue;
                    }
                    if g.1 {
                        return;
                    }
                    // Half the consumers use timed waits, which must not lose a notification
                    // either (a timed-out waiter just loops).
                    if i % 2 == 0 {
                        q.1.wait(&mut g);
                    } else {
                        let _ = q.1.wait_for(&mut g, Duration::from_micros(200));
                    }
                }
            })
        })
        .collect();
    for i in 0..ITEMS {
        q.0.lock().0.push_back(i);
        q.1.notify_one();
    }
    q.0.lock().1 = true;
    q.1.notify_all();
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(consumed.load(Relaxed), ITEMS);
}

#[test]
fn notify_all_wakes_every_waiter_every_round() {
    const WAITERS: usize = 8;
    const ROUNDS: u64 = 300;
    let st = Arc::new((Mutex::new((0u64, 0usize)), Condvar::new(), Condvar::new()));
    let hs: Vec<_> = (0..WAITERS)
        .map(|_| {
            let st = st.clone();
            std::thread::spawn(move || {
                let mut seen = 0;
                let mut g = st.0.lock();
                while seen < ROUNDS {
                    // Report arrival for this round, then wait for the generation to move.
                    g.1 += 1;
                    st.2.notify_one();
                    let gen = g.0;
                    st.1.wait_while(&mut g, |s| s.0 == gen);
                    seen += 1;
                }
            })
        })
        .collect();
    for round in 0..ROUNDS {
        let mut g = st.0.lock();
        st.2.wait_while(&mut g, |s| s.1 < WAITERS);
        g.1 = 0;
        g.0 = round + 1;
        // Alternate broadcasting with and without the mutex held: requeueing must work both ways.
        if round % 2 == 0 {
            st.1.notify_all();
            drop(g);
        } else {
            drop(g);
            st.1.notify_all();
        }
    }
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(st.0.lock().0, ROUNDS);
}

#[test]
fn wait_while_for_reports_the_condition_at_timeout() {
    let m = Mutex::new(3);
    let cv = Condvar::new();
    let mut g = m.lock();
    let r = cv.wait_while_for(&mut g, |v| *v == 3, Duration::from_millis(10));
    assert!(r.timed_out());
    let r = cv.wait_while_for(&mut g, |v| *v == 4, Duration::from_millis(10));
    assert!(
        !r.timed_out(),
        "condition false at once: no wait, no timeout"
    );
}

#[test]
fn timeouts_of_any_size_never_panic() {
    // Issue 8, defect 5: `wait_while_for(.., Duration::MAX)` panicked ("overflow when adding
    // duration to instant"). A timeout past the clock's range means "no timeout".
    let st = Arc::new((Mutex::new(false), Condvar::new()));
    let mut g = st.0.lock();
    let r = st.1.wait_while_for(&mut g, |ready| *ready, Duration::MAX);
    assert!(!r.timed_out(), "condition false at once: no wait");
    assert!(st.1.wait_for(&mut g, Duration::ZERO).timed_out());
    let st2 = st.clone();
    let h = std::thread::spawn(move || {
        let mut g = st2.0.lock();
        let r = st2.1.wait_while_for(&mut g, |ready| !*ready, Duration::MAX);
        assert!(!r.timed_out());
        assert!(*g);
    });
    drop(g);
    // Notify until the waiter has seen the flag (it may not have started waiting yet).
    while !h.is_finished() {
        *st.0.lock() = true;
        st.1.notify_all();
        std::thread::yield_now();
    }
    h.join().unwrap();
    let m = Mutex::new(());
    let mut g = m.lock();
    let deadline = std::time::Instant::now() + Duration::from_millis(1);
    assert!(st.1.wait_until(&mut g, deadline).timed_out());
    let r = st.1.wait_while_until(&mut g, |_| true, deadline);
    assert!(r.timed_out(), "a deadline in the past times out at once");
}

#[test]
fn broadcasts_racing_timeouts_count_every_waiter_once() {
    // Waiters with timeouts of 0–63 µs against a thread broadcasting in a loop. A timeout and a
    // notification race on one CAS (module doc of the condvar): the broadcasts' counts add up
    // to exactly the waits that returned notified, and an embedder's count of admitted waiters
    // (each waiter ends its own in `left` unless requeued; the broadcaster ends the requeued
    // ones', `n - 1`, after `notify_all`) never goes negative and ends at zero.
    use kslock::{Left, RawMutex};
    use std::sync::atomic::AtomicIsize;
    const WAITERS: usize = 6;
    // Under delay injection every wait sleeps at a few points: fewer of them.
    const WAITS: usize = if cfg!(kslock_chaos) { 300 } else { 3_000 };
    struct St {
        m: RawMutex,
        cv: Condvar,
        admitted: AtomicIsize,
        notified: AtomicUsize,
    }
    let st = Arc::new(St {
        m: RawMutex::new(),
        cv: Condvar::new(),
        admitted: AtomicIsize::new(0),
        notified: AtomicUsize::new(0),
    });
    let leave = |st: &St, how: Left| {
        if how != Left::Requeued {
            assert!(
                st.admitted.fetch_sub(1, SeqCst) > 0,
                "admission count negative"
            );
        }
    };
    let hs: Vec<_> = (0..WAITERS)
        .map(|i| {
            let st = st.clone();
            std::thread::spawn(move || {
                for k in 0..WAITS {
                    let us = ((i * 7 + k * 13) % 64) as u64;
                    let deadline = kslock_now_ns() + us * 1000;
                    st.m.lock();
                    st.admitted.fetch_add(1, SeqCst);
                    // SAFETY: held by this thread.
                    let timed_out = unsafe {
                        st.cv
                            .wait_raw_then(&st.m, Some(deadline), || true, |h| leave(&st, h))
                    }
                    .expect("one mutex");
                    if !timed_out {
                        st.notified.fetch_add(1, SeqCst);
                    }
                    // SAFETY: held again on return.
                    unsafe { st.m.unlock() };
                }
            })
        })
        .collect();
    let mut counted = 0;
    // Until every waiter has finished (or panicked: `join` below reports it).
    while hs.iter().any(|h| !h.is_finished()) {
        st.m.lock();
        let n = st.cv.notify_all();
        // SAFETY: held.
        unsafe { st.m.unlock() };
        if n > 1 {
            assert!(st.admitted.fetch_sub(n as isize - 1, SeqCst) >= n as isize - 1);
        }
        counted += n;
        std::thread::yield_now();
    }
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(
        counted,
        st.notified.load(SeqCst),
        "broadcast counts vs notified waits"
    );
    assert_eq!(st.admitted.load(SeqCst), 0, "an admission was not ended");
    assert!(counted > 0, "no broadcast found a waiter");
    assert!(counted < WAITERS * WAITS, "no wait timed out");
}

/// `CLOCK_MONOTONIC` now, ns (the clock of `wait_raw`'s deadlines).
fn kslock_now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
