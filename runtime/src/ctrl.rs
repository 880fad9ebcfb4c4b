//! The job control segment: one shared-memory block per node that holds the
//! state PEs synchronize through after bootstrap (barrier flags, the
//! collective-allocation check slots, the job abort flag).
//!
//! `ishmrun` creates it (a memfd, zero-filled) and hands it to every PE with
//! the heaps; a singleton PE uses private memory. Its layout is a header
//! followed by one cache-line-aligned [`PeCtrl`] per PE.

use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};

/// Value of [`CtrlHeader::magic`] once the launcher has set the segment up:
/// "ishmct" and the layout's version (raise it whenever the segment's
/// layout changes, so an `ishmrun` and a library of different layouts
/// refuse each other instead of misreading the words). 2: `abort_pe`.
pub const CTRL_MAGIC: u64 = 0x6973_686d_6374_0002;

/// Number of dissemination rounds supported: 2^32 PEs.
pub const BARRIER_ROUNDS: usize = 32;

#[repr(C, align(64))]
pub struct CtrlHeader {
    pub magic: AtomicU64,
    pub n_pes: AtomicU32,
    /// PE number + 1 of the PE that claimed the job-abort report, 0 if none.
    pub abort_reporter: AtomicI32,
    /// Exit status the job aborts with; 0 while the job runs.
    pub abort_code: AtomicI32,
    /// PE number + 1 of the first PE that printed an error and aborted
    /// (its message names the cause), 0 if none.
    pub abort_pe: AtomicI32,
    /// PE number + 1 of the PE that called `global_exit`, 0 if none.
    pub exit_caller: AtomicI32,
    /// The status passed to `global_exit`.
    pub exit_status: AtomicI32,
    /// PE number + 1 of the first PE that ended while initialized and not
    /// finalized (recorded by ishmrun), 0 if none.
    pub lost_pe: AtomicI32,
    /// How it ended: its exit status, or minus the signal that killed it.
    pub lost_status: AtomicI32,
    /// PE number + 1 of the first PE that finalized and ended while other
    /// PEs had not started finalizing (recorded by ishmrun), 0 if none.
    pub gone_pe: AtomicI32,
    /// PE number + 1 of the PE that printed the deadlock report (one per
    /// job), 0 if none.
    pub deadlock_reporter: AtomicI32,
    /// PE number + 1 of the PE that printed the warning of a deadlock in
    /// which kernels wait (one per job; it leaves the report that ends the
    /// job to a later deadlock of host waits), 0 if none.
    pub deadlock_warner: AtomicI32,
}

/// Bytes of text in a [`Blocked`] record.
pub const BLOCKED_TEXT: usize = 184;

/// What this PE's threads wait for in the library once a wait has lasted
/// a while (`wait.rs` publishes it; the watchdog's deadlock report and the
/// lost-peer messages read it). A seqlock: `seq` is odd while the record
/// is written.
#[repr(C, align(64))]
pub struct Blocked {
    pub seq: AtomicU64,
    /// `CLOCK_MONOTONIC` milliseconds (+1) at which the published wait
    /// started; 0 while no thread of the PE waits long in the library.
    pub since_ms: AtomicU64,
    /// [`Awaits::word`] of a wait in the library's own team sync or
    /// collective (the host's or the kernels'): the team slot and the PE
    /// it waits for; 0 for any other wait.
    pub awaits: AtomicU64,
    /// The wait as text (a call and its arguments), NUL-padded.
    pub text: [AtomicU64; BLOCKED_TEXT / 8],
}

/// What a wait of the library's own team syncs and collectives (on the
/// host or in kernels) waits for: world PE `pe`'s part of a collective on
/// the team of slot `slot`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Awaits {
    pub slot: usize,
    pub pe: usize,
}

impl Awaits {
    /// As [`Blocked::awaits`] holds it.
    pub fn word(self) -> u64 {
        1 << 63 | (self.slot as u64) << 32 | self.pe as u32 as u64
    }
    pub fn from_word(w: u64) -> Option<Awaits> {
        (w >> 63 == 1).then_some(Awaits { slot: (w >> 32) as u32 as usize & 0x7fff_ffff, pe: w as u32 as usize })
    }
}

/// A consistent snapshot of a [`Blocked`] record.
pub struct BlockedWait {
    /// When the wait started (`CLOCK_MONOTONIC` ms + 1).
    pub since_ms: u64,
    pub text: String,
    pub awaits: Option<Awaits>,
}

