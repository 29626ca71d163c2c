//! `pthread_rwlock_*` on kslock's [`RawRwSem`], in place inside `pthread_rwlock_t`.
//!
//! Layout of a kslock-routed `pthread_rwlock_t` (56 bytes, all-zero = a default unlocked
//! rwlock):
//!
//! | bytes | field | meaning |
//! |-------|-------|---------|
//! | 0–39 | kslock `RawRwSem` | |
//! | 40–47 | `tag` (glibc's unused `__pad2`) | `GLIBC` = glibc serves the object (process-shared); otherwise the kslock writer's tag (`me()`: its thread pointer, `pthread_self()`'s value), or 0 |
//! | 48–51 | glibc's `__flags`: the kind, written by `pthread_rwlock_init` or by `PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP` | |
//! | 52–55 | unused | |
//!
//! Kinds: `PREFER_READER` (0, the default) and `PREFER_WRITER` (1, which glibc also treats as
//! reader-preferring) take read locks with kslock's `read_recursive`, which waits only while a
//! writer *holds* the lock, so a thread may nest read locks while a writer waits;
//! `PREFER_WRITER_NONRECURSIVE` (2) takes them with `read_behind_waiters`, which also queues
//! behind waiting writers, asleep or awake (kslock's plain `read` passes sleeping ones). `tag`
//! is written only by the write holder and compared with the caller's own tag (`me()`)
//! (Relaxed: a thread only ever finds its own value by program order); `GLIBC` is written by
//! `pthread_rwlock_init` before the object is shared.

use core::ffi::c_int;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

use kslock::RawRwSem;

use crate::time::{self, Clock};
use crate::{forward, view};

/// `tag`: glibc serves this rwlock (no thread pointer is all-ones).
const GLIBC: u64 = u64::MAX;
/// glibc's `PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP`.
const WRITER_NONRECURSIVE: u32 = 2;

/// The preload's view of a `pthread_rwlock_t`.
#[repr(C)]
pub struct PRwLock {
    raw: RawRwSem,
    tag: AtomicU64,
    flags: AtomicU32,
    _unused: u32,
}

const _: () = {
    assert!(core::mem::size_of::<PRwLock>() == core::mem::size_of::<libc::pthread_rwlock_t>());
    assert!(core::mem::align_of::<PRwLock>() == core::mem::align_of::<libc::pthread_rwlock_t>());
    assert!(core::mem::offset_of!(PRwLock, flags) == 48);
};

/// This thread's `tag` value: a value no other live thread has. On x86_64 Linux the thread
/// pointer (the TCB's self pointer at `%fs:0`, x86_64 TLS ABI; glibc's `pthread_self()` is the
/// same value), one load instead of a call through the PLT on every lock and unlock.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[inline(always)]
fn me() -> u64 {
    let tp: u64;
    // SAFETY: one load of the thread pointer, which the C runtime sets before the thread runs
    // any code and never changes; no stack, no writes.
    unsafe {
        core::arch::asm!(
            "movq %fs:0, {tp}",
            tp = out(reg) tp,
            options(att_syntax, pure, nomem, nostack, preserves_flags),
        );
    }
    tp
}

/// This thread's `tag` value: `pthread_self()`.
#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
fn me() -> u64 {
    // SAFETY: pthread_self has no preconditions.
    unsafe { libc::pthread_self() as u64 }
}

impl PRwLock {
    fn is_writer(&self) -> bool {
        self.tag.load(Relaxed) == me()
    }

    fn won_write(&self) -> c_int {
        self.tag.store(me(), Relaxed);
        0
    }

    fn recursive_reads(&self) -> bool {
        self.flags.load(Relaxed) != WRITER_NONRECURSIVE
    }

    fn try_read(&self) -> bool {
        if self.recursive_reads() {
            self.raw.try_read_recursive()
        } else {
            self.raw.try_read_behind_waiters()
        }
    }

    /// A read lock of this kind waiting at most `timeout`.
    fn try_read_for(&self, timeout: core::time::Duration) -> bool {
        if self.recursive_reads() {
            self.raw.try_read_recursive_for(timeout)
        } else {
            self.raw.try_read_behind_waiters_for(timeout)
        }
    }
}

/// The kslock view of `r`, or `None` when glibc serves it (or `r` is null).
///
/// # Safety
/// `r` is null or points to a valid `pthread_rwlock_t`.
unsafe fn route<'a>(r: *mut libc::pthread_rwlock_t) -> Option<&'a PRwLock> {
    // SAFETY: forwarded caller contract; PRwLock is pthread_rwlock_t's size and alignment.
    unsafe { view::<PRwLock, _>(r) }.filter(|p| p.tag.load(Relaxed) != GLIBC)
}

