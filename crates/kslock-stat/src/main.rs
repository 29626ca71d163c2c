//! `kslock-stat [options] -- PROGRAM ARGS…`: runs PROGRAM under kslock's pthread preload with
//! contention statistics on, and at its exit writes, for the process and for every process
//! it forked or ran that exited normally:
//!
//! * `report.txt`: the top locks by total wait (the lock's name or symbol, counts, how the
//!   contended acquisitions ended, wait total/max/p50/p99/p99.9, sampled holds, the stack
//!   where it was first contended and the one that waited most), also printed to stderr;
//! * `report.json`: the same, every figure;
//! * `profile.pb`: a pprof profile (`go tool pprof`, speedscope, the pprof web UI) of wait
//!   by call stack, as Go's mutex profile;
//! * `flame.svg`: a flame graph of wait by call stack, the lock as each stack's leaf.
//!
//! Other processes' files carry their pid (`report.<pid>.txt`, ...). The preload
//! (`libkslock_stat_preload.so`, built beside this binary) dumps raw records at exit and on
//! `--signal` (default `USR2`; `kill -USR2 <pid>` a long-running server, then
//! `kslock-stat --render DIR` while it runs); this process symbolizes and renders them.
//!
//! Options: `--top N` (locks in the report, default 20), `--sample R` (one hold in R
//! acquisitions and one stack in R contended ones, per thread; default 64), `--out DIR`
//! (default `kslock-stat.out`), `--signal N|0` (the dump signal's number, 0: none),
//! `--preload PATH` (another preload), `--render DIR` (render the dumps in DIR, run nothing).

mod model;
mod pprof;
mod raw;
mod render;
mod symbol;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

struct Args {
    top: usize,
    sample: u32,
    out: PathBuf,
    signal: i32,
    preload: Option<PathBuf>,
    render: Option<PathBuf>,
    program: Vec<OsString>,
}

const USAGE: &str = "usage: kslock-stat [--top N] [--sample R] [--out DIR] [--signal N] [--preload PATH] -- PROGRAM ARGS...\n       kslock-stat [--top N] --render DIR";

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        top: 20,
        sample: 64,
        out: PathBuf::from("kslock-stat.out"),
        signal: libc::SIGUSR2,
        preload: None,
        render: None,
        program: Vec::new(),
    };
    let mut it = std::env::args_os().skip(1);
    while let Some(arg) = it.next() {
        let s = arg.to_string_lossy().into_owned();
        let mut value = |name: &str| -> Result<String, String> {
            it.next()
                .map(|v| v.to_string_lossy().into_owned())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        let bad = |e: std::num::ParseIntError| e.to_string();
        match s.as_str() {
            "--" => {
                a.program = it.collect();
                break;
            }
            "--top" => a.top = value("--top")?.parse().map_err(bad)?,
            "--sample" => a.sample = value("--sample")?.parse().map_err(bad)?,
            "--out" => a.out = value("--out")?.into(),
            "--signal" => a.signal = value("--signal")?.parse().map_err(bad)?,
            "--preload" => a.preload = Some(value("--preload")?.into()),
            "--render" => a.render = Some(value("--render")?.into()),
            "-h" | "--help" => return Err(USAGE.into()),
            _ if !s.starts_with('-') => {
                a.program = std::iter::once(arg).chain(it).collect();
                break;
            }
            _ => return Err(format!("unknown option {s}\n{USAGE}")),
        }
    }
    if a.render.is_none() && a.program.is_empty() {
        return Err(USAGE.into());
    }
    Ok(a)
}

/// The stats preload: `--preload`, else beside this executable.
fn find_preload(a: &Args) -> Result<PathBuf, String> {
    if let Some(p) = &a.preload {
        return Ok(p.clone());
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find own executable: {e}"))?;
    let p = exe
        .parent()
        .map(|d| d.join(model::PRELOAD))
        .ok_or("executable without a directory")?;
    if p.exists() {
        Ok(p)
    } else {
        Err(format!(
            "{} not found beside {} (cargo build --release builds both; or pass --preload)",
            model::PRELOAD,
            exe.display()
        ))
    }
}

/// The raw dumps in `dir` by pid.
fn dumps(dir: &Path) -> Vec<(u32, PathBuf)> {
    let mut v: Vec<(u32, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            let pid = n
                .strip_prefix("kslock-stat.")?
                .strip_suffix(".raw")?
                .parse()
                .ok()?;
            Some((pid, e.path()))
        })
        .collect();
    v.sort();
    v
}

