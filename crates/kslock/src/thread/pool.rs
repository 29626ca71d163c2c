//! The record pool (native build) and kslock's `fork()` handling.
//!
//! # Pool
//!
//! Records live in segments of [`SEG_LEN`] = 64: the first is a static, the others are
//! anonymous `mmap`s (zero-filled by the kernel, so a segment needs no stack temporary and no
//! `malloc`: a thread with a 16 KiB stack, or an allocator whose own mutexes are kslock locks,
//! can register; issue 8, defect 4). Segments are published in `TABLE` with a Release CAS and
//! read with Acquire in [`try_by_id`], so whoever reaches a record by id (from a lock word, an
//! OSQ word, a wake chain) sees it initialised, whatever ordering the word it came from had.
//! Segments are never unmapped: records are type-stable.
//!
//! Ids come from the free list (records of exited threads) or from the high-water mark. The
//! free list is a Treiber stack of ids with a 32-bit ABA tag in one `AtomicU64`; a record gets a
//! new generation when it is popped, so its owner word changes (module doc of [`super`]).
//!
//! # Thread exit
//!
//! A thread keeps its record until it is gone from the kernel, not merely until some destructor
//! ran: glibc runs a thread's C++/Rust thread-local destructors first, then its `pthread_key`
//! destructors (in rounds: a destructor that sets a key value makes glibc run another round,
//! up to `PTHREAD_DESTRUCTOR_ITERATIONS` = 4), and both may still take locks: jemalloc's
//! thread cleanup (a key destructor) takes its mutexes, which under the C preload are kslock
//! locks. A record released at the first destructor was registered again by such a lock and
//! then never returned: one record leaked per thread exit, until the pool's limit aborted the
//! program.
//!
//! So registration arms a `pthread_key` (`KEY`, its value the record id) whose destructor does
//! not free the record but pushes it on the **exit list** (`EXITED`) and leaves the thread's
//! hot words ([`hot`]) as they are: whatever the thread locks until it is really gone uses the
//! same record and owner word. A registration that comes late (in a key destructor, even in the
//! key's own round) arms the key again and so is still seen by a later round. [`register`],
//! when the free list is empty, walks the exit list and moves every record whose thread no
//! longer exists (`tgkill(pid, tid, 0)` fails with `ESRCH`: the kernel unhashed it, no code of
//! it can run) to the free list; a tid reused by a new thread of the process only delays that.
//! Ghost records (after `fork()`) on the exit list are dropped: they are never reused. Without a
//! key (the process used up `PTHREAD_KEYS_MAX`), a Rust thread-local destructor arms the exit
//! list instead. What remains unreturned: a thread whose *first* kslock lock comes after its last
//! destructor round (glibc's own clean-up after the key destructors), one record per such
//! exit.
//!
//! | static | meaning |
//! |--------|---------|
//! | `HWM` | ids handed out so far (SeqCst: the fork barrier must see every record in use) |
//! | `FREE` | `tag << 32 \| id` of the free-list top (0 = empty) |
//! | `EXITED` | id of the exit-list top (0 = empty); only pushed and taken whole, so no tag |
//! | `KEY` | the exit key, valid once `HOOKS` is 2 and `KEY_OK` is 1 |
//! | `EPOCH` | how many `fork()`s this process descends from |
//! | `FORKING` | `fork()`s of this process between their prepare and parent handlers (a count: glibc 2.36 runs the handlers of concurrent forks in parallel) |
//!
//! # fork()
//!
//! The child of a `fork()` has one thread, the forking one, and a copy of the memory of all of
//! them. kslock guarantees that in the child every lock that was free at the fork, and every
//! lock the forking thread held, works (issue 8, item 5):
//!
//! * **Ghosts.** The child handler bumps `EPOCH` and moves the forking thread's record into the
//!   new epoch; every other record of a live parent thread is now a *ghost*
//!   ([`is_dead`]). Ghosts are never on the free list (their threads never exit in the child), so
//!   no new thread gets one. A ghost may still be linked in a wait list or named as the head a
//!   wakeup went to: the locks take ghosts out of their lists when they meet them
//!   ([`crate::wait::WaitList::purge_ghosts`]) and never hand a lock to one.
//! * **Half-done slow paths.** A thread caught by the fork between two steps of a slow path
//!   (holding a wait_lock, queued in an OSQ) would leave that lock broken in the child. Every such
//!   multi-step section is bracketed by [`slow_enter`] / [`ThreadRec::slow_exit`], and the prepare
//!   handler (a fork barrier) raises `FORKING` and waits until no other thread is inside a section;
//!   a thread that wants to enter one while `FORKING` is non-zero waits on a futex until every fork
//!   in progress is done. `FORKING` counts forks rather than flagging one: glibc 2.36 does not
//!   serialise concurrent `fork()`s' handlers (two threads' prepare handlers overlap), and with a
//!   flag the first fork's parent handler reopened the sections while a second fork had yet to copy
//!   the process (its child then found a wait_lock held by a ghost: the chaos CI run of `fork.rs`,
//!   whose tests fork in parallel). Sections are short and never wait for a thread outside a
//!   section, so the barrier is bounded. Entry is one `swap` and one load (the Dekker pair with the
//!   handler's increment and loads, all SeqCst).
//! * **kslock's own state** is all atomics (this pool, the spin calibration, the rseq offset),
//!   with no lock a thread could hold across the fork.

