//! The reverse-offload ring: device code asks the host to perform an
//! operation (for PEs it cannot reach by load/store, or for every operation
//! in forced-ring mode) with fixed 64-byte messages, and a host proxy thread
//! serves them (seed paper, §"reverse offload"). Device and host talk with
//! plain stores and polls; no message pays a fence of its own.
//!
//! * **Tickets.** A device work-item claims ticket `t` with one relaxed
//!   atomic on a counter in the memory the device reaches fastest (quiet
//!   word 0: GPU memory on GPUs), one ticket per work-item (with a claim
//!   by one lane for its warp, claimed tickets' messages never came on
//!   H200s, for reasons not understood: target_cuda.h says how it was
//!   seen). Nothing in host memory counts the claims: a system-scope
//!   atomic on host memory in every request (or once a warp) held an
//!   H200's ring to 13-16 M requests/s (`tests/cuda/ring_floor.cu`'s
//!   "costs" rows); the host learns of a request from its message alone.
//! * **Flow control, off the critical path.** Slot `t % RING_SLOTS` may
//!   take ticket `t`'s message once the server has read ticket
//!   `t - RING_SLOTS`'s: `completed` is past it, or the slot's own `taken`
//!   mark says so (the server marks each message it reads). The device
//!   keeps a hint of `completed` (quiet word 3: refreshed by a waiter whose
//!   ticket is a multiple of `RING_SLOTS / 8` when its completion comes,
//!   and by every read of host memory) and reads host memory only when the
//!   hint says the slot may not be free yet: `completed` once, then, when a whole
//!   lap is outstanding, a pause as long as the server takes for the
//!   requests ahead (32 ns each, at most 262 us) and polls of its own
//!   slot's mark (thousands of senders polling one word, `completed`, held
//!   32 x 1024 threads posting AMOs to 0.09 M requests/s on an H200). A
//!   sender holding a ticket so waits for the server alone, never for
//!   another work-item: the server waits for each ticket's message in
//!   turn, and a sender that waited for a slow waiter of the previous lap
//!   (the slot's ack, before 2026-11-29) held every later request up behind
//!   its ticket (an H200's 32 x 1024 threads spent a third of their time
//!   so). The slot's completion is the server's to guard: it writes ticket
//!   `t`'s only once `t - RING_SLOTS`'s was read (acked), and a waiter acks
//!   in the poll that sees its completion.
//! * **Messages are validated, not fenced.** The work-item stores the
//!   fields, a check word ([`msg_check`]: a hash of every field and the
//!   ticket) and `sequence = t + 1`, in any order the hardware likes. The
//!   server takes the message once the sequence is there and the check
//!   agrees with the fields it read; until then some stores are still in
//!   flight and it reads again. A message whose check never agrees (a
//!   torn or corrupt message) is reported after a second, never executed.
//!   A request whose message has not come in [`LOST_LIMIT`] (or the
//!   deadlock timeout, if longer; not at all when that is 0) while a later
//!   request's has (so it was claimed; the server looks 64 tickets ahead)
//!   is reported as lost and ends the job: its waiters, and every request
//!   after it, could never be served. A lost request with no later one
//!   written is not reported (its own sender is the only one waiting).
//!   Requests whose data the host reads from device memory (puts from
//!   global memory) and team-sync flag stores are preceded by one release
//!   fence; the rest carry everything in the message.
//! * **Completions** are per slot and come in any order: `(value, check =
//!   [`cpl_check`]`(value, t + 1))`, 16 bytes packed four to a cache line
//!   (a warp's waiters poll neighbouring slots: 8 lines for 32 waiters,
//!   where a line a slot made it 32, and the raw ring with 32 x 1024
//!   waiters three times slower), polled by the waiting work-item as one 16-byte
//!   load on CUDA (on OpenCL, the check then the value, two volatile
//!   loads) and accepted when the check agrees (no acquire; a value older
//!   than its check never agrees; a get into device memory and quiet add
//!   an acquire fence). The waiter then stores `acks[slot] = t + 1` (a
//!   packed array of its own); the server acks nbi requests itself.
//! * The server reads slots in ticket order, performs each request through
//!   the runtime core (so every check and every transport applies), writes
//!   the completion (once the slot's previous one was acked) and bumps
//!   `completed`.
//! * Device quiet returns at once when quiet word 1 (a number known
//!   complete) says nothing is outstanding (no host-memory read); else it
//!   sends one more request, [`RING_QUIET`], and waits for it: the server
//!   takes tickets in order and performs the host's quiet for it, so what
//!   the proxy posted for earlier requests to PEs of other nodes (puts,
//!   non-fetching AMOs) is complete there too, as a third PE may rely on.
//! * Device fence, while anything is outstanding and some PE is reached
//!   through the ring, sends [`RING_FENCE`] without waiting: the server
//!   performs the host's fence for it between the requests before and
//!   after (non-fetching AMOs to such PEs are posted, not waited for, so
//!   this is what orders them before a later put or flag).
//! * Host quiet and host team syncs first wait until the proxy has served
//!   every request whose message is in the ring ([`drain`]), so the
//!   requests of a kernel that has ended are ordered before the host's
//!   later operations.
//!
//! This module is the ring's layout and message decoding (plain types);
//! the thread that serves it belongs to the device (`device/ring_server.rs`)
//! and performs each request through a [`crate::device::RingHandler`].
//! The layout is `#[repr(C)]` and exported to the device libraries'
//! generated headers, every field offset with a static assert on both
//! sides ([`layout`]), and the check functions are written once more in
//! `device-lib/src/core.h` (`ishmemi_ring_check`), tested against these.

