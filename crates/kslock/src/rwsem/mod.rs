//! The kernel rw-semaphore (kernel-locks.md A) for user space: one atomic add to read-lock,
//! one CAS to write-lock; writers spin through the OSQ while a writer owner runs and for a
//! bounded time on reader owners, keeping new readers out meanwhile (`WRITER_WANT`); blocked
//! readers wait out a writer phase on the count word before they queue and are woken in bulk
//! (up to 256 per wake, also those queued behind writers); the head writer reserves the lock
//! (HANDOFF) against readers while it is awake, and against writers after
//! [`RwSemPolicy::HANDOFF_NS`] (≈ 4 ms) of waiting.
//!
//! # `count` (64 bits)
//!
//! | bits | name | meaning | who sets / clears it |
//! |------|------|---------|----------------------|
//! | 0 | `WRITER_LOCKED` | a writer holds the lock | set by the writer's CAS (fast path, spinner, `try_write_lock` under the wait_lock); cleared by `write_unlock` / `downgrade` (the holder) |
//! | 1 | `WAITERS` | the wait list is non-empty (unlock must wake) | set and cleared **only under the wait_lock**, in the same RMW as the list change's count effect |
//! | 2 | `HANDOFF` | the lock is reserved for the head waiter: no fast-path reader, stealing reader, spinning or non-first writer may take it | set **only under the wait_lock** (a writer past its timeout in `try_write_lock`; `mark_wake` when a writer stole the lock from a head reader past its timeout; a fair unlock, `reserve_for_head`); cleared only under the wait_lock (the head takes the lock, readers are granted, or the list empties) |
//! | 3 | `WOKEN` | a wakeup of the head **writer** is in flight, or the head writer sleeps on its window's timer: unlocks skip `rwsem_wake` (no wait_lock, no second wake); not a kernel bit (Go's `mutexWoken`, kslock's mutex `WOKEN`) | set under the wait_lock by `mark_wake` when it queues the head writer's wakeup, and by the head writer itself after a lost retry against a writer owner ("A woken head sleeps out its window") | cleared under the wait_lock by a queued writer before each retry, and when a waiter leaves the list |
//! | 4 | `WRITER_WANT` | a running writer (the OSQ holder) waits for the readers to drain: no fast-path, spinning or granted reader joins; not a kernel bit (parking_lot's writer bit set while readers drain plays this part) | the OSQ-holding writer, when it finds the lock held by readers only (RMW) | the same writer: in the CAS that takes the lock, or when its spin ends without it (`drop_want`, which then wakes the waiters an unlock of its own would have woken) |
//! | 5 | `UPGRADING` | the upgradable holder waits for the other readers to leave so it can turn its bias into the writer bit: no fast-path, spinning, stealing or granted reader joins (recursive reads still do) | the upgradable holder (RMW) in `upgrade` | the same holder: in the CAS that makes it the writer, or when a timed upgrade gives up |
//! | 6–7 | — | reserved (0) | — |
//! | 8–62 | readers | reader count, `READER_BIAS` = 1 << 8 | any reader (add/sub), `mark_wake` (adds the biases of granted readers) |
//! | 63 | `READ_FAIL` | overflow guard: never set in a valid state (it would take 2^55 read locks) | — (a reader that sees it takes its bias back and panics) |
//!
//! Unlocked = 0. An upgradable holder is a reader: one bias in the reader bits, plus
//! `AUX_UPGRADABLE` in `aux` (below). The reader bits do not prove read ownership: a reader whose fast path failed
//! keeps its bias in `count` ("phantom bias") until it steals the lock or queues; so "writer
//! bit + reader biases" is a legal transient state, and whoever removes a phantom bias behaves
//! like a read unlock (wakes when the lock becomes free with waiters) or re-checks the count
//! after queueing.
//!
//! # `aux` (32 bits; the futex word of upgradable waits)
//!
//! | bit | name | meaning | who sets / clears it |
//! |-----|------|---------|----------------------|
//! | 0 | `AUX_WAKING` | S0 `WakeFlag`: an unlocker is waking | below, "Unlock wake path" |
//! | 1 | `AUX_WAKE_PENDING` | S0 `TrylockIfSpinner`: a wake left to the wait_lock holder | below |
//! | 2 | `AUX_READER_SPINNER` | S4 `Limited`: a representative reader spins | below |
//! | 3 | `AUX_UPGRADABLE` | a thread holds the upgradable lock (or is upgrading it) | set by a reader that holds a read lock (RMW; it failed if the bit was set) or by a writer in `downgrade_to_upgradable`; cleared by its holder (unlock, downgrade to read, or the upgrade's CAS) |
//! | 4 | `AUX_SLEEPERS` | threads sleep on `aux` waiting for bit 3 to clear | a would-be upgradable holder (RMW) before its futex wait; cleared by the release of bit 3, which wakes all of them |
//! | 5 | `AUX_DRAIN_SLEEP` | the upgrader sleeps on `aux` until its bias is the only one | the upgrader (RMW) before its futex wait; cleared by the reader unlock that leaves one bias while `UPGRADING` is set, which wakes it (`wake_upgrader`), or by the upgrader's release of bit 3 |
//!
//! # Upgradable reads
//!
//! An upgradable read (lock_api's `RawRwLockUpgrade`) is a read lock plus `AUX_UPGRADABLE`,
//! which one thread at a time may own, and only while it holds a read bias or the write lock
//! (so a writer can take the bit in `downgrade_to_upgradable` without waiting). A would-be
//! holder takes a read lock the usual way (fair to queued writers), then tries the bit; if
//! another thread owns it, it drops its read lock before it waits on `aux` (waiting with the
//! read lock held would deadlock with the owner's upgrade). The upgrade raises `UPGRADING`,
//! which keeps new readers out as `WRITER_WANT` does, waits until its own bias is the only
//! one (spin under the cap, then sleep on `aux`: the reader unlock that leaves one bias behind
//! while `UPGRADING` is set wakes it) and turns that bias into the writer bit in one CAS: no
//! writer can enter in between, since its bias is counted throughout. Writers (queued or
//! spinning) wait for it like for any reader. A timed upgrade that gives up clears
//! `UPGRADING` and lets the readers that queued meanwhile join its read lock.
//!
//! The fair unlocks (`RawRwLockFair`, `unlock_upgradable_fair`) reserve the lock for the head
//! waiter (`HANDOFF`, under the wait_lock) before releasing, so running threads cannot overtake
//! the waiters the release wakes; `bump_*` do that only when someone waits.
//!
//! # `owner` (a hint; never proves ownership)
//!
//! | bits | meaning | who writes |
//! |------|---------|------------|
//! | 0 `OWNER_READER` | READER_OWNED: readers hold (or last held) the lock; the address names the last reader | readers on acquire (only if the word changes), `mark_wake` on a grant, `downgrade` |
//! | 1 `OWNER_NONSPINNABLE` | a writer spun on these readers past its bound: writers queue at once until readers next drain | set by a spinning writer (CAS, only while still reader-owned); cleared when a reader unlock or an enqueue finds the lock free, or by a writer's owner store |
//! | 2 `OWNER_TURN` | the writer named released the lock while the head writer slept on its window: its fast path may take the lock back past the head ("A woken head sleeps out its window"); never names a holder (`writer_owner` reads it as none) | the releasing writer (CAS from 0, after its release) | any owner store (a writer that takes the lock, a reader's `set_reader_owned`) |
//! | 7–63 | the owner's `ThreadRec` address (128-aligned, type-stable) or 0 | a writer stores itself after acquiring and 0 before releasing `count` |
//!
//! In user space nothing disables preemption, so `owner` can lag `count` arbitrarily (a writer
//! preempted between its CAS and its owner store): every spin on a 0 owner is budgeted.
//!
//! # Paths
//!
//! ```text
//!  read:  fetch_add(+BIAS) ──no WRITER/HANDOFF/WANT/READ_FAIL──> held
//!            └─> read_contended: [S4 spin] ─> re-check ─> drop bias, spin on count
//!                                ─> queue: spin on the grant ─> sleep until granted
//!  write: CAS 0 -> WRITER_LOCKED ──> held
//!            └─> write_contended: OSQ spin (writer owner runs / bounded on readers)
//!                                 ─> queue: try_write_lock ─> [head+HANDOFF: spin] ─> sleep
//!  unlock: sub ──WAITERS and lock now free (read) / WAITERS (write)──> wake (S0 policy)
//! ```
//!
//! **Readers and sleeping writers** (a user-space departure from the kernel): `WAITERS` does
//! not keep readers out; only a writer that holds the lock or waits *awake* does (`WRITER_LOCKED`,
//! `WRITER_WANT`, `HANDOFF`). The kernel sends every reader to the queue while anyone waits;
//! with more threads than CPUs someone always waits, so readers slept behind writers that were
//! themselves asleep, and the lock idled through both wakeups (issue 11: 1.1 of 2 CPUs busy at
//! 32 threads, 90% reads). A sleeping writer costs readers nothing here; when it wakes it
//! raises `HANDOFF` and the readers drain within one read section. Its wait stays bounded: it
//! sleeps with its handoff timeout as a timer, and after `MAX_HANDOFF_DROPS` it keeps `HANDOFF`
//! while asleep. If the fast path failed and a re-check finds nothing blocking, the reader holds
//! the lock (its bias is in); if it is the only reader and waiters exist it wakes the queued
//! readers to join it.
//!
//! **Reads behind waiters** ([`RawRwSem::read_behind_waiters`] and its `try_` / timed forms)
//! keep the kernel's rule for callers that need it: `WAITERS` is in their fail mask, so they
//! never join while anybody is queued, skip the reader spins and queue at once behind the
//! waiters (the queueing RMW removes their bias). The preload serves glibc's writer-preferring
//! kind (`PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP`, whose `tryrdlock` must fail while a
//! writer is blocked) with them. A queued reader behind a writer is granted only after that
//! writer (`mark_wake` grants readers only from a reader head), so no state bit is added.
//!
//! **Blocked readers** (default policy, S4 `Off`) drop their bias and spin on `count` under the
//! calibrated cap ([`crate::spin_cap_ns`], the cost of the sleep it replaces) while the writer
//! that blocks them runs (the oracle) or waits awake for readers to drain, and join with a CAS
//! as soon as nothing blocks readers. Only then do they queue, and a queued reader still polls
//! its own grant word while such a writer runs before it sleeps.
//!
//! Every blocked reader spins: there is no admission count. Session 25 measured a cap on a
//! 16-core machine (README, "Many cores"; a counter of count spinners in `aux`, temporary
//! environment switch, `kslock-rwsem` alone, three alternated runs per side, `lockbench matrix
//! --locks kslock-rwsem --threads 4,8,16,32,64 --cs-load 1,20,100 --read-pct 50,90 --secs
//! 0.2`): at most 1 / 2 / 4 spinners (a refused reader yields and retries as now) gained
//! 1.09–1.61× at 90% reads, CS load 1 and 20, 16–64 threads, but lost up to 43% at 8 threads
//! and up to 34% at CS load 100; geo-mean of the 30 cells 0.968 / 0.977 / 0.994 of the
//! default's. A refused reader that queued at once instead: 0.969, and 0.754 with
//! `--outside-load 100`. On the 2-CPU VM the cap of 1 gave 0.934 against the default's 0.941
//! (kslock ÷ best peer, geo-mean of the 24 default rwsem cells, `scripts/ab-ratio.py 2`). Not
//! adopted.
//!
//! **Queueing** re-checks the count in the same RMW that removes the phantom bias and sets
//! `WAITERS`: a free lock wakes the head, a reader-held lock lets a head reader join. This
//! closes the window in which an unlocker saw the phantom bias, or did not yet see `WAITERS`.
//!
//! **Yield before queueing** (user space): a writer whose spin failed, or a blocked reader whose
//! wait on the count failed, gives its CPU away and tries again, [`PRE_QUEUE_YIELDS`] times,
//! before it queues. With more threads than CPUs a spin mostly fails because the holder was
//! preempted; a thread that then sleeps needs a wakeup and a CPU before it can take the lock
//! again, and once most threads slept that way one CPU idled while the other ran the lock alone
//! (50% reads, 8–96 threads: 1.04–1.4 CPUs busy). A yield lets the preempted holder run and keeps
//! the waiter runnable: both CPUs stay busy (CS load 1: 0.5–0.8× → 0.8× parking_lot; CS load
//! 100: 0.9× → 1.2×). Fairness stays with the queue: a queued writer reserves the lock.
//! Session 25 checked the count again on the Intel guest, where glibc's rwlock wins the
//! 90%-read cells by sleeping its losers and running on one CPU (one binary, the count from
//! the environment for the experiment; `scripts/ab-ratio.py 2 … -- matrix --locks
//! kslock-rwsem,parking-lot-rwlock,pthread-rwlock --threads 8,32,96 --cs-load 1,20,100
//! --read-pct 50,90 --secs 0.25 --warmup 0.05`, kslock ÷ best peer): geo-mean of the 18 cells
//! 0.978 with 4 yields, 0.776 with none, 0.862 with one; no yield lost in 15 of the 18 cells
//! and one yield in 17 (90% reads, CS load 1, 96 threads: 0.65 → 0.69 / 0.55), and with none
//! the max/min per-thread operations rose to 5–61 at 32–96 threads (2.0–10.6 with 4).
//!
//! After each yield the writer spins again. Session 24 tried a writer that only tries the lock
//! once after a yield, as the mutex's `KSLOCK_OFF=respin_after_yield` does (module doc of
//! [`crate::mutex`]; temporary switch, one binary, `scripts/ab-ratio.py 2 … -- matrix --locks
//! kslock-rwsem,parking-lot-rwlock,pthread-rwlock --threads 2,8,32,96 --cs-load 1,20,100
//! --read-pct 50,90 --secs 0.25 --warmup 0.05`, Intel guest, kslock ÷ best peer): CS load 1
//! gained (2 threads 0.89 / 1.02 → 1.13 / 1.12 at 50% / 90% reads, 8 threads 1.03 / 0.65 →
//! 1.22 / 0.79, 32 threads at 90% reads 0.65 → 0.73), CS load 100 lost (8–96 threads at 90%
//! reads 1.30 → 0.90–1.07, at 50% 1.00–1.05 → 0.85–0.96, with max/min per-thread
//! operations up to 40 against 8); geo-mean of the 24 cells 0.992 → 0.968. Not kept.
//!
//! **Writer spinning** (seed S2): through the OSQ (one poller per lock), while the owner writer
//! runs (the [`crate::spin`] oracle), on a 0 owner within the budget, and on a reader-owned lock
//! for at most `R = cap × (20 + min(readers, 30)) / 50` — the kernel's `(10 + min(readers,30)/2)`
//! µs with 25 µs scaled to the calibrated spin cap ([`crate::spin_cap_ns`], ≈ 20 µs on the
//! development VM: 8–20 µs). While it spins on readers it holds `WRITER_WANT`, so no new reader
//! joins and the wait is the longest remaining read section; that is why this phase is bounded by R
//! alone and not by the lock's adaptive budget, which learns writer hold times (a budget shrunk
//! below one read section failed every such spin: 2 threads, 90% reads, CS load 100 went from 0.6×
//! to 1.1× parking_lot with this bound). Its polls of `count` back off as R6 of [`crate::spin`]
//! prescribes (1, 2, 4 … 32 pauses, the calibrated poll gap on the AMD VM): polling every pause
//! pulled the line away from the readers on every poll (A/B on 15ae251, 3 alternated runs each,
//! median kops/s ratio, 8 / 32 threads: CS load 1 1.09 / 1.20 at 50% reads, 1.10 / 1.14 at 90%;
//! CS load 20 1.02–1.05; CS load 100 0.98–1.07).
//! When R expires while the lock is still reader-owned the writer sets `NONSPINNABLE` and gives
//! `WRITER_WANT` up. With [`ReaderOwnedSpin::Never`] writers stop as soon as the lock is
//! reader-held.
//!
//! **Writer meets readers** (user space; switch `writer_yield_first`): a writer whose fast
//! path fails on a lock held by readers only yields before it spins (the first of its
//! [`PRE_QUEUE_YIELDS`]; up to two while readers still hold the lock, below). Spinning at once raised `WRITER_WANT` while the readers, on both
//! CPUs, were about to leave anyway, and sent every reader that arrived meanwhile through the
//! slow path: with short sections the lock ran in lockstep across the CPUs. After the yield the
//! readers it met have usually left. A/B on b3443b7 plus the change, on and off alternated
//! (two runs each, `lockbench matrix --locks kslock-rwsem --threads 2,8,32,96 --cs-load
//! 1,20,100 --read-pct 50,90 --secs 0.4 --warmup 0.1`), median kops/s on ÷ off:
//!
//! | cells | on ÷ off |
//! |---|---|
//! | CS load 1, 2–96 threads, 50% and 90% reads | 1.23–1.70 |
//! | CS load 20, 90% reads, 8 / 32 threads | 0.94 / 0.93 (the only losses) |
//! | CS load 20 and 100, other cells | 0.99–1.05 |
//! | `--outside-load 100`, 8 threads, CS load 1/20/100 | 1.03–1.08 |
//!
//! It also evened out the 96-thread, 90% reads, CS load 100 cell: per-thread max/min ops
//! 11.6 and 25.5 → 1.3 and 1.5 (CS load 20: 4.8, 4.6 → 1.3, 1.2).
//!
//! **A second yield** (session 21, on the Intel guest, where a `pause` is 4.6 ns and a read
//! section at CS load 1 a few ns): a writer that finds readers again after its yield yields
//! once more before it spins on them. `scripts/ab-ratio.py 4 "one,two" -- matrix --locks
//! kslock-rwsem,parking-lot-rwlock --threads 2,8,32,96 --cs-load 1,20,100 --read-pct 50,90
//! --secs 0.25 --warmup 0.05` (one binary, the count from the environment for the
//! experiment; kslock ÷ parking_lot, medians of four alternated runs): CS load 1 at 2 / 8 /
//! 32 / 96 threads 0.59 / 0.62 / 0.92 / 2.12 → 0.65 / 0.69 / 1.17 / 2.75 (50% reads) and 0.77
//! / 0.81 / 0.98 / 2.04 → 0.94 / 0.92 / 1.21 / 2.61 (90%; kslock +6 to +23% kops/s in all
//! eight cells); CS load 20 0.77–3.67 → 0.77–3.98 (better in 6 of 8); CS load 100 1.03 / 1.70 /
//! 4.06 / 5.99 → 1.04 / 1.73 / 4.22 / 5.67 (50%) and 0.89 / 1.36 / 2.80 / 7.07 → 0.87 / 1.38 /
//! 3.21 / 6.28 (90%; kslock −6 to −12% kops/s at 90% reads, where it led the best peer by
//! 1.27–1.45× in the default run); geo-mean of the 24 cells 1.50 → 1.63. An earlier pair of
//! runs with glibc's rwlock also in the cells (2–32 threads) gave geo-means 1.15 / 1.18 / 1.14
//! for 1 / 2 / 4 yields, within their spread; 2 is the smaller change.
//!
//! At 2 threads such a yield finds nothing else to run and returns at once (≈ 8% of the CPU
//! samples at 50% reads, CS load 1, are `__schedule` under `sched_yield`). Tried and dropped
//! (session 13): a writer whose last measured yield returned within 1/16 of the spin cap backs
//! off on the count instead (polls 1, 2, 4 … 32 pauses apart, 8 polls, until no reader holds),
//! re-measuring every 8th time. `scripts/ab-ratio.py 3 "base,wb=…" -- matrix --locks
//! kslock-rwsem,parking-lot-rwlock --threads 2,8,32,96 --cs-load 1,20,100 --read-pct 50,90
//! --secs 0.3` (kslock ÷ parking_lot, medians of three alternated runs): geo-mean 1.671 →
//! 1.674; 2 threads, 50% reads, CS load 1 0.85 → 0.68, 90% reads 1.02 → 1.10; CS load 20 at
//! 2 threads 0.95 → 0.99 (50%) and 0.96 → 0.88 (90%).
//!
//! **A yield that ran nobody** (session 35, AMD EPYC guest; switch `quick_yield_spins`): the
//! writer times each of its yields ([`crate::spin::timed_yield`]), and after one that returned
//! within 1/16 of the spin cap (≈ 1.25 µs; nothing else was runnable on its CPU) it spins next instead of yielding again before the spin. The first
//! yield stays (without it the CS load 1 cells lose, above); the second only let the reader on
//! the other CPU batch on alone for another ≈ 0.5 µs, a read section at CS load 20, before the
//! writer claimed the lock with `WRITER_WANT`. Where threads outnumber CPUs a yield runs
//! another thread and nothing changes. Measured, kslock ÷ the best peer, medians of alternated
//! runs, the cell it was made for being 2 threads, 90% reads, CS load 20 (2 CPUs, so 2 threads
//! is the case where the yield finds nothing to run):
//!
//! | command | that cell, off → on | the other cells |
//! |---|---|---|
//! | `scripts/ab-ratio.py 4 "off=KSLOCK_OFF:quick_yield_spins,on" -- matrix --locks kslock-rwsem,parking-lot-rwlock,pthread-rwlock,std-rwlock --threads 2,8,32,96 --cs-load 1,20,100 --read-pct 50,90 --secs 0.3 --warmup 0.05` | 0.917 → 0.959 (kslock 2164 → 2385 kops/s) | 23 cells 0.90–1.09× their off ratio, single cells moving ± 10% between runs; geo-mean of the 24 1.155 → 1.160 |
//! | the same change behind a scratch environment bit, 6 runs, `--threads 2,8 --cs-load 20,100` | 0.915 → 0.998 | 2 threads, 90% reads, CS load 100 0.962 → 0.969; the 8-thread cells 0.96–1.07×; geo-mean of the 8 1.101 → 1.116 |
//! | the same, 4 runs, `--threads 2,8,96 --cs-load 1,20,100` | 0.913 → 1.021 | geo-mean of the 18 1.192 → 1.185 |
//! | the same, 4 runs, `--threads 2,8,32 --cs-load 1,20,100 --outside-load 100` | – | geo-mean of the 18 1.071 → 1.071 |
//! | `scripts/ab-ratio.py 3 "off=KSLOCK_OFF:quick_yield_spins,on" -- workload random --locks kslock-rwsem,parking-lot-rwlock,pthread-rwlock,std-rwlock --threads 2,8,32 --outside-load 0,100 --read-pct 50,90 --secs 0.25 --warmup 0.05` (random section lengths) | 0.922 → 0.924 | 35 cells 0.88–1.27× their off ratio (± 10% between runs); geo-mean of the 36 1.059 → 1.060 |
//!
//! Where the yield that ran nobody also skipped the first yield of the writer's next slow path
//! (a per-thread memory of it), 2 threads, 50% reads, CS load 1 went 1.10 → 0.93 and 90% reads
//! 1.42 → 1.26: dropped.
//!
//! **The writer's yield gate** (session 45, AMD EPYC guest; switch `writer_yield_gate`): the
//! writer yields first only while the lock's average spin (the spin estimate of
//! [`crate::spin`], over its writers' spins) is below `YIELD_FIRST_MAX_NS`, 512 ns, about what
//! a yield that returns at once costs (0.49 µs here); before the lock's first spin it yields.
//! On this guest (a `pause` ≈ 27 ns, a section at CS load 20 ≈ 0.6 µs; ≈ 90 ns on the Intel
//! guest of session 21's second yield) the cells at CS load 20 and 100 with 90% reads gained
//! 9–17% without the yield first (`KSLOCK_OFF=writer_yield_first`), while those at CS load 1
//! lost 2–13%. Lock events (a scratch build) put the
//! average spin, read where the writer decides, below 512 ns at CS load 1 (50% and 90%
//! reads), at 384–768 ns at CS load 5, above 512 ns at CS load 20 (above 768 ns with 50%
//! reads) and above 1 µs at CS load 100 (2–32 threads). After a yield the writer still met
//! readers 33–90% of the time, at every CS load: the yield does not wait them out.
//! Where a spin outlasts a yield, the yield hands the CPU to a thread that joins the readers,
//! and the writer, back, meets readers again and yields a second time before it spins with
//! `WRITER_WANT` anyway: two switches for nothing. Measured, kslock ÷ the best peer, medians
//! of three alternated runs of one binary (every row but the `gate,nogate` ones took the
//! threshold from a scratch environment variable):
//!
//! | command | cells | result |
//! |---|---|---|
//! | `scripts/ab-ratio.py 3 "base,w448=…,w512=…,w640=…,off=KSLOCK_OFF:writer_yield_first" -- matrix --locks kslock-rwsem,pthread-rwlock,parking-lot-rwlock,std-rwlock --threads 2,8,32 --cs-load 1,5,20,100 --read-pct 50,90 --secs 0.3 --warmup 0.05` | geo-mean of the 24 (always / 448 / 512 / 640 ns / never) | 1.081 / 1.088 / 1.107 / 1.099 / 1.088 |
//! | same | CS load 1, the 6 cells, always → 512 ns → never | 1.07–1.27 → 1.07–1.22 → 0.96–1.13 |
//! | same | CS load 20 and 100, 90% reads, 8 / 32 threads | 1.26 / 1.33, 1.29 / 1.27 → 1.39 / 1.32, 1.46 / 1.36 |
//! | `scripts/ab-ratio.py 3 "gate,nogate=KSLOCK_OFF:writer_yield_gate" -- matrix --locks kslock-rwsem,pthread-rwlock,parking-lot-rwlock,std-rwlock --threads 2,8,32,96 --cs-load 1,20,100 --read-pct 50,90 --secs 0.4 --warmup 0.1` | geo-mean of the 24 | 1.152 → 1.178 |
//! | same | 90% reads, CS load 20, 8 / 32 / 96 threads, kops/s | 2351 / 2310 / 2262 → 2529 / 2464 / 2410 |
//! | same command, two runs, `--threads 3,4,16,64 --secs 0.3 --warmup 0.05` | geo-mean of the 24; 90% reads, CS load 100, 3 / 4 / 16 / 64 threads, kops/s | 1.176 → 1.214; 580 / 558 / 574 / 548 → 631 / 635 / 629 / 615 |
//! | `… --threads 96 --cs-load 1,20,100 --read-pct 50,90 --secs 1` (always / 512 / 640 ns) | 90% reads, CS load 20 / 100, kops/s; max/min per-thread ops | 2386 / 572 → 2443 / 615 → 2252 / 611; 1.2–1.6 on every side |
//! | `… --threads 2,8,32 --cs-load 1,20,100 --outside-load 100 --read-pct 50,90 --secs 0.3` | geo-mean of the 18 (always → 512 ns) | 0.973 → 0.970 |
//! | `… workload random … --threads 2,8,32 --cs-load 1,20,100 --outside-load 0,10 --read-pct 50,90 --secs 0.3` | geo-mean of the 36 | 1.046 → 1.056 |
//!
//! The CS load 5 cells at 90% reads stay below the peers either way (0.78–0.89 always, 0.82–0.88
//! at 512 ns, 0.87–0.90 never): their average spin, 384–512 ns, sits under the threshold.
//!
//! **Meeting a writer** (session 22; switch `yield_on_writer`): a reader whose fast path
//! fails on a writer (holding, or waiting awake with `WRITER_WANT` / `HANDOFF`) yields once
//! before its first spin on `count` (then, as before, up to [`PRE_QUEUE_YIELDS`] more yields
//! between spins before it queues), and a writer whose fast path fails on a writer owner
//! yields once before its OSQ spin (the first of its [`PRE_QUEUE_YIELDS`]), as a writer
//! meeting readers already did. With short sections the holder re-locks from its own cache; a waiter that spins
//! takes the lock in the gap between two of the holder's operations, and every such entry is a
//! handover of `count`'s line and of the lock (lock-events build, 2 threads, 50% reads, CS
//! load 1: 130 handovers a kop, 96 slow writes and 53 slow reads, almost all acquired by
//! spinning, against parking_lot's 61 handovers; parking_lot's waiters yield after three short
//! spins). A yield that finds nothing else to run returns in ≈ 0.5 µs, long enough for the
//! holder to run a batch. A/B on `da4c9bb` plus the change (the same code behind an
//! environment bit for the experiment), `scripts/ab-ratio.py 3 "base,rw=…" -- matrix --locks
//! kslock-rwsem,parking-lot-rwlock,pthread-rwlock --threads 2,8,96 --cs-load 1,20,100
//! --read-pct 50,90 --outside-load 0,100 --secs 0.25 --warmup 0.05`, kslock ÷ best peer,
//! medians of three alternated runs (the Intel guest):
//!
//! | cells | off → on |
//! |---|---|
//! | no outside work, CS load 1, 2 / 8 / 96 threads, 50% reads | 0.62 / 0.70 / 0.94 → 0.87 / 0.97 / 1.57 (7.7k / 12.0k / 13.3k → 10.9k / 17.8k / 18.2k kops/s) |
//! | same, 90% reads | 0.88 / 0.55 / 0.50 → 1.04 / 0.70 / 0.88 (glibc's rwlock, on one CPU, is the best peer from 8 threads up) |
//! | no outside work, CS load 20 / 100, 2–96 threads | 0.78–1.01 → 0.82–1.02 (CS 20), 0.90–1.25 → 0.88–1.35 (CS 100) |
//! | `--outside-load 100`, CS load 1 and 20 | 1.02–1.74 → 0.98–1.28 (most cells −2 to −8%; 96 threads, CS 20, 50% reads 1.74 → 1.17, 1.33 → 1.22 / 1.65 in a second invocation) |
//! | `--outside-load 100`, CS load 100 | 1.01–1.61 → 1.01–1.53 (−3 to −10%) |
//! | geo-mean of the 36 cells | 1.007 → 1.048 |
//!
//! A first invocation without the outside-load cells (2 / 8 / 32 threads, CS load 1 / 20 /
//! 100, kslock ÷ parking_lot): geo-mean 1.18 → 1.30, the reader's yield alone 1.26, the
//! writer's alone 1.20. The cost is where threads work outside the lock: there the holder
//! leaves the lock soon after it takes it, and a spin would have caught it. Tried: a waiter
//! that polls `count` three times, an eighth of the poll gap apart, and yields only if the
//! blocker is still there (a batching holder): it kept the outside-load cells (geo-mean
//! 1.056) but lost most of the gain without outside work (8 threads, CS load 1: 0.78 and
//! 0.61 at 50% / 90% reads; 96 threads, 90% reads: 0.55), because with 2 CPUs a gap shows up
//! within three polls whether or not the holder batches. Not adopted; a signal for "the
//! holder batches" that costs nothing is the open lead.
//!
//! **The writer's gap poll** (session 38; switch `KSLOCK_OFF=writer_gap_poll`): that signal,
//! for writers meeting a writer, is the lock's own spin statistics. Where its spins win after
//! short waits ([`crate::spin`]'s `wins_after_short_waits`: a success rate of at least 56/63,
//! a mean spin of at most 1 µs) and nobody queues or spins, the writer polls `count` alone, 1,
//! 2, then up to 4 pauses apart, and takes the lock at its first sight of it free; it yields as
//! before when readers or `WRITER_WANT` show, when the owner sleeps, or after one owner held the
//! lock for half a poll gap (≈ 430 ns, about a yield that runs nobody). Lock coupling is the
//! case: in lockbench's `tree` every descent write-locks the root for ≈ 150 ns and leaves it, and
//! the yield (0.5 µs with nobody else to run, more when it runs a thread that then meets the
//! root too: 110 involuntary switches a kop at 8 threads) cost ≈ 30%. A/B on the AMD guest, one
//! binary, `scripts/ab-ratio.py 3 "gap|old=KSLOCK_OFF:writer_gap_poll" -- workload tree --locks
//! kslock-rwsem,parking-lot-rwlock,std-rwlock --threads 2,8,32 --secs 0.4 --warmup 0.1`, then
//! the same with `matrix --locks kslock-rwsem,parking-lot-rwlock,std-rwlock,pthread-rwlock
//! --threads 2,8,32,96 --cs-load 1,20,100 --read-pct 50,90 --secs 0.3 --warmup 0.05`, kslock ÷
//! best peer, medians of three alternated runs:
//!
//! | variant | `tree`, 2 / 8 / 32 threads (geo-mean) | matrix, 24 cells (geo-mean) |
//! |---|---|---|
//! | no writer yield on a writer at all | 0.72 / 0.63 / 0.67 → 0.89 / 0.89 / 0.89 (0.671 → 0.891) | 1.186 → 1.164 (90% reads, CS load 1, 8 / 96 threads: 1.33 / 1.37 → 1.17 / 1.11) |
//! | gap poll with the mutex's free re-check (≈ 108 ns), ungated | 0.718 → 0.765 at 2 threads (the root idled for the re-check at every handover) | not run |
//! | gap poll, no re-check, only while nobody queues or spins | 0.694 → 0.957 (0.93 / 0.94 / 1.00) | 1.172 → 1.160 (CS load 100, 90% reads, 8 / 32 threads: 1.30 / 1.37 → 1.24 / 1.32) |
//! | the same, only where spins win after short waits (kept) | 0.676 → 0.882 (0.94 / 0.80 / 0.91) | 1.159 → 1.184 |
//!
//! Tried and not kept: the same gate for a *reader* blocked by a writer (it spins at once
//! instead of yielding first). `workload random` with outside work (`--threads 3,12,48
//! --read-pct 50,90 --cs-load 1,20 --outside-load 20`, where std's rwlock wins and kslock's
//! threads yield ≈ 240 times a kop at 12 threads) 0.914 → 0.908, the matrix 1.172 → 1.174:
//! neither side moved past the runs' spread. With both the writer's and the reader's first
//! yields off (`KSLOCK_OFF=writer_yield_first,yield_on_writer`, 12 / 48 threads, CS load 1 / 20,
//! outside load 20, three runs) those cells went 0.912 → 0.968, but max/min per-thread
//! operations at 48 threads rose to 5.0–13.6 (from 1.3–2.2) and the p99.9 wait to 12.6 ms; the
//! matrix needs the yields (the A/B above). The signal for when to skip them stays open.
//!
//! Session 39 gated both first yields (the writer's on readers and the reader's on a writer)
//! at once, on the gap poll's gate (spins win after short waits, nobody queued or spinning;
//! scratch switch). `scripts/ab-ratio.py 3 "gs,off=KSLOCK_OFF:gap_spin" -- workload random
//! --locks kslock-rwsem,parking-lot-rwlock,std-rwlock,pthread-rwlock --threads 4,16,64
//! --read-pct 50,90 --cs-load 5,50 --outside-load 20,200 --secs 0.25 --warmup 0.05`: geo-mean
//! of the 24 cells 0.972 → 0.981, mean CS load 5 with outside load 20 at 16 / 64 threads and 50%
//! reads 0.835 / 0.778 → 0.973 / 0.936 (max/min per-thread ops at 64 threads, 90% reads, up to
//! 9.1). The same gate on the default matrix's rwsem cells (`matrix --threads 2,8,32,96
//! --cs-load 1,20,100 --read-pct 50,90 --secs 0.3`): 1.159 → 1.093; CS load 20 at 90% reads
//! gained (8 / 32 / 96 threads 1.25 / 1.24 / 1.31 → 1.45 / 1.33 / 1.42), CS load 1 lost (32 /
//! 96 threads at 90% reads 1.17 / 1.25 → 0.96 / 0.95): the gate is true in both. The spin
//! statistics do not tell a batching holder from one that works outside the lock. A second
//! signal, the waiter's own time since it last left an rwsem slow path with the lock (two clock
//! reads per slow path; yield first below 1 / 2 / 4 µs), did not either: matrix (16 cells, CS
//! load 1 and 20) 1.134 → 1.081 / 1.080 / 1.130, the random cells 0.941 → 0.972 / 0.973 / 0.951.
//! Neither kept.
//!
//! Session 23 tried the other side of the same trade: a writer spinning on readers raises
//! `WRITER_WANT` only after R/2 (or R: in effect never during the spin) instead of at once, so a
//! thread that batches reads is not stopped at its next read. `scripts/ab-ratio.py 2` (one
//! binary, the delay from the environment for the experiment), `matrix --locks
//! kslock-rwsem,parking-lot-rwlock,pthread-rwlock --threads 2,8,32,96 --cs-load 1,20,100
//! --read-pct 50,90 --secs 0.25 --warmup 0.05`, kslock ÷ best peer: 2 threads, CS load 1
//! 0.89 / 0.99 → 1.07 / 1.43 (R/2) and 1.09 / 1.56 (R) at 50% / 90% reads, but 2 threads, 90%
//! reads, CS load 20 / 100 1.11 / 0.99 → 0.90 / 0.77 and 0.90 / 0.71, and the CS load 100
//! cells at 8–96 threads −1 to −18%; geo-mean of the 24 cells 1.111 → 1.093 / 1.081. Shorter
//! delays (R/8, R/16; a second invocation, two runs) gave 1.089 → 1.006 / 1.056. Not
//! adopted: where read sections are long, a writer that does not claim waits them out one
//! after another.
//!
//! **Where the time goes at CS load 20–100** (session 15, `lockbench timeline --lock kslock-rwsem
//! --threads 8 --cs-load 20 --read-pct 50`, three runs): a writer holds the lock 41% of the
//! time, one reader 30%, two readers only 6.5%, and 22% it is idle while threads wait. During
//! the one-reader time the other CPU's last stamp is, for 68% of it, the `try` of a writer
//! that began waiting *before* that reader entered: the reader got in first, the writer then
//! waits out its whole section, and no read pairs with it. Four changes aimed at this, each
//! behind a temporary switch, `scripts/ab-ratio.py 5 "base,…" -- matrix --locks
//! kslock-rwsem,parking-lot-rwlock,pthread-rwlock,std-rwlock --threads 2,8,32 --cs-load
//! 1,20,100 --read-pct 50,90 --secs 0.3 --warmup 0.1` (kslock ÷ best peer, medians; the
//! base's geo-mean over the 18 cells was 1.067–1.088 between invocations), none adopted:
//!
//! | variant | CS load 1 cells | CS load 20 / 100 cells | geo-mean |
//! |---|---|---|---|
//! | no yield before spinning on readers (`KSLOCK_OFF=writer_yield_first`) | 0.58–0.76 (from 0.83–1.05) | 90% reads, 8 / 32 thr, CS 20: 1.27 / 1.34 → 1.51 / 1.53; 50% reads 0.96–1.17 | 1.067 → 0.971 |
//! | yield first only while the readers' measured drain (an average kept in the lock: 130–280 ns at CS load 1, 420–680 at 20, 1.7–2.7 µs at 100) is under 350 ns | unchanged within noise | 90% reads, CS 20: 1.34 / 1.29 → 1.48 / 1.57; p99.9 at 32 thr, CS 100, 90% 1.3 → 9.4 ms | 1.078 → 1.098 |
//! | a spinning writer raises `WRITER_WANT` on a writer owner too | 0.81–1.05 (base 0.84–0.99) | 0.91–1.04× the base's | 1.08 → 1.06 |
//! | both of the above (no first yield, `WRITER_WANT` on a writer owner) | 0.57–0.78 | 90% reads, CS 20: 1.36 → 1.60 / 1.54; p99.9 13.6 ms | 1.08 → 0.969 |
//!
//! Polls closer together help the long sections and cost the short ones: blocked readers and
//! a draining writer polling at most 4 (1) pauses apart instead of 32 (24 cells with 96
//! threads, six runs): CS load 20 / 100 cells −1 to +8% (4 pauses), CS load 1 cells −11 to
//! +3% (1 pause), geo-mean 1.088 → 1.102 (1.099). In a 2-thread timeline (50% reads, CS load
//! 100; a scratch build of the same stamps) polls 1 pause apart cut the median writer →
//! reader transfer from 0.69 to 0.12 µs and the lock's idle share from 9.4% to 4.4%; the
//! unpaired reads stayed (27% of the time one reader).
//!
//! Session 17 measured the readers' drain instead of guessing it: the spinning writer timed
//! the span from raising `WRITER_WANT` to taking the lock and kept an average in the lock
//! (8 spare bits of `aux`, 32 ns units), and skipped its first yield where that average lay in
//! a window (temporary switch, `scripts/ab-ratio.py 3 "base,…" -- matrix --locks
//! kslock-rwsem,parking-lot-rwlock,pthread-rwlock,std-rwlock --threads 2,8,32,96 --cs-load
//! 1,20,100 --read-pct 50,90 --secs 0.3 --warmup 0.1`, kslock ÷ best peer, medians of three):
//!
//! | spin first while the drain is | 90% reads, CS 20, 8 / 32 / 96 thr | elsewhere | geo-mean, 24 cells |
//! |---|---|---|---|
//! | ≥ 350 ns | 1.26 / 1.35 / 1.35 → 1.48 / 1.52 / 1.42 | 96 thr, 90% reads, CS 100: max/min per-thread ops 1.9 → 7.0, p99.9 wait 3.1 → 33.6 ms | 1.101 → 1.118 |
//! | 350 ns – 1/16 of the spin cap (≈ 1.25 µs) | → 1.48 / 1.38 / 1.48 | same cell: max/min 4.1, p99.9 15.7 ms | 1.101 → 1.121 |
//! | 350 ns – 1/32 of the cap (≈ 625 ns), a second invocation | 1.43 / 1.39 / 1.35 → 1.62 / 1.40 / 1.45 | 90% reads, CS 1 at 2 / 96 thr 1.08 / 1.09 → 0.98 / 0.99; 96 thr, 90%, CS 100 1.36 → 1.22; 96 thr, 90%, CS 20 max/min 1.3 → 2.5 | 1.113 → 1.112 |
//!
//! The writers that spin at once win the long-section cells and take the lock past the queue
//! often enough to break the fairness bound at 96 threads; not adopted.
//!
//! Session 18, three more, each behind a temporary switch (`scripts/ab-ratio.py 3 "base,…" --
//! matrix --locks kslock-rwsem,parking-lot-rwlock,pthread-rwlock,std-rwlock --threads
//! 2,8,32,96 --cs-load 1,20,100 --read-pct 50,90 --secs 0.3 --warmup 0.1`, kslock ÷ best
//! peer, medians of three; geo-mean of the 24 cells): polls of an unchanged owner and of the
//! draining readers at most 8 pauses apart instead of 32, 1.100 → 1.105 (2 threads, CS load
//! 20: 0.97 / 0.94 → 1.02 / 1.06 at 50% / 90% reads; 2 threads, 50% reads, CS load 1 0.90 →
//! 0.84); a proportional backoff (the next poll `waited / d` pauses after the last, 1–32, so
//! the overshoot is about 1/(2d) of the wait instead of half of it), 1.107 → 1.094 (d = 4) and
//! 1.099 (d = 2); no OSQ join and leave where the admission allows one spinner (two vCPUs:
//! the admission count alone makes the spinner unique, two RMWs on the lock's line fewer per
//! spin), 1.085 → 1.130 in one invocation and 1.128 → 1.106 in a second with four runs per
//! side (the mutex's session 14 found the same for it). None adopted: the cells move by more
//! between invocations than these changes move them.
//!
//! **Writer waiting**: a head writer that finds the lock held by readers only raises `HANDOFF`
//! at once (it is awake; the readers drain within one read section); against a writer owner it
//! waits for its timeout, as the kernel does. With `HANDOFF` set it spins on the owner
//! (first-waiter spinning, under the cap: `Spin::for_handover`) and retries as soon as the
//! lock looks free instead of sleeping; before it sleeps it drops the reservation (at most
//! `MAX_HANDOFF_DROPS` times per wait), so a sleeping writer never keeps readers out. It does
//! not drop it when the lock came free meanwhile (it retries at once) or when a fair unlock
//! reserved the lock for it (`Waiter::keep_handoff`, set under the wait_lock by
//! `reserve_for_head` even if the head had raised `HANDOFF` itself): the fair unlock's release
//! wakes it, and running readers must not overtake it in between. A writer
//! that has not yet reached its handoff timeout sleeps with that timeout as an extra deadline
//! (user-space addition): when it fires, `try_write_lock` raises `HANDOFF`, so the starvation
//! bound holds even under a stream of spinning readers (S4 `On`), which never let the count drop
//! to zero and so never trigger an unlock wakeup.
//!
//! **A woken head sleeps out its window** (session 41; switch `KSLOCK_OFF=writer_window`): a
//! head writer that an unlock woke and that then loses its retry to a writer (the owner took
//! the lock straight back) sets `WOKEN` again before it sleeps, and sleeps on a timer at its
//! fairness window's end ([`crate::fairness::handoff_at`] from its queueing, taken at its first
//! such loss: 40 µs–1 ms, which also becomes its handoff timeout). Unlocks skip the wake while
//! `WOKEN` is set, so the owner batches without a futex wake per release; when the timer fires
//! the head's retry raises `HANDOFF` against the writer and it spins for the handover, as a
//! head past its timeout always did. Before, every release woke the head again: write-only, CS
//! load 100, 2 / 8 threads, 159 / 202 wakes and as many sleeps a kop on the unlocker's path
//! (lock-events build), 0.70x std at 8 threads. If the `fetch_or` that sets `WOKEN` finds the
//! writer gone, the head retries at once instead; a lock left free by a writer that does not
//! come back stays free until the timer, at most the window (the mutex's successor waits the
//! same way: the module doc of `kslock::mutex`'s `turn`). Not where the lock's spins win after
//! short waits ([`SpinStats::wins_after_short_waits`]: holders leave within ≈ 1 µs): there the
//! woken head wins a spin soon after its next wake, and a window would only keep `WAITERS` set
//! for the other writers (below).
//!
//! The window keeps `WAITERS` set, so every other writer's fast path fails. A writer whose
//! release finds `WAITERS | WOKEN` therefore marks the owner word `OWNER_TURN` (CAS from 0,
//! after its release; any later owner store replaces it), and its fast path takes the lock back
//! from that state in one CAS (`WAITERS` and `WOKEN` kept, as a spinner's steal does) while the
//! mark is its own and its run of such re-takes is younger than the window minimum
//! ([`crate::fairness::window_ns`], ≈ 40 µs here: the same bound as a mutex turn's shortest
//! window); past that it competes from the slow path like anyone, where the run ends. Without
//! the run limit the turn holder took 961 of every 1000 acquisitions at 32 threads, CS load 100,
//! and the write-only cells at 32 / 96 threads were STARVED over 1 s; without the turn (the
//! window alone) the CS load 20 write-only cells lost 4–13% to the slow path's yields (README,
//! "Known gaps"). The turn is a hint only: a stale mark costs one failed CAS, and readers never
//! look at it.
//!
//! A/B on one binary (`scripts/ab-ratio.py 3 "turn|off=KSLOCK_OFF:writer_window" -- matrix
//! --locks kslock-rwsem,std-rwlock,parking-lot-rwlock,pthread-rwlock --threads 2,8,32,96
//! --cs-load 1,20,100 --read-pct 0,50[,90] --secs 0.3 --warmup 0.05`, the AMD guest, kslock ÷
//! best peer, medians of three runs; two invocations):
//!
//! | cells | off | on |
//! |---|---|---|
//! | 0% reads, CS load 100, 2 / 8 threads | 0.98 / 0.71, 0.97 / 0.65 | 1.13 / 0.99, 1.13 / 0.97 |
//! | 0% reads, CS load 20, 2 / 8 threads | 1.10 / 1.02, 1.03 / 1.00 | 1.17 / 1.07, 1.13 / 1.04 |
//! | 0% reads, 12 cells at 8+ threads, geo-mean | 0.961, 0.940 | 0.973, 0.986 |
//! | 50% reads, 12 cells at 8+ threads, geo-mean | 1.107, 1.086 | 1.085, 1.097 |
//! | 90% reads, 12 cells at 8+ threads, geo-mean (first invocation) | 1.249 | 1.237 |
//! | all cells, geo-mean | 1.093 (36), 1.026 (24) | 1.083, 1.047 |
//!
//! With the short-wait gate (the version landed; second invocation, a third side): 24 cells
//! 1.064 against 1.047 without the gate and 1.026 off; at 8+ threads 0.980 / 1.118 (0% / 50%
//! reads) against 0.986 / 1.097 and 0.940 / 1.086; 0% reads, CS load 100, 2 / 8 threads 1.13 /
//! 0.99. On the default matrix's rwsem cells at 8+ threads (`--threads 8,32,96 --read-pct
//! 50,90`, three runs): geo-mean 1.182 against 1.180 off.
//!
//! The 50%- and 90%-read cells move within the runs' spread (single CS load 1 cells by up to
//! ±0.1 between invocations). Over 1 s (`lockbench matrix --locks kslock-rwsem --threads 32,96
//! --cs-load 20,100 --read-pct 0,50 --secs 1`, two runs per side) max/min per-thread ops were
//! 1.1–2.4 with the window and 1.1–2.7 without; the p99.9 wait of the write-only cells at
//! 32–96 threads and CS load 20 / 100 rises from 0.9–4.7 ms to 3.7–8.4 ms (first invocation:
//! a head waits out its window).
//!
//! **Wakeup** (`mark_wake`, wait_lock held): a head writer is woken (never granted; it re-competes
//! and a spinner may win). A head reader is granted together with every queued reader (≤ 256,
//! also those behind writers): pass 1 adds the biases of all of them to `count`, pass 2 unlinks
//! each, copies its `ThreadRec` into a [`WakeQ`] and publishes the grant with a Release store,
//! after which the waker never touches the waiter (its frame may vanish at once). The futex
//! wakes run after the wait_lock is dropped.
//!
//! **Unlock wake path** (seed S0, [`RwSemPolicy::WAKE`]):
//! * `Deferred`: take the wait_lock, `mark_wake`, drop it, wake.
//! * `TrylockIfSpinner` (2015): while a spinner is queued on the OSQ, the unlocker only
//!   *trylocks* the wait_lock. The 2015 patch then trusted the spinner to wake later; that lost
//!   wakeups once handoff existed (why upstream removed it in 2019). kslock keeps the trylock but
//!   makes it safe: a failed trylock sets `AUX_WAKE_PENDING`, issues a SeqCst fence and trylocks
//!   once more; every wait_lock holder, after unlocking, fences and runs a pending wake. By the
//!   fence rules either the second trylock sees the unlock or the holder sees the flag.
//! * `WakeFlag` (2013): `AUX_WAKING` is set by the unlocker that wakes; an unlocker that finds it
//!   set returns at once. The waker clears it with an RMW (AcqRel) *after* taking the wait_lock
//!   and only then reads the queue and count, so every unlocker that skipped is seen.
//!
//! **Reader spinning** (seed S4, [`RwSemPolicy::READER_SPIN`]): `Off` (default) — readers never
//! spin. `Limited` — the reader that wins `AUX_READER_SPINNER` drops its phantom bias and spins
//! through the OSQ while a writer holds the lock; it joins only if no writer/HANDOFF is set and
//! it would not join a reader group with waiters (the stealing rule), and then wakes the queued
//! readers (`mark_wake(ReadOwned)`). `On` — every reader spins like that and joins any lock
//! without a writer or HANDOFF (pre-v5.11); the writer's handoff timer bounds starvation.
//!
//! # Readers behind a long write
//!
//! A blocked reader waits out a writer on the count (yields and spins) and then, queued, spins
//! on its own grant while the writer runs, each under the spin cap, before it sleeps. A writer
//! that keeps the lock for milliseconds while it runs (a thread that write-locks and then
//! creates threads that read-lock) turns every such wait into up to ≈ 100 µs of CPU taken from
//! the runnable threads, the writer's included. The mutex's yield gate (module doc of
//! [`crate::mutex`], "The yield gate"; switch `KSLOCK_OFF=yield_gate`) applies: the spin
//! word's yield estimate (bits 10–15) averages whether blocked readers got the lock without
//! sleeping (in the wait-out or the grant spin) or slept, and where they mostly slept a
//! blocked reader queues and sleeps at once, one in 8 still waiting as before to keep the
//! estimate current. Under the preload, a program whose main thread write-locks a rwlock while
//! it creates 1024 threads that each read-lock it (the rwlock variant of
//! `scripts/create-under-lock.c`, three alternated 1 s runs, off / gate / glibc): a mean of
//! 814–1166 / 126–302 / 72–86 µs from `pthread_create` to the thread's start, 11.4–12.4k /
//! 11.8–14.3k / 10.4–14.3k threads created a second. In the matrix, where readers rarely sleep
//! (at most 0.5 voluntary switches per kop at 8+ threads in the default run), the gate stays
//! open: `scripts/ab-ratio.py 3 "gate,off=KSLOCK_OFF:yield_gate" -- matrix --locks
//! kslock-rwsem,parking-lot-rwlock,pthread-rwlock,std-rwlock --threads 2,8,32,96 --cs-load
//! 1,20,100 --read-pct 50,90 --secs 0.3 --warmup 0.05` gave geo-means of 1.149 (gate) and 1.164
//! (off) over the 24 cells, kslock's kops/s within ±5% in every cell (the ratios moved with the
//! peers' runs).
//!
//! # Recursive reads
//!
//! `read`/`lock_shared` taken by a thread that already holds a read lock **can deadlock**: as
//! soon as a writer queues, `WAITERS` sends new readers to the slow path, the stealing rule
//! queues them behind the writer, and the writer waits for the outer read lock. `read_recursive`
//! (`lock_shared_recursive`) ignores `WAITERS` and `HANDOFF` and waits only while
//! `WRITER_LOCKED` is set. `WRITER_LOCKED` can only be set while no reader bias is counted, so a
//! recursive read **never blocks while the calling thread holds a read lock on the same
//! RwSem** (plain or recursive, also one obtained by `downgrade`). It overtakes queued writers,
//! so use it only for nesting; without an outer read lock it is a reader that ignores fairness.
//!
//! # Memory orderings
//!
//! * Acquire: the read fast-path add, the write CASes, the queue-path fresh `count` load, the
//!   `mark_wake` head-bias add; each pairs with the Release of the unlock RMW (`read_unlock`
//!   CAS or sub, `write_unlock` CAS or sub, `downgrade` add) that it reads from or follows in
//!   `count`'s RMW chain.
//! * A reader grant (`Waiter::state = GRANTED`, Release) pairs with the waiter's Acquire load;
//!   the waker read `count` with Acquire first, so the previous writer's data is visible.
//! * `WAITERS` is set with Relaxed RMWs: `count`'s modification order alone decides whether an
//!   unlock RMW sees it or the enqueuer's subsequent count read sees the unlock.
//! * `WRITER_WANT` is raised and dropped with Relaxed RMWs, for the same reason: a reader that
//!   queued because of it did so with an RMW on `count` (the queueing re-check), so either that
//!   RMW follows the drop and sees the bit clear (and grants itself), or the drop follows it and
//!   sees `WAITERS` (and wakes). The writer takes the lock with an Acquire CAS that clears it.
//! * A blocked reader's spin joins with an Acquire CAS, pairing with the Release of the unlock
//!   that cleared what blocked it.
//! * `owner` is a hint re-checked against `count`; it is read Relaxed even where the record it
//!   names is then read by spinners (`is_parked`, `cpu`): an owner word holds a record *id*,
//!   which [`writer_owner`] turns into a record through the pool's segment table (Release
//!   publication, Acquire load: [`crate::thread`]), so the record's initialisation
//!   happens-before those reads whatever ordering `owner` had. Records are never freed and all
//!   their fields are atomics: a stale owner word gives a stale hint, never a bad read. The
//!   stores of `owner` stay Release (free on x86) so that a Relaxed reader's hint is at least as
//!   new as the `count` change it follows.
//! * S0 flags: see above (AcqRel RMWs for `WakeFlag`, SeqCst fences for `TrylockIfSpinner`).
//!
//! # One transfer per unlock
//!
//! An unlock's first access to `count`'s line is an RMW: the CAS of the common case ("the only
//! reader" or "write-locked, nothing else" to 0), or for `write_unlock` the owner hint's store
//! on the same line, which fetches it for writing. A misuse check that loaded `count` first
//! fetched the line shared and the RMW then fetched it again, two transfers where another CPU
//! touched the line during the section. A/B (the unlocks as before against these, binaries
//! alternated, six runs each, `lockbench matrix --locks kslock-rwsem,parking-lot-rwlock
//! --threads 2,8,32 --cs-load 1,20 --read-pct 50,90 --secs 0.3 --warmup 0.1`, median kops/s):
//! 1.02–1.08× at CS load 1, 1.02–1.16× at CS load 20, geo-mean 1.065×, CPU ns/op 2–14% lower.
//!
//! Measured and dropped: a writer's **quick poll** before its spin (the mutex's, module doc of
//! [`crate::mutex`]: up to 16 polls of `count` while nobody spins or waits, one CAS when it is
//! free). With these unlocks, six alternated runs of `lockbench matrix --locks kslock-rwsem
//! --threads 2,8,32,96 --cs-load 1,20 --outside-load 0,2 --read-pct 50,90 --secs 0.25`:
//! 1.29–1.33× at CS load 1, outside load 2, 50% reads, but 0.80–1.06× at 90% reads there,
//! 0.86–0.97× at CS load 20, max/min per-thread ops 3.6 vs 1.5 at 96 threads; geo-mean 0.99×.
//! Also dropped (session 10): a writer that meets readers polling `count` with backed-off
//! pauses (1, 2 … 32, ≈ 1.6 µs) for them to leave before its yield: binaries alternated,
//! four runs each, `lockbench matrix --locks kslock-rwsem,parking-lot-rwlock --threads 2,8,32
//! --cs-load 1,20 --read-pct 50,90 --secs 0.3`: 0.75–0.99×, geo-mean 0.91× (the polls pull
//! the count's line from the readers, and a writer that gets in this way breaks the readers'
//! run on their CPU).
//!
//! # Misuse
//!
//! Always on, because they cost a load or nothing, and each reads before it writes, so a
//! misused lock is never modified and no other thread ever sees a count corrupted by the
//! misuse (a check that subtracts first and restores afterwards lets another thread act on the
//! corrupt value in between: a reader's add can cancel the borrow and a writer then enters):
//!
//! * `write_unlock` without the writer bit: the unlock's first CAS succeeds only from
//!   `WRITER_LOCKED`; when it fails it returns the count, which is checked before the
//!   `fetch_sub` (only the holder clears the bit; a second misuse racing the first is caught by
//!   the RMW's old value and undone). The owner hint is cleared before the check: a misuse
//!   may clear a hint, never change the count. `downgrade`: a load before the RMW.
//! * `read_unlock` with no reader counted: the first CAS succeeds only from one reader bias;
//!   the value a failed CAS returns is checked before the `fetch_sub`, as above.
//!
//! * `upgradable_unlock`, `upgrade`, `try_upgrade*`, `downgrade_upgradable` when no thread
//!   holds the upgradable lock: a load of `aux` before anything is written. (Which thread holds
//!   it is not recorded: an upgradable unlock by another thread than the holder is not caught.)
//!
//! A `read_unlock` by a thread that holds no read lock while other readers hold one cannot be
//! told from theirs (readers are counted, not named) and releases one of their locks, as in
//! every reader-count lock.
//!
//! `write_unlock` / `downgrade` by a thread other than the owner panics in debug builds and
//! with feature `debug-locks` (it needs the thread record).

