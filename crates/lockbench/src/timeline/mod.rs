//! `lockbench timeline`: where one cell's time goes, from timestamps at every step of every
//! operation.
//!
//! The matrix says how fast and how fair a lock is, not why it loses. `timeline` runs the
//! matrix body (lock; `cs_load` pauses; unlock; `outside_load` pauses) for a fixed number of
//! operations per thread and stamps each operation four times: before the lock call (`try`),
//! first thing inside the section (`enter`), last thing inside it (`exit`) and after the
//! unlock returned (`done`). On x86_64 a stamp is `rdtscp` (the TSC and the CPU) followed by
//! `lfence`, converted to ns against the monotonic clock over the run; elsewhere the
//! monotonic clock and `sched_getcpu`. Every section also runs the matrix's exclusion check
//! ([`Excl`]).
//!
//! The stamps cost time, ≈ 125 ns per operation on the 2-vCPU development VM: at CS load 1
//! they outlast the section and act as work outside the lock (≈ 4 pauses' worth), which changes
//! how often a lock changes hands; at CS load 20 they add a quarter, at CS load 100 a twentieth.
//!
//! The report covers the middle 80% of the window in which every thread was stamping
//! ([`analyse`]):
//!
//! | figure | meaning |
//! |---|---|
//! | lock: writer / one reader / readers | share of the window in which a writer, exactly one reader, or two or more readers were between `enter` and `exit` |
//! | lock: idle, waited for | nobody inside while at least one thread was between `try` and `enter`: the lock's lost time (its handovers and unlocks) |
//! | lock: idle | nobody inside and nobody waiting |
//! | handovers / kop | exclusive sections whose previous exclusive section was another thread's |
//! | re-entry gap | `exit` of an exclusive section to `enter` of the next one, by the same thread |
//! | handover gap | the same, by another thread |
//! | transfer gap A→B | for a section of kind B that waited: from the `exit` of the last section it conflicted with (A: a writer, or for a writer any reader) that ended after its `try`, to its `enter` |
//! | section in a run / after a handover | section length (`exit - enter`) of exclusive sections by the previous exclusive thread, or after a handover (cold lines) |
//! | wait | `enter - try`, per kind |
//! | overlaps | conflicting sections whose `[enter, exit]` intervals intersect: a broken lock or clocks that disagree between CPUs |
//! | CPU time | shares of the time of the CPUs the stamps were taken on (`rdtscp` gives the CPU): a thread inside as writer / reader, after its section (unlock, outside work, loop), in the lock call (spinning, yielding, sleeping or switched out: no thread of that CPU was inside or after a section), nothing stamped |
//! | holds | handover gaps by CPU, stints (one thread's sections in a row), the time until the lock returns to a thread, stretched sections ([`holds`]) |

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::*};
use std::sync::Mutex;
use std::time::Instant;

use crate::excl::Excl;
use crate::locks::BenchLock;
use crate::stats::{pin_to, Rng};
use crate::util::{pause, CachePadded};

pub mod holds;
pub mod summary;
use holds::Holds;
pub use summary::Summary;

/// Most stamps one run may hold (threads × ops; 40 bytes each, 320 MB).
pub const MAX_STAMPS: usize = 8_000_000;

/// What one timeline run does.
#[derive(Clone, Debug, PartialEq)]
pub struct TimelineCfg {
    pub threads: usize,
    pub cs_load: u32,
    pub outside_load: u32,
    /// Percent of operations that read-lock (ignored for mutexes).
    pub read_pct: u32,
    /// Operations per thread.
    pub ops: usize,
    pub pin: bool,
}

/// One operation's stamps (clock ticks) and kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stamp {
    pub try_at: u64,
    pub enter: u64,
    pub exit: u64,
    pub done: u64,
    pub read: bool,
    /// CPUs of the `try` and `enter` stamps.
    pub cpu_try: u16,
    pub cpu_in: u16,
}

/// A run's stamps, one vector per thread, and the clock's rate.
#[derive(Debug)]
pub struct Recording {
    pub threads: Vec<Vec<Stamp>>,
    pub ns_per_tick: f64,
}