use crate::types::AmoOp;
use std::sync::atomic::{AtomicU64, Ordering};

/// Slots of the ring: as many requests as may be outstanding before a
/// sender waits for its slot. 32768 (3 MiB of host memory a PE): on an
/// H200, 32 x 1024 threads sending 10 requests each, one at a time, went
/// from 35 to 103 M requests/s on the raw ring with the library's costs
/// (4096 slots kept most of them waiting for theirs); a burst of one
/// request a thread went from 74 to 59 M/s (its requests land in cold
/// lines of host memory) (`tests/cuda/ring_floor.cu`, 2026-11-29).
pub const RING_SLOTS: usize = 32768;

/// Ring operation codes.
pub const RING_PUT: u32 = 1;
pub const RING_GET: u32 = 2;
/// AMO on `size` bytes (4 or 8): `op` in `amo_op`, operand `value`,
/// compare value `cond`; the old value is returned.
pub const RING_AMO: u32 = 3;
/// put then signal AMO (`amo_op` Set or FetchAdd with `signal` on `sig`).
pub const RING_PUT_SIGNAL: u32 = 4;
/// Team-sync flag store to a PE the device cannot reach: `dest` is the
/// flag's address in this node's control segment, `value` the epoch, `pe`
/// the flag's owner. This PE's earlier operations complete first.
pub const RING_CTRL_SET: u32 = 7;
/// Team-sync scratch read from a PE the device cannot reach: `source` is
/// the word's address in this node's control segment, `pe` its owner; the
/// value is returned in the completion.
pub const RING_CTRL_GET: u32 = 8;
/// A device-side check failed: `value` says what. `DEVICE_BAD_PE` or
/// `DEVICE_BAD_ADDR`: `cond` the ring opcode of the operation, `dest` the
/// bad address, `pe` the target PE. `DEVICE_COLL_MISMATCH`: a member of a
/// team made another collective call than this PE's (`core.h`:
/// `ishmemi_sig_mismatch`): `dest` this PE's call signature, `source` the
/// team slot, `cond` the other's 16-bit signature, `pe` that member.
/// `DEVICE_CTRL_MISMATCH`: a team sync through the control segment found
/// that its predecessor in the team published another call for the sync
/// (`core.h`: `ishmemi_sync_team`): `dest` the sync's epoch, `source` the team
/// slot; the members' calls are in their records (`TeamCtrl::sig`).
/// The proxy aborts the job with the message; the work-item never resumes.
pub const RING_ERROR: u32 = 9;
/// `RING_ERROR` kinds.
pub const DEVICE_BAD_PE: u64 = 1;
pub const DEVICE_BAD_ADDR: u64 = 2;
pub const DEVICE_COLL_MISMATCH: u64 = 3;
pub const DEVICE_CTRL_MISMATCH: u64 = 4;

