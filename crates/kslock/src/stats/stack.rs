//! Call stacks: the walk (libgcc's `_Unwind_Backtrace`; module doc of [`super`], "Call
//! stacks") and the stack table, [`MAX_STACKS`] slots keyed by a hash of (lock, frames),
//! claimed by one CAS and never removed.

use super::table::{Record, MAX_FRAMES, MAX_STACKS};
use core::cell::Cell;
use core::ffi::{c_int, c_void};
use core::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering::*};

/// One call stack of one lock and the waits charged to it.
pub(super) struct Slot {
    /// Hash of (lock key, frames) | 1; 0: free. Claimed by CAS (Relaxed: `ready` publishes).
    pub(super) hash: AtomicU64,
    /// 1 once `lock`, `depth` and `frames` are written. Release/Acquire: the claimant's
    /// writes of those fields happen-before a reader that sees 1.
    pub(super) ready: AtomicU32,
    pub(super) depth: AtomicU32,
    pub(super) lock: AtomicUsize,
    pub(super) frames: [AtomicUsize; MAX_FRAMES],
    pub(super) count: AtomicU64,
    pub(super) wait_total: AtomicU64,
    pub(super) wait_max: AtomicU64,
}

impl Slot {
    const fn new() -> Self {
        Slot {
            hash: AtomicU64::new(0),
            ready: AtomicU32::new(0),
            depth: AtomicU32::new(0),
            lock: AtomicUsize::new(0),
            frames: [const { AtomicUsize::new(0) }; MAX_FRAMES],
            count: AtomicU64::new(0),
            wait_total: AtomicU64::new(0),
            wait_max: AtomicU64::new(0),
        }
    }
}

/// The stack table.
pub(super) static STACKS: [Slot; MAX_STACKS] = [const { Slot::new() }; MAX_STACKS];
/// Stack samples the full table had no slot for.
pub(super) static DROPPED_STACKS: AtomicU64 = AtomicU64::new(0);

/// `_Unwind_Reason_Code` values the walk uses.
const URC_NO_REASON: c_int = 0;
const URC_NORMAL_STOP: c_int = 4;

extern "C" {
    // libgcc's C ABI unwinder (linked by every Rust program on Linux, for panics).
    fn _Unwind_Backtrace(
        trace: extern "C" fn(ctx: *mut c_void, arg: *mut c_void) -> c_int,
        arg: *mut c_void,
    ) -> c_int;
    fn _Unwind_GetIP(ctx: *mut c_void) -> usize;
}

/// The walk's state, passed to the callback.
struct Walk<'a> {
    buf: &'a [Cell<usize>; MAX_FRAMES],
    n: usize,
    /// Frames still to skip (the walk's own).
    skip: usize,
}

extern "C" fn step(ctx: *mut c_void, arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the `Walk` that `capture` passed, alive for the whole walk and used
    // by this thread only.
    let w = unsafe { &mut *arg.cast::<Walk<'_>>() };
    // SAFETY: `ctx` is the unwinder's context for this frame.
    let ip = unsafe { _Unwind_GetIP(ctx) };
    if ip == 0 {
        return URC_NORMAL_STOP;
    }
    if w.skip > 0 {
        w.skip -= 1;
        return URC_NO_REASON;
    }
    w.buf[w.n].set(ip);
    w.n += 1;
    if w.n == MAX_FRAMES {
        URC_NORMAL_STOP
    } else {
        URC_NO_REASON
    }
}

/// Captures the calling thread's stack into `buf` (innermost first, without this function's
/// frame): the frames captured.
#[inline(never)]
pub(super) fn capture(buf: &[Cell<usize>; MAX_FRAMES]) -> usize {
    let mut w = Walk { buf, n: 0, skip: 1 };
    // SAFETY: `step` matches the callback type; `w` outlives the call.
    unsafe { _Unwind_Backtrace(step, (&mut w as *mut Walk<'_>).cast()) };
    w.n
}

/// Charges a wait of `ns` on `key` to the stack `frames`; the lock's first stack is set if
/// it has none.
pub(super) fn record(key: usize, rec: &Record, frames: &[Cell<usize>], ns: u64) {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ key as u64;
    for f in frames {
        h = (h ^ f.get() as u64).wrapping_mul(0x0000_0100_0000_01b3);
        h ^= h >> 29;
    }
    h |= 1;
    let home = (h as usize) % MAX_STACKS;
    for i in 0..super::table::MAX_PROBE {
        let idx = (home + i) % MAX_STACKS;
        let s = &STACKS[idx];
        let mut cur = s.hash.load(Relaxed);
        if cur == 0 {
            match s.hash.compare_exchange(0, h, Relaxed, Relaxed) {
                Ok(_) => {
                    s.lock.store(key, Relaxed);
                    for (d, f) in s.frames.iter().zip(frames) {
                        d.store(f.get(), Relaxed);
                    }
                    s.depth.store(frames.len() as u32, Relaxed);
                    // Release pairs with the Acquire of the snapshot's `ready` load.
                    s.ready.store(1, Release);
                    cur = h;
                }
                Err(x) => cur = x,
            }
        }
        if cur == h {
            s.count.fetch_add(1, Relaxed);
            s.wait_total.fetch_add(ns, Relaxed);
            super::table::grow_max(&s.wait_max, ns);
            let _ = rec
                .first_stack
                .compare_exchange(0, idx as u32 + 1, Relaxed, Relaxed);
            return;
        }
    }
    DROPPED_STACKS.fetch_add(1, Relaxed);
}
