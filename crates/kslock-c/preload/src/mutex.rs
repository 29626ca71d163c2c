//! `pthread_mutex_*` on kslock's [`RawMutex`], in place inside `pthread_mutex_t`.
//!
//! Layout of a kslock-routed `pthread_mutex_t` (40 bytes, all-zero = a normal unlocked mutex):
//!
//! | bytes | field | who writes it |
//! |-------|-------|---------------|
//! | 0–31 | kslock `RawMutex` | kslock; it never touches its bytes 16–19 |
//! | 16–19 | glibc's `__kind`: 0 normal, 1 recursive, 2 errorcheck, 3 adaptive (+ glibc's flag bits: then glibc serves the object) | `pthread_mutex_init`, or the program's static initialiser (`PTHREAD_*_MUTEX_INITIALIZER_NP` write only this field) |
//! | 32–35 | `depth`: extra recursive locks held by the owner | the owner only |
//! | 36–39 | `cond_users`: threads inside a condvar wait on this mutex | the waiters, holding the mutex |
//!
//! Adaptive mutexes are kslock mutexes like the others (kslock spins adaptively anyway).
//! `depth` is read and written only by the thread that holds the mutex, so Relaxed suffices
//! (its next owner got the mutex through kslock's Acquire/Release hand-over).
//!
//! # Destroying a mutex that a condvar waiter uses
//!
//! `pthread_mutex_destroy` returns `EBUSY` while the mutex is locked **or a condvar waiter
//! uses it**, as glibc's does. Invariant: `cond_users` counts the threads between
//! `PMutex::cond_enter` (in a `pthread_cond_*wait`, holding the mutex, before the condvar
//! releases it) and `PMutex::cond_leave` (holding it again, before the wait returns or acts
//! on cancellation): every such thread is blocked on the condvar, requeued onto the mutex, or
//! waiting to relock it. Only the condvar waits touch the count, so the lock and unlock paths
//! do not change. A mutex that glibc serves and that is waited on through kslock's condvar
//! keeps glibc's own count instead (`glibc_cond_release`).

use core::ffi::c_int;
use core::sync::atomic::{AtomicU32, Ordering::*};

use kslock::RawMutex;

use crate::time::{self, Clock};
use crate::{forward, view};

/// glibc's `PTHREAD_MUTEX_ROBUST_NORMAL_NP` flag in `__kind`.
const KIND_ROBUST: u32 = 16;
/// glibc's priority-inheritance flag.
const KIND_PI: u32 = 32;
/// glibc's priority-protect flag.
const KIND_PP: u32 = 64;
/// glibc's process-shared flag.
const KIND_PSHARED: u32 = 128;
/// Any of these: glibc serves the mutex.
const KIND_GLIBC: u32 = KIND_ROBUST | KIND_PI | KIND_PP | KIND_PSHARED;
/// glibc's elision flags (ignored: kslock serves the mutex).
const KIND_ELISION: u32 = 256 | 512;
/// The type bits (normal, recursive, errorcheck, adaptive).
const KIND_TYPE: u32 = 3;
/// Written by `pthread_mutex_destroy`: glibc then serves (and rejects) the object.
const KIND_DESTROYED: u32 = u32::MAX;

/// The preload's view of a `pthread_mutex_t`.
#[repr(C)]
pub struct PMutex {
    raw: RawMutex,
    depth: AtomicU32,
    cond_users: AtomicU32,
}

const _: () = {
    assert!(core::mem::size_of::<PMutex>() == core::mem::size_of::<libc::pthread_mutex_t>());
    assert!(core::mem::align_of::<PMutex>() == core::mem::align_of::<libc::pthread_mutex_t>());
};

/// A kslock mutex's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Type {
    Normal,
    Recursive,
    ErrorCheck,
}

/// Who serves a mutex.
enum Route<'a> {
    Kslock(&'a PMutex, Type),
    Glibc,
}

impl PMutex {
    /// glibc's `__kind` field (bytes 16–19).
    fn kind(&self) -> &AtomicU32 {
        // SAFETY: bytes 16–19 of the 32-byte RawMutex are an AtomicU32-sized, 4-aligned field
        // that the mutex never touches (RawMutex's type doc); we own the object's memory.
        unsafe {
            &*(self as *const PMutex)
                .cast::<u8>()
                .add(16)
                .cast::<AtomicU32>()
        }
    }