/// One request: 64 bytes. `meta` packs the target PE (bits 0-31), the
/// opcode (32-39), the AMO (`amo_op | size << 8`, bits 40-55) and the
/// flags (56-63); `check` is [`msg_check`] of the other fields.
#[repr(C, align(64))]
pub struct RingMsg {
    pub dest: AtomicU64,
    pub source: AtomicU64,
    /// Bytes to move (put/get), or the AMO operand.
    pub value: AtomicU64,
    /// AMO compare value, or the signal value.
    pub cond: AtomicU64,
    /// Signal address (put_signal).
    pub sig: AtomicU64,
    pub meta: AtomicU64,
    pub check: AtomicU64,
    /// Ticket + 1.
    pub sequence: AtomicU64,
}

/// One completion, four to a cache line (a GPU warp's waiters poll
/// neighbouring slots, so their reads coalesce): `value` the result,
/// `check` = [`cpl_check`]`(value, ticket + 1)` once done. The slot's ack
/// is in [`Ring::acks`].
#[repr(C, align(16))]
pub struct RingCompletion {
    pub value: AtomicU64,
    pub check: AtomicU64,
}

/// Request flag: nobody waits for the completion.
pub const RING_NBI: u32 = 1;
/// Get of up to 8 bytes returned in the completion value (the device's
/// private memory is not the host's to write on every device).
pub const RING_G: u32 = 5;
/// Put of up to 8 bytes carried in the message (`value` = the bits, `cond`
/// = the size).
pub const RING_P: u32 = 6;
/// Nothing to perform: a round trip that echoes `value` (benchmarks and
/// tests of the ring itself).
pub const RING_NOP: u32 = 10;
/// The host's quiet, after every earlier request: what the proxy posted
/// for them to PEs of other nodes (puts to served regions and windows,
/// non-fetching AMOs) is complete there when this one completes.
pub const RING_QUIET: u32 = 11;
/// The host's fence, after every earlier request and before every later
/// one (sent nbi by a device fence while anything is outstanding and some
/// PE is not reached by loads and stores): what the proxy issued for the
/// earlier requests to a PE (puts through a window, posted AMOs as
/// messages) is delivered there before what it issues for the later ones.
pub const RING_FENCE: u32 = 12;

#[repr(C, align(64))]
pub struct Ring {
    pub msgs: [RingMsg; RING_SLOTS],
    pub completions: [RingCompletion; RING_SLOTS],
    /// `acks[slot]` = ticket + 1 once that ticket's result has been read
    /// (by the waiting work-item, or by the server for nbi requests): the
    /// server may write the slot's next completion.
    pub acks: [AtomicU64; RING_SLOTS],
    /// `taken[slot]` = ticket + 1 once the server has read that ticket's
    /// message: the slot may take the next lap's (each sender polls its
    /// own slot's word, not one all senders share).
    pub taken: [AtomicU64; RING_SLOTS],
    /// Requests completed (server): every ticket below it is served, and
    /// its slot may take the next lap's message.
    pub completed: AtomicU64,
    _pad2: [u64; 7],
    /// Device waits that lasted (`core.h`: `ISHMEMI_WAIT_LONG` polls of a
    /// condition that did not hold): how many work-items wait so (each adds
    /// 1 when its wait has lasted and takes it back when the wait ends)...
    pub wait_count: AtomicU64,
    /// ... a count of such starts and ends (it changes whenever one does)...
    pub wait_epoch: AtomicU64,
    /// ... and what the latest to start waits for: a `device::WAIT_*` code
    /// (bits 0-7), the element's `ELEM_*` code (8-15), the comparison
    /// (16-23), the address and the value compared with (for the `_any`
    /// and `_some` forms, the number of elements); written without order,
    /// a hint for the report.
    pub wait_what: AtomicU64,
    pub wait_addr: AtomicU64,
    pub wait_value: AtomicU64,
    _pad4: [u64; 3],
}

const _: () = {
    assert!(std::mem::size_of::<RingMsg>() == 64);
    assert!(std::mem::size_of::<RingCompletion>() == 16);
    assert!(std::mem::offset_of!(RingMsg, sequence) == 56);
};

/// The multiplier of the check hashes (odd: multiplying by it is a
/// bijection on u64).
const MIX: u64 = 0x9e37_79b9_7f4a_7c15;

#[inline]
fn mix(h: u64, w: u64) -> u64 {
    let x = (h ^ w).wrapping_mul(MIX);
    x ^ (x >> 32)
}

