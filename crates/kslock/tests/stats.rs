//! Feature `stats` against known contention: one hot mutex that N threads hold for a known
//! time each, one cold mutex that only the main thread takes, and an rw-semaphore whose
//! readers wait for a writer. Run on its own (`--test stats`): the ranking below assumes
//! no other contended lock in the process.
//!
//! Tolerances: counts are exact; the total wait of the hot lock lies between the least
//! that N threads doing K holds of H each must wait, H·K·N(N−1)/2 (they finish one after
//! the other), and N times the run's wall time; percentiles are within the histogram's
//! factor of 2.

use kslock::stats;
use kslock::{Mutex, RwSem};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

const THREADS: u64 = 4;

/// `v` in an `Arc` that is never freed: a lock freed by one test and another created at its
/// address by the next would share a record (module doc of `kslock::stats`, "Memory").
fn leaked<T>(v: T) -> Arc<T> {
    let a = Arc::new(v);
    std::mem::forget(a.clone());
    a
}
const HOLDS: u64 = 10;
const HOLD: Duration = Duration::from_millis(2);

#[test]
fn known_contention() {
    stats::set_sample_rate(1);
    let hot = leaked(Mutex::new(0u64));
    let cold = Mutex::new(0u64);
    assert!(stats::set_name(&*hot, "hot"));
    assert!(stats::set_name(&cold, "cold"));

    let barrier = Arc::new(Barrier::new(THREADS as usize));
    let t0 = Instant::now();
    let workers: Vec<_> = (0..THREADS)
        .map(|_| {
            let (hot, barrier) = (hot.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                for _ in 0..HOLDS {
                    let mut g = hot.lock();
                    std::thread::sleep(HOLD);
                    *g += 1;
                }
            })
        })
        .collect();
    for _ in 0..HOLDS {
        *cold.lock() += 1;
    }
    for w in workers {
        w.join().unwrap();
    }
    let wall = t0.elapsed().as_nanos() as u64;
    assert_eq!(*hot.lock(), THREADS * HOLDS);

    let s = stats::snapshot();
    let h = s.get(&*hot).expect("hot lock recorded").clone();
    let c = s.get(&cold).expect("cold lock recorded").clone();

    // Ranking: the hot lock waited most of all locks in the process.
    assert_eq!(
        s.locks[0].addr,
        h.addr,
        "hot lock ranks first:\n{}",
        s.report(5)
    );
    assert_eq!(h.name, Some("hot"));
    assert_eq!(c.name, Some("cold"));

    // Counts: exact (the final check above took the hot lock once more).
    assert_eq!(h.acquisitions, THREADS * HOLDS + 1);
    assert_eq!(c.acquisitions, HOLDS);
    assert_eq!(c.contended, 0);
    assert_eq!(c.wait_total_ns, 0);
    assert!(h.contended >= 1 && h.contended <= h.acquisitions);
    assert_eq!(
        h.spun + h.yielded + h.slept + h.handoff + h.timed_out,
        h.contended,
        "every contended acquisition has one outcome"
    );
    assert_eq!(h.timed_out, 0);
    // Waiting out a 2 ms hold sleeps: most contended acquisitions slept or were handed
    // the lock by a releasing thread.
    assert!(h.slept + h.handoff > 0, "{h:?}");
    assert_eq!(h.wait_histogram.iter().sum::<u64>(), h.contended);

    // Wait figures.
    let hold = HOLD.as_nanos() as u64;
    let least = hold * HOLDS * THREADS * (THREADS - 1) / 2;
    assert!(
        h.wait_total_ns * 10 >= least * 9,
        "total wait {} below {least} (0.9×)",
        h.wait_total_ns
    );
    assert!(
        h.wait_total_ns <= THREADS * wall,
        "total wait {} over N × wall {wall}",
        h.wait_total_ns
    );
    assert!(h.wait_max_ns >= hold / 2 && h.wait_max_ns <= wall);
    // Some wait is at least one hold long (the threads that lost the first race).
    assert!(h.wait_quantile_ns(0.999) >= hold / 2);
    assert!(h.wait_quantile_ns(0.5) <= 2 * h.wait_max_ns);

    // Holds: every acquisition is sampled at rate 1 (one hold in flight per thread).
    assert!(h.hold_samples >= THREADS * HOLDS, "{h:?}");
    assert!(h.hold_max_ns >= hold && h.hold_max_ns <= wall);
    assert!(h.hold_mean_ns() >= hold);

    // Stacks: the first contended acquisition and every sample have one.
    let first = h.first_stack.as_ref().expect("first contended stack");
    assert!(!first.is_empty());
    let sampled: u64 = h.stacks.iter().map(|s| s.count).sum();
    assert_eq!(sampled + s.dropped_stacks, h.contended);
    assert!(h.worst_stack().is_some());

    // Text and JSON.
    let text = s.report(3);
    eprintln!("{text}");
    assert!(text.contains("\"hot\""), "{text}");
    let json: serde_json::Value = serde_json::from_str(&s.to_json()).expect("valid JSON");
    let jl = json["locks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == "hot")
        .expect("hot lock in JSON");
    assert_eq!(jl["acquisitions"], h.acquisitions);
    assert_eq!(jl["wait_total_ns"], h.wait_total_ns);
}

