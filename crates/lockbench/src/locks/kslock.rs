//! Adapters for kslock's own locks: every kslock lock type the benchmark knows is
//! in this one file (the registry gives them their names).
//!
//! * feature `kslock`: `kslock::RawMutexWith<P>` (default policy, `PackedOsq`, `KernelHandoff`).
//! * feature `kslock-rwsem`: `kslock::RawRwSemWith<P>` and its policy variants.
//!
//! Locking goes through the `lock_api` raw traits, the seed S3 path through
//! the inherent `try_lock_spin` / `try_write_spin`. With feature `stats` the
//! adapters are `inline(always)`, as kslock's fast paths are then (module doc
//! of `kslock::stats::hooks`): the benchmark measures the lock, not a call to
//! its adapter.

use super::{BenchLock, RawGuard, RawUnlock};

#[cfg(feature = "kslock-rwsem")]
pub use rwsem::{KsRw, WriteSpin};

/// `kslock::RawMutexWith<P>`.
pub struct KsMutex<P: kslock::policy::MutexPolicy>(kslock::RawMutexWith<P>);

impl<P: kslock::policy::MutexPolicy> RawUnlock for KsMutex<P> {
    #[cfg_attr(feature = "stats", inline(always))]
    #[cfg_attr(not(feature = "stats"), inline)]
    unsafe fn unlock_mode(&self, _read: bool) {
        // SAFETY: the caller holds the mutex (guard contract).
        unsafe { lock_api::RawMutex::unlock(&self.0) }
    }
}

impl<P: kslock::policy::MutexPolicy> BenchLock for KsMutex<P> {
    const RW: bool = false;
    type W<'a> = RawGuard<'a, Self, false>;
    type R<'a> = RawGuard<'a, Self, false>;
    fn new() -> Self {
        KsMutex(<kslock::RawMutexWith<P> as lock_api::RawMutex>::INIT)
    }
    #[cfg_attr(feature = "stats", inline(always))]
    #[cfg_attr(not(feature = "stats"), inline)]
    fn write(&self) -> Self::W<'_> {
        lock_api::RawMutex::lock(&self.0);
        RawGuard(self)
    }
    #[cfg_attr(feature = "stats", inline(always))]
    #[cfg_attr(not(feature = "stats"), inline)]
    fn read(&self) -> Self::R<'_> {
        self.write()
    }
    #[cfg_attr(feature = "stats", inline(always))]
    #[cfg_attr(not(feature = "stats"), inline)]
    fn try_write(&self) -> Option<Self::W<'_>> {
        lock_api::RawMutex::try_lock(&self.0).then(|| RawGuard(self))
    }
    #[cfg_attr(feature = "stats", inline(always))]
    #[cfg_attr(not(feature = "stats"), inline)]
    fn try_write_spin(&self) -> Option<Self::W<'_>> {
        self.0.try_lock_spin().then(|| RawGuard(self))
    }
}

#[cfg(feature = "kslock-rwsem")]
mod rwsem {
    use super::super::{BenchLock, RawGuard, RawUnlock};
    use kslock::policy;

    /// The seed S3 write path of a kslock rw lock (`try_write_spin` where it has one).
    pub trait WriteSpin: lock_api::RawRwLock + Send + Sync + 'static {
        fn write_spin(&self) -> bool;
    }

    impl<P: policy::RwSemPolicy> WriteSpin for kslock::RawRwSemWith<P> {
        #[cfg_attr(feature = "stats", inline(always))]
        #[cfg_attr(not(feature = "stats"), inline)]
        fn write_spin(&self) -> bool {
            self.try_write_spin()
        }
    }

    impl WriteSpin for kslock::hybrid::RawHybridRwSem {
        #[cfg_attr(feature = "stats", inline(always))]
        #[cfg_attr(not(feature = "stats"), inline)]
        fn write_spin(&self) -> bool {
            self.try_write_spin()
        }
    }

    /// A kslock rw lock through the `lock_api` raw traits.
    pub struct KsRw<R: WriteSpin>(R);

    impl<R: WriteSpin> RawUnlock for KsRw<R> {
        #[cfg_attr(feature = "stats", inline(always))]
        #[cfg_attr(not(feature = "stats"), inline)]
        unsafe fn unlock_mode(&self, read: bool) {
            // SAFETY: the caller holds the lock in this mode (guard contract).
            unsafe {
                if read {
                    self.0.unlock_shared()
                } else {
                    self.0.unlock_exclusive()
                }
            }
        }
    }

    impl<R: WriteSpin> BenchLock for KsRw<R> {
        const RW: bool = true;
        type W<'a> = RawGuard<'a, Self, false>;
        type R<'a> = RawGuard<'a, Self, true>;
        fn new() -> Self {
            KsRw(R::INIT)
        }
        #[cfg_attr(feature = "stats", inline(always))]
        #[cfg_attr(not(feature = "stats"), inline)]
        fn write(&self) -> Self::W<'_> {
            self.0.lock_exclusive();
            RawGuard(self)
        }
        #[cfg_attr(feature = "stats", inline(always))]
        #[cfg_attr(not(feature = "stats"), inline)]
        fn read(&self) -> Self::R<'_> {
            self.0.lock_shared();
            RawGuard(self)
        }
        #[cfg_attr(feature = "stats", inline(always))]
        #[cfg_attr(not(feature = "stats"), inline)]
        fn try_write(&self) -> Option<Self::W<'_>> {
            self.0.try_lock_exclusive().then(|| RawGuard(self))
        }
        #[cfg_attr(feature = "stats", inline(always))]
        #[cfg_attr(not(feature = "stats"), inline)]
        fn try_write_spin(&self) -> Option<Self::W<'_>> {
            self.0.write_spin().then(|| RawGuard(self))
        }
    }
}
