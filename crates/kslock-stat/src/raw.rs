//! Reading a raw dump (the format of `kslock::stats::write_raw`, then `maps` and the dumping
//! process's `/proc/self/maps`, as the preload writes it).

use std::collections::HashMap;

/// Buckets of the wait histogram (`kslock::stats::HIST_BUCKETS`).
pub const HIST_BUCKETS: usize = 40;

/// One lock record.
#[derive(Debug, Clone, Default)]
pub struct Lock {
    pub key: u64,
    pub acquisitions: u64,
    pub contended: u64,
    pub spun: u64,
    pub yielded: u64,
    pub slept: u64,
    pub handoff: u64,
    pub timed_out: u64,
    pub released_with_waiters: u64,
    pub wait_total: u64,
    pub wait_max: u64,
    pub hold_samples: u64,
    pub hold_total: u64,
    pub hold_max: u64,
    /// Stack slot + 1 of the first contended acquisition (0: none).
    pub first_stack: u64,
    pub hist: Vec<u64>,
    pub name: Option<String>,
}

/// One sampled stack.
#[derive(Debug, Clone)]
pub struct Stack {
    pub slot: u64,
    pub lock: u64,
    pub count: u64,
    pub wait_total: u64,
    pub wait_max: u64,
    /// Return addresses, innermost first.
    pub frames: Vec<u64>,
}

/// One line of `/proc/<pid>/maps` with a file behind it.
#[derive(Debug, Clone)]
pub struct Map {
    pub start: u64,
    pub end: u64,
    pub offset: u64,
    pub path: String,
}

/// A whole dump.
#[derive(Debug, Clone, Default)]
pub struct Dump {
    pub pid: u32,
    pub sample: u32,
    pub dropped_locks: u64,
    pub dropped_stacks: u64,
    pub locks: Vec<Lock>,
    pub stacks: HashMap<u64, Stack>,
    pub maps: Vec<Map>,
}

fn num(s: &str) -> Result<u64, String> {
    let r = match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    };
    r.map_err(|e| format!("bad number {s:?}: {e}"))
}

/// Parses a dump's text.
pub fn parse(text: &str) -> Result<Dump, String> {
    let mut lines = text.lines();
    if lines.next() != Some("kslock-stat-raw 1") {
        return Err("not a kslock-stat raw dump (version 1)".into());
    }
    let mut d = Dump::default();
    let mut ended = false;
    for line in lines.by_ref() {
        let (head, name) = match line.split_once(" |") {
            Some((h, n)) => (h, Some(n)),
            None => (line, None),
        };
        let f: Vec<&str> = head.split_whitespace().collect();
        match f.first().copied() {
            Some("pid") => d.pid = num(f[1])? as u32,
            Some("sample") => d.sample = num(f[1])? as u32,
            Some("dropped") => {
                d.dropped_locks = num(f[1])?;
                d.dropped_stacks = num(f[2])?;
            }
            Some("lock") => {
                let v: Vec<u64> = f[1..].iter().map(|s| num(s)).collect::<Result<_, _>>()?;
                if v.len() != 15 + HIST_BUCKETS {
                    return Err(format!("lock line with {} fields", v.len()));
                }
                d.locks.push(Lock {
                    key: v[0],
                    acquisitions: v[1],
                    contended: v[2],
                    spun: v[3],
                    yielded: v[4],
                    slept: v[5],
                    handoff: v[6],
                    timed_out: v[7],
                    released_with_waiters: v[8],
                    wait_total: v[9],
                    wait_max: v[10],
                    hold_samples: v[11],
                    hold_total: v[12],
                    hold_max: v[13],
                    first_stack: v[14],
                    hist: v[15..15 + HIST_BUCKETS].to_vec(),
                    name: name.filter(|n| !n.is_empty()).map(str::to_string),
                });
            }
            Some("stack") => {
                let v: Vec<u64> = f[1..].iter().map(|s| num(s)).collect::<Result<_, _>>()?;
                if v.len() < 5 {
                    return Err("short stack line".into());
                }
                d.stacks.insert(
                    v[0],
                    Stack {
                        slot: v[0],
                        lock: v[1],
                        count: v[2],
                        wait_total: v[3],
                        wait_max: v[4],
                        frames: v[5..].to_vec(),
                    },
                );
            }
            Some("end") => {
                ended = true;
                break;
            }
            _ => {}
        }
    }
    if !ended {
        return Err("dump ends early (no `end` line)".into());
    }
    if lines.next() == Some("maps") {
        for l in lines {
            // start-end perms offset dev inode path
            let mut it = l.split_whitespace();
            let (Some(range), Some(_perms), Some(off), Some(_dev), Some(_inode)) =
                (it.next(), it.next(), it.next(), it.next(), it.next())
            else {
                continue;
            };
            let path: Vec<&str> = it.collect();
            let path = path.join(" ");
            let Some((s, e)) = range.split_once('-') else {
                continue;
            };
            let (Ok(start), Ok(end), Ok(offset)) = (
                u64::from_str_radix(s, 16),
                u64::from_str_radix(e, 16),
                u64::from_str_radix(off, 16),
            ) else {
                continue;
            };
            d.maps.push(Map {
                start,
                end,
                offset,
                path,
            });
        }
    }
    Ok(d)
}
