//! The one table of `ISHMEM_*` environment variables.
//!
//! This module is the only part of the runtime that reads (or writes) the
//! process environment. Every `ISHMEM_*`, `ISHMRUN_*` and `SHMEM_*` variable
//! is a row of [`VARS`], and its row's [`Kind`] decides how it is parsed
//! ([`Config::from_env`], [`ishmrun_launch`]); the generated `docs/env.md`
//! (see `bindings/gen`) and `ishmem-info` read the same table. Adding a
//! variable means adding a row here. The other variables read here are
//! foreign launchers' (how a job was started) and are not ours to document.

use std::fmt;

/// How a variable's value is parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A byte count with an optional `k`, `m`, `g` or `t` suffix (powers of 1024).
    Size,
    /// `0`, `false`, `no`, `off` mean off; `1`, `true`, `yes`, `on` mean on.
    Bool,
    /// On when set to anything but `0`, `false`, `no` or `off` (Intel
    /// SHMEM's `ISHMEM_DEBUG`); off when unset or empty.
    Flag,
    /// A non-negative integer.
    Uint,
    /// Free text (a path); not parsed.
    Text,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Size => "size",
            Kind::Bool => "bool",
            Kind::Flag => "flag",
            Kind::Uint => "integer",
            Kind::Text => "text",
        }
    }
}

/// One row of the environment table.
#[derive(Debug)]
pub struct EnvVar {
    /// Full name, `ISHMEM_` prefix included.
    pub name: &'static str,
    pub kind: Kind,
    /// Default value, written as a user would write it.
    pub default: &'static str,
    /// One-line help text.
    pub help: &'static str,
    /// Set by `ishmrun` for its PEs, not by users.
    pub internal: bool,
}

