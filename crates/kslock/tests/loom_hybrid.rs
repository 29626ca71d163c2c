//! loom models of the hybrid rw lock's protocols (`kslock::hybrid`). Run with
//! `RUSTFLAGS="--cfg kslock_loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p kslock --release --test loom_hybrid`.
//!
//! As in `loom_rwsem.rs`: the futex is a check-and-sleep under one bucket lock (a lost wakeup is
//! a loom deadlock), timed waits time out at once, polls last 3 steps, and the protected value
//! is a loom `UnsafeCell`, so any overlap of a writer with anybody is a reported data race.
//! The mode never changes by itself under loom (frozen clock); the models set it.
#![cfg(kslock_loom)]

use kslock::hybrid::RawHybridRwSem;
use loom::sync::Arc;

mod loom_common;
use loom_common::{against_a_write, spawn};
/// The harness with the hybrid lock, reads in the `EXCL` mode or not.
type G = loom_common::Guarded<RawHybridRwSem>;

fn fresh(excl: bool) -> Arc<G> {
    let g = G::new();
    g.l.set_exclusive_reads(excl);
    g
}

/// Shared readers against a writer that drains them and may sleep on `aux`: the last reader's
/// removal must wake it (DRAIN_SLEEP's store-buffering pair), phantom biases included.
#[test]
fn loom_hybrid_shared_readers_and_a_draining_writer() {
    loom::model(|| against_a_write(fresh(false), read, read, 1));
}

/// Writer, reader, writer: the reader blocked by a writer polls, then passes through the
/// turnstile (`m`) behind the other writer.
#[test]
fn loom_hybrid_writer_reader_writer() {
    loom::model(|| against_a_write(fresh(false), |g| g.write(), read, 2));
}

/// The mode flips while a reader and a writer run: a read may go either way (through `m` or
/// shared) and exclusion holds across the flip.
#[test]
fn loom_hybrid_mode_flip() {
    loom::model(|| against_a_write(fresh(false), read, |g| g.l.set_exclusive_reads(true), 1));
}

/// Reads through `m` beside a recursive (always shared) read and a writer.
#[test]
fn loom_hybrid_exclusive_reads() {
    loom::model(|| {
        against_a_write(
            fresh(true),
            read,
            |g| {
                g.l.read_recursive();
                g.peek();
                // SAFETY: held.
                unsafe { g.l.read_unlock() };
            },
            1,
        )
    });
}

/// A recursive read by the holder of a shared read joins while a writer drains that very
/// read (no deadlock), and the writer still gets the lock afterwards.
#[test]
fn loom_hybrid_recursive_read_during_drain() {
    loom::model(|| {
        let g = fresh(false);
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
/// once): it drops WANT and releases `m`; a later writer drains normally.
#[test]
fn loom_hybrid_timed_writer_gives_up() {
    loom::model(|| {
        let g = fresh(false);
        let a = spawn(&g, read);
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
        // Every other thread joined: no lock needed to look.
        let before = g.peek();
        g.write();
        g.done(before + 1);
    });
}

/// Downgrade beside a reader and a writer.
#[test]
fn loom_hybrid_downgrade() {
    loom::model(|| against_a_write(fresh(false), |g| g.write_downgrade_read(), read, 2));
}

/// An upgrade against a reader and a writer: the upgrader drains the shared reader like a
/// writer, and the writer waits for `m`.
#[test]
fn loom_hybrid_upgrade() {
    loom::model(|| {
        against_a_write(
            fresh(false),
            |g| {
                g.l.upgradable_read();
                g.peek();
                // SAFETY: the upgradable lock is held.
                unsafe { g.l.upgrade() };
                // SAFETY: write lock held.
                g.v.with_mut(|p| unsafe { *p += 1 });
                // SAFETY: held by this thread.
                unsafe { g.l.write_unlock() };
            },
            read,
            2,
        )
    });
}

/// A read behind waiters (shared at once only while nobody holds or waits for `m`, else
/// through `m`) against two writers.
#[test]
fn loom_hybrid_reads_behind_waiters() {
    loom::model(|| {
        against_a_write(
            fresh(false),
            |g| g.write(),
            |g| {
                g.l.read_behind_waiters();
                g.peek();
                // SAFETY: held.
                unsafe { g.l.read_unlock() };
            },
            2,
        )
    });
}

/// A reader thread's body.
fn read(g: &G) {
    g.read();
}
