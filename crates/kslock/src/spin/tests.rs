//! Tests of the spin rules, budgets and statistics (module doc of [`super`]).

use super::*;
use crate::thread;

#[test]
fn short_wins_need_both_a_high_rate_and_short_spins() {
    if !crate::ablate::on(crate::ablate::Mech::CensoredBudget) {
        return; // the old estimator keeps no success rate: never "short wins"
    }
    let s = SpinStats::new();
    assert!(!s.wins_after_short_waits(), "no data yet");
    // 500 ns spins that all win: the estimates settle at ≈ 8 units and 63/63.
    for _ in 0..64 {
        s.record(500, true);
    }
    assert!(s.wins_after_short_waits(), "{:?}", s.estimates());
    // Long spins that win (a batching owner taken over after µs): no.
    let l = SpinStats::new();
    for _ in 0..64 {
        l.record(3_000, true);
    }
    assert!(!l.wins_after_short_waits(), "{:?}", l.estimates());
    // Short spins of which a third fail: the rate falls below 56/63.
    let f = SpinStats::new();
    for i in 0..96 {
        f.record(500, i % 3 != 0);
    }
    assert!(!f.wins_after_short_waits(), "{:?}", f.estimates());
    // The admission count in the low bits does not disturb the estimates.
    assert!(s.admit(4));
    assert!(s.wins_after_short_waits());
    s.leave();
}

#[test]
fn the_mean_spin_follows_the_recorded_spins() {
    let s = SpinStats::new();
    assert_eq!(s.mean_spin_ns(), None, "no data yet");
    // 300 ns spins: the average settles within 4 units of 64 ns of them (`ewma`), below
    // the rwsem writer's 512 ns yield gate.
    for _ in 0..64 {
        s.record(300, true);
    }
    let short = s.mean_spin_ns().expect("recorded");
    assert!((44..=556).contains(&short) && short < 512, "{short}");
    // Failed spins count with the time they ran: 3 µs spins that all fail move it up.
    for _ in 0..64 {
        s.record(3_000, false);
    }
    let long = s.mean_spin_ns().expect("recorded");
    assert!((2_744..=3_264).contains(&long), "{long}");
    // The admission count in the low bits does not disturb it.
    assert!(s.admit(4));
    assert_eq!(s.mean_spin_ns(), Some(long));
    s.leave();
}

#[test]
fn the_yield_estimate_opens_and_closes_the_gate() {
    let s = SpinStats::new();
    assert!(!s.yields_fail(), "no data: the yields run");
    // Phases that all queue: the share settles near 63/63 and closes the gate.
    for _ in 0..32 {
        s.record_yields(false);
    }
    assert!(s.yields_fail());
    // The spin estimates and admissions leave it alone, and it leaves them alone.
    let before = s.estimates();
    for _ in 0..8 {
        s.record(500, true);
    }
    assert!(s.admit(4));
    assert!(s.yields_fail());
    s.record_yields(false);
    assert_ne!(s.estimates(), before, "the spins were recorded");
    s.leave();
    assert_eq!(s.0.load(Relaxed) & ADMITTED_MASK, 0);
    // Phases that win reopen it within a few outcomes: each moves an eighth of the way.
    let mut n = 0;
    while s.yields_fail() {
        s.record_yields(true);
        n += 1;
        assert!(n <= 8, "still closed after {n} wins");
    }
    // Wins and queueings alternated: the share hovers near the middle of its range.
    let h = SpinStats::new();
    for i in 0..64 {
        h.record_yields(i % 2 == 0);
    }
    let share = h.yield_share();
    assert!((24..=40).contains(&share), "share {share}/63");
}

#[test]
fn admissions_stop_at_the_max_and_never_reach_the_yield_bits() {
    let s = SpinStats::new();
    s.record_yields(false);
    let yield_bits = s.0.load(Relaxed) & !ADMITTED_MASK;
    // A max beyond the field is clamped to it: the count can never carry into bit 10.
    let mut n = 0;
    while s.admit(u32::MAX) {
        n += 1;
    }
    assert_eq!(n, ADMITTED_MASK - 1);
    assert!(!s.admit(1));
    assert_eq!(s.0.load(Relaxed) & !ADMITTED_MASK, yield_bits);
    for _ in 0..n {
        s.leave();
    }
    assert_eq!(s.0.load(Relaxed), yield_bits);
}

#[test]
fn cap_is_calibrated_within_its_clamp() {
    let c = spin_cap_ns() as u64;
    if crate::ablate::tunable("SPIN_CAP_NS").is_none() {
        assert!((CAP_MIN_NS..=CAP_MAX_NS).contains(&c), "cap {c} ns");
    }
}

#[test]
fn the_poll_gap_is_counted_in_measured_pauses() {
    let tpu = sys::ticks_per_us();
    let ps = pause_ps(tpu);
    // A pause is a few cycles to a few hundred on every CPU kslock targets.
    assert!((100..=1_000_000).contains(&ps), "one pause {ps} ps");
    let gap = poll_gap_pauses();
    assert!((1..=0xFFFF).contains(&gap));
    if crate::ablate::tunable("POLL_GAP_NS").is_none() {
        // The calibration's own measurement may differ from this one (interrupts), but not
        // by 4×: the gap spans POLL_GAP_NS give or take.
        let ns = gap as u64 * ps / 1000;
        assert!(
            (POLL_GAP_NS / 4..=POLL_GAP_NS * 4).contains(&ns) || gap == 1,
            "gap {gap} pauses of {ps} ps = {ns} ns"
        );
    }
}