/// Every environment variable the library reads.
pub const VARS: &[EnvVar] = &[
    EnvVar {
        name: "ISHMEM_SYMMETRIC_SIZE",
        kind: Kind::Size,
        default: "512m",
        help: "Size of the symmetric heap of each PE (suffixes k, m, g, t; powers of 1024; fractions allowed: 1.5g, 3.1M). Must be the same on every PE.",
        internal: false,
    },
    EnvVar {
        name: "ISHMEM_DEBUG",
        kind: Kind::Flag,
        default: "0",
        help: "Print initialization details (heap placement, peers, bootstrap) to stderr. Any value but 0/false/no/off turns it on.",
        internal: false,
    },
    EnvVar {
        name: "SHMEM_SYMMETRIC_SIZE",
        kind: Kind::Size,
        default: "",
        help: "OpenSHMEM's name for the heap size; used when ISHMEM_SYMMETRIC_SIZE is not set.",
        internal: false,
    },
    EnvVar {
        name: "SHMEM_DEBUG",
        kind: Kind::Flag,
        default: "",
        help: "OpenSHMEM's name for ISHMEM_DEBUG; used when ISHMEM_DEBUG is not set.",
        internal: false,
    },
    EnvVar {
        name: "ISHMEM_VERSION",
        kind: Kind::Text,
        default: "",
        help: "When set (to anything), PE 0 prints the library version at initialization (Intel SHMEM's name for SHMEM_VERSION).",
        internal: false,
    },
    EnvVar {
        name: "ISHMEM_INFO",
        kind: Kind::Text,
        default: "",
        help: "When set (to anything), PE 0 prints every environment variable of this table with its value and help at initialization (Intel SHMEM's name for SHMEM_INFO).",
        internal: false,
    },
    EnvVar {
        name: "SHMEM_VERSION",
        kind: Kind::Text,
        default: "",
        help: "When set (to anything), PE 0 prints the library version at initialization (OpenSHMEM 1.5 §8).",
        internal: false,
    },
    EnvVar {
        name: "SHMEM_INFO",
        kind: Kind::Text,
        default: "",
        help: "When set (to anything), PE 0 prints every environment variable of this table with its value and help at initialization.",
        internal: false,
    },
    EnvVar {
        name: "ISHMEM_DEVICE",
        kind: Kind::Text,
        default: "auto",
        help: "The device backend, chosen once at initialization: cpu (heaps in shared memory, kernels on a CPU OpenCL runtime loaded at first device use), cuda (heaps in NVIDIA GPU memory, kernels in CUDA; initialization fails, naming what was tried, without a driver or a GPU), ze (heaps in Intel GPU memory through Level Zero, kernels from SPIR-V linked with ishmem_device.spv; unverified on hardware; initialization fails, naming what was tried, without a loader, a driver or a GPU), auto (cuda when the program links the CUDA device library libishmem_device.a, else cpu), or opaque (a test device for host programs: heaps in shared memory that the program and the runtime reach only through the device-memory path a GPU heap takes, so a direct load or store of symmetric memory faults as on a GPU; no kernels).",
        internal: false,
    },
    EnvVar {
        name: "ISHMEM_CUDA_DEVICE",
        kind: Kind::Uint,
        default: "",
        help: "With the cuda device: the GPU (ordinal among the visible ones, after CUDA_VISIBLE_DEVICES) this PE uses. Default: the PE's rank among the PEs of its node, modulo the number of visible GPUs.",
        internal: false,
    },
    EnvVar {
        name: "ISHMEM_CUDA_COPY_CUTOVER",
        kind: Kind::Size,
        default: "16k",
        help: "With the cuda device: a device put or get to a PE on the node of at least this many bytes by one thread (ishmem_putmem, typed puts and gets, put_signal's data) is handed to a copy engine through the reverse-offload ring and waited for, instead of the thread's own loads and stores, when the PE's copy engine is free (one transfer at a time; a busy one leaves the transfer to loads and stores). Suffixes k, m, g; 0: never.",
        internal: false,
    },
    EnvVar {
        name: "ISHMEM_CUDA_COPY_CUTOVER_GROUP",
        kind: Kind::Size,
        default: "1m",
        help: "With the cuda device: the same cutover for the warp and block forms (ishmemx_putmem_block, ...), whose threads otherwise share the copy (0: never).",
        internal: false,
    },
    EnvVar {
        name: "ISHMEM_ZE_DEVICE",
        kind: Kind::Uint,
        default: "",
        help: "With the ze device: the GPU (index among the Level Zero GPUs the driver reports, after ZE_AFFINITY_MASK; among their tiles with ISHMEM_ZE_SUBDEVICES=1) this PE uses. Default: the PE's rank among the PEs of its node, modulo the number of GPUs (or tiles).",
        internal: false,
    },
    EnvVar {
        name: "ISHMEM_ZE_SUBDEVICES",
        kind: Kind::Bool,
        default: "0",
        help: "With the ze device: one PE per GPU tile (Level Zero sub-device) instead of one per GPU; a GPU without tiles counts as one.",
        internal: false,
    },
    EnvVar {
        name: "ISHMEM_ZE_LOADER",
        kind: Kind::Text,
        default: "",
        help: "With the ze device: name or path of the Level Zero loader to load (default: libze_loader.so.1, then libze_loader.so).",
        internal: false,
    },
    EnvVar {
        name: "ISHMEM_DEVICE_LIB",
        kind: Kind::Text,
        default: "",
        help: "Path of the device library ishmem_device.spv (default: <dir of libishmem>/ishmem/ishmem_device.spv).",
        internal: false,
    },
    EnvVar {
        name: "ISHMEM_DEVICE_CACHE",
        kind: Kind::Text,
        default: "",
        help: "Directory where the CPU device keeps compiled device programs (a program linked with the device library), shared by the PEs of a node and by later jobs; it must belong to this user and be closed to others (it is made with mode 0700). Default: $XDG_CACHE_HOME/ishmem, else $HOME/.cache/ishmem. 0 turns the cache off.",
        internal: false,
    },
    EnvVar {
        name: "ISHMEM_DEVICE_RING_ALL",
        kind: Kind::Bool,
        default: "0",
        help: "Send every device-initiated operation through the reverse-offload ring and the host proxy, even to PEs device code could reach by load/store (tests the ring).",
        internal: false,
    },
    EnvVar {
        name: "ISHMEM_CPU_KERNEL_THREADS",
        kind: Kind::Uint,
        default: "",
        help: "With the cpu device on Intel's OpenCL CPU runtime: how many threads run this PE's kernels (set at ishmem_init as the runtime's DPCPP_CPU_NUM_CUS, unless that or SYCL_CPU_NUM_CUS is set; a program that starts OpenCL or SYCL before ishmem_init sets those itself). 0: the runtime's default, a thread per CPU of the process. By default the runtime's default, unless the reverse-offload ring carries requests (some PE is on another node, or ISHMEM_DEVICE_RING_ALL=1): then this PE's share of the CPUs less one (at least one), left to the thread that serves the ring (work-items spinning on ring completions otherwise take the CPUs it needs). The share is the PE's CPU mask where the node's PEs have disjoint masks, else the mask (and a cgroup's CPU quota) divided among the node's PEs.",
        internal: false,
    },
    EnvVar {
        name: "ISHMEM_DEVICE_SYNC",
        kind: Kind::Text,
        default: "auto",
        help: "Where device-initiated team syncs and collectives keep their flags: heap (words reserved at the end of every symmetric heap, in the device's memory; with it small collectives among PEs that reach each other by load/store send their data with the flags, in one flight of stores), control (the control segment in host memory), or auto (heap on the cuda device, control on the others). Jobs of more than 256 PEs always use the control segment.",
        internal: false,
    },
    EnvVar {
        name: "ISHMEM_RUNTIME",
        kind: Kind::Text,
        default: "auto",
        help: "How the job bootstraps when ishmrun did not start it: MPI (through the MPI proxy plugin), OPENSHMEM (through a host OpenSHMEM library loaded at run time, see ISHMEM_SHMEM_LIB_NAME; every other PE is reached through it), or auto (MPI when an MPI launcher's environment is detected, else a singleton PE).",
        internal: false,
    },
    EnvVar {
        name: "ISHMEM_SHMEM_LIB_NAME",
        kind: Kind::Text,
        default: "",
        help: "With ISHMEM_RUNTIME=OPENSHMEM: name or path of the host OpenSHMEM library to load (default: libsma.so, then liboshmem.so).",
        internal: false,
    },
    EnvVar {
        name: "ISHMEM_ENABLE_SHM",
        kind: Kind::Bool,
        default: "1",
        help: "Under MPI: PEs on the same node share heaps and use load/store. 0 makes every other PE remote, so every operation goes through the MPI proxy (tests the inter-node path on one machine).",
        internal: false,
    },
    EnvVar {
        name: "ISHMEM_MPI_PROXY",
        kind: Kind::Text,
        default: "",
        help: "Path of the MPI proxy plugin, or of a directory holding libishmem_proxy_oshmpi-<openmpi|mpich>.so (default: that file for the MPI in use, in ishmem/ beside libishmem.so, then in $ISHMEM_ROOT/lib/ishmem; never beside the executable). A plugin file or directory others can write is refused.",
        internal: false,
    },
    EnvVar {
        name: "ISHMEM_PROXY_PROGRESS_THREAD",
        kind: Kind::Bool,
        default: "1",
        help: "Under MPI when any thread may call it (MPI initialized by the library, which serializes its calls, or by the application with MPI_THREAD_MULTIPLE), or over Open MPI's OSHMEM (ISHMEM_RUNTIME=OPENSHMEM): a thread serves other PEs' atomic operations while this PE computes outside the library (it sleeps up to 200 us when idle), and so does the thread serving the device's reverse-offload ring while the ring is empty. 0 turns both off: then only this PE's own calls into the library serve them.",
        internal: false,
    },
    EnvVar {
        name: "ISHMEM_PROXY_PUT_COPY",
        kind: Kind::Size,
        default: "8k",
        help: "Under MPI: a blocking put to a remote PE of at most this many bytes is copied into a 1 MiB buffer of the MPI proxy and leaves from there, so it returns without waiting for MPI's local completion (a round trip with Open MPI's pt2pt one-sided component, the one TCP networks get); the copies are reused after the next quiet. At most 128k; 0 turns it off.",
        internal: false,
    },
    EnvVar {
        name: "ISHMEM_PROXY_RMA",
        kind: Kind::Text,
        default: "window",
        help: "Under MPI: how puts and gets reach the heap and globals of PEs this one cannot map. window: MPI-3 RMA windows, one-sided (best where MPI does RDMA, and on one node's shared memory). message: requests the target's proxy serves, as it does for heaps in device memory (over TCP between two hosts: 1.3-3.7x the bandwidth of MPI RMA and faster gets, docs/cluster.md). Heaps in device memory always use messages.",
        internal: false,
    },
    EnvVar {
        name: "ISHMEM_COLL_CHECK",
        kind: Kind::Bool,
        default: "1",
        help: "Collective calls check that every member of the team made the same call with the same arguments (kind, type, count, root, operator) and end the job with a report naming the PEs and their calls when they did not; so do device calls that sync through the control segment (the CPU device; GPU jobs of more than 256 PEs). One extra load per call; 0 skips the check (device calls that sync through GPU memory always compare).",
        internal: false,
    },
    EnvVar {
        name: "ISHMEM_DEADLOCK_TIMEOUT",
        kind: Kind::Uint,
        default: "20",
        help: "Seconds after which a job whose PEs all wait in the library (with no other thread of theirs running) or in a kernel's wait_until or signal_wait_until (with nothing of their device requests changing) is reported as deadlocked: one report names what each PE waits for (its call and arguments). Only where one node holds every PE (ishmrun; MPI with ISHMEM_ENABLE_SHM=1). 0 turns the check off.",
        internal: false,
    },
    EnvVar {
        name: "ISHMEM_DEADLOCK_ABORT",
        kind: Kind::Bool,
        default: "1",
        help: "Whether a deadlock report (ISHMEM_DEADLOCK_TIMEOUT) ends the job; 0 only warns, once.",
        internal: false,
    },
    EnvVar {
        name: "ISHMEM_DEADLOCK_DEVICE_ABORT",
        kind: Kind::Bool,
        default: "0",
        help: "Whether a deadlock report in which kernels wait (a device wait_until or signal_wait_until that lasts while nothing of that PE's device waits and ring requests changes) ends the job, as ISHMEM_DEADLOCK_ABORT says; by default it only warns, once: the host cannot see whether a host thread outside the library, or other work-items of the kernel, will still release the wait (with 1, a job whose kernels wait longer than ISHMEM_DEADLOCK_TIMEOUT for such work is ended too: a switch for debugging and tests). A report in which every kernel waits in the library's own team syncs or collectives, for PEs that wait in the same team's (in kernels, or on the host with their device idle), ends the job without it: nothing can release those waits.",
        internal: false,
    },
    EnvVar {
        name: "ISHMEM_ROOT",
        kind: Kind::Text,
        default: "",
        help: "Installation prefix; set by the ishmem module files. The library searches $ISHMEM_ROOT/lib/ishmem for the MPI proxy plugins after the directory beside itself (what a statically linked program needs).",
        internal: false,
    },
    EnvVar {
        name: "ISHMEM_TEST_CONNECT_DELAY_MS",
        kind: Kind::Uint,
        default: "",
        help: "Test hook: under an MPI launcher, PEs other than a node's first wait this long (ms, at most 10000) before connecting to its bootstrap socket.",
        internal: true,
    },
    EnvVar {
        name: "ISHMRUN_PE",
        kind: Kind::Uint,
        default: "",
        help: "Rank of this PE; set by ishmrun for the processes it starts.",
        internal: true,
    },
    EnvVar {
        name: "ISHMRUN_NPES",
        kind: Kind::Uint,
        default: "",
        help: "Number of PEs in the job; set by ishmrun.",
        internal: true,
    },
    EnvVar {
        name: "ISHMRUN_FD",
        kind: Kind::Uint,
        default: "",
        help: "File descriptor of this PE's bootstrap socket to ishmrun; set by ishmrun.",
        internal: true,
    },
    EnvVar {
        name: "ISHMEM_CC",
        kind: Kind::Text,
        default: "cc",
        help: "The C compiler the oshcc wrapper runs; read by the wrapper, not by the library.",
        internal: false,
    },
    EnvVar {
        name: "ISHMEM_CXX",
        kind: Kind::Text,
        default: "c++",
        help: "The C++ compiler the oshc++ (oshcxx) wrapper runs; read by the wrapper, not by the library.",
        internal: false,
    },
    EnvVar {
        name: "ISHMEM_FC",
        kind: Kind::Text,
        default: "gfortran",
        help: "The Fortran compiler the oshfort wrapper runs; read by the wrapper, not by the library.",
        internal: false,
    },
];

