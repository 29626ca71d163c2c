//! Linux implementation of the system layer.

use crate::sync::AtomicU32;

use super::{Deadline, TimedOut};
pub(crate) use crate::clock::{now_ns, ticks, ticks_per_us};

/// Sleeps while `*word == expected`, until woken, a signal, a spurious wakeup or `deadline`.
///
/// Returns `Err(TimedOut)` only when the deadline has passed; every other return (woken, value
/// already changed = `EAGAIN`, `EINTR`) is `Ok`, and the caller re-checks its condition. The
/// deadline is absolute, so a restart after `EINTR` never extends the wait.
pub(crate) fn futex_wait(
    word: &AtomicU32,
    expected: u32,
    deadline: Deadline,
) -> Result<(), TimedOut> {
    let ts;
    let ts_ptr = match deadline {
        None => core::ptr::null(),
        Some(d) => {
            if now_ns() >= d {
                return Err(TimedOut);
            }
            ts = libc::timespec {
                tv_sec: (d / 1_000_000_000) as libc::time_t,
                tv_nsec: (d % 1_000_000_000) as _,
            };
            &ts as *const libc::timespec
        }
    };
    crate::stats::note(crate::stats::Note::Slept);
    // SAFETY: `word` is a live, aligned u32 for the duration of the call; FUTEX_WAIT_BITSET
    // with an all-ones mask and no FUTEX_CLOCK_REALTIME takes an absolute CLOCK_MONOTONIC
    // timespec (or null for no timeout), which `ts_ptr` is.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT_BITSET | libc::FUTEX_PRIVATE_FLAG,
            expected,
            ts_ptr,
            core::ptr::null::<u32>(),
            !0u32,
        )
    };
    if r < 0 && errno() == libc::ETIMEDOUT {
        return Err(TimedOut);
    }
    // EAGAIN (value changed), EINTR (signal), 0 (woken or spurious): the caller re-checks.
    Ok(())
}

/// Wakes at most `n` threads sleeping on `word`. Returns how many were woken.
///
/// `word` may be memory the waiter has already left behind (a wake after the grant was
/// published); waking an address nobody sleeps on is harmless, and a thread that now sleeps
/// there for another reason sees a spurious wakeup, which every wait loop tolerates.
pub(crate) fn futex_wake(word: &AtomicU32, n: i32) -> usize {
    // SAFETY: FUTEX_WAKE only uses the address as a key; it never dereferences it for writing.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            n,
        )
    };
    r.max(0) as usize
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Measures one `FUTEX_WAKE` on a word nobody waits on (the floor cost of any kernel entry
/// on the wake path), in nanoseconds: the unit the spin-budget cap is calibrated in.
pub(crate) fn measure_syscall_ns() -> u64 {
    let w = AtomicU32::new(0);
    let mut best = u64::MAX;
    for _ in 0..8 {
        let t0 = now_ns();
        for _ in 0..16 {
            futex_wake(&w, 1);
        }
        best = best.min((now_ns() - t0) / 16);
    }
    best
}

/// The CPU the calling thread runs on: glibc's registered rseq area (< 1 ns) when available,
/// `sched_getcpu` otherwise. A hint: the thread may migrate right after.
#[inline]
pub(crate) fn current_cpu() -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        let off = rseq_offset();
        if off != NO_RSEQ {
            let tp: usize;
            // SAFETY: on x86_64 Linux %fs:0 holds the thread pointer (the TCB's self pointer).
            unsafe {
                core::arch::asm!("mov {}, fs:0", out(reg) tp, options(nostack, readonly, preserves_flags))
            };
            // SAFETY: glibc registered `struct rseq` at tp + __rseq_offset for every thread
            // (checked by `rseq_offset`); `cpu_id` is the u32 at offset 4, updated by the kernel.
            return unsafe { core::ptr::read_volatile((tp as isize + off + 4) as *const u32) };
        }
    }
    // SAFETY: sched_getcpu has no preconditions.
    let c = unsafe { libc::sched_getcpu() };
    c.max(0) as u32
}

#[cfg(target_arch = "x86_64")]
const NO_RSEQ: isize = isize::MIN;

/// glibc's `__rseq_offset`, looked up by name once (it exists from glibc 2.35; `__rseq_size`
/// 0 means rseq is not registered, e.g. under `GLIBC_TUNABLES=glibc.pthread.rseq=0`).
#[cfg(target_arch = "x86_64")]
fn rseq_offset() -> isize {
    use core::sync::atomic::{AtomicIsize, Ordering as O};
    const UNKNOWN: isize = isize::MIN + 1;
    static OFF: AtomicIsize = AtomicIsize::new(UNKNOWN);
    let v = OFF.load(O::Relaxed);
    if v != UNKNOWN {
        return v;
    }
    // SAFETY: dlsym with RTLD_DEFAULT and NUL-terminated names; results are checked for null
    // and read with their glibc types (ptrdiff_t, unsigned int).
    let off = unsafe {
        let o = libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_offset".as_ptr()) as *const isize;
        let s = libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_size".as_ptr()) as *const u32;
        if o.is_null() || s.is_null() || *s < 8 {
            NO_RSEQ
        } else {
            *o
        }
    };
    OFF.store(off, O::Relaxed);
    off
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::Ordering;

    #[test]
    fn wait_returns_at_once_on_value_mismatch() {
        let w = AtomicU32::new(1);
        assert_eq!(futex_wait(&w, 0, None), Ok(()));
    }

    #[test]
    fn wait_times_out_at_the_absolute_deadline() {
        let w = AtomicU32::new(0);
        let t0 = now_ns();
        assert_eq!(futex_wait(&w, 0, Some(t0 + 2_000_000)), Err(TimedOut));
        assert!(now_ns() >= t0 + 2_000_000);
        assert_eq!(
            futex_wait(&w, 0, Some(t0)),
            Err(TimedOut),
            "a past deadline fails at once"
        );
    }

    #[test]
    fn wake_reaches_a_sleeper() {
        let w = std::sync::Arc::new(AtomicU32::new(0));
        let w2 = w.clone();
        let h = std::thread::spawn(move || {
            while w2.load(Ordering::Acquire) == 0 {
                futex_wait(&w2, 0, None).unwrap();
            }
        });
        std::thread::sleep(std::time::Duration::from_millis(5));
        w.store(1, Ordering::Release);
        futex_wake(&w, 1);
        h.join().unwrap();
    }

    #[test]
    fn cpu_id_is_an_online_cpu() {
        // SAFETY: sysconf has no preconditions.
        let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) } as u32;
        assert!(current_cpu() < n.max(1));
        // rseq and getcpu agree unless the thread migrates between the two reads: require
        // agreement in at least one of 100 tries (a wrong rseq offset never agrees reliably).
        let agree = (0..100).any(|_| {
            // SAFETY: sched_getcpu has no preconditions.
            current_cpu() == unsafe { libc::sched_getcpu() } as u32
        });
        assert!(agree, "rseq cpu_id never matched sched_getcpu");
    }

    #[test]
    fn tick_rate_is_plausible() {
        let t = ticks_per_us();
        assert!((1..100_000).contains(&t), "{t} ticks/us");
    }
}
