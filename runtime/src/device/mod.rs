//! The device seam: a [`Device`] owns where the symmetric heap lives, the
//! kernel runtime that runs device code, the reverse-offload ring's server
//! thread, and the device-queue operations (`ishmemx_*_on_queue`).
//!
//! One device is chosen at init from `ISHMEM_DEVICE` ([`select`]); the core
//! reaches it only through this trait. The CPU device ([`cpu::CpuDevice`],
//! the embedded default) keeps heaps in shared memory (memfd) and runs
//! kernels on a CPU OpenCL runtime that consumes SPIR-V, loaded at the
//! first device call. A GPU device fits the same shape: its heap is device
//! memory exported as a file descriptor (so the bootstraps pass it between
//! processes like a memfd), its ring lives where kernels and the host
//! thread both reach it, and its queue operations take the GPU's stream or
//! command list. The Level Zero device ([`ze::ZeDevice`], Intel GPUs) has
//! that shape too, and is unverified on hardware.
//!
//! The ring server performs each device request through a [`RingHandler`]
//! the core gives the device when the PE is up ([`Device::attach`]); this
//! module knows nothing of the core.

pub mod cpu;
pub mod cuda;
pub mod opaque;
pub mod opencl;
pub mod program_cache;
pub mod ring_server;
pub mod ze;

use crate::device_state::ishmemx_device_state_t;
use crate::dynlib::LoadError;
use crate::env::{Config, DeviceKind, DeviceSync};
use crate::mem::HeapRegion;
use crate::ring::{DecodeError, Request, Ring};
use crate::types::Amo;
use std::ffi::c_void;
use std::fmt;
use std::os::fd::OwnedFd;

/// What went wrong in a device backend.
#[derive(Debug)]
pub enum DeviceError {
    /// The device's runtime or hardware is not there: what was tried, and
    /// what to install.
    Unavailable(String),
    /// The device runtime reported an error.
    Runtime(String),
    /// A heap could not be created or mapped.
    Heap { what: String, source: std::io::Error },
    /// The device's runtime library could not be loaded: every path tried.
    Load(LoadError),
    /// The OpenCL runtime of the CPU device failed.
    OpenCl(opencl::ClError),
    /// A CUDA driver call failed; `context` says what it was for (empty:
    /// the call says it all).
    Cuda { context: String, error: cuda::driver::CuError },
    /// Level Zero or its GPU failed; `context` says what it was for
    /// (empty: the error says it all).
    Ze { context: String, error: ze::ZeError },
}

impl From<ze::ZeError> for DeviceError {
    fn from(error: ze::ZeError) -> DeviceError {
        DeviceError::Ze { context: String::new(), error }
    }
}

impl From<cuda::driver::CuError> for DeviceError {
    fn from(error: cuda::driver::CuError) -> DeviceError {
        DeviceError::Cuda { context: String::new(), error }
    }
}

impl From<opencl::ClError> for DeviceError {
    fn from(e: opencl::ClError) -> DeviceError {
        DeviceError::OpenCl(e)
    }
}

impl From<LoadError> for DeviceError {
    fn from(e: LoadError) -> DeviceError {
        DeviceError::Load(e)
    }
}

impl fmt::Display for DeviceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceError::Unavailable(m) | DeviceError::Runtime(m) => f.write_str(m),
            DeviceError::Heap { what, source } => write!(f, "{what}: {source}"),
            DeviceError::Load(e) => e.fmt(f),
            DeviceError::OpenCl(e) => e.fmt(f),
            DeviceError::Cuda { context, error } if context.is_empty() => error.fmt(f),
            DeviceError::Cuda { context, error } => write!(f, "{context}: {error}"),
            DeviceError::Ze { context, error } if context.is_empty() => error.fmt(f),
            DeviceError::Ze { context, error } => write!(f, "{context}: {error}"),
        }
    }
}

impl std::error::Error for DeviceError {}

/// A native handle of the device's kernel runtime, for programs that drive
/// it themselves (`ishmemx_cl_context` and friends).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Native {
    Context,
    Device,
    Queue,
}

/// An operation enqueued on a device queue after its dependencies; the
/// core has checked its arguments.
#[derive(Clone, Copy, Debug)]
pub enum QueueOp {
    Put {
        dest: *mut c_void,
        source: *const c_void,
        nbytes: usize,
        pe: i32,
    },
    Get {
        dest: *mut c_void,
        source: *const c_void,
        nbytes: usize,
        pe: i32,
    },
    BarrierAll,
    Quiet,
    /// The data, then the signal update (`sig_op`: 0 set, 1 add).
    PutSignal {
        dest: *mut c_void,
        source: *const c_void,
        nbytes: usize,
        sig_addr: *mut u64,
        signal: u64,
        sig_op: i32,
        pe: i32,
    },
    /// Waits until this PE's `*sig_addr CMP cmp_value` holds.
    SignalWaitUntil {
        sig_addr: *mut u64,
        cmp: i32,
        cmp_value: u64,
    },
    SyncAll,
    /// A collective of the device's group form (CUDA: one block of the
    /// device library), launched on the queue.
    Coll(QueueColl),
}

/// A parameter of a kernel of the SPIR-V device library: its OpenCL C type
/// and name.
#[derive(Clone, Copy, Debug)]
pub struct QueueParam {
    pub ty: &'static str,
    pub name: &'static str,
}

