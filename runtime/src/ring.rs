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
//! The layout is `#[repr(C)]` and mirrored in the device library's
//! generated `device_state.h`, with size/offset asserts on both sides.

use crate::core::State;
use crate::transport::AmoOp;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

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
    _pad: u64,
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

/// `(field, offset)` of the ring layout, for the device header asserts.
pub fn layout() -> Vec<(&'static str, usize)> {
    use std::mem::offset_of;
    vec![
        ("completions", offset_of!(Ring, completions)),
        ("completion_size", std::mem::size_of::<RingCompletion>()),
        ("next_send", offset_of!(Ring, next_send)),
        ("completed", offset_of!(Ring, completed)),
        ("size", std::mem::size_of::<Ring>()),
    ]
}

/// The proxy thread serving one PE's ring.
pub struct Proxy {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// A new, empty ring.
pub fn new_ring() -> &'static Ring {
    let layout = std::alloc::Layout::new::<Ring>();
    // SAFETY: Ring is atomics only: all-zero is a valid (empty) ring. It is
    // leaked on purpose: device programs may hold its address until exit.
    unsafe { &*(std::alloc::alloc_zeroed(layout) as *const Ring) }
}

impl Proxy {
    /// Starts the proxy thread serving `st`'s ring.
    pub fn start(st: &'static State) -> Proxy {
        let ring = st.ring();
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("ishmem-proxy".into())
            .spawn(move || serve(st, ring, &s2))
            .expect("spawn the proxy thread");
        Proxy { stop, thread: Some(thread) }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

thread_local! {
    /// Set on the proxy thread: it must never wait for its own ring.
    static ON_PROXY_THREAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Waits until the proxy thread has served every request posted to `ring`
/// so far. Host-side quiet and team syncs call it so that requests a kernel
/// posted (e.g. a sync flag store, which the device posts without waiting)
/// are performed before the host's own later stores to the same words: a
/// device sync's late flag store of epoch `e` could otherwise overwrite the
/// host's `e + 1` and hang the next sync. Returns at once when nothing is
/// outstanding, and on the proxy thread itself.
pub fn drain(ring: &Ring) {
    let posted = ring.next_send.load(Ordering::Acquire);
    if ring.completed.load(Ordering::Acquire) >= posted || ON_PROXY_THREAD.with(|c| c.get()) {
        return;
    }
    crate::wait::wait_until(|| ring.completed.load(Ordering::Acquire) >= posted);
}

fn serve(st: &State, ring: &Ring, stop: &AtomicBool) {
    let call = "ishmem device request";
    ON_PROXY_THREAD.with(|c| c.set(true));
    let mut next: u64 = 0;
    let mut idle: u32 = 0;
    loop {
        let slot = &ring.msgs[(next % RING_SLOTS as u64) as usize];
        if slot.sequence.load(Ordering::Acquire) != next + 1 {
            if stop.load(Ordering::Acquire) {
                return;
            }
            // Spin (without giving the core away) for about a millisecond:
            // device work-items usually spin on their completions, and a
            // yield can lose the core to them for a whole time slice. Then
            // back off so an idle device costs nothing.
            idle = idle.saturating_add(1);
            if idle < 1 << 16 {
                std::hint::spin_loop();
            } else if idle < (1 << 16) + 64 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(std::time::Duration::from_micros(50));
            }
            continue;
        }
        idle = 0;
        let pe = slot.pe.load(Ordering::Relaxed) as i32;
        let dest = slot.dest.load(Ordering::Relaxed) as *mut u8;
        let source = slot.source.load(Ordering::Relaxed) as *const u8;
        let value = slot.value.load(Ordering::Relaxed);
        let cond = slot.cond.load(Ordering::Relaxed);
        let amo = slot.amo.load(Ordering::Relaxed);
        let amo_op = amo_op(amo & 0xff);
        let size = (amo >> 8) as usize;
        // SAFETY: the device passed symmetric destinations and its own
        // buffers; the core checks symmetric ranges and PEs like any call.
        let result = unsafe {
            match slot.op.load(Ordering::Relaxed) {
                RING_PUT => {
                    st.put(call, dest, source, value as usize, pe);
                    0
                }
                RING_GET => {
                    st.get(call, dest, source, value as usize, pe);
                    0
                }
                RING_P => {
                    st.put(call, dest, (&value as *const u64).cast(), (cond as usize).min(8), pe);
                    0
                }
                RING_G => {
                    let mut v = 0u64;
                    st.get(call, (&mut v as *mut u64).cast(), source, (value as usize).min(8), pe);
                    v
                }
                RING_AMO if size == 1 => st.amo(call, dest as *const u8, amo_op, value as u8, cond as u8, pe) as u64,
                RING_AMO if size == 4 => st.amo(call, dest as *const u32, amo_op, value as u32, cond as u32, pe) as u64,
                RING_AMO => st.amo(call, dest as *const u64, amo_op, value, cond, pe),
                RING_PUT_SIGNAL => {
                    let sig_op = if amo_op == AmoOp::Set { crate::amo::SIGNAL_SET } else { crate::amo::SIGNAL_ADD };
                    st.put_signal(
                        call,
                        dest,
                        source,
                        value as usize,
                        slot.sig.load(Ordering::Relaxed) as *mut u64,
                        cond,
                        sig_op,
                        pe,
                    );
                    0
                }
                RING_CTRL_SET => {
                    st.device_ctrl_set(call, pe, dest as usize, value);
                    0
                }
                RING_CTRL_GET => st.device_ctrl_get(call, pe, source as usize),
                RING_ERROR => device_error(st, value, cond as u32, dest as u64, pe),
                op => crate::error::fatal(call, format_args!("unknown device request {op} (corrupt ring message)")),
            }
        };
        let c = &ring.completions[(next % RING_SLOTS as u64) as usize];
        c.value.store(result, Ordering::Relaxed);
        c.sequence.store(next + 1, Ordering::Release);
        if slot.flags.load(Ordering::Relaxed) & RING_NBI != 0 {
            c.ack.store(next + 1, Ordering::Release);
        }
        ring.completed.store(next + 1, Ordering::Release);
        next += 1;
    }
}

/// Aborts the job for a failed device-side argument check.
fn device_error(st: &State, kind: u64, op: u32, bad: u64, pe: i32) -> ! {
    let call = match op {
        RING_PUT => "ishmem device put",
        RING_GET => "ishmem device get",
        RING_AMO => "ishmem device atomic",
        RING_PUT_SIGNAL => "ishmem device put_signal",
        RING_G => "ishmem device g",
        RING_P => "ishmem device p",
        _ => "ishmem device call",
    };
    let n = st.n_pes;
    let (base, size) = (st.heap_base() as u64, st.heap_size() as u64);
    match kind {
        DEVICE_BAD_PE => crate::error::fatal(call, format_args!("target PE {pe} is out of range [0, {n})")),
        _ => crate::error::fatal(
            call,
            format_args!("address {bad:#x} (to PE {pe}) is not in the symmetric heap [{base:#x}, {:#x})", base + size),
        ),
    }
}

fn amo_op(code: u32) -> AmoOp {
    match code {
        0 => AmoOp::Fetch,
        1 => AmoOp::Set,
        2 => AmoOp::Swap,
        3 => AmoOp::CompareSwap,
        4 => AmoOp::FetchAdd,
        5 => AmoOp::FetchAnd,
        6 => AmoOp::FetchOr,
        _ => AmoOp::FetchXor,
    }
}