use core::marker::PhantomData;

use crate::chaos::{self, Site};
use crate::events::{self, Event as Ev};
use crate::osq::Osq;
use crate::policy::{DefaultPolicy, ReaderOwnedSpin, ReaderSpin, RwSemPolicy, WakePolicy};
use crate::spin::{Spin, SpinStats, Stop};
use crate::sync::{fence, loom_const_fn, AtomicU32, AtomicU64, Ordering::*};
use crate::sys::{self, Deadline};
use crate::thread::{self, current, current_word, Kind, ThreadRec, WaitSlot, Waiter, WakeQ};
use crate::wait::{WaitList, WaitLock};

/// The `count` word's type.
type State = u64;

/// A writer holds the lock.
const WRITER_LOCKED: State = 1 << 0;
/// The wait list is non-empty (wait_lock held to change).
const WAITERS: State = 1 << 1;
/// A wakeup of the head writer is in flight: unlockers need not wake (wait_lock held to set).
///
/// No lost wakeup: an unlock skips `wake` only if its count RMW saw `WOKEN`; the woken writer
/// clears `WOKEN` (an RMW on the same word) before it retries, so either its retry sees that
/// unlock or a later unlock sees `WOKEN` clear and wakes the head again. A waiter leaving the
/// list clears it, so a wakeup owed to a departed head is re-sent to the new one. A head that
/// sets it again for its window sleeps on a timer, so its sleep ends without a wake (module
/// doc, "A woken head sleeps out its window").
const WOKEN: State = 1 << 3;
/// The lock is reserved for the head waiter (wait_lock held to change).
const HANDOFF: State = 1 << 2;
/// A running writer holding the OSQ waits for the readers to drain: new readers stay out
/// (owned by the OSQ holder: only it sets and clears the bit).
const WRITER_WANT: State = 1 << 4;
/// The upgradable holder waits for the other readers to leave: new readers stay out (owned by
/// the upgradable holder).
const UPGRADING: State = 1 << 5;
/// Reader count position.
const READER_SHIFT: u32 = 8;
/// One reader.
const READER_BIAS: State = 1 << READER_SHIFT;
/// Overflow/underflow guard: set only in a corrupted state.
const READ_FAIL: State = 1 << 63;
/// All reader-count bits.
const READER_MASK: State = !(READER_BIAS - 1) & !READ_FAIL;
/// Anybody (writer or readers, phantom biases included) holds the lock.
const LOCK_MASK: State = WRITER_LOCKED | READER_MASK;
/// Any of these sends a fast-path reader to the slow path. `WAITERS` is not one: a sleeping
/// waiter does not keep running readers out (module doc, "Readers and sleeping writers").
const READ_FAILED_MASK: State = WRITER_LOCKED | HANDOFF | WRITER_WANT | UPGRADING | READ_FAIL;
/// A recursive read fails only on these: a writer holds the lock, or the guard.
const RECURSIVE_READ_FAIL: State = WRITER_LOCKED | READ_FAIL;
// A fail mask with `WAITERS` marks a read behind waiters (`read_with`); the others lack it.
const _: () = assert!((READ_FAILED_MASK | RECURSIVE_READ_FAIL) & WAITERS == 0);
/// A reader may not join while any of these is set (the fail mask without the guard).
const READ_BLOCKED: State = WRITER_LOCKED | HANDOFF | WRITER_WANT | UPGRADING;

