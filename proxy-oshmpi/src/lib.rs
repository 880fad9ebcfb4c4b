//! The OSHMPI-style inter-node proxy: OpenSHMEM remote operations over MPI-3
//! RMA, built as a plugin (`libishmem_proxy_oshmpi-<mpi>.so`) that the
//! ishmem core loads at run time, so `libishmem` never links MPI.
//!
//! What goes over MPI (see `docs/cluster.md` for the reasoning):
//!
//! * Bootstrap: rank, size, an allgather and a barrier over a duplicate of
//!   `MPI_COMM_WORLD` or of the application's communicator.
//! * Puts and gets: `MPI_Put`/`MPI_Get` into one window per symmetric
//!   region (heap, data segment, control segment), each created over the
//!   core's own memory with `MPI_Win_create` and opened once with
//!   `MPI_Win_lock_all(MPI_MODE_NOCHECK)`. Blocking forms end with
//!   `MPI_Win_flush_local`, except small puts, which leave from a copy
//!   (`ISHMEM_PROXY_PUT_COPY`); quiet is `MPI_Win_flush` of every (window,
//!   target) pair written since the last quiet, and a flush for one PE
//!   (before a signal, a ctrl store) flushes only that target.
//! * Strided puts and gets (`iput`, `ibget`, ...) to a window: Open MPI's
//!   `osc/rdma` turns a vector datatype into one transfer per block (about
//!   3 us each on one node). A put of blocks under [`SPAN_BLOCK`] bytes (at
//!   most [`PACKED_MAX`] in all) is packed into requests on the AM
//!   communicator that the target unpacks (posted, completed by quiet's
//!   flush markers; only where the core's progress thread serves requests
//!   at any time); a get of such blocks whose span is at most
//!   [`SPAN_FACTOR`] times their bytes is one contiguous get of the span,
//!   copied out here. Other shapes: one `MPI_Put`/`MPI_Get` with an
//!   `hvector` datatype on each side; block by block only where blocks
//!   overlap on the written side, and on served regions.
//! * AMOs: active messages on a second duplicate communicator. The target
//!   applies the operation with the same CPU atomics that PEs on its node
//!   use through shared memory, so AMOs from the node (load/store) and from
//!   other nodes (MPI) to one location are atomic with respect to each
//!   other. MPI accumulates cannot promise that: they are atomic only with
//!   other accumulates, and by default (`accumulate_ops=same_op_no_op`) only
//!   with the same operation, while OpenSHMEM programs mix operations on one
//!   word (locks: or, and, compare-and-swap). A fetching AMO waits for
//!   its answer, or with `FLAG_FETCH` leaves it to be written when it
//!   arrives (by the next flush); a non-fetching one is posted without an
//!   answer. AMOs to one target may travel together (`amo_batch`, the
//!   ring's runs): one request carries up to [`BATCH_MAX`], the target
//!   applies them in one call and answers the fetching ones with one
//!   message of old values. Quiet
//!   sends each target it went to a flush marker, which the target answers
//!   after applying everything before it.
//! * Regions in GPU memory (`expose_served`): no window; puts, gets and
//!   AMOs on them are requests on the AM communicator too, which the
//!   target performs through the core's callbacks (its device's copies and
//!   atomics). A put of at most [`EAGER`] bytes travels inside its request;
//!   larger ones, and the data of gets, follow in [`CHUNK`]-byte messages
//!   of their own. Served puts are posted like non-fetching AMOs: quiet's
//!   flush markers complete them.
//! * Progress: the target serves requests whenever the core calls
//!   `progress` (in every wait loop, and from the core's progress thread
//!   when any thread may call: MPI at `MPI_THREAD_MULTIPLE`, or initialized
//!   here at `MPI_THREAD_SERIALIZED`).
//!
//! Thread use: every function takes the plugin's lock around its MPI calls,
//! so the plugin itself needs no more than `MPI_THREAD_SERIALIZED`; the
//! core decides which threads may call (see `runtime/src/remote/mod.rs`).

// The operations mirror the ABI's argument lists.
#![allow(clippy::too_many_arguments)]

use ishmem_proxy_abi as abi;
use mpi::ffi;
use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::Mutex;

/// Tag of AMO requests on the AM communicator.
const TAG_REQUEST: c_int = 1;
/// Data of a served put larger than [`EAGER`], after its request.
const TAG_DATA: c_int = 2;
/// Data of a served get to client slot `s` carries tag `TAG_GET_DATA + s`.
const TAG_GET_DATA: c_int = 1024;
/// Served puts of at most this many bytes travel inside their request.
const EAGER: usize = 8192;
/// Larger served transfers move in messages of this size (the target
/// stages each through a host buffer).
const CHUNK: usize = 1 << 20;
/// Replies to client slot `s` carry tag `TAG_REPLY + s`.
const TAG_REPLY: c_int = 16;
/// Outstanding AMO requests per PE (client side).
const SLOTS: usize = 256;
/// Requests received concurrently (server side).
const RECVS: usize = 32;
/// Largest count per MPI call (MPI counts are `int`).
const MAX_CHUNK: usize = 1 << 30;

/// `Request::slot` of a request that gets no answer (a non-fetching AMO).
const NO_REPLY: u32 = u32::MAX;
/// `Request::op` of a flush marker: answered once every earlier request
/// from its sender has been applied (MPI keeps one sender's messages in
/// order, and the target serves them in arrival order).
const OP_FLUSH: u32 = 0xFFFF_0000;
/// `Request::op` of a put to a served region: `operand` bytes to
/// `offset`, inside the request up to [`EAGER`], else in [`TAG_DATA`]
/// messages that follow it.
const OP_PUT: u32 = 0xFFFF_0001;
/// `Request::op` of a get from a served region: `operand` bytes at
/// `offset`, sent back in `TAG_GET_DATA + slot` messages.
const OP_GET: u32 = 0xFFFF_0002;
/// `Request::op` of a strided put of small blocks, packed in the request:
/// `operand` blocks of `size` bytes, the first at `offset`, the next ones
/// `cond` (an `i64`) bytes apart. Posted like a served put.
const OP_PUT_STRIDED: u32 = 0xFFFF_0003;
/// `Request::op` of AMOs sent together (`amo_batch`): `operand`
/// [`abi::TargetAmo`] records packed in the request, on `region`; unless
/// posted ([`NO_REPLY`]) their old values go back, `8 * operand` bytes in
/// one `TAG_GET_DATA + slot` message.
const OP_AMO_BATCH: u32 = 0xFFFF_0004;
/// The most AMOs one [`OP_AMO_BATCH`] request carries.
const BATCH_MAX: usize = EAGER / std::mem::size_of::<abi::TargetAmo>();
/// Strided puts of blocks under [`SPAN_BLOCK`] bytes and at most this many
/// bytes in all travel packed in requests ([`OP_PUT_STRIDED`]).
const PACKED_MAX: usize = 1 << 20;

/// Strided gets of blocks under this many bytes, whose span is at most
/// [`SPAN_FACTOR`] times their bytes and [`SPAN_MAX`], move as one
/// contiguous get of the span (see `Plugin::rma_strided`).
const SPAN_BLOCK: usize = 512;
const SPAN_FACTOR: usize = 8;
const SPAN_MAX: usize = 8 << 20;

/// Size of the buffer small blocking puts leave from (see
/// `Inner::copy_put`).
const COPY_BYTES: usize = 1 << 20;

/// One cache line of that buffer.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u8; 64]);

/// `Inner::is_posted` bits.
const POSTED_USER: u8 = 1;
const POSTED_CTRL: u8 = 2;

/// An AMO request as sent: 40 bytes.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Request {
    region: u32,
    size: u32,
    op: u32,
    /// The sender's slot, where the answer goes ([`NO_REPLY`]: none).
    slot: u32,
    offset: u64,
    operand: u64,
    cond: u64,
}

/// What a request arrives in (a served put's data follows the request).
#[repr(C)]
struct Message {
    req: Request,
    payload: [u8; EAGER],
}

impl Message {
    fn boxed() -> Box<Message> {
        Box::new(Message { req: Request::default(), payload: [0; EAGER] })
    }
}

/// The answer: the old value.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Reply {
    old: u64,
}

/// What a client slot carries, which decides who releases it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum SlotKind {
    /// A non-fetching AMO: no answer; free once its send completed.
    Post,
    /// A flush marker: counted in `outstanding` until answered.
    Marker,
    /// A fetching AMO: its blocking caller reads the answer and frees it,
    /// or (non-blocking) `retire` does, writing the answer where it goes.
    Fetch,
    /// A served get: no answer but its data; its caller frees it.
    Get,
}

struct ClientSlot {
    kind: SlotKind,
    target: u32,
    send: ffi::MPI_Request,
    recv: ffi::MPI_Request,
    req: Box<Request>,
    reply: Box<Reply>,
    /// A served put's request with its data (allocated at the first).
    message: Option<Box<Message>>,
}

struct ServerRecv {
    req: ffi::MPI_Request,
    buf: Box<Message>,
}

impl ServerRecv {
    /// Posts the receive for the next request from any PE.
    fn post(&mut self, am_comm: ffi::MPI_Comm) -> Result<(), String> {
        // SAFETY: buf is a live Box owned by self until the receive
        // completes or is cancelled (finalize).
        check("MPI_Irecv", unsafe {
            ffi::MPI_Irecv(
                &mut *self.buf as *mut Message as *mut c_void,
                std::mem::size_of::<Message>() as c_int,
                ffi::RSMPI_UINT8_T,
                ffi::RSMPI_ANY_SOURCE,
                TAG_REQUEST,
                am_comm,
                &mut self.req,
            )
        })
    }
}

struct PendingReply {
    req: ffi::MPI_Request,
    _buf: Vec<u64>,
}

struct Inner {
    wins: [ffi::MPI_Win; abi::REGIONS],
    /// Targets with transfers issued since their last flush, per window
    /// (a list, and a membership flag per PE).
    dirty: [Vec<u32>; abi::REGIONS],
    is_dirty: [Vec<bool>; abi::REGIONS],
    /// Local memory of each exposed region (AMO targets; base 0 for a
    /// served one).
    regions: [(usize, usize); abi::REGIONS],
    /// The core's access to each region of ours that is served.
    access: [Option<abi::TargetOps>; abi::REGIONS],
    /// Per region, which ranks serve it (no window there).
    served: [Vec<bool>; abi::REGIONS],
    /// Where served transfers are staged: two [`CHUNK`]s of the core's
    /// staging memory (pinned for its device), allocated at the first.
    bounce: usize,
    slots: Vec<ClientSlot>,
    /// Slots not in use, and those in flight (posts and markers; a fetch
    /// is in neither list while its caller waits).
    free: Vec<usize>,
    busy: Vec<usize>,
    /// Targets sent non-fetching AMOs since their last flush marker: those
    /// sent some to user memory, those sent only control-word stores, and
    /// per PE which kinds ([`POSTED_USER`], [`POSTED_CTRL`]).
    posted: Vec<u32>,
    ctrl_posted: Vec<u32>,
    is_posted: Vec<u8>,
    /// Flush markers unanswered, per target PE.
    outstanding: Vec<u32>,
    total_outstanding: usize,
    /// Non-blocking gets from served regions and non-blocking fetching
    /// AMOs not yet complete (their slots are in neither list above), and
    /// how many go to each PE.
    awaited: Vec<Awaited>,
    awaited_to: Vec<u32>,
    /// Copies of small blocking puts (see `copy_put`; allocated at the
    /// first) and how much of the buffer is in use.
    copies: Vec<Line>,
    copies_used: usize,
    /// Some copied put may not be complete even locally.
    copies_pending: bool,
    recvs: Vec<ServerRecv>,
    /// The oldest posted receive (see `serve`).
    next_recv: usize,
    replies: Vec<PendingReply>,
    am_started: bool,
}

