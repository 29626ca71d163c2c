//! loom models of the mutex and condvar protocols. Run with
//! `RUSTFLAGS="--cfg kslock_loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p kslock --release --test loom_mutex`.
//! Under loom the futex is a check-and-sleep under one bucket lock, so a lost wakeup is a loom
//! deadlock; timed waits time out at once; spins last 3 steps.
#![cfg(kslock_loom)]

use kslock::{Condvar, Left, RawMutex};
use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicBool, AtomicIsize, AtomicUsize, Ordering::*};
use loom::sync::Arc;

type M = RawMutex;

struct Guarded {
    m: M,
    // loom reports a data race if two threads are ever inside at once.
    v: UnsafeCell<usize>,
}
// SAFETY: `v` is only accessed under `m` (what the model checks).
unsafe impl Sync for Guarded {}
// SAFETY: as above.
unsafe impl Send for Guarded {}

fn guarded() -> Arc<Guarded> {
    Arc::new(Guarded {
        m: M::new(),
        v: UnsafeCell::new(0),
    })
}

/// Two threads running `f` on `g`.
fn spawn_two(g: &Arc<Guarded>, f: fn(&Guarded)) -> Vec<loom::thread::JoinHandle<()>> {
    (0..2)
        .map(|_| {
            let g = g.clone();
            loom::thread::spawn(move || f(&g))
        })
        .collect()
}

/// After every thread joined: `n` increments, and the mutex free with no waiter left.
fn assert_done(g: &Guarded, n: usize) {
    // SAFETY: all threads joined.
    assert_eq!(g.v.with_mut(|p| unsafe { *p }), n);
    assert!(!g.m.is_locked() && !g.m.has_waiters());
}

/// Ends one admission of an embedder's count of condvar waiters (the C layers' destroy count,
/// module doc of the condvar), which must not go negative.
fn end_admission(admitted: &AtomicIsize) {
    assert!(
        admitted.fetch_sub(1, Relaxed) > 0,
        "admission count went negative"
    );
}

/// A waiter's `left` callback: it ends its own admission unless it was requeued (its notifier
/// ends that one).
fn leave_unless_requeued(admitted: &AtomicIsize, how: Left) {
    if how != Left::Requeued {
        end_admission(admitted);
    }
}

/// A mutex, a condvar on it, a "stop waiting" flag and an embedder's count of admitted
/// condvar waiters ([`end_admission`]).
fn cv_admitting() -> Arc<(M, Condvar, AtomicBool, AtomicIsize)> {
    Arc::new((
        M::new(),
        Condvar::new(),
        AtomicBool::new(false),
        AtomicIsize::new(0),
    ))
}

fn incr(g: &Guarded) {
    incr_then_unlock(g, false);
}

fn incr_fair(g: &Guarded) {
    incr_then_unlock(g, true);
}

fn incr_then_unlock(g: &Guarded, fair: bool) {
    g.m.lock();
    // SAFETY: under the mutex.
    g.v.with_mut(|p| unsafe { *p += 1 });
    // SAFETY: held by this thread.
    unsafe {
        if fair {
            g.m.unlock_fair()
        } else {
            g.m.unlock()
        }
    };
}

#[test]
fn loom_mutex_lock_unlock_three_threads() {
    loom::model(|| {
        let g = guarded();
        let hs = spawn_two(&g, incr);
        incr(&g);
        for h in hs {
            h.join().unwrap();
        }
        assert_done(&g, 3);
    });
}

#[test]
fn loom_mutex_fair_unlock_hands_off() {
    // unlock_fair forces the handoff/PICKUP path whenever a waiter is queued.
    loom::model(|| {
        let g = guarded();
        let g2 = g.clone();
        let h = loom::thread::spawn(move || incr(&g2));
        g.m.lock();
        // SAFETY: under the mutex.
        g.v.with_mut(|p| unsafe { *p += 1 });
        // SAFETY: held by this thread.
        unsafe { g.m.unlock_fair() };
        incr(&g);
        h.join().unwrap();
        assert_done(&g, 3);
    });
}

