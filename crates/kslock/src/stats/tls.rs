//! The calling thread's statistics state: the outcome bits of the wait in progress, the hold
//! in flight, the sampling countdowns and the frame buffer. Const-initialised `thread_local!`
//! without a destructor: no allocation, usable until the thread ends.

use super::table::{self, Record, HANDOFF, MAX_FRAMES, SHARDS, SLEPT, SPUN, TIMED_OUT, YIELDED};
use super::{batch, stack, stamp};
use core::cell::Cell;
use core::sync::atomic::{AtomicUsize, Ordering::Relaxed};

struct State {
    /// [`super::Note`] bits since the wait in progress began.
    outcome: Cell<u8>,
    /// A stack walk is running on this thread: locks taken inside it take no stack.
    busy: Cell<bool>,
    /// The key of the sampled hold in flight (0: none) and when it began (a [`stamp::stamp`]).
    hold_key: Cell<usize>,
    hold_t0: Cell<u64>,
    /// Acquisitions until the next sampled hold, contended ones until the next stack.
    hold_left: Cell<u32>,
    stack_left: Cell<u32>,
    /// The last captured stack (innermost first).
    frames: [Cell<usize>; MAX_FRAMES],
    /// This thread's counter shard + 1 ([`table::SHARDS`]; 0: not numbered yet).
    shard: Cell<u8>,
    /// This thread's batch slot + 1 (module `batch`; 0: none claimed yet, `u32::MAX`: none
    /// left for it).
    slot: Cell<u32>,
}

/// Threads numbered so far (for their shards).
static THREADS: AtomicUsize = AtomicUsize::new(0);

/// The calling thread's counter shard, numbered at its first use.
#[inline(always)]
fn shard(s: &State) -> usize {
    match s.shard.get() {
        0 => {
            let n = THREADS.fetch_add(1, Relaxed) % SHARDS;
            s.shard.set(n as u8 + 1);
            n
        }
        v => v as usize - 1,
    }
}
const _: () = assert!(SHARDS < u8::MAX as usize);

/// Counts one acquisition of `key` by the calling thread: in its batch slot, claimed at its
/// first use, or (none left) in `key`'s record's shard, if it has a record.
#[inline(always)]
fn count_acquisition(s: &State, key: usize) {
    let slot = match s.slot.get() {
        0 => {
            let v = batch::claim().map_or(u32::MAX, |i| i as u32 + 1);
            s.slot.set(v);
            v
        }
        v => v,
    };
    if slot != u32::MAX {
        batch::count(slot as usize - 1, key, shard(s));
    } else if let Some(r) = table::find(key) {
        r.shards[shard(s)].acquisitions.fetch_add(1, Relaxed);
    }
}
const _: () = assert!(batch::MAX_THREADS < u32::MAX as usize);

/// The calling thread's counter shard (the lock records' and the event counters').
#[inline(always)]
pub(super) fn my_shard() -> usize {
    ME.with(shard)
}

std::thread_local! {
    static ME: State = const {
        State {
            outcome: Cell::new(0),
            busy: Cell::new(false),
            hold_key: Cell::new(0),
            hold_t0: Cell::new(0),
            hold_left: Cell::new(0),
            stack_left: Cell::new(0),
            frames: [const { Cell::new(0) }; MAX_FRAMES],
            shard: Cell::new(0),
            slot: Cell::new(0),
        }
    };
}

/// Hook body of [`super::note`].
#[inline(always)]
pub(super) fn note(bits: u8) {
    // Off, a wait has no record (`begin`), so its outcome is never read.
    if table::enabled() {
        ME.with(|s| s.outcome.set(s.outcome.get() | bits));
    }
}

/// Counts down `c`; `true` (and a restart at the sampling rate) when it runs out.
#[inline(always)]
fn take_sample(c: &Cell<u32>) -> bool {
    let left = c.get();
    if left > 1 {
        c.set(left - 1);
        return false;
    }
    c.set(table::sample_rate());
    true
}

/// Hook body of [`super::acquired`]: an uncontended acquisition of `key`, counted (module
/// `batch`) and, once the lock has a record, reported; a sampled hold starts when one is due.
/// Inline: one load and a branch (recording off); recording, two TLS cells and the slot's
/// entry when the lock is in the batch and no sample is due, else a call.
#[inline(always)]
pub(super) fn acquired(key: usize) {
    if table::enabled() {
        ME.with(|s| {
            let left = s.hold_left.get();
            let slot = s.slot.get().wrapping_sub(1) as usize;
            if left > 1 && slot < batch::MAX_THREADS && batch::bump(slot, key) {
                s.hold_left.set(left - 1);
            } else {
                acquired_on(s, key);
            }
        });
    }
}

