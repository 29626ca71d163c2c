//! The mutex's queue: a waiter's life from queueing to leaving the list (the fairness
//! window, the head's sleeps and spins). The state
//! machine is in the module doc of [`super`]; the unlocker's side (wakes and handovers) is in
//! `slow`.

use super::{owner_of, RawMutex, HANDOFF, WAKE_HEAD};
use crate::chaos::{self, Site};
use crate::events::{count, Event};
use crate::fairness;
use crate::policy::{HandoffPolicy, MutexPolicy};
use crate::sync::Ordering::*;
use crate::sys::{self, Deadline};
use crate::thread::{ThreadRec, Waiter, WakeQ};

/// `Waiter::state` of a mutex waiter the unlocker unlinked and named owner (`PICKUP`). (0: still
/// waiting; the condvar's own states, 1, 2, 4 and 5, are never seen by the mutex's waiters:
/// a requeued condvar waiter enters the mutex list as 2 and may be granted, 3.)
pub(super) const GRANTED: u32 = 3;

/// What a fresh head found when it armed `WAKE_HEAD`.
pub(super) enum Arm {
    /// It may sleep: the next unlock will wake it.
    Armed,
    /// The lock is free: retry instead of sleeping.
    Free,
}

impl<P: MutexPolicy> RawMutex<P> {
    /// Is the head waiter `w` due to ask for the handoff? (Module doc, "Fairness"; wait_lock
    /// held.) `lost` = it was woken and then lost the lock to a barger.
    fn due(&self, w: &Waiter, lost: bool) -> bool {
        match P::HANDOFF {
            HandoffPolicy::Window => sys::now_ns() >= due_at(w),
            HandoffPolicy::FirstFailure => lost,
        }
    }

    /// The waiting loop of a queued waiter (module doc, "Fairness"); returns with `w` unlinked
    /// and the wait_lock dropped. `false` only when `deadline` passed.
    ///
    /// # Safety
    /// The wait_lock is held and `w` (owned by `me`) is linked in this mutex's list.
    pub(crate) unsafe fn wait_in_queue(
        &self,
        me: &'static ThreadRec,
        w: &Waiter,
        deadline: Deadline,
    ) -> bool {
        // Woken by an unlock (a token) and then failed to get the lock: someone barged. Also
        // set for a head appointed by a handover: the lock is rotating.
        let mut lost = false;
        // Made head by a handover, and its window not yet due: the new owner's window has just
        // begun, so racing it for the lock (a spinning head steals it at the owner's next
        // unlock) would end that window early and bypass the rotation.
        let mut appointed = false;
        let mut seen_head = false;
        let acquired = loop {
            // wait_lock held here.
            // Acquire pairs with `hand_off`'s Release: unlinked and named owner.
            if w.state.load(Acquire) == GRANTED {
                return self.granted(me);
            }
            let head = self.list.is_first(w);
            if head && !seen_head {
                seen_head = true;
                if w.head_at() == 0 {
                    w.set_head_at(sys::now_ns().max(1));
                } else {
                    // A handover made us head (`hand_off`): the lock rotates among waiters;
                    // sleep on the window, not until the next unlock.
                    lost = true;
                    appointed = true;
                }
            }
            let due = head && self.due(w, lost);
            if due {
                count(Event::mutex_head_due);
            } else if head && lost {
                count(Event::mutex_head_lost);
            }
            // A free lock is taken here by the head, unless a head appointed by a handover whose
            // window is not due: it leaves the new owner its window. (A handover is picked up
            // above, GRANTED.)
            if head && (due || !appointed) && self.try_acquire(me, due).is_ok() {
                break true;
            }
            let mut park_until = deadline;
            if head {
                if due || (lost && !appointed) {
                    // Due: HANDOFF is asked; wait awake for the handover. Lost: the lock is busy
                    // but may free up soon; try for a moment before sleeping on the window.
                    self.wait_lock.unlock(me);
                    let got = self.waiter_spin(me, due);
                    // A pick-up (the Acquire in try_acquire read the handoff, which follows
                    // GRANTED) needs no wait_lock: the unlocker unlinked us.
                    if got && w.state.load(Relaxed) == GRANTED {
                        picked_up(me);
                        return true;
                    }
                    self.wait_lock.lock(me, &self.stats);
                    if got {
                        break true;
                    }
                }
                let arm = if due && self.owner.load(Relaxed) & HANDOFF != 0 {
                    // The owner did not unlock within the cap (a long critical section, or it
                    // sleeps or was preempted): sleep with HANDOFF kept; its unlock hands us the
                    // lock and wakes us. (Withdrawing the request instead would let the owner's
                    // unlock release the lock while it wakes us, and the owner take it back.)
                    // HANDOFF is cleared only under the wait_lock (held), by the handoff to the
                    // head, which is us: seen set here, it stays set until that handoff.
                    count(Event::mutex_due_sleep);
                    Arm::Armed
                } else if due {
                    // Due, but the request could not be made: the lock is still on its way to
                    // the previous head (PICKUP). Look again after a window.
                    let t = sys::now_ns().saturating_add(fairness::window_ns().0);
                    park_until = min_deadline(deadline, t);
                    Arm::Armed
                } else if lost {
                    // Busy: sleep until the window is due; the owner runs with no flag.
                    park_until = min_deadline(deadline, due_at(w));
                    count(Event::mutex_window_sleep);
                    Arm::Armed
                } else {
                    // Fresh head: the next unlock must wake it.
                    count(Event::mutex_head_sleep);
                    self.arm_wake_head()
                };
                if let Arm::Free = arm {
                    continue;
                }
            }
            self.wait_lock.unlock(me);
            let r = me.park(park_until);
            self.wait_lock.lock(me, &self.stats);
            // Woken by a token: an unlock or a handover. If we now fail, the lock is busy (sticky
            // for this wait: the head then sleeps on its window, not until the next unlock).
            lost |= r.is_ok();
            chaos::point(Site::HeadCheck);
            // The caller's deadline passed if the park timed out on it (not on the window
            // timer), or if the clock says so after any other return.
            let user_deadline = park_until == deadline;
            if (r.is_err() && user_deadline) || deadline.is_some_and(|d| sys::now_ns() >= d) {
                // Under the wait_lock no handoff to us can be in flight: take one that landed,
                // else leave.
                if w.state.load(Acquire) == GRANTED {
                    return self.granted(me);
                }
                let got = self.try_acquire(me, false).is_ok();
                if !got {
                    count(Event::mutex_wait_timeout);
                }
                break got;
            }
        };
        // SAFETY: wait_lock held (still, or again), `w` linked.
        unsafe { self.leave(me, w, acquired) };
        acquired
    }

