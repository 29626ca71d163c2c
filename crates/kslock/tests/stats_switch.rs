//! `kslock::stats::set_enabled`: a build with feature `stats` whose recording is switched off
//! records nothing, neither uncontended nor contended acquisitions nor lock events, and records
//! again when switched back on. Its own test binary: the switch is process-wide.

use kslock::stats;
use kslock::Mutex;
use std::sync::Arc;
use std::time::Duration;

/// Two threads that take `m` `n` times each, holding it 50 µs: the holds overlap, so many of
/// the acquisitions are contended.
fn contend(m: &Arc<Mutex<u64>>, n: u64) {
    let hs: Vec<_> = (0..2)
        .map(|_| {
            let m = m.clone();
            std::thread::spawn(move || {
                for _ in 0..n {
                    let mut g = m.lock();
                    *g += 1;
                    std::thread::sleep(Duration::from_micros(50));
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
}

#[test]
fn off_records_nothing_and_on_resumes() {
    assert!(stats::enabled(), "recording is on by default");
    let m = Arc::new(Mutex::new(0u64));
    assert!(stats::set_name(&*m, "switched"));
    let count = || {
        stats::snapshot()
            .get(&*m)
            .map(|s| (s.acquisitions, s.contended))
    };

    let events = || -> u64 { kslock::events::snapshot().iter().map(|e| e.1).sum() };
    stats::set_enabled(false);
    assert!(!stats::enabled());
    let events_before = events();
    contend(&m, 200);
    drop(m.lock());
    assert_eq!(count(), Some((0, 0)), "recorded while off");
    assert_eq!(events(), events_before, "lock events counted while off");

    stats::set_enabled(true);
    contend(&m, 200);
    let (acq, contended) = count().unwrap();
    assert_eq!(acq, 400, "every acquisition counted once on again");
    assert!(
        contended > 0,
        "overlapping holds of 50 µs were never contended"
    );
    assert!(events() > events_before, "no lock event counted on again");
    assert_eq!(*m.lock(), 800);
}
