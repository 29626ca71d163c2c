use super::mode::decide;
use super::*;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::Arc;
use std::time::{Duration, Instant};

const PHASE: u32 = 3 << 3;

#[test]
fn size_and_zero_init() {
    assert_eq!(core::mem::size_of::<RawHybridRwSem>(), 48);
    let l = RawHybridRwSem::new();
    assert!(!l.is_locked() && !l.is_write_locked() && !l.reads_exclusive());
}

/// The mode check starts epochs (their start in `m`'s embedder word) and restarts the
/// operation counts at each (no snapshot: the counts are the epoch's own). Stops right after
/// the second epoch change it sees: the counts then hold at most the pair of operations in
/// which the change happened, against hundreds without the restart.
#[test]
fn epochs_begin_and_restart_the_operation_counts() {
    let l = RawHybridRwSem::new();
    let give_up = Instant::now() + Duration::from_secs(10);
    let (mut n, mut changes, mut start) = (0u64, 0, 0);
    while changes < 2 {
        assert!(Instant::now() < give_up, "no epoch change in 10 s");
        l.read();
        // SAFETY: held.
        unsafe { l.read_unlock() };
        l.write();
        // SAFETY: held.
        unsafe { l.write_unlock() };
        n += 2;
        let s = l.m.embedder_word().load(Relaxed);
        if s != start {
            start = s;
            changes += 1;
        }
    }
    let counted = (l.count.load(Relaxed) >> OPS_SHIFT) + u64::from(l.xops.load(Relaxed));
    assert!(
        n > 256 && counted <= 2,
        "{counted} of {n} operations counted since the epoch began"
    );
}

/// The duel: probes after 4 epochs, keeps a probe that is faster by more than 1/8, reverts and
/// backs off from one that is not, restarts on unmeasurable epochs.
#[test]
fn the_duel_keeps_the_faster_mode() {
    let mut a = 0;
    for _ in 0..3 {
        a = decide(a, Some(800));
        assert_eq!(a & (EXCL | PHASE), 0, "still shared, normal");
    }
    a = decide(a, Some(800));
    assert_eq!(a & EXCL, EXCL, "the 4th epoch starts a probe");
    a = decide(a, Some(100)); // settling: not compared
    a = decide(a, Some(400)); // measured: 2x faster
    assert_eq!(a & (EXCL | PHASE), EXCL, "kept, back to normal");
    // Now exclusive at 400: a probe of shared at 380 is not 1/8 faster.
    for _ in 0..4 {
        a = decide(a, Some(400));
    }
    assert_eq!(a & EXCL, 0, "probing shared");
    a = decide(a, Some(400));
    a = decide(a, Some(380));
    assert_eq!(a & EXCL, EXCL, "lost: back to exclusive");
    assert_eq!((a >> 5) & 7, 1, "backoff 1");
    a = decide(a, Some(400)); // settling back
    for _ in 0..7 {
        a = decide(a, Some(400));
        assert_eq!(a & EXCL, EXCL, "the next probe waits 8 epochs");
    }
    // A 2x change of the rate resets the backoff: the probe comes at once (epochs >= 4).
    a = decide(a, Some(900));
    assert_eq!(a & EXCL, 0, "workload changed: probe now");
    // Unmeasurable epochs change nothing.
    assert_eq!(decide(a, None), a);
}

struct Checked {
    l: RawHybridRwSem,
    readers: AtomicUsize,
    writer: AtomicBool,
    bad: AtomicUsize,
    writes: AtomicU64,
}

impl Checked {
    fn read_section(&self) {
        self.readers.fetch_add(1, SeqCst);
        if self.writer.load(SeqCst) {
            self.bad.fetch_add(1, SeqCst);
        }
        self.readers.fetch_sub(1, SeqCst);
    }
    fn write_section(&self) {
        if self.writer.swap(true, SeqCst) || self.readers.load(SeqCst) != 0 {
            self.bad.fetch_add(1, SeqCst);
        }
        self.writes.fetch_add(1, Relaxed);
        self.writer.store(false, SeqCst);
    }
}

