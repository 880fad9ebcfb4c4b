//! Device requests performed through the core: the [`RingHandler`] the
//! running PE gives its device, so every ring request (RMA, AMO, signal,
//! team-sync control words, device-side argument errors) takes the same
//! checks and the same routing as a host call.

use crate::amo::{SIGNAL_ADD, SIGNAL_SET};
use crate::device::{PassAtomic, RingHandler};
use crate::error::fatal;
use crate::ring::{DecodeError, Request, RingOp};
use crate::state::State;
use crate::types::{Amo, AmoOp};
use std::sync::atomic::AtomicU64;

const CALL: &str = "ishmem device request";

/// Which requests a run through the proxy gathers: `g`s, AMOs waited
/// for, or posted AMOs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum RemoteKind {
    G,
    Amo,
    Posted,
}

/// A run of `g`s or of AMOs through the proxy (indices of requests).
#[derive(Default)]
struct RemoteRun {
    kind: Option<RemoteKind>,
    /// Each request's index and checked offset.
    run: Vec<(usize, usize)>,
}

/// Request `r` (an AMO, or an aligned `g` of at most 8 bytes: a fetch) as
/// the AMO a remote run sends.
fn remote_amo(r: &Request) -> Amo {
    if r.op == RingOp::G {
        Amo::new(AmoOp::Fetch, r.value as usize, 0)
    } else {
        Amo { op: r.amo, size: r.size, operand: r.value, cond: r.cond }
    }
}

/// Whether `size` bytes at `addr` are one naturally aligned 1-, 2-, 4- or
/// 8-byte word (a `g` an AMO can fetch).
fn aligned_word(addr: u64, size: u64) -> bool {
    matches!(size, 1 | 2 | 4 | 8) && addr.is_multiple_of(size)
}

/// An old value of `size` bytes, from the whole word a batch answers
/// (zero-extended already; masked in case a proxy left more).
fn low_bytes(v: u64, size: usize) -> u64 {
    match size {
        1 => v & 0xff,
        2 => v & 0xffff,
        4 => v & 0xffff_ffff,
        _ => v,
    }
}

impl RingHandler for State {
    fn serve(&self, r: &Request) -> u64 {
        let (pe, dest, source) = (r.pe, r.dest as *mut u8, r.source as *const u8);
        // SAFETY: the device passed symmetric destinations and its own
        // buffers; the core checks symmetric ranges and PEs like any call.
        unsafe {
            match r.op {
                RingOp::Put => {
                    self.put(CALL, dest, source, r.value as usize, pe);
                    0
                }
                RingOp::Get => {
                    self.get(CALL, dest, source, r.value as usize, pe);
                    0
                }
                RingOp::P => {
                    self.put(CALL, dest, (&r.value as *const u64).cast(), (r.cond as usize).min(8), pe);
                    0
                }
                RingOp::G => {
                    let mut v = 0u64;
                    self.get(CALL, (&mut v as *mut u64).cast(), source, (r.value as usize).min(8), pe);
                    v
                }
                // A non-fetching AMO the device posted (it does not wait):
                // posted on, completed by a later quiet, ordered by a fence.
                RingOp::Amo if r.nbi => {
                    match r.size {
                        1 => self.amo_post(CALL, dest as *const u8, r.amo, r.value as u8, pe),
                        2 => self.amo_post(CALL, dest as *const u16, r.amo, r.value as u16, pe),
                        4 => self.amo_post(CALL, dest as *const u32, r.amo, r.value as u32, pe),
                        _ => self.amo_post(CALL, dest as *const u64, r.amo, r.value, pe),
                    }
                    0
                }
                RingOp::Amo => match r.size {
                    1 => self.amo(CALL, dest as *const u8, r.amo, r.value as u8, r.cond as u8, pe) as u64,
                    2 => self.amo(CALL, dest as *const u16, r.amo, r.value as u16, r.cond as u16, pe) as u64,
                    4 => self.amo(CALL, dest as *const u32, r.amo, r.value as u32, r.cond as u32, pe) as u64,
                    _ => self.amo(CALL, dest as *const u64, r.amo, r.value, r.cond, pe),
                },
                RingOp::PutSignal => {
                    let sig_op = if r.amo == AmoOp::Set { SIGNAL_SET } else { SIGNAL_ADD };
                    self.put_signal(CALL, dest, source, r.value as usize, r.sig as *mut u64, r.cond, sig_op, pe);
                    0
                }
                RingOp::CtrlSet => {
                    self.device_ctrl_set(pe, r.dest as usize, r.value);
                    0
                }
                RingOp::CtrlGet => self.device_ctrl_get(pe, r.source as usize),
                RingOp::Error => self.device_error(r.value, r.cond, r.dest, r.source, pe),
                // A round trip that performs nothing and echoes its value
                // (benchmarks; tests check each answer is their own).
                RingOp::Nop => r.value,
                RingOp::Quiet => {
                    // On this thread the ring's own drain is skipped: every
                    // earlier request has been served (tickets in order).
                    self.quiet();
                    0
                }
                RingOp::Fence => {
                    self.route.fence(CALL);
                    0
                }
            }
        }
    }

