//! `pthread_cond_*` on kslock's [`Condvar`], in place inside `pthread_cond_t`.
//!
//! Layout of a kslock-routed `pthread_cond_t` (48 bytes, all-zero = `PTHREAD_COND_INITIALIZER`):
//!
//! | bytes | field | meaning |
//! |-------|-------|---------|
//! | 0–23 | kslock `Condvar` | waiters of kslock-served mutexes |
//! | 24–31 | `admit` | how many waiters may still touch the condvar, for destroy (`admit.rs`) |
//! | 32–35 | `seq` | bumped by every signal/broadcast; the futex of waiters with a glibc-served mutex |
//! | 36–39 | `flags` (glibc's `__wrefs`) | bit 0 `PSHARED`: glibc serves the condvar (glibc sets it); bit 1 `MONOTONIC`: `pthread_condattr_setclock(CLOCK_MONOTONIC)` |
//! | 40–43 | `fb_waiters` | waiters sleeping on `seq` |
//! | 44–47 | unused | |
//!
//! # Mutexes served by glibc
//!
//! kslock's condvar requeues onto a kslock mutex. A private condvar used with a robust, PI or
//! PP mutex (which glibc serves) instead waits on `seq` as a plain futex: read `seq`, unlock,
//! sleep while `seq` is unchanged, relock. The `fb_waiters` increment and the `seq` load
//! (waiter) against the `seq` increment and the `fb_waiters` load (signaller) are a SeqCst
//! Dekker pair: either the signaller sees the waiter and wakes it, or the waiter sees the new
//! `seq` and does not sleep. A process-shared condvar is glibc's, and must be used with a
//! glibc-served (process-shared) mutex: `EINVAL` otherwise.
//!
//! # The mutex's users
//!
//! A waiter counts as a user of its mutex from before the wait releases it until it holds it
//! again, so that `pthread_mutex_destroy` returns `EBUSY` meanwhile, as glibc's does: a kslock
//! mutex counts it in `cond_users` (`PMutex::cond_enter`/`cond_leave`, around each
//! `kslock_slice`), a glibc-served one in glibc's own `__nusers`
//! (`mutex::glibc_cond_release`/`glibc_cond_reacquire`, around each unlock and relock in
//! `futex_slice`). Both counts are lowered before a wait returns or tests for cancellation
//! (with the mutex held), so a cancelled waiter's cleanup handler finds the count as it was
//! before the wait.
//!
//! # Cancellation
//!
//! `pthread_cond_wait`/`timedwait`/`clockwait` are cancellation points: a cancelled waiter
//! holds the mutex again before its cleanup handlers run. kslock's futex waits are not
//! cancellable, so the wait runs in slices (2 ms doubling to 64 ms) while cancellation is
//! enabled: after each slice the waiter is out of the queue and holds the mutex, and calls
//! `pthread_testcancel`. Between slices a signal could find no queued waiter, so every signal
//! bumps `seq` and a waiter that sees `seq` moved, when it would queue again (read under the
//! condvar's lock, which the signal takes after its bump), returns (a legal spurious wakeup)
//! instead of waiting again: no wakeup is lost. The waiter keeps its admission (`admit`)
//! across the cancellation test, so a destroy waits for it; if cancellation acts, a glibc
//! cleanup handler (`_pthread_cleanup_push`, which glibc's unwind runs) ends it. (The price:
//! a destroy made by a thread that holds the mutex, right after a broadcast, waits for a
//! waiter that is between slices and waits for that mutex, and returns `EBUSY` after its
//! bound. Ending the admission at each slice instead let such a waiter read the condvar after
//! a legal destroy and reuse: `pthread_cond_destroy/2-1` failed 2 of 30 runs beside two CPU
//! hogs that way, and reading reused memory is worse than an error.) A cancellation request
//! is thus acted on within one slice. The slices also re-check a `CLOCK_REALTIME` deadline
//! against the realtime clock, so a clock step is noticed within a slice. The waits are
//! `extern "C-unwind"` (glibc's forced unwind passes through them; they hold nothing that
//! needs dropping when they call `pthread_testcancel`), and their Rust bodies run in an
//! `extern "C"` step function, so a panic there still aborts.

use core::ffi::c_int;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering::*};

use kslock::{Condvar, Left};

