//! The measurement loop.
//!
//! Method (the same for every lock and workload):
//!
//! 1. Spawn `threads` workers; each checks in and polls a start flag, yielding, until the
//!    coordinator has seen all of them check in and raises it. (A `std::sync::Barrier` started
//!    them one by one: its wakeups form a chain through its internal mutex, and once the first
//!    workers ran, each next wakeup waited for a CPU among them; at 96 threads with work
//!    outside the lock some workers started a second or more late, after the measurement, and
//!    counted no operation, for every lock.)
//! 2. Warm-up: workers run for `--warmup` seconds; nothing is recorded.
//! 3. The coordinator (this thread, asleep otherwise) flips the phase to
//!    MEASURE, reads every worker's cache-padded op counter and the clock,
//!    sleeps `--secs`, reads the counters and the clock again, and flips the
//!    phase to STOP. Throughput = (sum of counter deltas) / (clock delta).
//!    Workers never time themselves, so a descheduled worker cannot inflate
//!    its own rate.
//! 4. Workers notice the phase changes on their next operation: at MEASURE
//!    they read `getrusage(RUSAGE_THREAD)` and start sampling every 64th
//!    acquisition's wait into a per-thread histogram; at STOP they read the
//!    usage again and return. (Usage windows therefore start and end up to one
//!    operation, or one scheduler time slice for a descheduled worker, after
//!    the coordinator's timestamps.)
//!
//! Each worker's counters live on their own 128-byte block, the lock on its
//! own, and the exclusion-check word on its own.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::locks::{BenchLock, CachePadded};
use crate::stats::{online_cpus, pin_to, Histogram, Rng, Usage, WaitSummary};
use crate::workload;

/// One cell's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct CellConfig {
    pub threads: usize,
    /// `pause` instructions inside the critical section.
    pub cs_load: u32,
    /// `pause` instructions between two acquisitions.
    pub outside_load: u32,
    /// Percentage of operations that take the lock for reading.
    pub read_pct: u32,
    pub secs: f64,
    pub warmup: f64,
    /// Pin worker i to CPU i mod online CPUs.
    pub pin: bool,
}

/// Which loop to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkSpec {
    /// lock; cs_load pauses; unlock; outside_load pauses.
    Matrix,
    /// fio randrw-like block copy / modify on one shared "file".
    File,
    /// page-fault-like lookups and mmap/munmap-like updates of an interval map.
    Mmap,
    /// lock-coupled tree descent; `spin` selects `try_write_spin` over
    /// `try_write` for the coupling step.
    Tree { spin: bool },
    /// the matrix loop with random (geometric) critical-section and outside lengths.
    Random,
}

impl WorkSpec {
    pub fn name(self) -> &'static str {
        match self {
            WorkSpec::Matrix => "matrix",
            WorkSpec::File => "file",
            WorkSpec::Mmap => "mmap",
            WorkSpec::Tree { spin: true } => "tree",
            WorkSpec::Tree { spin: false } => "tree-nospin",
            WorkSpec::Random => "random",
        }
    }
}

/// What one timed run measured.
#[derive(Clone, Debug, Default)]
pub struct Measurement {
    pub elapsed_s: f64,
    pub reads: u64,
    pub writes: u64,
    /// Operations per worker during the measured window.
    pub per_thread: Vec<u64>,
    pub wait: WaitSummary,
    pub usage: Usage,
    /// Workload-specific event counts (e.g. tree `fallbacks`).
    pub events: BTreeMap<String, u64>,
    /// The cross-CPU line round trips probed before and after the run, ns ([`crate::probe`];
    /// the probes that worked).
    pub line_rt_ns: Vec<f64>,
}

impl Measurement {
    pub fn ops(&self) -> u64 {
        self.reads + self.writes
    }
    pub fn kops(&self) -> f64 {
        if self.elapsed_s > 0.0 {
            self.ops() as f64 / self.elapsed_s / 1000.0
        } else {
            0.0
        }
    }
}

/// A run either measures or finds the lock broken.
pub type RunOutcome = Result<Measurement, String>;

/// Per-worker context handed to each operation.
pub struct Ctx {
    pub tid: usize,
    pub rng: Rng,
    /// Time this operation's (first) acquisition.
    pub sample: bool,
    pub hist: Histogram,
    /// Workload-specific event count (see [`Workload::EVENT`]).
    pub events: u64,
}