/// A kernel of the SPIR-V device library behind a [`QueueOp`] (one
/// work-item): ishmem-gen writes `device-lib/src/queue_kernels.h` from this
/// table, and the OpenCL and Level Zero devices launch them with the
/// arguments [`QueueOp::spirv_kernel`] gives, in this order.
#[derive(Clone, Copy, Debug)]
pub struct QueueKernel {
    pub name: &'static str,
    pub params: &'static [QueueParam],
    /// The statements of its body (OpenCL C).
    pub body: &'static [&'static str],
}

const fn qp(ty: &'static str, name: &'static str) -> QueueParam {
    QueueParam { ty, name }
}
const RMA_PARAMS: &[QueueParam] =
    &[qp("global void *", "dest"), qp("global const void *", "source"), qp("ulong", "nbytes"), qp("int", "pe")];

const PUTMEM_KERNEL: QueueKernel = QueueKernel {
    name: "ishmemi_putmem_kernel",
    params: RMA_PARAMS,
    body: &["ishmem_putmem(dest, source, nbytes, pe);", "ishmem_quiet();"],
};
const GETMEM_KERNEL: QueueKernel = QueueKernel {
    name: "ishmemi_getmem_kernel",
    params: RMA_PARAMS,
    body: &["ishmem_getmem(dest, source, nbytes, pe);"],
};
const BARRIER_ALL_KERNEL: QueueKernel =
    QueueKernel { name: "ishmemi_barrier_all_kernel", params: &[], body: &["ishmem_barrier_all();"] };
const QUIET_KERNEL: QueueKernel = QueueKernel { name: "ishmemi_quiet_kernel", params: &[], body: &["ishmem_quiet();"] };
const PUTMEM_SIGNAL_KERNEL: QueueKernel = QueueKernel {
    name: "ishmemi_putmem_signal_kernel",
    params: &[
        qp("global void *", "dest"),
        qp("global const void *", "source"),
        qp("ulong", "nbytes"),
        qp("global ulong *", "sig_addr"),
        qp("ulong", "signal"),
        qp("int", "sig_op"),
        qp("int", "pe"),
    ],
    body: &["ishmem_putmem_signal(dest, source, nbytes, sig_addr, signal, sig_op, pe);", "ishmem_quiet();"],
};
const SIGNAL_WAIT_UNTIL_KERNEL: QueueKernel = QueueKernel {
    name: "ishmemi_signal_wait_until_kernel",
    params: &[qp("global ulong *", "sig_addr"), qp("int", "cmp"), qp("ulong", "cmp_value")],
    body: &["ishmem_signal_wait_until(sig_addr, cmp, cmp_value);"],
};
const SYNC_ALL_KERNEL: QueueKernel =
    QueueKernel { name: "ishmemi_sync_all_kernel", params: &[], body: &["ishmem_sync_all();"] };

/// The SPIR-V library's queue kernels, in [`QueueOp`]'s order.
pub const QUEUE_KERNELS: &[QueueKernel] = &[
    PUTMEM_KERNEL,
    GETMEM_KERNEL,
    BARRIER_ALL_KERNEL,
    QUIET_KERNEL,
    PUTMEM_SIGNAL_KERNEL,
    SIGNAL_WAIT_UNTIL_KERNEL,
    SYNC_ALL_KERNEL,
];

/// An argument of a queue kernel: a pointer (an OpenCL `global` pointer,
/// device or shared memory), a `ulong` or an `int`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueArg {
    Ptr(*const c_void),
    U64(u64),
    I32(i32),
}

impl QueueOp {
    /// The SPIR-V library's kernel behind this operation and its arguments
    /// (`None` for collectives: the CUDA device library's only).
    pub fn spirv_kernel(&self) -> Option<(&'static QueueKernel, Vec<QueueArg>)> {
        use QueueArg::*;
        Some(match *self {
            QueueOp::Put { dest, source, nbytes, pe } => {
                (&PUTMEM_KERNEL, vec![Ptr(dest), Ptr(source), U64(nbytes as u64), I32(pe)])
            }
            QueueOp::Get { dest, source, nbytes, pe } => {
                (&GETMEM_KERNEL, vec![Ptr(dest), Ptr(source), U64(nbytes as u64), I32(pe)])
            }
            QueueOp::BarrierAll => (&BARRIER_ALL_KERNEL, vec![]),
            QueueOp::Quiet => (&QUIET_KERNEL, vec![]),
            QueueOp::SyncAll => (&SYNC_ALL_KERNEL, vec![]),
            QueueOp::PutSignal { dest, source, nbytes, sig_addr, signal, sig_op, pe } => (
                &PUTMEM_SIGNAL_KERNEL,
                vec![
                    Ptr(dest),
                    Ptr(source),
                    U64(nbytes as u64),
                    Ptr(sig_addr.cast()),
                    U64(signal),
                    I32(sig_op),
                    I32(pe),
                ],
            ),
            QueueOp::SignalWaitUntil { sig_addr, cmp, cmp_value } => {
                (&SIGNAL_WAIT_UNTIL_KERNEL, vec![Ptr(sig_addr.cast()), I32(cmp), U64(cmp_value)])
            }
            QueueOp::Coll(_) => return None,
        })
    }
}

