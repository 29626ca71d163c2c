//! Shared by the C test drivers: builds the C libraries (a nested `cargo build`, in the same
//! target directory and profile as this test), compiles C programs with `cc`, runs them with a
//! time limit.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// This crate's directory.
pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `<target>/<profile>`: the directory holding this test binary's `deps/`.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    exe.parent()
        .and_then(Path::parent)
        .expect("test binary outside <target>/<profile>/deps")
        .to_path_buf()
}

/// Builds `libkslock.so`/`.a` and `libkslock_preload.so` (once per test binary) and returns
/// the directory holding them. `cargo test` does not build a cdylib-only package's library for
/// its tests, so we ask cargo for it; cargo does not hold the build lock while tests run.
pub fn lib_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = profile_dir();
        let target = dir.parent().expect("<target>").to_path_buf();
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args([
            "build",
            "-p",
            "kslock-c",
            "-p",
            "kslock-preload",
            "--target-dir",
        ])
        .arg(&target)
        .current_dir(crate_dir());
        match dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") => {}
            Some("release") => {
                cmd.arg("--release");
            }
            Some(p) => {
                cmd.args(["--profile", p]);
            }
            None => panic!("no profile directory"),
        }
        let st = cmd.status().expect("run cargo");
        assert!(st.success(), "cargo build of the C libraries failed");
        for f in ["libkslock.so", "libkslock.a", "libkslock_preload.so"] {
            assert!(dir.join(f).exists(), "{f} not built in {}", dir.display());
        }
        dir
    })
}

/// A scratch directory for this test binary's C programs.
pub fn out_dir() -> PathBuf {
    let d = profile_dir().join("c-tests");
    std::fs::create_dir_all(&d).expect("mkdir c-tests");
    d
}

/// Compiles `sources` (relative to this crate) into `out_dir()/name` with `cc`, adding `args`
/// after the sources. Panics with the compiler's output on failure.
pub fn cc(name: &str, sources: &[&str], args: &[&str]) -> PathBuf {
    let exe = out_dir().join(name);
    let mut cmd = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()));
    cmd.args([
        "-std=gnu11",
        "-O1",
        "-g",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-pthread",
    ])
    .arg("-I")
    .arg(crate_dir().join("include"))
    .arg("-o")
    .arg(&exe);
    for s in sources {
        cmd.arg(crate_dir().join(s));
    }
    cmd.args(args);
    let out = cmd.output().expect("run cc (is a C compiler installed?)");
    assert!(
        out.status.success(),
        "cc {name} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// Runs `cmd`, killing it after `limit`; returns its output. Panics on a timeout.
pub fn run_limited(mut cmd: Command, limit: Duration) -> Output {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn test program");
    let t0 = Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!(
                "{cmd:?} ran longer than {limit:?}\nstdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Runs `exe` (with `env`) and asserts that it exits 0; returns its stdout.
pub fn run_ok(exe: &Path, env: &[(&str, &str)]) -> String {
    let mut cmd = Command::new(exe);
    cmd.envs(env.iter().copied());
    let out = run_limited(cmd, Duration::from_secs(60));
    let (so, se) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success(),
        "{} failed ({}):\nstdout:\n{so}\nstderr:\n{se}",
        exe.display(),
        out.status
    );
    so.into_owned()
}
