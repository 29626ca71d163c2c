//! The exclusion checker every critical section runs, as in locktorture, and the handover
//! count behind feature `handovers` ([`Excl`]).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::*};

use crate::util::CachePadded;

/// Exclusion checker, as in locktorture: checked inside every critical
/// section. Bits 0..32 count readers inside, bit 32 up mark a writer.
/// Relaxed is enough: the lock under test orders these accesses, and a lock
/// that fails to do so is what we want to catch.
///
/// With feature `handovers` it also counts **handovers**: exclusive entries by a
/// thread other than the previous exclusive one (reported as the event
/// `handovers`, per kop). A lock that lets one thread batch has few; one that
/// changes hands at every operation has one per operation. The last writer and
/// the count share the checker's line, which every critical section writes
/// anyway. Off by default: the count is extra work in every critical section
/// (and changes the code around the lock), so the default loop leaves it out.
#[derive(Default)]
pub struct Excl(CachePadded<ExclLine>);

/// The checker's state, last writer and handover count (one cache line).
#[derive(Default)]
struct ExclLine {
    state: AtomicU64,
    last_writer: AtomicUsize,
    handovers: AtomicU64,
}

const EXCL_WRITER: u64 = 1 << 32;

/// Does the exclusion checker count handovers (feature `handovers`, [`Excl`])?
pub const COUNT_HANDOVERS: bool = cfg!(feature = "handovers");

/// A number unique to the calling thread while it lives (the address of a
/// thread-local), never 0.
#[inline(always)]
fn thread_tag() -> usize {
    thread_local!(static TAG: u8 = const { 0 });
    TAG.with(|t| t as *const u8 as usize)
}

impl Excl {
    #[inline(always)]
    pub fn write_enter(&self) -> Result<(), String> {
        // A correct lock lets no one else in, so load + store suffices. Wrapping: under a
        // broken lock a reader's exit can race this store and leave the count below 0
        // (`u64::MAX`); that must be reported as the violation it is, not panic on overflow.
        let v = self.0.state.load(Relaxed);
        self.0.state.store(v.wrapping_add(EXCL_WRITER), Relaxed);
        if v != 0 {
            return Err(violation("writer entered", v));
        }
        if COUNT_HANDOVERS {
            self.note_writer(thread_tag());
        }
        Ok(())
    }
    /// Counts a handover if `me` is not the previous exclusive thread. Inside the
    /// exclusive section, so plain load + store.
    #[inline(always)]
    fn note_writer(&self, me: usize) {
        if self.0.last_writer.load(Relaxed) != me {
            self.0.last_writer.store(me, Relaxed);
            let n = self.0.handovers.load(Relaxed);
            self.0.handovers.store(n + 1, Relaxed);
        }
    }
    /// Handovers so far (type doc). Read by the coordinator while workers run:
    /// a snapshot, at most one handover stale.
    pub fn handovers(&self) -> u64 {
        self.0.handovers.load(Relaxed)
    }
    #[inline(always)]
    pub fn write_exit(&self) -> Result<(), String> {
        let v = self.0.state.load(Relaxed);
        self.0.state.store(v.wrapping_sub(EXCL_WRITER), Relaxed);
        if v != EXCL_WRITER {
            return Err(violation("writer leaving", v));
        }
        Ok(())
    }
    #[inline(always)]
    pub fn read_enter(&self) -> Result<(), String> {
        let v = self.0.state.fetch_add(1, Relaxed);
        if v >= EXCL_WRITER {
            return Err(violation("reader entered", v));
        }
        Ok(())
    }
    #[inline(always)]
    pub fn read_exit(&self) -> Result<(), String> {
        let v = self.0.state.fetch_sub(1, Relaxed);
        if v >= EXCL_WRITER || v == 0 {
            return Err(violation("reader leaving", v));
        }
        Ok(())
    }
}

#[cold]
fn violation(when: &str, v: u64) -> String {
    format!(
        "mutual exclusion violated: {when} while {} writer(s) and {} reader(s) were inside",
        v >> 32,
        v & (EXCL_WRITER - 1)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excl_rules() {
        let e = Excl::default();
        e.read_enter().unwrap();
        e.read_enter().unwrap();
        e.read_exit().unwrap();
        e.read_exit().unwrap();
        e.write_enter().unwrap();
        assert!(e.read_enter().is_err());
    }

    #[test]
    fn handovers_count_changes_of_the_exclusive_thread() {
        let e = Excl::default();
        let (a, b) = (thread_tag(), std::thread::spawn(thread_tag).join().unwrap());
        assert_ne!(a, b);
        for _ in 0..3 {
            e.note_writer(a);
        }
        assert_eq!(
            e.handovers(),
            1,
            "one thread re-entering hands over only once"
        );
        e.note_writer(b);
        e.note_writer(a);
        assert_eq!(e.handovers(), 3);
        // A re-entry by `a`, the last writer, is no handover (and without the feature the
        // checker counts nothing); readers are never counted.
        e.write_enter().unwrap();
        e.write_exit().unwrap();
        e.read_enter().unwrap();
        e.read_exit().unwrap();
        assert_eq!(e.handovers(), 3);
    }
}
