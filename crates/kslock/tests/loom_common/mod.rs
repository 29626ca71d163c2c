//! The harness of the rw-lock loom models (`loom_rwsem.rs`, `loom_hybrid.rs`): a lock and the
//! value it protects, a loom `UnsafeCell`, so that any overlap of a writer with anybody is a
//! reported data race.
#![allow(dead_code)]

use kslock::hybrid::RawHybridRwSem;
use kslock::policy::RwSemPolicy;
use kslock::RawRwSemWith;
use loom::cell::UnsafeCell;
use loom::sync::Arc;

/// The operations the harness needs from a kslock rw lock.
pub trait Rw: core::fmt::Debug + Send + Sync + 'static {
    fn fresh() -> Self;
    fn read(&self);
    /// # Safety
    /// A read lock is held by the caller.
    unsafe fn read_unlock(&self);
    fn write(&self);
    /// # Safety
    /// The write lock is held by the caller.
    unsafe fn write_unlock(&self);
    /// # Safety
    /// The write lock is held by the caller.
    unsafe fn downgrade(&self);
    /// Free, and nobody waits.
    fn idle(&self) -> bool;
}

impl<P: RwSemPolicy> Rw for RawRwSemWith<P> {
    fn fresh() -> Self {
        RawRwSemWith::new()
    }
    fn read(&self) {
        RawRwSemWith::read(self)
    }
    unsafe fn read_unlock(&self) {
        // SAFETY: forwarded.
        unsafe { RawRwSemWith::read_unlock(self) }
    }
    fn write(&self) {
        RawRwSemWith::write(self)
    }
    unsafe fn write_unlock(&self) {
        // SAFETY: forwarded.
        unsafe { RawRwSemWith::write_unlock(self) }
    }
    unsafe fn downgrade(&self) {
        // SAFETY: forwarded.
        unsafe { RawRwSemWith::downgrade(self) }
    }
    fn idle(&self) -> bool {
        !self.is_locked() && !self.has_waiters()
    }
}

impl Rw for RawHybridRwSem {
    fn fresh() -> Self {
        RawHybridRwSem::new()
    }
    fn read(&self) {
        RawHybridRwSem::read(self)
    }
    unsafe fn read_unlock(&self) {
        // SAFETY: forwarded.
        unsafe { RawHybridRwSem::read_unlock(self) }
    }
    fn write(&self) {
        RawHybridRwSem::write(self)
    }
    unsafe fn write_unlock(&self) {
        // SAFETY: forwarded.
        unsafe { RawHybridRwSem::write_unlock(self) }
    }
    unsafe fn downgrade(&self) {
        // SAFETY: forwarded.
        unsafe { RawHybridRwSem::downgrade(self) }
    }
    fn idle(&self) -> bool {
        !self.is_locked() && !self.has_waiters()
    }
}

/// A lock `l` and the value `v` it protects.
pub struct Guarded<L> {
    pub l: L,
    pub v: UnsafeCell<usize>,
}
// SAFETY: `v` is only accessed under `l` (what the models check).
unsafe impl<L: Rw> Sync for Guarded<L> {}
// SAFETY: as above.
unsafe impl<L: Rw> Send for Guarded<L> {}

impl<L: Rw> Guarded<L> {
    pub fn new() -> Arc<Self> {
        Arc::new(Guarded {
            l: L::fresh(),
            v: UnsafeCell::new(0),
        })
    }
    /// Write-locks, increments, unlocks.
    pub fn write(&self) {
        self.l.write();
        // SAFETY: write lock held.
        self.v.with_mut(|p| unsafe { *p += 1 });
        // SAFETY: held by this thread.
        unsafe { self.l.write_unlock() };
    }
    /// The value; the caller holds a read lock.
    pub fn peek(&self) -> usize {
        // SAFETY: a read lock is held by the caller.
        self.v.with(|p| unsafe { *p })
    }
    /// Read-locks, reads, unlocks.
    pub fn read(&self) -> usize {
        self.l.read();
        let v = self.peek();
        // SAFETY: held.
        unsafe { self.l.read_unlock() };
        v
    }
    /// Write-locks, increments, downgrades, checks the value under the read lock, unlocks.
    pub fn write_downgrade_read(&self) {
        self.l.write();
        // SAFETY: write lock held.
        self.v.with_mut(|p| unsafe { *p += 1 });
        // SAFETY: held by this thread.
        unsafe { self.l.downgrade() };
        assert!(self.peek() >= 1);
        // SAFETY: the downgraded read lock is held.
        unsafe { self.l.read_unlock() };
    }
    /// With every other thread joined: `writes` writes happened and the lock is idle.
    pub fn done(&self, writes: usize) {
        // SAFETY: every other thread joined.
        assert_eq!(self.v.with(|p| unsafe { *p }), writes);
        assert!(self.l.idle(), "{:?}", self.l);
    }
}

/// Runs `f` on a new loom thread with a clone of `g`.
pub fn spawn<L: Rw>(g: &Arc<Guarded<L>>, f: fn(&Guarded<L>)) -> loom::thread::JoinHandle<()> {
    let g = g.clone();
    loom::thread::spawn(move || f(&g))
}

/// The common model shape: threads `a` and `b` against the main thread's write, on `g`;
/// `writes` writes in all.
pub fn against_a_write<L: Rw>(
    g: Arc<Guarded<L>>,
    a: fn(&Guarded<L>),
    b: fn(&Guarded<L>),
    writes: usize,
) {
    let ta = spawn(&g, a);
    let tb = spawn(&g, b);
    g.write();
    ta.join().unwrap();
    tb.join().unwrap();
    g.done(writes);
}