/// A stamp: clock ticks and the CPU it was taken on.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn stamp() -> (u64, u16) {
    let mut aux = 0u32;
    // SAFETY: `record` checked that the CPU has rdtscp (lfence is in every x86_64 CPU); both
    // touch no memory but `aux`. rdtscp waits for the instructions before it; the lfence
    // keeps the ones after it (the unlock after an `exit` stamp) from starting first. Linux
    // puts the CPU number in the low 12 bits of `aux`.
    let t = unsafe { core::arch::x86_64::__rdtscp(&mut aux) };
    // SAFETY: as above.
    unsafe { core::arch::x86_64::_mm_lfence() };
    (t, (aux & 0xfff) as u16)
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn stamp() -> (u64, u16) {
    use std::sync::OnceLock;
    static BASE: OnceLock<Instant> = OnceLock::new();
    let t = BASE.get_or_init(Instant::now).elapsed().as_nanos() as u64;
    // SAFETY: sched_getcpu has no preconditions.
    let cpu = unsafe { libc::sched_getcpu() };
    (t, cpu.max(0) as u16)
}

/// Does the CPU have `rdtscp` (CPUID 8000_0001h, EDX bit 27)? (Core 2 and older lack it.)
#[cfg(target_arch = "x86_64")]
#[allow(unused_unsafe)] // `__cpuid` is a safe function on newer toolchains
fn has_rdtscp() -> bool {
    // SAFETY: cpuid exists on every x86_64 CPU and has no side effects; leaf 8000_0001h is
    // read only where the highest extended leaf (8000_0000h's EAX) includes it.
    unsafe {
        use core::arch::x86_64::__cpuid;
        __cpuid(0x8000_0000).eax >= 0x8000_0001 && __cpuid(0x8000_0001).edx & (1 << 27) != 0
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn has_rdtscp() -> bool {
    true // (not used: the monotonic clock stamps)
}

#[inline(always)]
fn ticks() -> u64 {
    stamp().0
}

/// The inside of a held section: the `enter` stamp, the exclusion check around `cs_load`
/// pauses, the `exit` stamp (the caller's guard unlocks after it).
#[inline(always)]
fn section(
    cs_load: u32,
    check_in: impl FnOnce() -> Result<(), String>,
    check_out: impl FnOnce() -> Result<(), String>,
) -> (u64, u16, u64, Result<(), String>) {
    let (enter, cpu_in) = stamp();
    let r = check_in().and_then(|_| {
        pause(cs_load);
        check_out()
    });
    (enter, cpu_in, ticks(), r)
}

/// Runs `cfg` on a fresh `L` and returns the stamps (`Err`: the exclusion check failed, or
/// an x86_64 CPU without `rdtscp`).
pub fn record<L: BenchLock>(cfg: &TimelineCfg) -> Result<Recording, String> {
    if !has_rdtscp() {
        return Err("this CPU has no rdtscp instruction, which timeline's stamps use".into());
    }
    let n = cfg.threads.max(1);
    let lock = CachePadded(L::new());
    let excl = Excl::default();
    let ready = AtomicUsize::new(0);
    let go = AtomicBool::new(false);
    let first_error: Mutex<Option<String>> = Mutex::new(None);
    let cpus = crate::stats::online_cpus();
    let read_pct = if L::RW {
        u64::from(cfg.read_pct.min(100))
    } else {
        0
    };
    let (t0, c0) = (Instant::now(), ticks());
    let threads = std::thread::scope(|s| {
        let hs: Vec<_> = (0..n)
            .map(|tid| {
                let (lock, excl, ready, go, first_error) =
                    (&lock, &excl, &ready, &go, &first_error);
                s.spawn(move || {
                    if cfg.pin {
                        pin_to(tid % cpus);
                    }
                    let mut rng = Rng::new(tid as u64 + 1);
                    let mut v = vec![Stamp::default(); cfg.ops];
                    ready.fetch_add(1, Relaxed);
                    // Acquire pairs with the coordinator's Release (only the start is handed over).
                    while !go.load(Acquire) {
                        std::thread::yield_now();
                    }
                    for (i, st) in v.iter_mut().enumerate() {
                        let read = match read_pct {
                            0 => false,
                            100 => true,
                            p => rng.below(100) < p,
                        };
                        let (try_at, cpu_try) = stamp();
                        let (enter, cpu_in, exit, r) = if read {
                            let _g = lock.read();
                            section(cfg.cs_load, || excl.read_enter(), || excl.read_exit())
                        } else {
                            let _g = lock.write();
                            section(cfg.cs_load, || excl.write_enter(), || excl.write_exit())
                        };
                        let done = ticks();
                        *st = Stamp {
                            try_at,
                            enter,
                            exit,
                            done,
                            read,
                            cpu_try,
                            cpu_in,
                        };
                        if let Err(e) = r {
                            first_error.lock().unwrap().get_or_insert(e);
                            v.truncate(i + 1);
                            break;
                        }
                        pause(cfg.outside_load);
                    }
                    v
                })
            })
            .collect();
        while ready.load(Relaxed) < n {
            std::thread::yield_now();
        }
        go.store(true, Release);
        hs.into_iter()
            .map(|h| h.join().expect("timeline worker panicked"))
            .collect::<Vec<_>>()
    });
    if let Some(e) = first_error.into_inner().unwrap() {
        return Err(e);
    }
    let (dt, dc) = (
        t0.elapsed().as_nanos() as f64,
        ticks().wrapping_sub(c0) as f64,
    );
    let ns_per_tick = if dc > 0.0 { dt / dc } else { 1.0 };
    Ok(Recording {
        threads,
        ns_per_tick,
    })
}

/// What [`analyse`] derives from a recording (module doc table).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    /// Sections entered in the analysed window.
    pub ops: usize,
    pub window_ns: f64,
    /// Shares of the window: writer inside, one reader, two or more readers, nobody inside
    /// while somebody waited, nobody inside and nobody waiting.
    pub held_writer: f64,
    pub held_one_reader: f64,
    pub held_readers: f64,
    pub idle_waited_for: f64,
    pub idle: f64,
    pub handovers_per_kop: f64,
    pub reentry_gap: Summary,
    pub handover_gap: Summary,
    /// Transfer gaps: writer → writer, writer → reader, reader → writer.
    pub transfer_ww: Summary,
    pub transfer_wr: Summary,
    pub transfer_rw: Summary,
    pub section_in_run: Summary,
    pub section_after_handover: Summary,
    pub wait_read: Summary,
    pub wait_write: Summary,
    pub overlaps: usize,
    /// CPUs the threads stamped on.
    pub cpus: usize,
    /// Shares of those CPUs' time in the window (module doc, "CPU time"): a thread inside as
    /// writer / as reader, after its section (unlock, outside work, the loop), in a lock
    /// call, and nothing stamped.
    pub cpu: [f64; 5],
    /// Stints, handovers by CPU, returns, stretched sections (module doc of [`holds`]).
    pub holds: Holds,
}

/// Labels of [`Report::cpu`].
pub const CPU_STATES: [&str; 5] = [
    "inside, writer",
    "inside, reader",
    "after the section",
    "in the lock call",
    "nothing stamped",
];

/// One section in the window: its stamps (ns from the window's start) and thread.
#[derive(Clone, Copy)]
struct Sec {
    try_at: f64,
    enter: f64,
    exit: f64,
    read: bool,
    tid: usize,
    /// CPU of the `enter` stamp.
    cpu: u16,
}

/// Derives the report from per-thread stamps (module doc): the window is the span in which
/// every thread stamped, less its first and last 10%; sections count if they entered inside
/// it.
pub fn analyse(threads: &[Vec<Stamp>], ns_per_tick: f64) -> Report {
    let (Some(lo), Some(hi)) = (
        threads
            .iter()
            .filter_map(|v| v.first().map(|s| s.try_at))
            .max(),
        threads
            .iter()
            .filter_map(|v| v.last().map(|s| s.done))
            .min(),
    ) else {
        return Report::default();
    };
    if hi <= lo {
        return Report::default();
    }
    let span = (hi - lo) as f64;
    let (w0, w1) = (span * 0.1, span * 0.9);
    let ns = |t: u64| (t.saturating_sub(lo)) as f64;
    // Every section that overlaps the window takes part in the sweep; the ones that entered
    // inside it are counted.
    let mut near: Vec<Sec> = threads
        .iter()
        .enumerate()
        .flat_map(|(tid, v)| {
            v.iter().map(move |s| Sec {
                try_at: ns(s.try_at),
                enter: ns(s.enter),
                exit: ns(s.exit),
                read: s.read,
                tid,
                cpu: s.cpu_in,
            })
        })
        .filter(|s| s.exit > w0 && s.try_at < w1)
        .collect();
    near.sort_by(|a, b| a.enter.total_cmp(&b.enter));
    let secs: Vec<Sec> = near
        .iter()
        .copied()
        .filter(|s| s.enter >= w0 && s.enter < w1)
        .collect();
    let k = ns_per_tick;
    let mut r = Report {
        ops: secs.len(),
        window_ns: (w1 - w0) * k,
        ..Report::default()
    };
    cpu_time(threads, lo, w0, w1, &mut r);
    if secs.is_empty() {
        return r;
    }
    shares(&near, w0, w1, &mut r);
    // Exclusive sections in entry order: re-entries, handovers, section lengths, holds.
    let excl: Vec<holds::Section> = secs
        .iter()
        .filter(|s| !s.read)
        .map(|s| holds::Section {
            enter: s.enter,
            exit: s.exit,
            tid: s.tid,
            cpu: s.cpu,
        })
        .collect();
    let (mut same, mut other, mut run, mut first) = (vec![], vec![], vec![], vec![]);
    for w in excl.windows(2) {
        let (p, s) = (&w[0], &w[1]);
        let gap = (s.enter - p.exit) * k;
        let len = (s.exit - s.enter) * k;
        if p.tid == s.tid {
            same.push(gap);
            run.push(len);
        } else {
            other.push(gap);
            first.push(len);
        }
    }
    r.handovers_per_kop = other.len() as f64 * 1000.0 / r.ops as f64;
    r.holds = holds::holds(&excl, k, r.window_ns);
    (r.reentry_gap, r.handover_gap) = (Summary::of(same), Summary::of(other));
    (r.section_in_run, r.section_after_handover) = (Summary::of(run), Summary::of(first));
    transfers(&secs, k, &mut r);
    let wait = |read: bool| {
        Summary::of(
            secs.iter()
                .filter(|s| s.read == read)
                .map(|s| (s.enter - s.try_at) * k)
                .collect(),
        )
    };
    (r.wait_read, r.wait_write) = (wait(true), wait(false));
    r
}

/// Lock-state shares of the window `[w0, w1)` (a sweep over enters, exits and tries), and
/// the overlap count.
fn shares(secs: &[Sec], w0: f64, w1: f64, r: &mut Report) {
    // (time, order, event): at equal times exits go first, then tries, then enters.
    #[derive(Clone, Copy)]
    enum Ev {
        Exit(bool),
        Try,
        Enter(bool),
    }
    let mut evs: Vec<(f64, u8, Ev)> = Vec::with_capacity(secs.len() * 3);
    for s in secs {
        evs.push((s.try_at, 1, Ev::Try));
        evs.push((s.enter, 2, Ev::Enter(s.read)));
        evs.push((s.exit, 0, Ev::Exit(s.read)));
    }
    evs.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut writers, mut readers, mut waiting) = (0i64, 0i64, 0i64);
    let mut acc = [0.0f64; 5];
    let mut last = w0;
    // The state from `last` to `t` (clipped to the window) goes to its share.
    let mut close = |t: f64, last: f64, writers: i64, readers: i64, waiting: i64| {
        let (a, b) = (last.max(w0), t.min(w1));
        if b > a {
            let i = match (writers, readers, waiting) {
                (w, _, _) if w > 0 => 0,
                (_, 1, _) => 1,
                (_, r, _) if r > 1 => 2,
                (_, _, q) if q > 0 => 3,
                _ => 4,
            };
            acc[i] += b - a;
        }
    };
    for (t, _, ev) in evs {
        close(t, last, writers, readers, waiting);
        last = last.max(t);
        match ev {
            Ev::Try => waiting += 1,
            Ev::Enter(read) => {
                waiting -= 1;
                if writers > 0 || (!read && readers > 0) {
                    r.overlaps += 1;
                }
                if read {
                    readers += 1;
                } else {
                    writers += 1;
                }
            }
            Ev::Exit(true) => readers -= 1,
            Ev::Exit(false) => writers -= 1,
        }
    }
    close(w1, last, writers, readers, waiting);
    let total: f64 = acc.iter().sum();
    if total > 0.0 {
        [
            r.held_writer,
            r.held_one_reader,
            r.held_readers,
            r.idle_waited_for,
            r.idle,
        ] = acc.map(|x| x / total);
    }
}