/// `owner`: readers own (or last owned) the lock.
const OWNER_READER: u64 = 1 << 0;
/// `owner`: writers must not spin until readers drain.
const OWNER_NONSPINNABLE: u64 = 1 << 1;
/// How often a head writer may drop its HANDOFF reservation before sleeping (per wait).
const MAX_HANDOFF_DROPS: u32 = 2;
/// A head writer that dropped HANDOFF sleeps at most `HANDOFF_NS / REARM_DIV` before it
/// re-raises it (0.5 ms with the kernel's 4 ms): with `MAX_HANDOFF_DROPS` = 2 this adds at
/// most a quarter of the handoff timeout to the writer's bound.
const REARM_DIV: u64 = 8;
/// `owner`: the writer named released the lock while the head writer slept on its window, and
/// holds the turn: only it may take the lock past the sleeping head from its fast path.
const OWNER_TURN: u64 = 1 << 2;
/// `owner`: the flag bits.
const OWNER_FLAGS: u64 = OWNER_READER | OWNER_NONSPINNABLE | OWNER_TURN;
const _: () = assert!(OWNER_FLAGS & !thread::OWNER_FLAGS == 0);

/// `aux` (S0 `WakeFlag`): an unlocker is waking; others may return at once.
const AUX_WAKING: u32 = 1 << 0;
/// `aux` (S0 `TrylockIfSpinner`): an unlocker failed to trylock the wait_lock; its holder must
/// wake on its behalf after unlocking.
const AUX_WAKE_PENDING: u32 = 1 << 1;
/// `aux` (S4 `Limited`): a representative reader is spinning.
const AUX_READER_SPINNER: u32 = 1 << 2;
/// `aux`: a thread holds the upgradable lock.
const AUX_UPGRADABLE: u32 = 1 << 3;
/// `aux`: threads sleep on `aux` waiting for `AUX_UPGRADABLE` to clear.
const AUX_SLEEPERS: u32 = 1 << 4;
/// `aux`: the upgrader sleeps on `aux` waiting for the other readers to leave.
const AUX_DRAIN_SLEEP: u32 = 1 << 5;