    /// The kslock mutex inside (for the condvar).
    pub(crate) fn raw(&self) -> &RawMutex {
        &self.raw
    }

    /// Clears the recursion depth for a condvar wait, returning it.
    pub(crate) fn take_depth(&self) -> u32 {
        self.depth.swap(0, Relaxed)
    }

    /// Restores the recursion depth after a condvar wait.
    pub(crate) fn restore_depth(&self, d: u32) {
        self.depth.store(d, Relaxed);
    }

    /// A condvar wait begins to use the mutex, which this thread holds (module doc): a
    /// destroy returns `EBUSY` from here until [`cond_leave`](Self::cond_leave). Relaxed: the
    /// wait's release of the mutex orders it before any destroy made after a later lock.
    pub(crate) fn cond_enter(&self) {
        self.cond_users.fetch_add(1, Relaxed);
    }

    /// The condvar wait no longer uses the mutex, which this thread holds again. Release:
    /// a destroy that reads the lowered count (Acquire) then sees the mutex locked.
    pub(crate) fn cond_leave(&self) {
        self.cond_users.fetch_sub(1, Release);
    }
}

/// The route of mutex `m` (null: glibc, which returns its own error).
///
/// # Safety
/// `m` is null or points to a valid `pthread_mutex_t`.
unsafe fn route<'a>(m: *mut libc::pthread_mutex_t) -> Route<'a> {
    // SAFETY: forwarded caller contract; PMutex is pthread_mutex_t's size and alignment.
    let Some(p) = (unsafe { view::<PMutex, _>(m) }) else {
        return Route::Glibc;
    };
    // Relaxed: the kind is written before the mutex is shared (init or static data).
    let k = p.kind().load(Relaxed);
    if k & KIND_GLIBC != 0 || k & !(KIND_TYPE | KIND_ELISION) != 0 {
        return Route::Glibc;
    }
    let t = match k & KIND_TYPE {
        1 => Type::Recursive,
        2 => Type::ErrorCheck,
        _ => Type::Normal,
    };
    Route::Kslock(p, t)
}

/// Is `m` served by kslock (for the condvar)? `Some` with the preload's view if so.
///
/// # Safety
/// `m` is null or points to a valid `pthread_mutex_t`.
pub(crate) unsafe fn kslock_view<'a>(m: *mut libc::pthread_mutex_t) -> Option<&'a PMutex> {
    // SAFETY: forwarded caller contract.
    match unsafe { route(m) } {
        Route::Kslock(p, _) => Some(p),
        Route::Glibc => None,
    }
}

/// glibc's `__kind` (bytes 16–19, [`PMutex::kind`]).
const GLIBC_KIND: usize = 16;
/// glibc's `__owner` (bytes 8–11 of a glibc-served mutex): the holder's thread id.
const GLIBC_OWNER: usize = 8;
/// glibc's `__nusers` (bytes 12–15): the threads holding the mutex or waiting on a condvar
/// with it; glibc's `pthread_mutex_destroy` returns `EBUSY` while it is not 0 (robust mutexes
/// excepted). Written only by a thread that holds the mutex.
const GLIBC_NUSERS: usize = 12;

/// glibc's 32-bit field at byte `off` (a multiple of 4 below 20) of the mutex `m`.
///
/// # Safety
/// `m` points to a valid `pthread_mutex_t`.
unsafe fn glibc_field<'a>(m: *mut libc::pthread_mutex_t, off: usize) -> &'a AtomicU32 {
    // SAFETY: caller contract; the field is 4-aligned inside the 8-aligned 40-byte object.
    unsafe { &*m.cast::<u8>().add(off).cast::<AtomicU32>() }
}

