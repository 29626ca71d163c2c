//! The calling thread's hot per-thread words: its record and owner word, read by every lock
//! and unlock, and the mutex release countdown of `crate::mutex::turn`, counted by every mutex
//! unlock. All-zero is the initial state of a thread that has not registered yet.
//!
//! | bytes | word | meaning | written by |
//! |-------|------|---------|------------|
//! | 0–7 | record | the thread's [`ThreadRec`] (null before registration) | registration |
//! | 8–15 | owner word | the word the locks store as owner ([`super`], "Owner words") | registration |
//! | 16–19 | `left` | releases left before the next turn check; 0 = the countdown is off (no counting: the mutex's quiet stop) | every mutex release while on; a check |
//! | 20–23 | `every` | releases between two checks (0 reads as 1) | a check |
//!
//! Only this thread reads or writes its words, so they are plain loads and stores. The
//! countdown's halves are only ever accessed 32 bits wide: a 64-bit load right after a 32-bit
//! store to half of it cannot take the value from the store buffer and waits for the store to
//! retire.
//!
//! # Where they live
//!
//! On x86_64 Linux with glibc they sit in a static TLS block of their own, declared in assembly
//! and reached with the *initial-exec* TLS model: the block's offset from the thread pointer
//! comes from the GOT (the static linker turns that into a constant in an executable), and each
//! word is one `%fs`-relative load or store; no call. Rust's `thread_local!` picks the model
//! from the crate type: in a shared library (`libkslock.so`, the pthread preload) it is
//! *general-dynamic*, a call to `__tls_get_addr` per access, and every `pthread_mutex_lock` /
//! `unlock` pair under the preload made three of them (the owner word at the lock, the owner
//! word and the countdown at the unlock). The block takes that call out of the preload's pair;
//! in an executable (lockbench) the words cost what `thread_local!` did (`docs/experiments.md`,
//! "Hot words in static TLS").
//!
//! A shared library with initial-exec TLS takes its block from the static TLS area that glibc
//! sets up at program start (`DF_STATIC_TLS`): loaded with the program or `LD_PRELOAD`ed it is
//! part of that area; `dlopen`ed later it is carved from glibc's reserve for this case
//! (`glibc.rtld.optional_static_tls`, 512 bytes by default), which these 24 bytes fit unless
//! other such libraries used it up, and `dlopen` then fails with a clear error rather than
//! misbehaving. Elsewhere the words are a plain `thread_local!`.

use super::ThreadRec;

/// A registered thread's record and owner word (null / 0 before registration).
#[derive(Clone, Copy)]
pub(super) struct Me {
    pub(super) rec: *const ThreadRec,
    pub(super) word: u64,
}

// The block's layout (24 bytes, all-zero at thread start): the module doc's table.

#[cfg(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu"))]
mod imp {
    // One 24-byte block in `.tbss` (zero-filled for every thread), hidden so that each shared
    // object that links kslock has its own, as with `thread_local!`. The version in the name
    // keeps two kslock versions in one program apart.
    core::arch::global_asm!(
        ".pushsection .tbss.kslock_hot_v0_1,\"awT\",@nobits",
        ".p2align 3",
        ".globl kslock_hot_v0_1",
        ".hidden kslock_hot_v0_1",
        ".type kslock_hot_v0_1,@object",
        ".size kslock_hot_v0_1,24",
        "kslock_hot_v0_1:",
        ".skip 24",
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
    #[inline(always)]
    pub(super) fn left() -> u32 {
        load!(u32, "movl", "e", "16")
    }
    #[inline(always)]
    pub(super) fn every() -> u32 {
        load!(u32, "movl", "e", "20")
    }
    #[inline(always)]
    pub(super) fn set_left(v: u32) {
        store!(u32, "movl", "e", "16", v)
    }
    #[inline(always)]
    pub(super) fn set_every(v: u32) {
        store!(u32, "movl", "e", "20", v)
    }
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu")))]
mod imp {
    use core::cell::Cell;

    std::thread_local! {
        /// The block's words (module doc of `super`): record and owner word, then the
        /// countdown's two halves; no destructor, so `with` never fails.
        static HOT: ([Cell<u64>; 2], [Cell<u32>; 2]) =
            const { ([const { Cell::new(0) }; 2], [const { Cell::new(0) }; 2]) };
    }

    #[inline(always)]
    pub(super) fn rec() -> u64 {
        HOT.with(|h| h.0[0].get())
    }
    #[inline(always)]
    pub(super) fn word() -> u64 {
        HOT.with(|h| h.0[1].get())
    }
    #[inline(always)]
    pub(super) fn set_me(rec: u64, word: u64) {
        HOT.with(|h| {
            h.0[0].set(rec);
            h.0[1].set(word);
        })
    }
    #[inline(always)]
    pub(super) fn left() -> u32 {
        HOT.with(|h| h.1[0].get())
    }
    #[inline(always)]
    pub(super) fn every() -> u32 {
        HOT.with(|h| h.1[1].get())
    }
    #[inline(always)]
    pub(super) fn set_left(v: u32) {
        HOT.with(|h| h.1[0].set(v))
    }
    #[inline(always)]
    pub(super) fn set_every(v: u32) {
        HOT.with(|h| h.1[1].set(v))
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

/// The release countdown: (releases left before the next check, releases between two checks),
/// each at least 1.
#[inline(always)]
pub(super) fn checks() -> (u32, u32) {
    (imp::left().max(1), every())
}

/// Releases between two checks (at least 1).
#[inline(always)]
pub(super) fn every() -> u32 {
    imp::every().max(1)
}

/// Releases left before the next check, as stored: 0 = the countdown is off (a thread that has
/// not contended since its checks last went quiet; `crate::thread::count_run_check`).
#[inline(always)]
pub(super) fn left_raw() -> u32 {
    imp::left()
}

/// Restarts the release countdown at `left` releases, keeping the releases between checks.
#[inline(always)]
pub(super) fn set_left(left: u32) {
    imp::set_left(left);
}

/// Sets the release countdown.
#[inline(always)]
pub(super) fn set_checks(left: u32, every: u32) {
    imp::set_left(left);
    imp::set_every(every);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_thread_starts_zeroed_and_keeps_its_own_words() {
        set_checks(7, 9);
        let other = std::thread::spawn(|| {
            let fresh = (
                imp::rec(),
                imp::word(),
                (imp::left(), imp::every()),
                checks(),
            );
            set_checks(1, 2);
            set_me(Me {
                rec: core::ptr::null(),
                word: 5,
            });
            (fresh, word())
        })
        .join()
        .unwrap();
        assert_eq!(other, ((0, 0, (0, 0), (1, 1)), 5));
        assert_eq!(checks(), (7, 9));
    }

    #[test]
    fn a_fresh_thread_countdown_is_off_and_reads_raw() {
        let fresh = std::thread::spawn(left_raw).join().unwrap();
        assert_eq!(fresh, 0, "a fresh thread's countdown is off");
        set_checks(3, 5);
        assert_eq!((left_raw(), checks()), (3, (3, 5)));
        set_left(0);
        assert_eq!(
            (left_raw(), checks()),
            (0, (1, 5)),
            "off keeps the spacing; 0 reads as 1 in checks()"
        );
    }
}
