//! `kslock_rwsem_t`: kslock's [`RawRwSem`] plus the identity of its writer.
//!
//! Layout (48 bytes, all-zero = unlocked):
//!
//! | bytes | field | meaning |
//! |-------|-------|---------|
//! | 0–39 | `raw` | the `RawRwSem` |
//! | 40–47 | `writer` | `pthread_self()` of the thread holding the write lock, 0 if none |
//!
//! `writer` is written only by the write holder (after it acquired, before it releases), and
//! compared only with the caller's own `pthread_self()`: a thread sees its own value by program
//! order, and never mistakes another thread's value for its own, so Relaxed suffices. It turns
//! writer misuse into errors: `EDEADLK` for a write or read lock by the writer, `EPERM` for
//! `write_unlock`/`downgrade` by another thread. Read locks are anonymous (as in the kernel):
//! `read_unlock` returns `EPERM` only when the lock is not read-locked at all.

use core::ffi::c_int;
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

use kslock_core::RawRwSem;

use crate::{ensure, obj, Timed};

/// The C type `kslock_rwsem_t`.
#[repr(C)]
pub struct KslockRwSem {
    raw: RawRwSem,
    writer: AtomicU64,
}

const _: () = {
    assert!(core::mem::size_of::<KslockRwSem>() == 48);
    assert!(core::mem::align_of::<KslockRwSem>() == 8);
};

/// This thread's identity for `writer` (never 0).
fn me() -> u64 {
    // SAFETY: pthread_self has no preconditions.
    unsafe { libc::pthread_self() as u64 }
}

impl KslockRwSem {
    fn is_writer(&self) -> bool {
        self.writer.load(Relaxed) == me()
    }

    fn set_writer(&self) -> c_int {
        self.writer.store(me(), Relaxed);
        0
    }
}

/// Resolves `s` or returns `EINVAL` from the calling function.
macro_rules! sem {
    ($s:expr) => {
        // SAFETY: caller contract of every export: `s` is null or points to a valid object.
        match unsafe { obj($s) } {
            Some(s) => s,
            None => return libc::EINVAL,
        }
    };
}

/// `sizeof(kslock_rwsem_t)` as the library sees it (the header drift test compares it).
#[no_mangle]
pub extern "C" fn kslock_rwsem_sizeof() -> usize {
    core::mem::size_of::<KslockRwSem>()
}

/// Initialises `s` unlocked (the same as zero-filling it).
///
/// # Safety
/// `s` is null or points to writable memory for a `kslock_rwsem_t` that no thread uses.
#[no_mangle]
pub unsafe extern "C" fn kslock_rwsem_init(s: *mut KslockRwSem) -> c_int {
    ensure!(!s.is_null(), libc::EINVAL);
    // SAFETY: caller contract.
    unsafe { s.write_bytes(0, 1) };
    0
}

/// Destroys `s`: `EBUSY` if it is held, else 0.
///
/// # Safety
/// `s` is null or points to a valid `kslock_rwsem_t`.
#[no_mangle]
pub unsafe extern "C" fn kslock_rwsem_destroy(s: *mut KslockRwSem) -> c_int {
    let s = sem!(s);
    if s.raw.is_locked() {
        libc::EBUSY
    } else {
        0
    }
}

/// Takes a read lock (`down_read`): waits while a writer holds the lock or waits for it.
/// `EDEADLK` if this thread holds the write lock.
///
/// # Safety
/// `s` is null or points to a valid `kslock_rwsem_t`.
#[no_mangle]
pub unsafe extern "C" fn kslock_rwsem_read(s: *mut KslockRwSem) -> c_int {
    let s = sem!(s);
    ensure!(!s.is_writer(), libc::EDEADLK);
    s.raw.read();
    0
}

/// Takes a read lock only if that needs no wait: 0 or `EBUSY`.
///
/// # Safety
/// `s` is null or points to a valid `kslock_rwsem_t`.
#[no_mangle]
pub unsafe extern "C" fn kslock_rwsem_tryread(s: *mut KslockRwSem) -> c_int {
    let s = sem!(s);
    if s.raw.try_read() {
        0
    } else {
        libc::EBUSY
    }
}

/// Takes a read lock unless `abstime` on `clockid` passes first (see
/// `kslock_mutex_timedlock` for the errors).
///
/// # Safety
/// `s` is null or points to a valid `kslock_rwsem_t`; `abstime` is null or points to a
/// `struct timespec`.
#[no_mangle]
pub unsafe extern "C" fn kslock_rwsem_timedread(
    s: *mut KslockRwSem,
    clockid: libc::clockid_t,
    abstime: *const libc::timespec,
) -> c_int {
    let s = sem!(s);
    // SAFETY: caller contract.
    let t = match unsafe { Timed::new(clockid, abstime) } {
        Ok(t) => t,
        Err(e) => return e,
    };
    ensure!(!s.is_writer(), libc::EDEADLK);
    if s.raw.try_read() {
        return 0;
    }
    match t.remaining() {
        Err(e) => e,
        Ok(left) if s.raw.try_read_for(left) => 0,
        Ok(_) => libc::ETIMEDOUT,
    }
}