/// One group of the stream collectives' codes: `(name, code)` rows, the
/// codes 0, 1, ... in order (asserted below); the device library's
/// generated `device_codes.h` defines each as `ISHMEMI_<name>` and the
/// group's size as `ISHMEMI_<group>_COUNT`, which device code that switches
/// on the group asserts.
#[derive(Clone, Copy, Debug)]
pub struct CodeGroup {
    /// The prefix of every name in the group.
    pub group: &'static str,
    pub codes: &'static [(&'static str, u32)],
}

/// Declares a group of codes from one table: a `pub const` per row and the
/// [`CodeGroup`] listing them.
macro_rules! code_group {
    ($(#[$doc:meta])* $table:ident = $group:literal { $($name:ident = $code:literal,)* }) => {
        $(
            #[doc = concat!("A code of [`", stringify!($table), "`].")]
            pub const $name: u32 = $code;
        )*
        $(#[$doc])*
        pub const $table: CodeGroup =
            CodeGroup { group: $group, codes: &[$((stringify!($name), $name)),*] };
    };
}

code_group! {
    /// What [`QueueColl::kind`] runs.
    COLL_CODES = "COLL" {
        COLL_TEAM_SYNC = 0,
        COLL_BROADCAST = 1,
        COLL_COLLECT = 2,
        COLL_FCOLLECT = 3,
        COLL_ALLTOALL = 4,
        COLL_REDUCE = 5,
        COLL_INSCAN = 6,
        COLL_EXSCAN = 7,
    }
}

code_group! {
    /// The element kinds of [`QueueColl::dtype`]: float, double, then signed
    /// and unsigned integers of 1, 2, 4 and 8 bytes.
    ELEM_CODES = "ELEM" {
        ELEM_F32 = 0,
        ELEM_F64 = 1,
        ELEM_I8 = 2,
        ELEM_U8 = 3,
        ELEM_I16 = 4,
        ELEM_U16 = 5,
        ELEM_I32 = 6,
        ELEM_U32 = 7,
        ELEM_I64 = 8,
        ELEM_U64 = 9,
    }
}

code_group! {
    /// The reduction operators of [`QueueColl::rop`].
    ROP_CODES = "ROP" {
        ROP_AND = 0,
        ROP_OR = 1,
        ROP_XOR = 2,
        ROP_MAX = 3,
        ROP_MIN = 4,
        ROP_SUM = 5,
        ROP_PROD = 6,
    }
}

code_group! {
    /// Which of the device API's waits a wait that lasted is (the ring's
    /// wait words, `ring::Ring::wait_what`, bits 0-7; bits 8-15 hold its
    /// element's `ELEM_*` code, 16-23 the comparison). `WAIT_TEAM_SYNC` is
    /// a team sync through the control segment: bits 8-15 its round, 16-23
    /// its team slot; the address word holds the world PE it waits for,
    /// the value its epoch.
    WAIT_CODES = "WAIT" {
        WAIT_UNTIL = 0,
        WAIT_UNTIL_ALL = 1,
        WAIT_UNTIL_ANY = 2,
        WAIT_UNTIL_SOME = 3,
        WAIT_SIGNAL = 4,
        WAIT_TEAM_SYNC = 5,
    }
}

/// A device collective call's signature as `core.h` builds it
/// (`ISHMEMI_SIG`): the [`COLL_CODES`] kind in bits 0-3, the element kind
/// and operator ([`ELEM_CODES`] | [`ROP_CODES`] << 4, or a collect's
/// element size) in bits 4-15, the root in bits 16-31 and the bytes or
/// elements in bits 32-63.
pub fn describe_sig(sig: u64) -> String {
    let kind = (sig & 0xf) as u32;
    let code = ((sig >> 4) & 0xfff) as u32;
    let (root, count) = ((sig >> 16) as u16, sig >> 32);
    let name = |group: &CodeGroup, c: u32| {
        group
            .codes
            .iter()
            .find(|(_, v)| *v == c)
            .map_or(format!("#{c}"), |(n, _)| n.split_once('_').map_or(*n, |(_, rest)| rest).to_lowercase())
    };
    // ELEM_I64 is Rust's i64: named as host reports name types.
    let elem = || {
        let e = name(&ELEM_CODES, code & 0xf);
        crate::collsig::type_description(&e).map_or(e, str::to_string)
    };
    // The host's words for the same calls (`collsig::Sig::describe`).
    match kind {
        COLL_TEAM_SYNC => "a barrier or sync (barrier_all, sync_all or team_sync)".into(),
        COLL_BROADCAST => format!("broadcast of {count} bytes from team PE {root}"),
        COLL_COLLECT => format!("collect of {code}-byte elements"),
        COLL_FCOLLECT => format!("fcollect of {count} bytes per PE"),
        COLL_ALLTOALL => format!("alltoall of {count} bytes per PE"),
        COLL_REDUCE => format!("{} reduction of {count} elements of {}", name(&ROP_CODES, code >> 4), elem()),
        COLL_INSCAN => format!("sum_inscan of {count} elements of {}", elem()),
        COLL_EXSCAN => format!("sum_exscan of {count} elements of {}", elem()),
        k => format!("an unknown collective (kind {k})"),
    }
}

/// What a report can say of another member's call from its 16 bits.
pub fn describe_sig16(s: u16) -> String {
    let kind = u32::from(s >> 12);
    let what = match kind {
        COLL_TEAM_SYNC => "a barrier or sync",
        COLL_BROADCAST => "a broadcast",
        COLL_COLLECT => "a collect",
        COLL_FCOLLECT => "an fcollect",
        COLL_ALLTOALL => "an alltoall",
        COLL_REDUCE => "a reduction",
        COLL_INSCAN => "a sum_inscan",
        COLL_EXSCAN => "a sum_exscan",
        _ => "an unknown collective",
    };
    format!("{what} (signature {s:#06x})")
}

/// The host signature codes (`collsig.rs`) of the device's collective
/// kinds, element kinds and reduction operators, as `(list, [(device code,
/// host code)])`: device collectives that sync through the control segment
/// publish their calls in the host's words (`core.h`:
/// `ishmemi_host_sig_words`), so that they are compared with each other's
/// and with host calls alike. The generated `device_codes.h` packs each
/// list into one constant, 4 bits a code (`ISHMEMI_SIG_<list>`).
pub fn sig_code_lists() -> [(&'static str, Vec<(u32, u64)>); 3] {
    use crate::collsig::{type_code_named, CollKind, RedOp};
    let kind = |c: u32| match c {
        COLL_TEAM_SYNC => CollKind::Sync,
        COLL_BROADCAST => CollKind::Broadcast,
        COLL_COLLECT => CollKind::Collect,
        COLL_FCOLLECT => CollKind::Fcollect,
        COLL_ALLTOALL => CollKind::Alltoall,
        COLL_REDUCE => CollKind::Reduce,
        COLL_INSCAN => CollKind::Inscan,
        COLL_EXSCAN => CollKind::Exscan,
        c => unreachable!("collective code {c} has no host signature kind"),
    };
    let op = |c: u32| match c {
        ROP_AND => RedOp::And,
        ROP_OR => RedOp::Or,
        ROP_XOR => RedOp::Xor,
        ROP_MAX => RedOp::Max,
        ROP_MIN => RedOp::Min,
        ROP_SUM => RedOp::Sum,
        ROP_PROD => RedOp::Prod,
        c => unreachable!("operator code {c} has no host signature operator"),
    };
    // ELEM_I64 is Rust's i64.
    let ty = |name: &str| {
        let rust = name.split_once('_').map_or(name, |(_, r)| r).to_lowercase();
        type_code_named(&rust).unwrap_or_else(|| unreachable!("element kind {name} has no host type code"))
    };
    [
        ("KINDS", COLL_CODES.codes.iter().map(|&(_, c)| (c, kind(c) as u64)).collect()),
        ("TYPES", ELEM_CODES.codes.iter().map(|&(n, c)| (c, u64::from(ty(n)))).collect()),
        ("OPS", ROP_CODES.codes.iter().map(|&(_, c)| (c, op(c) as u64)).collect()),
    ]
}

/// Every code group the device library shares with the runtime, as its
/// generated `device_codes.h` gives them: the stream collectives' codes and
/// the long waits' codes.
pub const STREAM_CODES: &[CodeGroup] = &[COLL_CODES, ELEM_CODES, ROP_CODES, WAIT_CODES];

// Each group's codes are 0, 1, ... in table order (the device library
// switches on them with its last case as the default, and asserts each
// group's size), and every name starts with its group's prefix and `_`.
// The generated header asserts the same values on the device side.
const _: () = {
    let mut g = 0;
    while g < STREAM_CODES.len() {
        let CodeGroup { group, codes, .. } = STREAM_CODES[g];
        let mut i = 0;
        while i < codes.len() {
            let (name, code) = codes[i];
            assert!(code == i as u32, "stream codes are 0, 1, ... in table order");
            let (n, p) = (name.as_bytes(), group.as_bytes());
            assert!(n.len() > p.len() + 1 && n[p.len()] == b'_', "a code's name starts with its group's");
            let mut j = 0;
            while j < p.len() {
                assert!(n[j] == p[j], "a code's name starts with its group's");
                j += 1;
            }
            i += 1;
        }
        g += 1;
    }
};

/// A stream-ordered collective: `nelems` elements of `elem` bytes (per
/// member for collect, fcollect and alltoall); `dtype` and `rop` are a
/// reduction's or scan's element kind (`ELEM_*`) and operator (`ROP_*`).
#[derive(Clone, Copy, Debug)]
pub struct QueueColl {
    pub kind: u32,
    pub team: i32,
    pub dest: *mut c_void,
    pub source: *const c_void,
    pub nelems: usize,
    pub elem: usize,
    pub root: i32,
    pub dtype: u32,
    pub rop: u32,
}

/// Performs device requests for the ring server: the running PE's host
/// operations, with every check and every transport (implemented by the
/// core).
pub trait RingHandler: Send + Sync {
    /// Performs one request; returns the completion value.
    fn serve(&self, req: &Request) -> u64;
    /// Performs `reqs` (consecutive tickets) in order, calling `done(i,
    /// value)` for each in order as it completes. A handler may perform a
    /// run of them in one pass (the core: AMOs and `g`s on GPU heaps in
    /// one kernel). The default serves them one by one.
    fn serve_many(&self, reqs: &[Request], done: &mut dyn FnMut(usize, u64)) {
        for (i, r) in reqs.iter().enumerate() {
            done(i, self.serve(r));
        }
    }
    /// A message that does not decode, or a request lost: ends the job
    /// with the message.
    fn corrupt(&self, e: DecodeError) -> !;
    /// How long a request the device claimed may go without its message
    /// before it is reported lost ([`DecodeError::Lost`]); `None`: never.
    fn lost_after(&self) -> Option<std::time::Duration>;
    /// Called while the ring is empty, and while the server waits for a
    /// completion to be read before it writes the slot's next: lets the
    /// PE's remote transport progress. When device work-items spin on
    /// every core, the proxy thread may be the only one of its PE that
    /// runs, and other PEs' requests to this one (active messages, a
    /// one-sided MPI's target side) wait for whoever progresses.
    fn idle(&self) {}
}

/// What a device needs of the running PE.
#[derive(Clone, Copy)]
pub struct Attach {
    /// Performs the ring's requests.
    pub handler: &'static dyn RingHandler,
    /// This PE's reverse-offload ring.
    pub ring: &'static Ring,
    /// The state device code reads (installed into device programs); its
    /// address fields point at the peer tables and the team table.
    pub state: *const ishmemx_device_state_t,
    /// The node's control segment (host memory device code synchronizes
    /// through): base and size.
    pub ctrl: (*mut u8, usize),
    /// How many PEs run on this node (they share its cores).
    pub node_pes: usize,
    /// Whether the ring carries requests: some PE is reached through the
    /// proxy, or every device operation goes through the ring
    /// (`ISHMEM_DEVICE_RING_ALL`). Its server then needs a core.
    pub ring_served: bool,
}

/// This PE's place among the PEs of its node (a GPU is chosen by it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocalRank {
    pub rank: usize,
    pub size: usize,
}

/// One AMO of a [`DeviceMemory::atomics`] pass: `amo` on the value at
/// `addr`; `posted` when its issuer did not wait for it (a non-fetching
/// AMO a device or a remote PE posted), so later AMOs of the pass on the
/// same word are performed after it; `ordered` when it keeps its place
/// among all of the pass's AMOs, after every one before it and before
/// every one after it (a ring `p`: the device library relies on ring
/// order for its own words, e.g. a sync word stored after the counts it
/// publishes) ([`pass_waves`]).
#[derive(Clone, Copy, Debug)]
pub struct PassAtomic {
    pub addr: *mut u8,
    pub amo: Amo,
    pub posted: bool,
    pub ordered: bool,
}

/// The order a pass of `ops` keeps: each AMO's wave (waves are performed
/// one after another, the AMOs of one at once). An AMO comes after every
/// posted AMO before it on the same 8-byte word, which its issuer may
/// have issued before it (a posted AMO, then a later AMO of the same
/// thread or PE); posted AMOs in a row of one commutative operation (add,
/// and, or, xor) on one location share a wave, as their order changes
/// nothing. AMOs on other words, and those after blocking ones, need no
/// order: within a pass no fence separates them (a device fence, and a
/// remote PE's, reaches the server as a request of its own, which ends a
/// pass). An `ordered` AMO takes a wave after every AMO before it, and
/// every AMO after it a later wave.
pub fn pass_waves(ops: &[PassAtomic]) -> Vec<u32> {
    use crate::types::AmoOp;
    /// The (operation, size, address) of posted AMOs others may join.
    type Group = (AmoOp, usize, usize);
    // Per word: the wave of its latest posted AMOs, and their group.
    let mut words: std::collections::HashMap<usize, (u32, Option<Group>)> = std::collections::HashMap::new();
    // The least wave of what comes after an ordered AMO; the highest wave
    // so far.
    let (mut floor, mut top) = (0u32, None::<u32>);
    ops.iter()
        .map(|op| {
            let (addr, Amo { op: code, size, .. }) = (op.addr as usize, op.amo);
            let commutes = matches!(code, AmoOp::FetchAdd | AmoOp::FetchAnd | AmoOp::FetchOr | AmoOp::FetchXor);
            let group = (op.posted && commutes && !op.ordered).then_some((code, size, addr));
            let mut wave = match words.get(&(addr & !7)) {
                None => 0,
                Some(&(w, g)) if group.is_some() && g == group => w,
                Some(&(w, _)) => w + 1,
            }
            .max(floor);
            if op.ordered {
                wave = wave.max(top.map_or(0, |t| t + 1));
                floor = wave + 1;
            }
            top = Some(top.map_or(wave, |t| t.max(wave)));
            if op.posted {
                words.insert(addr & !7, (wave, group));
            }
            wave
        })
        .collect()
}

/// Host access to the memory a device's heaps live in, for devices whose
/// heaps the host cannot load from or store to (GPU memory). The routing
/// step uses it for every host operation on such a heap.
pub trait DeviceMemory: Send + Sync {
    /// Copies `len` bytes; either side may be host memory or device memory
    /// of this process (unified addressing).
    ///
    /// # Safety
    /// Both ranges are valid for `len` bytes.
    unsafe fn copy(&self, dst: *mut u8, src: *const u8, len: usize) -> Result<(), DeviceError>;
    /// Starts a [`DeviceMemory::copy`] that may still run when this
    /// returns (on the device's copy engine); [`DeviceMemory::copies_done`]
    /// says when every copy started so far has ended. Copies start and end
    /// in order. The default copies at once.
    ///
    /// # Safety
    /// As [`DeviceMemory::copy`], and both ranges stay valid and untouched
    /// until `copies_done` has returned true.
    unsafe fn copy_start(&self, dst: *mut u8, src: *const u8, len: usize) -> Result<(), DeviceError> {
        // SAFETY: the caller's contract.
        unsafe { self.copy(dst, src, len) }
    }
    /// Whether every copy started by [`DeviceMemory::copy_start`] has
    /// ended; with `wait`, waits for them first (and returns true).
    fn copies_done(&self, _wait: bool) -> Result<bool, DeviceError> {
        Ok(true)
    }
    /// Zeroes `len` bytes of device memory.
    ///
    /// # Safety
    /// The range is valid device memory.
    unsafe fn zero(&self, dst: *mut u8, len: usize) -> Result<(), DeviceError>;
    /// `amo` on the naturally aligned value at `addr` (device memory),
    /// atomic with device code's system-scope atomics on it; returns the
    /// old value (0 for `Set`).
    ///
    /// # Safety
    /// `addr` is aligned device memory valid for `amo.size` bytes.
    unsafe fn atomic(&self, addr: *mut u8, amo: Amo) -> Result<u64, DeviceError>;
    /// [`DeviceMemory::atomic`] on each of `ops`, the old values into
    /// `out` (as long as `ops`), in one pass where the device can (the ring
    /// server's runs of AMOs). Each is performed after the posted ones
    /// before it that [`pass_waves`] orders it after; the others in any
    /// order. The default does them one by one, in order.
    ///
    /// # Safety
    /// As [`DeviceMemory::atomic`] for each.
    unsafe fn atomics(&self, ops: &[PassAtomic], out: &mut [u64]) -> Result<(), DeviceError> {
        for (op, o) in ops.iter().zip(out.iter_mut()) {
            // SAFETY: the caller's contract.
            *o = unsafe { self.atomic(op.addr, op.amo) }?;
        }
        Ok(())
    }
    /// True when `len` bytes at `p` are plain host memory, which a proxy
    /// may read and write itself; false for device memory (and when
    /// unsure: transfers are then staged through host memory).
    fn host_accessible(&self, _p: *const u8, _len: usize) -> bool {
        false
    }
    /// `len` bytes of host memory that [`DeviceMemory::copy`] moves to and
    /// from device memory fastest (pinned where the device has it), for
    /// staging buffers that live as long as the process.
    fn staging(&self, len: usize) -> Result<*mut u8, DeviceError> {
        Ok(Box::leak(vec![0u8; len].into_boxed_slice()).as_mut_ptr())
    }
}

// SAFETY: `state` points to the PE's device state, which lives until the
// device is detached and is only read.
unsafe impl Send for Attach {}
// SAFETY: as above.
unsafe impl Sync for Attach {}

/// A device backend.
pub trait Device: Send + Sync {
    /// Which backend this is (never `Auto`).
    fn kind(&self) -> DeviceKind;
    /// Short name for diagnostics (`cpu`, `cuda`, `ze`).
    fn name(&self) -> &'static str {
        self.kind().name()
    }
    /// Alignment of the heap bases this device creates: the largest
    /// alignment `align` can honour.
    fn heap_align(&self) -> usize;
    /// Heap sizes are multiples of this (the bootstrap rounds
    /// `ISHMEM_SYMMETRIC_SIZE` up to it).
    fn heap_granularity(&self) -> usize;
    /// Bytes at the end of every heap that device code keeps for itself
    /// (the device sync words, `sync_words::SYNC_RESERVE`), added to
    /// `ISHMEM_SYMMETRIC_SIZE` and never handed out by the allocator; 0
    /// for devices that synchronize through the control segment. The
    /// default of `ISHMEM_DEVICE_SYNC` ([`heap_reserve`] applies it).
    fn heap_reserve(&self) -> usize {
        0
    }
    /// Creates this PE's symmetric heap of `size` bytes, with a handle
    /// local peers can map (a file descriptor). `local` is this PE's place
    /// on its node.
    fn create_heap(&self, size: usize, pe: usize, local: LocalRank) -> Result<HeapRegion, DeviceError>;
    /// Maps peer `pe`'s heap from the handle it shared.
    fn map_peer_heap(&self, handle: &OwnedFd, size: usize, pe: usize) -> Result<HeapRegion, DeviceError>;
    /// Host access to heap memory the host cannot load from or store to;
    /// `None` when plain loads and stores reach it (the CPU device).
    fn memory(&self) -> Option<&dyn DeviceMemory> {
        None
    }
    /// Connects the device to the running PE (once, at the end of init).
    fn attach(&self, a: Attach) -> Result<(), DeviceError>;
    /// True when kernels may wait for host threads of this PE (the ring
    /// server, the MPI proxy's progress) while its own threads wait for
    /// the kernels: the PE then needs more than one CPU core (GPUs).
    fn needs_host_cores(&self) -> bool {
        false
    }
    /// The device-visible team table changed (a team was created or
    /// destroyed): devices that keep a copy of it update the copy.
    fn teams_changed(&self) -> Result<(), DeviceError> {
        Ok(())
    }
    /// Stops the ring server and releases the kernel runtime's hold on the
    /// PE (finalize), while the PE's memory is still mapped.
    fn detach(&self);
    /// Whether the kernel runtime's context still works: an error that
    /// poisons it (a kernel that faulted: illegal address, trap, launch
    /// failure) is returned, named. The watchdog asks about ten times a
    /// second, from its own thread; it must not block.
    fn health(&self) -> Result<(), DeviceError> {
        Ok(())
    }
    /// Whether the device has run no work since the last time the
    /// watchdog asked (about once a second, while this PE waits long in
    /// the library): a PE whose kernels still run is not deadlocked. Must
    /// not block; a backend that can only tell by blocking asks from a
    /// helper thread and answers `false` until it knows.
    fn idle(&self) -> bool {
        true
    }
    /// A native handle of the kernel runtime, opening it on first use.
    fn native(&self, what: Native) -> Result<*mut c_void, DeviceError>;
    /// Builds a program from `il` (SPIR-V for OpenCL) linked with the
    /// device library, with this PE's state installed; returns the
    /// runtime's program handle.
    fn link_program(&self, il: &[u8]) -> Result<*mut c_void, DeviceError>;
    /// As `link_program`, in another context of the kernel runtime on this
    /// PE's device (`context`, `device`: a SYCL runtime's OpenCL handles).
    /// Only the CPU device's OpenCL has it.
    fn link_program_in(
        &self, _il: &[u8], _context: *mut c_void, _device: *mut c_void,
    ) -> Result<*mut c_void, DeviceError> {
        Err(DeviceError::Runtime(format!(
            "linking a program of another OpenCL context is built for the cpu device only (this PE's device is {})",
            self.name()
        )))
    }
    /// Enqueues `op` on `queue` (the runtime's queue) after `deps` (its
    /// events); returns the operation's event.
    fn enqueue(&self, op: QueueOp, queue: *mut c_void, deps: &[*mut c_void]) -> Result<*mut c_void, DeviceError>;
    /// Waits until the runtime's `events` are complete and releases them.
    fn wait(&self, events: &[*mut c_void]) -> Result<(), DeviceError>;
}

/// The device `ISHMEM_DEVICE` names; `auto` is CUDA when the program
/// linked the CUDA device library (it registered itself), else the CPU.
/// A device that is asked for and is not there fails here, naming what
/// was tried.
pub fn select(config: &Config) -> Result<&'static dyn Device, DeviceError> {
    let kind = match config.device {
        DeviceKind::Auto if cuda::library_linked() => DeviceKind::Cuda,
        DeviceKind::Auto => DeviceKind::Cpu,
        k => k,
    };
    Ok(match kind {
        DeviceKind::Cuda => Box::leak(Box::new(cuda::CudaDevice::new(config)?)),
        DeviceKind::Opaque => Box::leak(Box::new(opaque::OpaqueDevice::new())),
        DeviceKind::Ze => Box::leak(Box::new(ze::ZeDevice::new(config)?)),
        _ => Box::leak(Box::new(cpu::CpuDevice::new(
            config.device_lib.clone(),
            config.device_cache.clone(),
            config.cpu_kernel_threads,
        ))),
    })
}