/// Every entry point under stress, in both modes and while the mode flips: exclusion holds,
/// every wait ends, and the lock ends free.
#[test]
fn stress_every_path_while_the_mode_flips() {
    let c = Arc::new(Checked {
        l: RawHybridRwSem::new(),
        readers: AtomicUsize::new(0),
        writer: AtomicBool::new(false),
        bad: AtomicUsize::new(0),
        writes: AtomicU64::new(0),
    });
    let stop = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicU64::new(0));
    let mut hs = vec![];
    for t in 0..4u64 {
        let (c, stop, reads) = (c.clone(), stop.clone(), reads.clone());
        hs.push(std::thread::spawn(move || {
            let mut i = t;
            while !stop.load(Relaxed) {
                i += 1;
                let got = match i % 9 {
                    0 => c.l.try_read_for(Duration::from_micros(50)),
                    1 => c.l.try_read(),
                    2 => {
                        c.l.read_recursive();
                        true
                    }
                    3 => {
                        c.l.read_recursive_until(Some(crate::sys::now_ns() + 50_000))
                    }
                    4 => {
                        c.l.read_behind_waiters();
                        true
                    }
                    5 => c.l.try_read_behind_waiters(),
                    6 => c.l.try_read_behind_waiters_for(Duration::from_micros(50)),
                    _ => {
                        c.l.read();
                        true
                    }
                };
                if got {
                    c.read_section();
                    reads.fetch_add(1, Relaxed);
                    // SAFETY: held by this thread.
                    unsafe {
                        if i % 7 == 0 {
                            c.l.read_unlock_fair()
                        } else {
                            c.l.read_unlock()
                        }
                    };
                }
            }
        }));
    }
    for t in 0..3u64 {
        let (c, stop) = (c.clone(), stop.clone());
        hs.push(std::thread::spawn(move || {
            let mut i = t;
            while !stop.load(Relaxed) {
                i += 1;
                let got = match i % 6 {
                    0 => c.l.try_write_for(Duration::from_micros(50)),
                    1 => c.l.try_write(),
                    2 => c.l.try_write_spin(),
                    _ => {
                        c.l.write();
                        true
                    }
                };
                if !got {
                    continue;
                }
                c.write_section();
                // SAFETY: the write lock is held by this thread.
                unsafe {
                    match i % 4 {
                        0 => {
                            c.l.downgrade();
                            c.read_section();
                            c.l.read_unlock();
                        }
                        1 => c.l.write_unlock_fair(),
                        _ => c.l.write_unlock(),
                    }
                }
            }
        }));
    }
    {
        let (c, stop, reads) = (c.clone(), stop.clone(), reads.clone());
        hs.push(std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Relaxed) {
                i += 1;
                let got = match i % 3 {
                    0 => c.l.try_upgradable_read(),
                    1 => c.l.upgradable_read_until(crate::sys::now_ns() + 50_000),
                    _ => {
                        c.l.upgradable_read();
                        true
                    }
                };
                if !got {
                    continue;
                }
                c.read_section();
                reads.fetch_add(1, Relaxed);
                // SAFETY: the upgradable lock is held by this thread.
                unsafe {
                    match i % 5 {
                        0 => {
                            c.l.upgrade();
                            c.write_section();
                            c.l.downgrade_to_upgradable();
                            c.read_section();
                            c.l.upgradable_unlock();
                        }
                        1 => {
                            if c.l.try_upgrade_by(crate::sys::now_ns() + 50_000) {
                                c.write_section();
                                c.l.write_unlock();
                            } else {
                                c.l.upgradable_unlock_fair();
                            }
                        }
                        2 => {
                            c.l.downgrade_upgradable();
                            c.read_section();
                            c.l.read_unlock();
                        }
                        3 => {
                            // A shared read beside this thread's own upgradable lock.
                            c.l.read();
                            c.read_section();
                            c.l.read_unlock();
                            c.l.upgradable_unlock();
                        }
                        _ => c.l.upgradable_unlock(),
                    }
                }
            }
        }));
    }
    // The mode: pinned each way for a while, then flipping every 100 µs.
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_millis(900) {
        let ms = t0.elapsed().as_millis();
        let excl = if ms < 300 {
            false
        } else if ms < 600 {
            true
        } else {
            ms % 2 == 0
        };
        c.l.set_exclusive_reads(excl);
        std::thread::sleep(Duration::from_micros(100));
    }
    stop.store(true, Relaxed);
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(c.bad.load(SeqCst), 0, "exclusion violated");
    assert!(c.writes.load(Relaxed) > 0 && reads.load(Relaxed) > 0);
    assert!(!c.l.is_locked() && !c.l.has_waiters());
    assert_eq!(readers(c.l.count.load(SeqCst)), 0);
}