/// CPU time (module doc): each thread's operations become phases on the CPU of their stamps
/// (`[try, enter)` in the lock call on the `try` CPU; `[enter, exit)` inside and `[exit, next
/// try)` after the section on the `enter` CPU); per CPU a sweep labels each moment by the
/// phase present with the highest rank: inside, after, in the lock call. A thread inside
/// or after its section runs (a preempted one is the rare exception); one in the lock call
/// may spin, yield, sleep or have been switched out: that share is the CPU time no thread
/// spent inside or after a section (spinning, scheduling, or idle while all slept).
fn cpu_time(threads: &[Vec<Stamp>], lo: u64, w0: f64, w1: f64, r: &mut Report) {
    use std::collections::BTreeMap;
    // Per CPU: (time, delta, phase), phase = index into CPU_STATES (0..4).
    let mut per_cpu: BTreeMap<u16, Vec<(f64, i32, usize)>> = BTreeMap::new();
    let ns = |t: u64| t.saturating_sub(lo) as f64;
    let mut add = |cpu: u16, a: f64, b: f64, phase: usize| {
        if b > w0 && a < w1 && b > a {
            let e = per_cpu.entry(cpu).or_default();
            e.push((a, 1, phase));
            e.push((b, -1, phase));
        }
    };
    for v in threads {
        for (i, st) in v.iter().enumerate() {
            let (t, e, x) = (ns(st.try_at), ns(st.enter), ns(st.exit));
            let end = v.get(i + 1).map_or(ns(st.done), |n| ns(n.try_at));
            add(st.cpu_try, t, e, 3);
            add(st.cpu_in, e, x, if st.read { 1 } else { 0 });
            add(st.cpu_in, x, end, 2);
        }
    }
    let mut acc = [0.0f64; 5];
    for evs in per_cpu.values_mut() {
        evs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut count = [0i32; 4];
        let mut last = w0;
        for &(t, d, phase) in evs.iter() {
            let (a, b) = (last.max(w0), t.min(w1));
            if b > a {
                acc[count.iter().position(|&c| c > 0).unwrap_or(4)] += b - a;
            }
            last = last.max(t);
            count[phase] += d;
        }
        if last < w1 {
            acc[4] += w1 - last.max(w0);
        }
    }
    r.cpus = per_cpu.len();
    let total: f64 = acc.iter().sum();
    if total > 0.0 {
        r.cpu = acc.map(|x| x / total);
    }
}