impl Ctx {
    /// Run `acquire`, timing it when this operation is sampled.
    #[inline(always)]
    pub fn acquire<G>(&mut self, acquire: impl FnOnce() -> G) -> G {
        if self.sample {
            let t = Instant::now();
            let g = acquire();
            self.hist.record(t.elapsed().as_nanos() as u64);
            g
        } else {
            acquire()
        }
    }
}

/// `n` pause instructions (the seeds' load unit, ≈27 ns each on the dev box).
#[inline(always)]
pub fn pause(n: u32) {
    for _ in 0..n {
        std::hint::spin_loop();
    }
}

/// An application-shaped loop body. Implementations own their locks.
pub trait Workload: Sync {
    /// Per-thread state.
    type Local;
    /// Name of the event counted in [`Ctx::events`], if any.
    const EVENT: Option<&'static str> = None;
    fn local(&self, tid: usize) -> Self::Local;
    /// One operation. `Err` = mutual exclusion was violated.
    fn op(&self, ctx: &mut Ctx, local: &mut Self::Local, read: bool) -> Result<(), String>;
    /// The work between two operations, `outside_load` pauses (a workload may draw it).
    #[inline(always)]
    fn outside(&self, _ctx: &mut Ctx, outside_load: u32) {
        pause(outside_load);
    }
    /// Exclusive handovers so far ([`Excl`]); `None` if the workload does not count them.
    fn handovers(&self) -> Option<u64> {
        None
    }
}

// ------------------------------------------------------------ exclusion check

/// Exclusion checker, as in locktorture: checked inside every critical
/// section. Bits 0..32 count readers inside, bit 32 up mark a writer.
/// Relaxed is enough: the lock under test orders these accesses, and a lock
/// that fails to do so is what we want to catch.
///
/// With feature `handovers` it also counts **handovers**: exclusive entries by a
/// thread other than the previous exclusive one (reported as the event
/// `handovers`, per kop). A lock that lets one thread batch has few; one that
/// changes hands at every operation has one per operation. The last writer and
/// the count share the checker's line, which every critical section writes
/// anyway. Off by default: the extra work in every critical section moved the
/// kslock mutex's uncontended loop by ≈ 10% (code layout), and the default
/// loop stays the one every lock was measured with.
#[derive(Default)]
pub struct Excl(CachePadded<ExclLine>);

/// The checker's state, last writer and handover count (one cache line).
#[derive(Default)]
struct ExclLine {
    state: AtomicU64,
    last_writer: AtomicUsize,
    handovers: AtomicU64,
}

const EXCL_WRITER: u64 = 1 << 32;

/// Does the exclusion checker count handovers (feature `handovers`, [`Excl`])?
const COUNT_HANDOVERS: bool = cfg!(feature = "handovers");

/// A number unique to the calling thread while it lives (the address of a
/// thread-local), never 0.
#[inline(always)]
fn thread_tag() -> usize {
    thread_local!(static TAG: u8 = const { 0 });
    TAG.with(|t| t as *const u8 as usize)
}

impl Excl {
    #[inline(always)]
    pub fn write_enter(&self) -> Result<(), String> {
        // A correct lock lets no one else in, so load + store suffices. Wrapping: under a
        // broken lock a reader's exit can race this store and leave the count below 0
        // (`u64::MAX`); that must be reported as the violation it is, not panic on overflow.
        let v = self.0.state.load(Relaxed);
        self.0.state.store(v.wrapping_add(EXCL_WRITER), Relaxed);
        if v != 0 {
            return Err(violation("writer entered", v));
        }
        if COUNT_HANDOVERS {
            self.note_writer(thread_tag());
        }
        Ok(())
    }
    /// Counts a handover if `me` is not the previous exclusive thread. Inside the
    /// exclusive section, so plain load + store.
    #[inline(always)]
    fn note_writer(&self, me: usize) {
        if self.0.last_writer.load(Relaxed) != me {
            self.0.last_writer.store(me, Relaxed);
            let n = self.0.handovers.load(Relaxed);
            self.0.handovers.store(n + 1, Relaxed);
        }
    }
    /// Handovers so far (type doc). Read by the coordinator while workers run:
    /// a snapshot, at most one handover stale.
    pub fn handovers(&self) -> u64 {
        self.0.handovers.load(Relaxed)
    }
    #[inline(always)]
    pub fn write_exit(&self) -> Result<(), String> {
        let v = self.0.state.load(Relaxed);
        self.0.state.store(v.wrapping_sub(EXCL_WRITER), Relaxed);
        if v != EXCL_WRITER {
            return Err(violation("writer leaving", v));
        }
        Ok(())
    }
    #[inline(always)]
    pub fn read_enter(&self) -> Result<(), String> {
        let v = self.0.state.fetch_add(1, Relaxed);
        if v >= EXCL_WRITER {
            return Err(violation("reader entered", v));
        }
        Ok(())
    }
    #[inline(always)]
    pub fn read_exit(&self) -> Result<(), String> {
        let v = self.0.state.fetch_sub(1, Relaxed);
        if v >= EXCL_WRITER || v == 0 {
            return Err(violation("reader leaving", v));
        }
        Ok(())
    }
}

