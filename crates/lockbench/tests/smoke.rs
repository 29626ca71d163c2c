//! Smoke runs of tiny matrices, in process (well under 20 s in debug builds).

use clap::Parser;
use lockbench::cli::{execute, Cli};
use lockbench::results::{from_csv, Report};

fn run(args: &[&str]) -> String {
    let cli = Cli::try_parse_from(std::iter::once("lockbench").chain(args.iter().copied()))
        .expect("arguments parse");
    let mut out = Vec::new();
    execute(cli, &mut out).expect("run succeeds");
    String::from_utf8(out).expect("utf8 output")
}

fn tmpdir(tag: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("lockbench-smoke-{tag}-{}", std::process::id()))
}

#[test]
fn tiny_matrix_writes_all_exports() {
    let dir = tmpdir("matrix");
    let table = run(&[
        "matrix",
        "--locks",
        "std-mutex,pthread-mutex-adaptive,spin-ttas,parking-lot-rwlock,pthread-rwlock-prefer-writer",
        "--threads",
        "1,3",
        "--cs-load",
        "1",
        "--read-pct",
        "50",
        "--secs",
        "0.05",
        "--warmup",
        "0.01",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(
        table.contains("== matrix: cs-load 1, outside-load 0, read 50% =="),
        "{table}"
    );
    assert!(
        table.contains("pthread-rwlock-prefer-writer [r "),
        "{table}"
    );

    let report = Report::load(&dir.join("results.json")).unwrap();
    assert_eq!(report.cells.len(), 10);
    assert_eq!(report.env.online_cpus, lockbench::stats::online_cpus());
    assert!(report.env.command_line.len() > 1 || !report.env.command_line.is_empty());
    for c in &report.cells {
        assert!(c.kops > 0.0, "{c:?}");
        assert!(c.bound_kops > 0.0 && c.efficiency > 0.0, "{c:?}");
        assert_eq!(c.runs_kops.len(), 1);
        assert_eq!(c.read_pct, 50);
        if c.kind == "rwlock" {
            assert!(c.read_kops > 0.0 && c.write_kops > 0.0, "{c:?}");
        }
        assert!(c.thread_ops_min <= c.thread_ops_max);
    }
    // the best 1-thread cell defines the bound: its efficiency is exactly 1
    let best = report
        .cells
        .iter()
        .filter(|c| c.threads == 1)
        .map(|c| c.efficiency)
        .fold(0.0, f64::max);
    assert!((best - 1.0).abs() < 1e-9, "{best}");
    let csv = std::fs::read_to_string(dir.join("results.csv")).unwrap();
    assert_eq!(from_csv(&csv).unwrap().len(), 10);
    let svg = std::fs::read_to_string(dir.join("plot.svg")).unwrap();
    assert_eq!(svg.matches("<polyline").count(), 5);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn calibration_when_one_thread_is_missing_and_json_stdout() {
    let out = run(&[
        "matrix",
        "--locks",
        "std-mutex,parking-lot-mutex",
        "--threads",
        "2",
        "--cs-load",
        "20",
        "--secs",
        "0.05",
        "--warmup",
        "0",
        "--repeat",
        "3",
        "--format",
        "json",
    ]);
    let r = Report::from_json(&out).unwrap();
    assert_eq!(r.calibration.len(), 1);
    assert!(r.calibration[0].kops > 0.0);
    assert_eq!(r.cells.len(), 2);
    for c in &r.cells {
        assert_eq!(c.runs_kops.len(), 3);
        assert!(c.kops_min <= c.kops && c.kops <= c.kops_max);
        assert!(c.efficiency > 0.0);
    }
}

#[test]
fn workloads_run_against_peers() {
    for (name, locks) in [
        ("file", "std-rwlock,pthread-rwlock"),
        ("mmap", "parking-lot-rwlock,std-mutex"),
        ("tree", "pthread-mutex,spin-ttas"),
    ] {
        let out = run(&[
            "workload",
            name,
            "--locks",
            locks,
            "--threads",
            "1,4",
            "--secs",
            "0.05",
            "--warmup",
            "0",
            "--format",
            "csv",
        ]);
        let rows = from_csv(&out).unwrap();
        assert_eq!(rows.len(), 4, "{name}: {out}");
        assert!(
            rows.iter().all(|r| r.kops > 0.0 && r.workload == name),
            "{out}"
        );
        if name == "tree" {
            assert!(rows[0].events_per_kop.starts_with("fallbacks="), "{out}");
        }
    }
}

#[test]
fn data_and_condvar_workloads_run_against_peers() {
    let out = run(&[
        "workload",
        "data",
        "--locks",
        "std-mutex,parking-lot-rwlock",
        "--threads",
        "3",
        "--lines",
        "4,32",
        "--read-pct",
        "90",
        "--secs",
        "0.05",
        "--warmup",
        "0",
        "--format",
        "csv",
    ]);
    let rows = from_csv(&out).unwrap();
    assert_eq!(rows.len(), 4, "{out}");
    assert!(
        rows.iter().all(|r| r.workload == "data" && r.kops > 0.0),
        "{out}"
    );
    let mut lines: Vec<u32> = rows.iter().map(|r| r.lines).collect();
    lines.sort_unstable();
    assert_eq!(lines, vec![4, 4, 32, 32]);
    let out = run(&[
        "workload",
        "condvar",
        "--threads",
        "2,4",
        "--outside-load",
        "20",
        "--secs",
        "0.05",
        "--warmup",
        "0",
        "--format",
        "json",
    ]);
    let r = Report::from_json(&out).unwrap();
    let locks: std::collections::BTreeSet<&str> = r.cells.iter().map(|c| c.lock.as_str()).collect();
    for l in ["std-mutex", "parking-lot-mutex", "pthread-mutex"] {
        assert!(locks.contains(l), "{l} missing: {locks:?}");
    }
    assert!(locks.iter().all(|l| !l.starts_with("spin")), "{locks:?}");
    assert!(r.calibration.is_empty(), "no 1-thread bound for a queue");
    for c in &r.cells {
        assert!(
            c.kops > 0.0 && c.read_kops > 0.0 && c.write_kops > 0.0,
            "{c:?}"
        );
        // An item is counted once, at its pop.
        assert!(
            (c.kops - c.read_kops).abs() < 1e-9 * c.kops.max(1.0),
            "{c:?}"
        );
    }
}

#[test]
fn workload_usage_errors_exit_2() {
    let parse = |args: &[&str]| {
        Cli::try_parse_from(std::iter::once("lockbench").chain(args.iter().copied())).unwrap()
    };
    for (args, msg) in [
        (
            &["workload", "condvar", "--threads", "1,2"][..],
            "at least 2 threads",
        ),
        (
            &[
                "workload",
                "condvar",
                "--threads",
                "2",
                "--locks",
                "spin-ttas",
            ],
            "spin-ttas has no condvar",
        ),
        (
            &["workload", "tree", "--lines", "4"],
            "--lines is for the data workload",
        ),
    ] {
        let e = lockbench::cli::validate(&parse(args)).expect_err(msg);
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains(msg), "{e}");
    }
    let e = lockbench::cli::validate(&parse(&[
        "workload",
        "condvar",
        "--threads",
        "2",
        "--locks",
        "std-rwlock",
    ]))
    .unwrap_err();
    assert!(e.to_string().contains("condvar runs on: "), "{e}");
    assert!(e.to_string().contains("std-mutex"), "{e}");
}

#[test]
fn list_names_every_peer() {
    let out = run(&["list"]);
    for l in [
        "std-mutex",
        "std-rwlock",
        "parking-lot-mutex",
        "parking-lot-fair-mutex",
        "parking-lot-rwlock",
        "pthread-mutex",
        "pthread-mutex-adaptive",
        "pthread-rwlock",
        "pthread-rwlock-prefer-writer",
        "spin-ttas",
    ] {
        assert!(out.contains(l), "{l} missing from\n{out}");
    }
}

/// kslock's locks run through the same checked loops as the peers.
#[cfg(feature = "kslock")]
#[test]
fn kslock_mutex_matrix_and_tree() {
    let out = run(&[
        "matrix",
        "--locks",
        "kslock-mutex,kslock-mutex-packed-osq,std-mutex",
        "--threads",
        "1,4",
        "--cs-load",
        "1,20",
        "--secs",
        "0.05",
        "--warmup",
        "0",
        "--format",
        "json",
    ]);
    let r = Report::from_json(&out).unwrap();
    assert_eq!(r.cells.len(), 12);
    assert!(r.env.features.contains(&"kslock".to_string()));
    assert!(r.cells.iter().filter(|c| c.ours).all(|c| c.kops > 0.0));
    let out = run(&[
        "workload",
        "tree",
        "--locks",
        "kslock-mutex",
        "--threads",
        "4",
        "--cs-load",
        "20",
        "--secs",
        "0.05",
        "--warmup",
        "0",
        "--format",
        "csv",
    ]);
    assert_eq!(from_csv(&out).unwrap().len(), 1);
}

#[cfg(feature = "kslock-rwsem")]
#[test]
fn kslock_rwsem_variants_matrix() {
    let out = run(&[
        "matrix",
        "--locks",
        "rwlocks",
        "--threads",
        "3",
        "--cs-load",
        "1",
        "--read-pct",
        "50",
        "--secs",
        "0.03",
        "--warmup",
        "0",
        "--format",
        "csv",
    ]);
    let rows = from_csv(&out).unwrap();
    assert!(rows.iter().filter(|r| r.ours).count() >= 7, "{out}");
    let out = run(&[
        "workload",
        "mmap",
        "--locks",
        "kslock-rwsem",
        "--threads",
        "3",
        "--secs",
        "0.05",
        "--warmup",
        "0",
        "--format",
        "csv",
    ]);
    assert_eq!(from_csv(&out).unwrap().len(), 1);
}

#[cfg(feature = "kslock")]
#[test]
fn seed_s3_table() {
    let out = run(&["seeds", "--only", "S3", "--secs", "0.03", "--warmup", "0"]);
    assert!(out.contains("S3 try_lock vs try_lock_spin"), "{out}");
    let header = out
        .lines()
        .find(|l| l.trim_start().starts_with("kops/s"))
        .unwrap();
    assert!(
        header.contains("try_lock") && header.contains("try_lock_spin"),
        "{out}"
    );
    assert!(out.contains("fallbacks/kop"), "{out}");
    assert!(
        out.lines().any(|l| l.trim_start().starts_with("32 thr")),
        "{out}"
    );
}

#[test]
fn timeline_reports_a_rwlock_cell_and_writes_its_stamps() {
    let path = tmpdir("timeline").with_extension("csv");
    let text = run(&[
        "timeline",
        "--lock",
        "parking-lot-rwlock",
        "--threads",
        "2",
        "--cs-load",
        "5",
        "--read-pct",
        "50",
        "--ops",
        "20000",
        "--raw",
        path.to_str().unwrap(),
    ]);
    for line in [
        "timeline parking-lot-rwlock: 2 threads, CS load 5, outside load 0, 50% reads",
        "transfer R->W",
        "wait, read",
        "overlaps          0",
    ] {
        assert!(text.contains(line), "missing {line:?} in:\n{text}");
    }
    let raw = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    // The rate line, the header and one row per operation of each thread.
    assert_eq!(raw.lines().count(), 2 + 2 * 20000);
    assert!(raw.lines().nth(1) == Some("thread,op,read,try,enter,exit,done,cpu_try,cpu_in"));
}

#[test]
fn timeline_refuses_more_stamps_than_fit() {
    let cli = Cli::try_parse_from([
        "lockbench",
        "timeline",
        "--lock",
        "std-mutex",
        "--threads",
        "100",
        "--ops",
        "100000",
    ])
    .expect("each argument is valid alone");
    let e = lockbench::cli::validate(&cli).expect_err("10M stamps do not fit");
    assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation);
    assert!(e.to_string().contains("at most 8000000"), "{e}");
    assert!(Cli::try_parse_from(["lockbench", "timeline", "--lock", "nope"]).is_err());
}