    /// The unlocker handed us the lock and unlinked us (wait_lock held, dropped here): pick it
    /// up.
    fn granted(&self, me: &'static ThreadRec) -> bool {
        let picked = self.try_acquire(me, false).is_ok();
        debug_assert!(picked, "a granted waiter found no handoff");
        self.wait_lock.unlock(me);
        picked_up(me);
        true
    }

    /// Sets `WAKE_HEAD` if the lock is held (wait_lock held): `Free` if it is not (retry).
    pub(super) fn arm_wake_head(&self) -> Arm {
        let mut o = self.owner.load(Relaxed);
        loop {
            if owner_of(o) == 0 {
                return Arm::Free;
            }
            if o & WAKE_HEAD != 0 {
                return Arm::Armed;
            }
            match self
                .owner
                .compare_exchange(o, o | WAKE_HEAD, Relaxed, Relaxed)
            {
                Ok(_) => return Arm::Armed,
                Err(x) => o = x,
            }
        }
    }

    /// Takes `w` out of the list (wait_lock held, dropped on return) and passes the head's turn
    /// on: if `w` was the head and others wait, the new head must be woken to start its own
    /// turn (it sleeps with no timer). The new owner (`acquired`) wakes it itself, holding the
    /// lock: had it armed `WAKE_HEAD` instead, its first unlock would release the lock and
    /// then spend the wakeup's syscall outside it, a gap in which the previous owner (still
    /// spinning after its handover) takes the lock back and the new owner's window is lost. A
    /// leaver without the lock arms `WAKE_HEAD` if the lock is held, or wakes the new head at
    /// once if it is free (module doc, "No lost wakeup").
    ///
    /// # Safety
    /// The wait_lock is held and `w` is linked.
    unsafe fn leave(&self, me: &'static ThreadRec, w: &Waiter, acquired: bool) {
        chaos::point(Site::Leaving);
        let was_head = self.list.is_first(w);
        let mut wake = WakeQ::new();
        // SAFETY: wait_lock held, `w` linked.
        unsafe { self.list.remove(w) };
        // SAFETY: wait_lock held.
        unsafe { self.list.purge_ghosts() };
        if self.list.is_empty() {
            // No one to wake or hand to. (A held lock may carry our stale HANDOFF.)
            self.owner.fetch_and(!(WAKE_HEAD | HANDOFF), Relaxed);
        } else if was_head && acquired {
            count(Event::mutex_owner_wakes_next);
            // SAFETY: non-empty list, wait_lock held: the head is linked.
            wake.push(unsafe { (*self.list.first()).rec() });
        } else if was_head {
            let mut o = self.owner.load(Relaxed);
            loop {
                let new = if owner_of(o) == 0 {
                    // SAFETY: non-empty list, wait_lock held: the head is linked.
                    wake.push(unsafe { (*self.list.first()).rec() });
                    break;
                } else {
                    (o & !HANDOFF) | WAKE_HEAD
                };
                match self.owner.compare_exchange(o, new, Relaxed, Relaxed) {
                    Ok(_) => break,
                    Err(x) => o = x,
                }
            }
        }
        self.wait_lock.unlock(me);
        wake.wake_all();
        if acquired {
            me.note_cpu();
        }
    }
}

/// After picking up a handed-over lock.
fn picked_up(me: &'static ThreadRec) {
    if crate::stats::recording() {
        me.set_window_start(sys::now_ns());
    }
    me.note_cpu();
}

/// When the head `w` should ask for the handoff: its fairness window's end
/// ([`fairness::handoff_at`]). The head sleeps until then; the timer's slack (50 µs by
/// default; the sleep ended ≈ 73 µs late on the development VM) lengthens each window by that
/// much, which the window minimum accounts for.
pub(super) fn due_at(w: &Waiter) -> u64 {
    fairness::handoff_at(w.queued_at(), w.head_at())
}

/// The earlier of a user deadline (`None` = none) and a timer.
fn min_deadline(deadline: Deadline, t: u64) -> Deadline {
    Some(deadline.map_or(t, |d| d.min(t)))
}
