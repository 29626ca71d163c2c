//! libkslock_preload.so: the POSIX conformance program passes plainly (so its checks are
//! right for glibc) and under `LD_PRELOAD`, and the lock functions resolve into the preload.

mod common;

use std::process::Command;
use std::time::Duration;

use common::{cc, lib_dir, run_limited, run_ok};

fn preload_env() -> String {
    lib_dir()
        .join("libkslock_preload.so")
        .to_str()
        .expect("utf-8 path")
        .to_string()
}

/// Builds the C test program `name` from `src` and runs it plainly (so its checks are right
/// for glibc) and under the preload: each run must print "all passed".
fn passes_plainly_and_preloaded(name: &str, src: &str, flags: &[&str]) {
    let exe = cc(name, &[src], flags);
    let plain = run_ok(&exe, &[]);
    assert!(plain.contains("all passed"), "{plain}");
    let out = run_ok(&exe, &[("LD_PRELOAD", &preload_env())]);
    assert!(out.contains("all passed"), "{out}");
}

#[test]
fn posix_conformance_passes_with_glibc_and_under_the_preload() {
    passes_plainly_and_preloaded("posix", "tests/c/posix.c", &["-ldl"]);
}

#[test]
fn pthread_mutex_lock_resolves_into_the_preload() {
    let exe = cc("resolved", &["tests/c/resolved.c"], &["-ldl"]);
    let out = run_ok(&exe, &[("LD_PRELOAD", &preload_env())]);
    assert!(out.contains("preloaded"), "{out}");
    // Without the preload the same program must say so (the check can fail).
    let plain = run_limited(Command::new(&exe), Duration::from_secs(30));
    assert_eq!(plain.status.code(), Some(1), "{plain:?}");
}

#[test]
fn the_c_library_tests_pass_under_the_preload_too() {
    // libkslock and the preload share kslock's thread records when loaded together.
    let dir = lib_dir().to_str().expect("utf-8 path").to_string();
    let exe = cc(
        "capi-preloaded",
        &["tests/c/capi.c"],
        &["-L", &dir, "-lkslock", &format!("-Wl,-rpath,{dir}")],
    );
    let out = run_ok(&exe, &[("LD_PRELOAD", &preload_env())]);
    assert!(out.contains("all passed"), "{out}");
}

#[test]
fn threads_that_lock_in_key_destructors_run_under_the_preload() {
    passes_plainly_and_preloaded("thread_exit", "tests/c/thread_exit.c", &[]);
}

#[test]
fn a_cancelled_waiter_that_contended_for_its_mutex_holds_it_in_its_cleanup() {
    passes_plainly_and_preloaded("cancel_relock", "tests/c/cancel_relock.c", &[]);
}

#[test]
fn mutex_destroy_is_busy_while_a_condvar_waiter_uses_the_mutex() {
    passes_plainly_and_preloaded("destroy_busy", "tests/c/destroy_busy.c", &[]);
}
