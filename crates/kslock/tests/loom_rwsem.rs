//! loom models of the rw-semaphore protocols. Run with
//! `RUSTFLAGS="--cfg kslock_loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p kslock --release --test loom_rwsem`.
//!
//! Under loom the futex is a check-and-sleep under one bucket lock, so a lost wakeup is a loom
//! deadlock; timed waits time out at once (every timed wait below is a cancellation); spins
//! last 3 steps; the clock is frozen at 0. Exclusion is checked by loom itself: the protected
//! value is a loom `UnsafeCell`, read under read locks and written under write locks, so any
//! overlap of a writer with anybody is a reported data race.
#![cfg(kslock_loom)]

use kslock::policy::*;
use kslock::RawRwSemWith;
use std::time::Duration;

/// Default policy, but the head waiter may raise HANDOFF at once (loom's clock is frozen, so
/// the default 4 ms never passes).
struct HandoffNow;
impl RwSemPolicy for HandoffNow {
    const OSQ_LAYOUT: OsqLayout = OsqLayout::SplitIdLine;
    const READER_SPIN: ReaderSpin = ReaderSpin::Off;
    const WAKE: WakePolicy = WakePolicy::Deferred;
    const READER_OWNED_SPIN: ReaderOwnedSpin = ReaderOwnedSpin::Bounded;
    const HANDOFF_NS: u64 = 0;
}

mod loom_common;
use loom_common::spawn;
/// The harness with the rwsem under policy `P`.
type G<P> = loom_common::Guarded<RawRwSemWith<P>>;

/// Writer, reader, writer.
fn rw<P: RwSemPolicy>() {
    loom::model(|| {
        let g = G::<P>::new();
        let a = spawn(&g, |g| g.write());
        let b = spawn(&g, |g| {
            g.read();
        });
        g.write();
        a.join().unwrap();
        b.join().unwrap();
        g.done(2);
    });
}

/// Reader, reader, writer (two unlockers may race to wake the writer: S0's window).
fn rrw<P: RwSemPolicy>() {
    loom::model(|| {
        let g = G::<P>::new();
        let a = spawn(&g, |g| {
            g.read();
        });
        let b = spawn(&g, |g| {
            g.read();
        });
        g.write();
        a.join().unwrap();
        b.join().unwrap();
        g.done(1);
    });
}

/// The head writer's window and the turn (module doc of `kslock::rwsem`, "A woken head
/// sleeps out its window"): one writer locks three times while another queues, so the head
/// can lose its woken retry to a re-lock, sleep on its window with `WOKEN` kept (no unlock
/// wakes it; its timer does), and the releaser re-take the lock through its turn.
#[test]
fn loom_rwsem_writer_window() {
    loom::model(|| {
        let g = G::<DefaultPolicy>::new();
        let a = spawn(&g, |g| {
            g.write();
            g.write();
            g.write();
        });
        g.write();
        a.join().unwrap();
        g.done(4);
    });
}

#[test]
fn loom_rwsem_writer_reader_writer() {
    rw::<DefaultPolicy>();
}

#[test]
fn loom_rwsem_downgrade() {
    loom::model(|| {
        loom_common::against_a_write(
            G::<DefaultPolicy>::new(),
            |g| g.write_downgrade_read(),
            |g| {
                g.read();
            },
            2,
        )
    });
}

#[test]
fn loom_rwsem_reads_behind_waiters() {
    // A writer, a plain reader and a read behind waiters, which queues with its bias counted
    // whenever WAITERS is up (the queueing RMW removes it): no lost wakeup, no overlap.
    loom::model(|| {
        let g = G::<DefaultPolicy>::new();
        let a = spawn(&g, |g| g.write());
        let b = spawn(&g, |g| {
            g.read();
        });
        g.l.read_behind_waiters();
        g.peek();
        // SAFETY: held.
        unsafe { g.l.read_unlock() };
        a.join().unwrap();
        b.join().unwrap();
        g.done(1);
    });
}