/// A non-blocking get from a served region (the request's slot, whose
/// answer says the target has sent everything, and the data's receives),
/// or a non-blocking fetching AMO (the slot, whose answer is the old value,
/// and where it goes: `size` bytes at `old`).
struct Awaited {
    slot: usize,
    pe: u32,
    recvs: Vec<ffi::MPI_Request>,
    old: Option<(*mut u8, usize)>,
}

// SAFETY: MPI handles are plain values; every use is under the plugin lock.
unsafe impl Send for Inner {}

struct Plugin {
    comm: ffi::MPI_Comm,
    am_comm: ffi::MPI_Comm,
    rank: u32,
    size: u32,
    owns: bool,
    /// Strided puts of small blocks may travel packed in requests: the
    /// core's progress thread serves requests here at any time (see
    /// `packed_put`).
    packed_puts: bool,
    /// Blocking puts up to this size leave from a copy (`ISHMEM_PROXY_PUT_COPY`).
    put_copy_max: usize,
    inner: Mutex<Inner>,
    name: CString,
}

// SAFETY: as for Inner; comm handles are only read.
unsafe impl Send for Plugin {}
// SAFETY: as above.
unsafe impl Sync for Plugin {}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_error(msg: String) -> c_int {
    let c = CString::new(msg.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = c);
    1
}

/// The text of MPI error code `code`.
fn mpi_error_string(code: c_int) -> String {
    let mut buf = vec![0u8; 1024];
    let mut len: c_int = 0;
    // SAFETY: the buffer holds MPI_MAX_ERROR_STRING (<= 1024 in both MPIs).
    let r = unsafe { ffi::MPI_Error_string(code, buf.as_mut_ptr() as *mut c_char, &mut len) };
    if r != 0 {
        return format!("MPI error {code}");
    }
    buf.truncate(len.max(0) as usize);
    String::from_utf8_lossy(&buf).trim().to_string()
}

/// Turns an MPI return code into `Result`, naming the MPI call.
fn check(what: &str, code: c_int) -> Result<(), String> {
    if code == 0 {
        Ok(())
    } else {
        Err(format!("{what} failed: {}", mpi_error_string(code)))
    }
}

// MPI's predefined handles. rsmpi exposes them as extern statics that the
// MPI library (through rsmpi's C shim) initializes before any call.
fn win_null() -> ffi::MPI_Win {
    // SAFETY: a constant of the loaded MPI, only read.
    unsafe { ffi::RSMPI_WIN_NULL }
}
fn request_null() -> ffi::MPI_Request {
    // SAFETY: as for win_null.
    unsafe { ffi::RSMPI_REQUEST_NULL }
}
fn comm_null() -> ffi::MPI_Comm {
    // SAFETY: as for win_null.
    unsafe { ffi::RSMPI_COMM_NULL }
}
fn status_ignore() -> *mut ffi::MPI_Status {
    // SAFETY: as for win_null.
    unsafe { ffi::RSMPI_STATUS_IGNORE }
}

fn plugin<'a>(ctx: *mut c_void) -> &'a Plugin {
    // SAFETY: ctx is the pointer init returned; it lives until finalize.
    unsafe { &*(ctx as *const Plugin) }
}

impl Plugin {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Applies an AMO to local memory with the CPU atomics the core uses
/// (the shared helper), so AMOs from the node and from other nodes are
/// atomic with each other.
///
/// # Safety
/// `addr` is naturally aligned for `size` and points into an exposed region.
unsafe fn apply_amo(addr: usize, size: u32, op: u32, operand: u64, cond: u64) -> Result<u64, String> {
    let op = abi::AmoOp::from_code(op).ok_or_else(|| format!("unknown AMO operation {op}"))?;
    // SAFETY: the caller's contract.
    Ok(unsafe { abi::atomic::apply(addr as *mut u8, size as usize, op, operand, cond) })
}

/// Whether an AMO's `size`-byte word at `offset` is naturally aligned and
/// inside a region of `len` bytes (and `size` is 1, 2, 4 or 8).
fn amo_word(offset: u64, size: usize, len: usize) -> bool {
    matches!(size, 1 | 2 | 4 | 8) && (offset as usize).is_multiple_of(size) && in_region(offset as usize, size, len)
}

/// True when `size` bytes at `offset` lie inside a region of `len` bytes
/// (no wrap-around for huge offsets).
fn in_region(offset: usize, size: usize, len: usize) -> bool {
    offset.checked_add(size).is_some_and(|end| end <= len)
}

impl Inner {
    /// Lets MPI progress, serves other PEs' requests, retires finished
    /// sends and answered markers. Returns how many events it handled.
    fn progress(&mut self, am_comm: ffi::MPI_Comm) -> Result<usize, String> {
        let mut events = self.serve(am_comm)? + self.retire()?;
        if self.copies_pending {
            // Puts that left from copies are not yet pushed to their
            // targets: some MPIs (Open MPI's pt2pt) queue them until a
            // completion call, and the PE that wrote them may now wait for
            // an answer to them (a flag, then wait_until).
            self.complete_copies()?;
            events += 1;
        }
        // Orders our loads after remote updates in MPI's separate memory
        // model. In the unified model a fence would do, but MPICH's
        // MPI_Win_sync also advances its RMA progress: without it, transfers
        // from a PE whose wait polls here ran 20% slower.
        for w in 0..abi::REGIONS {
            if self.wins[w] != win_null() {
                // SAFETY: an open window.
                check("MPI_Win_sync", unsafe { ffi::MPI_Win_sync(self.wins[w]) })?;
            }
        }
        Ok(events)
    }

    /// Serves requests from other PEs, in arrival order, and retires the
    /// replies that went out. Each call tests at least one request, so
    /// MPI progresses.
    fn serve(&mut self, am_comm: ffi::MPI_Comm) -> Result<usize, String> {
        let mut events = 0;
        if !self.am_started {
            return Ok(0);
        }
        // Receives match messages in the order they were posted, and each
        // reposted one goes to the back, so the oldest is always
        // `next_recv` (cyclic). Serving them in that order keeps one PE's
        // posted AMOs and puts to a target in issue order (MPI does not
        // overtake between one pair; in a run each request comes after the
        // posted ones before it), and answers a flush marker after the
        // requests before it.
        // A request received but not yet served (the one after a run).
        let mut pending: Option<(usize, c_int)> = None;
        loop {
            let (i, from) = match pending.take() {
                Some(p) => p,
                None => match self.test_recv(self.next_recv)? {
                    Some(from) => (self.next_recv, from),
                    None => break,
                },
            };
            events += 1;
            let r = self.recvs[i].buf.req;
            // AMOs and small gets on a served region that arrived together
            // go to the core in one call (one pass of its device).
            if let Some(region) = self.batchable(&r) {
                let mut run = vec![(i, from)];
                let mut j = (i + 1) % self.recvs.len();
                // At most every posted receive (RECVS) takes part.
                while j != self.next_recv {
                    let Some(f) = self.test_recv(j)? else { break };
                    if self.batchable(&self.recvs[j].buf.req) == Some(region) {
                        run.push((j, f));
                        j = (j + 1) % self.recvs.len();
                    } else {
                        pending = Some((j, f));
                        break;
                    }
                }
                if run.len() > 1 {
                    events += run.len() - 1;
                    self.serve_run(am_comm, region, &run)?;
                    continue;
                }
                // One alone is served as below (a get by a copy, quicker
                // than a device pass).
            }
            let old = match r.op {
                OP_FLUSH => 0,
                OP_PUT => {
                    self.serve_put(am_comm, i, &r, from)?;
                    0
                }
                OP_GET => {
                    self.serve_get(am_comm, &r, from)?;
                    0
                }
                OP_PUT_STRIDED => {
                    self.serve_put_strided(i, &r, from)?;
                    0
                }
                OP_AMO_BATCH => {
                    self.serve_amo_batch(am_comm, i, &r, from)?;
                    0
                }
                _ => self.serve_amo(&r, from)?,
            };
            // A get's answer is its data; a batch's, its old values.
            if r.slot != NO_REPLY && r.op != OP_GET && r.op != OP_AMO_BATCH {
                self.reply(am_comm, from, TAG_REPLY + r.slot as c_int, old, std::mem::size_of::<Reply>())?;
            }
            self.recvs[i].post(am_comm)?;
            self.next_recv = (i + 1) % self.recvs.len();
        }
        // Our replies that went out.
        let mut k = 0;
        while k < self.replies.len() {
            let mut flag: c_int = 0;
            // SAFETY: request owned by self.replies.
            check("MPI_Test", unsafe { ffi::MPI_Test(&mut self.replies[k].req, &mut flag, status_ignore()) })?;
            if flag != 0 {
                self.replies.swap_remove(k);
            } else {
                k += 1;
            }
        }
        Ok(events)
    }

    /// Whether receive `i` holds a request: its sender, once it does.
    fn test_recv(&mut self, i: usize) -> Result<Option<c_int>, String> {
        let mut flag: c_int = 0;
        // SAFETY: MPI_Status is a plain C struct; all-zero is a valid value.
        let mut status: ffi::MPI_Status = unsafe { std::mem::zeroed() };
        // SAFETY: the request and its buffer live in self.recvs.
        check("MPI_Test", unsafe { ffi::MPI_Test(&mut self.recvs[i].req, &mut flag, &mut status) })?;
        Ok((flag != 0).then_some(status.MPI_SOURCE))
    }

    /// Sends `bytes` (at most 8) of `value` to `to` with `tag`: an AMO's
    /// answer, or a small get's data. The buffer lives in `replies` until
    /// the send completes.
    fn reply(&mut self, am_comm: ffi::MPI_Comm, to: c_int, tag: c_int, value: u64, bytes: usize) -> Result<(), String> {
        self.reply_words(am_comm, to, tag, vec![value], bytes)
    }

    /// Sends the first `bytes` of `words` to `to` with `tag` (a batch's old
    /// values); they live in `replies` until the send completes.
    fn reply_words(
        &mut self, am_comm: ffi::MPI_Comm, to: c_int, tag: c_int, words: Vec<u64>, bytes: usize,
    ) -> Result<(), String> {
        let buf = words;
        debug_assert!(bytes <= 8 * buf.len());
        let mut req = request_null();
        // SAFETY: buf lives in self.replies until the send completes (a
        // Vec's heap buffer does not move with it).
        check("MPI_Isend", unsafe {
            ffi::MPI_Isend(
                buf.as_ptr() as *const c_void,
                bytes as c_int,
                ffi::RSMPI_UINT8_T,
                to,
                tag,
                am_comm,
                &mut req,
            )
        })?;
        self.replies.push(PendingReply { req, _buf: buf });
        Ok(())
    }

    /// The served region whose core may take request `r` in a run: an AMO,
    /// or a get of 1, 2, 4 or 8 aligned bytes (a fetch), on a region this
    /// PE serves. Bounds are checked when the run is served.
    fn batchable(&self, r: &Request) -> Option<u32> {
        let served = self.access.get(r.region as usize).copied().flatten().is_some();
        let small_get = r.op == OP_GET && matches!(r.operand, 1 | 2 | 4 | 8) && r.offset.is_multiple_of(r.operand);
        let amo = !matches!(r.op, OP_FLUSH | OP_PUT | OP_GET | OP_PUT_STRIDED | OP_AMO_BATCH);
        (served && (amo || small_get)).then_some(r.region)
    }