/// A recursive read by a thread that holds a read lock joins while a writer waits for that
/// very read lock (no deadlock), in both modes.
#[test]
fn recursive_read_joins_a_draining_writer() {
    for excl in [false, true] {
        let l = Arc::new(RawHybridRwSem::new());
        l.set_exclusive_reads(excl);
        l.read();
        let w = {
            let l = l.clone();
            std::thread::spawn(move || {
                l.write();
                // SAFETY: held.
                unsafe { l.write_unlock() };
            })
        };
        // In the shared mode, wait until the writer drains (in the exclusive mode it queues
        // on `m` behind our read).
        while !excl && l.count.load(SeqCst) & WANT == 0 {
            std::thread::yield_now();
        }
        l.read_recursive();
        // SAFETY: both reads are held by this thread.
        unsafe {
            l.read_unlock();
            l.read_unlock();
        }
        w.join().unwrap();
        assert!(!l.is_locked());
    }
}

/// Timed waits give up against a writer and against readers, and leave the lock usable.
#[test]
fn timed_waits_give_up_and_leave_the_lock_consistent() {
    let l = Arc::new(RawHybridRwSem::new());
    l.write();
    let l2 = l.clone();
    std::thread::spawn(move || {
        assert!(!l2.try_read_for(Duration::from_millis(5)));
        assert!(!l2.try_write_for(Duration::from_millis(5)));
        assert!(!l2.try_read());
        assert!(!l2.try_write());
    })
    .join()
    .unwrap();
    // SAFETY: held.
    unsafe { l.write_unlock() };
    // A reader holds: a timed writer drains in vain and gives up; readers then still join.
    l.read();
    let l2 = l.clone();
    std::thread::spawn(move || {
        assert!(!l2.try_write_for(Duration::from_millis(5)));
        assert!(l2.try_read());
        // SAFETY: held.
        unsafe { l2.read_unlock() };
    })
    .join()
    .unwrap();
    // SAFETY: held.
    unsafe { l.read_unlock() };
    assert!(!l.is_locked());
    assert_eq!(l.count.load(SeqCst) & (WANT | LOCKED | READERS), 0);
    assert_eq!(l.aux.load(SeqCst) & DRAIN_SLEEP, 0);
}

/// A writer that has to sleep until the readers leave is woken by the last one.
#[test]
fn the_last_reader_wakes_a_sleeping_writer() {
    let l = Arc::new(RawHybridRwSem::new());
    l.read();
    l.read();
    let l2 = l.clone();
    let w = std::thread::spawn(move || {
        l2.write();
        // SAFETY: held.
        unsafe { l2.write_unlock() };
    });
    // Long enough for the writer's poll (the spin cap) to end in a sleep.
    let t0 = Instant::now();
    while l.aux.load(SeqCst) & DRAIN_SLEEP == 0 {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the writer never slept"
        );
        std::thread::yield_now();
    }
    // SAFETY: both held.
    unsafe {
        l.read_unlock();
        l.read_unlock();
    }
    w.join().unwrap();
    assert!(!l.is_locked());
}

#[test]
#[should_panic(expected = "not read-locked")]
fn read_unlock_of_unlocked_panics() {
    let l = RawHybridRwSem::new();
    // SAFETY: deliberately violated.
    unsafe { l.read_unlock() };
}

#[test]
#[should_panic(expected = "does not hold its write lock")]
fn write_unlock_of_read_locked_panics() {
    let l = RawHybridRwSem::new();
    l.read();
    // SAFETY: deliberately violated.
    unsafe { l.write_unlock() };
}

#[test]
fn downgrade_lets_readers_in_and_keeps_writers_out() {
    let l = Arc::new(RawHybridRwSem::new());
    l.write();
    // SAFETY: held.
    unsafe { l.downgrade() };
    let l2 = l.clone();
    std::thread::spawn(move || {
        assert!(l2.try_read());
        // SAFETY: held.
        unsafe { l2.read_unlock() };
        assert!(!l2.try_write());
    })
    .join()
    .unwrap();
    // SAFETY: the downgraded read lock.
    unsafe { l.read_unlock() };
    assert!(!l.is_locked());
}

