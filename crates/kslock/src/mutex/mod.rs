//! The kernel mutex (kernel-locks.md B) for user space, with a fairness window.
//!
//! One owner word, one-CAS fast paths, optimistic spinning through the OSQ while the owner
//! runs, a FIFO of sleeping waiters behind a small wait_lock, and a handoff that bounds how long
//! the head waiter can lose to threads that barge in.
//!
//! # The owner word
//!
//! `owner = owner word of the holding thread | flags` (owner words, [`crate::thread`]: a record
//! id and a generation, with bits 0–6 free); all-zero = unlocked, nobody to wake.
//!
//! | bit | name | meaning | set by | cleared by |
//! |-----|------|---------|--------|------------|
//! | 0 | `WAKE_HEAD` | the head waiter sleeps until an unlock wakes it: the next unlock releases the lock and wakes the head | a head waiter about to sleep with no timer, by a CAS that succeeds only while the lock is held (wait_lock held); a head leaving without the lock while the lock is held | the unlock that wakes the head (in its release CAS); the last waiter leaving |
//! | 1 | `HANDOFF` | the head waiter's fairness window is due and it is awake, waiting for the lock: the next unlock hands the lock to the head instead of releasing it | the due head (`try_acquire(handoff)`), only while the lock is owned and not in PICKUP | the unlocker when it hands off or releases (wait_lock held); the head when it stops waiting awake (`stop_asking`, wait_lock held) |
//! | 2 | `PICKUP` | the lock was handed to the thread named in the owner bits, which has not taken it yet | the unlocker, in the same CAS that names the head as owner (wait_lock held) | the head, when it picks the lock up |
//! | 7.. | owner | the owning thread's owner word (record id in bits 7–31, generation in 32–63), 0 = free | the acquiring thread (CAS) or the handing-off unlocker | the owner (unlock) |
//!
//! Waiters are not a flag: the wait list (`list`, its own word) says whether anyone waits; the
//! owner word only carries what the next unlock must *do*. While the head sleeps on its window
//! timer the owner word of a busy lock has no flag at all, so the owner's re-locks and unlocks
//! stay one-CAS fast paths (kernel-locks.md B keeps `WAITERS` set as long as anyone waits, which
//! sends every unlock of a contended lock to the slow path).
//!
//! Transitions (`T` = a thread's owner word, `W` = WAKE_HEAD, `H` = HANDOFF, `P` = PICKUP):
//!
//! ```text
//! lock fast      0        -> T            (CAS, Acquire)
//! unlock fast    T        -> 0            (CAS, Release)
//! trylock        0|W      -> T|W          (CAS, Acquire; spinners, woken waiters, try_lock)
//! arm wake       T        -> T|W          (fresh head before sleeping; wait_lock held)
//! unlock, wake   T|W      -> 0            (Release) then wake the head
//! ask handoff    T        -> T|H          (the head when its window is due)
//! hand off       T|H      -> Head|P       (Release, wait_lock held) then unpark the head
//! pick up        Head|P   -> Head         (Acquire, by the head)
//! stop asking    T|H      -> T|W          (the head, awake for too long; wait_lock held)
//! ```
//!
//! # Fairness
//!
//! Threads that are running (the owner re-locking, spinners, new lockers) may take the lock
//! ahead of sleeping waiters: a wakeup costs 2–30 µs, a barging re-lock a few ns. How long the
//! head waiter lets that go on is its **fairness window** ([`crate::fairness`]): from the moment
//! it heads the queue, at most `clamp(queued_at + 4 ms, head_at + min, head_at + max)` (min ≈
//! 80 µs, max 1 ms on the development VM). The head's life:
//!
//! 1. **Fresh head** (just queued, or just became head): it arms `WAKE_HEAD` and sleeps, so the
//!    next unlock wakes it. A lock that is only briefly busy hands over at the first unlock.
//! 2. **Woken, lost the race**: the unlock woke it but another thread took the lock first (it
//!    barged): the lock is busy. The head spins for a moment (the spin oracle's budget), then
//!    sleeps on its window timer, *without* `WAKE_HEAD`: the owner runs unlocks and re-locks
//!    with no flag and wakes nobody.
//! 3. **Due**: at the end of its window the head sets `HANDOFF` and waits awake; the next
//!    unlock hands it the lock (`PICKUP`), after at most one critical section. If the lock is
//!    still on its way to the previous head (`PICKUP`), it asks as soon as that head has
//!    picked it up (before this was fixed, a head on the new owner's CPU waited without
//!    asking, yielding to the owner tick after tick: with 10 µs windows, 96 threads, max/min
//!    per-thread acquisitions of 300–15 000; the test `mutex_short_windows`). If the owner does
//!    not unlock within the spin budget (it sleeps, or was preempted), the head stops asking
//!    (`HANDOFF` → `WAKE_HEAD`) and sleeps until the unlock wakes it: handing the lock to a
//!    sleeping thread would leave it idle for a whole wakeup.
//!
//! When the lock changes hands and others still wait, the next head is woken to start its own
//! window. After a handover that window is the new owner's **turn** (module doc of `turn`):
//! the unlocker names the next head its *successor* and tells the new owner when the turn
//! ends; the owner checks its clock at its releases and hands the lock over itself at the
//! turn's end, to a successor that by then waits awake for it, polling its own wait node
//! (`HANDOFF` stays the backstop when that wait fails). A head that took the lock without a
//! handover wakes the next head itself. The old owner, whose re-lock now fails, queues at the
//! tail without spinning. So when threads outnumber CPUs the lock runs in turns: one thread
//! re-locks from its own cache for a window while the others sleep, then ownership moves to
//! the next in FIFO order. The bound: a waiter at queue position k gets the lock within
//! k × (window + the successor's timer lateness + one critical section + one handover).

