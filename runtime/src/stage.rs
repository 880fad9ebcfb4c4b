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
//! STAGE_SLOTS`) and, per member, a *progress* word: the epoch of the call
//! the member has entered (all its earlier calls are complete). A member's
//! *horizon* is the lowest progress it has seen, or the epoch of its last
//! sync or collective that depended on every member; only a member about
//! to rewrite a slot at or above its horizon looks at the others' progress
//! again (and waits for the slowest, when that one is a whole round of
//! slots behind). So a run of broadcasts costs the root one look at every
//! member's progress per `STAGE_SLOTS - 1` calls, and no sync.
//!
//! Teams keep their slots in the control segment (`ctrl::PeStage`, for the
//! first [`STAGED_TEAMS`] team slots) and use the team epoch; the
//! signature check (`collsig.rs`) compares the headers: a slot that shows
//! another call at this epoch ends the job with the usual report, and
//! every member compares its ring predecessor's header for each of its own
//! calls, as soon as it is there (at the latest before the member's next
//! sync or all-member collective, so a broadcast root does not wait for
//! it). Until it has compared, a member's progress stays at that call, so
//! the predecessor cannot rewrite the header first. Active sets keep their slots in the pSync array, after the words
//! the synchronizing algorithms use, with an epoch per (pSync, active set)
//! kept by each member; their header hash includes the active set, so a
//! pSync array reused for another set never matches a stale slot.

use crate::coll::Group;
use crate::collsig::{Sig, Stage};
use crate::ctrl::{StageSlot, STAGE_DATA, STAGE_SLOTS};
use crate::state::State;
use crate::types::Marks;
use crate::wait::wait_until_in;
use std::sync::atomic::{AtomicU64, Ordering};

/// Header word `i` of `slot` (0: the ready flag, see the module comment;
/// 1 to 3: the rest of the call's signature).
fn word(slot: &StageSlot, i: usize) -> &AtomicU64 {
    if i == 0 {
        &slot.word0
    } else {
        &slot.sig[i - 1]
    }
}

/// The data bytes of `slot`.
fn data(slot: &StageSlot) -> *mut u8 {
    slot.data.get().cast()
}

/// The epoch in a header word 0 (32 bits, as `Sig::words` stores it).
fn epoch_of(w0: u64) -> u32 {
    (w0 >> 32) as u32
}

/// A staged call compares its predecessor's headers at entry once this
/// many are pending (fewer than `STAGE_SLOTS - 1`, so a member's progress
/// never holds back a member that is a round of slots ahead).
const CATCH_UP_LAG: u64 = 4;

/// Keeps a reduction's running result (aligned for every element type).
#[repr(C, align(64))]
struct Acc([u8; STAGE_DATA]);

impl State {
    /// Starts a call on a staged group (`sig`, or a sync's header with
    /// `block`): compares the predecessor's headers of earlier calls
    /// (`block`: all of them, waiting as needed; else those already there),
    /// publishes this member's progress, refreshes the horizon when this
    /// call's slot is at or above it, and advances the epoch.
    pub(crate) fn stage_enter<G: Group>(&self, call: &str, t: &G, sig: Sig, block: bool) -> Stage {
        let check = t.stage_check(self);
        t.stage_switch(self);
        let mut m = t.stage_marks(self);
        let e = m.epoch + 1;
        // Comparing costs a look at the predecessor's slot (another core's
        // cache line): a staged call does it only once a few are pending,
        // or when it waits (see `stage_keep_up`).
        if check && (block || e - 1 - m.checked >= CATCH_UP_LAG) {
            self.stage_catch_up(call, t, &mut m, e - 1, block);
        }
        self.stage_progress_store(t, e, &m);
        if e >= m.horizon + STAGE_SLOTS as u64 {
            // Slot e % STAGE_SLOTS was last used at e - STAGE_SLOTS: every
            // member must have entered a later call.
            let need = e + 1 - STAGE_SLOTS as u64;
            let tag = (t.stage_tag() as u64) << 32;
            // How far past `need` a progress word is (None: not there yet).
            let past = |v: u64| {
                if tag == 0 {
                    return v.checked_sub(need);
                }
                let d = (v as u32).wrapping_sub(need as u32);
                (v & !0xffff_ffff == tag && (d as i32) >= 0).then_some(d as u64)
            };
            let mut low = u64::MAX;
            for r in 0..t.size() {
                let p = || t.stage_progress_value(self, r);
                let what = || format!("{call} (waits for PE {} to finish call #{need} on this team)", t.world_pe(r));
                wait_until_in(&what, t.awaits(t.world_pe(r)), || {
                    if check && past(p()).is_none() {
                        // This member's own progress (held back by headers
                        // it has not compared yet) may be what r, or this
                        // very wait, is waiting for.
                        self.stage_catch_up(call, t, &mut m, e - 1, false);
                        self.stage_progress_store(t, e, &m);
                    }
                    past(p()).is_some()
                });
                low = low.min(need + past(p()).unwrap_or(0));
            }
            m.horizon = low.min(e);
        }
        m.epoch = e;
        t.stage_set_marks(self, m);
        Stage { sig, epoch: e, words: t.stage_words(sig, e), check }
    }

