//! The measurement loop.
//!
//! Method (the same for every lock and workload):
//!
//! 1. Spawn `threads` workers; each checks in and polls a start flag, yielding, until the
//!    coordinator has seen all of them check in and raises it. (A `std::sync::Barrier` would
//!    wake them one by one, a chain through its internal mutex in which each next wakeup
//!    waits for a CPU among the workers already running: with many threads the last ones
//!    would start after the measurement.)
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

use crate::excl::COUNT_HANDOVERS;
use crate::stats::{online_cpus, pin_to, Histogram, Rng, Usage, WaitSummary};
use crate::util::{pause, CachePadded};

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
    /// Cache lines of shared data each section touches (`data`; 0 elsewhere).
    pub lines: u32,
    pub secs: f64,
    pub warmup: f64,
    /// Pin worker i to CPU i mod online CPUs.
    pub pin: bool,
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
    /// Only reads are operations ([`Workload::UNIT_IS_READ`]).
    pub unit_is_read: bool,
}

impl Measurement {
    /// Operations in the window: reads and writes, or reads only for a workload whose unit is
    /// a read ([`Workload::UNIT_IS_READ`]).
    pub fn ops(&self) -> u64 {
        if self.unit_is_read {
            self.reads
        } else {
            self.reads + self.writes
        }
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
    /// Exclusive handovers so far ([`crate::excl::Excl`]); `None` if the workload does not
    /// count them.
    fn handovers(&self) -> Option<u64> {
        None
    }
    /// The workload gives each thread a role ([`Self::role`]) instead of drawing reads from
    /// the read percentage.
    const ROLES: bool = false;
    /// With [`Self::ROLES`]: whether thread `tid`'s operations are reads.
    fn role(&self, _tid: usize) -> bool {
        false
    }
    /// Only reads count as the workload's unit of work (kops/s, CPU time and switches per
    /// operation); writes are steps towards them (the condvar queue's pushes).
    const UNIT_IS_READ: bool = false;
    /// The workload's threads may wait inside an operation for something only other workers
    /// do: right after the stop signal [`Self::stop`] wakes them, on a thread of its own (a
    /// lock that never comes free then still ends in the hang report).
    const STOP_WAKES: bool = false;
    /// With [`Self::STOP_WAKES`]: wake every thread that waits inside an operation.
    fn stop(&self) {}
    /// Thread `tid`'s state at its end, after its last operation.
    fn finish(&self, _tid: usize, _local: Self::Local) {}
    /// After every worker has finished: `Err` if the workload's data shows a broken lock.
    fn check(&self) -> Result<(), String> {
        Ok(())
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

/// `--stats`: report kslock's contention statistics per cell.
static STATS: AtomicBool = AtomicBool::new(false);

/// Turns the per-cell statistics report on or off; an error when asked for in a build
/// without feature `stats`.
pub fn set_stats(on: bool) -> Result<(), String> {
    if on && !cfg!(feature = "stats") {
        return Err("--stats needs a build with feature `stats` (cargo run --release -p lockbench --features stats -- ...)".into());
    }
    STATS.store(on, Relaxed);
    // Compiled in, recording runs only with `--stats` (without it a stats build measures the
    // cost of the hooks switched off).
    #[cfg(feature = "stats")]
    kslock::stats::set_enabled(on);
    Ok(())
}

/// With `--stats`: the statistics restart at the measured window (`start`), and its end
/// prints the top locks of the window on stderr (the cell's kslock locks; nothing for a
/// cell of another lock).
fn stats_window(start: bool, cfg: &CellConfig) {
    if !STATS.load(Relaxed) {
        return;
    }
    #[cfg(feature = "stats")]
    {
        if start {
            kslock::stats::reset();
            return;
        }
        let s = kslock::stats::snapshot();
        if s.locks.iter().any(|l| l.contended > 0) {
            eprintln!(
                "lockbench --stats: threads {}, cs-load {}, read {}%:\n{}",
                cfg.threads,
                cfg.cs_load,
                cfg.read_pct,
                s.report(3)
            );
        }
    }
    #[cfg(not(feature = "stats"))]
    let _ = (start, cfg);
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
                    let role = W::ROLES && w.role(tid);
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
                        let read = if W::ROLES {
                            role
                        } else {
                            match read_pct {
                                0 => false,
                                100 => true,
                                p => ctx.rng.below(100) < p,
                            }
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
                    w.finish(tid, local);
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
        stats_window(true, cfg);
        let h0 = w.handovers().filter(|_| COUNT_HANDOVERS);
        sleep_watch(cfg.secs, &broken);
        let t1 = Instant::now();
        let c1 = snapshot();
        let e1 = lock_events();
        stats_window(false, cfg);
        let h1 = w.handovers().filter(|_| COUNT_HANDOVERS);
        phase.store(STOP, Relaxed);
        let stopper = W::STOP_WAKES.then(|| s.spawn(|| w.stop()));
        let deadline = Instant::now() + stop_grace(n);
        while finished.load(Relaxed) < n {
            if Instant::now() > deadline {
                abort_hung(n - finished.load(Relaxed), n, cfg);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        if let Some(h) = stopper {
            let _ = h.join();
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
        w.check()?;
        m.unit_is_read = W::UNIT_IS_READ;
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
