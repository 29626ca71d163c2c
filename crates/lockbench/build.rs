//! Records the compiler version and git commit for the environment record.
use std::process::Command;

fn output(cmd: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(cmd).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = output(&rustc, &["--version"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=LOCKBENCH_RUSTC={version}");
    let commit =
        output("git", &["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let dirty = output("git", &["status", "--porcelain", "--untracked-files=no"])
        .is_some_and(|s| !s.is_empty());
    let commit = if dirty {
        format!("{commit}-dirty")
    } else {
        commit
    };
    println!("cargo:rustc-env=LOCKBENCH_GIT={commit}");
    println!("cargo:rerun-if-changed=build.rs");
    // The git dir holds HEAD and its log: `.git/` in a checkout, `.git/worktrees/NAME/` for a
    // worktree (whose `.git` is a file), so ask git rather than assume `../../.git`.
    let git_dir = output("git", &["rev-parse", "--absolute-git-dir"]);
    for p in git_dir
        .iter()
        .flat_map(|d| [format!("{d}/HEAD"), format!("{d}/logs/HEAD")])
    {
        if std::path::Path::new(&p).exists() {
            println!("cargo:rerun-if-changed={p}");
        }
    }
}
