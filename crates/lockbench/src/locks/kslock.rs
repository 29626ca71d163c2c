//! Adapters for kslock's own locks: every kslock type the benchmark knows is
//! in this one file.
//!
//! * feature `kslock`: `kslock::RawMutexWith<P>` (default policy, `PackedOsq`, `KernelHandoff`).
//! * feature `kslock-rwsem`: `kslock::RawRwSemWith<P>` and its policy variants.
//!
//! Locking goes through the `lock_api` raw traits, the seed S3 path through
//! the inherent `try_lock_spin` / `try_write_spin`.

use super::{entry, BenchLock, LockInfo, RawGuard, RawUnlock};

pub fn entries() -> Vec<LockInfo> {
    #[allow(unused_mut)]
    let mut v = vec![
        entry!(
            "kslock-mutex",
            KsMutex<kslock::policy::DefaultPolicy>,
            true,
            "kslock::RawMutex, default policy (OSQ SplitIdLine)"
        ),
        entry!(
            "kslock-mutex-packed-osq",
            KsMutex<kslock::policy::PackedOsq>,
            true,
            "kslock::RawMutexWith<PackedOsq> (seed S1 A side)"
        ),
        entry!(
            "kslock-mutex-kernel-handoff",
            KsMutex<kslock::policy::KernelHandoff>,
            true,
            "kslock::RawMutexWith<KernelHandoff>: handoff after one lost race, no fairness window"
        ),
    ];
    #[cfg(feature = "kslock-rwsem")]
    v.extend(rwsem::entries());
    v
}

/// `kslock::RawMutexWith<P>`.
pub struct KsMutex<P: kslock::policy::MutexPolicy>(kslock::RawMutexWith<P>);

impl<P: kslock::policy::MutexPolicy> RawUnlock for KsMutex<P> {
    #[inline]
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
    #[inline]
    fn write(&self) -> Self::W<'_> {
        lock_api::RawMutex::lock(&self.0);
        RawGuard(self)
    }
    #[inline]
    fn read(&self) -> Self::R<'_> {
        self.write()
    }
    #[inline]
    fn try_write(&self) -> Option<Self::W<'_>> {
        lock_api::RawMutex::try_lock(&self.0).then(|| RawGuard(self))
    }
    #[inline]
    fn try_write_spin(&self) -> Option<Self::W<'_>> {
        self.0.try_lock_spin().then(|| RawGuard(self))
    }
}

#[cfg(feature = "kslock-rwsem")]
mod rwsem {
    use super::super::{entry, BenchLock, LockInfo, RawGuard, RawUnlock};
    use kslock::policy;

    pub fn entries() -> Vec<LockInfo> {
        vec![
            entry!(
                "kslock-rwsem",
                KsRwSem<policy::DefaultPolicy>,
                true,
                "kslock::RawRwSem, default policy"
            ),
            entry!(
                "kslock-rwsem-reader-spin-on",
                KsRwSem<policy::ReaderSpinOn>,
                true,
                "RawRwSemWith<ReaderSpinOn> (seed S4: every reader spins)"
            ),
            entry!(
                "kslock-rwsem-reader-spin-limited",
                KsRwSem<policy::ReaderSpinLimited>,
                true,
                "RawRwSemWith<ReaderSpinLimited> (seed S4: one reader spins)"
            ),
            entry!(
                "kslock-rwsem-wake-flag",
                KsRwSem<policy::WakeFlag>,
                true,
                "RawRwSemWith<WakeFlag> (seed S0)"
            ),
            entry!(
                "kslock-rwsem-trylock-if-spinner",
                KsRwSem<policy::TrylockIfSpinner>,
                true,
                "RawRwSemWith<TrylockIfSpinner> (seed S0)"
            ),
            entry!(
                "kslock-rwsem-never-spin-on-readers",
                KsRwSem<policy::NeverSpinOnReaders>,
                true,
                "RawRwSemWith<NeverSpinOnReaders> (seed S2)"
            ),
            entry!(
                "kslock-rwsem-packed-osq",
                KsRwSem<policy::PackedOsq>,
                true,
                "RawRwSemWith<PackedOsq> (seed S1)"
            ),
            entry!(
                "kslock-rwsem-hybrid",
                KsHybrid,
                true,
                "kslock::hybrid::RawHybridRwSem: the mutex for writers, reads shared or through the mutex by measurement"
            ),
        ]
    }

    /// `kslock::hybrid::RawHybridRwSem`.
    pub struct KsHybrid(kslock::hybrid::RawHybridRwSem);

    impl RawUnlock for KsHybrid {
        #[inline]
        unsafe fn unlock_mode(&self, read: bool) {
            // SAFETY: the caller holds the lock in this mode (guard contract).
            unsafe {
                if read {
                    lock_api::RawRwLock::unlock_shared(&self.0)
                } else {
                    lock_api::RawRwLock::unlock_exclusive(&self.0)
                }
            }
        }
    }

    impl BenchLock for KsHybrid {
        const RW: bool = true;
        type W<'a> = RawGuard<'a, Self, false>;
        type R<'a> = RawGuard<'a, Self, true>;
        fn new() -> Self {
            KsHybrid(<kslock::hybrid::RawHybridRwSem as lock_api::RawRwLock>::INIT)
        }
        #[inline]
        fn write(&self) -> Self::W<'_> {
            lock_api::RawRwLock::lock_exclusive(&self.0);
            RawGuard(self)
        }
        #[inline]
        fn read(&self) -> Self::R<'_> {
            lock_api::RawRwLock::lock_shared(&self.0);
            RawGuard(self)
        }
        #[inline]
        fn try_write(&self) -> Option<Self::W<'_>> {
            lock_api::RawRwLock::try_lock_exclusive(&self.0).then(|| RawGuard(self))
        }
        #[inline]
        fn try_write_spin(&self) -> Option<Self::W<'_>> {
            self.try_write()
        }
    }

    /// `kslock::RawRwSemWith<P>`.
    pub struct KsRwSem<P: policy::RwSemPolicy>(kslock::RawRwSemWith<P>);

    impl<P: policy::RwSemPolicy> RawUnlock for KsRwSem<P> {
        #[inline]
        unsafe fn unlock_mode(&self, read: bool) {
            // SAFETY: the caller holds the rwsem in this mode (guard contract).
            unsafe {
                if read {
                    lock_api::RawRwLock::unlock_shared(&self.0)
                } else {
                    lock_api::RawRwLock::unlock_exclusive(&self.0)
                }
            }
        }
    }

    impl<P: policy::RwSemPolicy> BenchLock for KsRwSem<P> {
        const RW: bool = true;
        type W<'a> = RawGuard<'a, Self, false>;
        type R<'a> = RawGuard<'a, Self, true>;
        fn new() -> Self {
            KsRwSem(<kslock::RawRwSemWith<P> as lock_api::RawRwLock>::INIT)
        }
        #[inline]
        fn write(&self) -> Self::W<'_> {
            lock_api::RawRwLock::lock_exclusive(&self.0);
            RawGuard(self)
        }
        #[inline]
        fn read(&self) -> Self::R<'_> {
            lock_api::RawRwLock::lock_shared(&self.0);
            RawGuard(self)
        }
        #[inline]
        fn try_write(&self) -> Option<Self::W<'_>> {
            lock_api::RawRwLock::try_lock_exclusive(&self.0).then(|| RawGuard(self))
        }
        #[inline]
        fn try_write_spin(&self) -> Option<Self::W<'_>> {
            self.0.try_write_spin().then(|| RawGuard(self))
        }
    }
}
