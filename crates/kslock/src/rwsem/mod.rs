//! The kernel rw-semaphore (`docs/kernel-locks.md` A) for user space: one atomic add to
//! read-lock, one CAS to write-lock; writers spin through the OSQ while a writer owner runs and
//! for a bounded time on reader owners, keeping new readers out meanwhile (`WRITER_WANT`);
//! blocked readers wait out a writer phase on the count word before they queue and are woken in
//! bulk (up to 256 per wake, also those queued behind writers); the head writer reserves the
//! lock (HANDOFF) against readers while it is awake, and against writers after
//! [`RwSemPolicy::HANDOFF_NS`] (≈ 4 ms) of waiting.
//!
//! What each mechanism below was measured against, and the variants that were dropped:
//! `docs/experiments.md` in the repository.
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
//! **Blocked readers** (default policy, S4 `Off`; switch `reader_count_spin`) drop their bias and spin on `count` under the
//! calibrated cap ([`crate::spin_cap_ns`], the cost of the sleep it replaces) while the writer
//! that blocks them runs (the oracle) or waits awake for readers to drain, and join with a CAS
//! as soon as nothing blocks readers. Only then do they queue, and a queued reader still polls
//! its own grant word while such a writer runs before it sleeps.
//!
//! Every blocked reader spins: there is no admission count (a cap of 1–4 count spinners was
//! measured on 16 cores and not kept: `docs/experiments.md`, "Fewer spinning readers on many
//! cores").
//!
//! **Queueing** re-checks the count in the same RMW that removes the phantom bias and sets
//! `WAITERS`: a free lock wakes the head, a reader-held lock lets a head reader join. This
//! closes the window in which an unlocker saw the phantom bias, or did not yet see `WAITERS`.
//!
//! **Yield before queueing** (user space; switch `rw_pre_queue_yield`): a writer whose spin failed, or a blocked reader whose
//! wait on the count failed, gives its CPU away and tries again, [`PRE_QUEUE_YIELDS`] times,
//! before it queues. With more threads than CPUs a spin mostly fails because the holder was
//! preempted; a thread that then sleeps needs a wakeup and a CPU before it can take the lock
//! again, and once most threads slept that way one CPU idled while the other ran the lock
//! alone. A yield lets the preempted holder run and keeps the waiter runnable, so both CPUs
//! stay busy. After each yield the writer spins again. Fairness stays with the queue: a queued
//! writer reserves the lock.
//!
//! **Writer spinning** (seed S2): through the OSQ (one poller per lock), while the owner writer
//! runs (the [`crate::spin`] oracle), on a 0 owner within the budget, and on a reader-owned lock
//! for at most `R = cap × (20 + min(readers, 30)) / 50` — the kernel's
//! `(10 + min(readers,30)/2)` µs with 25 µs scaled to the calibrated spin cap
//! ([`crate::spin_cap_ns`]: R is 0.42–1.0 of the cap). While it spins on readers it holds
//! `WRITER_WANT`, so no new reader joins and the wait is the longest remaining read section;
//! that is why this phase is bounded by R alone and not by the lock's adaptive budget, which
//! learns writer hold times (a budget shrunk below one read section would fail every such
//! spin). Its polls of `count` back off as R6 of [`crate::spin`] prescribes (1, 2, 4 … pauses
//! up to the calibrated poll gap): polling every pause pulls the line away from the readers on
//! every poll. When R expires while the lock is still reader-owned the writer sets
//! `NONSPINNABLE` and gives `WRITER_WANT` up. With [`ReaderOwnedSpin::Never`] writers stop as
//! soon as the lock is reader-held.
//!
//! **Writer meets readers** (user space; switch `writer_yield_first`): a writer whose fast path
//! fails on a lock held by readers only yields before it spins (the first of its
//! [`PRE_QUEUE_YIELDS`]; up to `READER_YIELDS` = 2 while readers still hold the lock).
//! Spinning at once would raise `WRITER_WANT` while the readers, on both CPUs, are about to
//! leave anyway, and send every reader that arrives meanwhile through the slow path: with short
//! sections the lock would run in lockstep across the CPUs. After the yield the readers it met
//! have usually left. Two refinements:
//!
//! * **A yield that ran nobody** (switch `quick_yield_spins`): the writer times each of its
//!   yields ([`crate::spin::timed_yield`]); after one that returned within 1/16 of the spin cap
//!   (nothing else was runnable on its CPU) it spins next instead of yielding again. The first
//!   yield stays; a second one would only let the reader on the other CPU batch on alone.
//! * **The writer's yield gate** (switch `writer_yield_gate`): the writer yields first only
//!   while the lock's average spin (the spin estimate of [`crate::spin`], over its writers'
//!   spins) is below `YIELD_FIRST_MAX_NS`, 512 ns, about what a yield that returns at once
//!   costs; before the lock's first spin it yields. Where a spin outlasts a yield, the yield
//!   hands the CPU to a thread that joins the readers, and the writer, back, meets readers
//!   again and yields a second time before it spins with `WRITER_WANT` anyway: two switches for
//!   nothing.
//!
//! **Meeting a writer** (switch `yield_on_writer`): a reader whose fast path fails on a writer
//! (holding, or waiting awake with `WRITER_WANT` / `HANDOFF`) yields once before its first spin
//! on `count` (then, as before, up to [`PRE_QUEUE_YIELDS`] more yields between spins before it
//! queues), and a writer whose fast path fails on a writer owner yields once before its OSQ
//! spin (the first of its [`PRE_QUEUE_YIELDS`]). With short sections the holder re-locks from
//! its own cache; a waiter that spins takes the lock in the gap between two of the holder's
//! operations, and every such entry is a handover of `count`'s line and of the lock. A yield
//! that finds nothing else to run returns in ≈ 0.5 µs, long enough for the holder to run a
//! batch. The cost is where threads work outside the lock: there the holder leaves soon after
//! it takes the lock, and a spin would have caught it.
//!
//! **The writer's gap poll** (switch `KSLOCK_OFF=writer_gap_poll`): for writers meeting a
//! writer, where the lock's spins win after short waits ([`crate::spin`]'s
//! `wins_after_short_waits`: a success rate of at least 56/63, a mean spin of at most 1 µs) and
//! nobody queues or spins, the writer polls `count` alone, 1, 2, then up to 4 pauses apart, and
//! takes the lock at its first sight of it free; it yields as before when readers or
//! `WRITER_WANT` show, when the owner sleeps, or after one owner held the lock for half a poll
//! gap (about a yield that runs nobody). Lock coupling is the case: a descent that write-locks
//! a root for ≈ 150 ns and leaves it would otherwise pay a yield at every meeting.
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
//! **A woken head sleeps out its window** (switch `KSLOCK_OFF=writer_window`): a head writer
//! that an unlock woke and that then loses its retry to a writer (the owner took the lock
//! straight back) sets `WOKEN` again before it sleeps, and sleeps on a timer at its fairness
//! window's end ([`crate::fairness::handoff_at`] from its queueing, taken at its first such
//! loss: from the window minimum, 20–80 µs, to 1 ms; it also becomes its handoff timeout).
//! Unlocks skip the wake while `WOKEN` is set, so the owner batches without a futex wake per
//! release; when the timer fires the head's retry raises `HANDOFF` against the writer and it
//! spins for the handover, as a head past its timeout does. If the `fetch_or` that sets `WOKEN` finds the writer gone, the
//! head retries at once instead; a lock left free by a writer that does not come back stays free
//! until the timer, at most the window (the mutex's successor waits the same way: the module doc
//! of `kslock::mutex`'s `turn`). Not where the lock's spins win after short waits
//! ([`SpinStats::wins_after_short_waits`]: holders leave within ≈ 1 µs): there the woken head
//! wins a spin soon after its next wake, and a window would only keep `WAITERS` set for the
//! other writers (below).
//!
//! **The writer turn.** The window keeps `WAITERS` set, so every other writer's fast path
//! fails. A writer whose release finds `WAITERS | WOKEN` therefore marks the owner word
//! `OWNER_TURN` (CAS from 0, after its release; any later owner store replaces it), and its fast
//! path takes the lock back from that state in one CAS (`WAITERS` and `WOKEN` kept, as a
//! spinner's steal does) while the mark is its own and its run of such re-takes is younger than
//! the window minimum ([`crate::fairness::window_ns`]: the same bound as a mutex turn's shortest
//! window); past that it competes from the slow path like anyone, where the run ends. The run
//! limit is what keeps the turn fair: without it the turn's holder would take nearly every
//! acquisition. The turn is a hint only: a stale mark costs one failed CAS, and readers never
//! look at it.
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
//! creates threads that read-lock) would turn every such wait into up to ≈ 100 µs of CPU taken
//! from the runnable threads, the writer's included. The mutex's yield gate (module doc of
//! [`crate::mutex`], "The yield gate"; switch `KSLOCK_OFF=yield_gate`) applies: the spin word's
//! yield estimate (bits 10–15) averages whether blocked readers got the lock without sleeping
//! (in the wait-out or the grant spin) or slept, and where they mostly slept a blocked reader
//! queues and sleeps at once, one in 8 still waiting as before to keep the estimate current.
//! Where readers rarely sleep (short writer phases) the gate stays open.
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
//! would fetch the line shared and the RMW then fetch it again, two transfers where another CPU
//! touched the line during the section.
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
use crate::stats;
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

/// How many times a writer whose spin failed, or a blocked reader whose count spin failed,
/// yields before it queues (module doc, "Yield before queueing"): [`PRE_QUEUE_YIELDS`], or 0
/// under the experiment switch `KSLOCK_OFF=rw_pre_queue_yield`.
#[inline]
fn pre_queue_yields() -> u32 {
    if crate::ablate::on(crate::ablate::Mech::RwPreQueueYield) {
        PRE_QUEUE_YIELDS
    } else {
        0
    }
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
