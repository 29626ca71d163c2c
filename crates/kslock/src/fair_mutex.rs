//! [`FairMutex`]: the kernel mutex with every unlock fair (parking_lot's `FairMutex`).
//!
//! [`RawFairMutex`] wraps the default [`crate::RawMutex`] and turns every `unlock` into
//! [`unlock_fair`](crate::RawMutexWith::unlock_fair): when anyone waits, the lock goes straight
//! to the head waiter (FIFO), and running threads cannot barge in. Every unlock then takes the
//! unlock slow path (a wait_lock round trip when someone waits, one CAS otherwise), and a
//! contended lock pays a wakeup per handover: pick it when strict FIFO order matters more than
//! throughput.

use crate::mutex::RawMutex;

/// A raw mutex whose every unlock is fair: [`crate::RawMutex`] with `unlock` =
/// `unlock_fair`. Same size (32 bytes) and all-zero initialisation.
#[derive(Debug, Default)]
#[repr(transparent)]
pub struct RawFairMutex(RawMutex);

impl RawFairMutex {
    /// A new, unlocked mutex (all-zero).
    pub const fn new() -> Self {
        RawFairMutex(RawMutex::new())
    }

    /// The underlying (non-fair) kslock mutex, for kslock-specific calls such as
    /// [`try_lock_spin`](crate::RawMutexWith::try_lock_spin).
    pub fn inner(&self) -> &crate::RawMutex {
        &self.0
    }
}

// SAFETY: every method forwards to `RawMutex`, which provides the exclusion; `unlock` is
// `unlock_fair`, which releases exactly like `unlock` (or hands the lock to a waiter).
unsafe impl lock_api::RawMutex for RawFairMutex {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = RawFairMutex::new();
    type GuardMarker = lock_api::GuardNoSend;

    #[inline]
    fn lock(&self) {
        self.0.lock()
    }
    #[inline]
    fn try_lock(&self) -> bool {
        self.0.try_lock()
    }
    #[inline]
    unsafe fn unlock(&self) {
        // SAFETY: forwarded caller contract (this thread holds the mutex).
        unsafe { self.0.unlock_fair() }
    }
    #[inline]
    fn is_locked(&self) -> bool {
        self.0.is_locked()
    }
}

// SAFETY: forwards to `RawMutex`'s `RawMutexFair`.
unsafe impl lock_api::RawMutexFair for RawFairMutex {
    #[inline]
    unsafe fn unlock_fair(&self) {
        // SAFETY: forwarded caller contract.
        unsafe { self.0.unlock_fair() }
    }
    #[inline]
    unsafe fn bump(&self) {
        // SAFETY: forwarded caller contract.
        unsafe { lock_api::RawMutexFair::bump(&self.0) }
    }
}

// SAFETY: forwards to `RawMutex`'s `RawMutexTimed`.
unsafe impl lock_api::RawMutexTimed for RawFairMutex {
    type Duration = std::time::Duration;
    type Instant = std::time::Instant;
    #[inline]
    fn try_lock_for(&self, timeout: Self::Duration) -> bool {
        self.0.try_lock_for(timeout)
    }
    #[inline]
    fn try_lock_until(&self, timeout: Self::Instant) -> bool {
        self.0.try_lock_until(timeout)
    }
}

/// A mutex whose every unlock hands the lock to the longest waiter ([`RawFairMutex`]).
pub type FairMutex<T> = lock_api::Mutex<RawFairMutex, T>;
/// RAII guard of a [`FairMutex`].
pub type FairMutexGuard<'a, T> = lock_api::MutexGuard<'a, RawFairMutex, T>;
/// A guard of a mapped [`FairMutex`] borrow.
pub type MappedFairMutexGuard<'a, T> = lock_api::MappedMutexGuard<'a, RawFairMutex, T>;

/// Creates a [`FairMutex`] in a `const` context (e.g. a `static`).
pub const fn const_fair_mutex<T>(val: T) -> FairMutex<T> {
    FairMutex::const_new(RawFairMutex::new(), val)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn size_and_zero_init() {
        assert_eq!(core::mem::size_of::<RawFairMutex>(), 32);
        // SAFETY: all-zero is a valid unlocked RawMutex, and RawFairMutex is transparent.
        let m: RawFairMutex = unsafe { core::mem::zeroed() };
        assert!(lock_api::RawMutex::try_lock(&m));
        assert!(m.inner().is_owned_by_current_thread());
        // SAFETY: held by this thread.
        unsafe { lock_api::RawMutex::unlock(&m) };
        assert!(!lock_api::RawMutex::is_locked(&m));
    }

    #[test]
    fn unlock_hands_the_lock_to_the_waiter() {
        // A fair unlock names the queued waiter as owner: the unlocking thread's immediate
        // try_lock fails even though it runs first. The waiter keeps the lock until told, so a
        // failed try_lock can only mean the handover.
        let m = Arc::new(const_fair_mutex(0u32));
        let g = m.lock();
        let (m2, (tx, rx)) = (m.clone(), std::sync::mpsc::channel::<()>());
        let h = std::thread::spawn(move || {
            let mut g = m2.lock();
            *g += 1;
            rx.recv().unwrap();
        });
        // SAFETY: the raw mutex is only asked whether anyone waits; nothing unlocks it.
        let raw = unsafe { m.raw() };
        let t0 = std::time::Instant::now();
        while !raw.inner().has_waiters() {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "the locker never queued"
            );
            std::thread::yield_now();
        }
        drop(g);
        assert!(
            m.try_lock().is_none(),
            "a fair unlock let the unlocker barge"
        );
        tx.send(()).unwrap();
        h.join().unwrap();
        assert_eq!(*m.lock(), 1);
    }
}