use crate::mutex::{self, kslock_view, PMutex};
use crate::time::{self, Clock};
use crate::{admit, forward, futex_wait, futex_wake, view};

/// `flags`: glibc serves this condvar (glibc's own process-shared bit).
const PSHARED: u32 = 1;
/// `flags`: timed waits use `CLOCK_MONOTONIC`.
const MONOTONIC: u32 = 2;
/// glibc's `PTHREAD_CANCEL_ENABLE`.
const PTHREAD_CANCEL_ENABLE: c_int = 0;
/// glibc's `PTHREAD_CANCEL_DISABLE`.
const PTHREAD_CANCEL_DISABLE: c_int = 1;
/// First cancellation slice (ns).
const SLICE_FIRST_NS: u64 = 2_000_000;
/// Longest cancellation slice (ns).
const SLICE_MAX_NS: u64 = 64_000_000;
/// Step result: call `pthread_testcancel` and step again.
const STEP_TESTCANCEL: c_int = -1;
/// Step result: glibc serves this wait.
const STEP_GLIBC: c_int = -2;

/// The preload's view of a `pthread_cond_t`.
#[repr(C)]
pub struct PCond {
    cv: Condvar,
    admit: AtomicU64,
    seq: AtomicU32,
    flags: AtomicU32,
    fb_waiters: AtomicU32,
    _unused: u32,
}

const _: () = {
    assert!(core::mem::size_of::<PCond>() == core::mem::size_of::<libc::pthread_cond_t>());
    assert!(core::mem::align_of::<PCond>() == core::mem::align_of::<libc::pthread_cond_t>());
    assert!(core::mem::offset_of!(PCond, flags) == 36);
};

/// The kslock view of `c`, or `None` when glibc serves it (or `c` is null).
///
/// # Safety
/// `c` is null or points to a valid `pthread_cond_t`.
unsafe fn route<'a>(c: *mut libc::pthread_cond_t) -> Option<&'a PCond> {
    // SAFETY: forwarded caller contract; PCond is pthread_cond_t's size and alignment.
    unsafe { view::<PCond, _>(c) }.filter(|p| p.flags.load(Relaxed) & PSHARED == 0)
}

extern "C" {
    fn pthread_condattr_getclock(
        a: *const libc::pthread_condattr_t,
        c: *mut libc::clockid_t,
    ) -> c_int;
    fn pthread_condattr_getpshared(a: *const libc::pthread_condattr_t, s: *mut c_int) -> c_int;
    fn pthread_setcancelstate(state: c_int, old: *mut c_int) -> c_int;
}

extern "C-unwind" {
    /// Acts on a pending cancellation request: glibc unwinds from here.
    fn pthread_testcancel();
}

/// Is cancellation enabled for this thread? (Two `pthread_setcancelstate` calls: neither is
/// a cancellation point.)
fn cancel_enabled() -> bool {
    let (mut old, mut ignored) = (0, 0);
    // SAFETY: valid out-pointers; restoring the state we read.
    unsafe {
        pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &mut old);
        pthread_setcancelstate(old, &mut ignored);
    }
    old == PTHREAD_CANCEL_ENABLE
}

/// `pthread_cond_init`: glibc for process-shared condvars, kslock otherwise.
///
/// # Safety
/// POSIX's contract.
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_init(
    c: *mut libc::pthread_cond_t,
    a: *const libc::pthread_condattr_t,
) -> c_int {
    let (mut clock, mut pshared) = (libc::CLOCK_REALTIME, libc::PTHREAD_PROCESS_PRIVATE);
    if !a.is_null() {
        // SAFETY: `a` is initialised (caller contract); glibc's getters.
        unsafe {
            pthread_condattr_getclock(a, &mut clock);
            pthread_condattr_getpshared(a, &mut pshared);
        }
    }
    if c.is_null() {
        return libc::EINVAL;
    }
    if pshared != libc::PTHREAD_PROCESS_PRIVATE {
        // SAFETY: caller contract. glibc sets bit 0 of `__wrefs` (our PSHARED).
        return unsafe { forward::cond_init(c, a) };
    }
    // SAFETY: caller contract: writable and unused; all-zero is a valid Condvar.
    unsafe { c.write_bytes(0, 1) };
    // SAFETY: just initialised.
    if let Some(p) = unsafe { view::<PCond, _>(c) } {
        if clock == libc::CLOCK_MONOTONIC {
            p.flags.store(MONOTONIC, Relaxed);
        }
    }
    0
}