/// Bytes at the end of every heap kept for the device sync words:
/// `ISHMEM_DEVICE_SYNC`'s choice, else the device's own
/// (`Device::heap_reserve`).
pub fn heap_reserve(device: &dyn Device, sync: DeviceSync) -> usize {
    match sync {
        DeviceSync::Auto => device.heap_reserve(),
        DeviceSync::Heap => crate::sync_words::SYNC_RESERVE,
        DeviceSync::Control => 0,
    }
}

#[cfg(test)]
mod sig_tests {
    use super::*;

    /// `ishmemi_sig16` as `core.h` writes it (the calls' 16 bits that
    /// signals carry): the kind, then 12 bits of a hash of the rest. This
    /// checks the hash tells the listed calls apart.
    fn sig16(sig: u64) -> u16 {
        ((sig & 0xf) << 12 | (sig >> 4).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 52) as u16
    }

    /// `ISHMEMI_SIG` as `core.h` writes it.
    fn sig(kind: u32, code: u32, root: u32, count: u64) -> u64 {
        u64::from(kind) | u64::from(code) << 4 | u64::from(root & 0xffff) << 16 | count << 32
    }

    #[test]
    fn signatures_are_described_and_their_16_bits_tell_calls_apart() {
        let sum_long = sig(COLL_REDUCE, ELEM_I64 | ROP_SUM << 4, 0, 8);
        assert_eq!(
            describe_sig(sum_long),
            "sum reduction of 8 elements of 64-bit integer (long, longlong, int64, ptrdiff)"
        );
        assert_eq!(describe_sig(sig(COLL_INSCAN, ELEM_F32, 0, 3)), "sum_inscan of 3 elements of float");
        assert_eq!(describe_sig(sig(COLL_BROADCAST, 0, 1, 64)), "broadcast of 64 bytes from team PE 1");
        assert_eq!(describe_sig16(sig16(sum_long))[..11], *"a reduction");
        // The same kind with other arguments: other bits, same kind.
        let calls = [
            sig(COLL_BROADCAST, 0, 0, 64),
            sig(COLL_BROADCAST, 0, 1, 64),
            sig(COLL_BROADCAST, 0, 0, 128),
            sig(COLL_FCOLLECT, 0, 0, 8),
            sig(COLL_FCOLLECT, 0, 0, 16),
            sum_long,
            sig(COLL_REDUCE, ELEM_I64 | ROP_MAX << 4, 0, 8),
            sig(COLL_REDUCE, ELEM_F64 | ROP_SUM << 4, 0, 8),
            sig(COLL_TEAM_SYNC, 0, 0, 0),
        ];
        for (i, a) in calls.iter().enumerate() {
            assert_eq!(u32::from(sig16(*a) >> 12), (*a & 0xf) as u32);
            for b in &calls[i + 1..] {
                assert_ne!(sig16(*a), sig16(*b), "{} and {}", describe_sig(*a), describe_sig(*b));
            }
        }
    }
}