impl Blocked {
    /// Publishes `text` as started at `since_ms`, with what it awaits when
    /// it is a wait of the library's own team sync or collective (callers
    /// serialize).
    pub fn publish(&self, since_ms: u64, text: &str, awaits: Option<Awaits>) {
        let s = self.seq.load(Ordering::Relaxed);
        self.seq.store(s | 1, Ordering::Relaxed);
        std::sync::atomic::fence(Ordering::Release);
        let mut bytes = [0u8; BLOCKED_TEXT];
        let n = floor_char_boundary(text, text.len().min(BLOCKED_TEXT));
        bytes[..n].copy_from_slice(&text.as_bytes()[..n]);
        for (w, chunk) in self.text.iter().zip(bytes.chunks_exact(8)) {
            w.store(u64::from_le_bytes(chunk.try_into().expect("8 bytes")), Ordering::Relaxed);
        }
        self.awaits.store(awaits.map_or(0, Awaits::word), Ordering::Relaxed);
        self.since_ms.store(since_ms, Ordering::Relaxed);
        self.seq.store((s | 1) + 1, Ordering::Release);
    }

    /// Marks the PE as no longer waiting (callers serialize).
    pub fn clear(&self) {
        let s = self.seq.load(Ordering::Relaxed);
        self.seq.store(s | 1, Ordering::Relaxed);
        std::sync::atomic::fence(Ordering::Release);
        self.since_ms.store(0, Ordering::Relaxed);
        self.seq.store((s | 1) + 1, Ordering::Release);
    }

    /// A consistent snapshot, or `None` while no thread waits long (or
    /// while the record keeps changing).
    pub fn read(&self) -> Option<BlockedWait> {
        for _ in 0..100 {
            let s = self.seq.load(Ordering::Acquire);
            if s & 1 == 1 {
                std::hint::spin_loop();
                continue;
            }
            let since = self.since_ms.load(Ordering::Relaxed);
            let awaits = Awaits::from_word(self.awaits.load(Ordering::Relaxed));
            let mut bytes = Vec::with_capacity(BLOCKED_TEXT);
            for w in &self.text {
                bytes.extend_from_slice(&w.load(Ordering::Relaxed).to_le_bytes());
            }
            std::sync::atomic::fence(Ordering::Acquire);
            if self.seq.load(Ordering::Relaxed) != s {
                continue;
            }
            if since == 0 {
                return None;
            }
            let end = bytes.iter().position(|&c| c == 0).unwrap_or(bytes.len());
            bytes.truncate(end);
            return Some(BlockedWait { since_ms: since, text: String::from_utf8_lossy(&bytes).into_owned(), awaits });
        }
        None
    }
}

fn floor_char_boundary(s: &str, mut n: usize) -> usize {
    while n > 0 && !s.is_char_boundary(n) {
        n -= 1;
    }
    n
}

/// Arguments of one collective allocation call, published for the
/// cross-PE consistency check.
#[repr(C, align(64))]
pub struct AllocSlot {
    /// Sequence number of the collective allocation call (1, 2, ...).
    pub seq: AtomicU64,
    pub kind: AtomicU64,
    pub arg0: AtomicU64,
    pub arg1: AtomicU64,
    pub result: AtomicU64,
}

/// Number of team slots per PE (world, shared and node take 0, 1 and 2).
pub const TEAM_SLOTS: usize = 64;

/// Synchronization state of one team slot on one PE.
#[repr(C, align(64))]
pub struct TeamCtrl {
    /// Word 0 of the signature (epoch and hash, see `collsig.rs`) of the
    /// call that made each sync, pushed by this PE's predecessor in the team
    /// before its round-0 flag store into `barrier[0]`, by epoch parity. It
    /// shares `barrier[0]`'s cache line, so checking it costs no extra line
    /// transfer.
    pub sig_in: [AtomicU64; 2],
    /// Dissemination barrier: `barrier[k]` holds the latest sync epoch in
    /// which this PE was notified in round `k`. In a team each flag has
    /// exactly one writer, and epochs only grow, so no reset is needed.
    pub barrier: [AtomicU64; BARRIER_ROUNDS],
    /// This PE's latest sync epoch on the slot (written only by the owner;
    /// kept across team lifetimes so a reused slot never goes backwards).
    pub epoch: AtomicU64,
    /// Small per-collective values (collect counts, team-creation bitmaps),
    /// double-buffered by sync-epoch parity.
    pub scratch: [AtomicU64; 2],
    /// The signature of the collective call that made each sync, double-
    /// buffered by sync-epoch parity: word 0 the epoch and a hash, then the
    /// fields (see `collsig.rs`). Written only by the owner; read by the
    /// member that reports a mismatch.
    pub sig: [[AtomicU64; 4]; 2],
    /// Written only by the owner: every member of the team is known to
    /// have completed its calls on this slot with epochs below this one (a
    /// sync, or a collective whose result depends on every member, reached
    /// that epoch). Decides when a stage slot may be rewritten.
    pub horizon: AtomicU64,
    /// Written only by the owner: the epoch up to which it compared its
    /// predecessor's stage headers with its own (see `stage.rs`).
    pub checked: AtomicU64,
}

