// The nested build of the preload that two build scripts share (`crates/kslock-c/build.rs`:
// the plain preload; `crates/kslock-stat/build.rs`: the statistics preload), included by both
// with `include!`. One package has one library, and a preload must stay a shared object of its
// own, so a build script runs `cargo build -p kslock-preload` with the outer build's profile,
// in a target directory of its own under `OUT_DIR` (the outer cargo holds the lock of ours
// while build scripts run), and copies the library next to the outer build's outputs.

/// Builds `kslock-preload` (manifest `manifest`) with `features` into `OUT_DIR/<nested>` and
/// installs its `libkslock_preload.so` as `<profile dir>/<installed_as>`. `who` names the
/// build script in its panics.
fn build_preload(
    who: &str,
    manifest: &std::path::Path,
    features: &[&str],
    nested: &str,
    installed_as: &str,
) {
    use std::env;
    let out = std::path::PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    // OUT_DIR is <target>[/<triple>]/<profile dir>/build/<pkg>-<hash>/out.
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
    let nested_target = out.join(nested);
    let mut cmd = std::process::Command::new(env::var_os("CARGO").expect("CARGO"));
    cmd.args(["build", "--offline", "-p", "kslock-preload", "--profile", &profile]);
    if !features.is_empty() {
        cmd.args(["--features", &features.join(",")]);
    }
    cmd.arg("--manifest-path")
        .arg(manifest)
        .arg("--target-dir")
        .arg(&nested_target)
        // The outer run's wrappers (clippy-driver under `cargo clippy`) and target dir are not
        // ours; its rustflags (CARGO_ENCODED_RUSTFLAGS) and jobserver are.
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CLIPPY_ARGS")
        .env_remove("CARGO_TARGET_DIR");
    let mut nested_profile_dir = nested_target.clone();
    // Cross-compiling: the outer profile dir is <target>/<triple>/<profile>.
    let triple = env::var("TARGET").ok().filter(|t| {
        profile_dir
            .parent()
            .and_then(|p| p.file_name())
            .is_some_and(|n| n.to_str() == Some(t.as_str()))
    });
    if let Some(triple) = triple {
        cmd.args(["--target", &triple]);
        nested_profile_dir.push(triple);
    }
    nested_profile_dir.push(profile_dir.file_name().expect("profile dir name"));
    let st = cmd
        .status()
        .unwrap_or_else(|e| panic!("{who}: cannot run cargo: {e}"));
    assert!(
        st.success(),
        "{who}: `cargo build -p kslock-preload` (features {features:?}) failed"
    );
    let tmp = profile_dir.join(format!(".{installed_as}.tmp"));
    std::fs::copy(nested_profile_dir.join("libkslock_preload.so"), &tmp)
        .unwrap_or_else(|e| panic!("{who}: copy the preload: {e}"));
    std::fs::rename(&tmp, profile_dir.join(installed_as))
        .unwrap_or_else(|e| panic!("{who}: install {installed_as}: {e}"));
}