#[cfg(test)]
mod pass_wave_tests {
    use super::*;
    use crate::types::AmoOp;

    fn op(addr: usize, code: AmoOp, size: usize, posted: bool) -> PassAtomic {
        PassAtomic { addr: addr as *mut u8, amo: Amo::new(code, size, 1), posted, ordered: false }
    }

    /// A ring `p`: a posted set that keeps its place.
    fn p(addr: usize) -> PassAtomic {
        PassAtomic { ordered: true, ..op(addr, AmoOp::Set, 8, true) }
    }

    /// `p`s to other words keep their order with each other and with the
    /// AMOs around them (a sync word after the counts it publishes);
    /// AMOs between two of them may share a wave.
    #[test]
    fn ring_ps_keep_their_place_among_every_word() {
        let ops = [
            op(128, AmoOp::FetchAdd, 8, true),
            p(64),
            op(200, AmoOp::FetchAdd, 8, true),
            op(208, AmoOp::Fetch, 8, false),
            p(72),
            p(80),
            op(64, AmoOp::Fetch, 8, false),
        ];
        assert_eq!(pass_waves(&ops), [0, 1, 2, 2, 3, 4, 5]);
    }

    /// Blocking AMOs from many threads, as a run of fetch_adds: one wave.
    #[test]
    fn blocking_amos_share_one_wave() {
        let ops: Vec<_> = (0..5).map(|_| op(64, AmoOp::FetchAdd, 8, false)).collect();
        assert_eq!(pass_waves(&ops), [0, 0, 0, 0, 0]);
    }