    /// Publishes this member's progress in call `e`: `e` (every earlier
    /// call complete), held back to the first epoch whose predecessor
    /// header it has not compared yet (the predecessor may not rewrite it
    /// before).
    fn stage_progress_store<G: Group>(&self, t: &G, e: u64, m: &Marks) {
        let p = if t.stage_check(self) { e.min(m.checked + 1) } else { e };
        let mine = t.stage_progress(self, t.my_rank());
        // A team's word is the whole epoch; an active set's carries its tag
        // and the low 32 bits.
        let tag = t.stage_tag() as u64;
        mine.store(if tag == 0 { p } else { tag << 32 | p as u32 as u64 }, Ordering::Release);
    }

    /// While a staged call at `e` waits: compares the predecessor headers
    /// that have appeared and republishes the progress, which another
    /// member may be waiting for.
    fn stage_keep_up<G: Group>(&self, call: &str, t: &G, e: u64) {
        let mut m = t.stage_marks(self);
        if m.checked + 1 < e {
            self.stage_catch_up(call, t, &mut m, e - 1, false);
            t.stage_set_marks(self, m);
            self.stage_progress_store(t, e, &m);
        }
    }

    /// Compares the predecessor's header with this member's own for each
    /// epoch after `m.checked` up to `upto` (an epoch at which this member
    /// published no header, a plain sync or a device call, has nothing to
    /// compare). Without `block`, stops at the first header not there yet.
    fn stage_catch_up<G: Group>(&self, call: &str, t: &G, m: &mut Marks, upto: u64, block: bool) {
        let n = t.size();
        let pred = (t.my_rank() + n - 1) % n;
        while m.checked < upto {
            let e = m.checked + 1;
            let (own, theirs) = (word(t.stage_slot(self, t.my_rank(), e), 0), word(t.stage_slot(self, pred, e), 0));
            let own = own.load(Ordering::Acquire);
            if epoch_of(own) == e as u32 {
                let here = |v: u64| {
                    let ve = epoch_of(v);
                    // A later epoch: the predecessor rewrote the slot, which
                    // it cannot before this member compared (progress),
                    // unless it made calls this member did not.
                    ve == e as u32 || ((e as u32).wrapping_sub(ve) as i32) < 0
                };
                let mut v = theirs.load(Ordering::Acquire);
                if !here(v) {
                    if !block {
                        return;
                    }
                    let what = || format!("{call} (checks the calls of the PE before it in the team)");
                    wait_until_in(&what, t.awaits(t.world_pe(pred)), || {
                        v = theirs.load(Ordering::Acquire);
                        here(v)
                    });
                }
                if v != own {
                    t.stage_mismatch(self, call, None, e)
                }
            }
            m.checked = e;
        }
    }

    /// Publishes this member's header, after copying `len` bytes from
    /// symmetric offset `soff` of this PE into its slot (`len` 0: header
    /// only).
    ///
    /// # Safety
    /// `soff..soff + len` is a checked range of this PE's symmetric memory,
    /// `len <= STAGE_DATA`.
    unsafe fn stage_publish<G: Group>(&self, call: &str, t: &G, s: &Stage, soff: usize, len: usize) {
        // SAFETY: the caller's contract.
        unsafe { self.stage_publish_after(call, t, s, None, soff, len) }
    }

    /// As `stage_publish`, with `prefix` (a count) in the first 8 data
    /// bytes and the copy after it.
    ///
    /// # Safety
    /// As `stage_publish`; with a prefix, `len <= STAGE_DATA - 8`.
    unsafe fn stage_publish_after<G: Group>(
        &self, call: &str, t: &G, s: &Stage, prefix: Option<u64>, soff: usize, len: usize,
    ) {
        let slot = t.stage_slot(self, t.my_rank(), s.epoch);
        // SAFETY: our own slot, which no member reads until word 0 says this
        // epoch, and which `stage_enter` made sure nobody still reads.
        unsafe {
            let mut at = data(slot);
            if let Some(v) = prefix {
                (at as *mut u64).write_unaligned(v);
                at = at.add(8);
            }
            if len > 0 {
                self.route.get(call, self.my_pe, soff, at, len, false);
            }
            for i in 1..4 {
                word(slot, i).store(s.words[i], Ordering::Relaxed);
            }
            word(slot, 0).store(s.words[0], Ordering::Release);
        }
    }