use super::hot::{self, Me};
use super::{owner_word, ThreadRec, MAX_ID};
use crate::sync::AtomicU32;
use core::ptr;
use core::sync::atomic::{AtomicPtr, AtomicU64, Ordering::*};
use std::cell::Cell;

/// Records per pool segment: the first segment is a static, so the first 64 records need no
/// mapping.
pub(crate) const SEG_LEN: usize = 64;
/// Segments in the pool table: at most `SEG_LEN * SEGS` = 262144 records, within the 25 bits
/// an owner word gives a record id.
const SEGS: usize = 4096;
const _: () = assert!(SEG_LEN * SEGS < MAX_ID as usize);

type Seg = [ThreadRec; SEG_LEN];

static SEG0: Seg = {
    // Ids are index + 1 so that 0 can mean "none".
    let mut seg = [const { ThreadRec::new(0) }; SEG_LEN];
    let mut i = 0;
    while i < SEG_LEN {
        seg[i] = ThreadRec::new(i as u32 + 1);
        i += 1;
    }
    seg
};

/// Segment table; entry 0 stays null (`SEG0` is used directly).
static TABLE: [AtomicPtr<Seg>; SEGS] = [const { AtomicPtr::new(ptr::null_mut()) }; SEGS];
static HWM: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);
static FREE: AtomicU64 = AtomicU64::new(0);
static EPOCH: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);
static FORKING: AtomicU32 = AtomicU32::new(0);
/// 0: process hooks (fork handlers, exit key) not set up, 1: being set up, 2: set up.
static HOOKS: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);
/// The exit key (module doc, "Thread exit"); valid when `KEY_OK` is 1.
static KEY: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);
/// 1 when `KEY` was created, 0 when `pthread_key_create` failed (or not yet).
static KEY_OK: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);
/// Top of the exit list: records of threads that ran their exit destructor (0 = empty).
static EXITED: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);
/// Records not on the free list (for tests).
pub(crate) static LIVE: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);

thread_local! {
    static RELEASE: Releaser = const { Releaser(Cell::new(0)) };
}

/// Without an exit key: puts the record on the exit list when the thread's thread-locals are
/// destroyed (the thread keeps using it until it is gone).
struct Releaser(Cell<u32>);

impl Drop for Releaser {
    fn drop(&mut self) {
        let id = self.0.get();
        if id != 0 {
            push_exited(id);
        }
    }
}

/// The exit key's destructor (module doc, "Thread exit"): `value` is the record id.
extern "C" fn on_thread_exit(value: *mut libc::c_void) {
    push_exited(value as usize as u32);
}

/// The record with id `id`, if it exists (never for 0). See the module doc for why this is
/// the way to reach a record named by any word.
#[inline]
pub(crate) fn try_by_id(id: u32) -> Option<&'static ThreadRec> {
    let i = (id as usize).wrapping_sub(1);
    let (s, k) = (i / SEG_LEN, i % SEG_LEN);
    if s == 0 {
        return Some(&SEG0[k]);
    }
    let seg = TABLE.get(s)?.load(Acquire);
    // SAFETY: non-null entries point to leaked, initialised segments (published with Release
    // after initialisation; this load is Acquire), valid for 'static.
    (!seg.is_null()).then(|| unsafe { &(*seg)[k] })
}

/// The record with id `id`, which must have been handed out.
#[inline]
pub(crate) fn by_id(id: u32) -> &'static ThreadRec {
    match try_by_id(id) {
        Some(r) => r,
        None => panic!("kslock: thread record {id} named before it was created"),
    }
}