/// [`acquired`] past its inline case (a sample due, no slot yet, `key` not in the slot), out
/// of line: the lock fast paths stay small.
#[inline(never)]
fn acquired_on(s: &State, key: usize) {
    count_acquisition(s, key);
    maybe_sample_hold(s, key);
}

/// Hook body of [`super::released_with_waiters`].
#[inline(always)]
pub(super) fn released_with_waiters(key: usize) {
    if !table::enabled() {
        return;
    }
    if let Some(r) = table::find(key) {
        ME.with(|s| {
            r.shards[shard(s)]
                .released_with_waiters
                .fetch_add(1, Relaxed)
        });
    }
}

/// An acquisition of `key`: starts a sampled hold when one is due and the lock has a record
/// (it replaces one still in flight, e.g. a hold another thread released on this one's
/// behalf).
#[inline(always)]
fn maybe_sample_hold(s: &State, key: usize) {
    if take_sample(&s.hold_left) && table::find(key).is_some() {
        s.hold_key.set(key);
        s.hold_t0.set(stamp::stamp());
    }
}

/// Hook body of [`super::released`]: ends the sampled hold if it is `key`'s.
#[inline(always)]
pub(super) fn released(key: usize) {
    ME.with(|s| {
        if s.hold_key.get() == key {
            hold_end(s, key);
        }
    });
}

#[cold]
#[inline(never)]
fn hold_end(s: &State, key: usize) {
    s.hold_key.set(0);
    let ns = stamp::since_ns(s.hold_t0.get());
    if let Some(r) = table::find(key) {
        r.add_hold(shard(s), ns);
    }
}

/// A contended acquisition in progress (hook type `super::Wait`).
pub(super) struct Wait {
    key: usize,
    t0: u64,
    rec: Option<&'static Record>,
    /// Frames captured for it (0: no stack sample).
    depth: u8,
}

/// Hook body of [`super::contended`]: the lock's record (created now if needed), a stack
/// sample when one is due or the lock has no first stack yet, then the clock. Inline: off,
/// one load and a branch, and [`end`] then none.
#[inline(always)]
pub(super) fn begin(key: usize) -> Wait {
    if table::enabled() {
        begin_on(key)
    } else {
        Wait::off(key)
    }
}

impl Wait {
    /// A wait that records nothing.
    #[inline(always)]
    fn off(key: usize) -> Wait {
        Wait {
            key,
            t0: 0,
            rec: None,
            depth: 0,
        }
    }
}

/// [`begin`] while recording, out of line.
#[inline(never)]
fn begin_on(key: usize) -> Wait {
    let off = Wait::off(key);
    let Some(rec) = table::find_or_insert(key) else {
        table::DROPPED_LOCKS.fetch_add(1, Relaxed);
        return off;
    };
    let depth = ME.with(|s| {
        s.outcome.set(0);
        let due = take_sample(&s.stack_left) || rec.first_stack.load(Relaxed) == 0;
        if !due || s.busy.get() {
            return 0;
        }
        s.busy.set(true);
        let d = stack::capture(&s.frames);
        s.busy.set(false);
        d as u8
    });
    Wait {
        key,
        t0: stamp::stamp(),
        rec: Some(rec),
        depth,
    }
}

/// Hook body of `super::Wait::acquired` / `done`: nothing for a wait without a record.
#[inline(always)]
pub(super) fn end(w: Wait, held: bool) {
    if let Some(rec) = w.rec {
        end_on(w, rec, held);
    }
}

/// [`end`] of a recorded wait, out of line.
#[inline(never)]
fn end_on(w: Wait, rec: &'static Record, held: bool) {
    let ns = stamp::since_ns(w.t0);
    let outcome = ME.with(|s| s.outcome.get());
    let outcome = if !held {
        TIMED_OUT
    } else if outcome & super::Note::Handoff as u8 != 0 {
        HANDOFF
    } else if outcome & super::Note::Slept as u8 != 0 {
        SLEPT
    } else if outcome & super::Note::Yielded as u8 != 0 {
        YIELDED
    } else {
        SPUN
    };
    ME.with(|s| {
        rec.add_wait(shard(s), ns, outcome);
        if held {
            count_acquisition(s, w.key);
        }
        if w.depth > 0 {
            stack::record(w.key, rec, &s.frames[..w.depth as usize], ns);
        }
        if held {
            maybe_sample_hold(s, w.key);
        }
    });
}
