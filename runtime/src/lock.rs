//! Distributed locks (OpenSHMEM 1.5 §9.12): `set_lock`, `clear_lock`,
//! `test_lock` on a symmetric `long` (heap or global), as an MCS queue lock,
//! so waiters are served first come, first served and each spins on its own
//! PE's copy of the lock variable.
//!
//! The 64-bit lock word is split into fields, all updated with AMOs:
//!
//! * bits 0..32 (meaningful on PE 0's copy only): the queue tail, as PE + 1
//!   (0: the lock is free);
//! * bits 32..48 (every PE's copy): that PE's successor in the queue, PE + 1;
//! * bit 48 (every PE's copy): set while that PE waits for the lock.
//!
//! Acquire: set my wait bit, swap myself in as the tail on PE 0; with no
//! predecessor the lock is mine, else write my number into the predecessor's
//! successor field and wait (locally) for my wait bit to clear. Release
//! (after a quiet): with no successor, try to swap the tail from me back to
//! free; if someone is enqueuing, wait for them to link, then clear their
//! wait bit. The lock variable must start at 0, as the spec requires.
//! Up to 65535 PEs take part in one lock.

use crate::error::fatal;
use crate::state::State;
use crate::types::AmoOp;
use crate::wait::wait_until;
use std::sync::atomic::Ordering;

const TAIL_MASK: u64 = 0xffff_ffff;
const NEXT_SHIFT: u32 = 32;
const NEXT_MASK: u64 = 0xffff << NEXT_SHIFT;
const WAITING: u64 = 1 << 48;
/// PE 0 holds the queue tail.
const TAIL_PE: i32 = 0;

impl State {
    /// Checks the lock variable and returns its symmetric offset (this PE
    /// spins on its own copy there).
    fn lock_word(&self, call: &str, lock: *mut i64) -> usize {
        if self.n_pes > 0xffff {
            fatal(call, format_args!("locks support at most 65535 PEs (this job has {})", self.n_pes))
        }
        let off = self.sym_offset(call, "lock", lock as *const u8, 8);
        if !(lock as usize).is_multiple_of(8) {
            fatal(call, format_args!("lock {lock:p} is not aligned to 8 bytes"))
        }
        off
    }

    fn lock_amo(&self, call: &str, lock: *mut i64, op: AmoOp, value: u64, cond: u64, pe: i32) -> u64 {
        // SAFETY: checked symmetric and aligned by lock_word; u64 is plain.
        unsafe { self.amo(call, lock as *const u64, op, value, cond, pe) }
    }

    /// Replaces the tail field on PE 0 with `new` if it equals `expect`
    /// (`None`: whatever it is); returns the previous tail.
    fn swap_tail(&self, call: &str, lock: *mut i64, expect: Option<u64>, new: u64) -> u64 {
        let mut w = self.lock_amo(call, lock, AmoOp::Fetch, 0, 0, TAIL_PE);
        loop {
            let tail = w & TAIL_MASK;
            if expect.is_some_and(|e| e != tail) {
                return tail;
            }
            let next = (w & !TAIL_MASK) | new;
            let seen = self.lock_amo(call, lock, AmoOp::CompareSwap, next, w, TAIL_PE);
            if seen == w {
                return tail;
            }
            w = seen;
        }
    }

    /// `set_lock`: blocks until this PE holds the lock.
    pub fn set_lock(&self, call: &str, lock: *mut i64) {
        let mine = self.lock_word(call, lock);
        let me = self.my_pe as i32;
        let me1 = self.my_pe as u64 + 1;
        self.lock_amo(call, lock, AmoOp::FetchOr, WAITING, 0, me);
        let prev = self.swap_tail(call, lock, None, me1);
        if prev == 0 {
            self.lock_amo(call, lock, AmoOp::FetchAnd, !WAITING, 0, me);
        } else {
            self.lock_amo(call, lock, AmoOp::FetchOr, me1 << NEXT_SHIFT, 0, (prev - 1) as i32);
            let what = || format!("{call}(lock {lock:p}) (waits for PE {} to pass the lock on)", prev - 1);
            wait_until(&what, || self.route.load_mine(call, mine, 8) & WAITING == 0);
        }
        std::sync::atomic::fence(Ordering::SeqCst);
    }

    /// `test_lock`: takes the lock if it is free; returns 0 if taken, 1 if
    /// it was held.
    pub fn test_lock(&self, call: &str, lock: *mut i64) -> i32 {
        self.lock_word(call, lock);
        let taken = self.swap_tail(call, lock, Some(0), self.my_pe as u64 + 1) == 0;
        std::sync::atomic::fence(Ordering::SeqCst);
        i32::from(!taken)
    }

    /// `clear_lock`: completes this PE's operations, then passes the lock to
    /// the next waiter or frees it.
    pub fn clear_lock(&self, call: &str, lock: *mut i64) {
        let mine = self.lock_word(call, lock);
        let me = self.my_pe as i32;
        let me1 = self.my_pe as u64 + 1;
        self.quiet();
        let next = || (self.route.load_mine(call, mine, 8) & NEXT_MASK) >> NEXT_SHIFT;
        if next() == 0 {
            if self.swap_tail(call, lock, Some(me1), 0) == me1 {
                return;
            }
            // A PE swapped itself in behind us and is about to link.
            let what = || format!("{call}(lock {lock:p}) (waits for the next PE in the queue to link itself)");
            wait_until(&what, || next() != 0);
        }
        let succ = next();
        self.lock_amo(call, lock, AmoOp::FetchAnd, !NEXT_MASK, 0, me);
        self.lock_amo(call, lock, AmoOp::FetchAnd, !WAITING, 0, (succ - 1) as i32);
    }
}
