//! Small collectives that synchronize no more than their semantics need:
//! publish and pull.
//!
//! A collective's small-message cost used to be two group syncs around a
//! tiny copy. Here, when every member is mapped on this node and the data
//! fits a stage slot (`ctrl::STAGE_DATA` bytes), each member instead
//! *publishes* its contribution into its own slot (data, then the call's
//! signature word 0 with release: the word carries the epoch, so it is the
//! data's ready flag) and *pulls* what it needs from the others' slots:
//!
//! * broadcast: members wait for the root's slot only and copy it into
//!   their own dest; the root returns as soon as it has published;
//! * fcollect: members wait for every slot and copy each block;
//! * reductions: members wait for every slot and reduce the blocks in rank
//!   order (bitwise-identical results on every member).
//!
//! A member writes only its own slot and its own dest, so no member writes
//! into a buffer another member may still be using, and back-to-back calls
//! on the same buffers stay safe without a barrier. A slot is rewritten
//! only when every reader of its previous contents is known to be done:
//! each group keeps `ctrl::STAGE_SLOTS` slots (call `e` uses slot `e %
//! STAGE_SLOTS`) and a *horizon*, the epoch below which every member has
//! completed its calls. A sync, or a collective whose result depends on
//! every member (fcollect, reduce), advances it; a member that would
//! rewrite a slot above the horizon syncs first. So a run of broadcasts
//! pays one sync per `STAGE_SLOTS - 1` calls, and any other small
//! collective none.
//!
//! Teams keep their slots in the control segment (`ctrl::PeStage`, for the
//! first [`STAGED_TEAMS`] team slots) and use the team epoch; the
//! signature check (`collsig.rs`) compares the headers: every member also
//! waits for its ring predecessor's header and compares it, and a slot
//! that shows another call at this epoch ends the job with the usual
//! report. Active sets keep their slots in the pSync array, after the words
//! the synchronizing algorithms use, with an epoch per (pSync, active set)
//! kept by each member; their header hash includes the active set, so a
//! pSync array reused for another set never matches a stale slot.

use crate::coll::Group;
use crate::collsig::{Sig, Stage};
use crate::ctrl::{STAGE_BYTES, STAGE_DATA};
use crate::state::State;
use crate::wait::wait_until;
use std::sync::atomic::{AtomicU64, Ordering};

/// Word 0 of the slot at `slot`.
///
/// # Safety
/// `slot` is a mapped stage slot (8-byte aligned) that outlives the use.
unsafe fn word<'a>(slot: *const u8, i: usize) -> &'a AtomicU64 {
    // SAFETY: the caller's contract; the header is four aligned words.
    unsafe { &*(slot as *const AtomicU64).add(i) }
}

/// The data bytes of the slot at `slot`.
fn data(slot: *const u8) -> *mut u8 {
    slot.wrapping_add(STAGE_BYTES - STAGE_DATA) as *mut u8
}

/// The epoch in a header word 0 (32 bits, as `Sig::words` stores it).
fn epoch_of(w0: u64) -> u32 {
    (w0 >> 32) as u32
}

/// Keeps a reduction's running result (aligned for every element type).
#[repr(C, align(64))]
struct Acc([u8; STAGE_DATA]);

impl State {
    /// Publishes this member's header, after copying `len` bytes from
    /// symmetric offset `soff` of this PE into its slot (`len` 0: header
    /// only).
    ///
    /// # Safety
    /// `soff..soff + len` is a checked range of this PE's symmetric memory,
    /// `len <= STAGE_DATA`.
    unsafe fn stage_publish<G: Group>(&self, call: &str, t: &G, s: &Stage, soff: usize, len: usize) {
        let slot = t.stage_slot(self, t.my_rank(), s.epoch);
        // SAFETY: our own slot, which no member reads until word 0 says this
        // epoch, and which `stage_begin` made sure nobody still reads.
        unsafe {
            if len > 0 {
                self.route.get(call, self.my_pe, soff, data(slot), len, false);
            }
            for i in 1..4 {
                word(slot, i).store(s.words[i], Ordering::Relaxed);
            }
            word(slot, 0).store(s.words[0], Ordering::Release);
        }
    }

    /// Waits until member `rank` has published for this call; returns its
    /// slot.
    fn stage_wait<G: Group>(&self, call: &str, t: &G, s: &Stage, sig: Sig, rank: usize) -> *const u8 {
        let slot = t.stage_slot(self, rank, s.epoch);
        // SAFETY: a mapped slot of a member (the group resolved it).
        let w = unsafe { word(slot, 0) };
        let e = s.epoch as u32;
        wait_until(|| {
            let v = w.load(Ordering::Acquire);
            if v == s.words[0] {
                return true;
            }
            if !s.check {
                return false;
            }
            // Same epoch with another hash: another call. A later epoch in
            // this slot: the member made calls this PE did not (it cannot
            // legitimately get a whole round of slots ahead).
            let ve = epoch_of(v);
            if ve == e || (e.wrapping_sub(ve) as i32) < 0 {
                t.stage_mismatch(self, call, sig, s.epoch)
            }
            false
        });
        slot
    }

