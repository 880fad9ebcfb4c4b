//! The reverse-offload ring: device code asks the host to perform an
//! operation (for PEs it cannot reach by load/store, or for every operation
//! in forced-ring mode) with fixed 64-byte messages, and a host proxy thread
//! serves them (seed paper, §"reverse offload").
//!
//! * A device work-item claims ticket `t` with one atomic fetch-add on
//!   `next_send`; its message goes to slot `t % RING_SLOTS`.
//! * Flow control, off the critical path: before writing, it waits until
//!   the slot's completion shows the previous lap done (`t - RING_SLOTS +
//!   1`), which is immediate unless the ring is full.
//! * It writes the message fields, then the `sequence` (= t + 1) last with
//!   a release store: the proxy never sees a half-written message.
//! * The proxy thread (one per PE, started with the device) reads slots in
//!   ticket order, performs the operation through the runtime core (so
//!   every check and every transport applies), writes the slot's completion
//!   `(value, sequence = t + 1)` and bumps `completed`.
//! * Blocking device calls wait for their own completion; nbi calls do not;
//!   device quiet waits until `completed` reaches the tickets issued so far,
//!   and returns at once when nothing is outstanding (no round trip).
//! * Host quiet and host team syncs first wait until the proxy has served
//!   every request posted so far ([`drain`]), so a kernel's requests are
//!   ordered before the host's later operations.
//!
//! This module is the ring's layout and message decoding (plain types);
//! the thread that serves it belongs to the device (`device/ring_server.rs`)
//! and performs each request through a [`crate::device::RingHandler`].
//! The layout is `#[repr(C)]` and exported to the device libraries'
//! generated headers, every field offset with a static assert on both
//! sides ([`layout`]).

use crate::types::AmoOp;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

pub const RING_SLOTS: usize = 4096;

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
/// A device-side argument check failed: `value` says what (`DEVICE_BAD_PE`
/// or `DEVICE_BAD_ADDR`), `cond` the ring opcode of the operation, `dest`
/// the bad address, `pe` the target PE.
/// The proxy aborts the job with the message; the work-item never resumes.
pub const RING_ERROR: u32 = 9;
/// `RING_ERROR` kinds.
pub const DEVICE_BAD_PE: u64 = 1;
pub const DEVICE_BAD_ADDR: u64 = 2;

/// One request: 64 bytes, `sequence` written last.
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
    pub pe: AtomicU32,
    pub op: AtomicU32,
    /// AMO opcode (`AmoOp`) and size in bytes: `amo_op | size << 8`.
    pub amo: AtomicU32,
    /// `RING_NBI`: no work-item waits for this request.
    pub flags: AtomicU32,
    /// Ticket + 1, written last.
    pub sequence: AtomicU64,
}

/// One completion: `sequence` = ticket + 1 once done; `value` the result;
/// `ack` = ticket + 1 once the result has been read (by the waiting
/// work-item, or by the proxy for nbi requests), which frees the slot for
/// the next lap.
#[repr(C, align(32))]
pub struct RingCompletion {
    pub value: AtomicU64,
    pub sequence: AtomicU64,
    pub ack: AtomicU64,
    pub pad: u64,
}

/// Request flag: nobody waits for the completion.
pub const RING_NBI: u32 = 1;
/// Get of up to 8 bytes returned in the completion value (the device's
/// private memory is not the host's to write on every device).
pub const RING_G: u32 = 5;
/// Put of up to 8 bytes carried in the message (`value` = the bits, `cond`
/// = the size).
pub const RING_P: u32 = 6;

#[repr(C, align(64))]
pub struct Ring {
    pub msgs: [RingMsg; RING_SLOTS],
    pub completions: [RingCompletion; RING_SLOTS],
    /// Next ticket (device fetch-add).
    pub next_send: AtomicU64,
    _pad: [u64; 7],
    /// Requests completed (proxy).
    pub completed: AtomicU64,
}

const _: () = {
    assert!(std::mem::size_of::<RingMsg>() == 64);
    assert!(std::mem::size_of::<RingCompletion>() == 32);
    assert!(std::mem::offset_of!(RingMsg, sequence) == 56);
};

/// The fields of [`RingMsg`] and [`RingCompletion`] with their kinds, in
/// order: the device libraries' declarations of the structs are generated
/// from these lists (and asserted against [`layout`]).
pub const MSG_FIELDS: &[(&str, &str)] = &[
    ("dest", "u64"),
    ("source", "u64"),
    ("value", "u64"),
    ("cond", "u64"),
    ("sig", "u64"),
    ("pe", "u32"),
    ("op", "u32"),
    ("amo", "u32"),
    ("flags", "u32"),
    ("sequence", "u64"),
];
pub const COMPLETION_FIELDS: &[(&str, &str)] = &[("value", "u64"), ("sequence", "u64"), ("ack", "u64"), ("pad", "u64")];