/// `pthread_cond_destroy`: `EBUSY` while threads are blocked on the condvar. Threads already
/// woken may still be inside their wait, waiting for the mutex (which the caller may hold):
/// it waits until they have left the condvar, as glibc's does (module doc of `admit`).
///
/// # Safety
/// POSIX's contract.
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_destroy(c: *mut libc::pthread_cond_t) -> c_int {
    // SAFETY: caller contract.
    let Some(p) = (unsafe { route(c) }) else {
        // SAFETY: caller contract.
        return unsafe { forward::cond_destroy(c) };
    };
    // Acquire (both counts): pairs with the waiters' Release decrements, after their last
    // access to the condvar.
    let busy = || admit::any(&p.admit) || p.fb_waiters.load(Acquire) != 0;
    if !admit::drained(|| p.cv.has_waiters(), busy) {
        libc::EBUSY
    } else {
        0
    }
}

/// `pthread_cond_signal`: wakes the longest waiter, if any.
///
/// # Safety
/// POSIX's contract.
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_signal(c: *mut libc::pthread_cond_t) -> c_int {
    // SAFETY: caller contract.
    let Some(p) = (unsafe { route(c) }) else {
        // SAFETY: caller contract.
        return unsafe { forward::cond_signal(c) };
    };
    // SeqCst: the Dekker pair with a futex waiter (module doc) and the sliced waiters' check.
    p.seq.fetch_add(1, SeqCst);
    // A `CLOCK_REALTIME` condvar keeps the wake at the signal (crates/kslock-c README).
    let how = p.cv.notify_one_left(p.flags.load(Relaxed) & MONOTONIC != 0);
    if how.is_none() && p.fb_waiters.load(SeqCst) != 0 {
        futex_wake(&p.seq, 1);
    }
    if how == Some(Left::Requeued) {
        // The requeued waiter's admission, ended on its behalf: the last access to `c`.
        admit::leave(&p.admit);
    }
    0
}

/// `pthread_cond_broadcast`: wakes every waiter (kslock: one now, the rest requeued onto the
/// mutex).
///
/// # Safety
/// POSIX's contract.
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_broadcast(c: *mut libc::pthread_cond_t) -> c_int {
    // SAFETY: caller contract.
    let Some(p) = (unsafe { route(c) }) else {
        // SAFETY: caller contract.
        return unsafe { forward::cond_broadcast(c) };
    };
    // SeqCst: as in `pthread_cond_signal`.
    p.seq.fetch_add(1, SeqCst);
    let n = p.cv.notify_all();
    if p.fb_waiters.load(SeqCst) != 0 {
        futex_wake(&p.seq, i32::MAX);
    }
    // The requeued waiters' admissions: the last access to `c`.
    admit::release_requeued(&p.admit, n);
    0
}

/// Which glibc wait a glibc-served wait forwards to.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(C)]
enum Api {
    Wait,
    TimedWait,
    ClockWait,
}

/// A wait in progress, carried between steps. Plain data: a cancellation unwinds past it.
#[repr(C)]
struct WaitState {
    api: Api,
    clockid: libc::clockid_t,
    abstime: *const libc::timespec,
    started: bool,
    /// Holds an admission (`admit`): from its first slice until it leaves the condvar, across
    /// the slices' cancellation tests.
    admitted: bool,
    /// A slice has queued it on the condvar (a refusal after that is a spurious wakeup).
    queued: bool,
    slices: bool,
    slice_ns: u64,
    seq0: u32,
}

/// The wait, behind every `pthread_cond_*wait`: runs steps, and acts on cancellation
/// between them (module doc). Its locals need no drop, so glibc's forced unwind may pass.
///
/// # Safety
/// POSIX's contract of the wait functions.
unsafe fn wait(
    c: *mut libc::pthread_cond_t,
    m: *mut libc::pthread_mutex_t,
    api: Api,
    clockid: libc::clockid_t,
    abstime: *const libc::timespec,
) -> c_int {
    let mut st = WaitState {
        api,
        clockid,
        abstime,
        started: false,
        admitted: false,
        queued: false,
        slices: false,
        slice_ns: SLICE_FIRST_NS,
        seq0: 0,
    };
    loop {
        // SAFETY: caller contract.
        match unsafe { wait_step(c, m, &mut st) } {
            // SAFETY: this thread holds `m` and is no condvar waiter (the step's contract).
            STEP_TESTCANCEL => unsafe { testcancel(c, &st) },
            // SAFETY: caller contract.
            STEP_GLIBC => unsafe {
                return match api {
                    Api::Wait => forward::cond_wait(c, m),
                    Api::TimedWait => forward::cond_timedwait(c, m, abstime),
                    Api::ClockWait => forward::cond_clockwait(c, m, clockid, abstime),
                };
            },
            rc => return rc,
        }
    }
}