#[cold]
fn violation(when: &str, v: u64) -> String {
    format!(
        "mutual exclusion violated: {when} while {} writer(s) and {} reader(s) were inside",
        v >> 32,
        v & (EXCL_WRITER - 1)
    )
}

// ------------------------------------------------------------ matrix body

/// The locktest loop: lock; `cs_load` pauses (checked); unlock.
pub struct MatrixWl<L> {
    lock: CachePadded<L>,
    excl: Excl,
    cs_load: u32,
}

impl<L: BenchLock> MatrixWl<L> {
    pub fn new(cs_load: u32) -> Self {
        MatrixWl {
            lock: CachePadded(L::new()),
            excl: Excl::default(),
            cs_load,
        }
    }
}

impl<L: BenchLock> Workload for MatrixWl<L> {
    type Local = ();
    fn local(&self, _tid: usize) {}
    fn handovers(&self) -> Option<u64> {
        Some(self.excl.handovers())
    }
    #[inline]
    fn op(&self, ctx: &mut Ctx, _: &mut (), read: bool) -> Result<(), String> {
        if read && L::RW {
            let g = ctx.acquire(|| self.lock.read());
            self.excl.read_enter()?;
            pause(self.cs_load);
            self.excl.read_exit()?;
            drop(g);
        } else {
            let g = ctx.acquire(|| self.lock.write());
            self.excl.write_enter()?;
            pause(self.cs_load);
            self.excl.write_exit()?;
            drop(g);
        }
        Ok(())
    }
}

/// Registry entry point: dispatch once per cell to a monomorphised loop.
pub fn run_any<L: BenchLock>(spec: &WorkSpec, cfg: &CellConfig) -> RunOutcome {
    match *spec {
        WorkSpec::Matrix => run(&MatrixWl::<L>::new(cfg.cs_load), cfg),
        WorkSpec::File => run(&workload::FileWl::<L>::new(cfg.cs_load), cfg),
        WorkSpec::Mmap => run(&workload::MmapWl::<L>::new(cfg.cs_load), cfg),
        WorkSpec::Tree { spin: true } => run(&workload::TreeWl::<L, true>::new(cfg.cs_load), cfg),
        WorkSpec::Tree { spin: false } => run(&workload::TreeWl::<L, false>::new(cfg.cs_load), cfg),
        WorkSpec::Random => run(&workload::RandomWl::<L>::new(cfg.cs_load), cfg),
    }
}

// ------------------------------------------------------------ the loop

const WARMUP: u32 = 0;
const MEASURE: u32 = 1;
const STOP: u32 = 2;

/// Cache-padded per-worker op counters, written only by their worker.
#[derive(Default)]
struct Slot {
    reads: AtomicU64,
    writes: AtomicU64,
}

struct WorkerOut {
    hist: Histogram,
    usage: Usage,
    events: u64,
}

/// kslock's lock event counters (empty unless built with feature `lock-events`). They are
/// process-wide: the window between the two snapshots also counts the other locks' events,
/// but a cell runs one lock.
fn lock_events() -> Vec<(&'static str, u64)> {
    #[cfg(feature = "lock-events")]
    return kslock::events::snapshot();
    #[cfg(not(feature = "lock-events"))]
    Vec::new()
}