/// `Waiter::state` of a reader: still waiting.
const GRANT_WAITING: u32 = 0;
/// `Waiter::state` of a reader: the lock is held on its behalf (published with Release).
const GRANT_GRANTED: u32 = 1;

/// Readers granted per wake (the kernel's `MAX_READERS_WAKEUP`).
const MAX_READERS_WAKEUP: usize = 256;

/// Whether a waiting writer arms its handoff timeout as an extra sleep deadline. Off under
/// loom, whose clock is frozen and whose timed waits time out at once (the timer would only
/// make every model sleep a busy loop).
const HANDOFF_TIMER: bool = !cfg!(kslock_loom);

use crate::spin::PRE_QUEUE_YIELDS;

/// Owner checks that need the thread record.
const DEBUG_LOCKS: bool = cfg!(any(debug_assertions, feature = "debug-locks"));

type Wq = WakeQ;

/// What `mark_wake` may do (the kernel's wake types).
#[derive(Clone, Copy, PartialEq, Eq)]
enum WakeType {
    /// The lock is (or was just) free: wake a head writer or grant the readers.
    Any,
    /// Readers hold the lock, the caller does not: only let head readers join.
    Readers,
    /// The caller holds a read lock (downgrade, stealing/spinning reader): grant head readers
    /// without the trial bias.
    ReadOwned,
}