    /// Runs of AMOs, `g`s and `p`s on this node's GPU heaps are performed in
    /// one pass of the device (one kernel instead of one a request); runs
    /// of AMOs and aligned `g`s (as fetches) on PEs reached through the
    /// proxy go to each PE together, runs of other `g`s are all issued,
    /// then completed together (one round trip instead of one a request);
    /// every other request, and each request after it, in order as
    /// `serve` does.
    fn serve_many(&self, reqs: &[Request], done: &mut dyn FnMut(usize, u64)) {
        let mut atomics: Vec<(usize, PassAtomic)> = Vec::new();
        let mut fetches = RemoteRun::default();
        for (i, r) in reqs.iter().enumerate() {
            if let Some(op) = self.device_atomic(r) {
                self.remote_run(reqs, &mut fetches, done);
                atomics.push((i, op));
            } else if let Some((kind, off)) = self.remote_fetch(r) {
                self.device_atomics_run(reqs, &mut atomics, done);
                if fetches.kind != Some(kind) {
                    // A run is all gets or all AMOs: the two may take
                    // different ways to a PE (a window, its proxy thread),
                    // which do not keep their order.
                    self.remote_run(reqs, &mut fetches, done);
                    fetches.kind = Some(kind);
                }
                fetches.run.push((i, off));
            } else {
                self.device_atomics_run(reqs, &mut atomics, done);
                self.remote_run(reqs, &mut fetches, done);
                done(i, self.serve(r));
            }
        }
        self.device_atomics_run(reqs, &mut atomics, done);
        self.remote_run(reqs, &mut fetches, done);
    }

    fn corrupt(&self, e: DecodeError) -> ! {
        fatal(CALL, format_args!("{e}"))
    }

    /// As long as the deadlock check waits (at least `ring::LOST_LIMIT`),
    /// and never when it is off (`ISHMEM_DEADLOCK_TIMEOUT=0`, e.g. while
    /// a debugger holds the kernels).
    fn lost_after(&self) -> Option<std::time::Duration> {
        match self.config.deadlock_timeout {
            0 => None,
            s => Some(crate::ring::LOST_LIMIT.max(std::time::Duration::from_secs(s))),
        }
    }

    /// Serves other PEs' requests through the proxy, as a waiting host
    /// thread does (a no-op without a proxy), unless background progress
    /// is off (`ISHMEM_PROXY_PROGRESS_THREAD=0`).
    fn idle(&self) {
        if self.config.progress_thread {
            crate::wait::progress();
        }
    }
}

impl State {
    /// Whether `r` is a `g` from, or an AMO on, a PE reached through the
    /// proxy (checked as `serve` checks it), and which, with its offset. A
    /// `g` of 1, 2, 4 or 8 aligned bytes goes with the AMOs, as a fetch.
    fn remote_fetch(&self, r: &Request) -> Option<(RemoteKind, usize)> {
        let (kind, what, addr, size) = match r.op {
            RingOp::G if aligned_word(r.source, r.value) => (RemoteKind::Amo, "source", r.source, r.value as usize),
            RingOp::G => (RemoteKind::G, "source", r.source, (r.value as usize).min(8)),
            RingOp::Amo if r.nbi => (RemoteKind::Posted, "dest", r.dest, r.size),
            RingOp::Amo => (RemoteKind::Amo, "dest", r.dest, r.size),
            _ => return None,
        };
        let pe = self.check_pe(CALL, r.pe);
        let off = self.sym_offset(CALL, what, addr as *const u8, size);
        if kind != RemoteKind::G {
            self.check_aligned(CALL, what, addr as *const u8, size);
        }
        self.route.through_proxy(pe, off).then_some((kind, off))
    }