/// How long workers may take to notice STOP before the run is declared hung.
/// A correct lock releases every worker within a few scheduler time slices;
/// a lost wakeup or deadlock never does.
pub fn stop_grace(threads: usize) -> Duration {
    Duration::from_secs(10) + Duration::from_millis(50) * threads as u32
}

/// Counts a worker as finished when dropped, also when it unwinds (and then
/// flags the run as broken so the coordinator stops waiting early).
struct Finished<'a>(&'a AtomicUsize, &'a AtomicBool);

impl Drop for Finished<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.1.store(true, Relaxed);
        }
        self.0.fetch_add(1, Relaxed);
    }
}

/// A cell whose workers never stop cannot be joined, so the process ends
/// here (like locktorture's hang report); exports of earlier cells are on
/// disk already.
#[cold]
fn abort_hung(stuck: usize, n: usize, cfg: &CellConfig) -> ! {
    eprintln!(
        "lockbench: error: {stuck} of {n} workers did not finish within {:?} of the stop signal \
         (threads {}, cs-load {}, read {}%): the lock under test lost a wakeup, deadlocked, \
         or a worker panicked while holding it",
        stop_grace(n),
        cfg.threads,
        cfg.cs_load,
        cfg.read_pct
    );
    std::process::exit(1);
}

/// Sleep `secs`, waking early if a worker reported a violation.
fn sleep_watch(secs: f64, stop: &AtomicBool) {
    let end = Instant::now() + Duration::from_secs_f64(secs.max(0.0));
    loop {
        let now = Instant::now();
        if now >= end || stop.load(Relaxed) {
            return;
        }
        std::thread::sleep((end - now).min(Duration::from_millis(50)));
    }
}

/// Run one timed cell of workload `w`.
pub fn run<W: Workload>(w: &W, cfg: &CellConfig) -> RunOutcome {
    let before = crate::probe::line_round_trip_ns();
    let mut m = run_workers(w, cfg)?;
    m.line_rt_ns = [before, crate::probe::line_round_trip_ns()]
        .into_iter()
        .flatten()
        .collect();
    Ok(m)
}