#[test]
fn rwsem_read_side_and_timeouts() {
    let l = leaked(RwSem::new(()));
    stats::set_name(&*l, "rw");
    let w = l.write();
    let reader = {
        let l = l.clone();
        std::thread::spawn(move || {
            drop(l.read());
            // A timed read that gives up while the writer below holds the lock.
        })
    };
    std::thread::sleep(Duration::from_millis(20));
    drop(w);
    reader.join().unwrap();
    let w = l.write();
    let l2 = l.clone();
    let timed = std::thread::spawn(move || l2.try_write_for(Duration::from_millis(5)).is_some());
    assert!(!timed.join().unwrap());
    drop(w);

    let s = stats::snapshot();
    let r = s.get_read(&*l).expect("read side recorded");
    assert_eq!(r.name, Some("rw"));
    assert_eq!(r.acquisitions, 1);
    assert_eq!(r.contended, 1);
    assert!(r.wait_total_ns >= 10_000_000, "{r:?}");
    let wr = s.get(&*l).expect("write side recorded");
    assert_eq!(wr.acquisitions, 2);
    assert_eq!(wr.timed_out, 1);
    assert!(wr.released_with_waiters >= 1, "{wr:?}");
}

/// An upgrade is an acquisition of the write side (contended while another reader holds the
/// lock), a downgrade one of the read side that needs no wait; a queued reader's grant ends as
/// a handoff.
#[test]
fn rwsem_upgrade_downgrade_and_grants() {
    use kslock::{RwSemUpgradableReadGuard, RwSemWriteGuard};
    let l = leaked(RwSem::new(()));
    stats::set_name(&*l, "ud");
    // Uncontended: upgradable read, upgrade, downgrade.
    let u = l.upgradable_read();
    let w = RwSemUpgradableReadGuard::upgrade(u);
    drop(RwSemWriteGuard::downgrade(w));
    // Contended upgrade: another thread holds a read lock for 20 ms.
    let (tx, rx) = std::sync::mpsc::channel();
    let other = {
        let l = l.clone();
        std::thread::spawn(move || {
            let g = l.read();
            tx.send(()).unwrap();
            std::thread::sleep(Duration::from_millis(20));
            drop(g);
        })
    };
    rx.recv().unwrap();
    let u = l.upgradable_read();
    let t0 = Instant::now();
    let w = RwSemUpgradableReadGuard::upgrade(u);
    let waited = t0.elapsed();
    other.join().unwrap();
    // A reader that queues behind the writer and gets its grant from the write unlock.
    let reader = {
        let l = l.clone();
        std::thread::spawn(move || drop(l.read()))
    };
    std::thread::sleep(Duration::from_millis(20));
    drop(w);
    reader.join().unwrap();

    let s = stats::snapshot();
    let wr = s.get(&*l).expect("write side recorded");
    assert_eq!(wr.acquisitions, 2, "two upgrades: {wr:?}");
    assert_eq!(wr.contended, 1, "{wr:?}");
    assert!(
        wr.wait_total_ns >= waited.as_nanos() as u64 / 2,
        "{wr:?} {waited:?}"
    );
    let rd = s.get_read(&*l).expect("read side recorded");
    // Reads: upgradable, downgrade, the other thread's, upgradable, the queued reader's.
    assert_eq!(rd.acquisitions, 5, "{rd:?}");
    assert_eq!(rd.contended, 1, "{rd:?}");
    assert_eq!(
        rd.handoff, 1,
        "the queued reader was granted the lock: {rd:?}"
    );
}