    /// `r` as one of the device's atomics on a GPU heap of this node, with
    /// the checks `serve` makes: an AMO, a `g` of 1, 2, 4 or 8 aligned
    /// bytes (a fetch), or a `p` of as many (a set: one host copy a `p`
    /// served 0.14 M of them a second on an H200); `None` for every other
    /// request or target.
    fn device_atomic(&self, r: &Request) -> Option<PassAtomic> {
        if !self.route.device_atomics_possible() {
            return None;
        }
        let (addr, amo) = match r.op {
            RingOp::Amo => (r.dest, Amo { op: r.amo, size: r.size, operand: r.value, cond: r.cond }),
            RingOp::G if aligned_word(r.source, r.value) => (r.source, Amo::new(AmoOp::Fetch, r.value as usize, 0)),
            RingOp::P if aligned_word(r.dest, r.cond) => (r.dest, Amo::new(AmoOp::Set, r.cond as usize, r.value)),
            _ => return None,
        };
        let what = if r.op == RingOp::G { "source" } else { "dest" };
        let pe = self.check_pe(CALL, r.pe);
        let off = self.sym_offset(CALL, what, addr as *const u8, amo.size);
        self.check_aligned(CALL, what, addr as *const u8, amo.size);
        // A p keeps ring order with everything around it (the device
        // library's own words: a sync word after the counts it publishes).
        let ordered = r.op == RingOp::P;
        self.route.device_atomic_target(pe, off).map(|addr| PassAtomic { addr, amo, posted: r.nbi, ordered })
    }

    /// Performs the gathered `run` of device atomics (indices into `reqs`)
    /// and reports each; empties it. A run of one is served as `serve`
    /// does (a `g` then takes the device's copy, quicker than a kernel).
    fn device_atomics_run(
        &self, reqs: &[Request], run: &mut Vec<(usize, PassAtomic)>, done: &mut dyn FnMut(usize, u64),
    ) {
        if let [(i, _)] = run[..] {
            done(i, self.serve(&reqs[i]));
            run.clear();
            return;
        }
        if run.is_empty() {
            return;
        }
        let ops: Vec<PassAtomic> = run.iter().map(|&(_, op)| op).collect();
        let mut out = vec![0u64; ops.len()];
        // SAFETY: each address was checked aligned and inside the heap.
        unsafe { self.route.device_atomics(CALL, &ops, &mut out) };
        for (&(i, _), v) in run.iter().zip(out) {
            done(i, v);
        }
        run.clear();
    }

    /// Performs the gathered run of `g`s or AMOs through the proxy and
    /// reports each; empties it. `g`s are issued without waiting (gets
    /// that complete at a flush); AMOs go to each PE together (one batch a
    /// PE, `Router::proxy_amo_batch`: one message, one pass of the
    /// target's device), fetching ones answered by the flush, posted ones
    /// completed by a later quiet. Then each PE a `g` or fetching AMO went
    /// to is flushed once. A run of one is served as `serve` does.
    fn remote_run(&self, reqs: &[Request], fetches: &mut RemoteRun, done: &mut dyn FnMut(usize, u64)) {
        let RemoteRun { kind, run } = fetches;
        if let [(i, _)] = run[..] {
            done(i, self.serve(&reqs[i]));
            run.clear();
            return;
        }
        let Some(kind) = *kind else { return };
        if run.is_empty() {
            return;
        }
        // The PEs in order of their first request, and each one's requests.
        let mut pes: Vec<(usize, Vec<(usize, usize)>)> = Vec::new();
        for &(i, off) in run.iter() {
            let pe = reqs[i].pe as usize; // checked by `remote_fetch`
            match pes.iter_mut().find(|(p, _)| *p == pe) {
                Some((_, v)) => v.push((i, off)),
                None => pes.push((pe, vec![(i, off)])),
            }
        }
        let mut vals: Vec<Vec<u64>> = pes.iter().map(|(_, v)| vec![0u64; v.len()]).collect();
        for ((pe, v), out) in pes.iter().zip(vals.iter_mut()) {
            let pe = *pe;
            if kind == RemoteKind::G {
                for (&(i, off), o) in v.iter().zip(out.iter_mut()) {
                    // SAFETY: as for `serve`'s `g`; `vals` outlives the
                    // flushes below, which complete the gets.
                    unsafe {
                        let n = (reqs[i].value as usize).min(8);
                        self.route.proxy_get_to_host(CALL, pe, off, (o as *mut u64).cast(), n)
                    };
                }
                continue;
            }
            let ops: Vec<(usize, Amo)> = v.iter().map(|&(i, off)| (off, remote_amo(&reqs[i]))).collect();
            let old = (kind == RemoteKind::Amo).then_some(out.as_mut_ptr());
            // SAFETY: offsets checked aligned inside the heap by
            // `remote_fetch`; `vals` outlives the flushes below.
            unsafe { self.route.proxy_amo_batch(CALL, pe, &ops, old) };
        }
        if kind != RemoteKind::Posted {
            for (pe, _) in &pes {
                self.route.flush(CALL, Some(*pe));
            }
        }
        for ((_, v), out) in pes.iter().zip(vals) {
            for (&(i, _), val) in v.iter().zip(out) {
                // A `g`'s value: its bytes in memory order (the word was
                // 0); an AMO's: the old value of its size.
                let val = if kind == RemoteKind::G { val } else { low_bytes(val, remote_amo(&reqs[i]).size) };
                done(i, val);
            }
        }
        run.clear();
    }

