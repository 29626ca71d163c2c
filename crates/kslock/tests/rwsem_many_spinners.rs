//! The rwsem's writer bound with an OSQ that admits 8 spinners, as on a machine with more CPUs
//! than this one: then a stream of spinning readers (S4 `On`) can keep the reader count above
//! zero for ever, and only the writer's own handoff timer bounds its wait (issue 8, defect 2).
//! A test binary of its own: the admission cap is read once per process.
#![cfg(not(kslock_loom))]

use kslock::policy::*;

mod common;

#[test]
fn writer_bound_holds_for_every_policy_with_many_spinners() {
    // SAFETY (edition 2021: safe): the only test of this binary, before any lock is used.
    std::env::set_var("KSLOCK_OSQ_SPINNERS", "8");
    common::writer_bound_in_reads::<ReaderSpinOn>(4);
    common::writer_bound_in_reads::<ReaderSpinLimited>(4);
    common::writer_bound_in_reads::<DefaultPolicy>(4);
    common::writer_bound_in_reads::<WakeFlag>(4);
    common::writer_bound_in_reads::<TrylockIfSpinner>(4);
}