/// The check word of a message with these fields for ticket `t` (its
/// `sequence` is `t + 1`). Every step is a bijection in the new word, so a
/// message with any one field stale (a store still in flight) never
/// checks; `core.h` computes the same.
#[inline]
pub fn msg_check(dest: u64, source: u64, value: u64, cond: u64, sig: u64, meta: u64, sequence: u64) -> u64 {
    let mut h = mix(MIX, sequence);
    for w in [dest, source, value, cond, sig, meta] {
        h = mix(h, w);
    }
    h
}

/// The check word of a completion of `value` for the ticket whose
/// sequence is `sequence`.
#[inline]
pub fn cpl_check(value: u64, sequence: u64) -> u64 {
    mix(mix(MIX, sequence), value)
}

/// Packs the `meta` word of a message.
pub fn meta(pe: u32, op: u32, amo: u32, flags: u32) -> u64 {
    pe as u64 | (op as u64 & 0xff) << 32 | (amo as u64 & 0xffff) << 40 | (flags as u64 & 0xff) << 56
}

/// The fields of [`RingMsg`] and [`RingCompletion`] with their kinds, in
/// order: the device libraries' declarations of the structs are generated
/// from these lists (and asserted against [`layout`]).
pub const MSG_FIELDS: &[(&str, &str)] = &[
    ("dest", "u64"),
    ("source", "u64"),
    ("value", "u64"),
    ("cond", "u64"),
    ("sig", "u64"),
    ("meta", "u64"),
    ("check", "u64"),
    ("sequence", "u64"),
];
pub const COMPLETION_FIELDS: &[(&str, &str)] = &[("value", "u64"), ("check", "u64")];

/// `(name, offset)` of every ring field the device libraries use: the
/// generator writes them into the device headers with static asserts, and
/// device code addresses fields only through these names.
pub fn layout() -> Vec<(&'static str, usize)> {
    use std::mem::{offset_of, size_of};
    vec![
        ("msgs", offset_of!(Ring, msgs)),
        ("completions", offset_of!(Ring, completions)),
        ("completion_size", size_of::<RingCompletion>()),
        ("acks", offset_of!(Ring, acks)),
        ("taken", offset_of!(Ring, taken)),
        ("completed", offset_of!(Ring, completed)),
        ("wait_count", offset_of!(Ring, wait_count)),
        ("wait_epoch", offset_of!(Ring, wait_epoch)),
        ("wait_what", offset_of!(Ring, wait_what)),
        ("wait_addr", offset_of!(Ring, wait_addr)),
        ("wait_value", offset_of!(Ring, wait_value)),
        ("size", size_of::<Ring>()),
        ("msg_size", size_of::<RingMsg>()),
        ("msg_dest", offset_of!(RingMsg, dest)),
        ("msg_source", offset_of!(RingMsg, source)),
        ("msg_value", offset_of!(RingMsg, value)),
        ("msg_cond", offset_of!(RingMsg, cond)),
        ("msg_sig", offset_of!(RingMsg, sig)),
        ("msg_meta", offset_of!(RingMsg, meta)),
        ("msg_check", offset_of!(RingMsg, check)),
        ("msg_sequence", offset_of!(RingMsg, sequence)),
        ("cpl_value", offset_of!(RingCompletion, value)),
        ("cpl_check", offset_of!(RingCompletion, check)),
    ]
}

/// A new, empty ring, in page-aligned memory of its own (a GPU device
/// registers it with its driver). It is never freed: device programs may
/// hold its address until exit.
pub fn new_ring() -> &'static Ring {
    let size = std::mem::size_of::<Ring>();
    // SAFETY: a fresh anonymous mapping: zeroed, page-aligned, ours.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            size,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert!(p != libc::MAP_FAILED, "cannot map the reverse-offload ring: {}", std::io::Error::last_os_error());
    // SAFETY: Ring is atomics only: all-zero is a valid (empty) ring, and
    // the mapping is large enough and aligned (pages are 64-byte aligned).
    unsafe { &*(p as *const Ring) }
}