/// One step of a wait: an errno value (done, `m` held), `STEP_TESTCANCEL` (`m` held, not
/// waiting: test for cancellation and step again) or `STEP_GLIBC`. `extern "C"`: a panic in
/// here aborts instead of unwinding into C.
///
/// # Safety
/// POSIX's contract of the wait functions; `st` belongs to this wait.
unsafe extern "C" fn wait_step(
    c: *mut libc::pthread_cond_t,
    m: *mut libc::pthread_mutex_t,
    st: &mut WaitState,
) -> c_int {
    // SAFETY: caller contract.
    let km = unsafe { kslock_view(m) };
    // SAFETY: caller contract.
    let Some(p) = (unsafe { route(c) }) else {
        return if km.is_some() {
            libc::EINVAL
        } else {
            STEP_GLIBC
        };
    };
    // The deadline, if any: (clock, abstime).
    let timed = if st.api == Api::Wait {
        None
    } else {
        let clock = match st.api {
            Api::ClockWait => Clock::from_id(st.clockid),
            _ if p.flags.load(Relaxed) & MONOTONIC != 0 => Some(Clock::Monotonic),
            _ => Some(Clock::Realtime),
        };
        // SAFETY: caller contract: null or a valid timespec.
        match (clock, unsafe { st.abstime.as_ref() }) {
            (Some(c), Some(ts)) if time::is_valid(ts) => Some((c, *ts)),
            _ => return libc::EINVAL,
        }
    };
    let first = !st.started;
    if first {
        if m.is_null() {
            return libc::EINVAL;
        }
        st.started = true;
        st.slices = cancel_enabled();
        st.seq0 = p.seq.load(SeqCst);
        if st.slices {
            // The entry cancellation point: `m` is held and we are no waiter yet.
            return STEP_TESTCANCEL;
        }
    }
    if st.admitted {
        // Between slices: a notification since the wait began is a wakeup (the queue may
        // have been empty when it came). The admission has kept the condvar alive till here.
        if p.seq.load(SeqCst) != st.seq0 {
            end_admission(p, st);
            return 0;
        }
    } else {
        admit::enter(&p.admit);
        st.admitted = true;
    }
    let rc = match km {
        Some(pm) => kslock_slice(p, pm, st, timed),
        // SAFETY: caller contract.
        None => unsafe { futex_slice(p, m, st, timed) },
    };
    if rc != STEP_TESTCANCEL && st.admitted {
        // Over without leaving through `leave_or_stay` (`EPERM`, a mutex error); `m` is held.
        end_admission(p, st);
    }
    rc
}

/// Ends this wait's admission (`admit`): its last access to the condvar.
fn end_admission(p: &PCond, st: &mut WaitState) {
    st.admitted = false;
    admit::leave(&p.admit);
}

/// glibc's `struct _pthread_cleanup_buffer` (`pthread.h`): a cleanup handler registered with
/// `_pthread_cleanup_push`, which glibc's cancellation unwind runs as it leaves the frame
/// holding the buffer.
#[repr(C)]
struct CleanupBuffer {
    routine: unsafe extern "C" fn(*mut core::ffi::c_void),
    arg: *mut core::ffi::c_void,
    canceltype: c_int,
    prev: *mut CleanupBuffer,
}

extern "C" {
    fn _pthread_cleanup_push(
        buf: *mut CleanupBuffer,
        routine: unsafe extern "C" fn(*mut core::ffi::c_void),
        arg: *mut core::ffi::c_void,
    );
    fn _pthread_cleanup_pop(buf: *mut CleanupBuffer, execute: c_int);
}

