//! parking_lot 0.12.5's own unit tests, run against kslock (issue 10).
//!
//! Each module is the `#[cfg(test)]` module of the parking_lot source file of the same name
//! (or one of its `tests/` files), adapted as its header says: in most, only the crate name
//! changed. `crate::` paths resolve to kslock through the `pub use kslock::*` below, so the
//! test bodies name `crate::Mutex`, `crate::Condvar`, ... as they do inside parking_lot.
//!
//! Not applicable: `once.rs` (kslock has no `Once`). The `serde` and `arc_lock` tests run with
//! `--features serde,arc_lock`.
#![cfg(not(kslock_loom))]
#![allow(clippy::all)]

pub use kslock::*;

mod condvar;
mod fair_mutex;
mod issue_203;
mod issue_392;
mod mutex;
mod remutex;
mod rwlock;

/// The WebKit queue tests' message counts (`condvar.rs`): a tenth of parking_lot's (about
/// 2 s instead of 20 s in a debug build on 2 CPUs), a hundredth under delay injection
/// (`--cfg kslock_chaos`, where a tenth takes about 40 s), or all of them with
/// `KSLOCK_PL_FULL=1`.
pub fn scaled(messages: usize) -> usize {
    if std::env::var_os("KSLOCK_PL_FULL").is_some_and(|v| v == "1") {
        messages
    } else if cfg!(kslock_chaos) {
        messages / 100
    } else {
        messages / 10
    }
}

/// parking_lot's tests call its private `Condvar::wait_while_until_internal(guard, condition,
/// Option<Instant>)`; this stand-in maps it onto kslock's public `wait_while` (no deadline)
/// (as `wait_while_for` with a timeout past the clock's range) and `wait_while_until` (a
/// deadline).
pub trait WaitWhileUntilInternal {
    /// `None` = `wait_while`, `Some(t)` = `wait_while_until(.., t)`.
    fn wait_while_until_internal<T: ?Sized, F: FnMut(&mut T) -> bool>(
        &self,
        guard: &mut MutexGuard<'_, T>,
        condition: F,
        timeout: Option<std::time::Instant>,
    ) -> WaitTimeoutResult;
}

impl WaitWhileUntilInternal for Condvar {
    fn wait_while_until_internal<T: ?Sized, F: FnMut(&mut T) -> bool>(
        &self,
        guard: &mut MutexGuard<'_, T>,
        condition: F,
        timeout: Option<std::time::Instant>,
    ) -> WaitTimeoutResult {
        match timeout {
            Some(t) => self.wait_while_until(guard, condition, t),
            // A timeout past the clock's range means no deadline: `wait_while`, with a result.
            None => self.wait_while_for(guard, condition, std::time::Duration::MAX),
        }
    }
}
