//! The registry: every lock compiled into this binary by name, with the per-lock entry points
//! of the runners (one monomorphised function each).
//!
//! It sits above the adapters ([`crate::locks`]) and the runners ([`crate::workload`],
//! [`crate::timeline`], [`crate::uncontended`]), which know nothing of it: an entry names an
//! adapter type and stores each runner's function instantiated for it.

use crate::locks::condvar::{BenchCondvar, PlCv, PthreadCv, StdCv};
use crate::locks::peers::*;
use crate::locks::BenchLock;
use crate::runner::{CellConfig, RunOutcome};
use crate::timeline::{Recording, TimelineCfg};
use crate::uncontended::UncontendedFn;
use crate::workload::condvar::Queue;
use crate::workload::WorkSpec;

/// What kind of lock a registry entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Mutex,
    RwLock,
}

impl Kind {
    /// `"mutex"` or `"rwlock"` (the results' `kind` field).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Mutex => "mutex",
            Kind::RwLock => "rwlock",
        }
    }
}

/// The per-lock entry point: runs one cell of any workload. The match on the
/// workload happens once per cell, outside the timed loop.
pub type RunFn = fn(&WorkSpec, &CellConfig) -> RunOutcome;

/// The entry point of the condvar workload for a mutex's mutex + condvar pair.
pub type CondvarFn = fn(&CellConfig) -> RunOutcome;

/// The per-lock entry point of `lockbench timeline`.
pub type TimelineFn = fn(&TimelineCfg) -> Result<Recording, String>;

/// One registry entry.
#[derive(Clone, Copy)]
pub struct LockInfo {
    pub name: &'static str,
    pub kind: Kind,
    /// kslock's own lock (as opposed to a peer).
    pub ours: bool,
    pub help: &'static str,
    pub run: RunFn,
    /// The `timeline` command's recorder for this lock.
    pub timeline: TimelineFn,
    /// The `uncontended` command's loops for this lock.
    pub uncontended: UncontendedFn,
    /// The condvar workload on this mutex and its library's condvar (`None`: no condvar).
    pub condvar: Option<CondvarFn>,
}

impl LockInfo {
    /// Runs one cell of `spec` on this lock (the condvar workload on its condvar pair).
    pub fn run_cell(&self, spec: &WorkSpec, cfg: &CellConfig) -> RunOutcome {
        match (spec, self.condvar) {
            (WorkSpec::Condvar, Some(run)) => run(cfg),
            (WorkSpec::Condvar, None) => Err(format!("{} has no condvar", self.name)),
            _ => (self.run)(spec, cfg),
        }
    }

    /// This entry with the condvar workload on pair `C`.
    fn with_condvar<C: BenchCondvar<Queue>>(mut self) -> LockInfo {
        self.condvar = Some(crate::workload::run_condvar::<C>);
        self
    }
}

/// The entry of adapter `L`.
fn entry<L: BenchLock>(name: &'static str, ours: bool, help: &'static str) -> LockInfo {
    LockInfo {
        name,
        kind: if L::RW { Kind::RwLock } else { Kind::Mutex },
        ours,
        help,
        run: crate::workload::run_any::<L>,
        timeline: crate::timeline::record::<L>,
        uncontended: crate::uncontended::measure::<L>,
        condvar: None,
    }
}

/// kslock's mutexes (feature `kslock`).
#[cfg(feature = "kslock")]
fn kslock_mutexes() -> Vec<LockInfo> {
    use crate::locks::kslock::KsMutex;
    use kslock::policy;
    vec![
        entry::<KsMutex<policy::DefaultPolicy>>(
            "kslock-mutex",
            true,
            "kslock::RawMutex, default policy (OSQ SplitIdLine)",
        )
        .with_condvar::<crate::locks::condvar::KsCv<Queue>>(),
        entry::<KsMutex<policy::PackedOsq>>(
            "kslock-mutex-packed-osq",
            true,
            "kslock::RawMutexWith<PackedOsq> (seed S1 A side)",
        ),
        entry::<KsMutex<policy::KernelHandoff>>(
            "kslock-mutex-kernel-handoff",
            true,
            "kslock::RawMutexWith<KernelHandoff>: handoff after one lost race, no fairness window",
        ),
    ]
}

/// kslock's rw locks (feature `kslock-rwsem`).
#[cfg(feature = "kslock-rwsem")]
fn kslock_rwsems() -> Vec<LockInfo> {
    use crate::locks::kslock::KsRw;
    use kslock::{policy, RawRwSemWith};
    vec![
        entry::<KsRw<RawRwSemWith<policy::DefaultPolicy>>>(
            "kslock-rwsem",
            true,
            "kslock::RawRwSem, default policy",
        ),
        entry::<KsRw<RawRwSemWith<policy::ReaderSpinOn>>>(
            "kslock-rwsem-reader-spin-on",
            true,
            "RawRwSemWith<ReaderSpinOn> (seed S4: every reader spins)",
        ),
        entry::<KsRw<RawRwSemWith<policy::ReaderSpinLimited>>>(
            "kslock-rwsem-reader-spin-limited",
            true,
            "RawRwSemWith<ReaderSpinLimited> (seed S4: one reader spins)",
        ),
        entry::<KsRw<RawRwSemWith<policy::WakeFlag>>>(
            "kslock-rwsem-wake-flag",
            true,
            "RawRwSemWith<WakeFlag> (seed S0)",
        ),
        entry::<KsRw<RawRwSemWith<policy::TrylockIfSpinner>>>(
            "kslock-rwsem-trylock-if-spinner",
            true,
            "RawRwSemWith<TrylockIfSpinner> (seed S0)",
        ),
        entry::<KsRw<RawRwSemWith<policy::NeverSpinOnReaders>>>(
            "kslock-rwsem-never-spin-on-readers",
            true,
            "RawRwSemWith<NeverSpinOnReaders> (seed S2)",
        ),
        entry::<KsRw<RawRwSemWith<policy::PackedOsq>>>(
            "kslock-rwsem-packed-osq",
            true,
            "RawRwSemWith<PackedOsq> (seed S1)",
        ),
        entry::<KsRw<kslock::hybrid::RawHybridRwSem>>(
            "kslock-rwsem-hybrid",
            true,
            "kslock::hybrid::RawHybridRwSem: the mutex for writers, reads shared or through the mutex by measurement",
        ),
    ]
}