/// `(name, offset)` of every ring field the device libraries use: the
/// generator writes them into the device headers with static asserts, and
/// device code addresses fields only through these names.
pub fn layout() -> Vec<(&'static str, usize)> {
    use std::mem::{offset_of, size_of};
    vec![
        ("msgs", offset_of!(Ring, msgs)),
        ("completions", offset_of!(Ring, completions)),
        ("completion_size", size_of::<RingCompletion>()),
        ("next_send", offset_of!(Ring, next_send)),
        ("completed", offset_of!(Ring, completed)),
        ("size", size_of::<Ring>()),
        ("msg_size", size_of::<RingMsg>()),
        ("msg_dest", offset_of!(RingMsg, dest)),
        ("msg_source", offset_of!(RingMsg, source)),
        ("msg_value", offset_of!(RingMsg, value)),
        ("msg_cond", offset_of!(RingMsg, cond)),
        ("msg_sig", offset_of!(RingMsg, sig)),
        ("msg_pe", offset_of!(RingMsg, pe)),
        ("msg_op", offset_of!(RingMsg, op)),
        ("msg_amo", offset_of!(RingMsg, amo)),
        ("msg_flags", offset_of!(RingMsg, flags)),
        ("msg_sequence", offset_of!(RingMsg, sequence)),
        ("cpl_value", offset_of!(RingCompletion, value)),
        ("cpl_sequence", offset_of!(RingCompletion, sequence)),
        ("cpl_ack", offset_of!(RingCompletion, ack)),
        ("cpl_pad", offset_of!(RingCompletion, pad)),
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

/// Waits until the server has performed every request posted to `ring` so
/// far. Host-side quiet and team syncs call it so that requests a kernel
/// posted (e.g. a sync flag store, which the device posts without waiting)
/// are performed before the host's own later stores to the same words: a
/// device sync's late flag store of epoch `e` could otherwise overwrite the
/// host's `e + 1` and hang the next sync. Returns at once when nothing is
/// outstanding, and on the server thread itself.
#[inline]
pub fn drain(ring: &Ring) {
    let posted = ring.next_send.load(Ordering::Acquire);
    if ring.completed.load(Ordering::Acquire) >= posted || ON_SERVER_THREAD.with(|c| c.get()) {
        return;
    }
    let what = || format!("the device's requests (waits for the proxy thread to serve up to request {posted})");
    crate::wait::wait_until(&what, || ring.completed.load(Ordering::Acquire) >= posted);
}

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
    BadAmo { code: u32, size: u32 },
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::UnknownOp(op) => write!(f, "unknown device request {op} (corrupt ring message)"),
            DecodeError::BadAmo { code, size } => {
                write!(f, "device atomic request with operation {code} on {size} bytes (corrupt ring message)")
            }
        }
    }
}

/// The raw fields of one message, as read from the ring.
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

impl RingMsg {
    /// Reads the fields of a message whose `sequence` the reader has seen
    /// (acquire) as published.
    pub fn read(&self) -> RawMsg {
        RawMsg {
            dest: self.dest.load(Ordering::Relaxed),
            source: self.source.load(Ordering::Relaxed),
            value: self.value.load(Ordering::Relaxed),
            cond: self.cond.load(Ordering::Relaxed),
            sig: self.sig.load(Ordering::Relaxed),
            pe: self.pe.load(Ordering::Relaxed),
            op: self.op.load(Ordering::Relaxed),
            amo: self.amo.load(Ordering::Relaxed),
            flags: self.flags.load(Ordering::Relaxed),
        }
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
        assert!(RawMsg { op: RING_AMO, amo: 9 | 8 << 8, ..Default::default() }.decode().is_err());
        assert!(RawMsg { op: RING_AMO, amo: 3 << 8, ..Default::default() }.decode().is_err());
        let sig = RawMsg { op: RING_PUT_SIGNAL, amo: AmoOp::Swap as u32, ..Default::default() };
        assert!(sig.decode().is_err());
    }

    #[test]
    fn layout_is_what_the_device_headers_assert() {
        let l = layout();
        let get = |n: &str| l.iter().find(|(k, _)| *k == n).unwrap().1;
        assert_eq!(get("msg_size"), 64);
        assert_eq!(get("msg_sequence"), 56);
        assert_eq!(get("completion_size"), 32);
    }
}