//! [`HandoffPolicy::FirstFailure`](crate::policy::HandoffPolicy::FirstFailure) (policy [`crate::policy::KernelHandoff`]) instead asks for
//! the handoff as soon as the woken head loses once, as the kernel does: fair at µs scale, a
//! handover per wakeup. [`RawMutex::unlock_fair`] hands off whenever anyone waits.
//!
//! # Yield before queueing
//!
//! A locker whose optimistic spin fails gives its CPU away (`sched_yield`) and tries again,
//! up to [`crate::spin::PRE_QUEUE_YIELDS`] (4) times, before it queues, as the rwsem's writers
//! and blocked readers do (unless the lock's yield phases mostly queue: "The yield gate",
//! below). With more threads than CPUs a spin mostly fails because the owner
//! was preempted; a thread that then sleeps in the queue leaves only by the rotation (one head
//! at a time, one window each), so when threads also work outside the lock the queue filled up
//! and one CPU idled (8 threads, CS load 20, `--outside-load 100`: 1.5 CPUs busy, 0.73×
//! parking_lot). A yield lets the owner run and keeps the locker runnable. After a spin that ran
//! out of budget on a *running* owner the locker yields again only if the yield ran other
//! threads (it took at least 1/16 of the spin cap, ≈ 1.25 µs here, between a yield that
//! returns at once, 0.49 µs, and one that ran another thread, 2.6 µs): at 2 threads, CS load 1,
//! nothing else is runnable, the yield returns at once, and spinning again only polled the
//! batching owner's line (yielding regardless cost 0.84× there, 33.5k → 28k kops/s, with 1.78
//! CPUs busy for a one-CPU job). Fairness stays with the queue: the head's window bounds how
//! long yielders may barge.
//!
//! After each yield the locker spins again (`KSLOCK_OFF=respin_after_yield`: it polls the lock
//! word once instead and yields again, then queues). Polling only is the better choice where
//! the owner batches short sections and nobody works outside the lock: each re-spin's OSQ
//! join, admission and statistics are RMWs on the owner's line. It costs fairness when threads
//! far outnumber CPUs, and throughput with long random sections and outside work, so the
//! re-spin stays. Session 24, Intel guest, one binary, kslock ÷ parking_lot:
//!
//! | command | cells | re-spin → poll |
//! |---|---|---|
//! | `scripts/ab-ratio.py 3 "on,off=KSLOCK_OFF:respin_after_yield" -- matrix --locks kslock-mutex,parking-lot-mutex --threads 2,8,32,96 --cs-load 1,20,100 --outside-load 0,100 --secs 0.3 --warmup 0.1` | CS load 1, no outside work, 2 / 8 / 32 / 96 threads | 1.41 / 0.85 / 0.83 / 0.82 → 1.58 / 1.10 / 1.04 / 0.98 |
//! | same | CS load 100, no outside work, 8 / 32 / 96 threads | 1.21 / 1.09 / 1.07 → 1.15 / 1.06 / 1.04 |
//! | same | the other 17 cells; geo-mean of all 24 | 0.96–1.02 of re-spin's ratio; 1.064 → 1.089 |
//! | the same with `workload random` (geometric section and gap lengths), 2 runs, three invocations | CS load 1, no outside work, 8 / 32 / 96 threads | 0.54 / 0.54 / 0.59 → 0.98 / 1.00 / 0.93 (first invocation) |
//! | same | CS load 100, outside load 100, 8 / 32 / 96 threads | 0.95–0.98 / 0.98–1.03 / 1.00–1.02 → 0.85–0.88 / 0.78–0.99 / 0.85–0.97 |
//! | `lockbench matrix --locks kslock-mutex --threads 8,32,96 --cs-load 1,20,100 --secs 1`, two runs per side | CS load 1, 32 / 96 threads: max/min per-thread ops; p99.9 wait at 96 | 1.3–1.5 / 1.8–2.2 → 1.9–2.1 / 3.3–5.4; 3.4–4.7 ms → < 0.05 ms |
//! | same | CS load 20 and 100: max/min | unchanged (1.1–2.1 on both sides) |
//!
//! With polling only, the CS load 1 cells kept 1.2 CPUs busy (re-spin: 1.8–2.0) at 1.20–1.25×
//! the throughput (the A/B's medians; 1.03–1.27× in the 1 s runs): most threads slept in the
//! queue while one CPU ran the lock. Variants that poll only in some cases, to keep the gain
//! without the costs (same A/Bs, two runs): queue at once after a spin that ran out of budget
//! (CS load 1 gained as much, CS load 100 with outside load 100 lost 4–26% against re-spin in
//! three invocations); stop yielding when the same owner holds the lock after the yield, or
//! re-spin only when the owner changed (CS load 1 at 32 / 96 threads 0.81–0.88, as with
//! re-spin); re-spin only after a spin that stopped on an off-CPU owner, or only when the
//! lock's spins succeed at least 32/63 or 16/63 of the time with a mean wait above 1 µs (CS
//! load 1 at 32 / 96 threads, matrix and random workload, 0.53–0.92 / 0.52–0.83, below polling
//! only in every run). None was kept.
//!
//! # The yield gate
//!
//! Where most of a lock's pre-queue yield phases end in the queue anyway, a locker whose spin
//! failed queues at once (switch `KSLOCK_OFF=yield_gate`). The lock's spin word keeps an
//! average (weight 1/8) of the share of yield phases that queued ([`crate::spin`]'s
//! `SpinStats`, bits 10–15); above one half the yields are skipped, except by one locker in 8
//! (picked by the clock's low bits), whose phase keeps the average current. Lock events
//! (`mutex_yields_won` / `mutex_yields_queued`, the gate off, `--secs 0.3`) put the share
//! queued at 0.69–0.99 with CS load 20 or 100 and no work outside the lock (matrix and random
//! workload, 2–96 threads), at 0–0.19 with outside load 100 at 8–96 threads (0.6–0.7 at 2
//! threads, where a yield finds nobody to run and the phase stops after one), and at CS load 1
//! without outside work at 0.49–0.87 in the matrix and 0 in the random workload. Where the
//! phase queues, each of its yields was a context switch that took the CPU from running
//! threads, the owner's included: at 96 threads, CS load 100, the involuntary switches fell
//! from ≈ 66 to ≈ 18 per kop.
//!
//! A/B (one binary, `scripts/ab-ratio.py 3 "gate,off=KSLOCK_OFF:yield_gate" -- …`, kslock ÷
//! the best peer in the same run, medians of three alternated runs; session 44, AMD EPYC
//! guest):
//!
//! | command | cells | gate → off |
//! |---|---|---|
//! | `matrix --locks kslock-mutex,parking-lot-mutex,pthread-mutex --threads 32,96 --cs-load 1,20,100 --secs 1 --warmup 0.1` | geo-mean of the 6 cells | 0.970 → 0.919 |
//! | same | 96 threads, CS load 1 / 20 / 100: kops/s, max/min per-thread ops | 26.2k / 1615 / 330, 2.2 / 1.6 / 1.7 → 25.1k / 1522 / 313, 3.4 / 2.1 / 1.8 |
//! | `matrix --locks kslock-mutex,parking-lot-mutex,pthread-mutex,std-mutex --threads 2,8,32,96 --cs-load 1,20,100 --outside-load 0,100 --secs 0.3 --warmup 0.05` | geo-mean of the 24 cells | 1.011 → 1.021 (single cells within the runs' spread) |
//! | `workload random`, the same locks, threads, loads and lengths | geo-mean of the 24 cells | 0.986 → 0.995 (within the spread) |
//! | `workload tree --locks kslock-mutex,parking-lot-mutex,std-mutex,pthread-mutex --threads 2,8,32,96 --secs 0.4 --warmup 0.1` | geo-mean of the 4 cells; kslock's kops/s | 0.779 → 0.803; 4779 / 4555 / 4209 / 2777 → 4785 / 4338 / 3939 / 2876 (the ratios moved with the peers' runs) |
//!
//! Under the preload, `scripts/create-under-lock.c` (the main thread holds a mutex while it
//! creates 1024 threads that each lock it, after stress-ng's `--pthread` stressor; three
//! alternated runs of 1 s, off / gate / glibc): 11.2–11.5k / 11.7–13.3k / 13.1–14.4k threads
//! created a second, a mean of 141–205 / 106–123 / 66–84 µs from `pthread_create` to the
//! thread's start; with ≈ 1000 runnable threads each waiter's four yields had run other
//! waiters instead of the creating thread. `stress-ng --pthread 4 --verify -t 8s` itself, two runs of each: 41.0–42.0k
//! → 43.6–47.1k operations (glibc 51.2–53.2k).
//!
//! # Quick poll
//!
//! A locker whose fast path failed first polls the lock word alone (`quick_poll`), if nobody
//! spins in the OSQ and nobody waits: up to 16 polls, 1, 2, 4, … pauses apart up to R6's
//! calibrated poll gap (32 pauses on the AMD VM, ≈ 864 ns, [`crate::spin`]; an eighth of it
//! before session 40), taking the lock with one CAS when it is free, giving up after 3 polls
//! in a row that show the same owner (a batching owner), on a sleeping owner or on a
//! handover; then the OSQ spin as before. A free re-check (below) that sees the owner take
//! the lock straight back also ends the poll, and that locker skips the OSQ spin: it goes to
//! its pre-queue yields as after a spin that ran out on a running owner (`Quick::Batch`,
//! switch `KSLOCK_OFF=quick_batch_stop`; session 40, below). The OSQ spin costs four RMWs on
//! the lock's only cache line (OSQ join and leave, the spinner admission and the spin-time
//! average) besides the CAS, and when the lock
//! changes hands at every operation, as it does when each thread does a little work between
//! two critical sections, those RMWs are most of an acquisition: 2 threads, CS load 1,
//! `--outside-load 2`: 10–12k kops/s with 190 CPU ns/op against parking_lot's 18.9k and 106
//! ns. The poll's bound: 1 + 2 + 4 + 8 + 16 + 11 × 32 = 383 pauses, ≈ 10 µs here (the spin
//! cap is 4–40 µs), reached only where the same-owner stop is off (below) and the owner
//! keeps changing; a herd of pollers on a many-core machine is limited by the same OSQ-empty
//! check (a poller that finds a spinner goes to the OSQ).
//!
//! **Session 40: the spacing and the batch stop.** With a lock around nothing (CS load 0)
//! the owner re-locks within a few ns, and every poll of its line costs it a line transfer at
//! its next write: 65 ns between the guest's vCPUs in its near phase, ≈ 300 ns in its far
//! phase (lockbench's round-trip probe), against ≈ 7 ns per operation alone. Polled every 4
//! pauses, the owner stalled at almost every re-lock and the poller took the lock in one of
//! its gaps: 35–104 handovers per kop at 2 threads (lock-events build; parking_lot 10–21,
//! its waiter polls 3 times and then yields), and kslock ran at 0.3–0.5× parking_lot.
//! Spacing the polls out to the poll gap leaves the owner its line between polls, and a
//! proven re-lock sends the locker to yield and, with nobody else to run, to sleep, as
//! parking_lot's waiter does. A/B on one binary per side (the old spacing and the batch stop
//! switched by temporary environment variables; `scripts/ab-ratio.py 3 "head,q32,q32b" --
//! matrix --locks kslock-mutex,parking-lot-mutex,std-mutex --threads 2,8,32,96 --cs-load
//! 0,1,20,100 --secs 0.3 --warmup 0.05`, kslock ÷ best peer, medians of three alternated
//! runs; the machine was in mixed phases in most runs, single runs of a cell spread ±15%):
//!
//! | cells | old spacing, no batch stop | spacing to the poll gap | and the batch stop |
//! |---|---|---|---|
//! | CS load 0, 2 / 8 / 32 / 96 threads | 0.42 / 0.41 / 0.43 / 0.39 | 0.68 / 0.52 / 0.53 / 0.55 | 0.62 / 0.55 / 0.62 / 0.58 |
//! | the default matrix's 12 mutex cells, geo-mean | 1.016 | 1.012 | 1.064 |
//!
//! The same with two binaries (`b5a5e34` against `9f1ac93`, sides
//! `"head=@target/head/release/lockbench,new"`, three runs): CS load 0 at 2 / 8 / 32 / 96 threads 0.44 / 0.45 / 0.42 / 0.43 → 0.56 / 0.55
//! / 0.55 / 0.56; the 12 default cells 1.036 → 1.025, at 8+ threads 0.980 → 1.001 (single
//! cells moved by up to ±0.25 both ways between the two runs: noise at this run length).
//!
//! The batch stop alone, with the old spacing (same command, CS load 0 and 1, 2 / 8 / 32
//! threads): 0.655 → 0.666, within noise. Over 1 s at 32 / 96 threads, CS load 1 and 100,
//! kslock's kops/s and max/min per-thread ops did not move (25.8k / 25.2k and 2.1–3.5 at CS
//! load 1, old → new 25.8k / 25.4k and 2.3 / 3.5). The random workload (`workload random
//! --threads 2,8,32 --cs-load 1,20 --outside-load 0,10,100`, three runs) did not move either
//! (geo-mean 0.956 → 0.948 with the spacing alone): there the work outside the lock is
//! ≈ 50 ns and the lock changes hands every 3 operations (332 handovers per kop at 8 threads,
//! parking_lot 55, STARVED), the open gap of "a little work outside the lock" (README). CS
//! load 0 stays at ≈ 0.6×: parking_lot's waiters sleep while one thread runs, and kslock's
//! first spin still takes the lock in the owner's gaps before any re-check proves a batch.
//!
//! **The spin's batch stop** (session 40, switch `KSLOCK_OFF=spin_batch_stop`): the same proof
//! in the spin. A spinner (the OSQ head, a queue head that races, `try_lock_spin`) whose free
//! re-check (below) sees the owner back stops as if its budget ran out: the locker yields and,
//! with nobody else to run, queues, and the owner keeps its batch. Before, the spinner counted
//! the sighting as one more poll of the same owner and kept polling its line until it found the
//! lock free twice in a row. A/B on one binary (the stop behind a scratch environment switch,
//! `scripts/ab-ratio.py`, kslock ÷ best peer, medians of alternated runs):
//!
//! | cells (command) | without → with |
//! |---|---|
//! | CS load 0, 2 / 8 / 32 / 96 threads (`matrix --threads 2,8,32,96 --cs-load 0,1,20,100 --secs 0.3`, three runs) | 0.67 / 0.60 / 0.57 / 0.55 → 0.94 / 0.68 / 0.90 / 0.79 |
//! | the 12 default cells of that command, geo-mean (8+ threads) | 1.018 (0.981) → 1.034 (1.010) |
//! | CS load 1, outside load 2, 8 / 32 / 96 threads (`--cs-load 1,100 --outside-load 2,10,100 --secs 0.25`, two runs) | 0.78 / 0.77 / 0.78 → 0.91 / 1.02 / 0.96 |
//! | the 24 cells of that command, geo-mean | 0.975 → 1.005 |
//! | `workload random --threads 2,8,32 --cs-load 1,20 --outside-load 0,10,100`, 18 cells, two runs | 0.960 → 0.978 |
//! | over 1 s, 32 / 96 threads, CS load 1 / 20 / 100, max/min per-thread ops (two runs) | 1.9 / 1.4 / 1.4 and 4.3 / 2.0 / 2.6 → 1.9 / 1.4 / 1.3 and 3.9 / 2.3 / 2.2 |
//!
//! A/B (`KSLOCK_OFF=quick_poll`, the kslock mutex alone, `lockbench matrix --locks
//! kslock-mutex --threads 2,8,32,96 --cs-load 1,20,100 --outside-load 0,2,10 --secs 0.6
//! --warmup 0.1`, two runs of each side alternated, median kops/s, on ÷ off): outside load 2
//! at CS load 1: 1.70 / 1.55 / 1.83 / 1.75 (2 / 8 / 32 / 96 threads); outside 10, CS load 1:
//! 1.34–1.45; CS load 20, outside 10: 1.14 at 2 threads, 0.98–1.04 above; no outside work:
//! 0.95–1.07 (CS load 1: 0.98 / 0.97 / 1.02 / 0.97); CS load 100: 0.99–1.03. Geo-mean over
//! the 36 cells 1.10×. The cost is fairness where the lock changes hands at every operation
//! and threads outnumber CPUs: 96 threads, CS load 1, outside load 2, max/min per-thread
//! operations 17.9 vs 3.5 (21 vs 4.5 over 1 s); more running threads win the polls than the
//! window bounds, which covers only queued waiters.
//!
//! **Free re-check** (sessions 28–29; switches `KSLOCK_OFF=free_recheck`, `recheck_bound`): a
//! spinner (the quick poll after it has seen an owner, and the OSQ spin) that finds the lock free
//! does not CAS at once: it looks again `recheck_pauses()` later (1/8 of R6's poll gap, the quick
//! poll's widest spacing, ≈ 108 ns: about one cross-CPU line transfer) and takes the lock only if
//! it is still free; the same owner back ends the quick poll or the spin (since session 40,
//! "Quick poll" above; before, it counted as one poll of a batching owner). An owner that
//! re-locks faster than a handover costs keeps its batch: with a lock around nothing (CS load 0)
//! every poll saw the lock free in the owner's few-ns gap and the lock moved between the CPUs every
//! 40–70 operations (14–27 handovers per kop against parking_lot's 4–6), at 0.4–0.6x parking_lot.
//! Not where the lock's spins win after short waits ([`crate::spin`]'s statistics, as for "Long
//! sections that end" below): there the owner leaves for longer than the wait (CS load 100 with
//! outside load 100, where the ungated re-check cost 12–15%: the lock idled ≈ 108 ns longer at
//! every handover). A/B on the Intel guest (one binary, the switch as a temporary environment
//! variable; `scripts/ab-ratio.py 2 "base,on" -- matrix --locks
//! kslock-mutex,parking-lot-mutex,std-mutex --threads 2,8,32 --cs-load 0,1,100 --outside-load
//! 0,10,100 --secs 0.25 --warmup 0.05`, kslock ÷ best peer, medians of two alternated runs):
//!
//! | cells | off → on |
//! |---|---|
//! | CS load 0, no outside work, 2 / 8 / 32 threads | 0.51 / 0.39 / 0.38 → 1.03 / 0.96 / 0.94 |
//! | CS load 1, no outside work, 8 / 32 threads | 0.85 / 0.85 → 0.91 / 0.90 |
//! | CS load 100, no outside work, 2 / 8 threads | 1.32 / 0.99 → 1.18 / 1.20 |
//! | CS load 100, outside load 100, 2 / 8 / 32 threads | 1.01 / 0.94 / 0.83 → 0.93 / 0.94 / 0.81 |
//! | CS load 0 and 1, outside load 10 (the quick poll wins there in the owner's short gaps: `docs/mutex-tried.md`, session 30) | 0.43–0.53 → 0.43–0.48 |
//! | geo-mean of the 27 cells | 0.753 → 0.833 |
//!
//! Without the gate (36 cells, also CS load 20): 0.852 → 0.902, with CS load 100 / outside
//! load 100 at 0.88 / 0.91 / 0.84 → 0.75 / 0.79 / 0.76. The cells with 2–10 pauses of
//! outside work stay the open gap (README, known gaps): there the quick poll wins most slow
//! paths in the owner's short gaps (session 30, `docs/mutex-tried.md`).
//!
//! **Its bound** (session 29): the OSQ spinner re-checks only in the first half of its budget;
//! after that it takes the lock at its next sight of it free. Unbounded, a spinner that kept
//! deferring to a batching owner ran out of budget and queued (lock-events build, 96 threads, CS
//! load 1, 1 s: 0.3 queueings and 0.40 voluntary switches per kop against 0.0 and 0.01 without the
//! re-check, spin budgets spent 2.3 vs 1.2 per kop), and the sleepers fell behind: max/min
//! per-thread operations over 1 s at 32 / 96 threads were 1.8–3.6 / 1.7–8.3, medians 2.4 / 4.8 (six
//! runs in session 29, `lockbench matrix --locks kslock-mutex --threads 32,96 --cs-load 1 --secs 1
//! --warmup 0.1`; session 28 measured 2.2 / 4.2). The bounded and off figures below are three
//! rounds alternating the switches in one binary. With the bound: 1.31 / 1.59 / 2.15 at 32 threads
//! and 1.62 / 1.96 / 2.18 at 96, against 1.49 / 1.47 / 1.38 and 2.74 / 1.83 / 2.69 with the
//! re-check off (the 96-thread cell is near the STARVED line either way: README, known gaps).
//! Throughput with the bound against the re-check off, `scripts/ab-ratio.py` as above (two runs):
//! the 27 cells 0.769 → 0.852, CS load 0 at 2 / 8 / 32 threads 0.46 / 0.41 / 0.44 → 0.83 / 0.74 /
//! 0.78, the outside-load-10 cells unchanged (0.38–0.62 either way, noisy); the default matrix's
//! mutex cells (`--threads 2,8,32,96 --cs-load 1,20,100`, with glibc, three runs, `--secs 0.4`)
//! 0.928 → 0.931, single cells within the runs' spread (0.46–1.45 between runs of a cell).
//!
//! **Long sections that end** (session 25; switch `KSLOCK_OFF=quick_poll_long`): where the
//! lock's spins win after short waits ([`crate::spin`]'s statistics: a success rate of at
//! least 56/63 and a mean spin of at most 1 µs), the poll does not stop at a same-owner
//! streak and takes all 16 polls (≈ 1.3 µs on the Intel guest). With sections and outside
//! stretches of 100 pauses each, 99% of acquisitions waited for a release and 95% were won
//! by the OSQ spin, whose RMWs and owner-record loads cost line transfers that std's waiter,
//! which polls the lock word alone, does not pay (std won those cells by 1.2–1.3×). The
//! streak stop after 3 polls (≈ 30 ns) had been sized for a batching owner; there the
//! statistics read 26–50/63 and 1.3–4 µs and the stop stays. A/B (scratch build, temporary
//! switch; `scripts/ab-ratio.py 4 "base,ql" -- matrix --locks
//! kslock-mutex,parking-lot-mutex,std-mutex --threads 8,32,96 --cs-load 1,100 --outside-load
//! 0,100 --secs 0.25 --warmup 0.05`, kslock ÷ best peer, medians of four alternated runs):
//!
//! | cells | off → on |
//! |---|---|
//! | CS load 100, outside load 100, 8 / 32 / 96 threads | 0.813 / 0.789 / 0.747 → 0.919 / 0.876 / 0.798 |
//! | CS load 1, no outside work, 32 / 96 threads | 0.827 / 0.830 → 0.836 / 0.832 |
//! | CS load 1, no outside work, 8 threads (bimodal: runs at 0.88–0.96 and 1.1) | 1.032 → 0.912 |
//! | the other 6 cells | 1.00–1.04× off's ratio |
//! | geo-mean of the 12 cells | 0.930 → 0.949 |
//!
//! Without the gate (the streak never stops the poll) the same command gave the CS load 1
//! cells 0.863 / 0.836 / 0.825 → 0.749 / 0.754 / 0.750 (geo-mean 0.916 → 0.910); gated on
//! the success rate alone, one invocation of 2–96 threads, CS load 1 / 20 / 100, outside
//! load 0 / 100 (two runs): CS load 100 / outside 100 +5 to +12%, geo-mean 1.021 → 1.034.
//! With random (exponential) lengths, on `580822e` (`scripts/ab-ratio.py 2 "on,off=KSLOCK_OFF:quick_poll_long"
//! -- workload random --locks kslock-mutex,parking-lot-mutex,std-mutex --threads 8,32,96
//! --outside-load 0,100 --secs 0.3 --warmup 0.05`, kslock ÷ best peer, off → on): mean CS
//! load 100 / outside 100 at 8 / 32 / 96 threads 0.982 / 0.994 / 0.996 → 1.075 / 1.083 /
//! 1.071, mean CS load 20 / outside 100 0.944 / 0.939 / 0.958 → 1.006 / 0.973 / 0.941, the
//! other 12 cells 0.97–1.11× off's ratio; geo-mean of the 18 cells 0.925 → 0.946. The
//! 0.3 s cells' max/min per-thread ops at 96 threads with outside work were above 2 on both
//! sides (mean CS load 20: 7.2 off, 24.8 on).
//!
//! # Run limit
//!
//! A thread that releases mutexes while others wait in their queues, holds no turn (it took
//! the lock without a handover) and has not itself waited in kslock for longer than the window
//! maximum (1 ms) yields once, right after such a release, with the lock free
//! (`release_checked`, module doc of `turn`; switch `KSLOCK_OFF=run_limit`). The head's window
//! ends on a timer, but a head whose timer fires on the CPU where the owner re-locks from its
//! fast path, or where running threads keep winning the lock by polling and spinning, cannot
//! run until the scheduler's tick preempts them: turns of 3–4 ms (README, known gaps) that
//! nothing in the lock ended. The yield lets such a head run and ask for its handover; with
//! nobody else runnable on the CPU it returns at once (≈ 0.5 µs a millisecond). Cost on the
//! fast path: a thread-local countdown at every release; at every `every`-th release (the
//! turn's checks, module doc of `turn`, about every 2 µs while anyone waits, every 16th release
//! otherwise) one load of the wait list's word and,
//! when someone waits, a clock read (the order matters: "One transfer per unlock" below). The
//! running time restarts at every kslock futex wait of the thread and after each such yield.
//!
//! A/B (`KSLOCK_OFF=run_limit`, the kslock mutex alone, runs alternated, medians, on ÷ off;
//! max/min per-thread operations on / off):
//!
//! | command (runs per side) | cells | on ÷ off | max/min |
//! |---|---|---|---|
//! | `lockbench matrix --locks kslock-mutex --threads 2,8,32,96 --cs-load 1,20,100 --secs 1` (6) | all 12 | 0.98–1.01, geo-mean 0.995 | 96 threads, CS load 1 / 20 / 100: 2.5 / 1.5 / 1.5 vs 4.5 / 1.9 / 1.8 |
//! | same with `--outside-load 0,100 --secs 0.6` (4) | outside load 100 | 0.97–1.15 | 96 threads, CS load 1 / 20 / 100: 3.0 / 16 / 3.1 vs 12 651 / 389 / 22 |
//! | `lockbench workload random --locks kslock-mutex --threads 2,8,32,96 --cs-load 1,20,100 --outside-load 0,100 --secs 0.4` (4) | all 24 | 0.96–1.19, geo-mean 1.007 | 96 threads, mean CS load 100 / outside 100: 12.9 vs 112; CS load 20: 2.3 vs 4.4 |
//!
//! (The outside-load spreads "off" include threads that started late, before lockbench's start
//! gate replaced its barrier.) Uncontended lock + unlock (`lockbench matrix --locks
//! parking-lot-mutex,kslock-mutex --threads 1 --cs-load 0 --secs 0.5 --repeat 3`, binaries
//! alternated, four runs each): 5.75–5.83 ns with it, 5.55–5.68 ns before (parking_lot
//! 5.61–5.95 ns). The test `mutex_run_limit` bounds the spread with 96 threads and work
//! outside the lock.
//!
//! # Rotation yield
//!
//! A thread that enters the slow path owes a yield right after its next release, at most once
//! per 5 spin caps (≈ 200 µs here; module doc of `rotate`, switch `KSLOCK_OFF=rotation_yield`):
//! with more threads than CPUs and nobody asleep, a thread's operations are its share of CPU
//! time, which the scheduler splits unevenly unless the threads leave their CPUs often. A
//! yield before queueing, or queueing, counts as the thread's rotation. At 96 threads with
//! work outside the lock the yield took max/min per-thread operations from 7.8–38 to 2.1–4.1
//! over 0.4 s (2.9–6.1 to 1.9–2.0 over 1 s) and the p99.9 wait from 19–59 ms to 0–8 ms (19–33
//! ms to 0–14 ms over 1 s), at the same or higher throughput.
//!
//! The release fast path is unchanged: the owed yield sets the release countdown to the next
//! release, whose check path looks at it first (one thread-local read per check).
//!
//! # One transfer per unlock
//!
//! The release CAS is the unlock's first access to the lock's line, as in the rwsem (module doc
//! of [`crate::rwsem`], "One transfer per unlock"): the turn's countdown is thread-local and
//! comes first, and the wait list's word (same line) is loaded only at a due check. Before
//! (`e6513f1`–`441473b`) every release loaded the list word first: when another CPU had touched
//! the line during the section, the load fetched it shared and the CAS fetched it again. A
//! profile of the 8-thread CS load 1 cell (`perf record -e cpu-clock`, `lockbench matrix
//! --locks kslock-mutex --threads 8 --cs-load 1 --secs 3`) put 11% of the benchmark loop's
//! samples on that load, 22% on the release CAS and 7% on the lock CAS (parking_lot's loop: 20%
//! and 7%); after the change, 28% on the release CAS and none on a load. A/B, binaries
//! alternated, six runs each, kslock ÷ the best peer in the same run, medians
//! (`scripts/ab-ratio.py 6 … -- matrix --locks kslock-mutex,parking-lot-mutex,std-mutex
//! --threads 2,8,32,96 --cs-load 1,20,100 --secs 0.4 --warmup 0.1`): CS load 1 at 2 / 8 / 32 /
//! 96 threads 0.99 / 0.95 / 0.75 / 0.81 → 0.97 / 0.96 / 0.83 / 0.92 (kslock 16.7k / 20.8k →
//! 22.1k / 24.6k kops/s at 32 / 96 threads), CS load 20 and 100 0.93–1.30 → 0.94–1.31,
//! geo-mean of the 12 cells 1.005 → 1.028; with `--outside-load 0,10` (24 cells, four runs
//! each) 1.035 → 1.058. Uncontended (`--threads 1 --cs-load 0`, five runs each): kslock ÷
//! parking_lot 0.72–1.00 after, 0.74–1.20 before.
//!
//! **The countdown's own cost** (session 31). Uncontended, the countdown and the list's word
//! were the only instructions of the unlock that parking_lot's has not: 14% of a 1-thread CS
//! load 1 loop's samples (`perf record -e cpu-clock` over `taskset -c 1 lockbench matrix
//! --locks kslock-mutex --threads 1 --cs-load 1 --secs 2`), because a check found nobody
//! waiting at every release (`every` stayed 1 without waiters, no clock read adapting it).
//! Now a due check that finds nobody waiting doubles `every` up to 16 (`turn::quiet`, switch
//! `KSLOCK_OFF=quiet_checks`), and the countdown is one 32-bit load and store with the
//! restart inlined (it was a 64-bit word split in halves, and the ablation mask and the
//! restart were calls, each through the GOT: 2–5 ns a call on this VM, whose kernel runs with
//! IBRS). `taskset -c 1 lockbench matrix --locks kslock-mutex,parking-lot-mutex --threads 1
//! --cs-load 0,1 --secs 0.3 --warmup 0.05 --repeat 3`, binaries alternated, four runs each,
//! kslock ÷ parking_lot: CS load 0 0.88–0.92 → 0.96–1.01 (≈ 49.7k → 54.9k kops/s), CS load 1
//! 0.82–0.88 → 0.87–0.89; in the new binary, quiet checks off: CS load 0 0.98 either way, CS
//! load 1 0.80–0.81 against 0.86–0.94 on. The contended default cells (`scripts/ab-ratio.py 4
//! "base@OLD,new@NEW" -- matrix --locks kslock-mutex,parking-lot-mutex --threads 2,8,32,96
//! --cs-load 1,20,100 --secs 0.3 --warmup 0.05`): geo-mean 0.976 → 0.986, CS load 1 at 32 / 96
//! threads 0.82 / 0.81 → 0.84 / 0.86, the others within the runs' spread. A waiter that queues
//! behind an owner of an otherwise quiet lock is seen at most 16 releases later.
//!
//! **Quiet stop** (session 35, the AMD EPYC guest; switch `KSLOCK_OFF=quiet_stop`). The countdown's
//! store still cost the uncontended loop ≈ 2.5 ns of its ≈ 12 on this VM: a scratch build with no
//! countdown at all ran a 1-thread CS load 0 loop at 0.99–1.07× parking_lot's time per lock +
//! unlock (7.2–9.9 ns) where `main` took 1.26–1.29× (≈ 12 ns), three alternated runs each (an x86
//! locked CAS waits for the store before it to leave the store buffer). Now the countdown is off in
//! a thread that does not contend: a due check that finds nobody waiting once the spacing has
//! reached 16 releases (after quiet checks at releases 1, 2, 4, 8 and 16 of a quiet run) turns it
//! off (`turn::quiet`), and a release then only loads it. It is on again, with a check at the next
//! release, as soon as the thread enters a mutex slow path (lock or unlock) or begins a turn
//! (`turn::started`); a thread starts with it off. What the checks were for needs contention, and
//! every way in goes through those paths: a waiter that queues behind an owner whose countdown is
//! off arms `WAKE_HEAD` (the owner's next unlock takes the slow path and turns its countdown on)
//! or, once due, asks with `HANDOFF`. Old and new binaries alternated, kslock ÷ parking_lot's time,
//! `lockbench matrix --locks kslock-mutex,parking-lot-mutex --threads 1 --cs-load 0,1 --secs 0.3
//! --warmup 0.05 --repeat 3`, four runs each: CS load 0 1.30 / 1.30 / 1.31 / 1.32 → 1.30 / 0.99 /
//! 1.17 / 1.28 (kslock 11.7–12.3 → 9.0–11.9 ns; a variant that also reset the spacing to 1 at each
//! start: 0.79 / 1.21 / 0.87 / 1.38); the new binary's times fall in two groups, ≈ 9 and ≈ 12 ns,
//! from one invocation to the next. CS load 1: 0.996–1.22 → 1.01–1.06. Contended
//! (`scripts/ab-ratio.py 3 "old@OLD,new" -- matrix --locks
//! kslock-mutex,parking-lot-mutex,pthread-mutex --threads 2,8,32,96 --cs-load 1,20,100
//! --outside-load 0,100 --secs 0.3 --warmup 0.05`, that variant): geo-mean of the 24 cells 1.057 →
//! 1.059; the final one, 6 runs of the 2-thread CS load 20 / 100 cells: 1.316 / 1.259 → 1.367 /
//! 1.287.
//!
//! **An inlined release** (session 36, the same guest). The ≈ 12 ns group above was codegen, not
//! the lock: `release` (countdown, turn check, rotation yield, release CAS) was too big for the
//! compiler to inline into the caller, so every unlock was a call with three register pushes
//! and pops around one CAS (`perf annotate` of the 1-thread CS load 0 loop: 33% of the samples
//! in the out-of-line `release`). The due-check body (`release_due`) is now `#[cold]` and
//! out of line, and `release` is inlined: the countdown's load and test, the release CAS, and
//! calls only on the rare paths. Binaries alternated, the command above with `--repeat 7`, three
//! runs each: kslock ÷ parking_lot's time 1.21 / 1.32 / 0.92 → 1.08 / 1.15 / 1.08 (kslock 9.4–12.9
//! → 9.9–10.1 ns; the old binary's ≈ 9 ns invocations are the fast group, which the new one no
//! longer needs). Contended, no change beyond the runs' spread (`scripts/ab-ratio.py 3
//! "old=@OLD,new" -- matrix --locks kslock-mutex,parking-lot-mutex --threads 1,2,8,32,96
//! --cs-load 1,20,100 --secs 0.3 --warmup 0.05`): geo-mean of the 15 cells 1.081 → 1.105.
//! The pair alone, in a loop that does nothing else (`lockbench uncontended --locks
//! kslock-mutex,parking-lot-mutex,std-mutex`, 7 interleaved repeats of 20 M pairs, three runs):
//! kslock 5.90 / 6.15 / 6.14 ns, 0.936 / 0.973 / 0.979× parking_lot's. A small standalone loop
//! built against the code before this change gave 0.93–0.97× as well: the compiler inlined
//! `release` into a small caller, not into lockbench's worker loop, and the attribute makes
//! that independent of the caller's size.
//!
//! # No lost wakeup
//!
//! An unlock wakes a sleeping head only if its release CAS consumed `WAKE_HEAD`, or it hands
//! the lock over. A head arms `WAKE_HEAD` with a CAS that succeeds only while the lock is held
//! (if it is free, the head takes it instead), so the unlock of that hold is later in the owner
//! word's modification order and sees the bit. A head that sleeps without `WAKE_HEAD` has a
//! timer (its window) and needs no wakeup. A head leaving the list without the lock passes its
//! turn on: it arms `WAKE_HEAD` for the new head if the lock is held, or wakes it if it is free
//! (issue 8, defect 1).
//!
//! # Ablation (`KSLOCK_OFF`, [`crate::ablate`])
//!
//! The switches: `owner_turn` and `grant_wait` (module doc of `turn`, with their A/B),
//! `run_limit` and `quick_poll` (above), `pre_queue_yield`, `censored_budget`
//! ([`crate::spin`]).
//!
//! `pre_queue_yield`, on c529394 plus the change, two runs of each side alternated
//! (`KSLOCK_OFF=pre_queue_yield lockbench matrix --locks kslock-mutex --threads 2,8,32,96
//! --cs-load 1,20,100 --outside-load 0,100 --secs 0.5 --warmup 0.1 --repeat 2`), kops/s summed
//! over both runs, on ÷ off (CPUs busy on / off):
//!
//! | cells | on ÷ off |
//! |---|---|
//! | outside load 0, all 12 cells | 0.98–1.01 |
//! | outside 100, CS load 1, 2–96 threads | 1.00–1.05 |
//! | outside 100, CS load 20, 8 / 32 / 96 threads | 1.30 / 1.36 / 1.43 (1.97 / 1.85 / 1.93 CPUs vs 1.52 / 1.40 / 1.29) |
//! | outside 100, CS load 100, 8 / 32 / 96 threads | 1.56 / 1.28 / 1.20 (1.75 / 1.47 / 1.34 vs 1.20 / 1.20 / 1.21) |
//!
//! The turns (module doc of `turn`, switches `owner_turn` and `grant_wait`) replaced three
//! earlier mechanisms, each measured in its time: the
//! unlocker woke the next head before the grant (`baton`) and the new owner yielded once after
//! its pick-up (`pickup_yield`), so that a next head queued on the owner's CPU ran at once
//! (without them, max/min per-thread operations 12–19 instead of 1.9–2.7 at 96 threads, CS
//! load 100, for 0.82–0.83× throughput); a head appointed by a handover slept on its window
//! instead of racing the new owner (`appointed_sleep`, 0.94–1.05×). The turn keeps the
//! fairness without the wake syscall under the lock or the yield.
//!
//! Dropped with the turns: **`skip_spin`**, an unlocker that handed the lock over queued at
//! its next lock of it without spinning (0.98× on 8837c79, 96 threads, CS load 100: less CPU
//! per window). With turns every turn ends in a handover, and each old owner that queued at
//! once kept the queue long: with work outside the lock, where a spin mostly succeeds, the
//! lock then rotated among sleepers and a CPU idled (lock events, 32 threads, CS load 100,
//! `--outside-load 100`: 20 queueings and 16 handovers per kop against 0.7 and 0.1 without
//! turns; 1.68 CPUs busy, 258 vs 331 kops/s). `KSLOCK_OFF=skip_spin` A/B with the turns
//! (`lockbench matrix --locks kslock-mutex --threads 8,32,96 --cs-load 1,20,100
//! --outside-load 0,100 --secs 0.4`, four runs per side alternated, on ÷ off): 0.70–0.80 at
//! CS load 100 with outside load 100 (8–96 threads), 0.94–1.01 in the other outside-load
//! cells, 0.97–1.05 without outside work; geo-mean 0.95. Turns without it against the
//! baton and pick-up yield (binaries alternated, same command with 2–96 threads and
//! parking_lot beside): 0.97–1.11 with outside load 100, 0.97–1.08 without at 8–96 threads
//! (parking_lot's own cells moved 0.94–1.08 between the sides), 0.92–1.01 at 2 threads.
//!
//! Mechanisms tried and dropped, each with its measurement (from session 4 on), are in
//! `docs/mutex-tried.md` in the repository.
//!
//! # Memory orderings
//!
//! * The lock CASes (fast path, `try_acquire`, the head's pick-up) are Acquire and pair with
//!   the Release of the unlock or handoff CAS that freed or handed over the lock.
//! * Flag RMWs (`WAKE_HEAD`, `HANDOFF`) are Relaxed: they hand nothing over; the owner word's
//!   modification order alone decides which unlock sees them, and the list they describe is
//!   guarded by the wait_lock (Acquire/Release).
//! * Spinners load the owner word Relaxed and then read the record it names (`parked`, `cpu`):
//!   the word holds a record *id*, which [`crate::thread::owner_rec`] turns into a record
//!   through the pool's segment table (Release publication, Acquire load), so the record's
//!   initialisation happens-before those reads whatever ordering the owner word had. Records
//!   are never freed and all their fields are atomics: a stale word gives a stale hint
//!   (re-checked against the word, R1 of [`crate::spin`]), never a bad read.
//!
//! # Misuse
//!
//! Unlocking a mutex this thread does not hold (double unlock, unlock from another thread) fails
//! the unlock fast path and is caught by the slow path, which panics: free, so always on. A
//! blocking `lock` by the thread that already holds the mutex panics instead of deadlocking.
//!
//! Embedders whose locks any thread may release (glibc's normal `pthread_mutex_t`, which
//! programs use as a binary semaphore: the pthread interposer) call
//! [`RawMutex::unlock_on_behalf`], the release the holder would make, made by another thread,
//! and [`RawMutex::lock_or_await_release`], a `lock` that lets the holder wait, like any
//! locker, for that release of its own hold. Both take the existing slow paths with the
//! holder's owner word in place of the caller's; the loom models
//! `loom_mutex_unlock_on_behalf_of_the_holder` and
//! `loom_mutex_holder_awaits_the_release_on_its_behalf` cover them.