/// The upgradable lock lets shared readers in, keeps writers and other upgradable holders
/// out, and its upgrade waits for the readers (a timed one gives up and keeps the lock).
#[test]
fn upgradable_reads_and_upgrades() {
    for excl in [false, true] {
        let l = Arc::new(RawHybridRwSem::new());
        l.set_exclusive_reads(excl);
        l.upgradable_read();
        let l2 = l.clone();
        std::thread::spawn(move || {
            // A reader gets in whatever the mode; a writer and a second upgradable do not.
            l2.read();
            // SAFETY: held.
            unsafe { l2.read_unlock() };
            assert!(!l2.try_write());
            assert!(!l2.try_upgradable_read());
            assert!(!l2.try_write_for(Duration::from_millis(2)));
            // Hold a read while the owner tries to upgrade.
            l2.read();
        })
        .join()
        .unwrap();
        // SAFETY: this thread holds the upgradable lock throughout.
        unsafe {
            assert!(!l.try_upgrade(), "a reader holds");
            assert!(!l.try_upgrade_by(crate::sys::now_ns() + 2_000_000));
            assert_eq!(l.count.load(SeqCst) & (UPG | WANT), UPG, "still upgradable");
            // The other thread's read (it exited holding it) is released on its behalf.
            let old = l.count.fetch_sub(READER, SeqCst);
            assert_eq!(readers(old), 1);
            assert!(l.try_upgrade());
            assert!(l.is_write_locked());
            l.downgrade_to_upgradable();
            assert!(l.try_read(), "readers join an upgradable lock");
            l.read_unlock();
            l.downgrade_upgradable();
            l.read_unlock();
        }
        assert!(!l.is_locked());
        assert_eq!(l.count.load(SeqCst) & 0xFFFF_FFFF, 0);
    }
}

#[test]
#[should_panic(expected = "does not hold its upgradable lock")]
fn upgrade_without_the_upgradable_lock_panics() {
    let l = RawHybridRwSem::new();
    l.read();
    // SAFETY: deliberately violated.
    unsafe { l.upgrade() };
}

/// A nested read by a thread that reads through `m` reads shared (it does not wait for its
/// own hold of `m`), and the two unlocks release both holds.
#[test]
fn a_nested_read_in_the_exclusive_mode_reads_shared() {
    let l = RawHybridRwSem::new();
    l.set_exclusive_reads(true);
    l.read();
    assert!(
        l.m.is_owned_by_current_thread(),
        "the first read went through m"
    );
    l.read();
    assert_eq!(readers(l.count.load(SeqCst)), 1, "the nested one is shared");
    // SAFETY: both held.
    unsafe {
        l.read_unlock();
        l.read_unlock();
    }
    assert!(!l.is_locked());
}

/// A read behind waiters does not join while anybody holds or waits for `m` (here: a read
/// through `m` and a writer queued behind it): its `try_` and timed forms fail, the untimed
/// one queues; a spinning write gives up on a reader that stays, within its budget.
#[test]
fn reads_behind_waiters_and_the_spinning_write() {
    let l = Arc::new(RawHybridRwSem::new());
    assert!(l.try_write_spin(), "a free lock");
    // SAFETY: held.
    unsafe { l.write_unlock() };
    l.set_exclusive_reads(true);
    l.read(); // through `m`
    let l2 = l.clone();
    std::thread::spawn(move || {
        assert!(!l2.try_read_behind_waiters(), "m is held");
        assert!(l2.try_read(), "a plain shared read still joins");
        // SAFETY: the shared read just taken.
        unsafe { l2.read_unlock() };
    })
    .join()
    .unwrap();
    let w = {
        let l = l.clone();
        std::thread::spawn(move || {
            l.write();
            // SAFETY: held.
            unsafe { l.write_unlock() };
        })
    };
    while !l.m.has_waiters() {
        std::thread::yield_now();
    }
    // While this thread holds `m` and the writer waits for it, a timed read behind waiters
    // gives up; an untimed one queues and gets in once both are done.
    let l2 = l.clone();
    std::thread::spawn(move || assert!(!l2.try_read_behind_waiters_for(Duration::from_millis(2))))
        .join()
        .unwrap();
    let r = {
        let l = l.clone();
        std::thread::spawn(move || {
            l.read_behind_waiters();
            // SAFETY: held.
            unsafe { l.read_unlock() };
        })
    };
    // SAFETY: the read through `m`.
    unsafe { l.read_unlock() };
    w.join().unwrap();
    r.join().unwrap();
    // A shared reader that stays: the spinning write gives up (it never sleeps) and leaves
    // the lock as it was.
    l.set_exclusive_reads(false);
    l.read();
    let l2 = l.clone();
    std::thread::spawn(move || assert!(!l2.try_write_spin()))
        .join()
        .unwrap();
    assert_eq!(l.count.load(SeqCst) & (WANT | LOCKED), 0);
    // SAFETY: held.
    unsafe { l.read_unlock() };
    assert!(!l.is_locked());
}