/// The cleanup handler of a cancellation between slices: ends the admission.
///
/// # Safety
/// `arg` points to the `admit` word of a condvar this thread holds an admission of.
unsafe extern "C" fn leave_on_cancel(arg: *mut core::ffi::c_void) {
    // SAFETY: caller contract; the admission keeps the condvar alive.
    admit::leave(unsafe { &*(arg as *const AtomicU64) });
}

/// A cancellation point between slices (`m` held, not queued). A waiter keeps its admission
/// across it, so a destroy cannot complete while the wait may still resume; if cancellation
/// acts, glibc's unwind runs `leave_on_cancel` and the admission ends there.
///
/// # Safety
/// `c` is the wait's kslock-routed condvar when `st.admitted`.
unsafe fn testcancel(c: *mut libc::pthread_cond_t, st: &WaitState) {
    if !st.admitted {
        // SAFETY: forwarded contract.
        return unsafe { pthread_testcancel() };
    }
    // SAFETY: the admission keeps `c` alive and routed.
    let word = unsafe { &(*c.cast::<PCond>()).admit } as *const AtomicU64;
    let mut buf = core::mem::MaybeUninit::<CleanupBuffer>::uninit();
    // SAFETY: glibc's compatibility cleanup API; `buf` stays in this frame until popped.
    unsafe {
        _pthread_cleanup_push(buf.as_mut_ptr(), leave_on_cancel, word as *mut _);
        pthread_testcancel();
        _pthread_cleanup_pop(buf.as_mut_ptr(), 0);
    }
}

/// Decides, after a slice ended (`TimedOut`) or a wakeup, whether the wait is over, with the
/// waiter's last look at the condvar: `Some(rc)` (over: the admission ends here, or ended at a
/// requeue, module doc of `admit`) or `Some(STEP_TESTCANCEL)` / `None` (it goes on, still
/// admitted). Runs before the waiter waits for the mutex again, so a destroy need not wait
/// for that.
fn leave_or_stay(
    p: &PCond,
    st: &mut WaitState,
    timed: Option<(Clock, libc::timespec)>,
    how: Left,
) -> Option<c_int> {
    let verdict = if how == Left::TimedOut {
        after_slice(p, st, timed)
    } else {
        Some(0)
    };
    if verdict.is_some_and(|rc| rc != STEP_TESTCANCEL) {
        if how == Left::Requeued {
            // Its broadcaster ends the admission.
            st.admitted = false;
        } else {
            end_admission(p, st);
        }
    }
    verdict
}