/// Renders the dump of `pid` at `path` into `dir`; `main` names the files without the pid.
fn render_one(
    dir: &Path,
    pid: u32,
    path: &Path,
    top: usize,
    main: bool,
    ns: u64,
) -> Result<String, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let dump = raw::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let report = model::build(&dump, top);
    let name = |ext: &str| {
        let stem = match ext {
            "svg" => "flame",
            "pb" => "profile",
            _ => "report",
        };
        if main {
            dir.join(format!("{stem}.{ext}"))
        } else {
            dir.join(format!("{stem}.{pid}.{ext}"))
        }
    };
    let txt = render::text(&report);
    let write =
        |p: PathBuf, b: &[u8]| std::fs::write(&p, b).map_err(|e| format!("{}: {e}", p.display()));
    write(name("txt"), txt.as_bytes())?;
    write(name("json"), render::json(&report).as_bytes())?;
    write(name("pb"), &render::pprof(&report, ns))?;
    write(name("svg"), &render::flamegraph(&report)?)?;
    Ok(txt)
}

/// Renders every dump in `dir`; `main_pid`'s files carry no pid (with `None`: the lowest pid's).
fn render_all(dir: &Path, top: usize, main_pid: Option<u32>, ns: u64) -> Result<(), String> {
    let d = dumps(dir);
    if d.is_empty() {
        return Err(format!(
            "no dump in {} (the program did not exit normally, or did not run under the preload)",
            dir.display()
        ));
    }
    let main_pid = main_pid
        .filter(|p| d.iter().any(|x| x.0 == *p))
        .unwrap_or(d[0].0);
    for (pid, path) in &d {
        let txt = render_one(dir, *pid, path, top, *pid == main_pid, ns)?;
        if *pid == main_pid {
            eprint!("{txt}");
        }
    }
    eprintln!(
        "\nkslock-stat: wrote report.txt, report.json, profile.pb, flame.svg in {}{}",
        dir.display(),
        if d.len() > 1 {
            format!(" (and the files of {} other process(es))", d.len() - 1)
        } else {
            String::new()
        }
    );
    Ok(())
}

fn run(a: &Args) -> Result<ExitCode, String> {
    if let Some(dir) = &a.render {
        render_all(dir, a.top, None, 0)?;
        return Ok(ExitCode::SUCCESS);
    }
    let preload = find_preload(a)?;
    let preload =
        std::fs::canonicalize(&preload).map_err(|e| format!("{}: {e}", preload.display()))?;
    std::fs::create_dir_all(&a.out).map_err(|e| format!("{}: {e}", a.out.display()))?;
    let out = std::fs::canonicalize(&a.out).map_err(|e| format!("{}: {e}", a.out.display()))?;
    for (_, p) in dumps(&out) {
        let _ = std::fs::remove_file(p);
    }
    let mut ld = OsString::from(&preload);
    if let Some(old) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
        ld.push(":");
        ld.push(old);
    }
    let t0 = Instant::now();
    let mut child = Command::new(&a.program[0])
        .args(&a.program[1..])
        .env("LD_PRELOAD", ld)
        .env("KSLOCK_STAT_DIR", &out)
        .env("KSLOCK_STAT_SAMPLE", a.sample.to_string())
        .env("KSLOCK_STAT_SIGNAL", a.signal.to_string())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", a.program[0].to_string_lossy()))?;
    // The terminal's ^C reaches the program; this process stays to render what it dumped.
    // SAFETY: setting a signal's disposition to SIG_IGN has no other effect.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::signal(libc::SIGQUIT, libc::SIG_IGN);
    }
    let status = child.wait().map_err(|e| format!("wait: {e}"))?;
    let ns = t0.elapsed().as_nanos() as u64;
    render_all(&out, a.top, Some(child.id()), ns)?;
    use std::os::unix::process::ExitStatusExt;
    Ok(match (status.code(), status.signal()) {
        (Some(c), _) => ExitCode::from(c as u8),
        (None, Some(s)) => ExitCode::from(128u8.wrapping_add(s as u8)),
        _ => ExitCode::FAILURE,
    })
}

fn main() -> ExitCode {
    let a = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("kslock-stat: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&a) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("kslock-stat: {e}");
            ExitCode::from(2)
        }
    }
}