    /// Serves `run` (receives holding AMOs and small gets on served
    /// `region`, with their senders, in arrival order): one call of the
    /// core for all, then each answer (a get's data, a fetch's old value),
    /// and the receives reposted in order.
    fn serve_run(&mut self, am_comm: ffi::MPI_Comm, region: u32, run: &[(usize, c_int)]) -> Result<(), String> {
        let a = self.access[region as usize].ok_or("a run on a region this PE does not serve")?;
        let len = self.regions.get(region as usize).map_or(0, |r| r.1);
        let mut reqs = Vec::with_capacity(run.len());
        for &(i, from) in run {
            let r = self.recvs[i].buf.req;
            let (size, op, posted) = if r.op == OP_GET {
                (r.operand as u32, abi::AmoOp::Fetch as u32, false)
            } else {
                abi::AmoOp::from_code(r.op).ok_or_else(|| format!("unknown AMO operation {}", r.op))?;
                (r.size, r.op, r.slot == NO_REPLY)
            };
            let sz = size as usize;
            if !amo_word(r.offset, sz, len) {
                return Err(if r.op == OP_GET {
                    format!(
                        "transfer from PE {from} is out of bounds (region {region}, offset {}, {sz} bytes, region size {len})",
                        r.offset
                    )
                } else {
                    format!(
                        "AMO request from PE {from} is out of bounds (region {region}, offset {}, size {size})",
                        r.offset
                    )
                });
            }
            if r.op == OP_GET && r.slot as usize >= SLOTS {
                return Err(format!("get from PE {from} names slot {}", r.slot));
            }
            reqs.push(abi::TargetAmo {
                offset: r.offset as usize,
                size,
                op,
                operand: r.operand,
                cond: r.cond,
                posted: u32::from(posted),
                reserved: 0,
            });
        }
        let mut old = vec![0u64; reqs.len()];
        // SAFETY: the core's callback on checked ranges of its region;
        // reqs and old hold run.len() entries.
        unsafe { (a.amo_many)(a.ctx, reqs.len(), reqs.as_ptr(), old.as_mut_ptr()) };
        for (k, &(i, from)) in run.iter().enumerate() {
            let r = self.recvs[i].buf.req;
            if r.op == OP_GET {
                // Its data: the value's bytes in memory order.
                self.reply(am_comm, from, TAG_GET_DATA + r.slot as c_int, old[k].to_le(), r.operand as usize)?;
            } else if r.slot != NO_REPLY {
                self.reply(am_comm, from, TAG_REPLY + r.slot as c_int, old[k], std::mem::size_of::<Reply>())?;
            }
            self.recvs[i].post(am_comm)?;
            self.next_recv = (i + 1) % self.recvs.len();
        }
        Ok(())
    }

    /// AMOs sent together by PE `from` ([`OP_AMO_BATCH`]), whose request
    /// arrived in receive `i`: checked, then applied in one call of the
    /// core on a served region (one pass of its device) or with the CPU
    /// atomics the node uses; their old values go back unless posted.
    fn serve_amo_batch(&mut self, am_comm: ffi::MPI_Comm, i: usize, r: &Request, from: c_int) -> Result<(), String> {
        let n = r.operand as usize;
        let (base, len) = *self.regions.get(r.region as usize).ok_or("AMO batch for an unknown region")?;
        if n == 0 || n > BATCH_MAX || (r.slot != NO_REPLY && r.slot as usize >= SLOTS) {
            return Err(format!("AMO batch from PE {from}: {n} AMOs, slot {} (at most {BATCH_MAX})", r.slot));
        }
        let p = self.recvs[i].buf.payload.as_ptr() as *const abi::TargetAmo;
        // SAFETY: the payload holds n records (n * 40 <= EAGER bytes); read
        // unaligned (the payload follows the 40-byte request).
        let reqs: Vec<abi::TargetAmo> = (0..n).map(|k| unsafe { p.add(k).read_unaligned() }).collect();
        for q in &reqs {
            abi::AmoOp::from_code(q.op).ok_or_else(|| format!("unknown AMO operation {}", q.op))?;
            if !amo_word(q.offset as u64, q.size as usize, len) {
                return Err(format!(
                    "AMO request from PE {from} is out of bounds (region {}, offset {}, size {})",
                    r.region, q.offset, q.size
                ));
            }
        }
        let mut old = vec![0u64; n];
        match self.access[r.region as usize] {
            // SAFETY: the core's callback on checked ranges of its region;
            // reqs and old hold n entries.
            Some(a) => unsafe {
                (a.amo_many)(a.ctx, n, reqs.as_ptr(), old.as_mut_ptr());
            },
            None => {
                for (q, o) in reqs.iter().zip(old.iter_mut()) {
                    // SAFETY: checked aligned and inside the exposed region.
                    *o = unsafe { apply_amo(base + q.offset, q.size, q.op, q.operand, q.cond) }?;
                }
            }
        }
        if r.slot != NO_REPLY {
            self.reply_words(am_comm, from, TAG_GET_DATA + r.slot as c_int, old, 8 * n)?;
        }
        Ok(())
    }

    /// An AMO request from PE `from`: applied with the CPU atomics the
    /// node uses, or through the core on a served region.
    fn serve_amo(&self, r: &Request, from: c_int) -> Result<u64, String> {
        let (base, len) = *self.regions.get(r.region as usize).ok_or("AMO request for an unknown region")?;
        let sz = r.size as usize;
        if !amo_word(r.offset, sz, len) {
            return Err(format!(
                "AMO request from PE {from} is out of bounds (region {}, offset {}, size {})",
                r.region, r.offset, r.size
            ));
        }
        if let Some(a) = self.access[r.region as usize] {
            abi::AmoOp::from_code(r.op).ok_or_else(|| format!("unknown AMO operation {}", r.op))?;
            let mut old = 0u64;
            // SAFETY: the core's callback on a checked range of its region.
            unsafe { (a.amo)(a.ctx, r.offset as usize, r.size, r.op, r.operand, r.cond, &mut old) };
            return Ok(old);
        }
        // SAFETY: checked aligned and inside the exposed region.
        unsafe { apply_amo(base + r.offset as usize, r.size, r.op, r.operand, r.cond) }
    }

    /// A packed strided put from PE `from` ([`OP_PUT_STRIDED`]), whose
    /// request arrived in receive `i`: each block to our memory, or through
    /// the core on a served region.
    fn serve_put_strided(&self, i: usize, r: &Request, from: c_int) -> Result<(), String> {
        let (block, n, stride) = (r.size as usize, r.operand as usize, r.cond as i64 as isize);
        let (base, len) = *self.regions.get(r.region as usize).ok_or("strided put to an unknown region")?;
        let bad = || {
            format!(
                "strided put from PE {from} is out of bounds (region {}, offset {}, {n} blocks of {block} bytes, \
                 stride {stride}, region size {len})",
                r.region, r.offset
            )
        };
        if block == 0 || n.checked_mul(block).is_none_or(|t| t > EAGER) {
            return Err(bad());
        }
        let p = self.recvs[i].buf.payload.as_ptr();
        for k in 0..n {
            let off =
                (k as isize).checked_mul(stride).and_then(|d| (r.offset as isize).checked_add(d)).ok_or_else(bad)?;
            if off < 0 || !in_region(off as usize, block, len) {
                return Err(bad());
            }
            // SAFETY: the payload holds n * block bytes; the target range
            // is checked inside the region (ours, exposed, or the core's).
            unsafe {
                match self.access[r.region as usize] {
                    Some(a) => {
                        (a.write)(a.ctx, off as usize, p.add(k * block) as *const c_void, block);
                    }
                    None => std::ptr::copy_nonoverlapping(p.add(k * block), (base + off as usize) as *mut u8, block),
                }
            }
        }
        Ok(())
    }

    /// The core's access to `len` bytes at `offset` of served `region`
    /// (checked), for a request from PE `from`.
    fn served_access(&self, region: u32, offset: u64, len: u64, from: c_int) -> Result<abi::TargetOps, String> {
        let a = self.access.get(region as usize).copied().flatten();
        let size = self.regions.get(region as usize).map_or(0, |r| r.1);
        match a {
            Some(a) if in_region(offset as usize, len as usize, size) && len <= usize::MAX as u64 => Ok(a),
            Some(_) => Err(format!(
                "transfer from PE {from} is out of bounds (region {region}, offset {offset}, {len} bytes, region size {size})"
            )),
            None => Err(format!("transfer from PE {from} to region {region}, which this PE does not serve")),
        }
    }

    /// The staging buffer of served transfers (two [`CHUNK`]s), from the
    /// core's access `a` at the first use.
    fn bounce(&mut self, a: &abi::TargetOps) -> *mut u8 {
        if self.bounce == 0 {
            // SAFETY: the core's callback; it never returns null.
            self.bounce = unsafe { (a.staging)(a.ctx, 2 * CHUNK) } as usize;
        }
        self.bounce as *mut u8
    }

    /// A put to a served region from PE `from`, whose request arrived in
    /// receive `i`: its data is in the request, or follows it.
    fn serve_put(&mut self, am_comm: ffi::MPI_Comm, i: usize, r: &Request, from: c_int) -> Result<(), String> {
        let a = self.served_access(r.region, r.offset, r.operand, from)?;
        let (off, len) = (r.offset as usize, r.operand as usize);
        if len <= EAGER {
            let p = self.recvs[i].buf.payload.as_ptr();
            // SAFETY: the core's callback; the payload holds len bytes.
            unsafe { (a.write)(a.ctx, off, p as *const c_void, len) };
            return Ok(());
        }
        // Two halves of the bounce buffer: the next piece arrives while
        // the core writes this one.
        let bounce = self.bounce(&a);
        let half = |k: usize| bounce.wrapping_add((k % 2) * CHUNK);
        let pieces = len.div_ceil(CHUNK);
        let piece = |k: usize| (len - k * CHUNK).min(CHUNK);
        let recv = |k: usize| -> Result<ffi::MPI_Request, String> {
            let mut q = request_null();
            // SAFETY: the half holds CHUNK bytes and is not touched until
            // the receive completes. The sender posted its data sends with
            // the request, so the receive needs no action of ours.
            check("MPI_Irecv", unsafe {
                ffi::MPI_Irecv(
                    half(k) as *mut c_void,
                    piece(k) as c_int,
                    ffi::RSMPI_UINT8_T,
                    from,
                    TAG_DATA,
                    am_comm,
                    &mut q,
                )
            })?;
            Ok(q)
        };
        // Both halves take a piece at once. The device copies a piece while
        // the next one arrives (MPI is polled meanwhile: a receive may need
        // this side's calls to move), and a half takes the piece after next
        // once its copy has ended.
        let mut q = [recv(0)?, if pieces > 1 { recv(1)? } else { request_null() }];
        for k in 0..pieces {
            // SAFETY: the receive of piece k (or a null request).
            check("MPI_Wait", unsafe { ffi::MPI_Wait(&mut q[k % 2], status_ignore()) })?;
            // SAFETY: piece k is in its half, untouched until its write ends.
            unsafe { (a.write_start)(a.ctx, off + k * CHUNK, half(k) as *const c_void, piece(k)) };
            if k + 2 < pieces {
                // SAFETY: the core's callback.
                while unsafe { (a.writes_done)(a.ctx, 0) } == 0 {
                    let mut flag = 0;
                    // SAFETY: the receive of piece k + 1 (null once complete).
                    check("MPI_Test", unsafe { ffi::MPI_Test(&mut q[(k + 1) % 2], &mut flag, status_ignore()) })?;
                }
                q[k % 2] = recv(k + 2)?;
            }
        }
        // SAFETY: the core's callback; the put is complete when it returns.
        unsafe { (a.writes_done)(a.ctx, 1) };
        Ok(())
    }