/// Result of a reader's optimistic spin attempt.
enum ReaderSpinResult {
    /// Did not spin; the phantom bias is still counted.
    Skipped,
    /// Holds the read lock.
    Acquired,
    /// Spun and failed; the bias was dropped.
    Failed,
}

#[cold]
#[inline(never)]
#[track_caller]
fn misuse(what: &str) -> ! {
    panic!("kslock: RwSem {what}")
}

/// Does a thread whose fast path just failed on a writer yield once before it spins on it?
/// (Module doc, "Meeting a writer"; switch `KSLOCK_OFF=yield_on_writer`.) Never under loom,
/// where a yield explores nothing.
#[inline]
fn yield_on_writer() -> bool {
    !cfg!(kslock_loom) && crate::ablate::on(crate::ablate::Mech::YieldOnWriter)
}

/// The record of a writer named by `owner` (None: no owner, reader-owned, or an unknown word).
/// `owner` may have been read Relaxed: records are reached through the pool's own
/// Release/Acquire table ([`thread::owner_rec`]), not through this word.
#[inline]
fn writer_owner(o: u64) -> Option<&'static ThreadRec> {
    if o & (OWNER_READER | OWNER_TURN) != 0 {
        return None;
    }
    thread::owner_rec(o & !OWNER_FLAGS)
}

