//! Feature `stats` at scale: 10⁶ locks and 1000 threads. The lock table stays bounded (at most
//! `MAX_LOCKS` records, further locks' contentions counted as dropped), and the exact counters
//! stay exact with many more threads than counter shards. Its own test binary: it fills the
//! process's lock table.

use kslock::stats;
use kslock::Mutex;
use std::sync::Arc;
use std::time::{Duration, Instant};

const LOCKS: usize = 1_000_000;
const THREADS: usize = 1000;
const ROUNDS: u64 = 100;

#[test]
fn a_million_locks_and_a_thousand_threads() {
    let locks: Arc<Vec<Mutex<u64>>> = Arc::new((0..LOCKS).map(|_| Mutex::new(0)).collect());
    assert!(stats::set_name(&locks[0], "hot"));
    // Name them all: the table takes at most MAX_LOCKS and refuses the rest.
    let mut named = 1;
    let mut unnamed = None;
    for (i, l) in locks.iter().enumerate().skip(1) {
        if stats::set_name(l, "many") {
            named += 1;
        } else {
            unnamed.get_or_insert(i);
        }
    }
    // Every slot is some key's home or within a probe's reach of one: the table fills.
    assert_eq!(named, stats::MAX_LOCKS);
    let unnamed = unnamed.expect("a lock without a record");

    // 1000 threads: each takes the hot lock and one other lock per round.
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let locks = locks.clone();
            std::thread::Builder::new()
                .stack_size(64 << 10)
                .spawn(move || {
                    let mut x = (t as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                    for _ in 0..ROUNDS {
                        *locks[0].lock() += 1;
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        *locks[1 + (x % (LOCKS as u64 - 1)) as usize].lock() += 1;
                    }
                })
                .unwrap()
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let total: u64 = locks.iter().map(|m| *m.lock()).sum();
    assert_eq!(total, 2 * THREADS as u64 * ROUNDS);
    let s = stats::snapshot();
    assert!(s.locks.len() <= stats::MAX_LOCKS, "{}", s.locks.len());
    let hot = s.get(&locks[0]).expect("hot recorded");
    // Every acquisition of the hot lock (the check above took it once more).
    assert_eq!(hot.acquisitions, THREADS as u64 * ROUNDS + 1, "{hot:?}");
    assert_eq!(
        hot.contended,
        hot.spun + hot.yielded + hot.slept + hot.handoff + hot.timed_out
    );

    // A contended lock the full table has no record for is counted as dropped.
    let before = s.dropped_locks;
    let g = locks[unnamed].lock();
    let waiter = {
        let locks = locks.clone();
        std::thread::spawn(move || *locks[unnamed].lock() += 1)
    };
    // The waiter counts its drop when it enters the slow path, before it blocks on `g`.
    let deadline = Instant::now() + Duration::from_secs(20);
    while stats::snapshot().dropped_locks == before {
        assert!(Instant::now() < deadline, "no dropped contention counted");
        std::thread::yield_now();
    }
    drop(g);
    waiter.join().unwrap();
    assert!(stats::snapshot().get(&locks[unnamed]).is_none());
}