use core::marker::PhantomData;

use crate::osq::Osq;
use crate::policy::{DefaultPolicy, MutexPolicy};
use crate::spin::SpinStats;
use crate::sync::{loom_const_fn, AtomicU32, AtomicU64, Ordering::*};
use crate::sys;
use crate::thread::{current, current_word, OWNER_FLAGS};
use crate::wait::{WaitList, WaitLock};

mod queue;
mod rotate;
mod slow;
mod turn;

/// The head waiter sleeps until an unlock wakes it.
const WAKE_HEAD: u64 = 1 << 0;
/// The next unlock hands the lock to the head waiter.
const HANDOFF: u64 = 1 << 1;
/// The lock was handed to the named owner, who has not picked it up yet.
const PICKUP: u64 = 1 << 2;
/// All flag bits.
const FLAGS_MASK: u64 = WAKE_HEAD | HANDOFF | PICKUP;
const _: () = assert!(FLAGS_MASK & !OWNER_FLAGS == 0);

/// The owner word in a lock word (0 = free).
#[inline]
fn owner_of(word: u64) -> u64 {
    word & !OWNER_FLAGS
}

/// The raw kernel-style mutex. Use it through [`Mutex`] (`lock_api`), or directly.
///
/// `P` selects seed policies ([`crate::policy`]); the default costs nothing.
/// Size: 32 bytes on 64-bit targets; all-zero is a valid unlocked mutex. `repr(C)`, with a
/// layout that does not depend on `P` (the condvar relies on that when it requeues onto a
/// mutex it knows only by address) and with bytes 16–19 never touched by the mutex: they are
/// left to an embedder (the pthread interposer keeps glibc's mutex kind there, where glibc's
/// static initialisers write it).
#[repr(C)]
pub struct RawMutex<P: MutexPolicy = DefaultPolicy> {
    owner: AtomicU64,
    list: WaitList,
    /// Bytes 16–19: never read or written by the mutex (type doc).
    _embedder: AtomicU32,
    wait_lock: WaitLock,
    osq: Osq,
    stats: SpinStats,
    _policy: PhantomData<fn() -> P>,
}

