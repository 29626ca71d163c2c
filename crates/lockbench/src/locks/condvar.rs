//! Mutex + condition variable pairs as the `condvar` workload uses them: [`BenchCondvar`] and
//! its adapters for std, parking_lot, glibc pthread and (feature `kslock`) kslock.
//!
//! An adapter owns one mutex guarding a value and two condition variables that wait with that
//! mutex (a bounded queue's "not empty" and "not full"). `wait` takes the guard and gives it
//! back, as std's `Condvar::wait` does, so every implementation fits one signature.

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};

use super::Pinned;
use crate::util::CachePadded;

/// A mutex guarding a `T`, with two condition variables ([`Self::wait`]'s `which`: 0 or 1).
pub trait BenchCondvar<T: Send>: Send + Sync + Sized + 'static {
    /// The mutex's guard; unlocks on drop.
    type Guard<'a>: DerefMut<Target = T>
    where
        Self: 'a;
    fn new(value: T) -> Self;
    fn lock(&self) -> Self::Guard<'_>;
    /// Releases the mutex and waits on condvar `which` until notified (or a spurious wakeup),
    /// then locks it again.
    fn wait<'a>(&'a self, which: usize, g: Self::Guard<'a>) -> Self::Guard<'a>;
    fn notify_one(&self, which: usize);
    fn notify_all(&self, which: usize);
}

// ---------------------------------------------------------------- std

/// `std::sync::Mutex` + `std::sync::Condvar`.
pub struct StdCv<T> {
    m: std::sync::Mutex<T>,
    cv: [std::sync::Condvar; 2],
}

impl<T: Send + 'static> BenchCondvar<T> for StdCv<T> {
    type Guard<'a> = std::sync::MutexGuard<'a, T>;
    fn new(value: T) -> Self {
        StdCv {
            m: std::sync::Mutex::new(value),
            cv: Default::default(),
        }
    }
    fn lock(&self) -> Self::Guard<'_> {
        self.m.lock().unwrap_or_else(|e| e.into_inner())
    }
    fn wait<'a>(&'a self, which: usize, g: Self::Guard<'a>) -> Self::Guard<'a> {
        self.cv[which].wait(g).unwrap_or_else(|e| e.into_inner())
    }
    fn notify_one(&self, which: usize) {
        self.cv[which].notify_one();
    }
    fn notify_all(&self, which: usize) {
        self.cv[which].notify_all();
    }
}

// ---------------------------------------------------------------- parking_lot

/// `parking_lot::Mutex` + `parking_lot::Condvar`.
pub struct PlCv<T> {
    m: parking_lot::Mutex<T>,
    cv: [parking_lot::Condvar; 2],
}

impl<T: Send + 'static> BenchCondvar<T> for PlCv<T> {
    type Guard<'a> = parking_lot::MutexGuard<'a, T>;
    fn new(value: T) -> Self {
        PlCv {
            m: parking_lot::Mutex::new(value),
            cv: Default::default(),
        }
    }
    fn lock(&self) -> Self::Guard<'_> {
        self.m.lock()
    }
    fn wait<'a>(&'a self, which: usize, mut g: Self::Guard<'a>) -> Self::Guard<'a> {
        self.cv[which].wait(&mut g);
        g
    }
    fn notify_one(&self, which: usize) {
        self.cv[which].notify_one();
    }
    fn notify_all(&self, which: usize) {
        self.cv[which].notify_all();
    }
}

// ---------------------------------------------------------------- kslock

/// `kslock::Mutex` + `kslock::Condvar`.
#[cfg(feature = "kslock")]
pub struct KsCv<T> {
    m: kslock::Mutex<T>,
    cv: [kslock::Condvar; 2],
}

#[cfg(feature = "kslock")]
impl<T: Send + 'static> BenchCondvar<T> for KsCv<T> {
    type Guard<'a> = kslock::MutexGuard<'a, T>;
    fn new(value: T) -> Self {
        KsCv {
            m: kslock::Mutex::new(value),
            cv: [kslock::Condvar::new(), kslock::Condvar::new()],
        }
    }
    fn lock(&self) -> Self::Guard<'_> {
        self.m.lock()
    }
    fn wait<'a>(&'a self, which: usize, mut g: Self::Guard<'a>) -> Self::Guard<'a> {
        self.cv[which].wait(&mut g);
        g
    }
    fn notify_one(&self, which: usize) {
        self.cv[which].notify_one();
    }
    fn notify_all(&self, which: usize) {
        self.cv[which].notify_all();
    }
}

// ---------------------------------------------------------------- pthread

