//! The lock types' record keys: [`Tagged`] (the hooks' key tag) and [`StatsKey`] (the
//! public lookup). The one part of the module that names the locks: the hooks, tables and
//! stack walk below it use no other kslock module but the leaf `clock`, so that `sys` and
//! `sync` can call [`super::note`] (module doc of [`super`], "Where it records").

use super::hooks::Tagged;

/// Key tag of a mutex.
pub(crate) const TAG_MUTEX: usize = 0;
/// Key tag of an rw-semaphore's write side.
pub(crate) const TAG_RWSEM_WRITE: usize = 1;
/// Key tag of an rw-semaphore's read side.
#[cfg_attr(not(feature = "stats"), allow(dead_code))]
pub(crate) const TAG_RWSEM_READ: usize = 2;

impl<P: crate::policy::MutexPolicy> Tagged for crate::mutex::RawMutex<P> {
    const TAG: usize = TAG_MUTEX;
}

impl<P: crate::policy::RwSemPolicy> Tagged for crate::rwsem::RawRwSem<P> {
    const TAG: usize = TAG_RWSEM_WRITE;
}

/// A kslock lock whose statistics [`super::set_name`] and [`super::Snapshot::get`] can
/// find: the raw locks and the `lock_api` types over them.
#[cfg(feature = "stats")]
pub trait StatsKey {
    /// The lock's record key (its raw lock's address and kind).
    fn stats_key(&self) -> usize;
}

#[cfg(feature = "stats")]
impl<P: crate::policy::MutexPolicy> StatsKey for crate::mutex::RawMutex<P> {
    fn stats_key(&self) -> usize {
        self as *const Self as usize | TAG_MUTEX
    }
}

#[cfg(feature = "stats")]
impl<P: crate::policy::RwSemPolicy> StatsKey for crate::rwsem::RawRwSem<P> {
    fn stats_key(&self) -> usize {
        self as *const Self as usize | TAG_RWSEM_WRITE
    }
}

#[cfg(feature = "stats")]
impl<R: lock_api::RawMutex + StatsKey, T: ?Sized> StatsKey for lock_api::Mutex<R, T> {
    fn stats_key(&self) -> usize {
        // SAFETY: only the raw lock's address is taken; it is never locked or unlocked here.
        unsafe { self.raw() }.stats_key()
    }
}

#[cfg(feature = "stats")]
impl<R: lock_api::RawRwLock + StatsKey, T: ?Sized> StatsKey for lock_api::RwLock<R, T> {
    fn stats_key(&self) -> usize {
        // SAFETY: only the raw lock's address is taken; it is never locked or unlocked here.
        unsafe { self.raw() }.stats_key()
    }
}