/// The kernel rw-semaphore. All-zero is unlocked; see the module doc for the state tables.
///
/// `P` picks the seed policies ([`crate::policy`]); the default costs nothing on the fast path.
#[repr(C)]
pub struct RawRwSem<P: RwSemPolicy = DefaultPolicy> {
    /// Writer bit, waiters, handoff, reader count (module doc table).
    count: AtomicU64,
    /// Owner hint: `ThreadRec` address | `OWNER_READER` | `OWNER_NONSPINNABLE`.
    owner: AtomicU64,
    /// The FIFO of sleeping waiters (guarded by `wait_lock`).
    wait_list: WaitList,
    /// Writers' (and S4 readers') spinner queue.
    osq: Osq,
    /// Guards `wait_list`, `WAITERS`, `HANDOFF`.
    wait_lock: WaitLock,
    /// The adaptive spin budget of this lock.
    stats: SpinStats,
    /// Policy flags and the upgradable lock (`aux` table in the module doc); a futex word.
    aux: AtomicU32,
    _policy: PhantomData<fn() -> P>,
}

#[cfg(not(kslock_loom))]
const _: () = assert!(core::mem::size_of::<RawRwSem>() <= 56);

impl<P: RwSemPolicy> core::fmt::Debug for RawRwSem<P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let c = self.count.load(Relaxed);
        f.debug_struct("RawRwSem")
            .field("writer", &(c & WRITER_LOCKED != 0))
            .field("readers", &((c & READER_MASK) >> READER_SHIFT))
            .field("waiters", &(c & WAITERS != 0))
            .field("handoff", &(c & HANDOFF != 0))
            .finish()
    }
}