/// `pthread_mutex_t` + two `pthread_cond_t` (default attributes), each initialised in place in
/// a box so it never moves; the value sits beside them.
pub struct PthreadCv<T> {
    m: Pinned<libc::pthread_mutex_t>,
    cv: [Pinned<libc::pthread_cond_t>; 2],
    value: UnsafeCell<T>,
}

// SAFETY: the value is only reached through a guard, i.e. with the mutex held; the pthread
// objects are thread-safe.
unsafe impl<T: Send> Send for PthreadCv<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for PthreadCv<T> {}

/// A boxed, zeroed slot for a pthread object (initialised by its `_init` right after).
fn pinned_zeroed<P>() -> Pinned<P> {
    // SAFETY: the pthread types are plain data, for which all-zero is a valid bit pattern.
    Pinned(Box::new(CachePadded(UnsafeCell::new(unsafe {
        std::mem::zeroed()
    }))))
}

/// [`PthreadCv`]'s guard: the mutex is held while it lives.
pub struct PthreadCvGuard<'a, T>(&'a PthreadCv<T>);

impl<T> Deref for PthreadCvGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the mutex.
        unsafe { &*self.0.value.get() }
    }
}

impl<T> DerefMut for PthreadCvGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard holds the mutex, and `&mut self` makes this the only reference.
        unsafe { &mut *self.0.value.get() }
    }
}

impl<T> Drop for PthreadCvGuard<'_, T> {
    fn drop(&mut self) {
        // SAFETY: the guard holds the mutex, initialised in `new`.
        let r = unsafe { libc::pthread_mutex_unlock(self.0.m.get()) };
        debug_assert_eq!(r, 0);
    }
}

impl<T: Send + 'static> BenchCondvar<T> for PthreadCv<T> {
    type Guard<'a> = PthreadCvGuard<'a, T>;
    fn new(value: T) -> Self {
        let s = PthreadCv {
            m: pinned_zeroed(),
            cv: [pinned_zeroed(), pinned_zeroed()],
            value: UnsafeCell::new(value),
        };
        // SAFETY: the objects are boxed (they never move) and initialised once, here.
        unsafe {
            assert_eq!(libc::pthread_mutex_init(s.m.get(), std::ptr::null()), 0);
            for c in &s.cv {
                assert_eq!(libc::pthread_cond_init(c.get(), std::ptr::null()), 0);
            }
        }
        s
    }
    fn lock(&self) -> Self::Guard<'_> {
        // SAFETY: initialised in `new`.
        let r = unsafe { libc::pthread_mutex_lock(self.m.get()) };
        assert_eq!(r, 0, "pthread_mutex_lock");
        PthreadCvGuard(self)
    }
    fn wait<'a>(&'a self, which: usize, g: Self::Guard<'a>) -> Self::Guard<'a> {
        // SAFETY: `g` proves this thread holds the mutex, which pthread_cond_wait releases and
        // takes again before it returns; the guard then still holds it.
        let r = unsafe { libc::pthread_cond_wait(self.cv[which].get(), self.m.get()) };
        assert_eq!(r, 0, "pthread_cond_wait");
        g
    }
    fn notify_one(&self, which: usize) {
        // SAFETY: initialised in `new`.
        unsafe { libc::pthread_cond_signal(self.cv[which].get()) };
    }
    fn notify_all(&self, which: usize) {
        // SAFETY: initialised in `new`.
        unsafe { libc::pthread_cond_broadcast(self.cv[which].get()) };
    }
}

impl<T> Drop for PthreadCv<T> {
    fn drop(&mut self) {
        // SAFETY: no guard is left (they borrow self) and nobody waits (a waiter holds one).
        unsafe {
            for c in &self.cv {
                libc::pthread_cond_destroy(c.get());
            }
            libc::pthread_mutex_destroy(self.m.get());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One thread waits for a flag on condvar 1; the other sets it and notifies.
    fn hands_over<C: BenchCondvar<(bool, u32)>>() {
        let c = C::new((false, 0));
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut g = c.lock();
                while !g.0 {
                    g = c.wait(1, g);
                }
                g.1 += 1;
            });
            let mut g = c.lock();
            g.0 = true;
            c.notify_one(0);
            c.notify_all(1);
            drop(g);
        });
        assert_eq!(c.lock().1, 1);
    }

    #[test]
    fn every_adapter_waits_and_wakes() {
        hands_over::<StdCv<(bool, u32)>>();
        hands_over::<PlCv<(bool, u32)>>();
        hands_over::<PthreadCv<(bool, u32)>>();
        #[cfg(feature = "kslock")]
        hands_over::<KsCv<(bool, u32)>>();
    }
}
