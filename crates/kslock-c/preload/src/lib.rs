//! `libkslock_preload.so`: runs unmodified dynamically linked pthread programs on kslock's
//! locks. `LD_PRELOAD=libkslock_preload.so program` replaces `pthread_mutex_*`,
//! `pthread_rwlock_*` and `pthread_cond_*` (every variant glibc 2.34+ exports) with kslock's
//! mutex, rw-semaphore and condition variable, living **in place** inside the program's own
//! `pthread_*_t` objects (glibc x86_64: mutex 40 B, rwlock 56 B, cond 48 B; no side table, no
//! allocation).
//!
//! # Where each object's route lives
//!
//! Every call first decides, from the object itself, whether kslock or glibc serves it
//! ("route"). The decision is written into the object once (by `*_init`, or by the static
//! initialiser) and never changes, so every later call routes the same way:
//!
//! | object | kslock when | glibc when | where the route is read |
//! |--------|-------------|------------|-------------------------|
//! | mutex | kind 0–3 (normal, recursive, errorcheck, adaptive; static initialisers included) | process-shared, robust, priority-inherit or -protect (and destroyed: glibc then returns `EINVAL` as it would) | glibc's own `__kind` (bytes 16–19), where the static initialisers write the kind and which kslock's `RawMutex` leaves to its embedder |
//! | rwlock | not process-shared | process-shared | bytes 40–47 (glibc's unused `__pad2`): `u64::MAX` = glibc, else the kslock writer's thread pointer (`pthread_self()`'s value) or 0 |
//! | cond | not process-shared | process-shared | bit 0 of bytes 36–39 (glibc's `__wrefs`, whose bit 0 glibc sets for process-shared condvars and never clears) |
//!
//! glibc's implementation of a fallback object is reached without `dlsym` ([`forward`]).
//!
//! # Misuse
//!
//! kslock's own misuse panics never fire through the preload: ownership is checked first
//! (kslock's `is_owned_by_current_thread`, one load). Errorcheck and recursive mutexes return
//! `EDEADLK`/`EPERM` as POSIX requires; a normal mutex relocked by its owner deadlocks (as
//! glibc's does: `lock` blocks for ever, `timedlock` times out); unlocking a normal mutex this
//! thread does not hold returns `EPERM` (POSIX: undefined; glibc would release it). Any other
//! panic aborts the process with its message (Rust aborts when a panic reaches an `extern "C"`
//! boundary). The condvar waits are `extern "C-unwind"` because cancellation unwinds through
//! them; their Rust bodies run in `extern "C"` helpers, so a panic there still aborts.
//!
//! Module map: [`mutex`], [`rwlock`], [`cond`], [`forward`] (glibc fallbacks); `time` and
//! `admit` are shared with libkslock.
#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

#[path = "../../src/admit.rs"]
mod admit;
pub mod cond;
pub mod forward;
pub mod mutex;
pub mod rwlock;
#[cfg(feature = "stats")]
pub mod stat;
#[path = "../../src/time.rs"]
mod time;

use core::ffi::c_char;
use core::sync::atomic::AtomicU32;

/// The preload's version (the crate version), a static NUL-terminated string. Its presence
/// in a process also tells that the preload is loaded.
#[no_mangle]
pub extern "C" fn kslock_preload_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// ELF constructor: resolves the glibc fallbacks eagerly ([`forward`]).
extern "C" fn init() {
    forward::resolve_all();
}

#[used]
#[link_section = ".init_array"]
static INIT: extern "C" fn() = init;

/// Writes `msg` to stderr and aborts (no allocation, no formatting).
pub(crate) fn die(msg: &[u8]) -> ! {
    // SAFETY: `msg` is a valid buffer; write(2) and abort(3) have no other preconditions.
    unsafe {
        libc::write(2, msg.as_ptr().cast(), msg.len());
        libc::abort()
    }
}

/// Sleeps on `word` while it holds `val`, until woken or `deadline` (absolute
/// `CLOCK_MONOTONIC` ns) passes. Returns early on spurious wakeups and signals; callers
/// re-check their condition.
pub(crate) fn futex_wait(word: &AtomicU32, val: u32, deadline: Option<u64>) {
    let ts = deadline.map(|d| libc::timespec {
        tv_sec: (d / 1_000_000_000) as libc::time_t,
        tv_nsec: (d % 1_000_000_000) as libc::c_long,
    });
    let tsp = ts
        .as_ref()
        .map_or(core::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: FUTEX_WAIT_BITSET with an all-ones mask reads `word` (a valid, aligned u32) and
    // takes an absolute CLOCK_MONOTONIC timespec or null.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT_BITSET | libc::FUTEX_PRIVATE_FLAG,
            val,
            tsp,
            core::ptr::null::<u32>(),
            u32::MAX,
        )
    };
}

/// Wakes up to `n` threads sleeping on `word`.
pub(crate) fn futex_wake(word: &AtomicU32, n: i32) {
    // SAFETY: FUTEX_WAKE only uses the address of `word` as a key.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            n,
        )
    };
}

/// Casts a pthread object pointer to the preload's view of it, `None` if null.
///
/// # Safety
/// A non-null `p` points to a valid object of the C type whose preload view is `T` (same size,
/// alignment 8).
pub(crate) unsafe fn view<'a, T, P>(p: *mut P) -> Option<&'a T> {
    // SAFETY: forwarded caller contract.
    unsafe { p.cast::<T>().as_ref() }
}
