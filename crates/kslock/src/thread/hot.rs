//! The calling thread's hot per-thread words: its record and owner word, read by every lock
//! and unlock. All-zero is the initial state of a thread that has not registered yet.
//!
//! | bytes | word | meaning | written by |
//! |-------|------|---------|------------|
//! | 0–7 | record | the thread's [`ThreadRec`] (null before registration) | registration |
//! | 8–15 | owner word | the word the locks store as owner ([`super`], "Owner words") | registration |
//!
//! Only this thread reads or writes its words, so they are plain loads and stores.
//!
//! # Where they live
//!
//! On x86_64 Linux with glibc they sit in a static TLS block of their own, declared in assembly
//! and reached with the *initial-exec* TLS model: the block's offset from the thread pointer
//! comes from the GOT (the static linker turns that into a constant in an executable), and each
//! word is one `%fs`-relative load or store; no call. Rust's `thread_local!` picks the model
//! from the crate type: in a shared library (`libkslock.so`, the pthread preload) it is
//! *general-dynamic*, a call to `__tls_get_addr` per access, and every `pthread_mutex_lock` /
//! `unlock` pair under the preload made two of them (the owner word at the lock and at the
//! unlock). The block takes that call out of the preload's pair;
//! in an executable (lockbench) the words cost what `thread_local!` did (`docs/experiments.md`,
//! "Hot words in static TLS").
//!
//! A shared library with initial-exec TLS takes its block from the static TLS area that glibc
//! sets up at program start (`DF_STATIC_TLS`): loaded with the program or `LD_PRELOAD`ed it is
//! part of that area; `dlopen`ed later it is carved from glibc's reserve for this case
//! (`glibc.rtld.optional_static_tls`, 512 bytes by default), which these 16 bytes fit unless
//! other such libraries used it up, and `dlopen` then fails with a clear error rather than
//! misbehaving. Elsewhere the words are a plain `thread_local!`.

use super::ThreadRec;

/// A registered thread's record and owner word (null / 0 before registration).
#[derive(Clone, Copy)]
pub(super) struct Me {
    pub(super) rec: *const ThreadRec,
    pub(super) word: u64,
}

// The block's layout (16 bytes, all-zero at thread start): the module doc's table.

#[cfg(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu"))]
mod imp {
    // One 16-byte block in `.tbss` (zero-filled for every thread), hidden so that each shared
    // object that links kslock has its own, as with `thread_local!`. The version in the name
    // keeps two kslock versions in one program apart.
    core::arch::global_asm!(
        ".pushsection .tbss.kslock_hot_v0_1,\"awT\",@nobits",
        ".p2align 3",
        ".globl kslock_hot_v0_1",
        ".hidden kslock_hot_v0_1",
        ".type kslock_hot_v0_1,@object",
        ".size kslock_hot_v0_1,16",
        "kslock_hot_v0_1:",
        ".skip 16",
        ".popsection",
        options(att_syntax),
    );

    /// Loads the word of type `$ty` (`u64` / `u32`: `$mov` = `movq` / `movl`, operand modifier
    /// `$m` = `r` / `e`) at byte `$off` of this thread's block: the block's offset from the
    /// thread pointer (from the GOT, initial-exec; a constant in an executable), then one
    /// `%fs`-relative load.
    macro_rules! load {
        ($ty:ty, $mov:literal, $m:literal, $off:literal) => {{
            let v: $ty;
            // SAFETY: reads this thread's own block, which exists (static TLS) from the thread's
            // start to its end, and the GOT; no stack, no writes.
            unsafe {
                core::arch::asm!(
                    "movq kslock_hot_v0_1@GOTTPOFF(%rip), {p}",
                    concat!($mov, " %fs:", $off, "({p}), {v:", $m, "}"),
                    p = out(reg) _,
                    v = out(reg) v,
                    options(att_syntax, pure, readonly, nostack, preserves_flags),
                );
            }
            v
        }};
    }

    /// Stores `$val` (see `load!` for the other arguments) at byte `$off` of this thread's
    /// block.
    macro_rules! store {
        ($ty:ty, $mov:literal, $m:literal, $off:literal, $val:expr) => {{
            let v: $ty = $val;
            // SAFETY: writes this thread's own block (see `load!`); nothing else lives there,
            // and only this thread reaches it.
            unsafe {
                core::arch::asm!(
                    "movq kslock_hot_v0_1@GOTTPOFF(%rip), {p}",
                    concat!($mov, " {v:", $m, "}, %fs:", $off, "({p})"),
                    p = out(reg) _,
                    v = in(reg) v,
                    options(att_syntax, nostack, preserves_flags),
                );
            }
        }};
    }

    #[inline(always)]
    pub(super) fn rec() -> u64 {
        load!(u64, "movq", "r", "0")
    }
    #[inline(always)]
    pub(super) fn word() -> u64 {
        load!(u64, "movq", "r", "8")
    }
    #[inline(always)]
    pub(super) fn set_me(rec: u64, word: u64) {
        store!(u64, "movq", "r", "0", rec);
        store!(u64, "movq", "r", "8", word);
    }
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu")))]
mod imp {
    use core::cell::Cell;

    std::thread_local! {
        /// The block's words (module doc of `super`): record and owner word; no destructor,
        /// so `with` never fails.
        static HOT: [Cell<u64>; 2] = const { [const { Cell::new(0) }; 2] };
    }

    #[inline(always)]
    pub(super) fn rec() -> u64 {
        HOT.with(|h| h[0].get())
    }
    #[inline(always)]
    pub(super) fn word() -> u64 {
        HOT.with(|h| h[1].get())
    }
    #[inline(always)]
    pub(super) fn set_me(rec: u64, word: u64) {
        HOT.with(|h| {
            h[0].set(rec);
            h[1].set(word);
        })
    }
}

/// The calling thread's record and owner word (null / 0 before it registered).
#[inline(always)]
pub(super) fn me() -> Me {
    Me {
        rec: imp::rec() as usize as *const ThreadRec,
        word: imp::word(),
    }
}

/// The calling thread's owner word (0 before it registered).
#[inline(always)]
pub(super) fn word() -> u64 {
    imp::word()
}

/// Publishes the calling thread's record and owner word (registration).
#[inline]
pub(super) fn set_me(m: Me) {
    imp::set_me(m.rec as usize as u64, m.word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_thread_starts_zeroed_and_keeps_its_own_words() {
        let before = me().word;
        let other = std::thread::spawn(|| {
            let fresh = (imp::rec(), imp::word());
            set_me(Me {
                rec: core::ptr::null(),
                word: 5,
            });
            (fresh, word())
        })
        .join()
        .unwrap();
        assert_eq!(other, ((0, 0), 5));
        assert_eq!(me().word, before, "another thread's store is not seen here");
    }
}