/// A bad value in an environment variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvError {
    pub name: &'static str,
    pub value: String,
    pub expected: &'static str,
}

impl fmt::Display for EnvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "environment variable {}={:?} is not valid: expected {}", self.name, self.value, self.expected)
    }
}

impl std::error::Error for EnvError {}

/// Parses a size such as `512m`, `2G`, `4096`, `1t` (powers of 1024; an
/// optional trailing `b` or `ib` is accepted).
pub fn parse_size(s: &str) -> Option<u64> {
    let t = s.trim().to_ascii_lowercase();
    let t = t.strip_suffix("ib").or_else(|| t.strip_suffix('b')).unwrap_or(&t);
    let (digits, mult): (&str, u64) = match t.chars().last()? {
        'k' => (&t[..t.len() - 1], 1 << 10),
        'm' => (&t[..t.len() - 1], 1 << 20),
        'g' => (&t[..t.len() - 1], 1 << 30),
        't' => (&t[..t.len() - 1], 1 << 40),
        _ => (t, 1),
    };
    // A decimal fraction is allowed (`1.5g`, as the OpenSHMEM
    // specification and Intel's and NVIDIA's documentation do); the result
    // is rounded down to whole bytes.
    let (int, frac) = digits.trim().split_once('.').unwrap_or((digits.trim(), ""));
    let all_digits = |x: &str| x.bytes().all(|b| b.is_ascii_digit());
    if (int.is_empty() && frac.is_empty()) || !all_digits(int) || !all_digits(frac) || frac.len() > 18 {
        return None;
    }
    let whole = if int.is_empty() { 0 } else { int.parse::<u64>().ok()?.checked_mul(mult)? };
    let part = if frac.is_empty() {
        0
    } else {
        (frac.parse::<u128>().ok()? * mult as u128 / 10u128.pow(frac.len() as u32)) as u64
    };
    whole.checked_add(part)
}

/// Parses a boolean the way the table documents.
pub fn parse_bool(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "0" | "false" | "no" | "off" => Some(false),
        "1" | "true" | "yes" | "on" => Some(true),
        _ => None,
    }
}

fn var(name: &'static str) -> &'static EnvVar {
    VARS.iter().find(|v| v.name == name).expect("variable is in the table")
}

/// Reads a variable from `lookup`, then its OpenSHMEM alias, falling back to
/// the table's default. Returns the value and the name it came from.
fn read(
    name: &'static str, alias: Option<&'static str>, lookup: &dyn Fn(&str) -> Option<String>,
) -> (String, &'static str) {
    // An empty value counts as unset (`SHMEM_DEBUG=` is the default, not
    // a bad value); `present` still sees the variable.
    if let Some(v) = lookup(name).filter(|v| !v.trim().is_empty()) {
        return (v, name);
    }
    if let Some(a) = alias {
        if let Some(v) = lookup(a).filter(|v| !v.trim().is_empty()) {
            return (v, a);
        }
    }
    (var(name).default.to_string(), name)
}

/// Where a variable's effective value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Default,
    Environment,
}

