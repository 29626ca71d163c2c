//! Tests of the timeline analysis (module doc of `super`).

use super::*;
use crate::locks::peers::StdMutex;

fn st(try_at: u64, enter: u64, exit: u64, done: u64, read: bool) -> Stamp {
    Stamp {
        try_at,
        enter,
        exit,
        done,
        read,
        cpu_try: 0,
        cpu_in: 0,
    }
}

/// Two threads on a mutex: A runs two sections, then B (which waited since 5) takes over.
/// Stamps are padded at both ends so that the trimmed window keeps the middle ones.
#[test]
fn a_mutex_timeline_gives_its_gaps_and_shares() {
    let a = vec![
        st(0, 0, 10, 10, false),
        st(100, 100, 110, 112, false),
        st(115, 120, 130, 132, false),
        st(1000, 1000, 1001, 1001, false),
    ];
    let b = vec![
        st(0, 11, 20, 20, false),
        st(105, 140, 150, 152, false),
        st(1000, 1002, 1003, 1003, false),
    ];
    // Window: both threads stamp from 0 to 1001; analysed 100.1 .. 900.9. Sections
    // entered in it: A@120, B@140 (A@100 entered before 100.1, but its hold counts).
    let r = analyse(&[a, b], 1.0);
    assert_eq!(r.ops, 2);
    assert_eq!(r.overlaps, 0);
    assert_eq!(r.handover_gap.n, 1);
    assert_eq!(r.handover_gap.p50, 10.0); // A exits at 130, B enters at 140
    assert_eq!(r.reentry_gap.n, 0);
    assert_eq!(r.handovers_per_kop, 500.0);
    assert_eq!(r.section_after_handover.p50, 10.0);
    // B waited from 105 for A's section (exit 130, after its try): transfer W->W of 10.
    assert_eq!(r.transfer_ww.n, 1);
    assert_eq!(r.transfer_ww.p50, 10.0);
    assert_eq!(r.wait_write.n, 2);
    assert_eq!(r.wait_write.p50, 35.0);
    let total = r.held_writer + r.held_one_reader + r.held_readers + r.idle_waited_for + r.idle;
    assert!((total - 1.0).abs() < 1e-9);
    // Held 100.1..110, 120..130 and 140..150; idle while B (from 105) and A (from 115)
    // waited: 110..120 and 130..140.
    let w = 0.8 * 1001.0;
    assert!((r.held_writer - 29.9 / w).abs() < 1e-9, "{r:?}");
    assert!((r.idle_waited_for - 20.0 / w).abs() < 1e-9, "{r:?}");
}

#[test]
fn cpu_time_splits_a_holder_and_a_waiter_on_two_cpus() {
    let mut a = vec![st(0, 0, 1000, 1000, false)];
    let mut b = vec![st(0, 1000, 1001, 1001, false)];
    (a[0].cpu_try, a[0].cpu_in) = (0, 0);
    (b[0].cpu_try, b[0].cpu_in) = (1, 1);
    // Window 100..900: CPU 0 has A inside all along, CPU 1 has B in its lock call.
    let r = analyse(&[a, b], 1.0);
    assert_eq!(r.cpus, 2);
    assert!((r.cpu[0] - 0.5).abs() < 1e-9, "{r:?}");
    assert!((r.cpu[3] - 0.5).abs() < 1e-9, "{r:?}");
    assert!((r.cpu.iter().sum::<f64>() - 1.0).abs() < 1e-9);
}

#[test]
fn readers_share_and_a_writer_inside_readers_is_an_overlap() {
    let a = vec![
        st(0, 0, 1, 1, true),
        st(200, 200, 400, 401, true),
        st(999, 999, 1000, 1000, true),
    ];
    let b = vec![
        st(0, 2, 3, 3, true),
        st(250, 300, 500, 501, true),
        st(999, 999, 1000, 1000, true),
    ];
    let r = analyse(&[a.clone(), b], 1.0);
    assert_eq!(r.overlaps, 0);
    assert!(r.held_readers > 0.0 && r.held_writer == 0.0);
    assert_eq!(r.handovers_per_kop, 0.0);
    // A writer inside the readers' span is caught.
    let c = vec![
        st(0, 4, 5, 5, false),
        st(340, 350, 360, 361, false),
        st(999, 999, 1000, 1000, false),
    ];
    let r = analyse(&[a, c], 1.0);
    assert_eq!(r.overlaps, 1);
}

#[test]
fn a_run_of_a_real_lock_is_recorded_whole_and_without_overlaps() {
    let cfg = TimelineCfg {
        threads: 2,
        cs_load: 5,
        outside_load: 0,
        read_pct: 0,
        // Enough for both threads to overlap even if the test runner descheduled one for
        // a few scheduler slices (≈ 0.2 µs per operation: ≈ 20 ms).
        ops: 100_000,
        pin: false,
    };
    let rec = record::<StdMutex>(&cfg).expect("std mutex excludes");
    assert_eq!(rec.threads.len(), 2);
    assert!(rec.threads.iter().all(|v| v.len() == 100_000));
    assert!(rec.ns_per_tick > 0.0);
    for s in rec.threads.iter().flatten() {
        assert!(
            s.try_at <= s.enter && s.enter <= s.exit && s.exit <= s.done,
            "{s:?}"
        );
    }
    let r = analyse(&rec.threads, rec.ns_per_tick);
    assert!(r.ops > 0);
    assert_eq!(r.overlaps, 0);
    assert!(r.handovers_per_kop <= 1000.0);
}