/// The calling thread's record, registering the thread on first use.
#[inline]
pub(crate) fn current() -> &'static ThreadRec {
    let rec = hot::me().rec;
    if !rec.is_null() {
        // SAFETY: the hot words only ever hold pointers to pool records, which live forever.
        return unsafe { &*rec };
    }
    register().0
}

/// The calling thread's owner word (module doc of [`super`]), registering it on first use.
#[inline]
pub(crate) fn current_word() -> u64 {
    let word = hot::word();
    if word != 0 {
        return word;
    }
    register().1
}

/// Records created so far (the high-water mark of ids).
pub(crate) fn records_created() -> u32 {
    HWM.load(Relaxed)
}

/// Has this process been created by `fork()` from a process that used kslock (so ghosts may
/// exist)?
#[inline]
pub(crate) fn forked() -> bool {
    EPOCH.load(Relaxed) != 0
}

/// Does `rec` belong to a thread that does not exist in this process (a `fork()` ghost)?
#[inline]
pub(crate) fn is_dead(rec: &ThreadRec) -> bool {
    rec.epoch.load(Relaxed) != EPOCH.load(Relaxed)
}

#[cold]
fn register() -> (&'static ThreadRec, u64) {
    let id = pop_free().or_else(reap_exited).unwrap_or_else(new_id);
    let rec = by_id(id);
    // A new generation: the word of the record's previous thread (maybe still in a lock it
    // never unlocked) must not match ours. Skip 0 so that no word is 0.
    let gen = match (rec.word.load(Relaxed) >> 32) as u32 {
        u32::MAX => 1,
        g => g + 1,
    };
    let word = owner_word(id, gen);
    rec.word.store(word, Relaxed);
    rec.epoch.store(EPOCH.load(Relaxed), Relaxed);
    rec.note_cpu();
    // Publish to TLS before anything that may allocate (the TLS destructor registration below,
    // pthread_atfork): an allocator whose mutexes are kslock locks re-enters here and must find
    // the thread registered.
    hot::set_me(Me {
        rec: rec as *const ThreadRec,
        word,
    });
    rec.tid.store(gettid(), Relaxed);
    LIVE.fetch_add(1, Relaxed);
    set_up_hooks();
    arm_exit(id);
    (rec, word)
}

/// Makes sure the record `id` reaches the exit list when the calling thread exits.
fn arm_exit(id: u32) {
    if KEY_OK.load(Relaxed) == 1 {
        // SAFETY: KEY is a live key (created once, never deleted); the value is an id, not a
        // pointer anyone dereferences. glibc may allocate a second-level block here for keys
        // past the first 32: the hot words are already published, so an allocator re-entering
        // kslock finds the thread registered.
        let r = unsafe {
            libc::pthread_setspecific(KEY.load(Relaxed), id as usize as *const libc::c_void)
        };
        if r == 0 {
            return;
        }
    }
    // If the thread is already tearing down its thread-locals, the record is never returned.
    let _ = RELEASE.try_with(|r| r.0.set(id));
}

fn gettid() -> u32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as u32 }
}

/// Does no thread with kernel id `tid` exist in this process any more?
fn is_gone(tid: u32) -> bool {
    // SAFETY: signal 0 only checks that the thread exists; nothing is sent.
    let r = unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), tid as libc::c_long, 0) };
    r == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

fn push_exited(id: u32) {
    let rec = by_id(id);
    let mut top = EXITED.load(Relaxed);
    loop {
        rec.free_next.store(top, Relaxed);
        // Release publishes `free_next` to whoever takes the list. A push needs no ABA tag: it
        // succeeds only if `top` is still the top, which is all it relies on.
        match EXITED.compare_exchange_weak(top, id, Release, Relaxed) {
            Ok(_) => return,
            Err(t) => top = t,
        }
    }
}

/// Moves the records on the exit list whose threads are gone to the free list (ghosts are
/// dropped), puts the others back, and pops one free record.
#[cold]
fn reap_exited() -> Option<u32> {
    // Acquire pairs with the pushes' Release (their `free_next`).
    let mut id = EXITED.swap(0, Acquire);
    while id != 0 {
        let rec = by_id(id);
        let next = rec.free_next.load(Relaxed);
        if is_dead(rec) {
            // A thread of the parent at the fork: never reused (module doc, "fork()").
        } else if is_gone(rec.tid.load(Relaxed)) {
            LIVE.fetch_sub(1, Relaxed);
            push_free(id);
        } else {
            push_exited(id);
        }
        id = next;
    }
    pop_free()
}

