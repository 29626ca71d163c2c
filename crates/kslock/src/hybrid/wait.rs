//! The waits: a shared reader blocked by a writer, the writer draining the shared readers, and
//! the bounded polls both use first. State tables and rules: [`super`].

use super::*;
use crate::chaos::{self, Site};
use crate::sync::{fence, spin_hint};
use crate::sys;

/// How long a poll of the count may last, ns: the calibrated spin cap, the cost of the sleep
/// it replaces ([`crate::spin_cap_ns`]).
fn poll_budget_ns() -> u64 {
    u64::from(crate::spin::spin_cap_ns())
}

impl RawHybridRwSem {
    /// Polls `count` until `done` says so, with R6's backoff (1, 2, 4 … up to the calibrated
    /// poll gap in pauses, [`crate::spin`]) and a time bound (the spin cap; 3 polls under loom).
    /// Returns the last value seen and whether `done` held.
    fn poll(&self, done: impl Fn(State) -> bool) -> (State, bool) {
        let gap = crate::spin::poll_gap_pauses().max(1);
        let t0 = sys::now_ns();
        let mut pauses = 1u32;
        for i in 0u32.. {
            let c = self.count.load(Relaxed);
            if done(c) {
                return (c, true);
            }
            if cfg!(kslock_loom) && i >= 3 {
                return (c, false);
            }
            if i % 8 == 7 && sys::now_ns().saturating_sub(t0) >= poll_budget_ns() {
                return (c, false);
            }
            for _ in 0..pauses {
                spin_hint();
            }
            pauses = (pauses * 2).min(gap);
        }
        unreachable!()
    }

    /// Takes back a phantom bias added by a reader that may not join (`old`: the count its
    /// `fetch_add` returned); the last one out while a writer drains wakes it.
    #[inline]
    pub(super) fn drop_bias(&self, old: State) {
        self.remove_bias();
        if old & OVERFLOW != 0 {
            panic!("too many readers of a kslock hybrid rwsem (2^23)");
        }
    }

    /// Removes one reader bias (a read unlock or a phantom's); the removal that leaves no
    /// reader while `WANT` is set wakes the draining writer. Returns the count before.
    #[inline]
    pub(super) fn remove_bias(&self) -> State {
        // Release pairs with the Acquire of the writer that sees the count drained.
        let prev = self.count.fetch_sub(READER, Release);
        if prev & WANT != 0 && readers(prev) == 1 {
            self.wake_drainer();
        }
        prev
    }

    /// The reader removal that left no reader while `WANT` is set: wake the writer if it
    /// sleeps.
    #[cold]
    pub(super) fn wake_drainer(&self) {
        chaos::point(Site::RwReleased);
        // The fence pairs with the writer's after its `fetch_or` (module doc, "Memory
        // orderings"; loom models SeqCst RMWs as AcqRel, SeqCst fences exactly).
        fence(SeqCst);
        if self.aux.load(Relaxed) & DRAIN_SLEEP != 0
            && self.aux.fetch_and(!DRAIN_SLEEP, Relaxed) & DRAIN_SLEEP != 0
        {
            sys::futex_wake(&self.aux, 1);
        }
    }

    /// A shared reader whose `fetch_add` returned `old` with `WANT`/`LOCKED` (or only `LOCKED`
    /// for a recursive one): take the bias back, poll the count while the writer holds `m`,
    /// then pass through `m` behind it (the turnstile). `false` only past `deadline`.
    #[cold]
    #[inline(never)]
    pub(super) fn read_blocked(&self, old: State, deadline: Option<u64>, recursive: bool) -> bool {
        let blocks = if recursive { LOCKED } else { WANT | LOCKED };
        self.drop_bias(old);
        chaos::point(Site::ReadContended);
        if self.poll(|c| c & blocks == 0).1 {
            let old = self.count.fetch_add(READER + OP, Acquire);
            if old & (blocks | OVERFLOW) == 0 {
                self.count_shared_op(old);
                return true;
            }
            self.drop_bias(old);
        }
        // A recursive reader gets here only while it holds no read lock of this lock (LOCKED
        // cannot be set while it does), so it cannot wait for itself.
        self.turnstile(deadline)
    }

    /// Queue on `m` behind whoever holds or waits for it, add a shared reader bias while
    /// holding it (whoever holds `m` sees WANT and LOCKED clear: module doc), release it.
    /// `false` only past `deadline`.
    pub(super) fn turnstile(&self, deadline: Option<u64>) -> bool {
        let got = match deadline {
            None => {
                self.m.lock();
                true
            }
            Some(d) => self.m.lock_until(d),
        };
        if !got {
            return false;
        }
        let old = self.count.fetch_add(READER + OP, Acquire);
        // SAFETY: locked above by this thread.
        unsafe { self.m.unlock() };
        if old & OVERFLOW != 0 {
            self.drop_bias(old); // panics
        }
        self.count_shared_op(old);
        true
    }

    /// A writer gives up before it took `LOCKED`: drop `WANT` (readers blocked by it poll or
    /// queue on `m`) and release `m`.
    pub(super) fn abandon_write(&self) {
        self.count.fetch_sub(WANT, Release);
        // SAFETY: the writer holds `m` (its caller's contract).
        unsafe { self.m.unlock() };
    }

    /// The drain's poll alone: with `m` held and `WANT` raised, take `LOCKED` if the shared
    /// readers leave within the poll budget. Never sleeps.
    pub(super) fn drain_polling(&self) -> bool {
        loop {
            let (c, gone) = self.poll(|c| readers(c) == 0);
            if !gone {
                return false;
            }
            if self
                .count
                .compare_exchange(c, c | LOCKED, Acquire, Relaxed)
                .is_ok()
            {
                return true;
            }
        }
    }

    /// The writer (holding `m`, `WANT` raised) waits for the shared readers to leave, then
    /// takes `LOCKED`. Past `deadline` it drops `WANT` and returns `false`, releasing `m`, or
    /// for an `upgrading` holder restoring `UPG` and keeping `m`.
    #[cold]
    #[inline(never)]
    pub(super) fn drain(&self, deadline: Option<u64>, upgrading: bool) -> bool {
        chaos::point(Site::WriteContended);
        loop {
            // Only this thread changes WANT/LOCKED now; readers only add and remove biases.
            if self.drain_polling() {
                return true;
            }
            // Sleep until the last reader leaves (store-buffering pair with `wake_drainer`).
            let a = self.aux.fetch_or(DRAIN_SLEEP, Relaxed) | DRAIN_SLEEP;
            fence(SeqCst);
            if readers(self.count.load(Relaxed)) == 0 {
                self.aux.fetch_and(!DRAIN_SLEEP, Relaxed);
                continue;
            }
            // The parked flag tells `m`'s spinners (readers in the turnstile) to stop.
            let r = crate::thread::current().futex_wait(&self.aux, a, deadline);
            if r.is_err() && readers(self.count.load(Relaxed)) != 0 {
                self.aux.fetch_and(!DRAIN_SLEEP, Relaxed);
                // Past the deadline: give up.
                if upgrading {
                    self.count.fetch_add(UPG.wrapping_sub(WANT), Release);
                } else {
                    self.abandon_write();
                }
                return false;
            }
        }
    }
}