    /// With the check on, waits for the ring predecessor's header and
    /// compares it (the members that pull every slot compare them all).
    fn stage_check_pred<G: Group>(&self, call: &str, t: &G, s: &Stage, sig: Sig) {
        if s.check {
            let pred = (t.my_rank() + t.size() - 1) % t.size();
            self.stage_wait(call, t, s, sig, pred);
        }
    }

    /// Broadcast of `nbytes <= STAGE_DATA` (see the module comment):
    /// the root publishes its source; the others copy it into their dest.
    ///
    /// # Safety
    /// `doff`/`soff` are checked symmetric ranges of `nbytes` bytes.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn broadcast_staged<G: Group>(
        &self, call: &str, t: &G, s: Stage, sig: Sig, doff: usize, soff: usize, nbytes: usize, root: usize,
        include_root: bool,
    ) {
        let me = t.my_rank();
        // SAFETY: the caller's contract.
        unsafe {
            if me == root {
                self.stage_publish(call, t, &s, soff, nbytes);
                if include_root && nbytes > 0 && doff != soff {
                    let mine = t.stage_slot(self, me, s.epoch);
                    self.route.put(call, self.my_pe, doff, data(mine), nbytes, false);
                }
                self.stage_check_pred(call, t, &s, sig);
            } else {
                if s.check {
                    self.stage_publish(call, t, &s, 0, 0);
                    self.stage_check_pred(call, t, &s, sig);
                }
                let slot = self.stage_wait(call, t, &s, sig, root);
                if nbytes > 0 {
                    self.route.put(call, self.my_pe, doff, data(slot), nbytes, false);
                }
            }
        }
    }

    /// fcollect of `nbytes <= STAGE_DATA` per member: every member
    /// publishes its block and copies every member's into its dest.
    ///
    /// # Safety
    /// `soff` is a checked range of `nbytes`, `doff` of `nbytes * size`.
    pub(crate) unsafe fn fcollect_staged<G: Group>(
        &self, call: &str, t: &G, s: Stage, sig: Sig, doff: usize, soff: usize, nbytes: usize,
    ) {
        let n = t.size();
        // SAFETY: the caller's contract.
        unsafe {
            self.stage_publish(call, t, &s, soff, nbytes);
            // Predecessor first: it is the one the check compares, and the
            // rest follow in ring order from there.
            for k in 0..n {
                let r = (t.my_rank() + n - 1 + k) % n;
                let slot = self.stage_wait(call, t, &s, sig, r);
                if nbytes > 0 {
                    self.route.put(call, self.my_pe, doff + r * nbytes, data(slot), nbytes, false);
                }
            }
        }
        t.stage_all_arrived(self, s.epoch);
    }

    /// Reduction of `nreduce` elements (`nreduce * size_of::<T>() <=
    /// STAGE_DATA`): every member publishes its source and reduces all
    /// slots in rank order into its own dest.
    ///
    /// # Safety
    /// As `State::reduce_in`; `doff`/`soff` are checked ranges.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn reduce_staged<G: Group, T: Copy>(
        &self, call: &str, t: &G, s: Stage, sig: Sig, doff: usize, soff: usize, nreduce: usize, op: impl Fn(T, T) -> T,
    ) {
        let es = std::mem::size_of::<T>();
        let nbytes = nreduce * es;
        let n = t.size();
        // SAFETY: the caller's contract; slot data is read unaligned (a pSync
        // slot is only 8-byte aligned), the accumulator is aligned for T.
        unsafe {
            self.stage_publish(call, t, &s, soff, nbytes);
            for k in 0..n {
                self.stage_wait(call, t, &s, sig, (t.my_rank() + n - 1 + k) % n);
            }
            let mut buf = Acc([0; STAGE_DATA]);
            let acc = buf.0.as_mut_ptr() as *mut T;
            std::ptr::copy_nonoverlapping(data(t.stage_slot(self, 0, s.epoch)), acc as *mut u8, nbytes);
            for r in 1..n {
                let src = data(t.stage_slot(self, r, s.epoch)) as *const T;
                for i in 0..nreduce {
                    *acc.add(i) = op(*acc.add(i), src.add(i).read_unaligned());
                }
            }
            self.route.put(call, self.my_pe, doff, acc as *const u8, nbytes, false);
        }
        t.stage_all_arrived(self, s.epoch);
    }
}