    /// Waits until member `rank` has published for this call; returns its
    /// slot.
    fn stage_wait<G: Group>(&self, call: &str, t: &G, s: &Stage, rank: usize) -> &StageSlot {
        let slot = t.stage_slot(self, rank, s.epoch);
        let w = word(slot, 0);
        let e = s.epoch as u32;
        let mut polls = 0u32;
        let what = || format!("{call} (waits for PE {}'s part of the call)", t.world_pe(rank));
        wait_until_in(&what, t.awaits(t.world_pe(rank)), || {
            let v = w.load(Ordering::Acquire);
            if v == s.words[0] {
                return true;
            }
            polls = polls.wrapping_add(1);
            if polls.is_multiple_of(256) {
                t.stage_reused(self, call, rank, s.epoch, &|| w.load(Ordering::Acquire) != s.words[0]);
                if s.check {
                    self.stage_keep_up(call, t, s.epoch);
                }
            }
            if !s.check {
                return false;
            }
            // Same epoch with another hash: another call. A later epoch in
            // this slot: the member made calls this PE did not (it cannot
            // legitimately get a whole round of slots ahead).
            let ve = epoch_of(v);
            if ve == e || (e.wrapping_sub(ve) as i32) < 0 {
                t.stage_mismatch(self, call, Some(s.sig), s.epoch)
            }
            false
        });
        slot
    }