#[cfg(not(kslock_loom))]
const _: () = {
    assert!(core::mem::size_of::<RawMutex>() == 32);
    assert!(core::mem::offset_of!(RawMutex, _embedder) == 16);
};

// SAFETY: all fields are atomics (or guarded by the wait_lock); the type is a lock.
unsafe impl<P: MutexPolicy> Sync for RawMutex<P> {}
// SAFETY: as above; a RawMutex holds no thread-bound data.
unsafe impl<P: MutexPolicy> Send for RawMutex<P> {}

impl<P: MutexPolicy> core::fmt::Debug for RawMutex<P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RawMutex")
            .field("locked", &self.is_locked())
            .finish()
    }
}

impl<P: MutexPolicy> Default for RawMutex<P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P: MutexPolicy> RawMutex<P> {
    loom_const_fn! {
        /// A new, unlocked mutex (all-zero).
        pub fn new() -> Self {
            RawMutex {
                owner: AtomicU64::new(0),
                list: WaitList::new(),
                _embedder: AtomicU32::new(0),
                wait_lock: WaitLock::new(),
                osq: Osq::new(),
                stats: SpinStats::new(),
                _policy: PhantomData,
            }
        }
    }

    /// Acquires the mutex, spinning while the owner runs and sleeping otherwise.
    ///
    /// # Panics
    /// If the calling thread already holds it (that would deadlock).
    #[inline]
    pub fn lock(&self) {
        // Acquire pairs with the Release of the unlock that freed the lock.
        if self
            .owner
            .compare_exchange_weak(0, current_word(), Acquire, Relaxed)
            .is_err()
        {
            self.lock_contended(current(), None);
        }
    }

