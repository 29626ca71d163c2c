// Adapted from parking_lot 0.12.5, tests/issue_392.rs, run against kslock.
// parking_lot is Copyright (c) The parking_lot developers (Amanieu d'Antras), dual-licensed
// under the MIT license and the Apache License, Version 2.0, as is kslock. Changes: the crate
// name (`parking_lot::` → `kslock::`).

use kslock::RwLock;

struct Lock(RwLock<i32>);

#[test]
fn issue_392() {
    let lock = Lock(RwLock::new(0));
    let mut rl = lock.0.upgradable_read();
    rl.with_upgraded(|_| {
        println!("lock upgrade");
    });
    rl.with_upgraded(|_| {
        println!("lock upgrade");
    });
}