/// Where device team syncs and collectives keep their flags
/// (`ISHMEM_DEVICE_SYNC`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceSync {
    /// The device's own choice (`Device::heap_reserve`).
    Auto,
    /// Sync words reserved at the end of every heap.
    Heap,
    /// The control segment.
    Control,
}

impl DeviceSync {
    fn parse(s: &str) -> Option<DeviceSync> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" | "" => Some(DeviceSync::Auto),
            "heap" => Some(DeviceSync::Heap),
            "control" => Some(DeviceSync::Control),
            _ => None,
        }
    }
}

/// The device backends `ISHMEM_DEVICE` can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceKind {
    /// CUDA when the program links the CUDA device library, else the CPU.
    Auto,
    /// Heaps in shared memory, kernels on a CPU OpenCL runtime.
    Cpu,
    /// Heaps in NVIDIA GPU memory, kernels in CUDA.
    Cuda,
    /// A test device: heaps in shared memory the program cannot touch
    /// (as on a GPU), no kernels.
    Opaque,
    /// Heaps in Intel GPU memory through Level Zero, kernels from SPIR-V.
    Ze,
}

impl DeviceKind {
    /// Every value `ISHMEM_DEVICE` accepts, as a user writes it.
    pub const NAMES: &'static [&'static str] = &["auto", "cpu", "cuda", "opaque", "ze"];

    /// The name `ISHMEM_DEVICE` gives this kind (and diagnostics use).
    pub fn name(self) -> &'static str {
        match self {
            DeviceKind::Auto => "auto",
            DeviceKind::Cpu => "cpu",
            DeviceKind::Cuda => "cuda",
            DeviceKind::Opaque => "opaque",
            DeviceKind::Ze => "ze",
        }
    }

    fn parse(s: &str) -> Option<DeviceKind> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" | "" => Some(DeviceKind::Auto),
            "cpu" => Some(DeviceKind::Cpu),
            "cuda" => Some(DeviceKind::Cuda),
            "opaque" => Some(DeviceKind::Opaque),
            "ze" => Some(DeviceKind::Ze),
            _ => None,
        }
    }
}

/// How the job bootstraps when `ishmrun` did not start it (`ISHMEM_RUNTIME`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuntimeChoice {
    /// MPI when an MPI launcher is detected, else a singleton.
    Auto,
    Mpi,
    OpenShmem,
}

/// The parsed user-facing configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub symmetric_size: u64,
    pub debug: bool,
    /// SHMEM_VERSION is set.
    pub print_version: bool,
    /// SHMEM_INFO is set.
    pub print_info: bool,
    /// ISHMEM_DEVICE
    pub device: DeviceKind,
    /// ISHMEM_DEVICE_LIB
    pub device_lib: Option<String>,
    /// ISHMEM_DEVICE_CACHE, resolved (`None`: no cache).
    pub device_cache: Option<String>,
    /// ISHMEM_CUDA_DEVICE
    pub cuda_device: Option<u64>,
    /// ISHMEM_ZE_DEVICE
    pub ze_device: Option<u64>,
    /// ISHMEM_ZE_SUBDEVICES
    pub ze_subdevices: bool,
    /// ISHMEM_ZE_LOADER
    pub ze_loader: Option<String>,
    /// ISHMEM_DEVICE_RING_ALL
    pub device_ring_all: bool,
    /// ISHMEM_CPU_KERNEL_THREADS (`None`: chosen at the first device call).
    pub cpu_kernel_threads: Option<u64>,
    /// ISHMEM_DEVICE_SYNC
    pub device_sync: DeviceSync,
    /// ISHMEM_CUDA_COPY_CUTOVER
    pub cuda_copy_cutover: u64,
    /// ISHMEM_CUDA_COPY_CUTOVER_GROUP
    pub cuda_copy_cutover_group: u64,
    /// ISHMEM_RUNTIME
    pub runtime: RuntimeChoice,
    /// ISHMEM_SHMEM_LIB_NAME
    pub shmem_lib_name: Option<String>,
    /// ISHMEM_ENABLE_SHM
    pub enable_shm: bool,
    /// ISHMEM_MPI_PROXY
    pub mpi_proxy: Option<String>,
    /// ISHMEM_PROXY_PROGRESS_THREAD
    pub progress_thread: bool,
    /// ISHMEM_PROXY_PUT_COPY (bytes, at most 128 KiB; 0: off)
    pub proxy_put_copy: u64,
    /// ISHMEM_PROXY_RMA=message: remote puts and gets to host memory are
    /// requests the target serves instead of MPI RMA.
    pub proxy_rma_messages: bool,
    /// ISHMEM_ROOT
    pub root: Option<String>,
    /// ISHMEM_COLL_CHECK
    pub coll_check: bool,
    /// ISHMEM_DEADLOCK_TIMEOUT (seconds; 0: off)
    pub deadlock_timeout: u64,
    /// ISHMEM_DEADLOCK_ABORT
    pub deadlock_abort: bool,
    /// ISHMEM_DEADLOCK_DEVICE_ABORT
    pub deadlock_device_abort: bool,
}

const BOOL_EXPECTED: &str = "0/1, true/false, yes/no or on/off";

/// Reads variables by their table row: the row's kind decides the parser.
struct Reader<'a> {
    lookup: &'a dyn Fn(&str) -> Option<String>,
}