#[test]
fn loom_mutex_fair_unlocks_hand_down_the_queue() {
    // Two lockers queue behind a holder; its fair unlock hands the lock to the first and makes
    // the second head (woken to start its window; windows are empty under loom), and the
    // first's fair unlock hands the lock to it.
    loom::model(|| {
        let g = guarded();
        g.m.lock();
        let hs = spawn_two(&g, incr_fair);
        // SAFETY: under the mutex.
        g.v.with_mut(|p| unsafe { *p += 1 });
        // SAFETY: held by this thread.
        unsafe { g.m.unlock_fair() };
        for h in hs {
            h.join().unwrap();
        }
        assert_done(&g, 3);
    });
}

/// A thread releases the hold of another (`unlock_on_behalf`) while a third waits for the lock:
/// the waiter gets it (whether the release wakes it, hands it over or finds it spinning).
#[test]
fn loom_mutex_unlock_on_behalf_of_the_holder() {
    loom::model(|| {
        let g = guarded();
        g.m.lock();
        let g2 = g.clone();
        let waiter = loom::thread::spawn(move || incr(&g2));
        let g3 = g.clone();
        // SAFETY: the main thread never releases its hold itself.
        let releaser = loom::thread::spawn(move || assert!(unsafe { g3.m.unlock_on_behalf() }));
        releaser.join().unwrap();
        waiter.join().unwrap();
        assert_done(&g, 1);
    });
}

/// The holder locks again (`lock_or_await_release`) and waits, as any locker, for another
/// thread to release its first hold on its behalf; then a second locker contends.
#[test]
fn loom_mutex_holder_awaits_the_release_on_its_behalf() {
    loom::model(|| {
        let g = guarded();
        g.m.lock();
        let g2 = g.clone();
        // SAFETY: the main thread never releases this hold itself.
        let releaser = loom::thread::spawn(move || {
            assert!(unsafe { g2.m.unlock_on_behalf() });
            incr(&g2);
        });
        assert!(g.m.lock_or_await_release(None));
        // SAFETY: under the mutex (the new hold).
        g.v.with_mut(|p| unsafe { *p += 1 });
        // SAFETY: held by this thread.
        unsafe { g.m.unlock() };
        releaser.join().unwrap();
        assert_done(&g, 2);
    });
}

#[test]
fn loom_mutex_try_lock_spin_excludes() {
    loom::model(|| {
        let g = guarded();
        let g2 = g.clone();
        let h = loom::thread::spawn(move || incr(&g2));
        if g.m.try_lock_spin() {
            // SAFETY: under the mutex.
            g.v.with_mut(|p| unsafe { *p += 1 });
            // SAFETY: held.
            unsafe { g.m.unlock() };
        }
        h.join().unwrap();
        assert!(!g.m.is_locked() && !g.m.has_waiters());
    });
}

#[test]
fn loom_mutex_timed_waiter_cancels_cleanly() {
    // A timed waiter times out (at once, under loom) while another thread holds and a third
    // waits untimed: the untimed waiter must still get the lock, and no flag may be left.
    loom::model(|| {
        let g = guarded();
        let g2 = g.clone();
        let g3 = g.clone();
        let timed = loom::thread::spawn(move || {
            if g2.m.try_lock_for(std::time::Duration::from_millis(1)) {
                // SAFETY: held.
                unsafe { g2.m.unlock() };
            }
        });
        let untimed = loom::thread::spawn(move || incr(&g3));
        incr(&g);
        timed.join().unwrap();
        untimed.join().unwrap();
        assert_done(&g, 2);
    });
}

#[test]
fn loom_condvar_notify_one_is_not_lost() {
    loom::model(|| {
        let st = Arc::new((M::new(), Condvar::new(), AtomicBool::new(false)));
        let st2 = st.clone();
        let h = loom::thread::spawn(move || {
            st2.0.lock();
            while !st2.2.load(Relaxed) {
                // SAFETY: held by this thread.
                unsafe { st2.1.wait_raw(&st2.0, None) };
            }
            // SAFETY: held.
            unsafe { st2.0.unlock() };
        });
        st.0.lock();
        st.2.store(true, Relaxed);
        // SAFETY: held.
        unsafe { st.0.unlock() };
        st.1.notify_one();
        h.join().unwrap();
    });
}

