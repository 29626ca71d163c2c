//! The pool under loom: one leaked record per model thread, per execution. No fork, no ghosts;
//! slow-path sections are plain counting.

use super::{owner_word, ThreadRec};
use crate::sync::Ordering::Relaxed;
use std::sync::Mutex;

/// loom runs at most this many threads per model.
const MAX: usize = 5;

struct Pool {
    recs: Vec<&'static ThreadRec>,
    owners: Vec<loom::thread::ThreadId>,
}

// Every record is created inside the lazy_static initialiser: loom synchronises the init with
// every later access, so creating a record happens-before any thread reads it (also through a
// lock's owner word). Keyed by loom's thread id, not a loom thread_local: the model's main
// thread may keep thread-locals across executions.
loom::lazy_static! {
    static ref POOL: Mutex<Pool> = Mutex::new(Pool {
        recs: (1..=MAX as u32)
            .map(|id| {
                let r: &'static ThreadRec = Box::leak(Box::new(ThreadRec::new(id)));
                r.word.store(owner_word(id, 1), Relaxed);
                r
            })
            .collect(),
        owners: Vec::new(),
    });
}

pub(crate) fn try_by_id(id: u32) -> Option<&'static ThreadRec> {
    let p = POOL.lock().unwrap();
    (id as usize)
        .checked_sub(1)
        .and_then(|i| p.recs.get(i).copied())
}

pub(crate) fn by_id(id: u32) -> &'static ThreadRec {
    try_by_id(id).expect("kslock: unknown thread record")
}

pub(crate) fn current() -> &'static ThreadRec {
    let tid = loom::thread::current().id();
    let mut p = POOL.lock().unwrap();
    let i = match p.owners.iter().position(|t| *t == tid) {
        Some(i) => i,
        None => {
            p.owners.push(tid);
            p.owners.len() - 1
        }
    };
    p.recs[i]
}

pub(crate) fn current_word() -> u64 {
    current().owner_word()
}

pub(crate) fn forked() -> bool {
    false
}

pub(crate) fn is_dead(_rec: &ThreadRec) -> bool {
    false
}

pub(crate) fn slow_enter(me: &ThreadRec) {
    let n = me.in_slow.load(Relaxed);
    me.in_slow.store(n + 1, Relaxed);
}