    /// Bytes 16–19, which the mutex never reads or writes (type doc): an embedder's word (the
    /// hybrid rw lock keeps its mode epoch's start there).
    #[inline]
    pub(crate) fn embedder_word(&self) -> &AtomicU32 {
        &self._embedder
    }

    /// The lock fast path alone: one CAS from free (no flags) to held by the calling thread.
    /// For embedders that decide what to do with a busy lock themselves (the hybrid rw lock).
    #[inline]
    pub(crate) fn try_lock_free(&self) -> bool {
        // Acquire pairs with the Release of the unlock that freed the lock.
        self.owner
            .compare_exchange_weak(0, current_word(), Acquire, Relaxed)
            .is_ok()
    }

    /// Acquires the mutex only if it is free right now. Never spins, never sleeps (like the
    /// kernel's `mutex_trylock`); it may overtake sleeping waiters.
    #[inline]
    pub fn try_lock(&self) -> bool {
        self.owner
            .compare_exchange(0, current_word(), Acquire, Relaxed)
            .is_ok()
            || self.try_acquire(current(), false).is_ok()
    }

    /// Seed S3: like [`try_lock`](Self::try_lock), but if the owner is running, spin (through
    /// the OSQ, under the adaptive budget, at most 1 µs, the budget floor) for it to release
    /// before failing. A failed try_lock usually costs its caller an unlock/relock sequence,
    /// which is dearer than a short spin. Never sleeps.
    ///
    /// Why at most 1 µs (session 37; switch `KSLOCK_OFF=trylock_spin_cap`): the caller of a
    /// try_lock usually holds another lock (lock coupling), and every µs it spins, everyone
    /// queued on that lock waits too. In lockbench's `tree` (every descent holds the root
    /// while it tries a child) the uncapped spin, up to the lock's budget of several µs, cost
    /// 15–33%: `scripts/ab-ratio.py 3 "cap,nocap=KSLOCK_OFF:trylock_spin_cap" -- workload tree
    /// --locks kslock-mutex,parking-lot-mutex,std-mutex --threads 2,8,32 --secs 0.4 --warmup
    /// 0.1` (the AMD guest, kslock ÷ the best peer, medians of three) gave 0.936 / 0.753 /
    /// 0.665 uncapped and 0.943 / 0.907 / 0.899 capped at 2 / 8 / 32 threads; in `lockbench
    /// seeds --only S3 --secs 0.4 --warmup 0.1 --repeat 3`, try_lock_spin against try_lock went
    /// from 2034 / 1588 / 1459 against 2374 / 1898 / 1687 kops/s (uncapped) to 2021 / 1888 /
    /// 1686 against 1999 / 1889 / 1671 (capped). The capped spin does not feed the lock's
    /// statistics, which estimate its uncapped races.
    pub fn try_lock_spin(&self) -> bool {
        let me = current();
        self.try_acquire(me, false).is_ok() || self.optimistic_spin(me)
    }