    /// Posted adds in a row on one counter share a wave; a fetch of it
    /// after them comes next; other words are not held back.
    #[test]
    fn posted_adds_share_a_wave_and_a_fetch_follows() {
        let ops = [
            op(64, AmoOp::FetchAdd, 8, true),
            op(64, AmoOp::FetchAdd, 8, true),
            op(128, AmoOp::Fetch, 8, false),
            op(64, AmoOp::Fetch, 8, false),
            op(64, AmoOp::FetchAdd, 8, true),
        ];
        assert_eq!(pass_waves(&ops), [0, 0, 0, 1, 0]);
    }

    /// A posted set, then a posted add, then another set, on one word
    /// (and a narrower AMO inside it): each after the one before.
    #[test]
    fn non_commuting_posts_each_take_a_wave() {
        let ops = [
            op(64, AmoOp::Set, 8, true),
            op(64, AmoOp::FetchAdd, 8, true),
            op(64, AmoOp::Set, 8, true),
            op(68, AmoOp::FetchAdd, 4, true),
            op(68, AmoOp::FetchAdd, 4, true),
            op(72, AmoOp::Set, 8, true),
        ];
        assert_eq!(pass_waves(&ops), [0, 1, 2, 3, 3, 0]);
    }
}

#[cfg(test)]
mod heap_reserve_tests {
    use super::*;