extern "C" {
    fn pthread_rwlockattr_getkind_np(a: *const libc::pthread_rwlockattr_t, k: *mut c_int) -> c_int;
    fn pthread_rwlockattr_getpshared(a: *const libc::pthread_rwlockattr_t, s: *mut c_int) -> c_int;
}

/// `pthread_rwlock_init`: glibc for process-shared rwlocks, kslock otherwise.
///
/// # Safety
/// POSIX's contract.
#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_init(
    r: *mut libc::pthread_rwlock_t,
    a: *const libc::pthread_rwlockattr_t,
) -> c_int {
    let (mut kind, mut pshared) = (0, libc::PTHREAD_PROCESS_PRIVATE);
    if !a.is_null() {
        // SAFETY: `a` is an initialised attribute object (caller contract); glibc's getters.
        unsafe {
            pthread_rwlockattr_getkind_np(a, &mut kind);
            pthread_rwlockattr_getpshared(a, &mut pshared);
        }
    }
    if r.is_null() {
        return libc::EINVAL;
    }
    if pshared != libc::PTHREAD_PROCESS_PRIVATE {
        // SAFETY: caller contract.
        let rc = unsafe { forward::rwlock_init(r, a) };
        // SAFETY: `r` is valid (caller contract) and now a glibc rwlock, which never uses
        // `__pad2`, where the tag lives.
        if let (0, Some(p)) = (rc, unsafe { view::<PRwLock, _>(r) }) {
            p.tag.store(GLIBC, Relaxed);
        }
        return rc;
    }
    // SAFETY: caller contract: writable and unused; all-zero is an unlocked RawRwSem.
    unsafe { r.write_bytes(0, 1) };
    // SAFETY: just initialised.
    if let Some(p) = unsafe { view::<PRwLock, _>(r) } {
        p.flags.store(kind as u32, Relaxed);
    }
    0
}

/// `pthread_rwlock_destroy`: `EBUSY` while threads wait in the lock, else 0, also when it is
/// still held, as in glibc. POSIX leaves destroying a held rwlock undefined, and programs do
/// it: a thread that exits holding a read lock, which nobody can release (the Open POSIX Test
/// Suite's `pthread_rwlock_timedrdlock/6-2` and `timedwrlock/6-2` expect the destroy to
/// succeed). A thread blocked in the lock would be stranded, so that stays an error.
///
/// # Safety
/// POSIX's contract.
#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_destroy(r: *mut libc::pthread_rwlock_t) -> c_int {
    // SAFETY: caller contract.
    match unsafe { route(r) } {
        // SAFETY: caller contract.
        None => unsafe { forward::rwlock_destroy(r) },
        Some(p) if p.raw.has_waiters() => libc::EBUSY,
        Some(_) => 0,
    }
}

/// `pthread_rwlock_rdlock`: `EDEADLK` if this thread holds the write lock.
///
/// # Safety
/// POSIX's contract.
#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_rdlock(r: *mut libc::pthread_rwlock_t) -> c_int {
    // SAFETY: caller contract.
    let Some(p) = (unsafe { route(r) }) else {
        // SAFETY: caller contract.
        return unsafe { forward::rwlock_rdlock(r) };
    };
    if p.is_writer() {
        return libc::EDEADLK;
    }
    if p.recursive_reads() {
        p.raw.read_recursive();
    } else {
        p.raw.read_behind_waiters();
    }
    0
}

/// `pthread_rwlock_tryrdlock`: `EBUSY` where `rdlock` would block.
///
/// # Safety
/// POSIX's contract.
#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_tryrdlock(r: *mut libc::pthread_rwlock_t) -> c_int {
    // SAFETY: caller contract.
    let Some(p) = (unsafe { route(r) }) else {
        // SAFETY: caller contract.
        return unsafe { forward::rwlock_tryrdlock(r) };
    };
    if p.try_read() {
        0
    } else {
        libc::EBUSY
    }
}

/// Timed read lock on a kslock rwlock (glibc's order of checks: clock and timespec first).
///
/// # Safety
/// `ts` is null or points to a `timespec`.
unsafe fn timed_read(p: &PRwLock, clockid: libc::clockid_t, ts: *const libc::timespec) -> c_int {
    // SAFETY: caller contract.
    let (Some(clock), Some(ts)) = (Clock::from_id(clockid), unsafe { ts.as_ref() }) else {
        return libc::EINVAL;
    };
    if !time::is_valid(ts) {
        return libc::EINVAL;
    }
    if p.is_writer() {
        return libc::EDEADLK;
    }
    if p.try_read() || p.try_read_for(time::remaining(clock, ts)) {
        0
    } else {
        libc::ETIMEDOUT
    }
}