impl Reader<'_> {
    /// The row of `name`, which must be of `kind` (a programming error
    /// otherwise, caught by the unit tests).
    fn row(name: &'static str, kind: Kind) -> &'static EnvVar {
        let v = var(name);
        assert_eq!(v.kind, kind, "{name} is read as {kind:?} but its table row says {:?}", v.kind);
        v
    }

    /// The value of `name` (else of `alias`) and the name it came from,
    /// or the table's default.
    fn value(&self, name: &'static str, alias: Option<&'static str>, kind: Kind) -> (String, &'static str, bool) {
        Self::row(name, kind);
        if let Some(a) = alias {
            Self::row(a, kind);
        }
        match read(name, alias, self.lookup) {
            (v, from) if (self.lookup)(from).is_some() => (v, from, true),
            (v, from) => (v, from, false),
        }
    }

    fn size(&self, name: &'static str, alias: Option<&'static str>) -> Result<u64, EnvError> {
        let (v, from, _) = self.value(name, alias, Kind::Size);
        parse_size(&v).filter(|&n| n > 0).ok_or(EnvError {
            name: from,
            value: v.clone(),
            expected: "a positive size such as 1073741824, 512m or 2g",
        })
    }

    /// A size where 0 is allowed (and means "never").
    fn size_or_zero(&self, name: &'static str) -> Result<u64, EnvError> {
        let (v, from, _) = self.value(name, None, Kind::Size);
        parse_size(&v).ok_or(EnvError { name: from, value: v.clone(), expected: "a size such as 0, 65536, 64k or 4m" })
    }

    /// A [`Kind::Flag`]: on unless unset, empty or a false word.
    fn flag(&self, name: &'static str, alias: Option<&'static str>) -> bool {
        let (v, _, set) = self.value(name, alias, Kind::Flag);
        set && parse_bool(&v) != Some(false)
    }

    fn bool(&self, name: &'static str, alias: Option<&'static str>) -> Result<bool, EnvError> {
        let (v, from, _) = self.value(name, alias, Kind::Bool);
        parse_bool(&v).ok_or(EnvError { name: from, value: v.clone(), expected: BOOL_EXPECTED })
    }

    fn uint(&self, name: &'static str) -> Result<Option<u64>, EnvError> {
        let (v, from, set) = self.value(name, None, Kind::Uint);
        if !set {
            return Ok(None);
        }
        v.trim().parse::<u64>().map(Some).map_err(|_| EnvError {
            name: from,
            value: v,
            expected: "a non-negative integer",
        })
    }

    /// A [`Kind::Uint`] with a default in its table row.
    fn uint_or_default(&self, name: &'static str) -> Result<u64, EnvError> {
        let (v, from, _) = self.value(name, None, Kind::Uint);
        v.trim().parse::<u64>().map_err(|_| EnvError { name: from, value: v, expected: "a non-negative integer" })
    }

    /// Text; `None` when unset or empty.
    fn text(&self, name: &'static str) -> Option<String> {
        let (v, _, set) = self.value(name, None, Kind::Text);
        (set && !v.is_empty()).then_some(v)
    }

    /// A cache directory: the variable's value, `None` for 0 (off), and
    /// by default `$XDG_CACHE_HOME/ishmem` or `$HOME/.cache/ishmem`.
    fn cache_dir(&self, name: &'static str) -> Option<String> {
        match self.text(name) {
            Some(v) if matches!(v.trim(), "0" | "off" | "none") => None,
            Some(v) => Some(v),
            None => {
                let nonempty = |n: &str| (self.lookup)(n).filter(|v| !v.is_empty());
                nonempty("XDG_CACHE_HOME")
                    .map(|x| format!("{x}/ishmem"))
                    .or_else(|| nonempty("HOME").map(|h| format!("{h}/.cache/ishmem")))
            }
        }
    }

    /// A text variable that counts only by being set (`SHMEM_VERSION`).
    fn present(&self, name: &'static str) -> bool {
        self.value(name, None, Kind::Text).2
    }
}

impl Config {
    /// Parses the process environment.
    pub fn from_env() -> Result<Config, EnvError> {
        Self::from_lookup(&|n| std::env::var(n).ok())
    }

    /// Parses from an arbitrary lookup (tests use a map).
    pub fn from_lookup(lookup: &dyn Fn(&str) -> Option<String>) -> Result<Config, EnvError> {
        let r = Reader { lookup };
        let (rt, from, _) = r.value("ISHMEM_RUNTIME", None, Kind::Text);
        let runtime = match rt.trim().to_ascii_lowercase().as_str() {
            "auto" | "" => RuntimeChoice::Auto,
            "mpi" => RuntimeChoice::Mpi,
            "openshmem" => RuntimeChoice::OpenShmem,
            _ => return Err(EnvError { name: from, value: rt, expected: "MPI, OPENSHMEM or auto" }),
        };
        let (rma, rma_from, _) = r.value("ISHMEM_PROXY_RMA", None, Kind::Text);
        let proxy_rma_messages = match rma.trim().to_ascii_lowercase().as_str() {
            "window" | "" => false,
            "message" => true,
            _ => return Err(EnvError { name: rma_from, value: rma, expected: "window or message" }),
        };
        let (dev, from, _) = r.value("ISHMEM_DEVICE", None, Kind::Text);
        let device = DeviceKind::parse(&dev).ok_or(EnvError {
            name: from,
            value: dev.clone(),
            expected: "one of the device backends: auto, cpu, cuda, ze or opaque",
        })?;
        let (sync, from, _) = r.value("ISHMEM_DEVICE_SYNC", None, Kind::Text);
        let device_sync =
            DeviceSync::parse(&sync).ok_or(EnvError { name: from, value: sync, expected: "auto, heap or control" })?;
        Ok(Config {
            symmetric_size: r.size("ISHMEM_SYMMETRIC_SIZE", Some("SHMEM_SYMMETRIC_SIZE"))?,
            debug: r.flag("ISHMEM_DEBUG", Some("SHMEM_DEBUG")),
            print_version: r.present("ISHMEM_VERSION") || r.present("SHMEM_VERSION"),
            print_info: r.present("ISHMEM_INFO") || r.present("SHMEM_INFO"),
            device,
            device_lib: r.text("ISHMEM_DEVICE_LIB"),
            device_cache: r.cache_dir("ISHMEM_DEVICE_CACHE"),
            cuda_device: r.uint("ISHMEM_CUDA_DEVICE")?,
            ze_device: r.uint("ISHMEM_ZE_DEVICE")?,
            ze_subdevices: r.bool("ISHMEM_ZE_SUBDEVICES", None)?,
            ze_loader: r.text("ISHMEM_ZE_LOADER"),
            device_ring_all: r.bool("ISHMEM_DEVICE_RING_ALL", None)?,
            cpu_kernel_threads: r.uint("ISHMEM_CPU_KERNEL_THREADS")?,
            device_sync,
            cuda_copy_cutover: r.size_or_zero("ISHMEM_CUDA_COPY_CUTOVER")?,
            cuda_copy_cutover_group: r.size_or_zero("ISHMEM_CUDA_COPY_CUTOVER_GROUP")?,
            runtime,
            shmem_lib_name: r.text("ISHMEM_SHMEM_LIB_NAME"),
            enable_shm: r.bool("ISHMEM_ENABLE_SHM", None)?,
            mpi_proxy: r.text("ISHMEM_MPI_PROXY"),
            progress_thread: r.bool("ISHMEM_PROXY_PROGRESS_THREAD", None)?,
            proxy_rma_messages,
            proxy_put_copy: {
                let n = r.size_or_zero("ISHMEM_PROXY_PUT_COPY")?;
                if n > 128 << 10 {
                    let (v, from, _) = r.value("ISHMEM_PROXY_PUT_COPY", None, Kind::Size);
                    return Err(EnvError { name: from, value: v, expected: "a size from 0 to 128k" });
                }
                n
            },
            root: r.text("ISHMEM_ROOT"),
            coll_check: r.bool("ISHMEM_COLL_CHECK", None)?,
            deadlock_timeout: r.uint_or_default("ISHMEM_DEADLOCK_TIMEOUT")?,
            deadlock_abort: r.bool("ISHMEM_DEADLOCK_ABORT", None)?,
            deadlock_device_abort: r.bool("ISHMEM_DEADLOCK_DEVICE_ABORT", None)?,
        })
    }
}