    /// Broadcast of `nbytes <= STAGE_DATA` (see the module comment):
    /// the root publishes its source; the others copy it into their dest.
    ///
    /// # Safety
    /// `doff`/`soff` are checked symmetric ranges of `nbytes` bytes.
    #[allow(clippy::too_many_arguments, reason = "the arguments of the collective it carries out")]
    pub(crate) unsafe fn broadcast_staged<G: Group>(
        &self, call: &str, t: &G, s: Stage, doff: usize, soff: usize, nbytes: usize, root: usize, include_root: bool,
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
            } else {
                if s.check {
                    // The header, for the successor's comparison.
                    self.stage_publish(call, t, &s, 0, 0);
                }
                let slot = self.stage_wait(call, t, &s, root);
                if nbytes > 0 {
                    self.route.put(call, self.my_pe, doff, data(slot), nbytes, false);
                }
            }
        }
        if s.check {
            // No member returns from a broadcast its members disagree on
            // (the root, the size): a non-root compared the root's header
            // when it read its data, and the root nothing yet; each now
            // compares every other member's header of this call. In a run
            // of broadcasts the members arrive together, so this is a look
            // at each slot, not a wait (ISHMEM_COLL_CHECK=0 leaves it out:
            // the root then returns as soon as it has published).
            let n = t.size();
            for k in 1..n {
                let r = (me + k) % n;
                if r != root {
                    self.stage_wait(call, t, &s, r);
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
        &self, call: &str, t: &G, s: Stage, doff: usize, soff: usize, nbytes: usize,
    ) {
        let n = t.size();
        // SAFETY: the caller's contract.
        unsafe {
            self.stage_publish(call, t, &s, soff, nbytes);
            for k in 0..n {
                let r = (t.my_rank() + n - 1 + k) % n;
                let slot = self.stage_wait(call, t, &s, r);
                if nbytes > 0 {
                    self.route.put(call, self.my_pe, doff + r * nbytes, data(slot), nbytes, false);
                }
            }
        }
        self.stage_all_arrived(t, &s);
    }

    /// alltoall of `nbytes` per member pair (`nbytes * size <= STAGE_DATA`):
    /// every member publishes its whole source and copies its block from
    /// every member's slot.
    ///
    /// # Safety
    /// `soff` and `doff` are checked ranges of `nbytes * size` bytes.
    pub(crate) unsafe fn alltoall_staged<G: Group>(
        &self, call: &str, t: &G, s: Stage, doff: usize, soff: usize, nbytes: usize,
    ) {
        let (n, me) = (t.size(), t.my_rank());
        // SAFETY: the caller's contract.
        unsafe {
            self.stage_publish(call, t, &s, soff, nbytes * n);
            for k in 0..n {
                let r = (me + n - 1 + k) % n;
                let slot = self.stage_wait(call, t, &s, r);
                if nbytes > 0 {
                    self.route.put(call, self.my_pe, doff + r * nbytes, data(slot).add(me * nbytes), nbytes, false);
                }
            }
        }
        self.stage_all_arrived(t, &s);
    }

    /// collect (`nbytes` from this member, counts may differ): every member
    /// publishes its count and, when it fits, its block. When every block
    /// fits, members copy them all from the slots into their dest; when one
    /// does not (all see the same counts, so all decide alike), every member
    /// pushes its block into every dest and syncs, as the synchronizing
    /// algorithm does (for large blocks stores across cores beat loads).
    ///
    /// # Safety
    /// `soff` is a checked range of `nbytes`.
    pub(crate) unsafe fn collect_staged<G: Group>(
        &self, call: &str, t: &G, s: Stage, dest: *mut u8, soff: usize, nbytes: usize,
    ) {
        const CAP: usize = STAGE_DATA - 8;
        let (n, me) = (t.size(), t.my_rank());
        // SAFETY: the caller's contract; counts are read unaligned.
        unsafe {
            let len = if nbytes <= CAP { nbytes } else { 0 };
            self.stage_publish_after(call, t, &s, Some(nbytes as u64), soff, len);
            let count = |slot: &StageSlot| (data(slot) as *const u64).read_unaligned() as usize;
            let mut total = 0usize;
            for k in 0..n {
                let slot = self.stage_wait(call, t, &s, (me + n - 1 + k) % n);
                total = total.saturating_add(count(slot));
            }
            let doff = self.sym_extent(call, "dest", dest, total);
            let mut at = doff;
            let mut big = false;
            let mut my_at = doff;
            for r in 0..n {
                let b = count(t.stage_slot(self, r, s.epoch));
                big |= b > CAP;
                if r == me {
                    my_at = at;
                }
                at += b;
            }
            if !big {
                // Every block is in a slot: copy them all into this dest.
                let mut at = doff;
                for r in 0..n {
                    let slot = t.stage_slot(self, r, s.epoch);
                    let b = count(slot);
                    if b > 0 {
                        self.route.put(call, self.my_pe, at, data(slot).add(8), b, false);
                    }
                    at += b;
                }
                self.stage_all_arrived(t, &s);
            } else {
                // Some block is too large for a slot: every member has
                // arrived (its dest is free, its source ready), so each
                // pushes its own block into every member's dest, as the
                // synchronizing algorithm does after its entry sync, and a
                // sync completes the call.
                self.stage_all_arrived(t, &s);
                if nbytes > 0 {
                    for k in 0..n {
                        let pe = t.world_pe((me + k) % n);
                        self.route.put(call, pe, my_at, self.mine(soff), nbytes, true);
                    }
                }
                t.sync(self);
            }
        }
    }

    /// Reduction of `nreduce` elements (`nreduce * size_of::<T>() <=
    /// STAGE_DATA`): every member publishes its source and reduces all
    /// slots in rank order into its own dest.
    ///
    /// # Safety
    /// As `State::reduce_in`; `doff`/`soff` are checked ranges.
    #[allow(clippy::too_many_arguments, reason = "the arguments of the collective it carries out")]
    pub(crate) unsafe fn reduce_staged<G: Group, T: Copy>(
        &self, call: &str, t: &G, s: Stage, doff: usize, soff: usize, nreduce: usize, op: impl Fn(T, T) -> T,
    ) {
        let es = std::mem::size_of::<T>();
        let nbytes = nreduce * es;
        let n = t.size();
        // SAFETY: the caller's contract; slot data is read unaligned (a pSync
        // slot is only 8-byte aligned), the accumulator is aligned for T.
        unsafe {
            self.stage_publish(call, t, &s, soff, nbytes);
            for k in 0..n {
                self.stage_wait(call, t, &s, (t.my_rank() + n - 1 + k) % n);
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
        self.stage_all_arrived(t, &s);
    }

    /// A staged call whose result depended on every member completed: every
    /// member has entered it, and this member compared every header
    /// (its earlier calls were compared at entry, `block`).
    fn stage_all_arrived<G: Group>(&self, t: &G, s: &Stage) {
        let mut m = t.stage_marks(self);
        m.horizon = m.horizon.max(s.epoch);
        if s.check {
            m.checked = s.epoch;
        }
        t.stage_set_marks(self, m);
    }
}
