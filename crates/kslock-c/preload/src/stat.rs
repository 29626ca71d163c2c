//! Feature `stats`: the preload as `kslock-stat` runs it. At start it reads its settings from
//! the environment (`KSLOCK_STAT_DIR`: where to dump; `KSLOCK_STAT_SAMPLE`: the sampling
//! rate, `kslock::stats::set_sample_rate`; `KSLOCK_STAT_SIGNAL`: a signal number that makes
//! the process dump, 0 for none); at exit, and on that signal, it writes
//! `DIR/kslock-stat.<pid>.raw`: kslock's raw dump (`kslock::stats::write_raw`), then a line
//! `maps` and the process's `/proc/self/maps`, which `kslock-stat` needs to symbolize. The
//! file is written under a temporary name and renamed, so a reader never sees half a dump.
//!
//! "At exit" is every way a process ends but `SIGKILL` and a crash: `exit()` and a return from
//! `main` (an ELF destructor); `_exit()` and `_Exit()` called by the program (interposed here;
//! only in the process the constructor ran in, so a `fork` or `vfork` child that `_exit`s after
//! a failed `exec` writes nothing); and the termination signals [`FATAL`] (`SIGTERM`, `SIGINT`,
//! `SIGHUP`, `SIGPIPE`), for each one whose disposition is still the default when the
//! constructor runs: the handler dumps, and with the default restored (`SA_RESETHAND`, not
//! deferred) re-raises the signal, so the process ends as it would have, by that signal. A
//! handler the program installs later replaces ours (and typically ends in `exit()`).
//!
//! The dump allocates nothing and takes no lock (a stack buffer, `open`/`read`/`write`/
//! `rename`): it is safe in a destructor while other threads still lock, and in a signal
//! handler. A `fork` child that exits dumps its own file (its pid differs).

use core::ffi::c_char;
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU8, AtomicUsize, Ordering::*};

/// The dump directory's bytes (set once by the constructor; Relaxed, published by
/// `DIR_LEN`).
static DIR: [AtomicU8; 3072] = [const { AtomicU8::new(0) }; 3072];
/// Its length; 0: no directory, no dump.
static DIR_LEN: AtomicUsize = AtomicUsize::new(0);
/// A dump is being written (a signal during the exit dump, or two signals): skip.
static DUMPING: AtomicBool = AtomicBool::new(false);

/// The process the constructor ran in (0: none yet); `_exit` dumps only there.
static PID: AtomicI32 = AtomicI32::new(0);
/// The termination signals that dump before they end the process (module doc).
pub const FATAL: [i32; 4] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGPIPE];

/// The value of environment variable `name` (NUL-terminated), if set.
fn env(name: &[u8]) -> Option<&'static [u8]> {
    // SAFETY: `name` is NUL-terminated; getenv's result, if not null, is a NUL-terminated
    // string in the environment, which the constructor's caller does not change meanwhile.
    unsafe {
        let p = libc::getenv(name.as_ptr().cast::<c_char>());
        (!p.is_null()).then(|| core::ffi::CStr::from_ptr(p).to_bytes())
    }
}

fn parse(v: &[u8]) -> Option<u32> {
    core::str::from_utf8(v).ok()?.trim().parse().ok()
}

/// ELF constructor: the settings.
extern "C" fn stat_init() {
    if let Some(d) = env(b"KSLOCK_STAT_DIR\0") {
        if !d.is_empty() && d.len() < DIR.len() {
            for (a, &b) in DIR.iter().zip(d) {
                a.store(b, Relaxed);
            }
            // Release pairs with the Acquire in `dump`.
            DIR_LEN.store(d.len(), Release);
        }
    }
    if DIR_LEN.load(Relaxed) == 0 {
        return;
    }
    // SAFETY: getpid has no preconditions.
    PID.store(unsafe { libc::getpid() }, Relaxed);
    for sig in FATAL {
        // SAFETY: a zeroed sigaction is a valid out-parameter; the handler is installed only
        // where the disposition read is the default, with a valid handler and mask.
        unsafe {
            let mut old: libc::sigaction = core::mem::zeroed();
            if libc::sigaction(sig, core::ptr::null(), &mut old) == 0
                && old.sa_sigaction == libc::SIG_DFL
            {
                let mut sa: libc::sigaction = core::mem::zeroed();
                sa.sa_sigaction = on_fatal as *const () as usize;
                sa.sa_flags = libc::SA_RESETHAND | libc::SA_NODEFER;
                libc::sigemptyset(&mut sa.sa_mask);
                libc::sigaction(sig, &sa, core::ptr::null_mut());
            }
        }
    }
    if let Some(r) = env(b"KSLOCK_STAT_SAMPLE\0").and_then(parse) {
        kslock::stats::set_sample_rate(r);
    }
    if let Some(sig) = env(b"KSLOCK_STAT_SIGNAL\0").and_then(parse) {
        if sig > 0 {
            // SAFETY: a zeroed sigaction with a valid handler and SA_RESTART; `sig` is
            // checked by the kernel (an invalid one fails, harmlessly).
            unsafe {
                let mut sa: libc::sigaction = core::mem::zeroed();
                sa.sa_sigaction = on_signal as *const () as usize;
                sa.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut sa.sa_mask);
                libc::sigaction(sig as i32, &sa, core::ptr::null_mut());
            }
        }
    }
}

