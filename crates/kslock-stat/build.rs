//! Builds the statistics preload, `libkslock_stat_preload.so` (package `kslock-preload` with
//! feature `stats`), next to the `kslock-stat` binary, so that `cargo build [--release]`
//! produces both and the tool finds its preload without a path. As kslock-c's build script
//! does for the plain preload: a nested `cargo build` with the same profile in a target
//! directory of its own under `OUT_DIR` (the outer cargo holds ours), whose feature `stats`
//! stays out of the workspace's feature resolution (the workspace's own kslock and preload
//! are built without it). Set `KSLOCK_STAT_NO_PRELOAD=1` to skip it.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=../kslock-c/preload/src");
    println!("cargo:rerun-if-changed=../kslock-c/preload/Cargo.toml");
    println!("cargo:rerun-if-changed=../kslock-c/src/admit.rs");
    println!("cargo:rerun-if-changed=../kslock-c/src/time.rs");
    println!("cargo:rerun-if-changed=../kslock/src");
    println!("cargo:rerun-if-changed=../kslock/Cargo.toml");
    println!("cargo:rerun-if-env-changed=KSLOCK_STAT_NO_PRELOAD");
    if env::var_os("KSLOCK_STAT_NO_PRELOAD").is_some_and(|v| v != "0") {
        return;
    }
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    // OUT_DIR is <target>[/<triple>]/<profile dir>/build/kslock-stat-<hash>/out.
    let profile_dir = out
        .ancestors()
        .nth(3)
        .expect("OUT_DIR deeper than <profile>/build/<pkg>/out")
        .to_path_buf();
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => "dev".to_string(),
        Some(p) => p.to_string(),
        None => panic!("no profile directory above {}", out.display()),
    };
    let manifest = Path::new(&env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"))
        .join("../kslock-c/preload/Cargo.toml");
    let nested_target = out.join("stat-preload-target");
    let mut cmd = Command::new(env::var_os("CARGO").expect("CARGO"));
    cmd.args([
        "build",
        "--offline",
        "-p",
        "kslock-preload",
        "--features",
        "stats",
        "--profile",
        &profile,
    ])
    .arg("--manifest-path")
    .arg(&manifest)
    .arg("--target-dir")
    .arg(&nested_target)
    // The outer run's wrappers (clippy-driver under `cargo clippy`) and target dir are not
    // ours; its rustflags and jobserver are.
    .env_remove("RUSTC_WORKSPACE_WRAPPER")
    .env_remove("CLIPPY_ARGS")
    .env_remove("CARGO_TARGET_DIR");
    let mut nested_profile_dir = nested_target.clone();
    if let Some(triple) = cross_target(&profile_dir) {
        cmd.args(["--target", &triple]);
        nested_profile_dir.push(triple);
    }
    nested_profile_dir.push(profile_dir.file_name().expect("profile dir name"));
    let st = cmd
        .status()
        .expect("kslock-stat build.rs: cannot run cargo");
    assert!(
        st.success(),
        "kslock-stat build.rs: `cargo build -p kslock-preload --features stats` failed"
    );
    let so = "libkslock_stat_preload.so";
    let tmp = profile_dir.join(format!(".{so}.tmp"));
    fs::copy(nested_profile_dir.join("libkslock_preload.so"), &tmp).expect("copy the preload");
    fs::rename(&tmp, profile_dir.join(so)).expect("install libkslock_stat_preload.so");
}

/// The target triple when the build cross-compiles (`<target>/<triple>/<profile>`), else None.
fn cross_target(profile_dir: &Path) -> Option<String> {
    let target = env::var("TARGET").ok()?;
    let parent = profile_dir.parent()?;
    (parent.file_name()?.to_str()? == target).then_some(target)
}
