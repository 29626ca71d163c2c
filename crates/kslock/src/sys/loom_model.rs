//! loom model of the system layer: a futex is a check-and-sleep under one global mutex (the
//! futex hash-bucket lock), so "woken before sleeping" cannot be lost, and a lost wakeup in a
//! kslock protocol is a loom deadlock. Timed waits time out at once (the timer may always fire
//! first), after a yield; clocks are frozen at 0; each thread is its own CPU.

use crate::sync::{AtomicU32, Ordering};
use loom::sync::{Condvar, Mutex};

use super::{Deadline, TimedOut};

loom::lazy_static! {
    static ref BUCKET: (Mutex<()>, Condvar) = (Mutex::new(()), Condvar::new());
}

pub(crate) fn futex_wait(
    word: &AtomicU32,
    expected: u32,
    deadline: Deadline,
) -> Result<(), TimedOut> {
    let (m, cv) = &*BUCKET;
    let g = m.lock().unwrap();
    if word.load(Ordering::SeqCst) != expected {
        return Ok(());
    }
    if deadline.is_some() {
        // The timer fires "later": let the other threads run first. Without the yield a
        // waiter whose loop re-parks on a timer (a head sleeping on its window) could run
        // forever while the thread it waits for stays switched out, past loom's branch limit
        // once the preemption bound is spent.
        drop(g);
        loom::thread::yield_now();
        return Err(TimedOut);
    }
    drop(cv.wait(g).unwrap());
    Ok(())
}

pub(crate) fn futex_wake(_word: &AtomicU32, _n: i32) -> usize {
    let (m, cv) = &*BUCKET;
    let _g = m.lock().unwrap();
    cv.notify_all();
    1
}

pub(crate) fn now_ns() -> u64 {
    0
}
pub(crate) fn ticks() -> u64 {
    0
}
#[allow(dead_code)] // the native build's calibration; loom's is fixed
pub(crate) fn ticks_per_us() -> u64 {
    1
}
#[allow(dead_code)] // as above
pub(crate) fn measure_syscall_ns() -> u64 {
    100
}
/// Each model thread is on its own CPU, so spinners wait (their 3-step budget) instead of
/// stopping at once on rule R3, and loom explores both the grant and the abort paths.
pub(crate) fn current_cpu() -> u32 {
    let id = format!("{:?}", loom::thread::current().id());
    id.chars()
        .filter(|c| c.is_ascii_digit())
        .collect::<String>()
        .parse()
        .unwrap_or(0)
}