/// Releases the glibc-served mutex `m` for a wait on kslock's condvar, keeping the waiter in
/// glibc's `__nusers` as glibc's own condvar does (it releases the mutex without lowering the
/// count), so glibc's `pthread_mutex_destroy` returns `EBUSY` while the wait uses the mutex.
/// If this thread holds `m` (`__owner` is its id) and `m` is not robust, it raises
/// `__nusers` before `pthread_mutex_unlock` lowers it; [`glibc_cond_reacquire`] lowers it
/// after the relock. Returns the unlock's result and whether the waiter is counted.
///
/// # Safety
/// `m` points to a valid glibc-served `pthread_mutex_t`.
pub(crate) unsafe fn glibc_cond_release(m: *mut libc::pthread_mutex_t) -> (c_int, bool) {
    // SAFETY: caller contract (all three).
    let (kind, owner, nusers) = unsafe {
        (
            glibc_field(m, GLIBC_KIND),
            glibc_field(m, GLIBC_OWNER),
            glibc_field(m, GLIBC_NUSERS),
        )
    };
    // SAFETY: gettid has no preconditions.
    let me = unsafe { libc::gettid() } as u32;
    // Relaxed: the holder reads its own writes; other threads write `__nusers` only while
    // holding the mutex, which this thread does.
    let counted = kind.load(Relaxed) & KIND_ROBUST == 0 && owner.load(Relaxed) == me;
    if counted {
        nusers.fetch_add(1, Relaxed);
    }
    // SAFETY: caller contract.
    let rc = unsafe { forward::mutex_unlock(m) };
    if rc != 0 && counted {
        // Still held (the unlock failed).
        nusers.fetch_sub(1, Relaxed);
    }
    (rc, counted && rc == 0)
}

/// Relocks the glibc-served mutex `m` after a wait that [`glibc_cond_release`] released it
/// for, and lowers `__nusers` again if that counted the waiter. If the lock fails (a
/// priority-protect ceiling below the thread's priority) the waiter stays counted, as in
/// glibc's condvar.
///
/// # Safety
/// `m` points to a valid glibc-served `pthread_mutex_t`.
pub(crate) unsafe fn glibc_cond_reacquire(m: *mut libc::pthread_mutex_t, counted: bool) -> c_int {
    // SAFETY: caller contract.
    let rc = unsafe { forward::mutex_lock(m) };
    if rc == 0 && counted {
        // SAFETY: caller contract. This thread holds the mutex again.
        unsafe { glibc_field(m, GLIBC_NUSERS) }.fetch_sub(1, Relaxed);
    }
    rc
}

/// Reads the attribute getters we need: (type, needs glibc).
///
/// # Safety
/// `a` is null or points to an initialised `pthread_mutexattr_t`.
unsafe fn attr_kind(a: *const libc::pthread_mutexattr_t) -> (c_int, bool) {
    if a.is_null() {
        return (0, false);
    }
    let (mut ty, mut pshared, mut robust, mut proto) = (0, 0, 0, 0);
    // SAFETY: `a` is an initialised attribute object; the out-pointers are valid. These glibc
    // getters are not interposed.
    unsafe {
        pthread_mutexattr_gettype(a, &mut ty);
        libc::pthread_mutexattr_getpshared(a, &mut pshared);
        pthread_mutexattr_getrobust(a, &mut robust);
        pthread_mutexattr_getprotocol(a, &mut proto);
    }
    let glibc = pshared != libc::PTHREAD_PROCESS_PRIVATE || robust != 0 || proto != 0;
    (ty, glibc)
}

extern "C" {
    fn pthread_mutexattr_gettype(a: *const libc::pthread_mutexattr_t, t: *mut c_int) -> c_int;
    fn pthread_mutexattr_getrobust(a: *const libc::pthread_mutexattr_t, r: *mut c_int) -> c_int;
    fn pthread_mutexattr_getprotocol(a: *const libc::pthread_mutexattr_t, p: *mut c_int) -> c_int;
}

/// `pthread_mutex_init`: kslock for normal/recursive/errorcheck/adaptive private mutexes;
/// glibc for process-shared, robust, PI and PP ones.
///
/// # Safety
/// POSIX's contract: `m` points to memory for a mutex no thread uses; `a` is null or
/// initialised.
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_init(
    m: *mut libc::pthread_mutex_t,
    a: *const libc::pthread_mutexattr_t,
) -> c_int {
    // SAFETY: caller contract.
    let (ty, glibc) = unsafe { attr_kind(a) };
    if glibc || m.is_null() || !(0..=3).contains(&ty) {
        // SAFETY: caller contract.
        return unsafe { forward::mutex_init(m, a) };
    }
    // SAFETY: caller contract: `m` is writable and unused; all-zero is an unlocked RawMutex.
    unsafe { m.write_bytes(0, 1) };
    // SAFETY: just initialised.
    if let Some(p) = unsafe { view::<PMutex, _>(m) } {
        p.kind().store(ty as u32, Relaxed);
    }
    0
}