#[test]
fn budget_follows_the_estimated_mean_hold() {
    let s = SpinStats::new();
    let cap = 20_000;
    assert_eq!(s.budget_ns(cap), cap / 2, "no data: half the cap");
    // Mean-2 µs exponential holds cut off at an 8 µs budget: successes take 2 µs on
    // average less the cut-off tail (≈ 1.7 µs), failures (e^-4 ≈ 2%) the budget; the
    // estimate recovers ≈ 2 µs and the budget ≈ 4 means + the floor (right after a
    // failure the 1/8-weighted averages overshoot for a few spins: checked after 49
    // successes).
    for i in 0..200 {
        if i % 50 == 0 {
            s.record(8_000, false);
        } else {
            s.record(1_700, true);
        }
    }
    let b = s.budget_ns(cap);
    assert!((6_000..=12_000).contains(&b), "2 µs holds: budget {b}");
    // Most spins fail: the floor, however long the spins were.
    for _ in 0..64 {
        s.record(cap, false);
    }
    assert_eq!(s.budget_ns(cap), FLOOR_NS, "failing spins give the floor");
    // Holds longer than half the cap: the floor (sleep soon).
    for _ in 0..64 {
        s.record(15_000, true);
    }
    assert_eq!(s.budget_ns(cap), FLOOR_NS, "long holds give the floor");
    // Holds far shorter than a line transfer: the floor (let the owner batch).
    for _ in 0..64 {
        s.record(100, true);
    }
    assert_eq!(s.budget_ns(cap), FLOOR_NS, "races give the floor");
    // Mid-length holds that all succeed: 4 means + floor, capped.
    for _ in 0..64 {
        s.record(6_000, true);
    }
    assert_eq!(s.budget_ns(cap), cap, "the cap bounds every budget");
}

#[test]
fn the_weighted_average_settles_near_a_constant_input() {
    let mut a = 0;
    for _ in 0..100 {
        a = ewma(a, 63);
    }
    assert!((59..=63).contains(&a), "{a}");
    for _ in 0..100 {
        a = ewma(a, 0);
    }
    assert!((0..=4).contains(&a), "{a}");
}

#[test]
fn the_poll_backoff_stops_at_the_gap_while_one_owner_holds_on() {
    let s = SpinStats::new();
    let me = thread::current();
    // A long fixed budget: the backoff, not the budget, is under test.
    let mut sp = Spin::with_budget(&s, me, 1_000_000_000, false, false);
    let gap = sp.gap_pauses;
    // The same owner (this thread: "running" by R3's own-thread rule) poll after poll.
    let mut most = 0;
    for _ in 0..64 {
        sp.step_on(me).unwrap();
        most = most.max(sp.poll_pauses);
    }
    assert_eq!(most, gap);
}

#[test]
fn a_spin_is_bounded_by_its_budget() {
    let s = SpinStats::new();
    let mut sp = Spin::new(&s, thread::current());
    let t0 = std::time::Instant::now();
    let mut n = 0u64;
    while sp.step().is_ok() {
        n += 1;
        assert!(
            t0.elapsed().as_millis() < 1000,
            "spin ran away after {n} steps"
        );
    }
    sp.failed(Stop::Budget);
    assert_ne!(s.estimates(), (0, 0), "the failed spin was recorded");
}

#[test]
fn a_parked_owner_stops_the_spin() {
    let (tx, rx) = std::sync::mpsc::channel();
    let h = std::thread::spawn(move || {
        let me = thread::current();
        tx.send(me.id()).unwrap();
        let _ = me.park(Some(crate::sys::now_ns() + 5_000_000_000));
    });
    let owner = thread::by_id(rx.recv().unwrap());
    while !owner.is_parked() {
        std::thread::yield_now();
    }
    let s = SpinStats::new();
    let mut sp = Spin::new(&s, thread::current());
    assert_eq!(sp.step_on(owner), Err(Stop::OwnerNotRunning));
    owner.unpark();
    h.join().unwrap();
}

#[test]
fn a_trylock_spin_stays_under_the_floor_and_teaches_nothing() {
    if !crate::ablate::on(crate::ablate::Mech::TrylockSpinCap) {
        return; // switched off: a trylock spin is a plain one
    }
    let s = SpinStats::new();
    let me = thread::current();
    // No data yet: the uncapped budget would be half the spin cap, far above the floor.
    let sp = Spin::for_trylock(&s, me);
    assert!(sp.budget_ns <= FLOOR_NS, "budget {} ns", sp.budget_ns);
    sp.failed(Stop::Budget);
    assert_eq!(s.estimates(), (0, 0), "a capped spin feeds no estimate");
    let sp = Spin::for_trylock(&s, me);
    sp.succeeded();
    assert_eq!(s.estimates(), (0, 0), "nor does a capped spin that won");
}
