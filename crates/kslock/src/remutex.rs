//! [`ReentrantMutex`]: a mutex the holding thread may lock again (parking_lot's
//! `ReentrantMutex`), built by `lock_api` on kslock's mutex.
//!
//! The thread id is the calling thread's owner word ([`crate::thread`]): the record id of its
//! type-stable per-thread record plus the record's generation, the same word the mutex stores
//! as its owner. Records are reused after a thread exits, but with a new generation, so a
//! thread that inherits the record of a thread that exited holding a reentrant mutex is not
//! taken for its owner.

use core::num::NonZeroUsize;

use crate::mutex::RawMutex;
use crate::thread::current_word;

/// The thread id of [`ReentrantMutex`]: kslock's per-thread owner word.
#[derive(Debug, Clone, Copy, Default)]
pub struct RawThreadId;

// SAFETY: owner words are unique among live threads (a record belongs to one live thread at a
// time and gets a new generation when it is reused) and never 0 (record ids start at 1, in
// bits 7..32, so the low 32 bits are non-zero too and the value survives a 32-bit `usize`).
unsafe impl lock_api::GetThreadId for RawThreadId {
    const INIT: Self = RawThreadId;

    #[inline]
    fn nonzero_thread_id(&self) -> NonZeroUsize {
        // Truncation on 32-bit targets keeps the record id, which is unique among live threads.
        let id = current_word() as usize;
        NonZeroUsize::new(id).expect("kslock: owner words are never 0")
    }
}

/// A mutex that the thread holding it may lock again; the guard gives `&T` only.
pub type ReentrantMutex<T> = lock_api::ReentrantMutex<RawMutex, RawThreadId, T>;
/// RAII guard of a [`ReentrantMutex`].
pub type ReentrantMutexGuard<'a, T> = lock_api::ReentrantMutexGuard<'a, RawMutex, RawThreadId, T>;
/// A guard of a mapped [`ReentrantMutex`] borrow.
pub type MappedReentrantMutexGuard<'a, T> =
    lock_api::MappedReentrantMutexGuard<'a, RawMutex, RawThreadId, T>;

/// Creates a [`ReentrantMutex`] in a `const` context (e.g. a `static`).
pub const fn const_reentrant_mutex<T>(val: T) -> ReentrantMutex<T> {
    ReentrantMutex::const_new(RawMutex::new(), RawThreadId, val)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lock_api::GetThreadId;
    use std::sync::Arc;

    #[test]
    fn ids_differ_between_live_threads_and_are_stable() {
        let me = RawThreadId.nonzero_thread_id();
        assert_eq!(me, RawThreadId.nonzero_thread_id());
        let other = std::thread::spawn(|| RawThreadId.nonzero_thread_id())
            .join()
            .unwrap();
        assert_ne!(me, other);
    }

    #[test]
    fn relock_by_owner_nests_and_others_wait() {
        static M: ReentrantMutex<core::cell::Cell<u32>> =
            const_reentrant_mutex(core::cell::Cell::new(0));
        let a = M.lock();
        let b = M.lock();
        b.set(b.get() + 1);
        assert!(M.is_owned_by_current_thread());
        let held = Arc::new(std::sync::Barrier::new(2));
        let h2 = held.clone();
        let t = std::thread::spawn(move || {
            assert!(
                M.try_lock().is_none(),
                "another thread entered a held reentrant mutex"
            );
            h2.wait();
            M.lock().get()
        });
        held.wait();
        drop(b);
        a.set(a.get() + 1);
        drop(a);
        assert_eq!(t.join().unwrap(), 2);
    }
}
