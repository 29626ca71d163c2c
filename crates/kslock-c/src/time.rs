//! Absolute `timespec` deadlines on a POSIX clock, turned into what kslock takes.
//!
//! kslock's timed operations take a duration from now or an absolute `CLOCK_MONOTONIC`
//! deadline in nanoseconds. POSIX timed functions take an absolute `timespec` on
//! `CLOCK_REALTIME` or `CLOCK_MONOTONIC`. A realtime deadline is converted once, through "time
//! remaining"; callers that wait in slices re-check it against the realtime clock, so a clock
//! step is noticed at the next slice. (Shared by `libkslock` and `libkslock_preload` through
//! `#[path]`.)

#![allow(dead_code)]

use std::time::Duration;

/// One second in nanoseconds.
const NS_PER_SEC: i64 = 1_000_000_000;

/// The clocks a timed lock operation accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Clock {
    /// `CLOCK_REALTIME`: wall time, may be stepped.
    Realtime,
    /// `CLOCK_MONOTONIC`.
    Monotonic,
}

impl Clock {
    /// The clock for a `clockid_t`, or `None` (→ `EINVAL`) for any other clock.
    pub(crate) fn from_id(id: libc::clockid_t) -> Option<Clock> {
        match id {
            libc::CLOCK_REALTIME => Some(Clock::Realtime),
            libc::CLOCK_MONOTONIC => Some(Clock::Monotonic),
            _ => None,
        }
    }

    fn id(self) -> libc::clockid_t {
        match self {
            Clock::Realtime => libc::CLOCK_REALTIME,
            Clock::Monotonic => libc::CLOCK_MONOTONIC,
        }
    }

    /// Now on this clock, in nanoseconds since its epoch.
    pub(crate) fn now_ns(self) -> i128 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid out-pointer and both clocks exist on Linux.
        unsafe { libc::clock_gettime(self.id(), &mut ts) };
        ts.tv_sec as i128 * NS_PER_SEC as i128 + ts.tv_nsec as i128
    }
}

/// Is `ts` a valid absolute time (`0 <= tv_nsec < 10^9`)? POSIX: `EINVAL` otherwise. A
/// negative `tv_sec` is valid: a time in the past.
pub(crate) fn is_valid(ts: &libc::timespec) -> bool {
    (0..NS_PER_SEC).contains(&ts.tv_nsec)
}

/// `ts` in nanoseconds since its clock's epoch.
fn ts_ns(ts: &libc::timespec) -> i128 {
    ts.tv_sec as i128 * NS_PER_SEC as i128 + ts.tv_nsec as i128
}

/// Time left until `ts` on `clock` (zero if it has passed).
pub(crate) fn remaining(clock: Clock, ts: &libc::timespec) -> Duration {
    let left = ts_ns(ts) - clock.now_ns();
    if left <= 0 {
        Duration::ZERO
    } else {
        Duration::from_nanos(u64::try_from(left).unwrap_or(u64::MAX))
    }
}

/// Has `ts` on `clock` passed?
pub(crate) fn has_passed(clock: Clock, ts: &libc::timespec) -> bool {
    clock.now_ns() >= ts_ns(ts)
}

/// `ts` on `clock` as an absolute `CLOCK_MONOTONIC` deadline in ns (what kslock's condvar takes).
pub(crate) fn mono_deadline_ns(clock: Clock, ts: &libc::timespec) -> u64 {
    let mono_now = Clock::Monotonic.now_ns();
    let left = match clock {
        Clock::Monotonic => return u64::try_from(ts_ns(ts).max(0)).unwrap_or(u64::MAX),
        Clock::Realtime => ts_ns(ts) - Clock::Realtime.now_ns(),
    };
    u64::try_from((mono_now + left.max(0)).max(0)).unwrap_or(u64::MAX)
}