/// Releases a read lock: 0, or `EPERM` if the lock is not read-locked.
///
/// # Safety
/// `s` is null or points to a valid `kslock_rwsem_t`.
#[no_mangle]
pub unsafe extern "C" fn kslock_rwsem_read_unlock(s: *mut KslockRwSem) -> c_int {
    let s = sem!(s);
    ensure!(s.raw.is_locked() && !s.raw.is_write_locked(), libc::EPERM);
    // SAFETY: the lock is read-locked (checked above); the caller holds one of the reads.
    unsafe { s.raw.read_unlock() };
    0
}

/// Takes the write lock (`down_write`). `EDEADLK` if this thread holds it already.
///
/// # Safety
/// `s` is null or points to a valid `kslock_rwsem_t`.
#[no_mangle]
pub unsafe extern "C" fn kslock_rwsem_write(s: *mut KslockRwSem) -> c_int {
    let s = sem!(s);
    ensure!(!s.is_writer(), libc::EDEADLK);
    s.raw.write();
    s.set_writer()
}

/// Takes the write lock only if the lock is entirely free: 0 or `EBUSY`.
///
/// # Safety
/// `s` is null or points to a valid `kslock_rwsem_t`.
#[no_mangle]
pub unsafe extern "C" fn kslock_rwsem_trywrite(s: *mut KslockRwSem) -> c_int {
    let s = sem!(s);
    if s.raw.try_write() {
        s.set_writer()
    } else {
        libc::EBUSY
    }
}

/// Seed S3 for writers: like [`kslock_rwsem_trywrite`], but spins (bounded) while that can
/// pay before returning `EBUSY`. Never sleeps.
///
/// # Safety
/// `s` is null or points to a valid `kslock_rwsem_t`.
#[no_mangle]
pub unsafe extern "C" fn kslock_rwsem_trywrite_spin(s: *mut KslockRwSem) -> c_int {
    let s = sem!(s);
    ensure!(!s.is_writer(), libc::EBUSY);
    if s.raw.try_write_spin() {
        s.set_writer()
    } else {
        libc::EBUSY
    }
}

/// Takes the write lock unless `abstime` on `clockid` passes first.
///
/// # Safety
/// `s` is null or points to a valid `kslock_rwsem_t`; `abstime` is null or points to a
/// `struct timespec`.
#[no_mangle]
pub unsafe extern "C" fn kslock_rwsem_timedwrite(
    s: *mut KslockRwSem,
    clockid: libc::clockid_t,
    abstime: *const libc::timespec,
) -> c_int {
    let s = sem!(s);
    // SAFETY: caller contract.
    let t = match unsafe { Timed::new(clockid, abstime) } {
        Ok(t) => t,
        Err(e) => return e,
    };
    ensure!(!s.is_writer(), libc::EDEADLK);
    if s.raw.try_write() {
        return s.set_writer();
    }
    match t.remaining() {
        Err(e) => e,
        Ok(left) if s.raw.try_write_for(left) => s.set_writer(),
        Ok(_) => libc::ETIMEDOUT,
    }
}

/// Releases the write lock: 0, or `EPERM` if this thread does not hold it.
///
/// # Safety
/// `s` is null or points to a valid `kslock_rwsem_t`.
#[no_mangle]
pub unsafe extern "C" fn kslock_rwsem_write_unlock(s: *mut KslockRwSem) -> c_int {
    let s = sem!(s);
    ensure!(s.is_writer(), libc::EPERM);
    s.writer.store(0, Relaxed);
    // SAFETY: this thread holds the write lock (checked above).
    unsafe { s.raw.write_unlock() };
    0
}

/// Turns this thread's write lock into a read lock, letting no writer in between and waking
/// queued readers: 0, or `EPERM` if this thread does not hold the write lock.
///
/// # Safety
/// `s` is null or points to a valid `kslock_rwsem_t`.
#[no_mangle]
pub unsafe extern "C" fn kslock_rwsem_downgrade(s: *mut KslockRwSem) -> c_int {
    let s = sem!(s);
    ensure!(s.is_writer(), libc::EPERM);
    s.writer.store(0, Relaxed);
    // SAFETY: this thread holds the write lock (checked above).
    unsafe { s.raw.downgrade() };
    0
}