/// What `ishmrun` told one of its PEs (`ISHMRUN_FD`, `ISHMRUN_PE`,
/// `ISHMRUN_NPES`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IshmrunLaunch {
    /// This PE's end of its bootstrap socket.
    pub fd: i32,
    pub pe: usize,
    pub n_pes: usize,
}

/// The launch `ishmrun` described, `None` when it did not start this
/// process, or an error naming the variable that is inconsistent.
pub fn ishmrun_launch() -> Result<Option<IshmrunLaunch>, EnvError> {
    ishmrun_launch_from(&|n| std::env::var(n).ok())
}

fn ishmrun_launch_from(lookup: &dyn Fn(&str) -> Option<String>) -> Result<Option<IshmrunLaunch>, EnvError> {
    let r = Reader { lookup };
    let Some(fd) = r.uint("ISHMRUN_FD")? else { return Ok(None) };
    let fd = i32::try_from(fd).ok().filter(|&f| f >= 3).ok_or(EnvError {
        name: "ISHMRUN_FD",
        value: fd.to_string(),
        expected: "a file descriptor number from 3 to 2147483647 (set by ishmrun)",
    })?;
    let missing = |name: &'static str| EnvError { name, value: String::new(), expected: "a value: ISHMRUN_FD is set" };
    let pe = r.uint("ISHMRUN_PE")?.ok_or_else(|| missing("ISHMRUN_PE"))?;
    let n = r.uint("ISHMRUN_NPES")?.ok_or_else(|| missing("ISHMRUN_NPES"))?;
    if n == 0 || n > i32::MAX as u64 {
        return Err(EnvError {
            name: "ISHMRUN_NPES",
            value: n.to_string(),
            expected: "a PE count from 1 to 2147483647",
        });
    }
    if pe >= n {
        return Err(EnvError { name: "ISHMRUN_PE", value: pe.to_string(), expected: "a PE number below ISHMRUN_NPES" });
    }
    Ok(Some(IshmrunLaunch { fd, pe: pe as usize, n_pes: n as usize }))
}

/// `ISHMEM_TEST_CONNECT_DELAY_MS` (internal test hook), when set to a number.
pub fn test_connect_delay_ms() -> Option<u64> {
    std::env::var("ISHMEM_TEST_CONNECT_DELAY_MS").ok().and_then(|v| v.trim().parse().ok())
}

/// True when `ishmrun` started this process (it set `ISHMRUN_FD`).
pub fn under_ishmrun() -> bool {
    std::env::var_os("ISHMRUN_FD").is_some()
}

/// `CUDA_VISIBLE_DEVICES`, for messages (the CUDA driver applies it).
pub fn cuda_visible_devices() -> Option<String> {
    std::env::var("CUDA_VISIBLE_DEVICES").ok()
}

/// `CUDA_MODULE_LOADING` (CUDA's choice of lazy or eager kernel loading),
/// if set.
pub fn cuda_module_loading() -> Option<String> {
    std::env::var("CUDA_MODULE_LOADING").ok()
}

/// Sets `CUDA_MODULE_LOADING=EAGER` unless the user set it (before the
/// CUDA driver starts, which reads it; device/cuda says why). Changing the
/// environment races with other threads' getenv: called once, at
/// ishmem_init, before CUDA starts.
pub fn cuda_eager_loading_unless_set() {
    set_unless_set(&["CUDA_MODULE_LOADING"], "EAGER");
}

/// Sets `names[0]` to `value` unless any of `names` (a foreign runtime's
/// variable and its aliases) is set: the user's choice stands.
fn set_unless_set(names: &[&str], value: &str) {
    if names.iter().all(|v| std::env::var_os(v).is_none()) {
        std::env::set_var(names[0], value);
    }
}

/// The variables that set how many threads Intel's CPU OpenCL runtime runs
/// kernels on (the calling thread, waiting for a kernel, counts as one).
const OPENCL_CPU_THREAD_VARS: [&str; 2] = ["DPCPP_CPU_NUM_CUS", "SYCL_CPU_NUM_CUS"];

/// Sets Intel's CPU OpenCL runtime to run kernels on `n` threads unless the
/// user set its variable (before the runtime starts, which reads it once).
/// Changing the environment races with other threads' getenv: called once,
/// at ishmem_init (the CPU device's attach), before this library loads the
/// OpenCL runtime at the first device call.
pub fn opencl_cpu_threads_unless_set(n: usize) {
    set_unless_set(&OPENCL_CPU_THREAD_VARS, &n.to_string());
}

/// The directory of the CUDA MPS daemon's control pipe
/// (`CUDA_MPS_PIPE_DIRECTORY`, default `/tmp/nvidia-mps`): whether PEs
/// sharing a GPU run under MPS.
pub fn cuda_mps_pipe_directory() -> String {
    std::env::var("CUDA_MPS_PIPE_DIRECTORY")
        .ok()
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| "/tmp/nvidia-mps".to_string())
}

/// `ZE_AFFINITY_MASK` (which Level Zero devices the driver exposes), for
/// messages.
pub fn ze_affinity_mask() -> Option<String> {
    std::env::var("ZE_AFFINITY_MASK").ok()
}

/// The OpenCL CPU runtime's own settings (`CL_CONFIG_*` variables, for
/// example its vectorizer's), sorted, as raw bytes: some change the code it
/// compiles, so the program cache keys on them all. (Its `cl.cfg` file is
/// not read here.)
pub fn opencl_cpu_settings() -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    // vars_os: a variable that is not UTF-8 must not panic here.
    let mut v: Vec<_> = std::env::vars_os().filter(|(k, _)| k.as_encoded_bytes().starts_with(b"CL_CONFIG_")).collect();
    v.sort();
    v
}

/// MPI ABI families the MPI proxy is built for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MpiFamily {
    OpenMpi,
    Mpich,
}

/// The MPI family whose launcher started this process, from the
/// launcher's environment.
pub fn mpi_launcher_family() -> Option<MpiFamily> {
    let has = |v: &str| std::env::var_os(v).is_some();
    if has("OMPI_COMM_WORLD_SIZE") || has("OMPI_UNIVERSE_SIZE") {
        return Some(MpiFamily::OpenMpi);
    }
    if has("PMI_RANK") || has("PMI_SIZE") || has("MPI_LOCALNRANKS") || has("HYDI_CONTROL_FD") {
        return Some(MpiFamily::Mpich);
    }
    None
}

