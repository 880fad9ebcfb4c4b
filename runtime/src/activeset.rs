//! Deprecated active-set collectives (OpenSHMEM 1.4 and earlier, kept in
//! 1.5 as deprecated): the PEs `PE_start + i * 2^logPE_stride`, `i <
//! PE_size`, synchronized through the caller's symmetric `pSync` array.
//!
//! Only the members call, so no team exists for them; instead the pSync
//! words carry a counting dissemination barrier: in round k a member adds 1
//! to its partner's `pSync[k]`, waits for its own `pSync[k]` to be positive
//! and subtracts 1. Every word has one writer per round and returns to
//! `SHMEM_SYNC_VALUE` (0) by the time every member has returned, as the
//! specification requires, so a pSync array can be reused by the next
//! collective on the same active set right away. `pSync[COUNT_WORD]` carries
//! collect's element counts. The data phases are the team collectives'
//! (`coll.rs`, through the `Group` trait).
//!
//! Small collectives skip those syncs (`stage.rs`): after the first 64
//! words, the pSync array holds this member's progress word and stage
//! slots, tagged with the active set; those words keep their values after
//! a call (a broadcast root returns while others may still read its slot).
//! The epochs live in process memory per (pSync, active set), so
//! re-initializing the array never makes members disagree
//! (docs/collectives.md).

use crate::coll::Group;
use crate::collsig::Sig;
use crate::ctrl::{StageSlot, STAGE_BYTES, STAGE_SLOTS};
use crate::error::fatal;
use crate::state::State;
use crate::types::{AmoOp, Marks, SetKey, SetMarks};
use crate::wait::wait_until;
use std::sync::atomic::{AtomicU64, Ordering};

/// Words of a pSync array the synchronizing algorithms use.
const SYNC_WORDS: usize = 64;
/// After them, from the first cache-line boundary: a line with this
/// member's progress word, then the stage slots of the small collectives
/// (`stage.rs`), each on lines of their own.
const STAGE_AREA: usize = SYNC_WORDS * 8;
const PROGRESS_AT: usize = 0;
/// Words of the progress line after the progress word: the progress word
/// of the set this pSync array served before the current one, and both
/// sets' key words (`key_words`), for members of the old set that still
/// wait on the array (`stage_reused`).
const PREV_PROGRESS: usize = 1;
const KEY: usize = 2;
const PREV_KEY: usize = 4;
const SLOTS_AT: usize = 64;
/// Minimum length of every pSync array (`SHMEM_*_SYNC_SIZE`): the sync
/// words, up to a line of alignment, the progress line and the slots.
pub const SYNC_SIZE: usize = SYNC_WORDS + (64 + SLOTS_AT + STAGE_SLOTS * STAGE_BYTES) / 8;
const COUNT_WORD: usize = 40;

/// An active set with its pSync array.
pub struct ActiveSet<'a> {
    call: &'a str,
    start: usize,
    stride: usize,
    size: usize,
    my_rank: usize,
    psync: *mut i64,
    /// Symmetric offset of `psync`.
    psync_off: usize,
}

impl State {
    /// Validates an active-set description from a deprecated collective.
    pub fn active_set<'a>(
        &self, call: &'a str, pe_start: i32, log_stride: i32, pe_size: i32, psync: *mut i64,
    ) -> ActiveSet<'a> {
        let valid = pe_start >= 0
            && (0..31).contains(&log_stride)
            && pe_size >= 1
            && (pe_start as i64 + ((pe_size as i64 - 1) << log_stride)) < self.n_pes as i64;
        if !valid {
            fatal(
                call,
                format_args!(
                    "PE_start {pe_start}, logPE_stride {log_stride}, PE_size {pe_size} do not describe PEs of this job ({} PEs)",
                    self.n_pes
                ),
            )
        }
        let (start, stride, size) = (pe_start as usize, 1usize << log_stride, pe_size as usize);
        let d = self.my_pe as isize - start as isize;
        if d < 0 || !(d as usize).is_multiple_of(stride) || d as usize / stride >= size {
            fatal(call, format_args!("this PE is not in the active set (PE_start {pe_start}, logPE_stride {log_stride}, PE_size {pe_size})"))
        }
        let psync_off = self.sym_offset(call, "pSync", psync as *const u8, SYNC_SIZE * 8);
        if !(psync as usize).is_multiple_of(8) {
            fatal(call, format_args!("pSync {psync:p} is not aligned to 8 bytes"))
        }
        ActiveSet { call, start, stride, size, my_rank: d as usize / stride, psync, psync_off }
    }

    fn psync_amo(&self, a: &ActiveSet<'_>, word: usize, op: AmoOp, v: i64, pe: usize) -> i64 {
        // SAFETY: pSync was checked symmetric for SYNC_SIZE words.
        unsafe { self.amo(a.call, a.psync.add(word) as *const i64, op, v, 0, pe as i32) }
    }
}