/// `pthread_mutex_destroy`: `EBUSY` while locked or used by a condvar waiter (module doc).
///
/// # Safety
/// POSIX's contract.
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_destroy(m: *mut libc::pthread_mutex_t) -> c_int {
    // SAFETY: caller contract.
    match unsafe { route(m) } {
        // SAFETY: caller contract.
        Route::Glibc => unsafe { forward::mutex_destroy(m) },
        // The count first (Acquire, against `cond_leave`): a waiter that lowered it holds the
        // mutex, which `is_locked` then sees.
        Route::Kslock(p, _) if p.cond_users.load(Acquire) != 0 || p.raw.is_locked() => libc::EBUSY,
        Route::Kslock(p, _) => {
            p.kind().store(KIND_DESTROYED, Relaxed);
            0
        }
    }
}

/// The owner locks again: recursion, `EDEADLK`, or (a normal mutex) a wait for another
/// thread to unlock this thread's hold, as in glibc: a deadlock if none does (`timeout`: for
/// that long at most).
fn relock(p: &PMutex, t: Type, timeout: Option<core::time::Duration>) -> c_int {
    match t {
        Type::Recursive => match p.depth.load(Relaxed).checked_add(1) {
            Some(d) => {
                p.depth.store(d, Relaxed);
                0
            }
            None => libc::EAGAIN,
        },
        Type::ErrorCheck => libc::EDEADLK,
        Type::Normal => {
            if p.raw.lock_or_await_release(timeout) {
                0
            } else {
                libc::ETIMEDOUT
            }
        }
    }
}

/// `pthread_mutex_lock`.
///
/// # Safety
/// POSIX's contract.
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_lock(m: *mut libc::pthread_mutex_t) -> c_int {
    // The uncontended case first, in a function that saves two registers instead of the
    // slow paths' five (they live in a cold function): a free kslock mutex (a thread never
    // holds a mutex it finds free).
    // SAFETY: caller contract.
    if let Route::Kslock(p, _) = unsafe { route(m) } {
        if p.raw.try_lock() {
            return 0;
        }
    }
    // SAFETY: caller contract.
    unsafe { mutex_lock_slow(m) }
}

/// `pthread_mutex_lock` past a failed first try (or on a glibc-served mutex).
///
/// # Safety
/// POSIX's contract.
#[cold]
#[inline(never)]
unsafe fn mutex_lock_slow(m: *mut libc::pthread_mutex_t) -> c_int {
    // SAFETY: caller contract.
    match unsafe { route(m) } {
        // SAFETY: caller contract.
        Route::Glibc => unsafe { forward::mutex_lock(m) },
        Route::Kslock(p, t) => {
            // (The free mutex was tried by the caller.)
            if p.raw.is_owned_by_current_thread() {
                return relock(p, t, None);
            }
            p.raw.lock();
            0
        }
    }
}

/// `pthread_mutex_trylock`: `EBUSY` if held (by another thread, or by this one unless it is
/// recursive).
///
/// # Safety
/// POSIX's contract.
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_trylock(m: *mut libc::pthread_mutex_t) -> c_int {
    // SAFETY: caller contract.
    match unsafe { route(m) } {
        // SAFETY: caller contract.
        Route::Glibc => unsafe { forward::mutex_trylock(m) },
        Route::Kslock(p, t) => {
            if p.raw.try_lock() {
                0
            } else if t == Type::Recursive && p.raw.is_owned_by_current_thread() {
                relock(p, t, None)
            } else {
                libc::EBUSY
            }
        }
    }
}

/// The timed lock on a kslock mutex.
///
/// # Safety
/// `ts` is null or points to a `timespec`.
unsafe fn timed(p: &PMutex, t: Type, clock: Clock, ts: *const libc::timespec) -> c_int {
    // SAFETY: caller contract.
    let Some(ts) = (unsafe { ts.as_ref() }) else {
        return libc::EINVAL;
    };
    let owned = p.raw.is_owned_by_current_thread();
    if owned && t != Type::Normal {
        return relock(p, t, None);
    }
    if !owned && p.raw.try_lock() {
        return 0;
    }
    // POSIX: the timespec is checked only when the call would block.
    if !time::is_valid(ts) {
        return libc::EINVAL;
    }
    if owned {
        return relock(p, t, Some(time::remaining(clock, ts)));
    }
    if p.raw.try_lock_for(time::remaining(clock, ts)) {
        0
    } else {
        libc::ETIMEDOUT
    }
}