/// The peer locks.
fn peers() -> Vec<LockInfo> {
    vec![
        entry::<StdMutex>("std-mutex", false, "std::sync::Mutex (futex)")
            .with_condvar::<StdCv<Queue>>(),
        entry::<StdRwLock>(
            "std-rwlock",
            false,
            "std::sync::RwLock (futex, writer-preferring)",
        ),
        entry::<PlMutex>("parking-lot-mutex", false, "parking_lot::Mutex")
            .with_condvar::<PlCv<Queue>>(),
        entry::<PlFairMutex>(
            "parking-lot-fair-mutex",
            false,
            "parking_lot::FairMutex (fair unlock)",
        ),
        entry::<PlRwLock>(
            "parking-lot-rwlock",
            false,
            "parking_lot::RwLock (task-fair)",
        ),
        entry::<PthreadMutex<0>>(
            "pthread-mutex",
            false,
            "glibc pthread_mutex_t, default type",
        )
        .with_condvar::<PthreadCv<Queue>>(),
        entry::<PthreadMutex<{ PTHREAD_MUTEX_ADAPTIVE_NP }>>(
            "pthread-mutex-adaptive",
            false,
            "glibc PTHREAD_MUTEX_ADAPTIVE_NP (spins before sleeping)",
        ),
        entry::<PthreadRwLock<0>>(
            "pthread-rwlock",
            false,
            "glibc pthread_rwlock_t, default (prefers readers)",
        ),
        entry::<PthreadRwLock<{ PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP }>>(
            "pthread-rwlock-prefer-writer",
            false,
            "glibc PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP",
        ),
        entry::<SpinTtas>(
            "spin-ttas",
            false,
            "test-and-test-and-set spinlock, sched_yield every 64 failed polls",
        ),
    ]
}

/// All locks compiled into this binary, kslock's first.
pub fn registry() -> Vec<LockInfo> {
    #[allow(unused_mut)]
    let mut v = Vec::new();
    #[cfg(feature = "kslock")]
    v.extend(kslock_mutexes());
    #[cfg(feature = "kslock-rwsem")]
    v.extend(kslock_rwsems());
    v.extend(peers());
    v
}

/// Names of all registered locks (for usage messages).
pub fn names() -> Vec<&'static str> {
    registry().iter().map(|l| l.name).collect()
}

/// The entry named `name`.
pub fn find(name: &str) -> Option<LockInfo> {
    registry().into_iter().find(|l| l.name == name)
}

/// The entries named in `names` that this binary has (the others are skipped).
pub fn available(names: &[&str]) -> Vec<LockInfo> {
    names.iter().filter_map(|n| find(n)).collect()
}

/// The names of the locks with a condvar (for usage messages).
pub fn condvar_names() -> Vec<&'static str> {
    registry()
        .iter()
        .filter(|l| l.condvar.is_some())
        .map(|l| l.name)
        .collect()
}

/// Resolve lock names and the aliases all / mutexes / rwlocks (each lock once, in the order
/// named).
pub fn resolve(names: &[String]) -> Vec<LockInfo> {
    let reg = registry();
    let mut out: Vec<LockInfo> = Vec::new();
    for n in names {
        let add: Vec<LockInfo> = match n.as_str() {
            "all" => reg.clone(),
            "mutexes" => reg
                .iter()
                .filter(|l| l.kind == Kind::Mutex)
                .copied()
                .collect(),
            "rwlocks" => reg
                .iter()
                .filter(|l| l.kind == Kind::RwLock)
                .copied()
                .collect(),
            name => reg.iter().filter(|l| l.name == name).copied().collect(),
        };
        for l in add {
            if !out.iter().any(|o| o.name == l.name) {
                out.push(l);
            }
        }
    }
    out
}

/// `lockbench list`: one line per lock (name, kind, description).
pub fn list_text() -> String {
    let mut text = String::new();
    for l in registry() {
        text.push_str(&format!("{:<36} {:<7} {}\n", l.name, l.kind.name(), l.help));
    }
    if !cfg!(feature = "kslock") {
        text.push_str("(kslock's locks are not compiled in: build with --features kslock)\n");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peers_are_complete() {
        let p = peers();
        assert_eq!(p.len(), 10);
        assert_eq!(p.iter().filter(|e| e.kind == Kind::RwLock).count(), 4);
        assert!(p.iter().all(|e| !e.ours));
        let mut names = names();
        let n = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), n, "every name is unique");
    }

    #[test]
    fn aliases_resolve_to_their_kind() {
        let mx = resolve(&["mutexes".into()]);
        assert!(mx.iter().all(|l| l.kind == Kind::Mutex));
        assert!(mx.iter().any(|l| l.name == "spin-ttas"));
        let all = resolve(&["all".into(), "std-mutex".into()]);
        assert_eq!(all.len(), registry().len());
    }
}
