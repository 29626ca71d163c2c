//! Builds `libkslock_preload.so` (package `kslock-preload`, in `preload/`) next to
//! `libkslock.so`/`libkslock.a`, so that `cargo build [--release] -p kslock-c` produces all three
//! (issue 9): the preload must stay a separate shared object (its `pthread_*` definitions would
//! interpose for every program linking `-lkslock`), built by a nested cargo
//! (`preload/build_nested.rs`). Set `KSLOCK_C_NO_PRELOAD=1` to skip it.

include!("preload/build_nested.rs");

fn main() {
    println!("cargo:rerun-if-changed=preload/src");
    println!("cargo:rerun-if-changed=preload/Cargo.toml");
    println!("cargo:rerun-if-changed=preload/build_nested.rs");
    println!("cargo:rerun-if-changed=src/admit.rs");
    println!("cargo:rerun-if-changed=src/time.rs");
    println!("cargo:rerun-if-changed=../kslock/src");
    println!("cargo:rerun-if-changed=../kslock/Cargo.toml");
    println!("cargo:rerun-if-env-changed=KSLOCK_C_NO_PRELOAD");
    if std::env::var_os("KSLOCK_C_NO_PRELOAD").is_some_and(|v| v != "0") {
        return;
    }
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("preload/Cargo.toml");
    build_preload(
        "kslock-c build.rs",
        &manifest,
        &[],
        "preload-target",
        "libkslock_preload.so",
    );
}