/// Transfer gaps (module doc): for each section, the last conflicting exit by another
/// thread at or before its enter; counted when that exit came after the section's try.
fn transfers(secs: &[Sec], k: f64, r: &mut Report) {
    // Exits in time order: all of them (a writer conflicts with everyone), and writers'.
    let mut all: Vec<(f64, bool, usize)> = secs.iter().map(|s| (s.exit, s.read, s.tid)).collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0));
    let writers: Vec<(f64, bool, usize)> = all.iter().copied().filter(|e| !e.1).collect();
    let (mut ww, mut wr, mut rw) = (vec![], vec![], vec![]);
    for s in secs {
        let exits = if s.read { &writers } else { &all };
        let mut i = exits.partition_point(|e| e.0 <= s.enter);
        // The last exit by another thread at or before the enter.
        let pred = loop {
            if i == 0 {
                break None;
            }
            i -= 1;
            if exits[i].2 != s.tid {
                break Some(exits[i]);
            }
        };
        let Some((exit, pred_read, _)) = pred else {
            continue;
        };
        if exit < s.try_at {
            continue; // it did not wait for that section
        }
        let gap = (s.enter - exit) * k;
        match (pred_read, s.read) {
            (false, false) => ww.push(gap),
            (false, true) => wr.push(gap),
            _ => rw.push(gap),
        }
    }
    (r.transfer_ww, r.transfer_wr, r.transfer_rw) =
        (Summary::of(ww), Summary::of(wr), Summary::of(rw));
}

