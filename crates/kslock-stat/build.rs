//! Builds the statistics preload, `libkslock_stat_preload.so` (package `kslock-preload` with
//! feature `stats`), next to the `kslock-stat` binary, so that `cargo build [--release]`
//! produces both and the tool finds its preload without a path. The same nested cargo as
//! kslock-c's build script (`../kslock-c/preload/build_nested.rs`), in a target directory of
//! its own, whose feature `stats` stays out of the workspace's feature resolution (the
//! workspace's own kslock and preload are built without it). Set `KSLOCK_STAT_NO_PRELOAD=1` to
//! skip it.

include!("../kslock-c/preload/build_nested.rs");

fn main() {
    println!("cargo:rerun-if-changed=../kslock-c/preload/src");
    println!("cargo:rerun-if-changed=../kslock-c/preload/Cargo.toml");
    println!("cargo:rerun-if-changed=../kslock-c/preload/build_nested.rs");
    println!("cargo:rerun-if-changed=../kslock-c/src/admit.rs");
    println!("cargo:rerun-if-changed=../kslock-c/src/time.rs");
    println!("cargo:rerun-if-changed=../kslock/src");
    println!("cargo:rerun-if-changed=../kslock/Cargo.toml");
    println!("cargo:rerun-if-env-changed=KSLOCK_STAT_NO_PRELOAD");
    if std::env::var_os("KSLOCK_STAT_NO_PRELOAD").is_some_and(|v| v != "0") {
        return;
    }
    let manifest =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../kslock-c/preload/Cargo.toml");
    build_preload(
        "kslock-stat build.rs",
        &manifest,
        &["stats"],
        "stat-preload-target",
        "libkslock_stat_preload.so",
    );
}