    /// A get from a served region by PE `from`, which posted receives for
    /// the data before it sent the request.
    fn serve_get(&mut self, am_comm: ffi::MPI_Comm, r: &Request, from: c_int) -> Result<(), String> {
        let a = self.served_access(r.region, r.offset, r.operand, from)?;
        let (off, len) = (r.offset as usize, r.operand as usize);
        if r.slot as usize >= SLOTS {
            return Err(format!("get from PE {from} names slot {}", r.slot));
        }
        // Two halves of the bounce buffer: the core reads the next piece
        // while this one is sent.
        let bounce = self.bounce(&a);
        let half = |k: usize| bounce.wrapping_add((k % 2) * CHUNK);
        let pieces = len.div_ceil(CHUNK);
        let piece = |k: usize| (len - k * CHUNK).min(CHUNK);
        let mut sends = [request_null(), request_null()];
        for k in 0..pieces {
            // SAFETY: the half's previous send is complete (waited for
            // below) before the core writes it; each send completes once
            // the receive the getter posted takes it.
            unsafe {
                check("MPI_Wait", ffi::MPI_Wait(&mut sends[k % 2], status_ignore()))?;
                (a.read)(a.ctx, off + k * CHUNK, half(k) as *mut c_void, piece(k));
                check(
                    "MPI_Isend",
                    ffi::MPI_Isend(
                        half(k) as *const c_void,
                        piece(k) as c_int,
                        ffi::RSMPI_UINT8_T,
                        from,
                        TAG_GET_DATA + r.slot as c_int,
                        am_comm,
                        &mut sends[k % 2],
                    ),
                )?;
            }
        }
        // SAFETY: the last sends, whose halves the next request reuses.
        check("MPI_Waitall", unsafe { ffi::MPI_Waitall(2, sends.as_mut_ptr(), ffi::RSMPI_STATUSES_IGNORE) })?;
        Ok(())
    }

    /// Whether slot `s`'s send and (if any) receive have completed.
    fn slot_done(&mut self, s: usize) -> Result<bool, String> {
        let slot = &mut self.slots[s];
        let mut flag: c_int = 1;
        if slot.recv != request_null() {
            // SAFETY: a request owned by the slot (null once complete).
            check("MPI_Test", unsafe { ffi::MPI_Test(&mut slot.recv, &mut flag, status_ignore()) })?;
            if flag == 0 {
                return Ok(false);
            }
        }
        if slot.send != request_null() {
            // SAFETY: as above.
            check("MPI_Test", unsafe { ffi::MPI_Test(&mut slot.send, &mut flag, status_ignore()) })?;
        }
        Ok(flag != 0)
    }

    /// Whether some target has posted AMOs not yet followed by a marker
    /// (among those to user memory; with `all`, control words too).
    fn has_posts(&self, all: bool) -> bool {
        !self.posted.is_empty() || (all && !self.ctrl_posted.is_empty())
    }

    /// Frees slot `s` (both its requests complete).
    fn release(&mut self, s: usize) {
        if self.slots[s].kind == SlotKind::Marker {
            self.outstanding[self.slots[s].target as usize] -= 1;
            self.total_outstanding -= 1;
        }
        self.free.push(s);
    }

    /// Frees the posts whose sends completed, the answered markers, the
    /// non-blocking gets whose data arrived and the non-blocking fetching
    /// AMOs answered (writing their old values).
    fn retire(&mut self) -> Result<usize, String> {
        let mut events = 0;
        let mut k = 0;
        while k < self.busy.len() {
            let s = self.busy[k];
            if self.slot_done(s)? {
                self.busy.swap_remove(k);
                self.release(s);
                events += 1;
            } else {
                k += 1;
            }
        }
        let mut k = 0;
        while k < self.awaited.len() {
            let s = self.awaited[k].slot;
            if test_all(&mut self.awaited[k].recvs)?.is_some() && self.slot_done(s)? {
                let g = self.awaited.swap_remove(k);
                self.awaited_to[g.pe as usize] -= 1;
                if let Some((old, size)) = g.old {
                    // SAFETY: valid until the flush that waits for this
                    // (the ABI's FLAG_FETCH contract).
                    unsafe { abi::write_old(old, self.slots[s].reply.old, size) };
                }
                self.free.push(s);
                events += 1;
            } else {
                k += 1;
            }
        }
        Ok(events)
    }

    /// Keeps `a` until its receives and its slot are done (`retire`), and
    /// counts it for its PE's flush.
    fn await_done(&mut self, a: Awaited) {
        self.awaited_to[a.pe as usize] += 1;
        self.awaited.push(a);
    }

    /// Non-blocking gets and fetching AMOs not yet complete, to `pe`
    /// (negative: to any).
    fn awaited_left(&self, pe: c_int) -> usize {
        if pe < 0 {
            self.awaited.len()
        } else {
            self.awaited_to[pe as usize] as usize
        }
    }

    /// Sends `req` to `pe` from a free slot (the caller made sure there is
    /// one), with a receive for the answer unless it is a post. Returns the
    /// slot.
    fn send(&mut self, am_comm: ffi::MPI_Comm, pe: u32, kind: SlotKind, req: Request) -> Result<usize, String> {
        let s = self.free.pop().ok_or("no free AMO slot")?;
        self.send_slot(am_comm, s, pe, kind, req, &[])?;
        Ok(s)
    }

    /// Sends `req` to `pe` from slot `s` (taken off the free list), with
    /// `payload` after it (a served put's data, at most [`EAGER`] bytes).
    fn send_slot(
        &mut self, am_comm: ffi::MPI_Comm, s: usize, pe: u32, kind: SlotKind, mut req: Request, payload: &[u8],
    ) -> Result<(), String> {
        let region = req.region;
        req.slot = if kind == SlotKind::Post { NO_REPLY } else { s as u32 };
        let slot = &mut self.slots[s];
        slot.kind = kind;
        slot.target = pe;
        *slot.req = req;
        let (buf, bytes) = if payload.is_empty() {
            (&*slot.req as *const Request as *const c_void, std::mem::size_of::<Request>())
        } else {
            let m = slot.message.get_or_insert_with(Message::boxed);
            m.req = req;
            m.payload[..payload.len()].copy_from_slice(payload);
            (&**m as *const Message as *const c_void, std::mem::size_of::<Request>() + payload.len())
        };
        let ClientSlot { send, recv, reply, .. } = slot;
        // SAFETY: the boxes live in the slot until both requests complete.
        unsafe {
            if matches!(kind, SlotKind::Marker | SlotKind::Fetch) {
                check(
                    "MPI_Irecv",
                    ffi::MPI_Irecv(
                        &mut **reply as *mut Reply as *mut c_void,
                        std::mem::size_of::<Reply>() as c_int,
                        ffi::RSMPI_UINT8_T,
                        pe as c_int,
                        TAG_REPLY + s as c_int,
                        am_comm,
                        recv,
                    ),
                )?;
            }
            check(
                "MPI_Isend",
                ffi::MPI_Isend(buf, bytes as c_int, ffi::RSMPI_UINT8_T, pe as c_int, TAG_REQUEST, am_comm, send),
            )?;
        }
        match kind {
            SlotKind::Post => {
                // A small send is usually complete at once: free the slot
                // now rather than at the next progress.
                if self.slot_done(s)? {
                    self.free.push(s);
                } else {
                    self.busy.push(s);
                }
                let bit = if region == abi::REGION_CTRL { POSTED_CTRL } else { POSTED_USER };
                let was = self.is_posted[pe as usize];
                self.is_posted[pe as usize] |= bit;
                if was == 0 {
                    if bit == POSTED_USER {
                        self.posted.push(pe);
                    } else {
                        self.ctrl_posted.push(pe);
                    }
                } else if was == POSTED_CTRL && bit == POSTED_USER {
                    // Move it to the list every flush looks at.
                    self.ctrl_posted.retain(|&t| t != pe);
                    self.posted.push(pe);
                }
            }
            SlotKind::Marker => {
                self.outstanding[pe as usize] += 1;
                self.total_outstanding += 1;
                self.busy.push(s);
            }
            SlotKind::Fetch | SlotKind::Get => {}
        }
        Ok(())
    }

    /// Copies `len` bytes at `src` (at most `Plugin::put_copy_max`, a
    /// quarter of the copy buffer or less) into the copy
    /// buffer and returns the copy. A copy stays untouched until its put is
    /// complete: the buffer is reused from its start after a flush of every
    /// target, or, when full, after waiting for local completion of every
    /// window's transfers.
    fn copy_put(&mut self, src: *const u8, len: usize) -> Result<*mut c_void, String> {
        let need = len.div_ceil(64) * 64;
        if self.copies_used + need > COPY_BYTES {
            self.complete_copies()?;
        }
        if self.copies.is_empty() {
            self.copies = vec![Line([0; 64]); COPY_BYTES / 64];
        }
        // SAFETY: copies_used + len <= COPY_BYTES, the buffer's size; src is
        // valid for len bytes (the caller's contract) and is not ours.
        unsafe {
            let d = (self.copies.as_mut_ptr() as *mut u8).add(self.copies_used);
            std::ptr::copy_nonoverlapping(src, d, len);
            self.copies_used += need;
            self.copies_pending = true;
            Ok(d as *mut c_void)
        }
    }

    /// Waits for local completion of the transfers to every target written
    /// since its last flush, which frees the put copies. Target by target:
    /// MPICH 4.0's `MPI_Win_flush_local_all` returned while copies were
    /// still to be read (tests/c/put_stream.c), as its `flush_all` did.
    fn complete_copies(&mut self) -> Result<(), String> {
        for w in 0..abi::REGIONS {
            for &t in &self.dirty[w] {
                // SAFETY: an open window (a target is dirty only there) and a valid rank.
                check("MPI_Win_flush_local", unsafe { ffi::MPI_Win_flush_local(t as c_int, self.wins[w]) })?;
            }
        }
        self.copies_free();
        Ok(())
    }

    /// Every transfer is complete: so is every put that left from a copy.
    fn copies_free(&mut self) {
        self.copies_used = 0;
        self.copies_pending = false;
    }

    /// After an RMA call to `pe` through `win`: `pe` is written (quiet
    /// flushes it), and a blocking call completes locally.
    fn issued(&mut self, region: u32, pe: u32, win: ffi::MPI_Win, nbi: bool) -> Result<(), String> {
        let r = region as usize;
        if !self.is_dirty[r][pe as usize] {
            self.is_dirty[r][pe as usize] = true;
            self.dirty[r].push(pe);
        }
        if !nbi {
            // SAFETY: open window, valid rank.
            check("MPI_Win_flush_local", unsafe { ffi::MPI_Win_flush_local(pe as c_int, win) })?;
        }
        Ok(())
    }