/// Offset of a record's epoch from its barrier flags (device state's
/// `ctrl_epoch_offset`).
pub const TEAM_EPOCH_FROM_FLAGS: usize =
    std::mem::offset_of!(TeamCtrl, epoch) - std::mem::offset_of!(TeamCtrl, barrier);

// The pushed signature words share barrier[0]'s cache line.
const _: () = assert!(std::mem::offset_of!(TeamCtrl, barrier) + 8 <= 64);

// The device library finds `scratch` right after `epoch` (device state's
// `ctrl_epoch_offset` + 8, + 16): device collect uses it as the host does.
const _: () = assert!(std::mem::offset_of!(TeamCtrl, scratch) == std::mem::offset_of!(TeamCtrl, epoch) + 8);

// Device team syncs through the control segment publish their calls as
// the host's do (`core.h`: `ishmemi_ctrl_sig_publish`): they find `sig`
// right after `scratch` (`ctrl_epoch_offset` + 24) and `sig_in` right
// before the flags.
const _: () = assert!(std::mem::offset_of!(TeamCtrl, sig) == std::mem::offset_of!(TeamCtrl, epoch) + 24);
const _: () = assert!(std::mem::offset_of!(TeamCtrl, sig_in) + 16 == std::mem::offset_of!(TeamCtrl, barrier));

/// Stage slots per team slot: a PE's small collectives publish into slot
/// `epoch % STAGE_SLOTS`, so a PE can run this many calls ahead of the
/// slowest reader before it must synchronize (see `stage.rs`).
pub const STAGE_SLOTS: usize = 8;
/// Bytes of one stage slot: a 32-byte header, then the data.
pub const STAGE_BYTES: usize = 512;
/// Data bytes a stage slot holds.
pub const STAGE_DATA: usize = STAGE_BYTES - 32;
/// Team slots that have stage slots (world, shared, node and the first
/// 13 created teams); collectives on other teams take the synchronizing
/// algorithms.
pub const STAGED_TEAMS: usize = 16;

/// One published small-collective contribution: the header (the call's
/// signature words, word 0 last, with release: its epoch says the slot is
/// ready) and the data. The same layout is used inside pSync arrays.
#[repr(C, align(64))]
pub struct StageSlot {
    /// Signature word 0 (epoch and hash, see `collsig.rs`).
    pub word0: AtomicU64,
    /// Signature words 1..3 (for a mismatch report).
    pub sig: [AtomicU64; 3],
    /// The contribution; written by the owner before `word0`, read by
    /// members after they see `word0`, rewritten only after every reader
    /// is done (the horizon).
    pub data: std::cell::UnsafeCell<[u8; STAGE_DATA]>,
}

const _: () = assert!(std::mem::size_of::<StageSlot>() == STAGE_BYTES);

/// A member's progress word on one staged team: the epoch of the call it
/// has entered, every earlier call complete (see `stage.rs`). On its own
/// cache line: members read it only now and then.
#[repr(C, align(64))]
pub struct Progress(pub AtomicU64);

/// A PE's stage slots, after every PE's [`PeCtrl`] in the segment.
#[repr(C, align(64))]
pub struct PeStage {
    pub teams: [[StageSlot; STAGE_SLOTS]; STAGED_TEAMS],
    pub progress: [Progress; STAGED_TEAMS],
}

