// Adapted from parking_lot 0.12.5, tests/issue_392.rs, run against kslock. parking_lot is Copyright
// (c) The parking_lot developers (Amanieu d'Antras), dual-licensed under the MIT license and the
// Apache License, Version 2.0, as is kslock. Changes: the crate name (`parking_lot::` →
// `kslock::`); ignored (needs upgradable reads), body behind `cfg(kslock_upgradable)`.

#[allow(unused_imports)]
use kslock::RwLock;

#[allow(dead_code)]
struct Lock(RwLock<i32>);

#[test]
#[ignore = "needs upgradable reads (issue 10 item 3)"]
fn issue_392() {
    #[cfg(kslock_upgradable)]
    {
        let lock = Lock(RwLock::new(0));
        let mut rl = lock.0.upgradable_read();
        rl.with_upgraded(|_| {
            println!("lock upgrade");
        });
        rl.with_upgraded(|_| {
            println!("lock upgrade");
        });
    }
}