#[test]
fn loom_condvar_notify_all_requeues() {
    // Two waiters, one broadcast under the mutex: one is woken, the other requeued onto the
    // mutex and woken by an unlock. A lost requeued waiter is a loom deadlock.
    loom::model(|| {
        let st = Arc::new((
            M::new(),
            Condvar::new(),
            AtomicBool::new(false),
            AtomicUsize::new(0),
        ));
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let st = st.clone();
                loom::thread::spawn(move || {
                    st.0.lock();
                    while !st.2.load(Relaxed) {
                        // SAFETY: held by this thread.
                        unsafe { st.1.wait_raw(&st.0, None) };
                    }
                    st.3.fetch_add(1, Relaxed);
                    // SAFETY: held.
                    unsafe { st.0.unlock() };
                })
            })
            .collect();
        st.0.lock();
        st.2.store(true, Relaxed);
        st.1.notify_all();
        // SAFETY: held.
        unsafe { st.0.unlock() };
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(st.3.load(Relaxed), 2);
        assert!(!st.0.is_locked() && !st.0.has_waiters());
    });
}

#[test]
fn loom_condvar_notify_one_under_the_mutex_requeues() {
    // A waiter, and a notify_one made while holding the mutex that nobody else waits for:
    // the waiter is moved to the mutex's wait list (module doc of the condvar, "Signal under
    // the mutex") and woken by the notifier's unlock, after the release. A waiter that is
    // never woken is a loom deadlock. The embedder's count (the C layers' admission): the
    // waiter leaves it unless requeued, the notifier ends a requeued waiter's.
    loom::model(|| {
        let st = cv_admitting();
        let st2 = st.clone();
        let h = loom::thread::spawn(move || {
            st2.0.lock();
            while !st2.2.load(Relaxed) {
                st2.3.fetch_add(1, Relaxed);
                // SAFETY: held by this thread.
                unsafe {
                    st2.1.wait_raw_then(
                        &st2.0,
                        None,
                        || true,
                        |how| leave_unless_requeued(&st2.3, how),
                    )
                }
                .expect("one mutex");
            }
            // SAFETY: held again.
            unsafe { st2.0.unlock() };
        });
        st.0.lock();
        st.2.store(true, Relaxed);
        let how = st.1.notify_one_left(true);
        // SAFETY: held.
        unsafe { st.0.unlock() };
        if how == Some(Left::Requeued) {
            // The notifier ends the requeued waiter's admission.
            end_admission(&st.3);
        }
        h.join().unwrap();
        assert_eq!(st.3.load(Relaxed), 0, "an admission was not ended");
        assert!(!st.0.is_locked() && !st.0.has_waiters() && !st.1.has_waiters());
    });
}

#[test]
fn loom_condvar_notify_one_under_a_contended_mutex() {
    // As above with a third thread that locks the mutex meanwhile: when it waits in the
    // mutex's queue the notify_one wakes the waiter instead of queueing it behind. Either
    // way the waiter returns holding the mutex, alone (the UnsafeCell), and nothing is lost.
    loom::model(|| {
        let g = guarded();
        let st = Arc::new((Condvar::new(), AtomicBool::new(false)));
        let (g2, st2) = (g.clone(), st.clone());
        let waiter = loom::thread::spawn(move || {
            g2.m.lock();
            while !st2.1.load(Relaxed) {
                // SAFETY: held by this thread.
                unsafe { st2.0.wait_raw(&g2.m, None) };
            }
            // SAFETY: held.
            g2.v.with_mut(|p| unsafe { *p += 1 });
            // SAFETY: held.
            unsafe { g2.m.unlock() };
        });
        let g3 = g.clone();
        let other = loom::thread::spawn(move || incr(&g3));
        g.m.lock();
        st.1.store(true, Relaxed);
        st.0.notify_one();
        // SAFETY: held.
        unsafe { g.m.unlock() };
        waiter.join().unwrap();
        other.join().unwrap();
        assert_done(&g, 2);
        assert!(!st.0.has_waiters());
    });
}