/// [`run`] without the probes around it.
fn run_workers<W: Workload>(w: &W, cfg: &CellConfig) -> RunOutcome {
    let n = cfg.threads.max(1);
    let cpus = online_cpus();
    let slots: Vec<CachePadded<Slot>> = (0..n).map(|_| CachePadded::default()).collect();
    let phase = CachePadded(AtomicU32::new(WARMUP));
    let broken = CachePadded(AtomicBool::new(false));
    let first_error: Mutex<Option<String>> = Mutex::new(None);
    // The start gate (module doc, step 1).
    let ready = AtomicUsize::new(0);
    let go = AtomicBool::new(false);
    let finished = AtomicUsize::new(0);
    let read_pct = u64::from(cfg.read_pct.min(100));
    let outside = cfg.outside_load;

    std::thread::scope(|s| {
        let mut handles = Vec::with_capacity(n);
        for (tid, slot) in slots.iter().enumerate() {
            let (phase, broken, first_error) = (&phase, &broken, &first_error);
            let (ready, go) = (&ready, &go);
            let finished = &finished;
            let pin = cfg.pin;
            let h = std::thread::Builder::new()
                .name(format!("lockbench-{tid}"))
                .spawn_scoped(s, move || {
                    let _finished = Finished(finished, broken);
                    if pin {
                        pin_to(tid % cpus);
                    }
                    let mut ctx = Ctx {
                        tid,
                        rng: Rng::new(tid as u64 + 1),
                        sample: false,
                        hist: Histogram::default(),
                        events: 0,
                    };
                    let mut local = w.local(tid);
                    let (mut r, mut wr, mut i) = (0u64, 0u64, 0u64);
                    let mut measuring = false;
                    let mut u0 = Usage::default();
                    ready.fetch_add(1, Relaxed);
                    // Acquire pairs with the coordinator's Release (nothing is handed over but
                    // the start itself).
                    while !go.load(Acquire) {
                        std::thread::yield_now();
                    }
                    loop {
                        let ph = phase.load(Relaxed);
                        if ph != WARMUP {
                            if ph == STOP {
                                break;
                            }
                            if !measuring {
                                measuring = true;
                                u0 = Usage::now();
                                ctx.events = 0;
                            }
                        }
                        let read = match read_pct {
                            0 => false,
                            100 => true,
                            p => ctx.rng.below(100) < p,
                        };
                        ctx.sample = measuring && i % 64 == 0;
                        i += 1;
                        if let Err(e) = w.op(&mut ctx, &mut local, read) {
                            first_error.lock().unwrap().get_or_insert(e);
                            broken.store(true, Relaxed);
                            break;
                        }
                        if read {
                            r += 1;
                            slot.reads.store(r, Relaxed);
                        } else {
                            wr += 1;
                            slot.writes.store(wr, Relaxed);
                        }
                        w.outside(&mut ctx, outside);
                    }
                    let usage = if measuring {
                        Usage::now().since(u0)
                    } else {
                        Usage::default()
                    };
                    WorkerOut {
                        hist: ctx.hist,
                        usage,
                        events: ctx.events,
                    }
                })
                .expect("spawn worker thread");
            handles.push(h);
        }

        // (A worker that died before checking in counts as finished: do not wait for it.)
        while ready.load(Relaxed) + finished.load(Relaxed) < n {
            std::thread::sleep(Duration::from_millis(1));
        }
        go.store(true, Release);
        sleep_watch(cfg.warmup, &broken);
        let snapshot = || -> Vec<(u64, u64)> {
            slots
                .iter()
                .map(|s| (s.reads.load(Relaxed), s.writes.load(Relaxed)))
                .collect()
        };
        phase.store(MEASURE, Relaxed);
        let t0 = Instant::now();
        let c0 = snapshot();
        let e0 = lock_events();
        let h0 = w.handovers().filter(|_| COUNT_HANDOVERS);
        sleep_watch(cfg.secs, &broken);
        let t1 = Instant::now();
        let c1 = snapshot();
        let e1 = lock_events();
        let h1 = w.handovers().filter(|_| COUNT_HANDOVERS);
        phase.store(STOP, Relaxed);
        let deadline = Instant::now() + stop_grace(n);
        while finished.load(Relaxed) < n {
            if Instant::now() > deadline {
                abort_hung(n - finished.load(Relaxed), n, cfg);
            }
            std::thread::sleep(Duration::from_millis(5));
        }

        let mut m = Measurement {
            elapsed_s: (t1 - t0).as_secs_f64(),
            ..Measurement::default()
        };
        let mut hist = Histogram::default();
        let mut events = 0;
        let mut panicked = false;
        let mut usages = Vec::with_capacity(n);
        for (h, (a, b)) in handles.into_iter().zip(c0.iter().zip(&c1)) {
            // Join every worker (an unjoined panicked one would make the scope
            // panic), then report the first failure.
            let Ok(out) = h.join() else {
                panicked = true;
                continue;
            };
            hist.merge(&out.hist);
            m.usage.add(out.usage);
            usages.push(out.usage);
            events += out.events;
            let (dr, dw) = (b.0 - a.0, b.1 - a.1);
            m.reads += dr;
            m.writes += dw;
            m.per_thread.push(dr + dw);
        }
        if panicked {
            return Err("a worker thread panicked inside the lock under test".to_string());
        }
        if std::env::var("LOCKBENCH_DUMP_THREADS").is_ok() {
            eprintln!("per-thread ops: {:?}", m.per_thread);
            // CPU time from the worker's start of measuring to its stop (the window plus the
            // stop's grace), and its switches: is a spread in operations one of CPU time?
            let cpu_ms: Vec<f64> = usages
                .iter()
                .map(|u| (u.cpu_ns as f64 / 1e5).round() / 10.0)
                .collect();
            eprintln!("per-thread CPU ms: {cpu_ms:?}");
            let sw: Vec<(u64, u64)> = usages.iter().map(|u| (u.vcsw, u.ivcsw)).collect();
            eprintln!("per-thread (voluntary, involuntary) switches: {sw:?}");
            eprintln!(
                "c0[0..3] {:?} c1[0..3] {:?}",
                &c0[..3.min(c0.len())],
                &c1[..3.min(c1.len())]
            );
        }
        if let Some(e) = first_error.lock().unwrap().take() {
            return Err(e);
        }
        m.wait = hist.summary();
        if let Some(name) = W::EVENT {
            m.events.insert(name.to_string(), events);
        }
        if let (Some(a), Some(b)) = (h0, h1) {
            m.events
                .insert("handovers".to_string(), b.saturating_sub(a));
        }
        for ((name, a), (_, b)) in e0.into_iter().zip(e1) {
            if b > a {
                m.events.insert(name.to_string(), b - a);
            }
        }
        Ok(m)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A "lock" that does not lock: the checker must catch it.
    struct NoLock;
    impl BenchLock for NoLock {
        const RW: bool = true;
        type W<'a> = ();
        type R<'a> = ();
        fn new() -> Self {
            NoLock
        }
        fn write(&self) {}
        fn read(&self) {}
        fn try_write(&self) -> Option<()> {
            Some(())
        }
    }

    #[test]
    fn broken_lock_is_caught() {
        let cfg = CellConfig {
            threads: 4,
            cs_load: 50,
            outside_load: 0,
            read_pct: 50,
            secs: 0.3,
            warmup: 0.0,
            pin: false,
        };
        let r = run_any::<NoLock>(&WorkSpec::Matrix, &cfg);
        let e = r.expect_err("a lock that does not exclude must fail the run");
        assert!(e.contains("mutual exclusion violated"), "{e}");
    }

    /// A lock that panics: the run reports it instead of hanging.
    struct PanicLock;
    impl BenchLock for PanicLock {
        const RW: bool = false;
        type W<'a> = ();
        type R<'a> = ();
        fn new() -> Self {
            PanicLock
        }
        fn write(&self) {
            panic!("PanicLock::write (expected by the test)");
        }
        fn read(&self) {}
        fn try_write(&self) -> Option<()> {
            None
        }
    }

    #[test]
    fn panicking_lock_is_reported() {
        let cfg = CellConfig {
            threads: 2,
            cs_load: 1,
            outside_load: 0,
            read_pct: 0,
            secs: 5.0,
            warmup: 5.0,
            pin: false,
        };
        let t = Instant::now();
        let e = run_any::<PanicLock>(&WorkSpec::Matrix, &cfg).unwrap_err();
        assert!(e.contains("panicked"), "{e}");
        assert!(t.elapsed() < Duration::from_secs(3), "stopped early");
    }

    #[test]
    fn excl_rules() {
        let e = Excl::default();
        e.read_enter().unwrap();
        e.read_enter().unwrap();
        e.read_exit().unwrap();
        e.read_exit().unwrap();
        e.write_enter().unwrap();
        assert!(e.read_enter().is_err());
    }

    #[test]
    fn handovers_count_changes_of_the_exclusive_thread() {
        let e = Excl::default();
        let (a, b) = (thread_tag(), std::thread::spawn(thread_tag).join().unwrap());
        assert_ne!(a, b);
        for _ in 0..3 {
            e.note_writer(a);
        }
        assert_eq!(
            e.handovers(),
            1,
            "one thread re-entering hands over only once"
        );
        e.note_writer(b);
        e.note_writer(a);
        assert_eq!(e.handovers(), 3);
        // A re-entry by `a`, the last writer, is no handover (and without the feature the
        // checker counts nothing); readers are never counted.
        e.write_enter().unwrap();
        e.write_exit().unwrap();
        e.read_enter().unwrap();
        e.read_exit().unwrap();
        assert_eq!(e.handovers(), 3);
    }

    #[test]
    fn a_cell_reports_its_handovers_only_with_the_feature() {
        let cfg = CellConfig {
            threads: 1,
            cs_load: 1,
            outside_load: 0,
            read_pct: 0,
            secs: 0.1,
            warmup: 0.05,
            pin: false,
        };
        let m = run_any::<crate::locks::peers::StdMutex>(&WorkSpec::Matrix, &cfg).unwrap();
        assert!(m.writes > 0);
        // One thread hands over at most once: its first entry, which a loaded machine may delay
        // past the warm-up; its re-entries never count.
        let h = m.events.get("handovers").copied();
        if COUNT_HANDOVERS {
            assert!(matches!(h, Some(0 | 1)), "{:?}", m.events);
        } else {
            assert_eq!(h, None, "{:?}", m.events);
        }
    }
}