    fn win(&self, region: u32) -> Result<ffi::MPI_Win, String> {
        match self.wins.get(region as usize) {
            Some(&w) if w != win_null() => Ok(w),
            _ => Err(format!("region {region} is not exposed")),
        }
    }
}

/// A committed `MPI_Type_create_hvector` of bytes: the blocks of one side
/// of a strided transfer; freed on drop.
struct Vector(ffi::MPI_Datatype);
impl Vector {
    fn new(s: abi::Strides, stride: isize) -> Result<Vector, String> {
        let mut t = std::mem::MaybeUninit::<ffi::MPI_Datatype>::uninit();
        // SAFETY: counts checked to fit an int by the caller; t is writable.
        check("MPI_Type_create_hvector", unsafe {
            ffi::MPI_Type_create_hvector(
                s.nblocks as c_int,
                s.block as c_int,
                stride as ffi::MPI_Aint,
                ffi::RSMPI_UINT8_T,
                t.as_mut_ptr(),
            )
        })?;
        // SAFETY: created above.
        let mut v = Vector(unsafe { t.assume_init() });
        // SAFETY: a type just created.
        check("MPI_Type_commit", unsafe { ffi::MPI_Type_commit(&mut v.0) })?;
        Ok(v)
    }
}
impl Drop for Vector {
    fn drop(&mut self) {
        // SAFETY: a type this value created; MPI lets pending operations
        // finish with it.
        unsafe { ffi::MPI_Type_free(&mut self.0) };
    }
}

/// `Some(())` once every request of `reqs` has completed (tested, not
/// waited for).
fn test_all(reqs: &mut [ffi::MPI_Request]) -> Result<Option<()>, String> {
    if reqs.is_empty() {
        return Ok(Some(()));
    }
    let mut flag: c_int = 0;
    // SAFETY: live requests owned by the caller; completed ones become null.
    check("MPI_Testall", unsafe {
        ffi::MPI_Testall(reqs.len() as c_int, reqs.as_mut_ptr(), &mut flag, ffi::RSMPI_STATUSES_IGNORE)
    })?;
    Ok((flag != 0).then_some(()))
}

/// Whether this node runs more of the job's processes than it has cores
/// (decided at init).
static OVERSUBSCRIBED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Backs off between polls of a blocking wait: polls without pause, as an
/// MPI wait does, unless the node's processes outnumber its cores; then
/// spin briefly and sleep. Other PEs' one-sided operations on this PE may
/// progress only while it polls (MPICH answers passive-target RMA from the
/// target's progress), so a sleep here added its length, in practice
/// 60-100 us, to each of theirs (an 8-byte get from a PE waiting in a
/// barrier: 90 us). Where processes outnumber cores a waiter that sleeps
/// gives its core to the PE with work, which matters more (the suite's
/// collectives under MPICH at 3 and 4 PEs on 2 cores ran past their limit
/// without sleeps). No yields between the spins and the sleeps: with any
/// other busy process on the node (a compiler at low priority), a yield
/// gave it the core for a whole time slice, and `rma_types` on 4 PEs over
/// 2 cores with every RMA served by message took 115 s instead of 46 s
/// (8 s against 7.7 s with the node otherwise idle).
struct Backoff(u32);
impl Backoff {
    fn pause(&mut self) {
        self.0 = self.0.saturating_add(1);
        if self.0 < 64 || !OVERSUBSCRIBED.load(std::sync::atomic::Ordering::Relaxed) {
            std::hint::spin_loop();
        } else {
            std::thread::sleep(std::time::Duration::from_micros(20));
        }
    }
}

impl Plugin {
    fn amo(
        &self, region: u32, pe: u32, offset: usize, size: u32, op: u32, operand: u64, cond: u64, nbi: bool,
    ) -> Result<u64, String> {
        let req = Request { region, size, op, slot: 0, offset: offset as u64, operand, cond };
        if pe == self.rank {
            // Our own memory, as a request from ourselves would be served.
            return self.lock().serve_amo(&req, pe as c_int);
        }
        let kind = if nbi { SlotKind::Post } else { SlotKind::Fetch };
        let slot = self.with_slot(|inner| inner.send(self.am_comm, pe, kind, req))?;
        if nbi {
            return Ok(0);
        }
        // Wait for the answer, serving other PEs' requests meanwhile (they
        // may be waiting for ours).
        self.poll(|inner| {
            if !inner.slot_done(slot)? {
                return Ok(None);
            }
            inner.free.push(slot);
            Ok(Some(inner.slots[slot].reply.old))
        })
    }

    /// A fetching AMO that does not wait for its answer: the old value
    /// goes to `old` (`size` bytes) when it arrives, by the next flush of
    /// `pe` at the latest.
    #[allow(clippy::too_many_arguments, reason = "the ABI's amo arguments")]
    fn amo_fetch_nbi(
        &self, region: u32, pe: u32, offset: usize, size: u32, op: u32, operand: u64, cond: u64, old: *mut u8,
    ) -> Result<(), String> {
        let req = Request { region, size, op, slot: 0, offset: offset as u64, operand, cond };
        if pe == self.rank {
            let v = self.lock().serve_amo(&req, pe as c_int)?;
            // SAFETY: the ABI's FLAG_FETCH contract: old is valid.
            unsafe { abi::write_old(old, v, size as usize) };
            return Ok(());
        }
        self.with_slot(|inner| {
            let slot = inner.send(self.am_comm, pe, SlotKind::Fetch, req)?;
            inner.await_done(Awaited { slot, pe, recvs: Vec::new(), old: Some((old, size as usize)) });
            Ok(())
        })
    }

    /// AMOs on `region` of `pe` sent together, [`BATCH_MAX`] a request:
    /// posted (`old` unused), or fetching, their old values written to
    /// `old` when they arrive (by the next flush of `pe`; with `wait`,
    /// before returning).
    fn amo_batch(
        &self, region: u32, pe: u32, reqs: &[abi::TargetAmo], old: *mut u64, fetch: bool, wait: bool,
    ) -> Result<(), String> {
        if pe == self.rank {
            // Our own memory, as requests from ourselves would be served.
            let inner = self.lock();
            for (k, q) in reqs.iter().enumerate() {
                let req = Request {
                    region,
                    size: q.size,
                    op: q.op,
                    slot: 0,
                    offset: q.offset as u64,
                    operand: q.operand,
                    cond: q.cond,
                };
                let v = inner.serve_amo(&req, pe as c_int)?;
                if fetch {
                    // SAFETY: old holds reqs.len() values (the ABI's contract).
                    unsafe { old.add(k).write(v) };
                }
            }
            return Ok(());
        }
        for (c, chunk) in reqs.chunks(BATCH_MAX).enumerate() {
            let req =
                Request { region, size: 0, op: OP_AMO_BATCH, slot: 0, offset: 0, operand: chunk.len() as u64, cond: 0 };
            let mut records = chunk.to_vec();
            for q in &mut records {
                q.posted = u32::from(!fetch);
            }
            // SAFETY: plain 40-byte records, viewed as their bytes.
            let payload = unsafe {
                std::slice::from_raw_parts(records.as_ptr() as *const u8, std::mem::size_of_val(&records[..]))
            };
            self.with_slot(|inner| {
                let s = inner.free.pop().ok_or("no free AMO slot")?;
                if !fetch {
                    return inner.send_slot(self.am_comm, s, pe, SlotKind::Post, req, payload);
                }
                // The answer's receive first: the target answers as soon
                // as it has applied them.
                // SAFETY: old holds reqs.len() values and stays valid until
                // the flush that completes this receive (the ABI's
                // contract; with `wait`, this function waits for it).
                let q = unsafe { self.recv_data(old.add(c * BATCH_MAX).cast(), 8 * chunk.len(), pe, s) }?;
                inner.send_slot(self.am_comm, s, pe, SlotKind::Get, req, payload)?;
                inner.await_done(Awaited { slot: s, pe, recvs: vec![q], old: None });
                Ok(())
            })?;
        }
        if fetch && wait {
            self.poll(|inner| Ok((inner.awaited_left(pe as c_int) == 0).then_some(())))?;
        }
        Ok(())
    }

    /// Runs `f` under the lock once a client slot is free (serving others'
    /// requests while none is).
    fn with_slot<T>(&self, mut f: impl FnMut(&mut Inner) -> Result<T, String>) -> Result<T, String> {
        let mut backoff = Backoff(0);
        loop {
            let mut inner = self.lock();
            if !inner.free.is_empty() {
                return f(&mut inner);
            }
            inner.progress(self.am_comm)?;
            drop(inner);
            backoff.pause();
        }
    }

    /// A put to `pe`'s served `region`: posted like a non-fetching AMO
    /// (quiet's flush marker completes it at the target); `src` is free on
    /// return.
    fn served_put(&self, region: u32, pe: u32, offset: usize, src: *const u8, len: usize) -> Result<(), String> {
        let req = Request { region, size: 0, op: OP_PUT, slot: 0, offset: offset as u64, operand: len as u64, cond: 0 };
        if len <= EAGER {
            // SAFETY: the caller guarantees src for len bytes.
            let data = unsafe { std::slice::from_raw_parts(src, len) };
            return self.with_slot(|inner| {
                let s = inner.free.pop().ok_or("no free AMO slot")?;
                inner.send_slot(self.am_comm, s, pe, SlotKind::Post, req, data)
            });
        }
        // The request and its data leave under one hold of the lock, so
        // that the target, which takes the data right after the request,
        // finds them in this order.
        let mut sends = self.with_slot(|inner| {
            inner.send(self.am_comm, pe, SlotKind::Post, req)?;
            let mut sends = Vec::with_capacity(len.div_ceil(CHUNK));
            let mut done = 0;
            while done < len {
                let n = (len - done).min(CHUNK);
                let mut q = request_null();
                // SAFETY: src is valid for len bytes until the sends
                // complete (this function waits for them).
                check("MPI_Isend", unsafe {
                    ffi::MPI_Isend(
                        src.add(done) as *const c_void,
                        n as c_int,
                        ffi::RSMPI_UINT8_T,
                        pe as c_int,
                        TAG_DATA,
                        self.am_comm,
                        &mut q,
                    )
                })?;
                sends.push(q);
                done += n;
            }
            Ok(sends)
        })?;
        self.poll(|_| test_all(&mut sends))
    }

    /// Posts the receive of `len` bytes that `pe` sends to client slot `s`
    /// (a served get's data, a batch's old values) into `buf`.
    ///
    /// # Safety
    /// `buf` is valid for `len` bytes until the receive completes.
    unsafe fn recv_data(&self, buf: *mut u8, len: usize, pe: u32, s: usize) -> Result<ffi::MPI_Request, String> {
        let mut q = request_null();
        // SAFETY: the caller's contract.
        check("MPI_Irecv", unsafe {
            ffi::MPI_Irecv(
                buf as *mut c_void,
                len as c_int,
                ffi::RSMPI_UINT8_T,
                pe as c_int,
                TAG_GET_DATA + s as c_int,
                self.am_comm,
                &mut q,
            )
        })?;
        Ok(q)
    }

    /// A get from `pe`'s served `region` into `dst`: complete on return,
    /// or with `nbi` at the next flush of `pe` (or of every PE).
    fn served_get(
        &self, region: u32, pe: u32, offset: usize, dst: *mut u8, len: usize, nbi: bool,
    ) -> Result<(), String> {
        let req = Request { region, size: 0, op: OP_GET, slot: 0, offset: offset as u64, operand: len as u64, cond: 0 };
        let (slot, mut recvs) = self.with_slot(|inner| {
            let s = inner.free.pop().ok_or("no free AMO slot")?;
            // The data's receives first: the target sends as soon as it
            // serves the request.
            let mut recvs = Vec::with_capacity(len.div_ceil(CHUNK));
            let mut done = 0;
            while done < len {
                let n = (len - done).min(CHUNK);
                // SAFETY: dst is valid for len bytes until the receives
                // complete (this function, or with nbi the flush, waits
                // for them).
                recvs.push(unsafe { self.recv_data(dst.add(done), n, pe, s) }?);
                done += n;
            }
            inner.send_slot(self.am_comm, s, pe, SlotKind::Get, req, &[])?;
            Ok((s, recvs))
        })?;
        if nbi {
            let mut inner = self.lock();
            inner.await_done(Awaited { slot, pe, recvs, old: None });
            return Ok(());
        }
        self.poll(|inner| {
            if test_all(&mut recvs)?.is_none() || !inner.slot_done(slot)? {
                return Ok(None);
            }
            inner.free.push(slot);
            Ok(Some(()))
        })
    }

    /// Serves other PEs' requests and retires finished sends and answered
    /// markers until `done` returns a value (checked first, without a
    /// progress call: its tests and window syncs cost as much as a flush).
    fn poll<T>(&self, mut done: impl FnMut(&mut Inner) -> Result<Option<T>, String>) -> Result<T, String> {
        let mut backoff = Backoff(0);
        loop {
            let mut inner = self.lock();
            if let Some(v) = done(&mut inner)? {
                return Ok(v);
            }
            inner.serve(self.am_comm)?;
            inner.retire()?;
            if let Some(v) = done(&mut inner)? {
                return Ok(v);
            }
            drop(inner);
            backoff.pause();
        }
    }