impl<P: RwSemPolicy> Default for RawRwSem<P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P: RwSemPolicy> RawRwSem<P> {
    loom_const_fn! {
        /// An unlocked rw-semaphore (all-zero).
        pub fn new() -> Self {
            RawRwSem {
                count: AtomicU64::new(0),
                owner: AtomicU64::new(0),
                wait_list: WaitList::new(),
                osq: Osq::new(),
                wait_lock: WaitLock::new(),
                stats: SpinStats::new(),
                aux: AtomicU32::new(0),
                _policy: PhantomData,
            }
        }
    }
}

mod read;
mod upgrade;
mod wake;
mod write;

#[cfg(not(kslock_loom))]
mod api;
#[cfg(not(kslock_loom))]
pub use api::{RwSem, RwSemReadGuard, RwSemUpgradableReadGuard, RwSemWith, RwSemWriteGuard};

#[cfg(all(test, not(kslock_loom)))]
mod tests {
    use super::*;

    #[test]
    fn size_and_zero_init() {
        assert!(core::mem::size_of::<RawRwSem>() <= 56);
        // SAFETY: all-zero is the documented unlocked state.
        let z: RawRwSem = unsafe { core::mem::zeroed() };
        assert!(!z.is_locked());
        z.write();
        // SAFETY: held.
        unsafe { z.write_unlock() };
        z.read();
        // SAFETY: held.
        unsafe { z.read_unlock() };
        assert_eq!(z.count.load(Relaxed), 0);
    }

    #[test]
    fn masks_are_disjoint() {
        assert_eq!(
            READER_MASK
                & (WRITER_LOCKED | WAITERS | HANDOFF | WOKEN | WRITER_WANT | UPGRADING | READ_FAIL),
            0
        );
        assert_eq!(READER_MASK.count_ones(), 55);
        assert_eq!(OWNER_FLAGS & 127, OWNER_FLAGS);
    }
}
