//! What recording costs one thread alone (feature `stats`): a `kslock::Mutex` locked and
//! unlocked `N` times, recording a lock that has a record, one that has none, and recording
//! off; five rounds. `cargo run --release -p kslock --features stats --example stats_cost`
//! (kslock-stat's README, "What it costs").
use std::hint::black_box;
use std::time::Instant;

const N: u64 = 20_000_000;

/// ns per lock + unlock pair of `m`.
fn pair_ns(m: &kslock::Mutex<u64>) -> f64 {
    let t = Instant::now();
    for _ in 0..N {
        *black_box(m).lock() += 1;
    }
    t.elapsed().as_nanos() as f64 / N as f64
}

fn main() {
    let recorded = kslock::Mutex::new(0u64);
    kslock::stats::set_name(&recorded, "recorded");
    let unrecorded = kslock::Mutex::new(0u64);
    println!("ns per lock + unlock: recorded / no record / recording off");
    for round in 1..=5 {
        kslock::stats::set_enabled(true);
        let a = pair_ns(&recorded);
        let b = pair_ns(&unrecorded);
        kslock::stats::set_enabled(false);
        let c = pair_ns(&recorded);
        println!("round {round}: {a:.2} / {b:.2} / {c:.2}");
    }
    let s = kslock::stats::snapshot();
    let acq = s.get(&recorded).map_or(0, |l| l.acquisitions);
    // Recorded in the five "on" passes only.
    assert_eq!(acq, 5 * N, "acquisitions recorded");
}
