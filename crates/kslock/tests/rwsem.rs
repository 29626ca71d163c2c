//! RawRwSem / RwSem: the same suite against every seed policy (plus a short-handoff policy),
//! then misuse and API tests on the default.
//!
//! Heavy tests are serialised through one process-wide mutex: the development machine has 2
//! CPUs shared with other work, and the point of the stress tests is "more threads than CPUs",
//! not "more tests than CPUs".
#![cfg(not(kslock_loom))]

use kslock::policy::*;
use kslock::{RawRwSem, RawRwSemWith, RwSem, RwSemWith};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Arc, Barrier, Mutex as StdMutex, MutexGuard};
use std::time::{Duration, Instant};

mod common;

/// Default policy with a 100 µs handoff timeout: HANDOFF paths run all the time.
#[derive(Debug, Default)]
pub struct FastHandoff;
impl RwSemPolicy for FastHandoff {
    const OSQ_LAYOUT: OsqLayout = OsqLayout::SplitIdLine;
    const READER_SPIN: ReaderSpin = ReaderSpin::Off;
    const WAKE: WakePolicy = WakePolicy::Deferred;
    const READER_OWNED_SPIN: ReaderOwnedSpin = ReaderOwnedSpin::Bounded;
    const HANDOFF_NS: u64 = 100_000;
}

/// Every starvation test must see each acquisition within this bound (HANDOFF ≈ 4 ms, plus
/// scheduling slop on an oversubscribed 2-CPU VM shared with other builds).
const STARVATION_BOUND: Duration = Duration::from_millis(250);

static HEAVY: StdMutex<()> = StdMutex::new(());
fn heavy() -> MutexGuard<'static, ()> {
    HEAVY.lock().unwrap_or_else(|e| e.into_inner())
}

fn busy(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "timed out waiting: {what}"
        );
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Waits (bounded) until a queued writer keeps the lock reserved against new readers. Until
/// then new readers may overtake it (module doc of the rwsem, "Readers and sleeping writers"):
/// the head writer raises HANDOFF whenever it is awake and drops it before it sleeps, at most
/// twice per wait, then keeps it. "Keeps" = every `try_read` fails for 20 ms, longer than those
/// two drops with their 0.5 ms sleeps plus the longest injected delay (0.5 ms).
fn wait_for_reservation<P: RwSemPolicy>(l: &RawRwSemWith<P>) {
    let mut since = None;
    wait_until(
        "the writer keeps the lock reserved against new readers",
        || {
            if l.try_read() {
                // SAFETY: just taken.
                unsafe { l.read_unlock() };
                since = None;
                return false;
            }
            since.get_or_insert_with(Instant::now).elapsed() >= Duration::from_millis(20)
        },
    );
}

/// A lock, data written only under the write lock, and an exclusion witness:
/// `inside` > 0 = readers inside, `WRITER_IN` = a writer inside.
struct Shared<P: RwSemPolicy> {
    lock: RawRwSemWith<P>,
    data: UnsafeCell<(u64, u64)>,
    inside: AtomicIsize,
    violations: AtomicUsize,
}
// SAFETY: `data` is only accessed under `lock` (read: shared, write: exclusive).
unsafe impl<P: RwSemPolicy> Sync for Shared<P> {}

const WRITER_IN: isize = -1_000_000;

impl<P: RwSemPolicy> Shared<P> {
    fn new() -> Self {
        Shared {
            lock: RawRwSemWith::new(),
            data: UnsafeCell::new((0, 0)),
            inside: AtomicIsize::new(0),
            violations: AtomicUsize::new(0),
        }
    }
    /// Called with a read lock held.
    fn reader_check(&self) {
        if self.inside.fetch_add(1, SeqCst) < 0 {
            self.violations.fetch_add(1, SeqCst);
        }
        // SAFETY: read lock held: no writer mutates `data`.
        let (a, b) = unsafe { *self.data.get() };
        if a != b {
            self.violations.fetch_add(1, SeqCst);
        }
        self.inside.fetch_sub(1, SeqCst);
    }
    /// Called with the write lock held.
    fn writer_update(&self) {
        if self
            .inside
            .compare_exchange(0, WRITER_IN, SeqCst, SeqCst)
            .is_err()
        {
            self.violations.fetch_add(1, SeqCst);
            return;
        }
        // SAFETY: write lock held: exclusive access.
        unsafe {
            let d = &mut *self.data.get();
            d.0 += 1;
            std::hint::spin_loop();
            d.1 += 1;
        }
        self.inside.fetch_sub(WRITER_IN, SeqCst);
    }
}

