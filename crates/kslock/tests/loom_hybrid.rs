//! loom models of the hybrid rw lock's protocols (`kslock::hybrid`). Run with
//! `RUSTFLAGS="--cfg kslock_loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p kslock --release --test loom_hybrid`.
//!
//! As in `loom_rwsem.rs`: the futex is a check-and-sleep under one bucket lock (a lost wakeup is
//! a loom deadlock), timed waits time out at once, polls last 3 steps, and the protected value
//! is a loom `UnsafeCell`, so any overlap of a writer with anybody is a reported data race.
//! The mode never changes by itself under loom (frozen clock); the models set it.
#![cfg(kslock_loom)]

use kslock::hybrid::RawHybridRwSem;
use loom::cell::UnsafeCell;
use loom::sync::Arc;

struct G {
    l: RawHybridRwSem,
    v: UnsafeCell<usize>,
}
// SAFETY: `v` is only accessed under `l` (what the models check).
unsafe impl Sync for G {}
// SAFETY: as above.
unsafe impl Send for G {}

impl G {
    fn new(excl: bool) -> Arc<Self> {
        let g = Arc::new(G {
            l: RawHybridRwSem::new(),
            v: UnsafeCell::new(0),
        });
        g.l.set_exclusive_reads(excl);
        g
    }
    fn write(&self) {
        self.l.write();
        // SAFETY: write lock held.
        self.v.with_mut(|p| unsafe { *p += 1 });
        // SAFETY: held by this thread.
        unsafe { self.l.write_unlock() };
    }
    fn peek(&self) -> usize {
        // SAFETY: a read lock is held by the caller.
        self.v.with(|p| unsafe { *p })
    }
    fn read(&self) -> usize {
        self.l.read();
        let v = self.peek();
        // SAFETY: held.
        unsafe { self.l.read_unlock() };
        v
    }
    fn done(&self, writes: usize) {
        // SAFETY: every thread joined.
        assert_eq!(self.v.with(|p| unsafe { *p }), writes);
        assert!(!self.l.is_locked(), "{:?}", self.l);
    }
}

fn spawn(g: &Arc<G>, f: fn(&G)) -> loom::thread::JoinHandle<()> {
    let g = g.clone();
    loom::thread::spawn(move || f(&g))
}

/// Shared readers against a writer that drains them and may sleep on `aux`: the last reader's
/// removal must wake it (DRAIN_SLEEP's store-buffering pair), phantom biases included.
#[test]
fn loom_hybrid_shared_readers_and_a_draining_writer() {
    loom::model(|| {
        let g = G::new(false);
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

/// Writer, reader, writer: the reader blocked by a writer polls, then passes through the
/// turnstile (`m`) behind the other writer.
#[test]
fn loom_hybrid_writer_reader_writer() {
    loom::model(|| {
        let g = G::new(false);
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

/// The mode flips while a reader and a writer run: a read may go either way (through `m` or
/// shared) and exclusion holds across the flip.
#[test]
fn loom_hybrid_mode_flip() {
    loom::model(|| {
        let g = G::new(false);
        let a = spawn(&g, |g| {
            g.read();
        });
        let b = spawn(&g, |g| g.l.set_exclusive_reads(true));
        g.write();
        a.join().unwrap();
        b.join().unwrap();
        g.done(1);
    });
}

/// Reads through `m` beside a shared read and a writer.
#[test]
fn loom_hybrid_exclusive_reads() {
    loom::model(|| {
        let g = G::new(true);
        let a = spawn(&g, |g| {
            g.read();
        });
        let b = spawn(&g, |g| {
            // A recursive read is always shared.
            g.l.read_recursive();
            g.peek();
            // SAFETY: held.
            unsafe { g.l.read_unlock() };
        });
        g.write();
        a.join().unwrap();
        b.join().unwrap();
        g.done(1);
    });
}

/// A recursive read by the holder of a shared read joins while a writer drains that very
/// read (no deadlock), and the writer still gets the lock afterwards.
#[test]
fn loom_hybrid_recursive_read_during_drain() {
    loom::model(|| {
        let g = G::new(false);
        let a = spawn(&g, |g| {
            g.l.read();
            g.l.read_recursive();
            g.peek();
            // SAFETY: both held.
            unsafe {
                g.l.read_unlock();
                g.l.read_unlock();
            }
        });
        g.write();
        a.join().unwrap();
        g.done(1);
    });
}

/// A timed writer gives up while a reader holds the lock (loom's timed waits expire at
/// once): it drops WANT and releases `m`; a reader blocked by its WANT still gets in, and a
/// later writer drains normally.
#[test]
fn loom_hybrid_timed_writer_gives_up() {
    loom::model(|| {
        let g = G::new(false);
        let a = spawn(&g, |g| {
            g.read();
        });
        let b = spawn(&g, |g| {
            if g.l.try_write_for(std::time::Duration::from_millis(1)) {
                // SAFETY: write lock held.
                g.v.with_mut(|p| unsafe { *p += 1 });
                // SAFETY: held by this thread.
                unsafe { g.l.write_unlock() };
            }
        });
        a.join().unwrap();
        b.join().unwrap();
        let before = g.peek_unlocked();
        g.write();
        g.done(before + 1);
    });
}

/// Downgrade beside a reader and a writer.
#[test]
fn loom_hybrid_downgrade() {
    loom::model(|| {
        let g = G::new(false);
        let a = spawn(&g, |g| {
            g.l.write();
            // SAFETY: write lock held.
            g.v.with_mut(|p| unsafe { *p += 1 });
            // SAFETY: held by this thread.
            unsafe { g.l.downgrade() };
            assert!(g.peek() >= 1);
            // SAFETY: the downgraded read lock is held.
            unsafe { g.l.read_unlock() };
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

impl G {
    /// The value with every thread joined.
    fn peek_unlocked(&self) -> usize {
        // SAFETY: every other thread joined.
        self.v.with(|p| unsafe { *p })
    }
}

/// An upgrade against a reader and a writer: the upgrader drains the shared reader like a
/// writer, and the writer waits for `m`.
#[test]
fn loom_hybrid_upgrade() {
    loom::model(|| {
        let g = G::new(false);
        let a = spawn(&g, |g| {
            g.l.upgradable_read();
            g.peek();
            // SAFETY: the upgradable lock is held.
            unsafe { g.l.upgrade() };
            // SAFETY: write lock held.
            g.v.with_mut(|p| unsafe { *p += 1 });
            // SAFETY: held by this thread.
            unsafe { g.l.write_unlock() };
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