thread_local! {
    /// Set on the ring's server thread: it must never wait for its own ring.
    static ON_SERVER_THREAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks the calling thread as a ring server (see [`drain`]).
pub fn mark_server_thread() {
    ON_SERVER_THREAD.with(|c| c.set(true));
}

/// The slot of ticket `t`.
#[inline]
pub(crate) fn slot(t: u64) -> usize {
    (t % RING_SLOTS as u64) as usize
}

/// Whether ticket `t`'s message has been written: its slot holds its
/// sequence, or a later lap's (then the server had read `t`'s, and may
/// still be serving it).
#[inline]
pub(crate) fn is_written(ring: &Ring, t: u64) -> bool {
    ring.msgs[slot(t)].sequence.load(Ordering::Acquire) > t
}

/// The tickets whose messages are in the ring now, from `completed` on:
/// the first ticket after them whose message has not been written.
fn written(ring: &Ring) -> u64 {
    let done = ring.completed.load(Ordering::Acquire);
    let mut t = done;
    while t - done < RING_SLOTS as u64 && is_written(ring, t) {
        t += 1;
    }
    t
}

/// Waits until the server has performed every request whose message is in
/// `ring` now. Host-side quiet and team syncs call it so that requests a
/// kernel posted (e.g. a sync flag store, which the device posts without
/// waiting) are performed before the host's own later stores to the same
/// words: a device sync's late flag store of epoch `e` could otherwise
/// overwrite the host's `e + 1` and hang the next sync. A kernel that has
/// ended (the host's ordering with it) has written every message it claimed
/// a ticket for; the requests of one still running are not the host's to
/// order. What this does not cover: a request of an ended kernel whose
/// ticket comes after one a still-running kernel has claimed and not
/// written yet (its sender waiting for its slot in a full ring; nothing in
/// host memory counts claims, as the module's text on tickets says) is
/// served in ticket order after that one, possibly after this returns. Returns at
/// once when nothing is outstanding, and on the server thread itself.
#[inline]
pub fn drain(ring: &Ring) {
    // The slot of the next request to serve: empty (nothing outstanding)
    // is the common case, one load.
    let done = ring.completed.load(Ordering::Acquire);
    if !is_written(ring, done) || ON_SERVER_THREAD.with(|c| c.get()) {
        return;
    }
    let posted = written(ring);
    // What the report says when this wait never ends: how far the server
    // is, and what the slot of the next request holds (a message that
    // never came, one of another lap, or one whose check does not agree).
    let what = || {
        let done = ring.completed.load(Ordering::Acquire);
        let m = &ring.msgs[slot(done)];
        format!(
            "the device's requests (waits for the proxy thread to serve up to request {posted}; it has served \
             {done}, and the slot of request {done} holds sequence {} (the request's is {}))",
            m.sequence.load(Ordering::Acquire),
            done + 1
        )
    };
    crate::wait::wait_until(&what, || ring.completed.load(Ordering::Acquire) >= posted);
}

/// The least time the server waits for the message of a request the
/// device has claimed (a later request's message has come) before
/// reporting it lost (the deadlock timeout, when longer; never when that is
/// 0). A sender writes its message right after its claim, waiting at most
/// for the server to take its slot's previous lap: a request before this
/// one's turn.
pub const LOST_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

/// What a ring message asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RingOp {
    Put,
    Get,
    Amo,
    PutSignal,
    /// Get of up to 8 bytes returned in the completion.
    G,
    /// Put of up to 8 bytes carried in the message.
    P,
    CtrlSet,
    CtrlGet,
    /// A device-side argument check failed.
    Error,
    /// Nothing (a round trip).
    Nop,
    /// The host's quiet (`RING_QUIET`).
    Quiet,
    /// The host's fence (`RING_FENCE`).
    Fence,
}

/// A decoded ring message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub op: RingOp,
    pub pe: i32,
    pub dest: u64,
    pub source: u64,
    pub value: u64,
    pub cond: u64,
    pub sig: u64,
    /// The AMO (for `Amo`; for `PutSignal`, `Set` or `FetchAdd`).
    pub amo: AmoOp,
    /// AMO size in bytes (1, 2, 4 or 8) for `Amo`.
    pub size: usize,
    /// Nobody waits for the completion.
    pub nbi: bool,
}