/// True when the environment looks like an MPI launcher started us.
pub fn launched_by_mpi() -> bool {
    ["OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"]
        .iter()
        .any(|v| std::env::var_os(v).is_some())
}

/// How many of the job's processes the launcher started on this node,
/// where it says (Open MPI, Hydra).
pub fn launcher_local_size() -> Option<usize> {
    ["OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"].iter().find_map(|v| std::env::var(v).ok()?.trim().parse().ok())
}

/// The variable showing that another launcher (mpiexec, mpirun, srun,
/// oshrun) started this process, if one did, and the job size it
/// announces.
pub fn foreign_launcher() -> Option<(&'static str, Option<usize>)> {
    const MARKS: [&str; 6] =
        ["OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS", "SLURM_PROCID"];
    let v = MARKS.into_iter().find(|v| std::env::var_os(v).is_some())?;
    Some((v, launcher_job_size()))
}

/// The job size a foreign launcher announces (before any library started).
pub fn launcher_job_size() -> Option<usize> {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "SLURM_NTASKS"]
        .iter()
        .find_map(|v| std::env::var(v).ok()?.trim().parse().ok())
}

/// Makes sure the symmetric heap size a host OpenSHMEM library reads at its
/// init (`SHMEM_SYMMETRIC_SIZE`, and SOS's `SMA_SYMMETRIC_SIZE`) is at least
/// `mib` MiB. A variable already set that large (by the launcher: `oshrun
/// -x SHMEM_SYMMETRIC_SIZE=...`) is left alone; only a missing or smaller
/// one is set. Setting the environment is not safe while other threads read
/// it (glibc's environment is not thread-safe), so a program that starts
/// threads before `shmem_init` should set these in the launcher's
/// environment (docs/cluster.md).
pub fn set_library_heap_size(mib: usize) {
    let want = (mib as u64) << 20;
    for name in ["SHMEM_SYMMETRIC_SIZE", "SMA_SYMMETRIC_SIZE"] {
        let have = std::env::var(name).ok().and_then(|v| parse_size(v.trim()));
        if have.is_none_or(|h| h < want) {
            std::env::set_var(name, format!("{mib}M"));
        }
    }
}

/// Variables set in the environment that look like ours but that the table
/// does not know (likely typos), each with the known name it is closest to,
/// if any is within two edits: every unknown `ISHMEM_*` and `ISHMRUN_*`
/// name, and `SHMEM_*` names only when close to one of ours (other
/// OpenSHMEM libraries own that prefix). The runtime warns about them.
pub fn unknown_vars() -> Vec<(String, Option<&'static str>)> {
    let names: Vec<String> = std::env::vars_os().filter_map(|(k, _)| k.into_string().ok()).collect();
    unknown_among(names.iter().map(String::as_str))
}

fn unknown_among<'a>(names: impl Iterator<Item = &'a str>) -> Vec<(String, Option<&'static str>)> {
    let mut out = Vec::new();
    for k in names {
        if VARS.iter().any(|v| v.name == k) {
            continue;
        }
        let ours = k.starts_with("ISHMEM_") || k.starts_with("ISHMRUN_");
        let near = k.starts_with("SHMEM_") || k.starts_with("ISHMEM") || k.starts_with("ISMEM_");
        if !ours && !near {
            continue;
        }
        let best = VARS
            .iter()
            .filter(|v| !v.internal)
            .map(|v| (edit_distance(k, v.name), v.name))
            .filter(|(d, _)| *d <= 2)
            .min_by_key(|(d, _)| *d)
            .map(|(_, n)| n);
        if ours || best.is_some() {
            out.push((k.to_string(), best));
        }
    }
    out
}