/// Per-PE part of the control segment.
#[repr(C, align(64))]
pub struct PeCtrl {
    /// Double-buffered by sequence parity: a PE can only be one collective
    /// allocation ahead of the slowest PE still reading.
    pub alloc: [AllocSlot; 2],
    pub teams: [TeamCtrl; TEAM_SLOTS],
    /// [`LIFE_RUNNING`] from the end of init, [`LIFE_FINALIZING`] from
    /// the start of finalize, then [`LIFE_FINALIZED`] (0 before init).
    /// ishmrun reads it when the PE ends: ending while running leaves the
    /// others waiting for nothing.
    pub life: AtomicU32,
    /// The PE's process id (set at init): under MPI launchers the
    /// watchdogs of the node's other PEs watch it end.
    pub pid: AtomicI32,
    /// What the PE waits for in the library, when a wait lasts.
    pub blocked: Blocked,
    /// What the PE's kernels wait for, when a device wait lasts and nothing
    /// of the PE's device requests changes (its watchdog publishes it from
    /// the ring's wait words; `since` is when they last changed).
    pub device_blocked: Blocked,
    /// While a wait is published: since when (`CLOCK_MONOTONIC` ms) the
    /// PE's other threads have used no CPU (its watchdog samples them);
    /// 0 when they do, or when it does not know yet.
    pub quiet_since_ms: AtomicU64,
}

/// [`PeCtrl::life`]: initialized, not finalized.
pub const LIFE_RUNNING: u32 = 1;
/// [`PeCtrl::life`]: finalized.
pub const LIFE_FINALIZED: u32 = 2;
/// [`PeCtrl::life`]: in `finalize`, before its barrier has completed.
pub const LIFE_FINALIZING: u32 = 3;

/// [`Ctrl::mark_lost`] status of a PE seen to end by another PE (its exit
/// status is its parent's to know).
pub const LOST_UNKNOWN: i32 = i32::MIN;

/// Bytes needed for the control segment of an `n_pes` job.
pub fn ctrl_size(n_pes: usize) -> usize {
    std::mem::size_of::<CtrlHeader>() + n_pes * (std::mem::size_of::<PeCtrl>() + std::mem::size_of::<PeStage>())
}

/// A view of a mapped control segment.
#[derive(Clone, Copy)]
pub struct Ctrl {
    base: *mut u8,
    n_pes: usize,
}

// SAFETY: the segment only holds atomics; it is shared by design.
unsafe impl Send for Ctrl {}
// SAFETY: as above.
unsafe impl Sync for Ctrl {}

impl Ctrl {
    /// # Safety
    /// `base` must point to at least `ctrl_size(n_pes)` bytes of zeroed or
    /// launcher-initialised memory, aligned to 64, that outlives the view.
    pub unsafe fn new(base: *mut u8, n_pes: usize) -> Ctrl {
        Ctrl { base, n_pes }
    }

    /// Address of the segment (offsets into it are what remote PEs use).
    pub fn base(&self) -> *mut u8 {
        self.base
    }

    pub fn header(&self) -> &CtrlHeader {
        // SAFETY: `new`'s contract: the header lies at the base.
        unsafe { &*(self.base as *const CtrlHeader) }
    }

    pub fn pe(&self, pe: usize) -> &PeCtrl {
        debug_assert!(pe < self.n_pes);
        // SAFETY: `new`'s contract covers n_pes PeCtrl records after the header.
        unsafe { &*(self.base.add(std::mem::size_of::<CtrlHeader>()) as *const PeCtrl).add(pe) }
    }

    /// Stage slot `k` of team slot `team` on `pe` (`team < STAGED_TEAMS`).
    pub fn stage(&self, pe: usize, team: usize, k: usize) -> &StageSlot {
        debug_assert!(pe < self.n_pes && team < STAGED_TEAMS && k < STAGE_SLOTS);
        let first = std::mem::size_of::<CtrlHeader>() + self.n_pes * std::mem::size_of::<PeCtrl>();
        // SAFETY: `new`'s contract covers n_pes PeStage records after the
        // PeCtrl records (`ctrl_size`).
        unsafe { &(*(self.base.add(first) as *const PeStage).add(pe)).teams[team][k] }
    }

    /// `pe`'s progress word on team slot `team` (`team < STAGED_TEAMS`).
    pub fn stage_progress(&self, pe: usize, team: usize) -> &AtomicU64 {
        debug_assert!(pe < self.n_pes && team < STAGED_TEAMS);
        let first = std::mem::size_of::<CtrlHeader>() + self.n_pes * std::mem::size_of::<PeCtrl>();
        // SAFETY: as `stage`.
        unsafe { &(*(self.base.add(first) as *const PeStage).add(pe)).progress[team].0 }
    }