    fn rma(
        &self, put: bool, region: u32, pe: u32, offset: usize, buf: *mut c_void, len: usize, nbi: bool,
    ) -> Result<(), String> {
        let mut inner = self.lock();
        if inner.served[region as usize % abi::REGIONS].get(pe as usize).copied().unwrap_or(false) {
            if pe == self.rank {
                // Our own region: through the core, as a request would be.
                let a = inner.served_access(region, offset as u64, len as u64, pe as c_int)?;
                // SAFETY: the core's callbacks on a checked range; buf is
                // valid for len bytes (the caller's contract).
                unsafe {
                    if put {
                        (a.write)(a.ctx, offset, buf, len);
                    } else {
                        (a.read)(a.ctx, offset, buf, len);
                    }
                }
                return Ok(());
            }
            drop(inner);
            return if put {
                self.served_put(region, pe, offset, buf as *const u8, len)
            } else {
                self.served_get(region, pe, offset, buf as *mut u8, len, nbi)
            };
        }
        let win = inner.win(region)?;
        // A small blocking put leaves from a copy, so the caller's buffer
        // is free at once, without waiting for MPI's local completion.
        let (buf, nbi) = if put && !nbi && len <= self.put_copy_max {
            (inner.copy_put(buf as *const u8, len)?, true)
        } else {
            (buf, nbi)
        };
        let mut done = 0;
        while done < len {
            let n = (len - done).min(MAX_CHUNK);
            // SAFETY: the caller guarantees buf is valid for len bytes and
            // offset + len is inside the target's region.
            let r = unsafe {
                let p = (buf as *mut u8).add(done) as *mut c_void;
                if put {
                    ffi::MPI_Put(
                        p,
                        n as c_int,
                        ffi::RSMPI_UINT8_T,
                        pe as c_int,
                        (offset + done) as ffi::MPI_Aint,
                        n as c_int,
                        ffi::RSMPI_UINT8_T,
                        win,
                    )
                } else {
                    ffi::MPI_Get(
                        p,
                        n as c_int,
                        ffi::RSMPI_UINT8_T,
                        pe as c_int,
                        (offset + done) as ffi::MPI_Aint,
                        n as c_int,
                        ffi::RSMPI_UINT8_T,
                        win,
                    )
                }
            };
            check(if put { "MPI_Put" } else { "MPI_Get" }, r)?;
            done += n;
        }
        inner.issued(region, pe, win, nbi)
    }

    /// A strided put of small blocks: packed into requests of at most
    /// [`EAGER`] bytes that the target's proxy unpacks ([`OP_PUT_STRIDED`]),
    /// posted like non-fetching AMOs (quiet's flush markers complete them).
    /// One-sided components that split a vector into a transfer per block
    /// (Open MPI's `osc/rdma`: about 3 us each on one node) take far longer
    /// than the messages; `buf` is free on return.
    fn packed_put(&self, region: u32, pe: u32, offset: usize, buf: *const u8, s: abi::Strides) -> Result<(), String> {
        let per = EAGER / s.block;
        let mut pack = vec![0u8; per * s.block];
        let mut b = 0;
        while b < s.nblocks {
            let n = (s.nblocks - b).min(per);
            for k in 0..n {
                let from = buf.wrapping_offset((b + k) as isize * s.local_stride);
                // SAFETY: the caller guarantees buf for every block; pack
                // holds per blocks.
                unsafe { std::ptr::copy_nonoverlapping(from, pack.as_mut_ptr().add(k * s.block), s.block) };
            }
            let first = (offset as isize + b as isize * s.target_stride) as u64;
            let req = Request {
                region,
                size: s.block as u32,
                op: OP_PUT_STRIDED,
                slot: 0,
                offset: first,
                operand: n as u64,
                cond: s.target_stride as i64 as u64,
            };
            let data = &pack[..n * s.block];
            self.with_slot(|inner| {
                let slot = inner.free.pop().ok_or("no free AMO slot")?;
                inner.send_slot(self.am_comm, slot, pe, SlotKind::Post, req, data)
            })?;
            b += n;
        }
        Ok(())
    }

    /// A block-strided put or get (`s`: see [`abi::Strides`]): one
    /// `MPI_Put`/`MPI_Get` with a vector datatype on each side, so that
    /// the MPI library moves all blocks as one operation (one message
    /// where it sends messages) instead of one call each. Block by block
    /// where that cannot be: served regions (their requests carry one
    /// range), blocks that overlap on the written side (MPI forbids
    /// overlapping entries there), counts beyond an `int`.
    fn rma_strided(
        &self, put: bool, region: u32, pe: u32, offset: usize, buf: *mut c_void, s: abi::Strides, nbi: bool,
    ) -> Result<(), String> {
        let mut inner = self.lock();
        let served = inner.served[region as usize % abi::REGIONS].get(pe as usize).copied().unwrap_or(false);
        // Served regions take requests only, so packing needs nothing more.
        if put
            && (self.packed_puts || served)
            && s.block > 0
            && s.block < SPAN_BLOCK
            && s.nblocks > 1
            && s.block * s.nblocks <= PACKED_MAX
            && pe != self.rank
        {
            drop(inner);
            return self.packed_put(region, pe, offset, buf as *const u8, s);
        }
        let written = if put { s.target_stride } else { s.local_stride };
        let one_call = s.nblocks > 1
            && s.block > 0
            && s.nblocks <= i32::MAX as usize
            && s.block <= i32::MAX as usize
            && written.unsigned_abs() >= s.block;
        if !one_call || served {
            drop(inner);
            // Block by block, each non-blocking, then one local completion
            // (a served region's puts are complete locally on return; its
            // gets when their data has come).
            for b in 0..s.nblocks as isize {
                let off = (offset as isize + b * s.target_stride) as usize;
                let p = (buf as *mut u8).wrapping_offset(b * s.local_stride) as *mut c_void;
                self.rma(put, region, pe, off, p, s.block, true)?;
            }
            if !nbi && served {
                self.poll(|i| Ok((i.awaited_left(pe as c_int) == 0).then_some(())))?;
            } else if !nbi {
                let inner = self.lock();
                let win = inner.win(region)?;
                // SAFETY: open window, valid rank.
                check("MPI_Win_flush_local", unsafe { ffi::MPI_Win_flush_local(pe as c_int, win) })?;
            }
            return Ok(());
        }
        let win = inner.win(region)?;
        // A get of small blocks close together: one contiguous get of
        // their whole span, then a copy of each block here. Reading the
        // gaps is harmless, and one-sided components that split a vector
        // into one transfer per block (Open MPI's osc/rdma: about 3 us
        // each on one node) move the span faster than the blocks.
        let last = (s.nblocks as isize - 1) * s.target_stride;
        let (lo, span) = (last.min(0), (last.unsigned_abs() + s.block));
        if !put && s.block < SPAN_BLOCK && span <= SPAN_FACTOR * s.block * s.nblocks && span <= SPAN_MAX {
            let mut tmp = vec![0u8; span];
            let at = (offset as isize + lo) as usize;
            // SAFETY: tmp holds span bytes; the span is inside the region
            // (its first and last blocks are).
            check("MPI_Get", unsafe {
                ffi::MPI_Get(
                    tmp.as_mut_ptr() as *mut c_void,
                    span as c_int,
                    ffi::RSMPI_UINT8_T,
                    pe as c_int,
                    at as ffi::MPI_Aint,
                    span as c_int,
                    ffi::RSMPI_UINT8_T,
                    win,
                )
            })?;
            inner.issued(region, pe, win, false)?;
            for b in 0..s.nblocks as isize {
                let from = (b * s.target_stride - lo) as usize;
                // SAFETY: the caller guarantees buf for every block; the
                // source lies in tmp.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        tmp.as_ptr().add(from),
                        (buf as *mut u8).offset(b * s.local_stride),
                        s.block,
                    )
                };
            }
            return Ok(());
        }
        let (local, target) = (Vector::new(s, s.local_stride)?, Vector::new(s, s.target_stride)?);
        // SAFETY: the caller guarantees buf for every block and every
        // target block inside the region; both types are committed.
        let r = unsafe {
            if put {
                ffi::MPI_Put(buf, 1, local.0, pe as c_int, offset as ffi::MPI_Aint, 1, target.0, win)
            } else {
                ffi::MPI_Get(buf, 1, local.0, pe as c_int, offset as ffi::MPI_Aint, 1, target.0, win)
            }
        };
        check(if put { "MPI_Put" } else { "MPI_Get" }, r)?;
        // The types may go at once: MPI keeps what a pending operation uses.
        drop((local, target));
        inner.issued(region, pe, win, nbi)
    }

    fn flush(&self, pe: c_int, finalizing: bool) -> Result<(), String> {
        {
            // Target by target: cheaper than MPI_Win_flush_all when few
            // targets were written, and MPICH 4.0's flush_all was seen to
            // return before large gets had landed (tests/c/rma_types.c).
            let mut inner = self.lock();
            for w in 0..abi::REGIONS {
                let win = inner.wins[w];
                let targets: Vec<u32> = if pe < 0 {
                    std::mem::take(&mut inner.dirty[w])
                } else if inner.is_dirty[w].get(pe as usize).copied().unwrap_or(false) {
                    inner.dirty[w].retain(|&t| t != pe as u32);
                    vec![pe as u32]
                } else {
                    Vec::new()
                };
                for t in targets {
                    inner.is_dirty[w][t as usize] = false;
                    // SAFETY: an open window and a valid rank.
                    check("MPI_Win_flush", unsafe { ffi::MPI_Win_flush(t as c_int, win) })?;
                }
            }
            if pe < 0 {
                inner.copies_free();
            }
            let left = if pe < 0 { inner.total_outstanding } else { inner.outstanding[pe as usize] as usize };
            if left == 0 && inner.awaited_left(pe) == 0 && (pe >= 0 || !inner.has_posts(finalizing)) {
                return Ok(());
            }
        }
        // Non-fetching AMOs: a flush for every PE sends a marker to each
        // target they went to, answered once they are applied (a flush for
        // one PE completes its transfers only: the core uses it to order
        // them before a signal or flag, an AMO that MPI delivers after the
        // earlier AMOs to that PE anyway). Posts to control words (barrier
        // and collective flags, which their targets wait for) are
        // completed only at finalize.
        if pe < 0 {
            self.send_markers(finalizing)?;
        }
        // The markers' answers, the non-blocking gets' data and fetching
        // AMOs' answers.
        self.poll(|i| {
            let left = if pe < 0 { i.total_outstanding } else { i.outstanding[pe as usize] as usize };
            Ok((left == 0 && i.awaited_left(pe) == 0).then_some(()))
        })
    }

    /// Sends a flush marker to every target of posted AMOs (control-word
    /// posts too when `all`), serving requests while no slot is free.
    fn send_markers(&self, all: bool) -> Result<(), String> {
        let mut backoff = Backoff(0);
        loop {
            let mut inner = self.lock();
            while inner.has_posts(all) && !inner.free.is_empty() {
                let t = match inner.posted.pop() {
                    Some(t) => t,
                    None => inner.ctrl_posted.pop().ok_or("no posted target")?,
                };
                if std::mem::take(&mut inner.is_posted[t as usize]) == 0 {
                    continue;
                }
                let marker = Request { op: OP_FLUSH, ..Request::default() };
                inner.send(self.am_comm, t, SlotKind::Marker, marker)?;
            }
            if !inner.has_posts(all) {
                return Ok(());
            }
            inner.progress(self.am_comm)?;
            drop(inner);
            backoff.pause();
        }
    }

    /// Collective: exposes `region`, as `size` bytes at `base` (a window)
    /// or served through `access` (no window here).
    fn expose(
        &self, region: u32, base: *mut c_void, size: usize, access: Option<abi::TargetOps>,
    ) -> Result<(), String> {
        let mut inner = self.lock();
        if region as usize >= abi::REGIONS || !inner.served[region as usize].is_empty() {
            return Err(format!("region {region} is unknown or already exposed"));
        }
        // Which ranks serve the region: a window only where some do not.
        let mine = u8::from(access.is_some());
        let mut all = vec![0u8; self.size as usize];
        // SAFETY: one byte from each rank into size bytes.
        check("MPI_Allgather", unsafe {
            ffi::MPI_Allgather(
                &mine as *const u8 as *const c_void,
                1,
                ffi::RSMPI_UINT8_T,
                all.as_mut_ptr() as *mut c_void,
                1,
                ffi::RSMPI_UINT8_T,
                self.comm,
            )
        })?;
        let (base, wsize) = if access.is_some() { (std::ptr::null_mut(), 0) } else { (base, size) };
        if all.contains(&0) {
            let mut win = win_null();
            // SAFETY: base/size describe memory the core keeps mapped until
            // finalize (none where this rank serves the region); disp_unit 1
            // (byte offsets).
            unsafe {
                check(
                    "MPI_Win_create",
                    ffi::MPI_Win_create(base, wsize as ffi::MPI_Aint, 1, ffi::RSMPI_INFO_NULL, self.comm, &mut win),
                )
                .map_err(|e| format!("{e}{}", win_create_hint(&self.name)))?;
                check("MPI_Win_set_errhandler", ffi::MPI_Win_set_errhandler(win, ffi::RSMPI_ERRORS_RETURN))?;
                check("MPI_Win_lock_all", ffi::MPI_Win_lock_all(ffi::MPI_MODE_NOCHECK as c_int, win))?;
            }
            inner.wins[region as usize] = win;
        }
        inner.served[region as usize] = all.iter().map(|&f| f != 0).collect();
        inner.access[region as usize] = access;
        inner.regions[region as usize] = (base as usize, size);
        if !inner.am_started {
            for r in inner.recvs.iter_mut() {
                r.post(self.am_comm)?;
            }
            inner.am_started = true;
        }
        Ok(())
    }

    fn finalize(&self) -> Result<(), String> {
        self.flush(-1, true)?;
        // Posts whose sends MPI has not yet completed locally (their
        // targets applied them: the markers said so): no request of ours
        // is left to MPI_Finalize, which over MPICH's UCX could wait for
        // peers already in its closing barrier.
        self.poll(|i| Ok(i.busy.is_empty().then_some(())))?;
        let mut inner = self.lock();
        // Replies we still send (their receivers have posted receives).
        for r in inner.replies.iter_mut() {
            // SAFETY: live request.
            check("MPI_Wait", unsafe { ffi::MPI_Wait(&mut r.req, status_ignore()) })?;
        }
        inner.replies.clear();
        // Everybody is done sending requests before receives are withdrawn.
        // A PE still waits for answers to its flush markers when others
        // get here, so the barrier serves requests while it waits.
        let mut req = request_null();
        // SAFETY: a collective on our own communicator, under the plugin lock.
        check("MPI_Ibarrier", unsafe { ffi::MPI_Ibarrier(self.comm, &mut req) })?;
        let mut backoff = Backoff(0);
        loop {
            let mut flag: c_int = 0;
            // SAFETY: the barrier's request.
            check("MPI_Test", unsafe { ffi::MPI_Test(&mut req, &mut flag, status_ignore()) })?;
            if flag != 0 {
                break;
            }
            inner.serve(self.am_comm)?;
            backoff.pause();
        }
        inner.serve(self.am_comm)?;
        for r in inner.replies.iter_mut() {
            // SAFETY: r.req is a pending reply send whose buffer r owns until it completes.
            check("MPI_Wait", unsafe { ffi::MPI_Wait(&mut r.req, status_ignore()) })?;
        }
        inner.replies.clear();
        if inner.am_started {
            for r in inner.recvs.iter_mut() {
                // SAFETY: live receive requests; cancelled ones complete.
                unsafe {
                    check("MPI_Cancel", ffi::MPI_Cancel(&mut r.req))?;
                    check("MPI_Wait", ffi::MPI_Wait(&mut r.req, status_ignore()))?;
                }
            }
            inner.am_started = false;
        }
        for w in 0..abi::REGIONS {
            if inner.wins[w] != win_null() {
                // SAFETY: open window, collective free (every rank exposed the
                // same regions in the same order).
                unsafe {
                    check("MPI_Win_unlock_all", ffi::MPI_Win_unlock_all(inner.wins[w]))?;
                    check("MPI_Win_free", ffi::MPI_Win_free(&mut inner.wins[w]))?;
                }
            }
        }
        let mut c = self.comm;
        let mut a = self.am_comm;
        // SAFETY: our duplicates.
        unsafe {
            check("MPI_Comm_free", ffi::MPI_Comm_free(&mut a))?;
            check("MPI_Comm_free", ffi::MPI_Comm_free(&mut c))?;
        }
        if self.owns {
            // SAFETY: we initialized MPI.
            check("MPI_Finalize", unsafe { ffi::MPI_Finalize() })?;
        }
        Ok(())
    }
}

