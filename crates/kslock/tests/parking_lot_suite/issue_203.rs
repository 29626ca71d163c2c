// Adapted from parking_lot 0.12.5, tests/issue_203.rs, run against kslock. parking_lot is Copyright
// (c) The parking_lot developers (Amanieu d'Antras), dual-licensed under the MIT license and the
// Apache License, Version 2.0, as is kslock. Changes: the crate name (`parking_lot::` →
// `kslock::`).

use kslock::RwLock;
use std::thread;

struct Bar(RwLock<()>);

impl Drop for Bar {
    fn drop(&mut self) {
        let _n = self.0.write();
    }
}

thread_local! {
    static B: Bar = Bar(RwLock::new(()));
}

#[test]
fn main() {
    thread::spawn(|| {
        B.with(|_| ());

        let a = RwLock::new(());
        let _a = a.read();
    })
    .join()
    .unwrap();
}