impl Group for ActiveSet<'_> {
    fn size(&self) -> usize {
        self.size
    }
    fn my_rank(&self) -> usize {
        self.my_rank
    }
    fn world_pe(&self, rank: usize) -> usize {
        self.start + rank * self.stride
    }
    fn sync(&self, st: &State) {
        if self.size > 1 {
            // The data phase's remote transfers complete before the sync.
            st.route.flush(self.call, None);
        }
        let mut dist = 1usize;
        let mut round = 0usize;
        // Our own pSync word k, symmetric and aligned (checked).
        let own = |k: usize| st.route.load_mine(self.call, self.psync_off + 8 * k, 8) as i64;
        while dist < self.size {
            let to = self.world_pe((self.my_rank + dist) % self.size);
            st.psync_amo(self, round, AmoOp::FetchAdd, 1, to);
            let from = self.world_pe((self.my_rank + self.size - dist) % self.size);
            let what = || format!("{} (active-set sync, round {round}: waits for PE {from})", self.call);
            wait_until(&what, || own(round) >= 1);
            // Through the AMO path, not a CPU atomic: under a host
            // OpenSHMEM library the partner's add is the library's atomic
            // (a NIC's, on a network), which CPU atomics on the same word
            // are not atomic with; the partner may already be adding for
            // the next collective.
            st.psync_amo(self, round, AmoOp::FetchAdd, -1, st.my_pe);
            dist <<= 1;
            round += 1;
        }
        std::sync::atomic::fence(Ordering::SeqCst);
    }
    fn publish(&self, st: &State, v: u64) {
        st.psync_amo(self, COUNT_WORD, AmoOp::Set, v as i64, st.my_pe);
    }
    fn read(&self, st: &State, rank: usize) -> u64 {
        st.psync_amo(self, COUNT_WORD, AmoOp::Fetch, 0, self.world_pe(rank)) as u64
    }
    fn done(&self, st: &State) {
        // Back to SHMEM_SYNC_VALUE; everyone has read it (final sync).
        st.psync_amo(self, COUNT_WORD, AmoOp::Set, 0, st.my_pe);
    }
    fn staged(&self, st: &State) -> bool {
        // The slots are read and written by the CPU: every member's pSync
        // mapped here, in memory the host can load from.
        self.size > 1 && st.route.all_shared((0..self.size).map(|r| self.world_pe(r)), self.psync_off)
    }
    fn stage_marks(&self, st: &State) -> Marks {
        let m = self.marks(st);
        Marks {
            epoch: m.epoch.load(Ordering::Relaxed),
            horizon: m.horizon.load(Ordering::Relaxed),
            checked: m.checked.load(Ordering::Relaxed),
        }
    }
    fn stage_set_marks(&self, st: &State, m: Marks) {
        let w = self.marks(st);
        w.epoch.store(m.epoch, Ordering::Relaxed);
        w.horizon.store(m.horizon, Ordering::Relaxed);
        w.checked.store(m.checked, Ordering::Relaxed);
    }
    fn stage_slot<'s>(&self, st: &'s State, rank: usize, epoch: u64) -> &'s StageSlot {
        let off = self.stage_area() + SLOTS_AT + (epoch % STAGE_SLOTS as u64) as usize * STAGE_BYTES;
        // SAFETY: a line-aligned slot inside the pSync array (SYNC_SIZE
        // covers the stage area), used as a stage slot by every member.
        unsafe { st.route.shared(self.world_pe(rank), off) }.expect("staged: every member's pSync is mapped")
    }
    fn stage_progress<'s>(&self, st: &'s State, rank: usize) -> &'s AtomicU64 {
        &self.progress_line(st, rank)[0]
    }
    fn stage_progress_value(&self, st: &State, rank: usize) -> u64 {
        // A member that has moved on to another set keeps its last
        // progress in this set beside the word (see `stage_switch`).
        let line = self.progress_line(st, rank);
        let pw = line[0].load(Ordering::Acquire);
        let tag = self.stage_tag() as u64;
        if pw >> 32 == tag {
            return pw;
        }
        let pv = line[PREV_PROGRESS].load(Ordering::Relaxed);
        if pv >> 32 == tag {
            pv
        } else {
            pw
        }
    }
    fn stage_switch(&self, st: &State) {
        let line = self.progress_line(st, self.my_rank);
        let pw = line[0].load(Ordering::Relaxed);
        if pw >> 32 != self.stage_tag() as u64 {
            // This pSync array served another set last (or none since it
            // was initialized): keep that set's progress and name, for its
            // members that may still be waiting (`stage_reused`). The
            // progress store that follows releases these words.
            line[PREV_PROGRESS].store(pw, Ordering::Relaxed);
            line[PREV_KEY].store(line[KEY].load(Ordering::Relaxed), Ordering::Relaxed);
            line[PREV_KEY + 1].store(line[KEY + 1].load(Ordering::Relaxed), Ordering::Relaxed);
            let k = self.key_words();
            line[KEY].store(k[0], Ordering::Relaxed);
            line[KEY + 1].store(k[1], Ordering::Relaxed);
        }
    }
    fn stage_reused(&self, st: &State, call: &str, rank: usize, epoch: u64, not_there: &dyn Fn() -> bool) {
        let line = self.progress_line(st, rank);
        let pw = line[0].load(Ordering::Acquire);
        let tag = self.stage_tag() as u64;
        let e = epoch as u32;
        // The member had entered this call (so published its slot) and has
        // since served another set with this pSync array (its word names
        // that set now), or served one and came back (its word shows a
        // later call of this set, which it cannot have entered while this
        // slot waits for a reader): the other set overwrote the slot.
        let other = if pw >> 32 != tag {
            let pv = line[PREV_PROGRESS].load(Ordering::Relaxed);
            (pv >> 32 == tag && (pv as u32).wrapping_sub(e) as i32 >= 0).then_some(KEY)
        } else {
            ((pw as u32).wrapping_sub(e) as i32 > 0).then_some(PREV_KEY)
        };
        // The progress load acquired the member's publication of this
        // call's slot: a slot that still does not show it was overwritten.
        let Some(k) = other else { return };
        if !not_there() {
            return;
        }
        let set = |k0: u64, k1: u64| {
            format!("PE_start {}, logPE_stride {}, PE_size {}", k0 >> 32, k1.max(1).trailing_zeros(), k0 & 0xffff_ffff)
        };
        let msg = format!(
            "PE {} reused the pSync array {:p} for another active set ({}) while this PE's call on active set ({}) \
             still needed it; a pSync array may serve another active set only after every PE of the old set has \
             finished its calls on it (a barrier over the old set)",
            self.world_pe(rank),
            self.psync,
            set(line[k].load(Ordering::Relaxed), line[k + 1].load(Ordering::Relaxed)),
            set(self.key_words()[0], self.key_words()[1]),
        );
        if crate::error::claim_report() {
            fatal(call, format_args!("{msg}"))
        }
        crate::error::abort_job(crate::error::ERROR_EXIT_CODE)
    }
    fn stage_tag(&self) -> u32 {
        let set = (self.start as u64).wrapping_mul(0x9e37_79b9) ^ (self.stride as u64) << 20 ^ (self.size as u64) << 40;
        (set ^ set >> 32) as u32 | 1
    }
    fn stage_words(&self, sig: Sig, epoch: u64) -> [u64; 4] {
        // The hash covers the active set: a slot another set left in this
        // pSync never matches.
        let mut words = sig.words(epoch);
        words[0] ^= self.stage_tag() as u64;
        words
    }
}