    /// Acquires the mutex unless `timeout` passes first (a `timeout` too large for the clock
    /// waits for ever). `true` = acquired.
    pub fn try_lock_for(&self, timeout: std::time::Duration) -> bool {
        self.lock_until(sys::deadline_after(timeout))
    }

    /// Acquires the mutex unless `deadline` passes first (a deadline in the past still takes a
    /// free mutex). `true` = acquired.
    pub fn try_lock_until(&self, deadline: std::time::Instant) -> bool {
        self.lock_until(sys::deadline_from_instant(deadline))
    }

    /// `lock` with a monotonic deadline (ns): the fast path, then the timed slow path.
    pub(crate) fn lock_until(&self, deadline: u64) -> bool {
        self.owner
            .compare_exchange(0, current_word(), Acquire, Relaxed)
            .is_ok()
            || self.lock_contended(current(), Some(deadline))
    }

    /// Locks the mutex like [`lock`](Self::lock) (or [`try_lock_for`](Self::try_lock_for) with
    /// a `timeout`), except that a thread that holds it already waits like any other locker
    /// until a thread releases that hold on its behalf
    /// ([`unlock_on_behalf`](Self::unlock_on_behalf)), instead of panicking. This is glibc's
    /// normal mutex, which a thread may lock again to wait for another thread's unlock (a
    /// binary semaphore; the pthread interposer). Without a timeout, a hold that nobody
    /// releases blocks for ever, as in glibc. `false` = the timeout passed first. (No fast
    /// path: its callers usually hold the lock; the slow path takes a free one first.)
    pub fn lock_or_await_release(&self, timeout: Option<std::time::Duration>) -> bool {
        self.lock_slow(current(), timeout.map(sys::deadline_after), true)
    }