/// The monotonic deadline of this slice: the earlier of the caller's and the slice's end.
fn slice_deadline(st: &WaitState, timed: Option<(Clock, libc::timespec)>) -> Option<u64> {
    let user = timed.map(|(c, ts)| time::mono_deadline_ns(c, &ts));
    let slice = st
        .slices
        .then(|| (Clock::Monotonic.now_ns() as u64).saturating_add(st.slice_ns));
    match (user, slice) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// After a slice ended without a wakeup: done (`ETIMEDOUT` or a spurious 0), or test for
/// cancellation (`STEP_TESTCANCEL`), or `None`: wait again.
fn after_slice(
    p: &PCond,
    st: &mut WaitState,
    timed: Option<(Clock, libc::timespec)>,
) -> Option<c_int> {
    if timed.is_some_and(|(c, ts)| time::has_passed(c, &ts)) {
        return Some(libc::ETIMEDOUT);
    }
    if p.seq.load(SeqCst) != st.seq0 {
        return Some(0);
    }
    if st.slices {
        st.slice_ns = (st.slice_ns * 2).min(SLICE_MAX_NS);
        return Some(STEP_TESTCANCEL);
    }
    None
}

/// Waits on kslock's condvar with a kslock mutex `pm` that this thread must hold. The
/// admission ends inside when the wait is over (`leave_or_stay`).
fn kslock_slice(
    p: &PCond,
    pm: &PMutex,
    st: &mut WaitState,
    timed: Option<(Clock, libc::timespec)>,
) -> c_int {
    if !pm.raw().is_owned_by_current_thread() {
        return libc::EPERM;
    }
    let depth = pm.take_depth();
    // Counted from before the condvar releases the mutex until it holds it again below.
    pm.cond_enter();
    let rc = loop {
        let deadline = slice_deadline(st, timed);
        let mut verdict = None;
        // Queue only if no signal came since the wait began (checked under the condvar's
        // lock, which a signal takes after bumping `seq`): otherwise a signal made while this
        // thread was between slices, unqueued, would find nobody and the wait would go on
        // (module doc). Declining reads as a timeout, which `after_slice` turns into 0.
        let seq0 = st.seq0;
        let stay = || p.seq.load(SeqCst) == seq0;
        // SAFETY: this thread holds the mutex (checked above); the RawMutex is repr(C) inside
        // the pthread_mutex_t, which outlives the wait.
        let waited = unsafe {
            p.cv.wait_raw_then(pm.raw(), deadline, stay, |how| {
                verdict = leave_or_stay(p, st, timed, how);
            })
        };
        if waited.is_none() {
            // Threads are blocked with another mutex (the admission ends in `wait_step`).
            break if st.queued { 0 } else { libc::EINVAL };
        }
        st.queued = true;
        if let Some(rc) = verdict {
            break rc;
        }
    };
    // Held again (`wait_raw_then` returns with it; `None` never released it).
    pm.cond_leave();
    pm.restore_depth(depth);
    rc
}

/// Waits on `seq` as a futex, with a glibc-served mutex `m` (module doc).
///
/// # Safety
/// `m` points to a valid glibc-served `pthread_mutex_t`.
unsafe fn futex_slice(
    p: &PCond,
    m: *mut libc::pthread_mutex_t,
    st: &mut WaitState,
    timed: Option<(Clock, libc::timespec)>,
) -> c_int {
    loop {
        // SeqCst: the Dekker pair with the signaller (module doc). `seq0` was read while
        // holding the mutex, so a signal after that point changes `seq` from `seq0`.
        p.fb_waiters.fetch_add(1, SeqCst);
        // SAFETY: caller contract. Keeps the waiter in glibc's count of the mutex's users.
        let (rc, counted) = unsafe { mutex::glibc_cond_release(m) };
        if rc != 0 {
            p.fb_waiters.fetch_sub(1, SeqCst);
            return rc;
        }
        if p.seq.load(SeqCst) == st.seq0 {
            futex_wait(&p.seq, st.seq0, slice_deadline(st, timed));
        }
        // Decide before relocking: the last looks at the condvar (`leave_or_stay`).
        let woken = p.seq.load(SeqCst) != st.seq0;
        p.fb_waiters.fetch_sub(1, SeqCst);
        let how = if woken {
            Left::Notified
        } else {
            Left::TimedOut
        };
        let verdict = leave_or_stay(p, st, timed, how);
        // SAFETY: caller contract. EOWNERDEAD and the like go to the caller, as glibc does.
        let rc = unsafe { mutex::glibc_cond_reacquire(m, counted) };
        if rc != 0 {
            return rc;
        }
        if let Some(rc) = verdict {
            return rc;
        }
    }
}

/// `pthread_cond_wait` (a cancellation point).
///
/// # Safety
/// POSIX's contract.
#[no_mangle]
pub unsafe extern "C-unwind" fn pthread_cond_wait(
    c: *mut libc::pthread_cond_t,
    m: *mut libc::pthread_mutex_t,
) -> c_int {
    // SAFETY: caller contract.
    unsafe { wait(c, m, Api::Wait, libc::CLOCK_REALTIME, core::ptr::null()) }
}

/// `pthread_cond_timedwait` (the condvar's clock; a cancellation point).
///
/// # Safety
/// POSIX's contract.
#[no_mangle]
pub unsafe extern "C-unwind" fn pthread_cond_timedwait(
    c: *mut libc::pthread_cond_t,
    m: *mut libc::pthread_mutex_t,
    abstime: *const libc::timespec,
) -> c_int {
    // SAFETY: caller contract.
    unsafe { wait(c, m, Api::TimedWait, libc::CLOCK_REALTIME, abstime) }
}

/// `pthread_cond_clockwait` (`clockid`: `CLOCK_REALTIME` or `CLOCK_MONOTONIC`; a
/// cancellation point).
///
/// # Safety
/// POSIX's contract.
#[no_mangle]
pub unsafe extern "C-unwind" fn pthread_cond_clockwait(
    c: *mut libc::pthread_cond_t,
    m: *mut libc::pthread_mutex_t,
    clockid: libc::clockid_t,
    abstime: *const libc::timespec,
) -> c_int {
    // SAFETY: caller contract.
    unsafe { wait(c, m, Api::ClockWait, clockid, abstime) }
}
