//! The raw dump: every record as text lines, written to a file descriptor without
//! allocating (a stack buffer and `write(2)`), so that a process can dump from an `atexit`
//! handler, a destructor or a signal handler. `kslock-stat` reads it back.
//!
//! ```text
//! kslock-stat-raw 1
//! pid <pid>
//! sample <rate>
//! dropped <locks> <stacks>
//! lock <key> <acquisitions> <contended> <spun> <yielded> <slept> <handoff> <timed_out>
//!      <released_with_waiters> <wait_total> <wait_max> <hold_samples> <hold_total> <hold_max>
//!      <first stack slot + 1, 0: none> <HIST_BUCKETS histogram counts> |<name>
//! stack <slot> <lock key> <count> <wait_total> <wait_max> <frames...>
//! end
//! ```
//!
//! One line per `lock` and `stack` (wrapped above); keys (address | kind tag: 0 mutex,
//! 1 rwsem write, 2 rwsem read) and frames in hex, the rest decimal, times in ns; the name
//! after `|` is empty for none. Whatever the writer appends after `end` is its own.

use super::stack::{DROPPED_STACKS, STACKS};
use super::table::{self, KEYS, RECORDS};
use core::sync::atomic::Ordering::*;

/// A fixed buffer flushed to `fd` when full.
struct Out {
    fd: i32,
    buf: [u8; 4096],
    len: usize,
    ok: bool,
}

impl Out {
    fn flush(&mut self) {
        let mut off = 0;
        while off < self.len && self.ok {
            // SAFETY: the range is inside `buf`; write(2) has no other preconditions.
            let n =
                unsafe { libc::write(self.fd, self.buf[off..].as_ptr().cast(), self.len - off) };
            if n > 0 {
                off += n as usize;
            } else if n < 0
                && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
            {
                continue;
            } else {
                self.ok = false;
            }
        }
        self.len = 0;
    }

    fn bytes(&mut self, b: &[u8]) {
        for &c in b {
            if self.len == self.buf.len() {
                self.flush();
            }
            self.buf[self.len] = c;
            self.len += 1;
        }
    }

    fn num(&mut self, mut v: u64, hex: bool) {
        let mut d = [0u8; 20];
        let mut i = d.len();
        let base = if hex { 16 } else { 10 };
        loop {
            i -= 1;
            d[i] = b"0123456789abcdef"[(v % base) as usize];
            v /= base;
            if v == 0 {
                break;
            }
        }
        self.bytes(b" ");
        if hex {
            self.bytes(b"0x");
        }
        self.bytes(&d[i..]);
    }
}

/// Writes every lock record and stack sample to `fd` in the raw format above. No
/// allocation, no lock; async-signal-safe. `false` if a write failed.
pub fn write_raw(fd: i32) -> bool {
    let mut o = Out {
        fd,
        buf: [0; 4096],
        len: 0,
        ok: true,
    };
    o.bytes(b"kslock-stat-raw 1\npid");
    // SAFETY: getpid has no preconditions.
    o.num(unsafe { libc::getpid() } as u64, false);
    o.bytes(b"\nsample");
    o.num(table::sample_rate() as u64, false);
    o.bytes(b"\ndropped");
    o.num(table::DROPPED_LOCKS.load(Relaxed), false);
    o.num(DROPPED_STACKS.load(Relaxed), false);
    o.bytes(b"\n");
    for (slot, k) in KEYS.iter().enumerate() {
        let key = k.load(Relaxed);
        if key == 0 {
            continue;
        }
        let r = &RECORDS[slot];
        o.bytes(b"lock");
        o.num(key as u64, true);
        let outcomes = (0..5).map(|i| r.sum(|s| &s.outcomes[i]));
        for c in [r.acquisitions(key), r.contended()]
            .into_iter()
            .chain(outcomes)
            .chain([
                r.sum(|s| &s.released_with_waiters),
                r.sum(|s| &s.wait_total),
                r.wait_max.load(Relaxed),
                r.sum(|s| &s.hold_samples),
                r.sum(|s| &s.hold_total),
                r.hold_max.load(Relaxed),
            ])
        {
            o.num(c, false);
        }
        o.num(r.first_stack.load(Relaxed) as u64, false);
        for i in 0..table::HIST_BUCKETS {
            o.num(r.hist(i), false);
        }
        o.bytes(b" |");
        // Acquire pairs with the Release of `set_name`.
        let name = r.name.load(Acquire);
        if !name.is_null() {
            // SAFETY: a non-null name is a leaked `Box<&'static str>`, never freed.
            for &c in unsafe { *name }.as_bytes() {
                o.bytes(&[if c == b'\n' { b' ' } else { c }]);
            }
        }
        o.bytes(b"\n");
    }
    for (i, s) in STACKS.iter().enumerate() {
        // Acquire pairs with the Release of `stack::record`'s `ready` store.
        if s.ready.load(Acquire) == 0 || s.count.load(Relaxed) == 0 {
            continue;
        }
        o.bytes(b"stack");
        o.num(i as u64, false);
        o.num(s.lock.load(Relaxed) as u64, true);
        o.num(s.count.load(Relaxed), false);
        o.num(s.wait_total.load(Relaxed), false);
        o.num(s.wait_max.load(Relaxed), false);
        let depth = (s.depth.load(Relaxed) as usize).min(s.frames.len());
        for f in &s.frames[..depth] {
            o.num(f.load(Relaxed) as u64, true);
        }
        o.bytes(b"\n");
    }
    o.bytes(b"end\n");
    o.flush();
    o.ok
}
