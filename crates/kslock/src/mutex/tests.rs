//! Unit tests of the mutex (the stress tests are in `tests/`).

use super::*;

#[test]
fn size_and_zero_init() {
    assert!(core::mem::size_of::<RawMutex>() <= 40);
    assert_eq!(core::mem::size_of::<RawMutex>(), 32);
    // SAFETY: all-zero is documented as a valid unlocked mutex.
    let m: RawMutex = unsafe { core::mem::zeroed() };
    assert!(!m.is_locked());
    assert!(m.try_lock());
    assert!(m.is_owned_by_current_thread());
    // SAFETY: held by this thread.
    unsafe { m.unlock() };
    assert!(!m.is_locked());
}

#[test]
fn try_lock_fails_while_held_and_never_waits() {
    let m = std::sync::Arc::new(RawMutex::<DefaultPolicy>::new());
    m.lock();
    let m2 = m.clone();
    let t0 = std::time::Instant::now();
    assert!(!std::thread::spawn(move || m2.try_lock()).join().unwrap());
    assert!(t0.elapsed() < std::time::Duration::from_secs(1));
    // SAFETY: held by this thread.
    unsafe { m.unlock() };
}

#[test]
#[should_panic(expected = "does not hold it")]
fn double_unlock_panics() {
    let m = RawMutex::<DefaultPolicy>::new();
    m.lock();
    // SAFETY: deliberately violated on the second call to test the misuse check.
    unsafe {
        m.unlock();
        m.unlock();
    }
}

#[test]
#[should_panic(expected = "does not hold it")]
fn unlock_by_another_thread_panics() {
    let m = std::sync::Arc::new(RawMutex::<DefaultPolicy>::new());
    // Register this thread first: records of exited threads are reused, and the locker's
    // record must not become ours.
    assert!(!m.is_owned_by_current_thread());
    let m2 = m.clone();
    std::thread::spawn(move || m2.lock()).join().unwrap();
    // SAFETY: deliberately violated to test the misuse check.
    unsafe { m.unlock() };
}

#[test]
fn unlock_if_owned_releases_only_its_own_hold() {
    use std::sync::Arc;
    let m = Arc::new(RawMutex::<DefaultPolicy>::new());
    // Free: nothing to release.
    assert!(!m.unlock_if_owned());
    assert!(!m.is_locked());
    // Held by another thread: refused, and the hold survives.
    let m2 = m.clone();
    std::thread::spawn(move || m2.lock()).join().unwrap();
    assert!(!m.unlock_if_owned());
    assert!(m.is_locked());
    // Held here with a waiter queued (a flag in the word: the slow path): released and
    // handed on, so the waiter gets it.
    let m = Arc::new(RawMutex::<DefaultPolicy>::new());
    m.lock();
    let m3 = m.clone();
    let waiter = std::thread::spawn(move || {
        m3.lock();
        // SAFETY: held by this thread.
        unsafe { m3.unlock() };
    });
    while !m.has_waiters() {
        std::thread::yield_now();
    }
    assert!(m.unlock_if_owned());
    waiter.join().unwrap();
    assert!(!m.is_locked());
}

#[test]
fn a_reused_record_is_not_the_dead_owner() {
    // Issue 8, defect 3: a thread exits holding the mutex (safe Rust: a forgotten guard).
    // The threads that later get its record (records are reused) must not be its owner:
    // `is_owned_by_current_thread` is false and a timed lock times out (it used to panic
    // with "self-deadlock").
    use std::sync::Arc;
    let m = Arc::new(RawMutex::<DefaultPolicy>::new());
    let m2 = m.clone();
    let dead = std::thread::spawn(move || {
        m2.lock();
        current().id()
    })
    .join()
    .unwrap();
    for tries in 0.. {
        let m3 = m.clone();
        let (id, owned, got) = std::thread::spawn(move || {
            let owned = m3.is_owned_by_current_thread();
            let got = m3.try_lock_for(std::time::Duration::from_millis(1));
            (current().id(), owned, got)
        })
        .join()
        .unwrap();
        assert!(!got, "a thread took a lock that a dead thread holds");
        if id == dead {
            assert!(!owned, "the record's new thread passes for the dead owner");
            break;
        }
        assert!(tries < 10_000, "the dead thread's record was never reused");
    }
    assert!(m.is_locked());
}

#[test]
#[should_panic(expected = "self-deadlock")]
fn relock_by_owner_panics() {
    let m = RawMutex::<DefaultPolicy>::new();
    m.lock();
    m.lock();
}
