//! `kslock-stat -- <a C program>`: the four outputs are written and name the hot lock.

// The tool's own profile.proto messages, to decode what it wrote.
#[allow(dead_code)]
#[path = "../src/pprof.rs"]
mod pprof;

use prost::Message;
use std::path::PathBuf;
use std::process::Command;

fn tmp_dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Builds `tests/c/hot_cold.c` into a fresh directory `name`; returns the directory and
/// the program.
fn hot_cold(name: &str) -> (PathBuf, PathBuf) {
    let dir = tmp_dir(name);
    let exe = dir.join("hot_cold");
    let st = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-O2", "-g", "-pthread", "-o"])
        .arg(&exe)
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/c/hot_cold.c"))
        .status()
        .expect("a C compiler (cc)");
    assert!(st.success());
    (dir, exe)
}

/// A process that ends by `SIGTERM` or by `_exit()` dumps too; kslock-stat passes the
/// program's end on (128 + the signal, or the exit code).
#[test]
fn term_and_exit_dump() {
    for (mode, code) in [("term", 128 + libc::SIGTERM), ("_exit", 0)] {
        let (dir, exe) = hot_cold(&format!("hot_cold_{mode}"));
        let out = dir.join("out");
        let run = Command::new(env!("CARGO_BIN_EXE_kslock-stat"))
            .arg("--out")
            .arg(&out)
            .arg("--")
            .arg(&exe)
            .arg(mode)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(code), "{mode}: {stderr}");
        let text = std::fs::read_to_string(out.join("report.txt"))
            .unwrap_or_else(|e| panic!("{mode}: no report.txt ({e}): {stderr}"));
        let first = text.split("\n#1 ").nth(1).expect("a #1 lock");
        assert!(first.starts_with("hot_lock "), "{mode}: {text}");
    }
}

#[test]
fn reports_name_the_hot_lock() {
    let (dir, exe) = hot_cold("hot_cold");
    let out = dir.join("out");
    let run = Command::new(env!("CARGO_BIN_EXE_kslock-stat"))
        .args(["--sample", "1", "--top", "5", "--out"])
        .arg(&out)
        .arg("--")
        .arg(&exe)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&run.stdout), "hot 40 cold 10\n");

    let text = std::fs::read_to_string(out.join("report.txt")).unwrap();
    let first = text
        .split("\n#1 ")
        .nth(1)
        .expect("a #1 lock")
        .lines()
        .next()
        .unwrap();
    assert!(first.starts_with("hot_lock "), "{text}");
    assert!(
        text.contains("update_hot"),
        "the stack names the caller:\n{text}"
    );

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    let locks = json["locks"].as_array().unwrap();
    assert_eq!(locks[0]["name"], "hot_lock");
    // Counted from the lock's first contention on (it has no record before).
    let acq = locks[0]["acquisitions"].as_u64().unwrap();
    assert!((30..=40).contains(&acq), "{}", locks[0]);
    assert!(locks[0]["contended"].as_u64().unwrap() >= 1);
    // 4 threads, 10 holds of ≥ 1 ms: at least 1+2+3 = 6 holds' worth of wait per round.
    assert!(
        locks[0]["wait_total_ns"].as_u64().unwrap() >= 54_000_000,
        "{}",
        locks[0]
    );
    if let Some(cold) = locks.iter().find(|l| l["name"] == "cold_lock") {
        assert_eq!(cold["wait_total_ns"], 0);
    }

    let pb = std::fs::read(out.join("profile.pb")).unwrap();
    let p = pprof::Profile::decode(&*pb).expect("a profile.proto message");
    let st = |i: i64| p.string_table[i as usize].as_str();
    let types: Vec<(&str, &str)> = p
        .sample_type
        .iter()
        .map(|t| (st(t.r#type), st(t.unit)))
        .collect();
    assert_eq!(types, [("contentions", "count"), ("delay", "nanoseconds")]);
    let hot: i64 = p
        .sample
        .iter()
        .filter(|s| s.label.iter().any(|l| st(l.str).starts_with("hot_lock")))
        .map(|s| s.value[1])
        .sum();
    // Scaled to the lock's exact total (each stack's share rounded to a ns).
    let exact = locks[0]["wait_total_ns"].as_i64().unwrap();
    assert!(
        (hot - exact).abs() <= p.sample.len() as i64,
        "{hot} vs {exact}"
    );
    let names: Vec<&str> = p.function.iter().map(|f| st(f.name)).collect();
    assert!(names.contains(&"update_hot"), "{names:?}");

    // The fork child's dump: its own report, the lock it inherited in it.
    let child: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("report.") && n.ends_with(".txt") && n != "report.txt")
        .collect();
    assert_eq!(child.len(), 1, "{child:?}");
    let ct = std::fs::read_to_string(out.join(&child[0])).unwrap();
    assert!(ct.contains("hot_lock"), "{ct}");

    // --render re-renders the dumps (as for a server's signal dump).
    std::fs::remove_file(out.join("report.txt")).unwrap();
    let again = Command::new(env!("CARGO_BIN_EXE_kslock-stat"))
        .arg("--render")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert!(out.join("report.txt").exists());

    let svg = std::fs::read_to_string(out.join("flame.svg")).unwrap();
    assert!(svg.starts_with("<?xml") && svg.contains("hot_lock") && svg.contains("update_hot"));
}