    /// `ISHMEM_DEVICE_SYNC` over the device's own choice (the opaque
    /// device keeps none).
    #[test]
    fn the_choice_overrides_the_device() {
        let d = opaque::OpaqueDevice::new();
        assert_eq!(heap_reserve(&d, DeviceSync::Auto), 0);
        assert_eq!(heap_reserve(&d, DeviceSync::Heap), crate::sync_words::SYNC_RESERVE);
        assert_eq!(heap_reserve(&d, DeviceSync::Control), 0);
    }
}

#[cfg(test)]
mod queue_kernel_tests {
    use super::*;

    /// Every operation but a collective has a kernel whose parameters its
    /// arguments match in number and kind, and every kernel is some
    /// operation's.
    #[test]
    fn arguments_match_the_table() {
        let p = 8 as *mut c_void;
        let ops = [
            QueueOp::Put { dest: p, source: p, nbytes: 1, pe: 0 },
            QueueOp::Get { dest: p, source: p, nbytes: 1, pe: 0 },
            QueueOp::BarrierAll,
            QueueOp::Quiet,
            QueueOp::PutSignal { dest: p, source: p, nbytes: 1, sig_addr: p.cast(), signal: 1, sig_op: 0, pe: 0 },
            QueueOp::SignalWaitUntil { sig_addr: p.cast(), cmp: 0, cmp_value: 1 },
            QueueOp::SyncAll,
        ];
        let mut used = Vec::new();
        for op in ops {
            let (k, args) = op.spirv_kernel().expect("a kernel");
            assert_eq!(k.params.len(), args.len(), "{}", k.name);
            for (q, a) in k.params.iter().zip(&args) {
                let ok = match a {
                    QueueArg::Ptr(_) => q.ty.ends_with('*'),
                    QueueArg::U64(_) => q.ty == "ulong",
                    QueueArg::I32(_) => q.ty == "int",
                };
                assert!(ok, "{}: {} {} given {a:?}", k.name, q.ty, q.name);
            }
            used.push(k.name);
        }
        let mut all: Vec<_> = QUEUE_KERNELS.iter().map(|k| k.name).collect();
        all.sort();
        used.sort();
        assert_eq!(all, used);
    }
}