#[test]
fn loom_rwsem_handoff() {
    // Two writers and a reader with an immediate handoff timeout: HANDOFF is raised whenever
    // a queued writer finds the lock held, and a reader head gets it when a writer steals.
    loom::model(|| {
        let g = G::<HandoffNow>::new();
        let a = spawn(&g, |g| g.write());
        let b = spawn(&g, |g| g.write());
        g.read();
        a.join().unwrap();
        b.join().unwrap();
        g.done(2);
    });
}

#[test]
fn loom_rwsem_cancelled_timed_reader() {
    // A timed reader queued behind a writer times out (at once, under loom) while another
    // writer waits: its cancellation must not swallow the wakeup.
    loom::model(|| {
        let g = G::<DefaultPolicy>::new();
        let a = spawn(&g, |g| {
            if g.l.try_read_for(Duration::from_secs(1)) {
                g.peek();
                // SAFETY: held.
                unsafe { g.l.read_unlock() };
            }
        });
        let b = spawn(&g, |g| g.write());
        g.write();
        a.join().unwrap();
        b.join().unwrap();
        g.done(2);
    });
}

#[test]
fn loom_rwsem_cancelled_timed_writer() {
    // A timed writer (possibly the head, possibly holding HANDOFF) gives up while a reader
    // waits behind it.
    loom::model(|| {
        let g = G::<HandoffNow>::new();
        let a = spawn(&g, |g| {
            if g.l.try_write_for(Duration::from_secs(1)) {
                // SAFETY: write lock held.
                g.v.with_mut(|p| unsafe { *p += 1 });
                // SAFETY: held.
                unsafe { g.l.write_unlock() };
            }
        });
        let b = spawn(&g, |g| {
            g.read();
        });
        g.l.write();
        // SAFETY: write lock held.
        g.v.with_mut(|p| unsafe { *p += 10 });
        // SAFETY: held.
        unsafe { g.l.write_unlock() };
        a.join().unwrap();
        b.join().unwrap();
        // SAFETY: joined.
        let v = g.v.with(|p| unsafe { *p });
        assert!(v == 10 || v == 11);
        assert!(!g.l.is_locked() && !g.l.has_waiters(), "{:?}", g.l);
    });
}

#[test]
fn loom_rwsem_wake_flag() {
    rrw::<WakeFlag>();
}

#[test]
fn loom_rwsem_wake_flag_writer_then_reader() {
    // A writer that unlocks and re-enters as a reader: one unlocker's wakeup may be in
    // progress while the other unlocks.
    loom::model(|| {
        let g = G::<WakeFlag>::new();
        let a = spawn(&g, |g| {
            g.write();
            g.read();
        });
        let b = spawn(&g, |g| {
            g.read();
        });
        g.write();
        a.join().unwrap();
        b.join().unwrap();
        g.done(2);
    });
}

#[test]
fn loom_rwsem_trylock_if_spinner() {
    rw::<TrylockIfSpinner>();
}

/// Writer and two readers (S4: readers spin on the writer owner). At most two OSQ spinners at
/// once for `Limited`, keeping the model within loom's branch bound.
fn wrr<P: RwSemPolicy>() {
    loom::model(|| {
        let g = G::<P>::new();
        let a = spawn(&g, |g| g.write());
        let b = spawn(&g, |g| {
            g.read();
        });
        g.read();
        a.join().unwrap();
        b.join().unwrap();
        g.done(1);
    });
}

#[test]
fn loom_rwsem_reader_spin_limited() {
    wrr::<ReaderSpinLimited>();
}

#[test]
fn loom_rwsem_reader_spin_on() {
    // Two threads: with three, every thread may sit in the OSQ at once, and loom's relaxed
    // loads inside the OSQ's unqueue loops make some paths exceed its branch bound.
    loom::model(|| {
        let g = G::<ReaderSpinOn>::new();
        let a = spawn(&g, |g| g.write());
        g.read();
        a.join().unwrap();
        g.done(1);
    });
}

impl<P: RwSemPolicy> G<P> {
    /// Upgradable read, then upgrade and write: the value read before the upgrade must still
    /// be there after it (no writer in between).
    fn upgrade_write(&self) {
        self.l.upgradable_read();
        let before = self.peek();
        // SAFETY: the upgradable lock is held.
        unsafe { self.l.upgrade() };
        // SAFETY: write lock held.
        self.v.with_mut(|p| unsafe {
            assert_eq!(*p, before, "a writer came in during the upgrade");
            *p += 1
        });
        // SAFETY: held by this thread.
        unsafe { self.l.write_unlock() };
    }
}