/// `pthread_rwlock_timedrdlock` (`CLOCK_REALTIME`).
///
/// # Safety
/// POSIX's contract.
#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_timedrdlock(
    r: *mut libc::pthread_rwlock_t,
    ts: *const libc::timespec,
) -> c_int {
    // SAFETY: caller contract.
    unsafe { pthread_rwlock_clockrdlock(r, libc::CLOCK_REALTIME, ts) }
}

/// `pthread_rwlock_clockrdlock`.
///
/// # Safety
/// POSIX's contract.
#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_clockrdlock(
    r: *mut libc::pthread_rwlock_t,
    clockid: libc::clockid_t,
    ts: *const libc::timespec,
) -> c_int {
    // SAFETY: caller contract.
    match unsafe { route(r) } {
        // SAFETY: caller contract.
        None => unsafe { forward::rwlock_clockrdlock(r, clockid, ts) },
        // SAFETY: caller contract.
        Some(p) => unsafe { timed_read(p, clockid, ts) },
    }
}

/// `pthread_rwlock_wrlock`: `EDEADLK` if this thread holds the write lock.
///
/// # Safety
/// POSIX's contract.
#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_wrlock(r: *mut libc::pthread_rwlock_t) -> c_int {
    // SAFETY: caller contract.
    let Some(p) = (unsafe { route(r) }) else {
        // SAFETY: caller contract.
        return unsafe { forward::rwlock_wrlock(r) };
    };
    if p.is_writer() {
        return libc::EDEADLK;
    }
    p.raw.write();
    p.won_write()
}

/// `pthread_rwlock_trywrlock`: `EBUSY` unless the lock is entirely free.
///
/// # Safety
/// POSIX's contract.
#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_trywrlock(r: *mut libc::pthread_rwlock_t) -> c_int {
    // SAFETY: caller contract.
    let Some(p) = (unsafe { route(r) }) else {
        // SAFETY: caller contract.
        return unsafe { forward::rwlock_trywrlock(r) };
    };
    if p.raw.try_write() {
        p.won_write()
    } else {
        libc::EBUSY
    }
}

/// `pthread_rwlock_timedwrlock` (`CLOCK_REALTIME`).
///
/// # Safety
/// POSIX's contract.
#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_timedwrlock(
    r: *mut libc::pthread_rwlock_t,
    ts: *const libc::timespec,
) -> c_int {
    // SAFETY: caller contract.
    unsafe { pthread_rwlock_clockwrlock(r, libc::CLOCK_REALTIME, ts) }
}

/// `pthread_rwlock_clockwrlock`.
///
/// # Safety
/// POSIX's contract.
#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_clockwrlock(
    r: *mut libc::pthread_rwlock_t,
    clockid: libc::clockid_t,
    ts: *const libc::timespec,
) -> c_int {
    // SAFETY: caller contract.
    let Some(p) = (unsafe { route(r) }) else {
        // SAFETY: caller contract.
        return unsafe { forward::rwlock_clockwrlock(r, clockid, ts) };
    };
    // SAFETY: caller contract.
    let (Some(clock), Some(ts)) = (Clock::from_id(clockid), unsafe { ts.as_ref() }) else {
        return libc::EINVAL;
    };
    if !time::is_valid(ts) {
        return libc::EINVAL;
    }
    if p.is_writer() {
        return libc::EDEADLK;
    }
    if p.raw.try_write_for(time::remaining(clock, ts)) {
        p.won_write()
    } else {
        libc::ETIMEDOUT
    }
}

/// `pthread_rwlock_unlock`: the write lock if this thread holds it, else a read lock;
/// `EPERM` if the lock is not held in a way this thread could release.
///
/// # Safety
/// POSIX's contract.
#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_unlock(r: *mut libc::pthread_rwlock_t) -> c_int {
    // SAFETY: caller contract.
    let Some(p) = (unsafe { route(r) }) else {
        // SAFETY: caller contract.
        return unsafe { forward::rwlock_unlock(r) };
    };
    if p.is_writer() {
        p.tag.store(0, Relaxed);
        // SAFETY: this thread holds the write lock (its tag).
        unsafe { p.raw.write_unlock() };
        return 0;
    }
    if p.raw.is_locked() && !p.raw.is_write_locked() {
        // SAFETY: the lock is read-locked and this thread is not the writer, so (for a
        // correct program) it holds one of the read locks.
        unsafe { p.raw.read_unlock() };
        return 0;
    }
    libc::EPERM
}