    /// Releases the mutex. Sleeping waiters may be overtaken by running lockers within the head
    /// waiter's fairness window (module doc).
    ///
    /// # Safety
    /// The calling thread holds the mutex. (Violations are detected and panic: see "Misuse".)
    #[inline]
    pub unsafe fn unlock(&self) {
        self.release(false);
    }

    /// Releases the mutex and, if anyone waits, hands it directly to the head waiter.
    ///
    /// # Safety
    /// The calling thread holds the mutex.
    pub unsafe fn unlock_fair(&self) {
        self.release(true);
    }

    /// The unlock fast path: one CAS from "held by me, no flags" to 0. While others wait,
    /// every few releases check the owner's turn first (`turn`): its end hands the lock over.
    /// The countdown (thread-local) comes first, the wait list's word only when it runs out:
    /// outside a due check the release CAS must be the unlock's first access to the lock's
    /// line (module doc, "One transfer per unlock"). A release whose countdown ran out also
    /// makes an owed rotation yield (`rotate`) after the release.
    #[inline(always)]
    fn release(&self, fair: bool) {
        if !fair && turn::due_now() && self.release_due() {
            return;
        }
        self.release_now(fair);
    }

    /// A release of the caller's hold whose countdown ran out: an owed rotation yield (after
    /// the release), or the turn check if anyone waits. `false` = nothing was due: the caller
    /// releases as usual. Out of line, so that `release` stays small enough to inline (module
    /// doc, "An inlined release").
    #[cold]
    #[inline(never)]
    fn release_due(&self) -> bool {
        if rotate::take() {
            self.release_now(false);
            rotate::after_release();
            return true;
        }
        if self.waiters_at_check() {
            self.release_checked();
            return true;
        }
        false
    }

