//! libkslock from C: the header matches the library, the C tests pass against the shared and
//! the static library, and the example runs.

mod common;

use std::collections::BTreeSet;
use std::process::Command;

use common::{cc, crate_dir, lib_dir, run_ok};

/// `kslock_*` functions declared in `include/kslock.h`.
fn header_functions() -> BTreeSet<String> {
    let h = std::fs::read_to_string(crate_dir().join("include/kslock.h")).expect("read header");
    let mut set = BTreeSet::new();
    for line in h.lines().filter(|l| !l.trim_start().starts_with('#')) {
        let mut rest = line;
        while let Some(i) = rest.find("kslock_") {
            let tail = &rest[i..];
            let name: String = tail
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if tail[name.len()..].starts_with('(') {
                set.insert(name.clone());
            }
            rest = &tail[name.len()..];
        }
    }
    set
}

/// `kslock_*` functions exported by `libkslock.so`.
fn exported_functions() -> BTreeSet<String> {
    let so = lib_dir().join("libkslock.so");
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&so)
        .output()
        .expect("run nm");
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_addr, kind, name) = (f.next()?, f.next()?, f.next()?);
            (kind == "T" && name.starts_with("kslock_")).then(|| name.to_string())
        })
        .collect()
}

#[test]
fn header_declares_exactly_what_the_library_exports() {
    let (h, e) = (header_functions(), exported_functions());
    assert!(h.len() >= 25, "header parse found only {h:?}");
    let missing: Vec<_> = e.difference(&h).collect();
    let stale: Vec<_> = h.difference(&e).collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "include/kslock.h drifted from libkslock.so: exported but not declared {missing:?}, \
         declared but not exported {stale:?}"
    );
}

#[test]
fn header_sizes_match_the_rust_types() {
    // capi.c's first test compares sizeof() of the header's types with kslock_*_sizeof(); this
    // one checks the header's KSLOCK_*_SIZE macros against the same values.
    let dir = lib_dir().to_str().expect("utf-8 path").to_string();
    let exe = cc(
        "sizes",
        &["tests/c/sizes.c"],
        &["-L", &dir, "-lkslock", &format!("-Wl,-rpath,{dir}")],
    );
    let out = run_ok(&exe, &[]);
    assert_eq!(out.trim(), "32 48 32");
}

#[test]
fn c_tests_pass_against_the_shared_library() {
    let dir = lib_dir().to_str().expect("utf-8 path").to_string();
    let exe = cc(
        "capi-shared",
        &["tests/c/capi.c"],
        &["-L", &dir, "-lkslock", &format!("-Wl,-rpath,{dir}")],
    );
    let out = run_ok(&exe, &[]);
    assert!(out.contains("all passed"), "{out}");
}

#[test]
fn c_tests_pass_against_the_static_library() {
    let a = lib_dir().join("libkslock.a");
    let exe = cc(
        "capi-static",
        &["tests/c/capi.c"],
        &[
            a.to_str().expect("utf-8 path"),
            "-lpthread",
            "-ldl",
            "-lm",
            "-lgcc_s",
        ],
    );
    let out = run_ok(&exe, &[]);
    assert!(out.contains("all passed"), "{out}");
}

#[test]
fn the_example_runs() {
    let dir = lib_dir().to_str().expect("utf-8 path").to_string();
    let exe = cc(
        "counter",
        &["examples/counter.c"],
        &["-L", &dir, "-lkslock", &format!("-Wl,-rpath,{dir}")],
    );
    let out = run_ok(&exe, &[]);
    assert!(out.contains("counter = 400000"), "{out}");
}