    /// A device team sync's flag store to `pe`, which the device cannot
    /// reach (the ring's `CTRL_SET`): `addr` is the flag's address in this
    /// node's control segment. Like the host's sync, this PE's outstanding
    /// operations complete first.
    fn device_ctrl_set(&self, pe: i32, addr: usize, value: u64) {
        let pe = self.check_pe(CALL, pe);
        let word = self.device_ctrl_word(addr);
        self.route.flush(CALL, None);
        self.route.ctrl_store(CALL, pe, word, value);
    }

    /// A device collective's read of team-sync scratch word `addr` (its
    /// address in this node's control segment) of `pe`, which the device
    /// cannot reach (the ring's `CTRL_GET`).
    fn device_ctrl_get(&self, pe: i32, addr: usize) -> u64 {
        let pe = self.check_pe(CALL, pe);
        let word = self.device_ctrl_word(addr);
        self.route.ctrl_load(CALL, pe, word)
    }

    /// The control word at device-supplied address `addr`, checked to lie
    /// in the control segment and aligned.
    fn device_ctrl_word(&self, addr: usize) -> &AtomicU64 {
        match self.route.ctrl_word(addr) {
            Some(w) => w,
            None => fatal(CALL, format_args!("device control word address {addr:#x} is not in the control segment")),
        }
    }

    /// Aborts the job for a failed device-side argument check.
    fn device_error(&self, kind: u64, cond: u64, bad: u64, source: u64, pe: i32) -> ! {
        use crate::ring::*;
        let call = match cond as u32 {
            RING_PUT => "ishmem device put",
            RING_GET => "ishmem device get",
            RING_AMO => "ishmem device atomic",
            RING_PUT_SIGNAL => "ishmem device put_signal",
            RING_G => "ishmem device g",
            RING_P => "ishmem device p",
            _ => "ishmem device call",
        };
        let n = self.n_pes;
        let (base, size) = (self.heap_base() as u64, self.heap_size() as u64);
        match kind {
            // The slot is the team's handle (team.rs).
            DEVICE_CTRL_MISMATCH => match self.team("ishmem device collective", source as i32) {
                Some(t) => self.collective_mismatch_at("ishmem device collective", &t, None, bad),
                None => fatal("ishmem device collective", format_args!("a device sync reported an invalid team")),
            },
            DEVICE_COLL_MISMATCH => fatal(
                "ishmem device collective",
                format_args!(
                    "the members of {} made different collective calls in kernels (every member must make the same call with the same arguments): this PE called {}; PE {pe} called {}",
                    crate::team::slot_name(source as usize),
                    crate::device::describe_sig(bad),
                    crate::device::describe_sig16(cond as u16),
                ),
            ),
            DEVICE_BAD_PE => fatal(call, format_args!("target PE {pe} is out of range [0, {n})")),
            _ => fatal(
                call,
                format_args!(
                    "address {bad:#x} (to PE {pe}) is not in the symmetric heap [{base:#x}, {:#x})",
                    base + size
                ),
            ),
        }
    }
}