/// A fresh id from the high-water mark, its segment created if needed.
fn new_id() -> u32 {
    let id = HWM.fetch_add(1, SeqCst) + 1;
    let s = (id as usize - 1) / SEG_LEN;
    assert!(
        s < SEGS,
        "kslock: more than {} threads alive at once",
        SEGS * SEG_LEN
    );
    if s > 0 && TABLE[s].load(Acquire).is_null() {
        let seg = map_segment((s * SEG_LEN) as u32 + 1);
        if TABLE[s]
            .compare_exchange(ptr::null_mut(), seg, Release, Acquire)
            .is_err()
        {
            // Another thread published this segment first: ours was never visible.
            // SAFETY: `seg` is our own mapping of `size_of::<Seg>()` bytes, never shared.
            unsafe { libc::munmap(seg.cast(), core::mem::size_of::<Seg>()) };
        }
    }
    id
}

/// Maps a zero-filled segment and writes the ids of its records, starting at `first_id`.
fn map_segment(first_id: u32) -> *mut Seg {
    // SAFETY: an anonymous private mapping with no address hint has no preconditions.
    let p = unsafe {
        libc::mmap(
            ptr::null_mut(),
            core::mem::size_of::<Seg>(),
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert!(
        p != libc::MAP_FAILED,
        "kslock: cannot map memory for thread records"
    );
    let seg = p.cast::<Seg>();
    for k in 0..SEG_LEN {
        // SAFETY: the mapping is page-aligned (ThreadRec needs 128), zero-filled and ours; an
        // all-zero ThreadRec is valid (atomics, null pointers, Kind::Write = 0) except for its
        // id, which we write in place without building a record on the stack.
        unsafe {
            let rec = ptr::addr_of_mut!((*seg)[k]);
            ptr::addr_of_mut!((*rec).id).write(first_id + k as u32);
        }
    }
    seg
}

fn push_free(id: u32) {
    let rec = by_id(id);
    let mut top = FREE.load(Acquire);
    loop {
        rec.free_next.store(top as u32, Relaxed);
        let new = ((top >> 32) + 1) << 32 | id as u64;
        // Release publishes `free_next` (and the thread's last writes) to the popper.
        match FREE.compare_exchange_weak(top, new, Release, Acquire) {
            Ok(_) => return,
            Err(t) => top = t,
        }
    }
}

fn pop_free() -> Option<u32> {
    let mut top = FREE.load(Acquire);
    loop {
        let id = top as u32;
        if id == 0 {
            return None;
        }
        let next = by_id(id).free_next.load(Relaxed);
        let new = ((top >> 32) + 1) << 32 | next as u64;
        // Acquire pairs with the push's Release. The tag makes an ABA (pop, pop, push of the
        // same id between our load and CAS) fail the CAS.
        match FREE.compare_exchange_weak(top, new, Acquire, Acquire) {
            Ok(_) => return Some(id),
            Err(t) => top = t,
        }
    }
}

/// Enters a slow-path section (module doc, "fork()"); leave it with
/// [`ThreadRec::slow_exit`]. Nested entries never wait.
#[inline]
pub(crate) fn slow_enter(me: &ThreadRec) {
    let n = me.in_slow.load(Relaxed);
    if n != 0 {
        me.in_slow.store(n + 1, Relaxed);
        return;
    }
    loop {
        // SeqCst swap + SeqCst load: the Dekker pair with `prepare`'s store of FORKING and its
        // loads of `in_slow`: either the handler sees us inside or we see FORKING.
        me.in_slow.swap(1, SeqCst);
        if FORKING.load(SeqCst) == 0 {
            return;
        }
        me.in_slow.store(0, Release);
        loop {
            let n = FORKING.load(Acquire);
            if n == 0 {
                break;
            }
            let _ = crate::sys::futex_wait(&FORKING, n, None);
        }
    }
}

/// Sets up the fork handlers and the exit key, once per process.
fn set_up_hooks() {
    // Every thread returns only once the handlers are registered: a thread that returned while
    // another was still registering could be inside a slow section during a fork that runs no
    // barrier (a child then found a wait_lock held by a ghost).
    match HOOKS.compare_exchange(0, 1, Acquire, Acquire) {
        Ok(_) => {}
        Err(2) => return,
        Err(_) => {
            // Acquire pairs with the Release store of 2 below.
            while HOOKS.load(Acquire) != 2 {
                let _ = crate::sys::futex_wait(&HOOKS, 1, None);
            }
            return;
        }
    }
    let mut key: libc::pthread_key_t = 0;
    // SAFETY: `key` is a valid out-pointer and the destructor an `extern "C" fn` that lives as
    // long as the program. glibc's pthread_key_create does not allocate.
    if unsafe { libc::pthread_key_create(&mut key, Some(on_thread_exit)) } == 0 {
        KEY.store(key, Relaxed);
        KEY_OK.store(1, Relaxed);
    }
    // SAFETY: the three handlers are `extern "C" fn()` that stay valid for the program's life
    // (or are unregistered with the DSO by glibc's pthread_atfork wrapper).
    let r = unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) };
    assert_eq!(r, 0, "kslock: pthread_atfork failed");
    // Release publishes KEY and KEY_OK to every thread that sees 2.
    HOOKS.store(2, Release);
    crate::sys::futex_wake(&HOOKS, i32::MAX);
}