fn basic<P: RwSemPolicy>() {
    let r = RawRwSemWith::<P>::new();
    assert!(!r.is_locked());
    r.read();
    assert!(r.try_read(), "a second reader joins when nobody waits");
    assert!(!r.try_write());
    assert!(!r.try_write_for(Duration::from_millis(2)));
    assert!(!r.has_waiters(), "a timed-out writer leaves no trace");
    // SAFETY: two read locks held.
    unsafe {
        r.read_unlock();
        r.read_unlock();
    }
    assert!(!r.is_locked());
    assert!(r.try_write());
    assert!(r.is_write_locked());
    assert!(!r.try_read());
    assert!(!r.try_read_recursive());
    assert!(!r.try_read_for(Duration::from_millis(2)));
    assert!(!r.has_waiters(), "a timed-out reader leaves no trace");
    // SAFETY: write lock held by this thread.
    unsafe { r.downgrade() };
    assert!(!r.is_write_locked());
    assert!(r.try_read());
    assert!(!r.try_write_spin());
    // SAFETY: two read locks held.
    unsafe {
        r.read_unlock();
        r.read_unlock();
    }
    assert!(r.try_write_spin(), "free lock");
    // SAFETY: held.
    unsafe { r.write_unlock() };
    r.write();
    // SAFETY: held.
    unsafe { r.write_unlock() };
    assert!(!r.is_locked());

    // lock_api surface.
    let l = RwSemWith::<P, Vec<u32>>::new(vec![1]);
    l.write().push(2);
    {
        let g = l.write();
        let g = lock_api::RwLockWriteGuard::downgrade(g);
        assert_eq!(*g, [1, 2]);
        let g2 = l.read_recursive();
        assert_eq!(g2.len(), 2);
    }
    assert!(l.try_write_for(Duration::from_millis(1)).is_some());
    assert!(l
        .try_read_until(Instant::now() + Duration::from_millis(1))
        .is_some());
    assert!(!l.is_locked());
}

fn stress<P: RwSemPolicy>(dur: Duration) {
    let _g = heavy();
    let s = Arc::new(Shared::<P>::new());
    let stop = Arc::new(AtomicBool::new(false));
    let writes = Arc::new(AtomicU64::new(0));
    let reads = Arc::new(AtomicU64::new(0));
    let mut hs = vec![];
    for t in 0..4 {
        let (s, stop, reads) = (s.clone(), stop.clone(), reads.clone());
        hs.push(std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Relaxed) {
                i += 1;
                let got = match (i + t) % 10 {
                    0 => s.lock.try_read_for(Duration::from_micros(50)),
                    1 => s.lock.try_read(),
                    2 => {
                        s.lock.read_recursive();
                        true
                    }
                    3 => s
                        .lock
                        .try_read_behind_waiters_for(Duration::from_micros(50)),
                    4 => s.lock.try_read_behind_waiters(),
                    5 => {
                        s.lock.read_behind_waiters();
                        true
                    }
                    _ => {
                        s.lock.read();
                        true
                    }
                };
                if got {
                    s.reader_check();
                    reads.fetch_add(1, Relaxed);
                    // SAFETY: read lock held.
                    unsafe { s.lock.read_unlock() };
                }
            }
        }));
    }
    for t in 0..3 {
        let (s, stop, writes, reads) = (s.clone(), stop.clone(), writes.clone(), reads.clone());
        hs.push(std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Relaxed) {
                i += 1;
                let got = match (i + t) % 8 {
                    0 => s.lock.try_write_for(Duration::from_micros(50)),
                    1 => s.lock.try_write_spin(),
                    2 => s.lock.try_write(),
                    _ => {
                        s.lock.write();
                        true
                    }
                };
                if !got {
                    continue;
                }
                s.writer_update();
                writes.fetch_add(1, Relaxed);
                if i % 5 == 0 {
                    // SAFETY: write lock held by this thread.
                    unsafe { s.lock.downgrade() };
                    s.reader_check();
                    reads.fetch_add(1, Relaxed);
                    // SAFETY: the downgraded read lock is held.
                    unsafe { s.lock.read_unlock() };
                } else {
                    // SAFETY: write lock held by this thread.
                    unsafe { s.lock.write_unlock() };
                }
            }
        }));
    }
    std::thread::sleep(dur);
    stop.store(true, Relaxed);
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(s.violations.load(SeqCst), 0, "exclusion violated");
    // SAFETY: all threads joined.
    let (a, b) = unsafe { *s.data.get() };
    assert_eq!(a, b);
    assert_eq!(a, writes.load(Relaxed), "every write counted exactly once");
    assert!(writes.load(Relaxed) > 0 && reads.load(Relaxed) > 0);
    assert!(!s.lock.is_locked() && !s.lock.has_waiters(), "{:?}", s.lock);
    eprintln!(
        "stress {}: {} writes, {} reads",
        core::any::type_name::<P>(),
        a,
        reads.load(Relaxed)
    );
}