extern "C" fn on_signal(_sig: i32) {
    // errno is the interrupted code's: keep it.
    // SAFETY: __errno_location returns this thread's errno.
    let e = unsafe { *libc::__errno_location() };
    dump();
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = e };
}

/// A termination signal ([`FATAL`]): dump, then end by the signal (the disposition is the
/// default again, `SA_RESETHAND`, and the signal is not blocked in here, `SA_NODEFER`).
extern "C" fn on_fatal(sig: i32) {
    dump();
    // SAFETY: raise is async-signal-safe.
    unsafe { libc::raise(sig) };
}

/// The program's `_exit`: the exit dump in the process the constructor ran in, then the
/// process ends as `_exit` ends it (`exit_group`).
///
/// # Safety
/// As `_exit(2)`: no destructor or `atexit` handler runs.
#[no_mangle]
pub unsafe extern "C" fn _exit(status: i32) -> ! {
    // SAFETY: getpid has no preconditions.
    if PID.load(Relaxed) == unsafe { libc::getpid() } {
        dump();
    }
    loop {
        // SAFETY: exit_group does not return.
        unsafe { libc::syscall(libc::SYS_exit_group, status) };
    }
}

/// The program's `_Exit` (C99's name for `_exit`).
///
/// # Safety
/// As [`_exit`].
#[no_mangle]
pub unsafe extern "C" fn _Exit(status: i32) -> ! {
    // SAFETY: forwarded contract.
    unsafe { _exit(status) }
}

/// ELF destructor: the exit dump.
extern "C" fn stat_fini() {
    dump();
}

#[used]
#[link_section = ".init_array"]
static STAT_INIT: extern "C" fn() = stat_init;

#[used]
#[link_section = ".fini_array"]
static STAT_FINI: extern "C" fn() = stat_fini;

/// Appends `b` to `buf` at `*n` (truncating at the end).
fn push(buf: &mut [u8], n: &mut usize, b: &[u8]) {
    let k = b.len().min(buf.len() - *n);
    buf[*n..*n + k].copy_from_slice(&b[..k]);
    *n += k;
}

/// Writes the dump (module doc). Allocation-free and lock-free.
pub fn dump() {
    // Acquire pairs with the Release in `stat_init`.
    let len = DIR_LEN.load(Acquire);
    if len == 0 || DUMPING.swap(true, Acquire) {
        return;
    }
    let mut path = [0u8; 3200];
    let mut n = 0;
    for a in &DIR[..len] {
        push(&mut path, &mut n, &[a.load(Relaxed)]);
    }
    push(&mut path, &mut n, b"/kslock-stat.");
    let mut digits = [0u8; 12];
    let mut i = digits.len();
    // SAFETY: getpid has no preconditions.
    let mut pid = unsafe { libc::getpid() } as u32;
    loop {
        i -= 1;
        digits[i] = b'0' + (pid % 10) as u8;
        pid /= 10;
        if pid == 0 {
            break;
        }
    }
    push(&mut path, &mut n, &digits[i..]);
    push(&mut path, &mut n, b".raw");
    let mut tmp = path;
    let mut tn = n;
    push(&mut tmp, &mut tn, b".tmp\0");
    path[n] = 0;
    // SAFETY: `tmp` and `path` are NUL-terminated paths in live buffers.
    unsafe {
        let fd = libc::open(
            tmp.as_ptr().cast(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC,
            0o644,
        );
        if fd >= 0 {
            let ok = kslock::stats::write_raw(fd) && copy_maps(fd);
            libc::close(fd);
            if ok {
                libc::rename(tmp.as_ptr().cast(), path.as_ptr().cast());
            } else {
                libc::unlink(tmp.as_ptr().cast());
            }
        }
    }
    // Release: the next dump starts after this one.
    DUMPING.store(false, Release);
}

/// Appends `maps\n` and `/proc/self/maps` to `fd`.
fn copy_maps(fd: i32) -> bool {
    let mut buf = [0u8; 4096];
    // SAFETY: plain reads and writes of a live stack buffer; the fds are ours.
    unsafe {
        if libc::write(fd, b"maps\n".as_ptr().cast(), 5) != 5 {
            return false;
        }
        let m = libc::open(
            c"/proc/self/maps".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        );
        if m < 0 {
            return false;
        }
        let mut ok = true;
        loop {
            let r = libc::read(m, buf.as_mut_ptr().cast(), buf.len());
            if r <= 0 {
                ok = r == 0;
                break;
            }
            let mut off = 0;
            while off < r as usize {
                let w = libc::write(fd, buf[off..].as_ptr().cast(), r as usize - off);
                if w <= 0 {
                    ok = false;
                    break;
                }
                off += w as usize;
            }
            if !ok {
                break;
            }
        }
        libc::close(m);
        ok
    }
}