// ----- the exported table ---------------------------------------------------

/// The body of an exported function: a panic becomes the error return
/// `on_panic`, with the panic in the plugin's last error, instead of
/// unwinding into the core.
fn guarded(what: &str, on_panic: c_int, f: impl FnOnce() -> c_int) -> c_int {
    abi::ffi_guard(
        on_panic,
        |m| {
            set_error(format!("internal error (panic) in {what}: {m}"));
        },
        f,
    )
}

fn status(r: Result<(), String>) -> c_int {
    match r {
        Ok(()) => 0,
        Err(e) => set_error(e),
    }
}

unsafe extern "C" fn op_allgather(ctx: *mut c_void, send: *const c_void, recv: *mut c_void, len: usize) -> c_int {
    guarded("op_allgather", 1, || {
        let p = plugin(ctx);
        let _g = p.lock();
        if len > i32::MAX as usize {
            return set_error(format!("allgather of {len} bytes is too large"));
        }
        // SAFETY: the core passes len readable bytes at send and size*len writable bytes at recv.
        status(check("MPI_Allgather", unsafe {
            ffi::MPI_Allgather(send, len as c_int, ffi::RSMPI_UINT8_T, recv, len as c_int, ffi::RSMPI_UINT8_T, p.comm)
        }))
    })
}

unsafe extern "C" fn op_barrier(ctx: *mut c_void) -> c_int {
    guarded("op_barrier", 1, || {
        let p = plugin(ctx);
        let _g = p.lock();
        // SAFETY: a collective on our own communicator, under the plugin lock.
        status(check("MPI_Barrier", unsafe { ffi::MPI_Barrier(p.comm) }))
    })
}

unsafe extern "C" fn op_expose(ctx: *mut c_void, region: u32, base: *mut c_void, size: usize) -> c_int {
    guarded("op_expose", 1, || status(plugin(ctx).expose(region, base, size, None)))
}

unsafe extern "C" fn op_expose_served(
    ctx: *mut c_void, region: u32, size: usize, target: *const abi::TargetOps,
) -> c_int {
    guarded("op_expose_served", 1, || {
        if target.is_null() {
            return set_error("expose_served without callbacks".into());
        }
        // SAFETY: the ABI's contract: target is valid (and stays so).
        let t = unsafe { *target };
        status(plugin(ctx).expose(region, std::ptr::null_mut(), size, Some(t)))
    })
}

unsafe extern "C" fn op_put(
    ctx: *mut c_void, region: u32, pe: u32, offset: usize, src: *const c_void, len: usize, flags: u32,
) -> c_int {
    guarded("op_put", 1, || {
        status(plugin(ctx).rma(true, region, pe, offset, src as *mut c_void, len, flags & abi::FLAG_NBI != 0))
    })
}

unsafe extern "C" fn op_get(
    ctx: *mut c_void, region: u32, pe: u32, offset: usize, dst: *mut c_void, len: usize, flags: u32,
) -> c_int {
    guarded("op_get", 1, || status(plugin(ctx).rma(false, region, pe, offset, dst, len, flags & abi::FLAG_NBI != 0)))
}

unsafe extern "C" fn op_put_strided(
    ctx: *mut c_void, region: u32, pe: u32, offset: usize, src: *const c_void, strides: *const abi::Strides, flags: u32,
) -> c_int {
    guarded("op_put_strided", 1, || {
        // SAFETY: the ABI's contract: strides is valid.
        let s = unsafe { *strides };
        status(plugin(ctx).rma_strided(true, region, pe, offset, src as *mut c_void, s, flags & abi::FLAG_NBI != 0))
    })
}

