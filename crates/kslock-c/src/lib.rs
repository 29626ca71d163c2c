//! `libkslock`: kslock's mutex, rw-semaphore and condition variable for C.
//!
//! `cargo build --release -p kslock-c` builds `libkslock.so` and `libkslock.a`; the API is
//! declared in `include/kslock.h` (hand-written; `tests/c_lib.rs` fails when it drifts from
//! what this library exports or from the sizes of the Rust types).
//!
//! # Conventions
//!
//! * Types `kslock_mutex_t` (32 B), `kslock_rwsem_t` (48 B), `kslock_cond_t` (32 B), all
//!   8-byte aligned; **all-zero is a valid unlocked object**, so a static or zero-filled object
//!   needs no `init` call (`KSLOCK_*_INITIALIZER` are `{0}`).
//! * Functions are `kslock_<type>_<verb>` and return 0 or an errno value, as POSIX does:
//!   `EBUSY` (a trylock failed, destroy of a held lock), `ETIMEDOUT`, `EINVAL` (null object,
//!   unsupported clock, `tv_nsec` outside `[0, 10^9)`, a condvar used with two mutexes at once),
//!   `EPERM` (unlocking what this thread does not hold), `EDEADLK` (locking what this thread
//!   already holds exclusively).
//! * Misuse is checked before kslock sees it, so kslock's own misuse panics never fire through
//!   this API. Any other panic inside the library (a kslock bug) must not unwind into C: every
//!   export is an `extern "C"` function, and Rust aborts the process when a panic reaches such a
//!   function's boundary, after the panic hook has printed the message
//!   ("panic in a function that cannot unwind").
//!
//! Module map: [`mutex`], [`rwsem`], [`cond`]; `time` (timespec deadlines) and `admit`
//! (a condvar's admission count) are shared with the preload (`crates/kslock-c/preload`).
#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

#[path = "admit.rs"]
mod admit;
pub mod cond;
pub mod mutex;
pub mod rwsem;
#[path = "time.rs"]
mod time;

use core::ffi::{c_char, c_int};

/// The library version (the crate version), a static NUL-terminated string.
#[no_mangle]
pub extern "C" fn kslock_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// `Some(&*p)` for a non-null pointer to a `T`.
///
/// # Safety
/// A non-null `p` points to a valid `T` that lives for `'a`.
unsafe fn obj<'a, T>(p: *const T) -> Option<&'a T> {
    // SAFETY: forwarded caller contract.
    unsafe { p.as_ref() }
}

/// Returns `$err` from the enclosing function unless `$cond` holds.
macro_rules! ensure {
    ($cond:expr, $err:expr) => {
        if !$cond {
            return $err;
        }
    };
}
pub(crate) use ensure;

/// A timed-operation request, validated as POSIX orders the checks: the clock first, the
/// `timespec` only when the operation would block.
pub(crate) struct Timed {
    clock: time::Clock,
    abstime: libc::timespec,
}

impl Timed {
    /// Reads `clockid`/`abstime`; `Err(EINVAL)` for an unsupported clock or a null `abstime`.
    ///
    /// # Safety
    /// A non-null `abstime` points to a valid `timespec`.
    pub(crate) unsafe fn new(
        clockid: libc::clockid_t,
        abstime: *const libc::timespec,
    ) -> Result<Timed, c_int> {
        let clock = time::Clock::from_id(clockid).ok_or(libc::EINVAL)?;
        // SAFETY: forwarded caller contract.
        let abstime = *unsafe { obj(abstime) }.ok_or(libc::EINVAL)?;
        Ok(Timed { clock, abstime })
    }

    /// The time left, or `Err(EINVAL)` for an invalid `timespec`.
    pub(crate) fn remaining(&self) -> Result<std::time::Duration, c_int> {
        ensure!(time::is_valid(&self.abstime), Err(libc::EINVAL));
        Ok(time::remaining(self.clock, &self.abstime))
    }

    /// The deadline as an absolute `CLOCK_MONOTONIC` ns value, or `Err(EINVAL)`.
    pub(crate) fn mono_deadline(&self) -> Result<u64, c_int> {
        ensure!(time::is_valid(&self.abstime), Err(libc::EINVAL));
        Ok(time::mono_deadline_ns(self.clock, &self.abstime))
    }
}