/// Fork barrier: wait until no other thread is inside a slow-path section.
extern "C" fn prepare() {
    // SeqCst: the Dekker pair with `slow_enter` (its swap of `in_slow` and load of FORKING).
    FORKING.fetch_add(1, SeqCst);
    let me = hot::me().rec;
    let hwm = HWM.load(SeqCst);
    for id in 1..=hwm {
        let Some(rec) = try_by_id(id) else { continue };
        if ptr::eq(rec, me) {
            continue;
        }
        while rec.in_slow.load(SeqCst) != 0 {
            std::thread::yield_now();
        }
    }
}

extern "C" fn parent() {
    // The last fork in progress reopens the sections.
    if FORKING.fetch_sub(1, SeqCst) == 1 {
        crate::sys::futex_wake(&FORKING, i32::MAX);
    }
}

/// The child: one thread, a new epoch; every other record is a ghost.
extern "C" fn child() {
    let epoch = EPOCH.load(Relaxed).wrapping_add(1);
    EPOCH.store(epoch, Relaxed);
    let me = hot::me().rec;
    // SAFETY: the hot words hold null or a pool record.
    let live = match unsafe { me.as_ref() } {
        Some(rec) => {
            rec.epoch.store(epoch, Relaxed);
            rec.tid.store(gettid(), Relaxed);
            1
        }
        None => 0,
    };
    LIVE.store(live, Relaxed);
    // Other forks in progress belong to parent threads, which are ghosts here.
    FORKING.store(0, SeqCst);
}

#[cfg(test)]
mod tests {
    use super::super::{current, owner_id};
    use super::*;
    use std::sync::Arc;

    #[test]
    fn records_are_stable_per_thread_and_reused_with_a_new_generation() {
        let a = current();
        assert!(ptr::eq(a, current()));
        assert!(ptr::eq(a, by_id(a.id())));
        assert_eq!(owner_id(current_word()), a.id());
        let (id1, w1) = std::thread::spawn(|| (current().id(), current_word()))
            .join()
            .unwrap();
        assert_ne!(id1, a.id());
        // Exited threads' records go back on the free list; whoever gets one gets a new
        // generation, so no later word equals an earlier one of the same record.
        let words: Vec<(u32, u64)> = (0..16)
            .map(|_| {
                std::thread::spawn(|| (current().id(), current_word()))
                    .join()
                    .unwrap()
            })
            .collect();
        for &(id, w) in &words {
            if id == id1 {
                assert_ne!(w, w1, "a reused record kept its owner word");
            }
        }
        assert!(LIVE.load(Relaxed) >= 1);
    }

    #[test]
    fn pool_grows_past_the_static_segment() {
        let barrier = Arc::new(std::sync::Barrier::new(SEG_LEN + 9));
        let hs: Vec<_> = (0..SEG_LEN + 8)
            .map(|_| {
                let b = barrier.clone();
                std::thread::spawn(move || {
                    let r = current();
                    b.wait();
                    (r.id(), r as *const ThreadRec as usize)
                })
            })
            .collect();
        barrier.wait();
        let mut ids: Vec<_> = hs.into_iter().map(|h| h.join().unwrap()).collect();
        for (id, addr) in &ids {
            assert_eq!(by_id(*id) as *const ThreadRec as usize, *addr);
            assert_eq!(addr % 128, 0);
        }
        ids.sort();
        ids.dedup_by_key(|x| x.0);
        assert_eq!(ids.len(), SEG_LEN + 8, "live threads never share a record");
    }

    #[test]
    fn unknown_ids_are_not_records() {
        assert!(try_by_id(0).is_none());
        assert!(try_by_id((SEGS * SEG_LEN) as u32 + 1).is_none());
    }
}