/// A waiter that `notify_all` requeues onto the mutex takes the mutex in the mutex's queue,
/// not through `lock()`: it is counted all the same.
#[test]
fn condvar_requeue_counts_the_mutex() {
    struct S {
        ready: u32,
        go: bool,
        /// Every lock of `m`, and every return from a condvar wait (a re-acquisition).
        locks: u64,
    }
    const WAITERS: u32 = 3;
    let p = leaked((
        Mutex::new(S {
            ready: 0,
            go: false,
            locks: 0,
        }),
        kslock::Condvar::new(),
        kslock::Condvar::new(),
    ));
    stats::set_name(&p.0, "requeue");
    let ts: Vec<_> = (0..WAITERS)
        .map(|_| {
            let p = p.clone();
            std::thread::spawn(move || {
                let (m, cv, ready) = &*p;
                let mut g = m.lock();
                g.locks += 1;
                g.ready += 1;
                ready.notify_one();
                while !g.go {
                    cv.wait(&mut g);
                    g.locks += 1;
                }
            })
        })
        .collect();
    {
        let (m, cv, ready) = &*p;
        let mut g = m.lock();
        g.locks += 1;
        while g.ready < WAITERS {
            ready.wait(&mut g);
            g.locks += 1;
        }
        g.go = true;
        cv.notify_all();
    }
    for t in ts {
        t.join().unwrap();
    }
    let locks = p.0.lock().locks + 1;
    let s = stats::snapshot();
    let m = s.get(&p.0).expect("mutex recorded");
    assert_eq!(m.acquisitions, locks, "{m:?}");
}

/// Acquisition counts stay exact when threads switch among more locks than a thread's batch
/// holds (module `batch`: an entry's batch moves to the record when another lock takes it)
/// and when the counting threads have exited.
#[test]
fn counts_exact_across_many_locks_and_exited_threads() {
    const LOCKS: usize = 40;
    const ROUNDS: u64 = 50;
    let locks: Arc<Vec<Mutex<u64>>> = leaked((0..LOCKS).map(|_| Mutex::new(0)).collect());
    for (i, m) in locks.iter().enumerate() {
        assert!(stats::set_name(m, if i % 2 == 0 { "even" } else { "odd" }));
    }
    let ts: Vec<_> = (0..THREADS)
        .map(|t| {
            let locks = locks.clone();
            std::thread::spawn(move || {
                for r in 0..ROUNDS {
                    // Each thread visits the locks in its own order: entries collide and move.
                    for i in 0..LOCKS {
                        let j = (i * (t as usize * 2 + 1) + r as usize) % LOCKS;
                        *locks[j].lock() += 1;
                    }
                }
            })
        })
        .collect();
    for t in ts {
        t.join().unwrap();
    }
    // The main thread too, with the counting threads gone: its own batch counts as well.
    for m in locks.iter() {
        *m.lock() += 1;
    }
    let s = stats::snapshot();
    for m in locks.iter() {
        let n = *m.lock();
        let l = s.get(m).expect("named lock recorded");
        assert_eq!(l.acquisitions, n, "{l:?}");
    }
}