unsafe extern "C" fn op_get_strided(
    ctx: *mut c_void, region: u32, pe: u32, offset: usize, dst: *mut c_void, strides: *const abi::Strides, flags: u32,
) -> c_int {
    guarded("op_get_strided", 1, || {
        // SAFETY: as for op_put_strided.
        let s = unsafe { *strides };
        status(plugin(ctx).rma_strided(false, region, pe, offset, dst, s, flags & abi::FLAG_NBI != 0))
    })
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn op_amo(
    ctx: *mut c_void, region: u32, pe: u32, offset: usize, size: u32, op: u32, operand: u64, cond: u64, old: *mut u64,
    flags: u32,
) -> c_int {
    guarded("op_amo", 1, || {
        if flags & (abi::FLAG_NBI | abi::FLAG_FETCH) == abi::FLAG_NBI | abi::FLAG_FETCH {
            let p = plugin(ctx);
            return status(p.amo_fetch_nbi(region, pe, offset, size, op, operand, cond, old.cast()));
        }
        match plugin(ctx).amo(region, pe, offset, size, op, operand, cond, flags & abi::FLAG_NBI != 0) {
            Ok(v) => {
                if !old.is_null() {
                    // SAFETY: the caller passes a valid pointer or null.
                    unsafe { *old = v };
                }
                0
            }
            Err(e) => set_error(e),
        }
    })
}

unsafe extern "C" fn op_amo_batch(
    ctx: *mut c_void, region: u32, pe: u32, n: usize, reqs: *const abi::TargetAmo, old: *mut u64, flags: u32,
) -> c_int {
    guarded("op_amo_batch", 1, || {
        if n == 0 {
            return 0;
        }
        // SAFETY: the ABI's contract: reqs holds n records.
        let reqs = unsafe { std::slice::from_raw_parts(reqs, n) };
        let nbi = flags & abi::FLAG_NBI != 0;
        let fetch = !nbi || flags & abi::FLAG_FETCH != 0;
        status(plugin(ctx).amo_batch(region, pe, reqs, old, fetch, !nbi))
    })
}

unsafe extern "C" fn op_flush(ctx: *mut c_void, pe: c_int) -> c_int {
    guarded("op_flush", 1, || status(plugin(ctx).flush(pe, false)))
}

unsafe extern "C" fn op_progress(ctx: *mut c_void) -> c_int {
    guarded("op_progress", -1, || {
        let p = plugin(ctx);
        let Ok(mut inner) = p.inner.try_lock() else {
            // Another thread of this process is inside MPI and progresses.
            return 0;
        };
        match inner.progress(p.am_comm) {
            Ok(n) => n as c_int,
            Err(e) => {
                set_error(e);
                -1
            }
        }
    })
}

unsafe extern "C" fn op_abort(ctx: *mut c_void, code: c_int) {
    // No error return: a panic is dropped (the job is ending anyway).
    abi::ffi_guard(
        (),
        |_| {},
        || {
            let p = plugin(ctx);
            // Whoever holds the lock may be blocked for good; abort regardless.
            let _g = p.inner.try_lock();
            // SAFETY: MPI_Abort may be called at any time after init.
            unsafe { ffi::MPI_Abort(p.comm, code) };
        },
    )
}

unsafe extern "C" fn op_finalize(ctx: *mut c_void) -> c_int {
    guarded("op_finalize", 1, || {
        let r = plugin(ctx).finalize();
        if r.is_ok() {
            // SAFETY: created by Box::into_raw in init; no further calls.
            drop(unsafe { Box::from_raw(ctx as *mut Plugin) });
        }
        status(r)
    })
}

unsafe extern "C" fn op_last_error(_ctx: *mut c_void) -> *const c_char {
    // The thread's message lives until its next failure; a thread being
    // torn down (no thread-local any more) gets an empty one.
    abi::ffi_guard(c"".as_ptr(), |_| {}, || LAST_ERROR.with(|e| e.borrow().as_ptr()))
}

fn write_err(args: &abi::ProxyInitArgs, msg: &str) -> c_int {
    if !args.err.is_null() && args.err_len > 0 {
        let n = msg.len().min(args.err_len - 1);
        // SAFETY: err is valid for err_len bytes (the ABI's contract).
        unsafe {
            std::ptr::copy_nonoverlapping(msg.as_ptr(), args.err as *mut u8, n);
            *args.err.add(n) = 0;
        }
    }
    1
}

/// What to do when `MPI_Win_create` fails, for the MPI named `name` (the
/// plugin's name: library, version and thread level).
fn win_create_hint(name: &CStr) -> String {
    let name = name.to_string_lossy();
    if !name.starts_with("Open MPI") {
        return String::new();
    }
    // Open MPI 4.1 exposes existing memory through osc rdma (a BTL with
    // RDMA or single-copy: vader needs CMA, XPMEM or KNEM), osc ucx (a UCX
    // RDMA transport) or osc pt2pt (only with the ob1 PML, and not under
    // MPI_THREAD_MULTIPLE). On a node whose processes cannot use CMA
    // (containers; btl_vader_single_copy_mechanism=none) with the ucx PML
    // selected, none of them can.
    let multiple = if name.contains("MPI_THREAD_MULTIPLE") {
        " (osc pt2pt refuses windows under MPI_THREAD_MULTIPLE: initialize MPI with MPI_THREAD_SERIALIZED)"
    } else {
        ""
    };
    format!(
        ". No one-sided component of {name} can expose existing memory here: osc rdma needs a transport with \
         RDMA or single-copy (CMA, XPMEM, KNEM), osc ucx an RDMA-capable UCX transport, osc pt2pt the ob1 PML{multiple}. \
         Where the others cannot serve, run with `mpirun --mca pml ob1 --mca osc pt2pt` (or OMPI_MCA_pml=ob1 \
         OMPI_MCA_osc=pt2pt); `--mca osc_base_verbose 100` shows why each component declined"
    )
}

fn library_version() -> String {
    let mut buf = vec![0u8; 8192];
    let mut len: c_int = 0;
    // SAFETY: the buffer is larger than MPI_MAX_LIBRARY_VERSION_STRING.
    if unsafe { ffi::MPI_Get_library_version(buf.as_mut_ptr() as *mut c_char, &mut len) } != 0 {
        return "MPI".into();
    }
    buf.truncate(len.max(0) as usize);
    let s = String::from_utf8_lossy(&buf).replace('\0', "");
    // "Open MPI v4.1.4, package: ..." / "MPICH Version: 4.0.2 ...": the
    // first phrase names the library and version.
    let first = s.lines().next().unwrap_or("MPI");
    let first = first.split(',').next().unwrap_or(first);
    first.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn init(args: &abi::ProxyInitArgs) -> Result<(Box<Plugin>, c_int), String> {
    let mut initialized: c_int = 0;
    // SAFETY: MPI_Initialized may be called before MPI_Init.
    check("MPI_Initialized", unsafe { ffi::MPI_Initialized(&mut initialized) })?;
    let mut provided: c_int = 0;
    let mut owns = false;
    if initialized == 0 {
        if !args.app_comm.is_null() {
            return Err("a communicator was passed but MPI is not initialized".into());
        }
        // SERIALIZED is all the plugin needs (every function takes its
        // lock; the core then lets any thread call, the progress thread
        // and the device proxy included). Asking for MULTIPLE costs: Open
        // MPI 4.1's pt2pt one-sided component refuses windows under it, so
        // where rdma and ucx cannot serve (no single-copy transport, UCX
        // without one) MPI_Win_create failed (the GPU machines' Open MPI
        // 4.1.6), and MPIs lock internally under MULTIPLE.
        // SAFETY: plain MPI_Init_thread with no arguments.
        check("MPI_Init_thread", unsafe {
            ffi::MPI_Init_thread(
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                ffi::RSMPI_THREAD_SERIALIZED,
                &mut provided,
            )
        })?;
        owns = true;
    } else {
        // SAFETY: MPI is initialized.
        check("MPI_Query_thread", unsafe { ffi::MPI_Query_thread(&mut provided) })?;
    }
    // SAFETY: the RSMPI_* constants are link-time values of this MPI.
    let level = unsafe {
        if provided == ffi::RSMPI_THREAD_MULTIPLE {
            abi::THREAD_MULTIPLE
        } else if provided == ffi::RSMPI_THREAD_SERIALIZED {
            abi::THREAD_SERIALIZED
        } else if provided == ffi::RSMPI_THREAD_FUNNELED {
            abi::THREAD_FUNNELED
        } else {
            abi::THREAD_SINGLE
        }
    };
    let base_comm = if args.app_comm.is_null() {
        // SAFETY: a constant of the loaded MPI, only read.
        unsafe { ffi::RSMPI_COMM_WORLD }
    } else {
        // SAFETY: the ABI says app_comm points to an MPI_Comm of this MPI.
        unsafe { *(args.app_comm as *const ffi::MPI_Comm) }
    };
    let mut comm = comm_null();
    let mut am_comm = comm_null();
    let (mut rank, mut size) = (0, 0);
    // SAFETY: valid communicator handles.
    unsafe {
        check("MPI_Comm_dup", ffi::MPI_Comm_dup(base_comm, &mut comm))?;
        check("MPI_Comm_dup", ffi::MPI_Comm_dup(base_comm, &mut am_comm))?;
        check("MPI_Comm_set_errhandler", ffi::MPI_Comm_set_errhandler(comm, ffi::RSMPI_ERRORS_RETURN))?;
        check("MPI_Comm_set_errhandler", ffi::MPI_Comm_set_errhandler(am_comm, ffi::RSMPI_ERRORS_RETURN))?;
        check("MPI_Comm_rank", ffi::MPI_Comm_rank(comm, &mut rank))?;
        check("MPI_Comm_size", ffi::MPI_Comm_size(comm, &mut size))?;
    }
    {
        // Processes of this job on this node against the cores this one
        // may use (see `Backoff`).
        let mut node: ffi::MPI_Comm = comm;
        let mut node_size: c_int = 1;
        // SAFETY: a valid communicator; the node communicator is freed here.
        unsafe {
            check(
                "MPI_Comm_split_type",
                ffi::MPI_Comm_split_type(comm, ffi::RSMPI_COMM_TYPE_SHARED, 0, ffi::RSMPI_INFO_NULL, &mut node),
            )?;
            check("MPI_Comm_size", ffi::MPI_Comm_size(node, &mut node_size))?;
            check("MPI_Comm_free", ffi::MPI_Comm_free(&mut node))?;
        }
        let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
        OVERSUBSCRIBED.store(node_size as usize > cores, std::sync::atomic::Ordering::Relaxed);
    }
    let level_name =
        ["MPI_THREAD_SINGLE", "MPI_THREAD_FUNNELED", "MPI_THREAD_SERIALIZED", "MPI_THREAD_MULTIPLE"][level as usize];
    let name = format!("{} ({level_name})", library_version());
    let slots = (0..SLOTS)
        .map(|_| ClientSlot {
            kind: SlotKind::Post,
            target: 0,
            send: request_null(),
            recv: request_null(),
            req: Box::default(),
            reply: Box::default(),
            message: None,
        })
        .collect();
    let recvs = (0..RECVS).map(|_| ServerRecv { req: request_null(), buf: Message::boxed() }).collect();
    Ok((
        Box::new(Plugin {
            comm,
            am_comm,
            rank: rank as u32,
            size: size as u32,
            owns,
            // The core's rule for its progress thread (remote/mod.rs): on
            // every PE alike, as the job runs one MPI at one level.
            packed_puts: args.flags & abi::INIT_PROGRESS_THREAD != 0
                && (level == abi::THREAD_MULTIPLE || (owns && level >= abi::THREAD_SERIALIZED)),
            put_copy_max: args.put_copy_max.min(COPY_BYTES / 4),
            inner: Mutex::new(Inner {
                wins: [win_null(); abi::REGIONS],
                dirty: [Vec::new(), Vec::new(), Vec::new()],
                is_dirty: [vec![false; size as usize], vec![false; size as usize], vec![false; size as usize]],
                regions: [(0, 0); abi::REGIONS],
                access: [None; abi::REGIONS],
                served: [Vec::new(), Vec::new(), Vec::new()],
                bounce: 0,
                slots,
                free: (0..SLOTS).rev().collect(),
                busy: Vec::new(),
                posted: Vec::new(),
                ctrl_posted: Vec::new(),
                is_posted: vec![0; size as usize],
                outstanding: vec![0; size as usize],
                total_outstanding: 0,
                awaited: Vec::new(),
                awaited_to: vec![0; size as usize],
                copies: Vec::new(),
                copies_used: 0,
                copies_pending: false,
                recvs,
                next_recv: 0,
                replies: Vec::new(),
                am_started: false,
            }),
            name: CString::new(name).unwrap_or_default(),
        }),
        level,
    ))
}

/// The plugin's entry point (see `ishmem_proxy_abi`).
///
/// # Safety
/// `args` and `ops` are valid pointers (the core's call).
#[no_mangle]
pub unsafe extern "C" fn ishmem_proxy_init(args: *const abi::ProxyInitArgs, ops: *mut abi::ProxyOps) -> c_int {
    let r = std::panic::catch_unwind(|| {
        // SAFETY: the ABI's contract.
        let args = unsafe { &*args };
        if args.abi_version != abi::ABI_VERSION {
            return write_err(
                args,
                &format!("the core speaks proxy ABI {}, this plugin {}", args.abi_version, abi::ABI_VERSION),
            );
        }
        match init(args) {
            Ok((p, level)) => {
                let name = p.name.as_ptr();
                let (rank, size, owns) = (p.rank, p.size, p.owns);
                let ctx = Box::into_raw(p) as *mut c_void;
                // SAFETY: ops is valid for a write (the ABI's contract).
                unsafe {
                    ops.write(abi::ProxyOps {
                        abi_version: abi::ABI_VERSION,
                        rank,
                        size,
                        thread_level: level,
                        owns_runtime: u32::from(owns),
                        reserved: 0,
                        ctx,
                        name,
                        allgather: op_allgather,
                        barrier: op_barrier,
                        expose: op_expose,
                        put: op_put,
                        get: op_get,
                        amo: op_amo,
                        flush: op_flush,
                        progress: op_progress,
                        abort: op_abort,
                        finalize: op_finalize,
                        last_error: op_last_error,
                        alloc: None,
                        expose_served: Some(op_expose_served),
                        self_progressing: 0,
                        reserved2: 0,
                        put_strided: Some(op_put_strided),
                        get_strided: Some(op_get_strided),
                        amo_batch: Some(op_amo_batch),
                    })
                };
                0
            }
            Err(e) => write_err(args, &e),
        }
    });
    r.unwrap_or(1)
}