#[test]
fn loom_rwsem_upgrade_races_queued_writer() {
    // An upgrader against a writer (which may queue behind the upgradable holder and raise
    // HANDOFF at once) and a reader (which may queue behind UPGRADING and must be woken).
    loom::model(|| {
        let g = G::<HandoffNow>::new();
        let a = spawn(&g, |g| g.upgrade_write());
        let b = spawn(&g, |g| g.write());
        g.read();
        a.join().unwrap();
        b.join().unwrap();
        g.done(2);
    });
}

#[test]
fn loom_rwsem_upgradable_holders_exclude_each_other() {
    // Two upgraders and a reader: the second upgrader waits on `aux` without a read lock and
    // is woken by the first one's release (a lost wakeup is a loom deadlock).
    loom::model(|| {
        let g = G::<DefaultPolicy>::new();
        let a = spawn(&g, |g| g.upgrade_write());
        let b = spawn(&g, |g| {
            g.l.upgradable_read();
            g.peek();
            // SAFETY: held.
            unsafe { g.l.upgradable_unlock() };
        });
        g.upgrade_write();
        a.join().unwrap();
        b.join().unwrap();
        g.done(2);
    });
}

#[test]
fn loom_rwsem_timed_upgrade_cancels() {
    // A timed upgrade gives up (at once, under loom) while another reader holds the lock: it
    // must stop keeping readers out, wake the readers that queued behind UPGRADING, and leave
    // its upgradable lock intact. A writer checks that the lock ends up free.
    loom::model(|| {
        let g = G::<DefaultPolicy>::new();
        let a = spawn(&g, |g| {
            g.l.upgradable_read();
            // SAFETY: held.
            if unsafe { g.l.try_upgrade_for(Duration::from_secs(1)) } {
                // SAFETY: write lock held.
                g.v.with_mut(|p| unsafe { *p += 1 });
                // SAFETY: held.
                unsafe { g.l.write_unlock() };
            } else {
                g.peek();
                // SAFETY: the upgradable lock is still held.
                unsafe { g.l.upgradable_unlock() };
            }
        });
        let b = spawn(&g, |g| {
            g.read();
        });
        g.l.write();
        // SAFETY: write lock held.
        g.v.with_mut(|p| unsafe { *p += 10 });
        // SAFETY: held.
        unsafe { g.l.write_unlock() };
        a.join().unwrap();
        b.join().unwrap();
        // SAFETY: joined.
        let v = g.v.with(|p| unsafe { *p });
        assert!(v == 10 || v == 11);
        assert!(!g.l.is_locked() && !g.l.has_waiters(), "{:?}", g.l);
    });
}

#[test]
fn loom_rwsem_two_upgraders() {
    // Two upgraders: the smallest model of the lost wakeup a single shared sleeper flag on
    // `aux` had (a bit-waiter re-raised the flag the upgrader's waker had just cleared, and the
    // upgrader's futex wait found the word unchanged).
    loom::model(|| {
        let g = G::<DefaultPolicy>::new();
        let a = spawn(&g, |g| g.upgrade_write());
        g.upgrade_write();
        a.join().unwrap();
        g.done(2);
    });
}

#[test]
fn loom_rwsem_fair_unlock() {
    // A writer's and a reader's fair unlocks reserve the lock for the head waiter (HANDOFF
    // under the wait_lock) while another writer and a reader may be queued.
    loom::model(|| {
        let g = G::<DefaultPolicy>::new();
        let a = spawn(&g, |g| g.write());
        let b = spawn(&g, |g| {
            g.l.read();
            g.peek();
            // SAFETY: held.
            unsafe { g.l.read_unlock_fair() };
        });
        g.l.write();
        // SAFETY: write lock held.
        g.v.with_mut(|p| unsafe { *p += 1 });
        // SAFETY: held.
        unsafe { g.l.write_unlock_fair() };
        a.join().unwrap();
        b.join().unwrap();
        g.done(2);
    });
}
