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
//! words, the pSync array holds this member's stage slots, progress word
//! and bookkeeping, tagged with the active set; those words keep their
//! values after a call (a broadcast root returns while others may still
//! read its slot), which does not stop the array from serving any active
//! set next (docs/collectives.md).

use crate::coll::Group;
use crate::collsig::Sig;
use crate::ctrl::{STAGE_BYTES, STAGE_SLOTS};
use crate::error::fatal;
use crate::state::State;
use crate::types::{AmoOp, Marks};
use crate::wait::wait_until;
use std::sync::atomic::{AtomicU64, Ordering};

/// Words of a pSync array the synchronizing algorithms use.
const SYNC_WORDS: usize = 64;
/// After them, from the first cache-line boundary: a line with this
/// member's progress word (read by the others), a line with its own
/// bookkeeping (see `marks_words`), then the stage slots of the small
/// collectives (`stage.rs`). Lines keep what others read apart from what
/// this member writes on every call.
const STAGE_AREA: usize = SYNC_WORDS * 8;
const PROGRESS_AT: usize = 0;
const MARKS_AT: usize = 64;
const SLOTS_AT: usize = 128;
/// Minimum length of every pSync array (`SHMEM_*_SYNC_SIZE`): the sync
/// words, up to a line of alignment, the two lines and the slots.
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
            wait_until(|| own(round) >= 1);
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
        self.size > 1
            && st.route.host_direct()
            && (0..self.size).all(|r| st.route.local(self.world_pe(r), self.psync_off).is_some())
    }
    fn stage_marks(&self, st: &State) -> Marks {
        let w = self.marks_words(st);
        let key = self.key_words();
        if w[0].load(Ordering::Relaxed) == key[0] && w[1].load(Ordering::Relaxed) == key[1] {
            return Marks {
                epoch: w[2].load(Ordering::Relaxed),
                horizon: w[3].load(Ordering::Relaxed),
                checked: w[4].load(Ordering::Relaxed),
            };
        }
        // Another active set used this pSync last: park its marks, bring
        // this set's back (or start it).
        let mut v = st.set_marks.lock().unwrap_or_else(|e| e.into_inner());
        if w[0].load(Ordering::Relaxed) != 0 {
            let parked = (self.psync_off, (w[0].load(Ordering::Relaxed), w[1].load(Ordering::Relaxed)));
            let m = Marks {
                epoch: w[2].load(Ordering::Relaxed),
                horizon: w[3].load(Ordering::Relaxed),
                checked: w[4].load(Ordering::Relaxed),
            };
            match v.iter().position(|(k, _)| *k == parked) {
                Some(i) => v[i].1 = m,
                None => v.push((parked, m)),
            }
        }
        let mine = (self.psync_off, (key[0], key[1]));
        let m = v.iter().find(|(k, _)| *k == mine).map_or(Marks::default(), |(_, m)| *m);
        w[0].store(key[0], Ordering::Relaxed);
        w[1].store(key[1], Ordering::Relaxed);
        self.stage_set_marks(st, m);
        m
    }
    fn stage_set_marks(&self, st: &State, m: Marks) {
        let w = self.marks_words(st);
        w[2].store(m.epoch, Ordering::Relaxed);
        w[3].store(m.horizon, Ordering::Relaxed);
        w[4].store(m.checked, Ordering::Relaxed);
    }
    fn stage_slot(&self, st: &State, rank: usize, epoch: u64) -> *mut u8 {
        let off = self.stage_area() + SLOTS_AT + (epoch % STAGE_SLOTS as u64) as usize * STAGE_BYTES;
        st.route.local(self.world_pe(rank), off).expect("staged: every member's pSync is mapped")
    }
    fn stage_progress(&self, st: &State, rank: usize) -> *const AtomicU64 {
        let off = self.stage_area() + PROGRESS_AT;
        st.route.local(self.world_pe(rank), off).expect("staged: every member's pSync is mapped") as *const AtomicU64
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
    /// The active set, as the two words kept beside its marks (never 0:
    /// the size is at least 2 when staged).
    /// Symmetric offset of the stage area: the first line boundary after
    /// the sync words (segments are page aligned on every PE, so offsets
    /// and addresses agree on it).
    fn stage_area(&self) -> usize {
        (self.psync_off + STAGE_AREA).next_multiple_of(64)
    }

    fn key_words(&self) -> [u64; 2] {
        [(self.start as u64) << 32 | self.size as u64, self.stride as u64]
    }

    /// This PE's marks of the set that used its pSync last: key (2 words),
    /// epoch, horizon, checked (its own line, `MARKS_AT`).
    fn marks_words<'s>(&self, st: &'s State) -> &'s [AtomicU64; 5] {
        let p = st.route.mine(self.stage_area() + MARKS_AT);
        // SAFETY: five aligned words of this PE's pSync (checked for
        // SYNC_SIZE words), written only by this PE.
        unsafe { &*(p as *const [AtomicU64; 5]) }
    }
}