/// `pthread_mutex_timedlock` (`CLOCK_REALTIME` deadline).
///
/// # Safety
/// POSIX's contract.
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_timedlock(
    m: *mut libc::pthread_mutex_t,
    ts: *const libc::timespec,
) -> c_int {
    // SAFETY: caller contract.
    match unsafe { route(m) } {
        // SAFETY: caller contract.
        Route::Glibc => unsafe { forward::mutex_timedlock(m, ts) },
        // SAFETY: caller contract.
        Route::Kslock(p, t) => unsafe { timed(p, t, Clock::Realtime, ts) },
    }
}

/// `pthread_mutex_clocklock`: `EINVAL` for clocks other than `CLOCK_REALTIME`/`MONOTONIC`.
///
/// # Safety
/// POSIX's contract.
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_clocklock(
    m: *mut libc::pthread_mutex_t,
    clockid: libc::clockid_t,
    ts: *const libc::timespec,
) -> c_int {
    // SAFETY: caller contract.
    match unsafe { route(m) } {
        // SAFETY: caller contract.
        Route::Glibc => unsafe { forward::mutex_clocklock(m, clockid, ts) },
        Route::Kslock(p, t) => match Clock::from_id(clockid) {
            // SAFETY: caller contract.
            Some(c) => unsafe { timed(p, t, c, ts) },
            None => libc::EINVAL,
        },
    }
}

/// `pthread_mutex_unlock`: `EPERM` if the mutex is not locked, or (errorcheck and recursive
/// mutexes) if this thread does not hold it.
///
/// # Safety
/// POSIX's contract.
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_unlock(m: *mut libc::pthread_mutex_t) -> c_int {
    // The common case first, as in `pthread_mutex_lock`: the holder's unlock of a normal or
    // error-checking mutex (a recursive one may have a depth to count down).
    // SAFETY: caller contract.
    if let Route::Kslock(p, t) = unsafe { route(m) } {
        if t != Type::Recursive && p.raw.unlock_if_owned() {
            return 0;
        }
    }
    // SAFETY: caller contract.
    unsafe { mutex_unlock_slow(m) }
}

/// `pthread_mutex_unlock` past the common case: a recursive mutex, a normal or error-checking
/// one whose holder's release failed in the caller (this thread does not hold it), or a
/// glibc-served mutex.
///
/// # Safety
/// POSIX's contract.
#[cold]
#[inline(never)]
unsafe fn mutex_unlock_slow(m: *mut libc::pthread_mutex_t) -> c_int {
    // SAFETY: caller contract.
    match unsafe { route(m) } {
        // SAFETY: caller contract.
        Route::Glibc => unsafe { forward::mutex_unlock(m) },
        Route::Kslock(p, t) => {
            // Only a recursive mutex has a depth, which only its owner writes: a non-zero
            // depth read by another thread fails the ownership check.
            if t == Type::Recursive {
                let d = p.depth.load(Relaxed);
                if d > 0 {
                    if !p.raw.is_owned_by_current_thread() {
                        return libc::EPERM;
                    }
                    p.depth.store(d - 1, Relaxed);
                    return 0;
                }
            }
            // (The caller's release failed for the other kinds.)
            if t == Type::Recursive && p.raw.unlock_if_owned() {
                return 0;
            }
            // glibc lets any thread unlock a normal mutex (programs use it as a binary
            // semaphore); errorcheck and recursive mutexes must report EPERM (POSIX).
            // SAFETY: the caller releases the hold in place of its holder (glibc's contract
            // for normal mutexes).
            if t == Type::Normal && unsafe { p.raw.unlock_on_behalf() } {
                0
            } else {
                libc::EPERM
            }
        }
    }
}

/// `pthread_mutex_consistent`: only robust (glibc-served) mutexes can be inconsistent;
/// `EINVAL` for kslock's.
///
/// # Safety
/// POSIX's contract.
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_consistent(m: *mut libc::pthread_mutex_t) -> c_int {
    // SAFETY: caller contract.
    match unsafe { route(m) } {
        // SAFETY: caller contract.
        Route::Glibc => unsafe { forward::mutex_consistent(m) },
        Route::Kslock(..) => libc::EINVAL,
    }
}

/// `pthread_mutex_consistent_np`: the old name of [`pthread_mutex_consistent`].
///
/// # Safety
/// POSIX's contract.
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_consistent_np(m: *mut libc::pthread_mutex_t) -> c_int {
    // SAFETY: caller contract.
    unsafe { pthread_mutex_consistent(m) }
}