/// A continuous stream of overlapping readers must not starve a writer.
fn writer_not_starved<P: RwSemPolicy>() {
    let _g = heavy();
    let l = Arc::new(RawRwSemWith::<P>::new());
    let stop = Arc::new(AtomicBool::new(false));
    let hs: Vec<_> = (0..4)
        .map(|_| {
            let (l, stop) = (l.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Relaxed) {
                    l.read();
                    busy(Duration::from_micros(30));
                    // SAFETY: held.
                    unsafe { l.read_unlock() };
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(10));
    let mut worst = Duration::ZERO;
    for _ in 0..15 {
        let t = Instant::now();
        l.write();
        worst = worst.max(t.elapsed());
        busy(Duration::from_micros(20));
        // SAFETY: held.
        unsafe { l.write_unlock() };
        std::thread::sleep(Duration::from_millis(2));
    }
    stop.store(true, Relaxed);
    for h in hs {
        h.join().unwrap();
    }
    eprintln!(
        "writer vs reader stream {}: worst {:?}",
        core::any::type_name::<P>(),
        worst
    );
    assert!(worst < STARVATION_BOUND, "writer waited {worst:?}");
    assert!(!l.is_locked() && !l.has_waiters());
}

/// A continuous stream of writers must not starve a reader.
fn reader_not_starved<P: RwSemPolicy>() {
    let _g = heavy();
    let l = Arc::new(RawRwSemWith::<P>::new());
    let stop = Arc::new(AtomicBool::new(false));
    let hs: Vec<_> = (0..3)
        .map(|_| {
            let (l, stop) = (l.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Relaxed) {
                    l.write();
                    busy(Duration::from_micros(30));
                    // SAFETY: held.
                    unsafe { l.write_unlock() };
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(10));
    let mut worst = Duration::ZERO;
    for _ in 0..15 {
        let t = Instant::now();
        l.read();
        worst = worst.max(t.elapsed());
        // SAFETY: held.
        unsafe { l.read_unlock() };
        std::thread::sleep(Duration::from_millis(2));
    }
    stop.store(true, Relaxed);
    for h in hs {
        h.join().unwrap();
    }
    eprintln!(
        "reader vs writer stream {}: worst {:?}",
        core::any::type_name::<P>(),
        worst
    );
    assert!(worst < STARVATION_BOUND, "reader waited {worst:?}");
    assert!(!l.is_locked() && !l.has_waiters());
}

/// Timed waits time out, take themselves out of the queue, and pass on wakeups they were
/// given; the lock ends consistent.
fn timed<P: RwSemPolicy>() {
    let _g = heavy();
    let l = Arc::new(RawRwSemWith::<P>::new());
    let d = Duration::from_millis(15);

    // 1. Write-held: every timed variant fails after its timeout.
    l.write();
    {
        let l = l.clone();
        std::thread::spawn(move || {
            let t = Instant::now();
            assert!(!l.try_read_for(d));
            assert!(!l.try_write_for(d));
            assert!(!l.try_read_until(Instant::now() + d));
            assert!(!l.try_write_until(Instant::now() + d));
            assert!(t.elapsed() >= 4 * d);
        })
        .join()
        .unwrap();
    }
    assert!(!l.has_waiters());
    // SAFETY: held.
    unsafe { l.write_unlock() };
    assert!(!l.is_locked());

    // 2. A timed-out head writer passes the wakeup on to a reader queued behind it.
    l.write();
    let w = {
        let l = l.clone();
        // 200 ms: the reader below must queue behind it before it times out, and a blocked
        // reader spins and yields (4 times) before it queues, which takes time slices on a
        // loaded machine.
        std::thread::spawn(move || l.try_write_for(Duration::from_millis(200)))
    };
    wait_until("writer queued", || l.has_waiters());
    let r = {
        let l = l.clone();
        std::thread::spawn(move || {
            l.read();
            // SAFETY: held.
            unsafe { l.read_unlock() };
        })
    };
    assert!(!w.join().unwrap(), "the write lock is held throughout");
    assert!(l.has_waiters(), "the reader is still queued");
    // SAFETY: held.
    unsafe { l.write_unlock() };
    r.join().unwrap();
    assert!(!l.is_locked() && !l.has_waiters(), "{l:?}");

    // 3. A timed-out reader behind a queued writer leaves the writer's wakeup intact. New
    // readers may overtake a sleeping writer until it reserves the lock (HANDOFF, within a
    // few handoff drops: module doc, "Writer waiting"); wait for that.
    l.read();
    let w = {
        let l = l.clone();
        std::thread::spawn(move || {
            l.write();
            // SAFETY: held.
            unsafe { l.write_unlock() };
        })
    };
    wait_until("writer queued", || l.has_waiters());
    wait_for_reservation(&l);
    {
        let l = l.clone();
        std::thread::spawn(move || assert!(!l.try_read_for(Duration::from_millis(10))))
            .join()
            .unwrap();
    }
    // SAFETY: held.
    unsafe { l.read_unlock() };
    w.join().unwrap();
    assert!(!l.is_locked() && !l.has_waiters(), "{l:?}");

    // 4. A timed writer on a read-held lock: gone after its timeout, readers flow again.
    l.read();
    {
        let l = l.clone();
        std::thread::spawn(move || assert!(!l.try_write_for(Duration::from_millis(10))))
            .join()
            .unwrap();
    }
    assert!(l.try_read(), "no waiter left behind");
    // SAFETY: two read locks held.
    unsafe {
        l.read_unlock();
        l.read_unlock();
    }
    assert!(!l.is_locked() && !l.has_waiters());
}

/// Readers queued behind a writer are granted together (they can all hold at once).
fn bulk_readers<P: RwSemPolicy>() {
    let _g = heavy();
    const N: usize = 24;
    let l = Arc::new(RawRwSemWith::<P>::new());
    let b = Arc::new(Barrier::new(N));
    l.write();
    let hs: Vec<_> = (0..N)
        .map(|_| {
            let (l, b) = (l.clone(), b.clone());
            std::thread::spawn(move || {
                l.read();
                b.wait(); // all N hold the read lock at once
                          // SAFETY: held.
                unsafe { l.read_unlock() };
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(30));
    // SAFETY: held.
    unsafe { l.write_unlock() };
    for h in hs {
        h.join().unwrap();
    }
    assert!(!l.is_locked() && !l.has_waiters());
}

/// A recursive read never blocks while this thread holds a read lock, even with a writer
/// queued (and HANDOFF possibly set).
fn recursive_read<P: RwSemPolicy>() {
    let _g = heavy();
    let l = Arc::new(RawRwSemWith::<P>::new());
    l.read();
    let w = {
        let l = l.clone();
        std::thread::spawn(move || {
            l.write();
            // SAFETY: held.
            unsafe { l.write_unlock() };
        })
    };
    wait_until("writer queued", || l.has_waiters());
    // Until the writer reserves the lock (HANDOFF) new readers may overtake it (module doc of
    // the rwsem, "Readers and sleeping writers"); wait for the reservation.
    wait_for_reservation(&l);
    l.read_recursive();
    assert!(l.try_read_recursive());
    assert!(!l.try_read(), "plain try_read respects the queued writer");
    // SAFETY: three read locks held.
    unsafe {
        l.read_unlock();
        l.read_unlock();
        l.read_unlock();
    }
    w.join().unwrap();
    assert!(!l.is_locked() && !l.has_waiters());
}

/// Reads behind waiters (glibc's writer-preferring kind) never pass a queued writer, asleep
/// or awake: the try form fails, the timed form times out, the blocking form gets the lock
/// only after the writer's section; plain `try_read_recursive` still nests.
fn reads_behind_waiters<P: RwSemPolicy>() {
    let _g = heavy();
    let l = Arc::new(RawRwSemWith::<P>::new());
    let wrote = Arc::new(AtomicBool::new(false));
    l.read();
    let w = {
        let (l, wrote) = (l.clone(), wrote.clone());
        std::thread::spawn(move || {
            l.write();
            wrote.store(true, Relaxed);
            // SAFETY: held.
            unsafe { l.write_unlock() };
        })
    };
    wait_until("writer queued", || l.has_waiters());
    assert!(!l.try_read_behind_waiters(), "a queued writer keeps it out");
    let t = {
        let l = l.clone();
        std::thread::spawn(move || l.try_read_behind_waiters_for(Duration::from_millis(20)))
    };
    assert!(
        !t.join().unwrap(),
        "a timed read behind a queued writer times out"
    );
    assert!(l.has_waiters() && !l.is_write_locked());
    let r = {
        let (l, wrote) = (l.clone(), wrote.clone());
        std::thread::spawn(move || {
            l.read_behind_waiters();
            // Relaxed is enough: the write lock's release and our acquire order it.
            assert!(wrote.load(Relaxed), "the reader passed the queued writer");
            // SAFETY: held.
            unsafe { l.read_unlock() };
        })
    };
    assert!(l.try_read_recursive());
    // SAFETY: two read locks held.
    unsafe {
        l.read_unlock();
        l.read_unlock();
    }
    w.join().unwrap();
    r.join().unwrap();
    assert!(l.try_read_behind_waiters());
    // SAFETY: held.
    unsafe { l.read_unlock() };
    assert!(!l.is_locked() && !l.has_waiters());
}

/// Upgradable holders beside readers, writers and each other: exclusion (one upgradable
/// holder, no writer beside it), no writer between an upgradable read and its upgrade, and
/// every write counted once, with every upgradable, upgrade and downgrade variant.
fn upgradable_stress<P: RwSemPolicy>(dur: Duration) {
    let _g = heavy();
    let s = Arc::new(Shared::<P>::new());
    let upg_inside = Arc::new(AtomicIsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let writes = Arc::new(AtomicU64::new(0));
    let upgrades = Arc::new(AtomicU64::new(0));
    let mut hs = vec![];
    for t in 0..2u64 {
        let (s, stop) = (s.clone(), stop.clone());
        hs.push(std::thread::spawn(move || {
            while !stop.load(Relaxed) {
                s.lock.read();
                s.reader_check();
                // SAFETY: read lock held.
                unsafe { s.lock.read_unlock() };
                if t == 0 {
                    std::thread::yield_now();
                }
            }
        }));
    }
    {
        let (s, stop, writes) = (s.clone(), stop.clone(), writes.clone());
        hs.push(std::thread::spawn(move || {
            while !stop.load(Relaxed) {
                s.lock.write();
                s.writer_update();
                writes.fetch_add(1, Relaxed);
                // SAFETY: write lock held.
                unsafe { s.lock.write_unlock() };
            }
        }));
    }
    for t in 0..3u64 {
        let (s, stop, writes, upgrades, upg_inside) = (
            s.clone(),
            stop.clone(),
            writes.clone(),
            upgrades.clone(),
            upg_inside.clone(),
        );
        hs.push(std::thread::spawn(move || {
            let mut i = t;
            while !stop.load(Relaxed) {
                i += 1;
                let got = match i % 4 {
                    0 => s.lock.try_upgradable_read(),
                    1 => s.lock.try_upgradable_read_for(Duration::from_micros(50)),
                    _ => {
                        s.lock.upgradable_read();
                        true
                    }
                };
                if !got {
                    continue;
                }
                if upg_inside.fetch_add(1, SeqCst) != 0 {
                    s.violations.fetch_add(1, SeqCst);
                }
                s.reader_check();
                // SAFETY: upgradable lock held: no writer.
                let before = unsafe { *s.data.get() };
                let up = match i % 5 {
                    0 => {
                        upg_inside.fetch_sub(1, SeqCst);
                        // SAFETY: upgradable lock held.
                        unsafe { s.lock.downgrade_upgradable() };
                        s.reader_check();
                        // SAFETY: now a read lock.
                        unsafe { s.lock.read_unlock() };
                        continue;
                    }
                    1 => {
                        upg_inside.fetch_sub(1, SeqCst);
                        // SAFETY: upgradable lock held.
                        unsafe { s.lock.upgradable_unlock() };
                        continue;
                    }
                    // SAFETY (all three): upgradable lock held.
                    2 => unsafe { s.lock.try_upgrade() },
                    3 => unsafe { s.lock.try_upgrade_for(Duration::from_micros(100)) },
                    _ => {
                        unsafe { s.lock.upgrade() };
                        true
                    }
                };
                upg_inside.fetch_sub(1, SeqCst);
                if !up {
                    // SAFETY: a failed upgrade leaves the upgradable lock held.
                    unsafe { s.lock.upgradable_unlock() };
                    continue;
                }
                // SAFETY: write lock held.
                if unsafe { *s.data.get() } != before {
                    s.violations.fetch_add(1, SeqCst); // a writer came in during the upgrade
                }
                s.writer_update();
                writes.fetch_add(1, Relaxed);
                upgrades.fetch_add(1, Relaxed);
                if i % 2 == 0 {
                    // SAFETY: write lock held.
                    unsafe { s.lock.downgrade_to_upgradable() };
                    if upg_inside.fetch_add(1, SeqCst) != 0 {
                        s.violations.fetch_add(1, SeqCst);
                    }
                    s.reader_check();
                    upg_inside.fetch_sub(1, SeqCst);
                    // SAFETY: upgradable lock held.
                    unsafe { s.lock.upgradable_unlock() };
                } else {
                    // SAFETY: write lock held.
                    unsafe { s.lock.write_unlock() };
                }
            }
        }));
    }
    std::thread::sleep(dur);
    stop.store(true, Relaxed);
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(s.violations.load(SeqCst), 0, "exclusion violated");
    // SAFETY: all threads joined.
    let (a, b) = unsafe { *s.data.get() };
    assert_eq!(a, b);
    assert_eq!(a, writes.load(Relaxed), "every write counted exactly once");
    assert!(upgrades.load(Relaxed) > 0, "no upgrade ever succeeded");
    assert!(!s.lock.is_locked() && !s.lock.has_waiters(), "{:?}", s.lock);
    assert!(
        s.lock.try_upgradable_read(),
        "the upgradable bit was left set"
    );
    // SAFETY: just taken.
    unsafe { s.lock.upgradable_unlock() };
}

/// An upgrade completes against a stream of overlapping readers (without `UPGRADING` the
/// reader count would never drop to the upgrader's own bias), 20 times; a timed upgrade that
/// gives up lets in the reader that blocked behind it and keeps the upgradable lock.
fn upgrade_not_starved<P: RwSemPolicy>() {
    let _g = heavy();
    let l = Arc::new(RawRwSemWith::<P>::new());
    let stop = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicU64::new(0));
    let hs: Vec<_> = (0..4)
        .map(|_| {
            let (l, stop, reads) = (l.clone(), stop.clone(), reads.clone());
            std::thread::spawn(move || {
                while !stop.load(Relaxed) {
                    l.read();
                    busy(Duration::from_micros(20));
                    reads.fetch_add(1, Relaxed);
                    // SAFETY: held.
                    unsafe { l.read_unlock() };
                }
            })
        })
        .collect();
    wait_until("the readers run", || reads.load(Relaxed) > 100);
    for _ in 0..20 {
        l.upgradable_read();
        // SAFETY: upgradable lock held; the readers cannot hold it up for ever (the test's
        // 10 s bound below is the failure).
        let (done, r) = {
            let l2 = l.clone();
            let h = std::thread::spawn(move || {
                // SAFETY: the upgradable lock was taken by the spawning thread, which waits
                // for us; lock_api guards are not Send, the raw lock's upgrade is by protocol.
                unsafe { l2.upgrade() };
                // SAFETY: now the write lock.
                unsafe { l2.write_unlock() };
            });
            let t = Instant::now();
            while !h.is_finished() && t.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(1));
            }
            (h.is_finished(), reads.load(Relaxed))
        };
        assert!(done, "upgrade starved by readers ({r} reads)");
    }
    // A timed upgrade gives up while a reader holds on; a reader that blocked behind the
    // upgrade gets in afterwards, and the upgradable lock is still ours.
    stop.store(true, Relaxed);
    for h in hs {
        h.join().unwrap();
    }
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let holder = {
        let l = l.clone();
        std::thread::spawn(move || {
            l.read();
            rx.recv().unwrap();
            // SAFETY: held.
            unsafe { l.read_unlock() };
        })
    };
    wait_until("the reader holds", || l.is_locked());
    l.upgradable_read();
    let late = Arc::new(AtomicBool::new(false));
    let late_reader = {
        let (l, late) = (l.clone(), late.clone());
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(5));
            l.read();
            late.store(true, SeqCst);
            // SAFETY: held.
            unsafe { l.read_unlock() };
        })
    };
    // SAFETY: upgradable lock held.
    assert!(!unsafe { l.try_upgrade_for(Duration::from_millis(30)) });
    wait_until("the reader that blocked behind the upgrade gets in", || {
        late.load(SeqCst)
    });
    late_reader.join().unwrap();
    assert!(
        !l.try_upgradable_read(),
        "the upgradable lock is still held"
    );
    tx.send(()).unwrap();
    holder.join().unwrap();
    // SAFETY: upgradable lock held; the other reader left.
    assert!(unsafe { l.try_upgrade() });
    // SAFETY: write lock held.
    unsafe { l.write_unlock() };
    assert!(!l.is_locked() && !l.has_waiters(), "{:?}", l);
}

/// A fair write unlock with a writer queued reserves the lock for it: a `try_read` right after
/// the unlock fails (a plain unlock lets running readers in first).
fn fair_unlock<P: RwSemPolicy>() {
    let _g = heavy();
    let l = Arc::new(RawRwSemWith::<P>::new());
    l.write();
    let got = Arc::new(AtomicBool::new(false));
    let w = {
        let (l, got) = (l.clone(), got.clone());
        std::thread::spawn(move || {
            l.write();
            got.store(true, SeqCst);
            busy(Duration::from_millis(20));
            // SAFETY: held.
            unsafe { l.write_unlock() };
        })
    };
    wait_until("the writer queues", || l.has_waiters());
    // SAFETY: write lock held.
    unsafe { l.write_unlock_fair() };
    let overtook = l.try_read();
    if overtook {
        // SAFETY: just taken.
        unsafe { l.read_unlock() };
    }
    assert!(
        !overtook,
        "a reader overtook the waiter a fair unlock reserved the lock for"
    );
    w.join().unwrap();
    assert!(got.load(SeqCst));
    assert!(!l.is_locked() && !l.has_waiters(), "{:?}", l);
}

macro_rules! suite {
    ($($m:ident: $p:ty),* $(,)?) => {$(
        mod $m {
            use super::*;
            #[test]
            fn basic_ops() {
                basic::<$p>();
            }
            #[test]
            fn stress_exclusion_and_counting() {
                stress::<$p>(Duration::from_millis(300));
            }
            #[test]
            fn writer_not_starved_by_reader_stream() {
                writer_not_starved::<$p>();
            }
            #[test]
            fn writer_bound_counted_in_reads() {
                common::writer_bound_in_reads::<$p>(3);
            }
            #[test]
            fn reader_not_starved_by_writer_stream() {
                reader_not_starved::<$p>();
            }
            #[test]
            fn timed_waits_time_out_and_leave_lock_consistent() {
                timed::<$p>();
            }
            #[test]
            fn queued_readers_are_granted_in_bulk() {
                bulk_readers::<$p>();
            }
            #[test]
            fn recursive_read_does_not_deadlock_behind_writer() {
                recursive_read::<$p>();
            }
            #[test]
            fn reads_behind_waiters_never_pass_a_queued_writer() {
                reads_behind_waiters::<$p>();
            }
            #[test]
            fn upgradable_exclusion_and_counting() {
                upgradable_stress::<$p>(Duration::from_millis(300));
            }
            #[test]
            fn upgrade_not_starved_by_reader_stream() {
                upgrade_not_starved::<$p>();
            }
            #[test]
            fn fair_write_unlock_reserves_for_the_head() {
                fair_unlock::<$p>();
            }
        }
    )*};
}

suite!(
    default: DefaultPolicy,
    reader_spin_on: ReaderSpinOn,
    reader_spin_limited: ReaderSpinLimited,
    wake_flag: WakeFlag,
    trylock_if_spinner: TrylockIfSpinner,
    never_spin_on_readers: NeverSpinOnReaders,
    packed_osq: PackedOsq,
    fast_handoff: FastHandoff,
);

#[test]
fn size_zero_init_and_const() {
    assert!(std::mem::size_of::<RawRwSem>() <= 56);
    assert!(std::mem::size_of::<RawRwSemWith<ReaderSpinOn>>() <= 56);
    static S: RwSem<u32> = RwSem::new(7);
    assert_eq!(*S.read(), 7);
    *S.write() += 1;
    assert_eq!(*S.read(), 8);
    // SAFETY: all-zero is the documented unlocked state.
    let z: RawRwSem = unsafe { std::mem::zeroed() };
    z.write();
    // SAFETY: held.
    unsafe { z.write_unlock() };
    assert!(!z.is_locked());
}

#[test]
fn more_than_one_batch_of_readers() {
    let _g = heavy();
    // 300 readers queued behind a writer: granted in batches of at most 256.
    let l = Arc::new(RawRwSem::new());
    let done = Arc::new(AtomicUsize::new(0));
    l.write();
    let hs: Vec<_> = (0..300)
        .map(|_| {
            let (l, done) = (l.clone(), done.clone());
            std::thread::Builder::new()
                .stack_size(256 * 1024)
                .spawn(move || {
                    l.read();
                    done.fetch_add(1, Relaxed);
                    // SAFETY: held.
                    unsafe { l.read_unlock() };
                })
                .unwrap()
        })
        .collect();
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(done.load(Relaxed), 0);
    // SAFETY: held.
    unsafe { l.write_unlock() };
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(done.load(Relaxed), 300);
    assert!(!l.is_locked() && !l.has_waiters());
}

#[test]
fn try_write_spin_is_bounded_on_a_held_lock() {
    let _g = heavy();
    let l = Arc::new(RawRwSem::new());
    l.write();
    let l2 = l.clone();
    let t = std::thread::spawn(move || {
        let t = Instant::now();
        let got = l2.try_write_spin();
        (got, t.elapsed())
    })
    .join()
    .unwrap();
    assert!(!t.0);
    assert!(t.1 < Duration::from_millis(100), "spun {:?}", t.1);
    // A reader-owned lock: bounded too, then NONSPINNABLE stops later spinners at once.
    // SAFETY: held.
    unsafe { l.downgrade() };
    let l2 = l.clone();
    let t = std::thread::spawn(move || {
        let t = Instant::now();
        let a = l2.try_write_spin();
        let b = l2.try_write_spin();
        (a || b, t.elapsed())
    })
    .join()
    .unwrap();
    assert!(!t.0);
    assert!(t.1 < Duration::from_millis(100), "spun {:?}", t.1);
    // SAFETY: the downgraded read lock is held.
    unsafe { l.read_unlock() };
    assert!(l.try_write_spin());
    // SAFETY: held.
    unsafe { l.write_unlock() };
}

#[test]
#[should_panic(expected = "read_unlock of a lock that is not read-locked")]
fn read_unlock_of_unlocked_panics() {
    let l = RawRwSem::new();
    // SAFETY: deliberately violated to test the misuse check.
    unsafe { l.read_unlock() };
}

#[test]
#[should_panic(expected = "write_unlock of a lock that is not write-locked")]
fn write_unlock_of_unlocked_panics() {
    let l = RawRwSem::new();
    // SAFETY: deliberately violated to test the misuse check.
    unsafe { l.write_unlock() };
}

#[test]
#[should_panic(expected = "write_unlock of a lock that is not write-locked")]
fn write_unlock_of_read_locked_panics() {
    let l = RawRwSem::new();
    l.read();
    // SAFETY: deliberately violated to test the misuse check.
    unsafe { l.write_unlock() };
}

#[test]
#[should_panic(expected = "downgrade of a lock that is not write-locked")]
fn downgrade_of_unlocked_panics() {
    let l = RawRwSem::new();
    // SAFETY: deliberately violated to test the misuse check.
    unsafe { l.downgrade() };
}

#[test]
fn misuse_leaves_the_count_intact() {
    let l = RawRwSem::new();
    // SAFETY: deliberately violated; the panic is caught.
    let r = std::panic::catch_unwind(|| unsafe { l.read_unlock() });
    assert!(r.is_err());
    assert!(!l.is_locked());
    l.write();
    // SAFETY: held.
    unsafe { l.write_unlock() };
}

#[test]
fn only_the_misusing_thread_panics() {
    // A misused read_unlock (here: by the write-lock holder, so no read lock is counted and the
    // misuse is always detected) corrupts the count for a moment (module doc, "Misuse"): the
    // threads using the lock correctly meanwhile (writers that queue, readers that only
    // try_read, so that no phantom bias is counted) must not panic or lose a wakeup, and the
    // count must end intact.
    let _g = heavy();
    let l = Arc::new(RawRwSem::new());
    let stop = Arc::new(AtomicBool::new(false));
    let done: Arc<[AtomicU64; 4]> = Arc::new(Default::default());
    let hs: Vec<_> = (0..4)
        .map(|i| {
            let (l, stop, done) = (l.clone(), stop.clone(), done.clone());
            std::thread::spawn(move || {
                while !stop.load(Relaxed) {
                    // SAFETY (both arms): the lock taken just before is released.
                    if i < 2 {
                        l.write();
                        unsafe { l.write_unlock() };
                        done[i].fetch_add(1, Relaxed);
                    } else if l.try_read() {
                        unsafe { l.read_unlock() };
                        done[i].fetch_add(1, Relaxed);
                    }
                }
            })
        })
        .collect();
    for _ in 0..2000 {
        l.write();
        let l2 = l.clone();
        // SAFETY: deliberately violated (no read lock held); the panic is caught.
        let r = std::panic::catch_unwind(move || unsafe { l2.read_unlock() });
        assert!(r.is_err(), "the misuse went undetected");
        // SAFETY: the write lock taken above.
        unsafe { l.write_unlock() };
    }
    // Every correct thread must still make progress after the misuses (a try_read may fail
    // throughout the misuse loop, which keeps the lock written or waited for): a stuck writer
    // (a lost wakeup) or a corrupt count shows here. The bound only catches a hang.
    let t = std::time::Instant::now();
    let base: Vec<u64> = done.iter().map(|d| d.load(Relaxed)).collect();
    while done.iter().zip(&base).any(|(d, b)| d.load(Relaxed) == *b) {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "a correct thread made no progress after the misuses: {base:?} -> {:?}",
            done.iter().map(|d| d.load(Relaxed)).collect::<Vec<_>>()
        );
        std::thread::yield_now();
    }
    stop.store(true, Relaxed);
    for h in hs {
        h.join().unwrap();
    }
    assert!(!l.is_locked() && !l.has_waiters(), "{:?}", *l);
}

#[cfg(any(debug_assertions, feature = "debug-locks"))]
#[test]
fn write_unlock_by_another_thread_panics() {
    let l = Arc::new(RawRwSem::new());
    l.write();
    let l2 = l.clone();
    // SAFETY: deliberately violated to test the misuse check.
    let r = std::thread::spawn(move || unsafe { l2.write_unlock() }).join();
    let msg = r.unwrap_err();
    let msg = msg.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(msg.contains("does not hold the write lock"), "{msg}");
    assert!(l.is_write_locked(), "the lock is still held by its owner");
    // SAFETY: held by this thread.
    unsafe { l.write_unlock() };
}

/// Lock coupling, as lockbench's `tree`: every descent write-locks the root for a short
/// section and leaves it, the case of the writer's gap poll (module doc of `kslock::rwsem`,
/// "Meeting a writer"). Each node counts its write sections in a plain cell and flags its
/// holder: a section that finds the flag set, or a lost count, fails the test.
#[test]
fn lock_coupled_writers_exclude_each_other() {
    struct Node {
        lock: RawRwSem,
        inside: AtomicBool,
        count: UnsafeCell<u64>,
    }
    // SAFETY: `count` is only touched under the node's write lock.
    unsafe impl Sync for Node {}
    fn section(n: &Node) {
        assert!(!n.inside.swap(true, Relaxed), "two writers in one node");
        // SAFETY: the write lock is held (checked just above).
        unsafe { *n.count.get() += 1 };
        n.inside.store(false, Relaxed);
    }
    const THREADS: usize = 4;
    const OPS: u64 = 20_000;
    let _g = heavy();
    // 1 root, 4 children, 16 leaves.
    let nodes: Arc<Vec<Node>> = Arc::new(
        (0..21)
            .map(|_| Node {
                lock: RawRwSem::new(),
                inside: AtomicBool::new(false),
                count: UnsafeCell::new(0),
            })
            .collect(),
    );
    let ts: Vec<_> = (0..THREADS)
        .map(|t| {
            let nodes = nodes.clone();
            std::thread::spawn(move || {
                let mut rng = 0x9e37_79b9_7f4a_7c15u64 ^ t as u64;
                for _ in 0..OPS {
                    let mut idx = 0;
                    nodes[0].lock.write();
                    for _ in 0..2 {
                        section(&nodes[idx]);
                        rng ^= rng << 13;
                        rng ^= rng >> 7;
                        rng ^= rng << 17;
                        let child = idx * 4 + 1 + (rng % 4) as usize;
                        let coupled = nodes[child].lock.try_write_spin();
                        // SAFETY: this thread holds the parent's write lock.
                        unsafe { nodes[idx].lock.write_unlock() };
                        if !coupled {
                            nodes[child].lock.write();
                        }
                        idx = child;
                    }
                    section(&nodes[idx]);
                    // SAFETY: this thread holds the leaf's write lock.
                    unsafe { nodes[idx].lock.write_unlock() };
                }
            })
        })
        .collect();
    for t in ts {
        t.join().unwrap();
    }
    let total = THREADS as u64 * OPS;
    // SAFETY: every thread has joined.
    let counts: Vec<u64> = nodes.iter().map(|n| unsafe { *n.count.get() }).collect();
    assert_eq!(counts[0], total);
    assert_eq!(counts[1..5].iter().sum::<u64>(), total);
    assert_eq!(counts[5..].iter().sum::<u64>(), total);
    assert!(nodes.iter().all(|n| !n.lock.is_locked()));
}
