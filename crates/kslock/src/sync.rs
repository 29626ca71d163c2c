//! The loom shim: every atomic, cell, spin hint and yield in kslock comes from here.
//!
//! Under `--cfg kslock_loom` the types are loom's, so the lock-free protocols are model-checked
//! by the same code that ships. Only this module and [`crate::sys`] mention the cfg.

#[cfg(not(kslock_loom))]
pub(crate) use core::sync::atomic::{
    fence, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};
#[cfg(kslock_loom)]
pub(crate) use loom::sync::atomic::{
    fence, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};

/// `UnsafeCell` with loom's closure API (`with` / `with_mut`) on both builds.
#[cfg(not(kslock_loom))]
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(core::cell::UnsafeCell<T>);

#[cfg(not(kslock_loom))]
impl<T> UnsafeCell<T> {
    pub(crate) const fn new(v: T) -> Self {
        Self(core::cell::UnsafeCell::new(v))
    }
    #[inline]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}
#[cfg(kslock_loom)]
pub(crate) use loom::cell::UnsafeCell;

/// One step of a bounded busy-wait: `pause` on x86, a scheduler yield under loom (loom's
/// scheduler is unfair, so model spin loops must yield to make progress).
#[inline(always)]
pub(crate) fn spin_hint() {
    #[cfg(not(kslock_loom))]
    core::hint::spin_loop();
    #[cfg(kslock_loom)]
    loom::thread::yield_now();
}

/// Gives the CPU away (`sched_yield`; loom's yield under loom).
#[inline]
pub(crate) fn yield_now() {
    crate::stats::note(crate::stats::Note::Yielded);
    #[cfg(not(kslock_loom))]
    std::thread::yield_now();
    #[cfg(kslock_loom)]
    loom::thread::yield_now();
}

/// Defines a constructor from one body: a `const fn` in normal builds (so locks can live in
/// statics and all-zero `INIT`s), a plain `fn` under loom, whose atomics have no `const fn new`.
macro_rules! loom_const_fn {
    ($(#[$attr:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty $body:block) => {
        #[cfg(not(kslock_loom))]
        $(#[$attr])*
        $vis const fn $name($($arg: $ty),*) -> $ret $body

        #[cfg(kslock_loom)]
        $(#[$attr])*
        $vis fn $name($($arg: $ty),*) -> $ret $body
    };
}
pub(crate) use loom_const_fn;
