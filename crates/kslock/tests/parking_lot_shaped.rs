//! Code written for parking_lot 0.12, with only the crate name changed (`parking_lot` →
//! `kslock`): raw locks, typed locks, guards, mapped guards, timed locks, the condvar, the
//! reentrant and fair mutexes, const constructors and statics (issue 10). Every test asserts
//! what parking_lot's documentation promises.
//!
//! Left out: `Once` (not a kernel lock, not provided).
#![cfg(not(kslock_loom))]

use std::collections::HashMap;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use kslock::lock_api::{RawMutex as _, RawMutexFair, RawRwLock as _};
use kslock::{
    const_fair_mutex, const_mutex, const_reentrant_mutex, const_rwlock, Condvar, FairMutex,
    MappedMutexGuard, MappedRwLockReadGuard, MappedRwLockWriteGuard, Mutex, MutexGuard, RawMutex,
    RawRwLock, ReentrantMutex, ReentrantMutexGuard, RwLock, RwLockReadGuard,
    RwLockUpgradableReadGuard, RwLockWriteGuard,
};

static COUNTER: Mutex<u64> = const_mutex(0);
static CONFIG: RwLock<Option<&'static str>> = const_rwlock(None);
static FAIR: FairMutex<Vec<u32>> = const_fair_mutex(Vec::new());
static RE: ReentrantMutex<()> = const_reentrant_mutex(());
static RAW: RawMutex = RawMutex::INIT;

#[test]
fn raw_locks_from_init() {
    // A raw lock built with no annotation, as parking_lot users write it.
    let raw = Arc::new(RawMutex::INIT);
    raw.lock();
    assert!(raw.is_locked());
    assert!(!raw.try_lock());
    let r2 = raw.clone();
    let other = thread::spawn(move || r2.try_lock()).join().unwrap();
    assert!(!other, "another thread took a held raw mutex");
    // SAFETY: this thread holds `raw`.
    unsafe { RawMutexFair::unlock_fair(&*raw) };
    assert!(!raw.is_locked());

    RAW.lock();
    // SAFETY: this thread holds `RAW`.
    unsafe { RAW.unlock() };

    let rw = RawRwLock::INIT;
    rw.lock_shared();
    assert!(rw.try_lock_shared());
    assert!(!rw.try_lock_exclusive());
    // SAFETY: two shared holds by this thread.
    unsafe {
        rw.unlock_shared();
        rw.unlock_shared();
    }
    rw.lock_exclusive();
    assert!(rw.is_locked_exclusive());
    // SAFETY: held exclusively by this thread.
    unsafe { rw.unlock_exclusive() };
    assert!(!rw.is_locked());
}