/// Prints a report as text.
pub fn write_report(out: &mut dyn Write, title: &str, rw: bool, r: &Report) -> std::io::Result<()> {
    let pct = |x: f64| format!("{:.1}%", x * 100.0);
    writeln!(out, "{title}")?;
    writeln!(
        out,
        "  window {:.2} ms, {} sections, {:.1} ns per section",
        r.window_ns / 1e6,
        r.ops,
        if r.ops > 0 {
            r.window_ns / r.ops as f64
        } else {
            0.0
        }
    )?;
    let readers = if rw {
        format!(
            ", one reader {}, readers {}",
            pct(r.held_one_reader),
            pct(r.held_readers)
        )
    } else {
        String::new()
    };
    writeln!(
        out,
        "  lock: writer {}{readers}, idle waited for {}, idle {}",
        pct(r.held_writer),
        pct(r.idle_waited_for),
        pct(r.idle)
    )?;
    writeln!(out, "  handovers/kop {:.1}", r.handovers_per_kop)?;
    writeln!(out, "  re-entry gap      {}", r.reentry_gap)?;
    writeln!(out, "  handover gap      {}", r.handover_gap)?;
    writeln!(out, "  transfer W->W     {}", r.transfer_ww)?;
    if rw {
        writeln!(out, "  transfer W->R     {}", r.transfer_wr)?;
        writeln!(out, "  transfer R->W     {}", r.transfer_rw)?;
    }
    writeln!(out, "  section in a run  {}", r.section_in_run)?;
    writeln!(out, "  section after handover {}", r.section_after_handover)?;
    if rw {
        writeln!(out, "  wait, read        {}", r.wait_read)?;
    }
    writeln!(out, "  wait, write       {}", r.wait_write)?;
    writeln!(out, "  overlaps          {}", r.overlaps)?;
    let h = &r.holds;
    writeln!(
        out,
        "  handover, same CPU  {} ({} of the window)",
        h.same_cpu,
        pct(h.same_cpu_share)
    )?;
    writeln!(
        out,
        "  handover, other CPU {} ({} of the window)",
        h.other_cpu,
        pct(h.other_cpu_share)
    )?;
    writeln!(
        out,
        "  stints {:.0}/s, {:.1} sections each: {}; stints >= {}x the median hold {} of their time",
        h.stints_per_s,
        h.ops_per_stint,
        h.stint,
        holds::LONG_STINT,
        pct(h.long_stint_share)
    )?;
    writeln!(out, "  return to a thread {}", h.ret)?;
    writeln!(
        out,
        "  stretched sections (>= {}x the median) {}, {} of the window",
        holds::STRETCH,
        h.stretched,
        pct(h.stretched_share)
    )?;
    let cpu: Vec<String> = CPU_STATES
        .iter()
        .zip(r.cpu)
        .filter(|(name, x)| rw || !name.ends_with("reader") || *x > 0.0)
        .map(|(name, x)| format!("{name} {}", pct(x)))
        .collect();
    writeln!(out, "  CPU time ({} CPUs): {}", r.cpus, cpu.join(", "))?;
    Ok(())
}

/// Writes the stamps as CSV (`thread,op,read,try,enter,exit,done,cpu_try,cpu_in`, times in
/// clock ticks; the rate as a comment line first).
pub fn write_raw(path: &std::path::Path, rec: &Recording) -> std::io::Result<()> {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    writeln!(f, "# ns_per_tick {}", rec.ns_per_tick)?;
    writeln!(f, "thread,op,read,try,enter,exit,done,cpu_try,cpu_in")?;
    for (t, v) in rec.threads.iter().enumerate() {
        for (i, s) in v.iter().enumerate() {
            writeln!(
                f,
                "{t},{i},{},{},{},{},{},{},{}",
                s.read as u8, s.try_at, s.enter, s.exit, s.done, s.cpu_try, s.cpu_in
            )?;
        }
    }
    f.flush()
}

#[cfg(test)]
mod tests;