/// A ring message that does not decode (a corrupt or foreign message).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    UnknownOp(u32),
    BadAmo {
        code: u32,
        size: u32,
    },
    /// The message's sequence arrived but its check word never agreed with
    /// its fields.
    Torn {
        ticket: u64,
    },
    /// Request `later`'s message came (so `ticket` was claimed before it),
    /// but `ticket`'s never did: its slot still holds `found` (the sequence
    /// of an earlier lap, or 0).
    Lost {
        ticket: u64,
        later: u64,
        found: u64,
        after: std::time::Duration,
    },
    /// The completion of `ticket` (served) was not read within `after`, so
    /// the slot cannot take `ticket + RING_SLOTS`'s.
    Unread {
        ticket: u64,
        after: std::time::Duration,
    },
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::UnknownOp(op) => write!(f, "unknown device request {op} (corrupt ring message)"),
            DecodeError::BadAmo { code, size } => {
                write!(f, "device atomic request with operation {code} on {size} bytes (corrupt ring message)")
            }
            DecodeError::Torn { ticket } => write!(
                f,
                "device request {ticket}: its check word did not agree with its fields within a second (torn or corrupt ring message; not executed)"
            ),
            DecodeError::Lost { ticket, later, found, after } => write!(
                f,
                "device request {ticket} was claimed (request {later}'s message came) but its message never came within {} s: its ring slot still holds sequence {found}, not {} (a lost ring request, or a sender stopped, e.g. by a debugger: the kernels waiting for it cannot go on; ISHMEM_DEADLOCK_TIMEOUT sets how long this waits, 0 turns it off)",
                after.as_secs_f64(),
                ticket + 1
            ),
            DecodeError::Unread { ticket, after } => write!(
                f,
                "the completion of device request {ticket} was not read within {} s, so request {}'s cannot take its place: the work-item waiting for it stopped (e.g. in a debugger; ISHMEM_DEADLOCK_TIMEOUT sets how long this waits, 0 turns it off)",
                after.as_secs_f64(),
                ticket + RING_SLOTS as u64
            ),
        }
    }
}

/// The raw fields of one message, as read from the ring (`meta` unpacked).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawMsg {
    pub dest: u64,
    pub source: u64,
    pub value: u64,
    pub cond: u64,
    pub sig: u64,
    pub pe: u32,
    pub op: u32,
    pub amo: u32,
    pub flags: u32,
    /// The check word as read.
    pub check: u64,
}

impl RawMsg {
    /// Decodes the message; every field value is accepted or named in the
    /// error (never a panic: this parses what device code wrote).
    pub fn decode(&self) -> Result<Request, DecodeError> {
        let op = match self.op {
            RING_PUT => RingOp::Put,
            RING_GET => RingOp::Get,
            RING_AMO => RingOp::Amo,
            RING_PUT_SIGNAL => RingOp::PutSignal,
            RING_G => RingOp::G,
            RING_P => RingOp::P,
            RING_CTRL_SET => RingOp::CtrlSet,
            RING_CTRL_GET => RingOp::CtrlGet,
            RING_ERROR => RingOp::Error,
            RING_NOP => RingOp::Nop,
            RING_QUIET => RingOp::Quiet,
            RING_FENCE => RingOp::Fence,
            other => return Err(DecodeError::UnknownOp(other)),
        };
        let code = self.amo & 0xff;
        let size = self.amo >> 8;
        let amo = match (op, AmoOp::from_code(code)) {
            (RingOp::Amo, Some(a)) if matches!(size, 1 | 2 | 4 | 8) => a,
            (RingOp::Amo, _) => return Err(DecodeError::BadAmo { code, size }),
            (RingOp::PutSignal, Some(a @ (AmoOp::Set | AmoOp::FetchAdd))) => a,
            (RingOp::PutSignal, _) => return Err(DecodeError::BadAmo { code, size }),
            _ => AmoOp::Fetch,
        };
        Ok(Request {
            op,
            pe: self.pe as i32,
            dest: self.dest,
            source: self.source,
            value: self.value,
            cond: self.cond,
            sig: self.sig,
            amo,
            size: size as usize,
            nbi: self.flags & RING_NBI != 0,
        })
    }
}

impl RawMsg {
    /// The `meta` word these fields pack into.
    pub fn meta(&self) -> u64 {
        meta(self.pe, self.op, self.amo, self.flags)
    }

    /// Whether the message read is whole for sequence `sequence` (every
    /// store of its sender had landed when it was read).
    pub fn is_whole(&self, sequence: u64) -> bool {
        self.check == msg_check(self.dest, self.source, self.value, self.cond, self.sig, self.meta(), sequence)
    }
}

