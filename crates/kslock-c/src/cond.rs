//! `kslock_cond_t`: kslock's [`Condvar`] plus its admission count.
//!
//! Layout (32 bytes, all-zero = no waiters): bytes 0–23 the `Condvar`, 24–31 the admission
//! count (`admit.rs`: how many waiters may still touch the condvar, for destroy). A wait with
//! a second mutex while threads are blocked with the first returns `EINVAL` (POSIX leaves it
//! undefined; kslock's condvar requeues onto one mutex).
//!
//! Broadcast does not stampede: kslock wakes one waiter and requeues the others onto the mutex.

use core::ffi::c_int;
use core::sync::atomic::AtomicU64;

use kslock_core::{Condvar, Left};

use crate::mutex::KslockMutex;
use crate::{admit, ensure, obj, Timed};

/// The C type `kslock_cond_t`.
#[repr(C)]
pub struct KslockCond {
    cv: Condvar,
    admit: AtomicU64,
}

const _: () = {
    assert!(core::mem::size_of::<KslockCond>() == 32);
    assert!(core::mem::align_of::<KslockCond>() == 8);
};

/// `sizeof(kslock_cond_t)` as the library sees it (the header drift test compares it).
#[no_mangle]
pub extern "C" fn kslock_cond_sizeof() -> usize {
    core::mem::size_of::<KslockCond>()
}

/// Initialises `c` with no waiters (the same as zero-filling it).
///
/// # Safety
/// `c` is null or points to writable memory for a `kslock_cond_t` that no thread uses.
#[no_mangle]
pub unsafe extern "C" fn kslock_cond_init(c: *mut KslockCond) -> c_int {
    ensure!(!c.is_null(), libc::EINVAL);
    // SAFETY: caller contract.
    unsafe { c.write_bytes(0, 1) };
    0
}

/// Destroys `c`: `EBUSY` while threads are blocked on it, else 0. Threads that were
/// notified may still be inside `kslock_cond_wait`: destroy waits until they have left the
/// condvar (`admit::drained`), which takes them no lock (those requeued onto their mutex have
/// left it already).
///
/// # Safety
/// `c` is null or points to a valid `kslock_cond_t`.
#[no_mangle]
pub unsafe extern "C" fn kslock_cond_destroy(c: *mut KslockCond) -> c_int {
    // SAFETY: caller contract.
    let Some(c) = (unsafe { obj(c) }) else {
        return libc::EINVAL;
    };
    if !admit::drained(|| c.cv.has_waiters(), || admit::any(&c.admit)) {
        libc::EBUSY
    } else {
        0
    }
}

/// Wakes one waiter (the longest waiting), if any. Returns 0.
///
/// # Safety
/// `c` is null or points to a valid `kslock_cond_t`.
#[no_mangle]
pub unsafe extern "C" fn kslock_cond_signal(c: *mut KslockCond) -> c_int {
    // SAFETY: caller contract.
    let Some(c) = (unsafe { obj(c) }) else {
        return libc::EINVAL;
    };
    let how = c.cv.notify_one_left(true);
    if how == Some(Left::Requeued) {
        // The requeued waiter's admission, ended on its behalf: the last access to `c`.
        admit::leave(&c.admit);
    }
    0
}

/// Wakes every waiter (one now, the others as the mutex frees). Returns 0.
///
/// # Safety
/// `c` is null or points to a valid `kslock_cond_t`.
#[no_mangle]
pub unsafe extern "C" fn kslock_cond_broadcast(c: *mut KslockCond) -> c_int {
    // SAFETY: caller contract.
    let Some(c) = (unsafe { obj(c) }) else {
        return libc::EINVAL;
    };
    let n = c.cv.notify_all();
    // The requeued waiters' admissions: the last access to `c`.
    admit::release_requeued(&c.admit, n);
    0
}

/// The wait protocol: checks, admission, kslock's wait. `deadline`: absolute monotonic ns.
fn wait(c: &KslockCond, m: &KslockMutex, deadline: Option<u64>) -> c_int {
    ensure!(m.raw().is_owned_by_current_thread(), libc::EPERM);
    admit::enter(&c.admit);
    // SAFETY: this thread holds `m` (checked above). The admission ends when the wait leaves
    // the condvar, before it waits for `m`, or at the requeue (module doc of `admit`).
    let r = unsafe {
        c.cv.wait_raw_then(
            m.raw(),
            deadline,
            || true,
            |how| {
                if how != Left::Requeued {
                    admit::leave(&c.admit);
                }
            },
        )
    };
    match r {
        Some(false) => 0,
        Some(true) => libc::ETIMEDOUT,
        None => {
            // Threads are blocked with another mutex; nothing was done.
            admit::leave(&c.admit);
            libc::EINVAL
        }
    }
}

/// Atomically unlocks `m` and waits for a signal, then relocks `m`. `EPERM` if this thread
/// does not hold `m`; `EINVAL` if other threads wait on `c` with another mutex. Spurious
/// wakeups do not happen, but check your predicate: another thread may change it first.
///
/// # Safety
/// `c` and `m` are null or point to valid objects.
#[no_mangle]
pub unsafe extern "C" fn kslock_cond_wait(c: *mut KslockCond, m: *mut KslockMutex) -> c_int {
    // SAFETY: caller contract.
    let (Some(c), Some(m)) = (unsafe { obj(c) }, unsafe { obj(m) }) else {
        return libc::EINVAL;
    };
    wait(c, m, None)
}

/// [`kslock_cond_wait`] that gives up when `abstime` on `clockid` (`CLOCK_REALTIME` or
/// `CLOCK_MONOTONIC`) passes: `ETIMEDOUT` (with `m` relocked), or `EINVAL` for another clock
/// or an invalid `abstime` (checked before anything else).
///
/// # Safety
/// `c` and `m` are null or point to valid objects; `abstime` is null or points to a
/// `struct timespec`.
#[no_mangle]
pub unsafe extern "C" fn kslock_cond_timedwait(
    c: *mut KslockCond,
    m: *mut KslockMutex,
    clockid: libc::clockid_t,
    abstime: *const libc::timespec,
) -> c_int {
    // SAFETY: caller contract.
    let (Some(c), Some(m)) = (unsafe { obj(c) }, unsafe { obj(m) }) else {
        return libc::EINVAL;
    };
    // SAFETY: caller contract.
    let t = match unsafe { Timed::new(clockid, abstime) } {
        Ok(t) => t,
        Err(e) => return e,
    };
    match t.mono_deadline() {
        Ok(d) => wait(c, m, Some(d)),
        Err(e) => e,
    }
}
