//! A thread's record goes back to the pool when the thread exits, also when the thread still
//! takes kslock locks after its Rust thread-local destructors ran: in `pthread_key` destructors
//! (jemalloc's thread cleanup takes its mutexes there, and under the C preload those are kslock
//! locks), or in a thread-local destructor registered before kslock's. Before the fix every such
//! exit leaked one record, until "more than 262144 threads alive at once" aborted the program.
#![cfg(not(kslock_loom))]

use kslock::{const_mutex, Mutex};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

static M: Mutex<u64> = const_mutex(0);
/// Locks taken by exit-time destructors (proof that they ran and locked).
static LATE_LOCKS: AtomicU64 = AtomicU64::new(0);

const THREADS: u32 = 1000;
/// Records the pool may create for `THREADS` sequential threads: a record is reused once its
/// thread is gone, which may be a little after `join` returns.
const SLACK: u32 = 100;

extern "C" fn key_destructor(_value: *mut libc::c_void) {
    *M.lock() += 1;
    LATE_LOCKS.fetch_add(1, Relaxed);
}

fn make_key() -> libc::pthread_key_t {
    let mut key: libc::pthread_key_t = 0;
    // SAFETY: `key` is a valid out-pointer; the destructor is an `extern "C" fn` that lives as
    // long as the program.
    let r = unsafe { libc::pthread_key_create(&mut key, Some(key_destructor)) };
    assert_eq!(r, 0);
    key
}

fn arm(key: libc::pthread_key_t) {
    // SAFETY: `key` was created by `make_key` and is never deleted; any non-null value arms the
    // destructor.
    let r = unsafe { libc::pthread_setspecific(key, 1 as *const libc::c_void) };
    assert_eq!(r, 0);
}

/// Runs `THREADS` threads one after another, each running `body`, and returns how many records
/// the pool created meanwhile.
fn records_for(body: fn(libc::pthread_key_t), key: libc::pthread_key_t) -> u32 {
    let before = kslock::__thread_records_created();
    let late = LATE_LOCKS.load(Relaxed);
    for _ in 0..THREADS {
        std::thread::spawn(move || body(key)).join().unwrap();
    }
    assert_eq!(
        LATE_LOCKS.load(Relaxed) - late,
        THREADS as u64,
        "every thread locked at exit"
    );
    kslock::__thread_records_created() - before
}

struct LocksOnDrop;

impl Drop for LocksOnDrop {
    fn drop(&mut self) {
        *M.lock() += 1;
        LATE_LOCKS.fetch_add(1, Relaxed);
    }
}

thread_local! {
    static EARLY: Cell<Option<LocksOnDrop>> = const { Cell::new(None) };
}

#[test]
fn records_of_threads_that_lock_while_exiting_are_reused() {
    // All scenarios in one test: the record count is process-wide.
    let key = make_key();

    // 1. The thread used kslock, then a pthread_key destructor locks at exit.
    let n = records_for(
        |key| {
            *M.lock() += 1;
            arm(key);
        },
        key,
    );
    assert!(
        n < SLACK,
        "key destructor after use: {n} records for {THREADS} threads"
    );

    // 2. The thread's first kslock lock is in a pthread_key destructor.
    let n = records_for(arm, key);
    assert!(
        n < SLACK,
        "first lock in a key destructor: {n} records for {THREADS} threads"
    );

    // 3. A thread-local destructor registered before the thread's first kslock lock (so it runs
    //    after kslock's own thread-local destructors) locks.
    let n = records_for(
        |_| {
            EARLY.with(|e| e.set(Some(LocksOnDrop)));
            *M.lock() += 1;
        },
        key,
    );
    assert!(
        n < SLACK,
        "thread-local destructor: {n} records for {THREADS} threads"
    );
    assert_eq!(*M.lock(), 5 * THREADS as u64);
}