impl ActiveSet<'_> {
    /// Symmetric offset of the stage area: the first line boundary after
    /// the sync words (segments are page aligned on every PE, so offsets
    /// and addresses agree on it).
    fn stage_area(&self) -> usize {
        (self.psync_off + STAGE_AREA).next_multiple_of(64)
    }

    /// Member `rank`'s progress line in its pSync array: the progress
    /// word, then [`PREV_PROGRESS`], [`KEY`] and [`PREV_KEY`].
    fn progress_line<'s>(&self, st: &'s State, rank: usize) -> &'s [AtomicU64; 8] {
        let off = self.stage_area() + PROGRESS_AT;
        // SAFETY: the progress word starts a line of 8 words of the mapped
        // pSync array (SYNC_SIZE covers it), used as words by every member.
        unsafe { st.route.shared(self.world_pe(rank), off) }.expect("staged: every member's pSync is mapped")
    }

    /// The active set as two words (start and size, stride).
    fn key_words(&self) -> [u64; 2] {
        [(self.start as u64) << 32 | self.size as u64, self.stride as u64]
    }

    /// This PE's bookkeeping of staged calls on (this pSync, this active
    /// set). It lives in process memory, never in the pSync array: every
    /// member makes every staged call on the pair, so the epochs agree
    /// whatever the program does to the array in between (re-initializing
    /// it, or freeing it and allocating another at the same offset, only
    /// makes the old headers and progress words read as not there yet).
    fn marks(&self, st: &State) -> &'static SetMarks {
        let key = (self.psync_off, (self.key_words()[0], self.key_words()[1]));
        let state = st as *const State as usize;
        // Most calls repeat the pair of the thread's previous call.
        if let Some(m) = LAST.with(|l| l.get().filter(|(s, k, _)| *s == state && *k == key).map(|(_, _, m)| m)) {
            return m;
        }
        let mut map = st.set_marks.lock().unwrap_or_else(|e| e.into_inner());
        // One small record per (pSync, active set) pair the program uses,
        // kept for the life of the process (a program uses a few).
        let m: &'static SetMarks = map.entry(key).or_insert_with(|| Box::leak(Box::default()));
        LAST.with(|l| l.set(Some((state, key, m))));
        m
    }
}

thread_local! {
    /// The (State, pSync/active set, marks) of this thread's last staged
    /// active-set call.
    static LAST: std::cell::Cell<Option<(usize, SetKey, &'static SetMarks)>> = const { std::cell::Cell::new(None) };
}