    /// At a due check: does anyone wait? If not, the check found a quiet lock, and the next one
    /// comes later (`turn::quiet`).
    #[inline]
    fn waiters_at_check(&self) -> bool {
        if self.list.is_empty() {
            turn::quiet();
            return false;
        }
        true
    }

    /// The release itself: the CAS to 0, or the slow path when it fails (flags set) or for a
    /// fair unlock.
    #[inline]
    pub(super) fn release_now(&self, fair: bool) {
        // Release pairs with the Acquire of the next acquisition.
        if fair
            || self
                .owner
                .compare_exchange(current_word(), 0, Release, Relaxed)
                .is_err()
        {
            self.unlock_slow(current(), fair);
        }
    }

    /// Releases the mutex if the calling thread holds it and says whether it did: for
    /// embedders that must report an unlock by a thread that does not hold the mutex as an
    /// error rather than a panic (the pthread interposer's `EPERM`). One ownership check, the
    /// unlock fast path's own CAS.
    #[inline]
    pub fn unlock_if_owned(&self) -> bool {
        let me = current_word();
        if turn::due_now() && owner_of(self.owner.load(Relaxed)) == me && self.release_due() {
            return true;
        }
        // Release pairs with the Acquire of the next acquisition.
        match self.owner.compare_exchange(me, 0, Release, Relaxed) {
            Ok(_) => true,
            Err(o) if owner_of(o) == me => {
                self.unlock_slow(current(), false);
                true
            }
            Err(_) => false,
        }
    }

    /// Releases the mutex whichever thread holds it, and says whether it did: `false` when it
    /// is not locked, or is being handed to a new owner whose lock has not returned yet. For
    /// embedders whose locks any thread may release: glibc lets any thread unlock a normal
    /// `pthread_mutex_t`, which programs use as a binary semaphore (the pthread interposer).
    /// The holder's own release would also check its turn (module doc of `turn`); this one
    /// releases at once.
    ///
    /// # Safety
    /// Nobody else releases the hold this call releases (its holder included): the caller
    /// takes over the holder's unlock.
    pub unsafe fn unlock_on_behalf(&self) -> bool {
        self.unlock_if_owned() || self.release_on_behalf(current())
    }

    /// Is the mutex held by some thread (a hint)?
    #[inline]
    pub fn is_locked(&self) -> bool {
        owner_of(self.owner.load(Relaxed)) != 0
    }

    /// Are threads waiting in the queue (a hint)?
    #[inline]
    pub fn has_waiters(&self) -> bool {
        !self.list.is_empty()
    }

    /// Does the calling thread hold the mutex?
    pub fn is_owned_by_current_thread(&self) -> bool {
        owner_of(self.owner.load(Relaxed)) == current_word()
    }

    /// Condvar support: the wait_lock, list and spin statistics, for requeueing condvar
    /// waiters.
    pub(crate) fn requeue_parts(&self) -> (&WaitLock, &WaitList, &SpinStats) {
        (&self.wait_lock, &self.list, &self.stats)
    }
}

#[cfg(not(kslock_loom))]
mod api {
    use super::*;

    // SAFETY: `lock`/`try_lock` give exclusive ownership until `unlock` (module doc), and
    // unlocking requires the locking thread (GuardNoSend).
    unsafe impl<P: MutexPolicy> lock_api::RawMutex for RawMutex<P> {
        #[allow(clippy::declare_interior_mutable_const)]
        const INIT: Self = RawMutex::new();
        type GuardMarker = lock_api::GuardNoSend;

        #[inline]
        fn lock(&self) {
            RawMutex::lock(self)
        }
        #[inline]
        fn try_lock(&self) -> bool {
            RawMutex::try_lock(self)
        }
        #[inline]
        unsafe fn unlock(&self) {
            // SAFETY: forwarded caller contract.
            unsafe { RawMutex::unlock(self) }
        }
        #[inline]
        fn is_locked(&self) -> bool {
            RawMutex::is_locked(self)
        }
    }

    // SAFETY: as for RawMutex; `unlock_fair` hands the lock to the head waiter.
    unsafe impl<P: MutexPolicy> lock_api::RawMutexFair for RawMutex<P> {
        unsafe fn unlock_fair(&self) {
            // SAFETY: forwarded caller contract.
            unsafe { RawMutex::unlock_fair(self) }
        }
        unsafe fn bump(&self) {
            if self.has_waiters() {
                // SAFETY: forwarded caller contract; we re-take the lock before returning.
                unsafe { RawMutex::unlock_fair(self) };
                RawMutex::lock(self);
            }
        }
    }

    // SAFETY: timed acquisitions give the same exclusion as `lock` when they return true.
    unsafe impl<P: MutexPolicy> lock_api::RawMutexTimed for RawMutex<P> {
        type Duration = std::time::Duration;
        type Instant = std::time::Instant;
        fn try_lock_for(&self, timeout: Self::Duration) -> bool {
            RawMutex::try_lock_for(self, timeout)
        }
        fn try_lock_until(&self, timeout: Self::Instant) -> bool {
            RawMutex::try_lock_until(self, timeout)
        }
    }
}

/// A mutual-exclusion lock protecting a `T`, with kernel-mutex behaviour ([`RawMutex`]).
#[cfg(not(kslock_loom))]
pub type Mutex<T> = lock_api::Mutex<RawMutex, T>;
/// A [`Mutex`] with a non-default policy (e.g. `MutexWith<kslock::policy::PackedOsq, T>`).
#[cfg(not(kslock_loom))]
pub type MutexWith<P, T> = lock_api::Mutex<RawMutex<P>, T>;
/// RAII guard of a [`Mutex`].
#[cfg(not(kslock_loom))]
pub type MutexGuard<'a, T> = lock_api::MutexGuard<'a, RawMutex, T>;
/// A guard of a mapped [`Mutex`] borrow.
#[cfg(not(kslock_loom))]
pub type MappedMutexGuard<'a, T> = lock_api::MappedMutexGuard<'a, RawMutex, T>;

/// Creates a [`Mutex`] in a `const` context (e.g. a `static`).
#[cfg(not(kslock_loom))]
pub const fn const_mutex<T>(val: T) -> Mutex<T> {
    Mutex::const_new(RawMutex::new(), val)
}

#[cfg(all(test, not(kslock_loom)))]
mod tests;