    /// Fills in a fresh (zeroed) segment.
    pub fn initialize(&self) {
        let h = self.header();
        h.n_pes.store(self.n_pes as u32, Ordering::Relaxed);
        h.magic.store(CTRL_MAGIC, Ordering::Release);
    }

    pub fn is_valid(&self) -> bool {
        let h = self.header();
        h.magic.load(Ordering::Acquire) == CTRL_MAGIC && h.n_pes.load(Ordering::Relaxed) as usize == self.n_pes
    }

    /// `(PE, status)` of a `global_exit` call, if one was made.
    pub fn global_exit(&self) -> Option<(i32, i32)> {
        let h = self.header();
        match h.exit_caller.load(Ordering::Acquire) {
            0 => None,
            pe => Some((pe - 1, h.exit_status.load(Ordering::Relaxed))),
        }
    }

    /// Records that `pe` ended while running (`status`: exit status, minus
    /// the signal, or [`LOST_UNKNOWN`]). Only the first such PE is kept.
    pub fn mark_lost(&self, pe: usize, status: i32) {
        let h = self.header();
        if h.lost_pe.load(Ordering::Acquire) == 0 {
            h.lost_status.store(status, Ordering::Relaxed);
            let _ = h.lost_pe.compare_exchange(0, pe as i32 + 1, Ordering::AcqRel, Ordering::Acquire);
        }
    }

    /// Records that `pe` finalized and ended (only the first is kept).
    pub fn mark_gone(&self, pe: usize) {
        let _ = self.header().gone_pe.compare_exchange(0, pe as i32 + 1, Ordering::AcqRel, Ordering::Acquire);
    }

    /// A PE that finalized and ended, if one did.
    pub fn gone(&self) -> Option<usize> {
        match self.header().gone_pe.load(Ordering::Acquire) {
            0 => None,
            pe => Some((pe - 1) as usize),
        }
    }

    /// Claims the job's one deadlock report for `pe`.
    pub fn claim_deadlock_report(&self, pe: usize) -> bool {
        self.header().deadlock_reporter.compare_exchange(0, pe as i32 + 1, Ordering::AcqRel, Ordering::Acquire).is_ok()
    }

    /// Claims the job's one warning of a deadlock in which kernels wait
    /// for `pe` (the report that ends the job stays unclaimed).
    pub fn claim_deadlock_warning(&self, pe: usize) -> bool {
        self.header().deadlock_warner.compare_exchange(0, pe as i32 + 1, Ordering::AcqRel, Ordering::Acquire).is_ok()
    }

    /// `(PE, status)` of a PE that ended while running, if one did.
    pub fn lost(&self) -> Option<(usize, i32)> {
        let h = self.header();
        match h.lost_pe.load(Ordering::Acquire) {
            0 => None,
            pe => Some(((pe - 1) as usize, h.lost_status.load(Ordering::Relaxed))),
        }
    }

    /// Address of PE 0's world-team barrier flags (for the device state:
    /// the device library addresses a record from its flags, the epoch at
    /// [`TEAM_EPOCH_FROM_FLAGS`] after them).
    pub fn team_base(&self) -> u64 {
        &self.pe(0).teams[0].barrier as *const _ as u64
    }

    /// The PE that started the job's abort with an error, if one did.
    pub fn aborter(&self) -> Option<usize> {
        match self.header().abort_pe.load(Ordering::Acquire) {
            0 => None,
            pe => Some((pe - 1) as usize),
        }
    }

    /// The exit status the job is aborting with, if any PE started an abort.
    #[inline]
    pub fn abort_code(&self) -> Option<i32> {
        match self.header().abort_code.load(Ordering::Acquire) {
            0 => None,
            c => Some(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout() {
        assert_eq!(std::mem::size_of::<CtrlHeader>(), 64);
        assert_eq!(std::mem::size_of::<AllocSlot>(), 64);
        assert_eq!(std::mem::size_of::<PeCtrl>() % 64, 0);
        assert_eq!(ctrl_size(4), 64 + 4 * (std::mem::size_of::<PeCtrl>() + std::mem::size_of::<PeStage>()));
        assert_eq!(std::mem::size_of::<PeStage>(), STAGED_TEAMS * (STAGE_SLOTS * STAGE_BYTES + 64));
    }
}