impl RingMsg {
    /// Reads the fields of a message whose `sequence` the reader has seen
    /// (acquire); [`RawMsg::is_whole`] says whether they belong together.
    pub fn read(&self) -> RawMsg {
        let m = self.meta.load(Ordering::Relaxed);
        RawMsg {
            dest: self.dest.load(Ordering::Relaxed),
            source: self.source.load(Ordering::Relaxed),
            value: self.value.load(Ordering::Relaxed),
            cond: self.cond.load(Ordering::Relaxed),
            sig: self.sig.load(Ordering::Relaxed),
            pe: m as u32,
            op: (m >> 32) as u32 & 0xff,
            amo: (m >> 40) as u32 & 0xffff,
            flags: (m >> 56) as u32,
            check: self.check.load(Ordering::Relaxed),
        }
    }

    /// Writes a whole message for ticket `t` the way a device does (tests
    /// and host-side tools).
    pub fn write(&self, m: &RawMsg, t: u64) {
        let meta = m.meta();
        let seq = t + 1;
        self.dest.store(m.dest, Ordering::Relaxed);
        self.source.store(m.source, Ordering::Relaxed);
        self.value.store(m.value, Ordering::Relaxed);
        self.cond.store(m.cond, Ordering::Relaxed);
        self.sig.store(m.sig, Ordering::Relaxed);
        self.meta.store(meta, Ordering::Relaxed);
        self.check.store(msg_check(m.dest, m.source, m.value, m.cond, m.sig, meta, seq), Ordering::Relaxed);
        self.sequence.store(seq, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_accepts_what_devices_send_and_names_the_rest() {
        let put = RawMsg { op: RING_PUT, pe: 1, value: 64, ..Default::default() };
        assert_eq!(put.decode().unwrap().op, RingOp::Put);
        let amo = RawMsg { op: RING_AMO, amo: AmoOp::FetchAdd as u32 | 8 << 8, ..Default::default() };
        let r = amo.decode().unwrap();
        assert_eq!((r.amo, r.size), (AmoOp::FetchAdd, 8));
        assert_eq!(RawMsg { op: 77, ..Default::default() }.decode(), Err(DecodeError::UnknownOp(77)));
        let past = AmoOp::ALL.len() as u32; // the first code that is no operation
        assert!(RawMsg { op: RING_AMO, amo: past | 8 << 8, ..Default::default() }.decode().is_err());
        assert!(RawMsg { op: RING_AMO, amo: 3 << 8, ..Default::default() }.decode().is_err());
        let sig = RawMsg { op: RING_PUT_SIGNAL, amo: AmoOp::Swap as u32, ..Default::default() };
        assert!(sig.decode().is_err());
    }

    #[test]
    fn a_message_checks_only_whole_and_for_its_own_ticket() {
        let m = RawMsg { op: RING_AMO, pe: 3, dest: 0x1000, value: 7, amo: 4 | 8 << 8, ..Default::default() };
        let meta = m.meta();
        let good = RawMsg { check: msg_check(m.dest, m.source, m.value, m.cond, m.sig, meta, 42), ..m };
        assert!(good.is_whole(42));
        // Another lap's sequence, or any one field stale, fails.
        assert!(!good.is_whole(42 + RING_SLOTS as u64));
        for stale in [
            RawMsg { dest: 0, ..good },
            RawMsg { source: 1, ..good },
            RawMsg { value: 6, ..good },
            RawMsg { cond: 9, ..good },
            RawMsg { sig: 2, ..good },
            RawMsg { pe: 2, ..good },
            RawMsg { op: RING_PUT, ..good },
            RawMsg { amo: 4 | 4 << 8, ..good },
            RawMsg { flags: RING_NBI, ..good },
        ] {
            assert!(!stale.is_whole(42), "{stale:?}");
        }
        // An all-zero slot never checks.
        assert!(!RawMsg::default().is_whole(1));
        assert_ne!(cpl_check(5, 10), cpl_check(5, 10 + RING_SLOTS as u64));
        assert_ne!(cpl_check(5, 10), cpl_check(6, 10));
    }

    #[test]
    fn layout_is_what_the_device_headers_assert() {
        let l = layout();
        let get = |n: &str| l.iter().find(|(k, _)| *k == n).unwrap().1;
        assert_eq!(get("msg_size"), 64);
        assert_eq!(get("msg_sequence"), 56);
        assert_eq!(get("completion_size"), 16);
    }
}