/// Levenshtein distance (names are short).
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let sub = prev[j - 1] + usize::from(a[i - 1] != b[j - 1]);
            cur[j] = sub.min(prev[j] + 1).min(cur[j - 1] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The effective value and its source for every variable, for reports.
pub fn effective() -> Vec<(&'static EnvVar, String, Source)> {
    VARS.iter()
        .map(|v| match std::env::var(v.name) {
            Ok(val) => (v, val, Source::Environment),
            Err(_) => (v, v.default.to_string(), Source::Default),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn empty_values_are_defaults() {
        let c =
            Config::from_lookup(&|n| ["SHMEM_DEBUG", "ISHMEM_SYMMETRIC_SIZE"].contains(&n).then(String::new)).unwrap();
        assert!(!c.debug);
        assert_eq!(c.symmetric_size, 512 << 20);
        let c = Config::from_lookup(&|n| match n {
            "ISHMEM_DEBUG" => Some(" ".into()),
            "SHMEM_DEBUG" => Some("1".into()),
            _ => None,
        })
        .unwrap();
        assert!(c.debug);
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("512m"), Some(512 << 20));
        assert_eq!(parse_size("2G"), Some(2 << 30));
        assert_eq!(parse_size("1t"), Some(1 << 40));
        assert_eq!(parse_size("64KiB"), Some(64 << 10));
        assert_eq!(parse_size(" 8k "), Some(8 << 10));
        assert_eq!(parse_size("abc"), None);
        assert_eq!(parse_size(""), None);
        assert_eq!(parse_size("-1"), None);
        assert_eq!(parse_size("1.5g"), Some(3 << 29));
        assert_eq!(parse_size("99999999999999t"), None);
    }

    #[test]
    fn config_defaults_and_errors() {
        let empty: HashMap<&str, &str> = HashMap::new();
        let c = Config::from_lookup(&|n| empty.get(n).map(|s| s.to_string())).unwrap();
        assert_eq!(c.symmetric_size, 512 << 20);
        assert!(!c.debug);
        let bad: HashMap<&str, &str> = [("ISHMEM_SYMMETRIC_SIZE", "lots")].into();
        let e = Config::from_lookup(&|n| bad.get(n).map(|s| s.to_string())).unwrap_err();
        assert_eq!(e.name, "ISHMEM_SYMMETRIC_SIZE");
        assert!(e.to_string().contains("\"lots\""));
        let zero: HashMap<&str, &str> = [("ISHMEM_SYMMETRIC_SIZE", "0")].into();
        assert!(Config::from_lookup(&|n| zero.get(n).map(|s| s.to_string())).is_err());
        let alias: HashMap<&str, &str> = [("SHMEM_SYMMETRIC_SIZE", "2m"), ("SHMEM_INFO", "")].into();
        let c = Config::from_lookup(&|n| alias.get(n).map(|s| s.to_string())).unwrap();
        assert_eq!((c.symmetric_size, c.print_info, c.print_version), (2 << 20, true, false));
        let both: HashMap<&str, &str> = [("SHMEM_SYMMETRIC_SIZE", "2m"), ("ISHMEM_SYMMETRIC_SIZE", "4m")].into();
        assert_eq!(Config::from_lookup(&|n| both.get(n).map(|s| s.to_string())).unwrap().symmetric_size, 4 << 20);
        let bad_alias: HashMap<&str, &str> = [("SHMEM_SYMMETRIC_SIZE", "x")].into();
        assert_eq!(
            Config::from_lookup(&|n| bad_alias.get(n).map(|s| s.to_string())).unwrap_err().name,
            "SHMEM_SYMMETRIC_SIZE"
        );
        // Any value but a false word turns debugging on (as Intel SHMEM).
        let dbg: HashMap<&str, &str> = [("ISHMEM_DEBUG", "maybe")].into();
        assert!(Config::from_lookup(&|n| dbg.get(n).map(|s| s.to_string())).unwrap().debug);
    }

    #[test]
    fn ishmrun_variables_are_checked() {
        let get = |m: &[(&str, &str)]| {
            let m: HashMap<String, String> = m.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            ishmrun_launch_from(&move |n| m.get(n).cloned())
        };
        assert_eq!(get(&[]), Ok(None));
        let ok = get(&[("ISHMRUN_FD", "5"), ("ISHMRUN_PE", "1"), ("ISHMRUN_NPES", "4")]).unwrap().unwrap();
        assert_eq!((ok.fd, ok.pe, ok.n_pes), (5, 1, 4));
        // 2^32 + 1 would wrap to descriptor 1 (stdout) if truncated.
        let e = get(&[("ISHMRUN_FD", "4294967297"), ("ISHMRUN_PE", "0"), ("ISHMRUN_NPES", "1")]).unwrap_err();
        assert_eq!(e.name, "ISHMRUN_FD");
        assert_eq!(
            get(&[("ISHMRUN_FD", "1"), ("ISHMRUN_PE", "0"), ("ISHMRUN_NPES", "1")]).unwrap_err().name,
            "ISHMRUN_FD"
        );
        assert_eq!(
            get(&[("ISHMRUN_FD", "5"), ("ISHMRUN_PE", "4"), ("ISHMRUN_NPES", "4")]).unwrap_err().name,
            "ISHMRUN_PE"
        );
        assert_eq!(get(&[("ISHMRUN_FD", "5"), ("ISHMRUN_NPES", "4")]).unwrap_err().name, "ISHMRUN_PE");
        assert_eq!(
            get(&[("ISHMRUN_FD", "5"), ("ISHMRUN_PE", "0"), ("ISHMRUN_NPES", "0")]).unwrap_err().name,
            "ISHMRUN_NPES"
        );
    }

    #[test]
    fn every_variable_read_has_a_row_of_its_kind() {
        // Parsing reads every row through Reader, which asserts the kind:
        // a full parse with everything set exercises each.
        let all: HashMap<&str, &str> = VARS
            .iter()
            .map(|v| {
                let val = match v.kind {
                    Kind::Size => "1m",
                    Kind::Bool | Kind::Flag => "1",
                    Kind::Uint => "7",
                    Kind::Text => "x",
                };
                (v.name, val)
            })
            .chain([
                ("ISHMEM_RUNTIME", "auto"),
                ("ISHMEM_DEVICE", "cpu"),
                ("ISHMEM_PROXY_PUT_COPY", "64k"),
                ("ISHMEM_PROXY_RMA", "message"),
                ("ISHMEM_DEVICE_SYNC", "heap"),
            ])
            .collect();
        Config::from_lookup(&|n| all.get(n).map(|s| s.to_string())).unwrap();
        let e = Config::from_lookup(&|n| (n == "ISHMEM_DEVICE").then(|| "cuda9".to_string())).unwrap_err();
        assert_eq!(e.name, "ISHMEM_DEVICE");
        let e = Config::from_lookup(&|n| (n == "ISHMEM_DEVICE_SYNC").then(|| "gpu".to_string())).unwrap_err();
        assert_eq!((e.name, e.value.as_str()), ("ISHMEM_DEVICE_SYNC", "gpu"));
    }

    #[test]
    fn fractional_sizes() {
        assert_eq!(parse_size("1.5g"), Some(3 << 29));
        assert_eq!(parse_size("3.1M"), Some(3250585));
        assert_eq!(parse_size(".5k"), Some(512));
        assert_eq!(parse_size("2."), Some(2));
        assert_eq!(parse_size("1.5"), Some(1));
        for bad in [".", "1.2.3g", "1,5g", "-1m", "1.5x", "1e3"] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
    }

    #[test]
    fn debug_flag_takes_any_value() {
        let get = |v: &str| Config::from_lookup(&|n| (n == "ISHMEM_DEBUG").then(|| v.to_string())).unwrap().debug;
        assert!(get("1") && get("yes") && get("verbose") && get("2"));
        assert!(!get("0") && !get("off") && !get(""));
        let info = Config::from_lookup(&|n| (n == "ISHMEM_INFO").then(String::new)).unwrap();
        assert!(info.print_info && !info.print_version);
    }

    #[test]
    fn misspelled_names_get_a_suggestion() {
        let got = unknown_among(
            [
                "ISHMEM_SYMETRIC_SIZE",
                "SHMEM_SYMMETRIC_SIZ",
                "SHMEM_OFI_PROVIDER",
                "ISHMEM_BANANA",
                "PATH",
                "ISHMEM_DEBUG",
            ]
            .into_iter(),
        );
        assert_eq!(
            got,
            vec![
                ("ISHMEM_SYMETRIC_SIZE".to_string(), Some("ISHMEM_SYMMETRIC_SIZE")),
                ("SHMEM_SYMMETRIC_SIZ".to_string(), Some("SHMEM_SYMMETRIC_SIZE")),
                ("ISHMEM_BANANA".to_string(), None),
            ]
        );
    }

    #[test]
    fn table_defaults_parse() {
        for v in VARS.iter().filter(|v| !v.internal && !v.default.is_empty()) {
            let ok = match v.kind {
                Kind::Size => parse_size(v.default).is_some(),
                Kind::Bool | Kind::Flag => parse_bool(v.default).is_some(),
                Kind::Uint => v.default.parse::<u64>().is_ok(),
                Kind::Text => true,
            };
            assert!(ok, "default of {} does not parse", v.name);
        }
    }
}