#[test]
fn loom_condvar_timed_wait_consumes_no_notification() {
    // A timed waiter (its timer fires at once under loom) races a notify_one made under the
    // mutex. The waiter announces itself under the mutex before waiting, and releases the mutex
    // only inside the wait, after queueing: a notifier that sees the announcement finds it
    // queued, or already gone by its timeout. A notification is delivered exactly when the
    // waiter did not time out.
    loom::model(|| {
        let st = Arc::new((M::new(), Condvar::new(), AtomicBool::new(false)));
        let st2 = st.clone();
        let h = loom::thread::spawn(move || {
            st2.0.lock();
            st2.2.store(true, Relaxed);
            // SAFETY: held by this thread.
            let timed_out = unsafe { st2.1.wait_raw(&st2.0, Some(0)) };
            // SAFETY: held again on return.
            unsafe { st2.0.unlock() };
            timed_out
        });
        st.0.lock();
        let announced = st.2.load(Relaxed);
        let delivered = announced && st.1.notify_one();
        // SAFETY: held.
        unsafe { st.0.unlock() };
        let timed_out = h.join().unwrap();
        assert!(
            !(delivered && timed_out),
            "a notification was delivered to a waiter that timed out"
        );
        assert!(
            !announced || delivered || timed_out,
            "the waiter left the queue without a notification or a timeout"
        );
        assert!(!st.0.is_locked() && !st.0.has_waiters());
    });
}

#[test]
fn loom_condvar_notify_all_races_a_timeout() {
    // A timed waiter (its timer fires at once under loom) and an untimed one against a
    // notify_all made under the mutex. The timeout and the notification race on one CAS of the
    // waiter's state (module doc of the condvar): `notify_all` counts exactly the waiters it
    // woke or requeued, a waiter that timed out was not counted, and an embedder's count of
    // admitted waiters (each leaves it in its `left` callback unless requeued; the broadcaster
    // ends the requeued ones' with `n - 1`) never goes negative and ends at zero.
    loom::model(|| {
        let st = cv_admitting();
        let st2 = st.clone();
        let timed = loom::thread::spawn(move || {
            st2.0.lock();
            st2.3.fetch_add(1, Relaxed);
            // SAFETY: held by this thread.
            let timed_out = unsafe {
                st2.1.wait_raw_then(
                    &st2.0,
                    Some(0),
                    || true,
                    |h| leave_unless_requeued(&st2.3, h),
                )
            }
            .expect("one mutex");
            // SAFETY: held again on return.
            unsafe { st2.0.unlock() };
            timed_out
        });
        let st3 = st.clone();
        let untimed = loom::thread::spawn(move || {
            st3.0.lock();
            while !st3.2.load(Relaxed) {
                st3.3.fetch_add(1, Relaxed);
                // SAFETY: held by this thread.
                unsafe {
                    st3.1
                        .wait_raw_then(&st3.0, None, || true, |h| leave_unless_requeued(&st3.3, h))
                }
                .expect("one mutex");
            }
            // SAFETY: held.
            unsafe { st3.0.unlock() };
        });
        st.0.lock();
        st.2.store(true, Relaxed);
        let n = st.1.notify_all();
        // SAFETY: held.
        unsafe { st.0.unlock() };
        if n > 1 {
            assert!(st.3.fetch_sub(n as isize - 1, Relaxed) >= n as isize - 1);
        }
        let timed_out = timed.join().unwrap();
        untimed.join().unwrap();
        assert!(
            n <= 2 && !(timed_out && n == 2),
            "a timed-out waiter was counted"
        );
        assert_eq!(st.3.load(Relaxed), 0, "an admission was not ended");
        assert!(!st.0.is_locked() && !st.0.has_waiters() && !st.1.has_waiters());
    });
}