#[test]
fn statics_and_const_constructors() {
    let hs: Vec<_> = (0..4)
        .map(|_| {
            thread::spawn(|| {
                for _ in 0..1000 {
                    *COUNTER.lock() += 1;
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(*COUNTER.lock(), 4000);

    *CONFIG.write() = Some("on");
    assert_eq!(*CONFIG.read(), Some("on"));

    FAIR.lock().push(1);
    assert_eq!(FAIR.lock().as_slice(), &[1]);

    let _a = RE.lock();
    let _b = RE.lock();
    assert!(RE.is_owned_by_current_thread());
}

#[test]
fn mutex_guards_map_unlocked_and_timed() {
    let m = Mutex::new(HashMap::from([("a", 1), ("b", 2)]));
    {
        let g = m.lock();
        let mut a: MappedMutexGuard<'_, i32> = MutexGuard::map(g, |h| h.get_mut("a").unwrap());
        *a += 10;
    }
    let g = m.lock();
    let g = match MutexGuard::try_map(g, |h| h.get_mut("zzz")) {
        Ok(_) => panic!("mapped a missing key"),
        Err(g) => g,
    };
    assert_eq!(g["a"], 11);
    drop(g);

    // A held mutex: try_lock fails, a timed lock times out, `unlocked` lends it out.
    let m = Arc::new(Mutex::new(0));
    let mut g = m.lock();
    let m2 = m.clone();
    let t0 = Instant::now();
    let got = thread::spawn(move || m2.try_lock_for(Duration::from_millis(20)).is_some())
        .join()
        .unwrap();
    assert!(!got);
    assert!(t0.elapsed() >= Duration::from_millis(20));
    let m3 = m.clone();
    MutexGuard::unlocked(&mut g, || {
        thread::spawn(move || *m3.lock() += 1).join().unwrap();
    });
    assert_eq!(*g, 1);
    MutexGuard::bump(&mut g);
    *g += 1;
    MutexGuard::unlock_fair(g);
    assert_eq!(*m.try_lock_until(Instant::now()).unwrap(), 2);
    assert_eq!(Arc::try_unwrap(m).unwrap().into_inner(), 2);
}

#[test]
fn rwlock_guards_downgrade_recursive_and_map() {
    let l = RwLock::new((1, String::from("x")));
    {
        let r1 = l.read();
        let r2 = l.read_recursive();
        assert!(l.try_write().is_none());
        let name: MappedRwLockReadGuard<'_, String> = RwLockReadGuard::map(r1, |v| &v.1);
        assert_eq!(name.as_str(), "x");
        assert_eq!(r2.0, 1);
    }
    {
        let w = l.write();
        let mut n: MappedRwLockWriteGuard<'_, i32> = RwLockWriteGuard::map(w, |v| &mut v.0);
        *n += 1;
    }
    let mut w = l.write();
    w.1.push('y');
    let r = RwLockWriteGuard::downgrade(w);
    assert!(l.try_read().is_some(), "a downgraded lock admits readers");
    assert!(l.try_write().is_none());
    assert_eq!(*r, (2, String::from("xy")));
    drop(r);
    assert!(l.try_write_for(Duration::from_millis(1)).is_some());
    assert!(l.try_read_until(Instant::now()).is_some());
}

#[test]
fn rwlock_upgradable_reads_and_fair_unlocks() {
    let l = Arc::new(RwLock::new(vec![1]));
    // Readers beside an upgradable reader; writers and other upgradable readers wait.
    let u = l.upgradable_read();
    assert!(l.try_read().is_some());
    assert!(l.try_upgradable_read().is_none());
    assert!(l.try_write().is_none());
    let mut w = RwLockUpgradableReadGuard::upgrade(u);
    w.push(2);
    let u = RwLockWriteGuard::downgrade_to_upgradable(w);
    assert_eq!(*u, [1, 2]);
    let r = RwLockUpgradableReadGuard::downgrade(u);
    assert!(
        l.try_upgradable_read().is_some(),
        "a downgraded upgradable lock frees the slot"
    );
    drop(r);
    // try_upgrade fails while another reader holds on, and succeeds once it leaves.
    let u = l.upgradable_read();
    let r = l.read();
    let u = RwLockUpgradableReadGuard::try_upgrade(u).expect_err("a reader is inside");
    let u = match RwLockUpgradableReadGuard::try_upgrade_for(u, Duration::from_millis(5)) {
        Ok(_) => panic!("upgraded beside a reader"),
        Err(u) => u,
    };
    drop(r);
    let mut w = RwLockUpgradableReadGuard::try_upgrade(u).expect("no other reader");
    w.push(3);
    drop(w);
    // with_upgraded, and an upgrade that waits for a reader on another thread.
    let mut u = l.upgradable_read();
    u.with_upgraded(|v| v.push(4));
    let l2 = l.clone();
    let reader = thread::spawn(move || l2.read().len());
    let mut w = RwLockUpgradableReadGuard::upgrade(u);
    w.push(5);
    drop(w);
    assert!(reader.join().unwrap() >= 4);
    // Fair unlocks and bumps compile and release as parking_lot's do.
    let w = l.write();
    RwLockWriteGuard::unlock_fair(w);
    let mut r = l.read();
    RwLockReadGuard::bump(&mut r);
    RwLockReadGuard::unlock_fair(r);
    let mut u = l.upgradable_read();
    RwLockUpgradableReadGuard::bump(&mut u);
    RwLockUpgradableReadGuard::unlock_fair(u);
    let u = l.try_upgradable_read_for(Duration::from_millis(1)).unwrap();
    drop(u);
    let r = l.read();
    assert!(l.try_read_recursive_for(Duration::from_millis(1)).is_some());
    drop(r);
    assert_eq!(*l.read(), [1, 2, 3, 4, 5]);
}

#[test]
fn condvar_parking_lot_semantics() {
    let pair = Arc::new((Mutex::new(false), Condvar::new()));
    // Nobody waits: notify_one says so, notify_all counts nobody.
    assert!(!pair.1.notify_one());
    assert_eq!(pair.1.notify_all(), 0);

    let p2 = pair.clone();
    let h = thread::spawn(move || {
        let (lock, cvar) = &*p2;
        let mut started = lock.lock();
        // parking_lot's condvar never wakes spuriously: `if` is enough, as in its docs.
        if !*started {
            cvar.wait(&mut started);
        }
        assert!(*started);
    });
    loop {
        let mut started = pair.0.lock();
        *started = true;
        // Once the waiter is queued, the notification reaches it.
        if pair.1.notify_one() || h.is_finished() {
            break;
        }
        drop(started);
        thread::yield_now();
    }
    h.join().unwrap();

    // Timeouts: `wait_for` reports them; a timeout past the clock's range is no timeout.
    let m = Mutex::new(0);
    let cv = Condvar::new();
    let mut g = m.lock();
    assert!(cv.wait_for(&mut g, Duration::from_millis(1)).timed_out());
    assert!(cv
        .wait_until(&mut g, Instant::now() + Duration::from_millis(1))
        .timed_out());
    let r = cv.wait_while_for(&mut g, |v| *v != 0, Duration::MAX);
    assert!(!r.timed_out());
    // After a timeout, wait_while_* returns without evaluating the condition again.
    let mut calls = 0;
    let r = cv.wait_while_for(
        &mut g,
        |_| {
            calls += 1;
            true
        },
        Duration::from_millis(5),
    );
    assert!(r.timed_out());
    assert_eq!(
        calls, 1,
        "the condition was evaluated again after the timeout"
    );
    let r = cv.wait_while_until(&mut g, |_| true, Instant::now());
    assert!(r.timed_out());
}

#[test]
fn condvar_notify_all_counts_waiters() {
    const N: usize = 4;
    let st = Arc::new((Mutex::new((0usize, false)), Condvar::new()));
    let hs: Vec<_> = (0..N)
        .map(|_| {
            let st = st.clone();
            thread::spawn(move || {
                let mut g = st.0.lock();
                g.0 += 1;
                st.1.wait_while(&mut g, |(_, go)| !*go);
            })
        })
        .collect();
    // Wait (bounded) until all N wait: each counted itself under the mutex before waiting,
    // and a waiter releases the mutex only inside `wait`.
    let t0 = Instant::now();
    while st.0.lock().0 < N {
        assert!(t0.elapsed() < Duration::from_secs(10));
        thread::yield_now();
    }
    let mut g = st.0.lock();
    g.1 = true;
    assert_eq!(st.1.notify_all(), N);
    drop(g);
    for h in hs {
        h.join().unwrap();
    }
}

#[test]
fn reentrant_mutex_nests_and_maps() {
    let m = Arc::new(ReentrantMutex::new(std::cell::RefCell::new(vec![1, 2])));
    let outer = m.lock();
    {
        let inner = m.lock();
        inner.borrow_mut().push(3);
        let first = ReentrantMutexGuard::map(inner, |v| v);
        assert_eq!(first.borrow().len(), 3);
    }
    assert_eq!(outer.borrow().as_slice(), &[1, 2, 3]);
    let m2 = m.clone();
    assert!(thread::spawn(move || m2.try_lock().is_none())
        .join()
        .unwrap());
    drop(outer);
    assert!(m.try_lock_for(Duration::from_millis(1)).is_some());
}

#[test]
fn fair_mutex_is_a_mutex() {
    let m = Arc::new(FairMutex::new(0u32));
    let hs: Vec<_> = (0..4)
        .map(|_| {
            let m = m.clone();
            thread::spawn(move || {
                for _ in 0..500 {
                    *m.lock() += 1;
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(*m.lock(), 2000);
    assert!(m.try_lock_for(Duration::from_millis(1)).is_some());
}

#[cfg(feature = "arc_lock")]
#[test]
fn arc_guards() {
    let m = Arc::new(Mutex::new(1));
    let g: kslock::ArcMutexGuard<RawMutex, i32> = m.lock_arc();
    assert_eq!(*g, 1);
    drop(g);
    let l = Arc::new(RwLock::new(2));
    let r: kslock::ArcRwLockReadGuard<RawRwLock, i32> = l.read_arc();
    assert_eq!(*r, 2);
}
