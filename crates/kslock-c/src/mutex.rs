//! `kslock_mutex_t`: kslock's [`RawMutex`], error-checking.
//!
//! The object *is* a `RawMutex` (32 bytes, all-zero = unlocked). Ownership checks use
//! [`RawMutex::is_owned_by_current_thread`] (one Relaxed load and a TLS read), which makes
//! every kslock mutex an error-checking one at no extra space: relocking returns `EDEADLK`,
//! unlocking a mutex this thread does not hold returns `EPERM`.

use core::ffi::c_int;

use kslock_core::RawMutex;

use crate::{ensure, obj, Timed};

/// The C type `kslock_mutex_t`.
#[repr(C)]
pub struct KslockMutex {
    raw: RawMutex,
}

const _: () = {
    assert!(core::mem::size_of::<KslockMutex>() == 32);
    assert!(core::mem::align_of::<KslockMutex>() == 8);
};

impl KslockMutex {
    /// The kslock mutex inside.
    pub(crate) fn raw(&self) -> &RawMutex {
        &self.raw
    }
}

/// `sizeof(kslock_mutex_t)` as the library sees it (the header drift test compares it).
#[no_mangle]
pub extern "C" fn kslock_mutex_sizeof() -> usize {
    core::mem::size_of::<KslockMutex>()
}

/// Initialises `m` as an unlocked mutex (the same as zero-filling it). Returns 0, or `EINVAL`
/// for a null `m`.
///
/// # Safety
/// `m` is null or points to writable memory for a `kslock_mutex_t` that no thread uses.
#[no_mangle]
pub unsafe extern "C" fn kslock_mutex_init(m: *mut KslockMutex) -> c_int {
    ensure!(!m.is_null(), libc::EINVAL);
    // SAFETY: caller contract: `m` is valid for writes and unused.
    unsafe { m.write_bytes(0, 1) };
    0
}

/// Destroys `m`: `EBUSY` if it is locked, else 0 (the memory may then be reused).
///
/// # Safety
/// `m` is null or points to a valid `kslock_mutex_t`.
#[no_mangle]
pub unsafe extern "C" fn kslock_mutex_destroy(m: *mut KslockMutex) -> c_int {
    // SAFETY: caller contract.
    let Some(m) = (unsafe { obj(m) }) else {
        return libc::EINVAL;
    };
    if m.raw.is_locked() {
        libc::EBUSY
    } else {
        0
    }
}

/// Locks `m`, spinning while its owner runs and sleeping otherwise. `EDEADLK` if this thread
/// already holds it.
///
/// # Safety
/// `m` is null or points to a valid `kslock_mutex_t`.
#[no_mangle]
pub unsafe extern "C" fn kslock_mutex_lock(m: *mut KslockMutex) -> c_int {
    // SAFETY: caller contract.
    let Some(m) = (unsafe { obj(m) }) else {
        return libc::EINVAL;
    };
    ensure!(!m.raw.is_owned_by_current_thread(), libc::EDEADLK);
    m.raw.lock();
    0
}

/// Locks `m` if it is free right now: 0, or `EBUSY`. Never spins or sleeps.
///
/// # Safety
/// `m` is null or points to a valid `kslock_mutex_t`.
#[no_mangle]
pub unsafe extern "C" fn kslock_mutex_trylock(m: *mut KslockMutex) -> c_int {
    // SAFETY: caller contract.
    let Some(m) = (unsafe { obj(m) }) else {
        return libc::EINVAL;
    };
    if m.raw.try_lock() {
        0
    } else {
        libc::EBUSY
    }
}

/// Seed S3: like [`kslock_mutex_trylock`], but while the owner runs, spins (bounded) for it to
/// unlock before returning `EBUSY`. Never sleeps.
///
/// # Safety
/// `m` is null or points to a valid `kslock_mutex_t`.
#[no_mangle]
pub unsafe extern "C" fn kslock_mutex_trylock_spin(m: *mut KslockMutex) -> c_int {
    // SAFETY: caller contract.
    let Some(m) = (unsafe { obj(m) }) else {
        return libc::EINVAL;
    };
    ensure!(!m.raw.is_owned_by_current_thread(), libc::EBUSY);
    if m.raw.try_lock_spin() {
        0
    } else {
        libc::EBUSY
    }
}

/// Locks `m` unless the absolute time `abstime` on `clockid` (`CLOCK_REALTIME` or
/// `CLOCK_MONOTONIC`) passes first: 0, `ETIMEDOUT`, `EDEADLK` (held by this thread), or
/// `EINVAL` (another clock; an invalid `abstime` when the mutex is not free).
///
/// # Safety
/// `m` is null or points to a valid `kslock_mutex_t`; `abstime` is null or points to a
/// `struct timespec`.
#[no_mangle]
pub unsafe extern "C" fn kslock_mutex_timedlock(
    m: *mut KslockMutex,
    clockid: libc::clockid_t,
    abstime: *const libc::timespec,
) -> c_int {
    // SAFETY: caller contract.
    let Some(m) = (unsafe { obj(m) }) else {
        return libc::EINVAL;
    };
    // SAFETY: caller contract.
    let t = match unsafe { Timed::new(clockid, abstime) } {
        Ok(t) => t,
        Err(e) => return e,
    };
    ensure!(!m.raw.is_owned_by_current_thread(), libc::EDEADLK);
    if m.raw.try_lock() {
        return 0;
    }
    match t.remaining() {
        Err(e) => e,
        Ok(left) if m.raw.try_lock_for(left) => 0,
        Ok(_) => libc::ETIMEDOUT,
    }
}

/// Unlocks `m`: 0, or `EPERM` if this thread does not hold it.
///
/// # Safety
/// `m` is null or points to a valid `kslock_mutex_t`.
#[no_mangle]
pub unsafe extern "C" fn kslock_mutex_unlock(m: *mut KslockMutex) -> c_int {
    // SAFETY: caller contract.
    let Some(m) = (unsafe { obj(m) }) else {
        return libc::EINVAL;
    };
    ensure!(m.raw.is_owned_by_current_thread(), libc::EPERM);
    // SAFETY: this thread holds the mutex (checked above).
    unsafe { m.raw.unlock() };
    0
}
