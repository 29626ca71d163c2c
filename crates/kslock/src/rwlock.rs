//! The rw-semaphore's typed names: mapped guards, `const_rwsem`, and parking_lot's names
//! (`RwLock`, `RawRwLock`, `const_rwlock`, ...) as aliases of the kslock ones, so code written
//! for parking_lot compiles with only the crate name changed.

use crate::policy::DefaultPolicy;
use crate::rwsem::RawRwSem;
use crate::RwSem;

/// A guard of a mapped [`RwSem`] read borrow.
pub type MappedRwSemReadGuard<'a, T> =
    lock_api::MappedRwLockReadGuard<'a, RawRwSem<DefaultPolicy>, T>;
/// A guard of a mapped [`RwSem`] write borrow.
pub type MappedRwSemWriteGuard<'a, T> =
    lock_api::MappedRwLockWriteGuard<'a, RawRwSem<DefaultPolicy>, T>;

/// Creates an [`RwSem`] in a `const` context (e.g. a `static`).
pub const fn const_rwsem<T>(val: T) -> RwSem<T> {
    RwSem::const_new(RawRwSem::new(), val)
}

/// parking_lot's name for [`crate::RawRwSem`].
pub type RawRwLock = RawRwSem<DefaultPolicy>;
/// parking_lot's name for [`RwSem`].
pub type RwLock<T> = RwSem<T>;
/// parking_lot's name for [`crate::RwSemReadGuard`].
pub type RwLockReadGuard<'a, T> = crate::RwSemReadGuard<'a, T>;
/// parking_lot's name for [`crate::RwSemWriteGuard`].
pub type RwLockWriteGuard<'a, T> = crate::RwSemWriteGuard<'a, T>;
/// parking_lot's name for [`crate::RwSemUpgradableReadGuard`].
pub type RwLockUpgradableReadGuard<'a, T> = crate::RwSemUpgradableReadGuard<'a, T>;
/// parking_lot's name for [`MappedRwSemReadGuard`].
pub type MappedRwLockReadGuard<'a, T> = MappedRwSemReadGuard<'a, T>;
/// parking_lot's name for [`MappedRwSemWriteGuard`].
pub type MappedRwLockWriteGuard<'a, T> = MappedRwSemWriteGuard<'a, T>;

/// parking_lot's name for [`const_rwsem`].
pub const fn const_rwlock<T>(val: T) -> RwLock<T> {
    const_rwsem(val)
}
