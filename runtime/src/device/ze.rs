//! The Level Zero device (`ISHMEM_DEVICE=ze`): symmetric heaps in Intel
//! GPU memory, device code from SPIR-V linked with the device library
//! `ishmem_device.spv` at run time. **Unverified on hardware**: no Intel
//! GPU was reachable while it was written; what has run is the fail-fast
//! discovery (no loader, no driver, no GPU), on machines without one.
//!
//! It mirrors the CUDA device:
//! * Discovery: the loader (`level-zero-sys`'s table), `zeInit` for GPUs,
//!   the first driver that reports a GPU. Without a loader, a driver or a
//!   GPU, or with a driver that cannot share memory between processes or
//!   register host memory, `new` fails naming what it tried and what to
//!   install. `ZE_AFFINITY_MASK` is the driver's business; the PE's GPU is
//!   `ISHMEM_ZE_DEVICE`, else its rank on the node modulo the GPUs (tiles
//!   with `ISHMEM_ZE_SUBDEVICES=1`), and the GPUs of a node's PEs must be
//!   able to access each other's memory (`zeDeviceCanAccessPeer`).
//! * Heap: `zeMemAllocDevice`, exported as the dma-buf file descriptor of
//!   its IPC handle (spec 1.6's conversion when the loader has it, else the
//!   first bytes of the handle, where Intel's driver keeps it); peers open
//!   it with `zeMemOpenIpcHandle` from a handle rebuilt around the
//!   descriptor the bootstrap passed them (zeros and the descriptor, as
//!   Intel's driver lays it out: its spec-1.6 conversion only knows the
//!   descriptors its own process exported). A heap the driver splits over
//!   tiles has several descriptors: init fails, naming one PE per tile.
//! * Host access to GPU memory ([`DeviceMemory`]): copies and fills on a
//!   synchronous immediate command list of a copy engine; AMOs by the
//!   library's one-work-item kernel `ishmemi_host_amo` on a synchronous
//!   compute list of its own hardware queue where the GPU has more than one
//!   (so a program kernel that waits on a host AMO cannot block it).
//! * The ring and the control segment stay where the core made them:
//!   ordinary host memory (the control segment is shared by the node's
//!   processes), which kernels reach at its own addresses only on GPUs
//!   that access shared system memory (`sharedSystemAllocCapabilities`
//!   read-write and atomic): required, checked when the GPU is opened.
//!   Level Zero 1.4 has no call that maps existing host memory at its host
//!   address (`zexDriverImportExternalPointer` gives it another GPU
//!   address, which the state's host pointers would not match). The state,
//!   the peer and team tables and the quiet words: GPU memory, installed
//!   through the library module's global `ishmemi_state`
//!   (`zeModuleGetGlobalPointer`).
//! * Programs: the user's SPIR-V module dynamically linked with the library
//!   module (`zeModuleDynamicLink`); the `_on_queue` routines append the
//!   library's kernels to the program's command list.

use super::opencl::read_library;
use super::ring_server::RingServer;
use super::{Attach, Device, DeviceError, DeviceMemory, LocalRank, Native, QueueArg, QueueOp};
use crate::ctrl::TEAM_SLOTS;
use crate::device_state::ishmemx_device_state_t;
use crate::dynlib::{self, LoadError, Search};
use crate::env::{Config, DeviceKind};
use crate::mem::{HeapRegion, Release};
use crate::types::Amo;
use level_zero_sys::*;
use std::collections::{HashMap, HashSet};
use std::ffi::{c_char, c_void, CStr, CString};
use std::fmt;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr::null_mut;
use std::sync::{Mutex, OnceLock};

/// Heap bases are aligned to this (the driver's large-page size).
const HEAP_ALIGN: usize = 2 << 20;
/// Intel's Level Zero GPU driver, as the loader looks for it.
const DRIVER_NAMES: &[&str] = &["libze_intel_gpu.so.1", "libze_intel_gpu.so"];
/// Events per event pool.
const POOL_EVENTS: u32 = 64;

/// `zexMemGetIpcHandles` (Intel's driver extension): the IPC handles of an
/// allocation, one per tile it spans.
type GetIpcHandlesFn =
    unsafe extern "C" fn(ze_context_handle_t, *const c_void, *mut u32, *mut ze_ipc_mem_handle_t) -> ze_result_t;
/// What the library's kernels reach besides their arguments.
const INDIRECT: ze_kernel_indirect_access_flags_t =
    ZE_KERNEL_INDIRECT_ACCESS_FLAG_HOST | ZE_KERNEL_INDIRECT_ACCESS_FLAG_DEVICE | ZE_KERNEL_INDIRECT_ACCESS_FLAG_SHARED;

/// What went wrong with Level Zero or the GPU it offers (the text is made
/// at the edge, by `Display`).
#[derive(Debug)]
pub enum ZeError {
    /// The loader did not load: every path tried.
    Load(LoadError),
    /// A call (`call`, with what it worked on) returned `code`; `hint`
    /// follows the message: what to check, or the build log (`": ..."`).
    Call { call: String, code: ze_result_t, hint: String },
    /// The loader `loader` found no GPU driver; `driver_tried`: each name
    /// and why it did not load.
    NoDriver { loader: String, init: Option<ze_result_t>, driver_tried: Vec<String> },
    /// The driver is there but the machine has no render node; `drm`: what
    /// /sys/class/drm has.
    NoDeviceNode { driver: String, init: Option<ze_result_t>, drm: Vec<String> },
    /// This user cannot open the render nodes `nodes`.
    NodeDenied { driver: String, init: Option<ze_result_t>, nodes: Vec<String> },
    /// Driver and nodes are there, but no usable GPU (`mask`:
    /// `ZE_AFFINITY_MASK`, when set).
    NoUsableGpu { driver: String, init: Option<ze_result_t>, nodes: Vec<String>, mask: Option<String> },
    /// The driver cannot share device memory between processes.
    NoIpcMemory,
    /// `ISHMEM_ZE_DEVICE` names a GPU the driver does not report.
    NoSuchGpu { wanted: u64, count: usize },
    /// This PE's GPU cannot reach the memory of GPU `gpu` (`name`), where
    /// PE `pe` of this node runs.
    NoPeerAccess { gpu: usize, name: String, pe: usize },
    /// The GPU cannot use ordinary host memory at its own addresses with
    /// atomics (`caps`: its `sharedSystemAllocCapabilities`).
    NoSharedSystemMemory { caps: u32 },
    /// The GPU reports no compute engine.
    NoComputeEngine,
    /// The driver's IPC handle is more than a file descriptor.
    OpaqueIpcHandle,
    /// The driver spread the heap over `tiles` tiles.
    ImplicitScaling { tiles: u32 },
    /// Duplicating the heap's descriptor `fd` failed.
    DupHandle { fd: i32, source: std::io::Error },
    /// The device library could not be read.
    Library(super::opencl::ClError),
    /// The device library's `ishmemi_state` is `size` bytes, not a pointer.
    WrongLibrary { size: usize },
    /// The GPU is used before `ishmem_init` opened it.
    NotOpen,
    /// Device code is needed before attach or after detach.
    NotAttached,
    /// `event` (an address) is no outstanding event of this PE's
    /// `_on_queue` routines.
    ForeignEvent { event: usize },
    /// Collectives on a device queue have no SPIR-V kernel.
    NoQueueKernel,
}

impl ZeError {
    /// The same error with `more` after a call's message (other errors
    /// keep theirs).
    fn hint(self, more: impl Into<String>) -> ZeError {
        match self {
            ZeError::Call { call, code, mut hint } => {
                hint.push_str(&more.into());
                ZeError::Call { call, code, hint }
            }
            e => e,
        }
    }
}

/// `zeInit`'s result as the no-GPU messages quote it.
fn init_text(init: &Option<ze_result_t>) -> String {
    match init {
        Some(r) => format!("zeInit(ZE_INIT_FLAG_GPU_ONLY) returned {} ({r:#x})", result_name(*r)),
        None => "the drivers it loaded report no GPU".to_string(),
    }
}

impl fmt::Display for ZeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ZeError::Load(e) => e.fmt(f),
            ZeError::Call { call, code, hint } => write!(f, "{call} failed: {} ({code:#x}){hint}", result_name(*code)),
            ZeError::NoDriver { loader, init, driver_tried } => write!(
                f,
                "the Level Zero loader {loader} has no GPU driver ({}); tried {} (install Intel's GPU compute runtime: Debian/Ubuntu intel-level-zero-gpu, or intel-opencl-icd, which contains libze_intel_gpu.so.1)",
                init_text(init),
                driver_tried.join(", ")
            ),
            ZeError::NoDeviceNode { driver, init, drm } => write!(
                f,
                "the Level Zero GPU driver {driver} is installed, but this machine has no GPU device node: no /dev/dri/renderD* ({}; /sys/class/drm has {}); an Intel GPU with its kernel driver (i915 or xe) is needed",
                init_text(init),
                if drm.is_empty() { "nothing".to_string() } else { drm.join(" ") }
            ),
            ZeError::NodeDenied { driver, init, nodes } => write!(
                f,
                "the Level Zero GPU driver {driver} is installed, but this user cannot open {} ({}): add the user to the group owning it (usually render)",
                nodes.join(", "),
                init_text(init)
            ),
            ZeError::NoUsableGpu { driver, init, nodes, mask } => write!(
                f,
                "the Level Zero GPU driver {driver} and the device nodes {} are there, but the driver reports no usable GPU ({}{}); is this GPU supported by the installed driver version?",
                nodes.join(", "),
                init_text(init),
                mask.as_ref().map_or(String::new(), |m| format!("; ZE_AFFINITY_MASK={m} may hide them"))
            ),
            ZeError::NoIpcMemory => f.write_str(
                "the Level Zero driver cannot share device memory between processes (no ZE_IPC_PROPERTY_FLAG_MEMORY), which symmetric heaps need",
            ),
            ZeError::NoSuchGpu { wanted, count } => write!(
                f,
                "ISHMEM_ZE_DEVICE={wanted}, but the driver reports {count} GPU(s) (0..{})",
                count.saturating_sub(1)
            ),
            ZeError::NoPeerAccess { gpu, name, pe } => write!(
                f,
                "cannot access the memory of GPU {gpu} ({name}), where PE {pe} of this node runs: the node's PEs must be on GPUs that map each other's memory"
            ),
            ZeError::NoSharedSystemMemory { caps } => write!(
                f,
                "cannot access ordinary host memory at its own addresses with atomics (sharedSystemAllocCapabilities {caps:#x}), where the reverse-offload ring and the node's control segment live; the ze device needs a GPU and driver with shared system memory support (SVM)"
            ),
            ZeError::NoComputeEngine => f.write_str("has no compute engine"),
            ZeError::OpaqueIpcHandle => f.write_str(
                "the driver's IPC handle carries more than a file descriptor (a pooled or opaque handle), so it cannot be passed to the node's other PEs as one; this driver needs spec 1.6's zeMemGetFileDescriptorFromIpcHandleExp (a newer loader)",
            ),
            ZeError::ImplicitScaling { tiles } => write!(
                f,
                "the driver spreads the heap over {tiles} tiles (implicit scaling), which cannot be shared as one file descriptor: run one PE per tile (ISHMEM_ZE_SUBDEVICES=1, or ZE_FLAT_DEVICE_HIERARCHY=FLAT)"
            ),
            ZeError::DupHandle { fd, source } => write!(f, "cannot duplicate the heap's descriptor {fd}: {source}"),
            ZeError::Library(e) => e.fmt(f),
            ZeError::WrongLibrary { size } => write!(
                f,
                "the device library's ishmemi_state is {size} bytes, not a pointer: is ishmem_device.spv (ISHMEM_DEVICE_LIB) the one of this libishmem?"
            ),
            ZeError::NotOpen => {
                f.write_str("the Level Zero device is not open yet (ishmem_init has not created the heap)")
            }
            ZeError::NotAttached => f.write_str(
                "the Level Zero device is not attached (before ishmem_init finished, or after ishmem_finalize)",
            ),
            ZeError::ForeignEvent { event } => write!(
                f,
                "{event:#x} is not an event of an ishmemx_*_on_queue routine of this PE (or it was already waited for)"
            ),
            ZeError::NoQueueKernel => f.write_str(
                "collectives on a device queue are built for the cuda device only (this PE's device is ze)",
            ),
        }
    }
}

impl std::error::Error for ZeError {}

fn check(what: &str, r: ze_result_t) -> Result<(), ZeError> {
    if r == ZE_RESULT_SUCCESS {
        Ok(())
    } else {
        Err(ZeError::Call { call: what.to_string(), code: r, hint: String::new() })
    }
}

/// A failure that leaves this PE without the ze device (at init).
fn unavailable(error: ZeError) -> DeviceError {
    DeviceError::Ze { context: "ISHMEM_DEVICE=ze".into(), error }
}

/// A device slot a PE can be given: a GPU, or one tile of one.
struct Slot {
    dev: ze_device_handle_t,
    name: String,
    max_alloc: u64,
}

/// The GPU this PE uses, once chosen.
struct Open {
    index: usize,
    dev: ze_device_handle_t,
    name: String,
    max_alloc: u64,
    /// Synchronous immediate list on a copy engine: host copies and fills.
    copy: Mutex<ze_command_list_handle_t>,
    /// Synchronous immediate list on the compute engine: host AMO kernels.
    compute: Mutex<ze_command_list_handle_t>,
    /// The program's list (asynchronous, in order): `ishmemx_ze_command_list`.
    queue: ze_command_list_handle_t,
}

/// The device library module and what attach set up, undone by detach.
struct Library {
    module: ze_module_handle_t,
    /// The host-AMO kernel and its result word (host memory the GPU writes).
    amo: Mutex<ze_kernel_handle_t>,
    amo_result: *mut u64,
    /// Kernels behind the `_on_queue` routines, by name (arguments are
    /// captured when a launch is appended, so one object per name serves).
    kernels: Mutex<HashMap<&'static str, ze_kernel_handle_t>>,
    /// The heap is over 4 GiB (programs are built for that too).
    big_heap: bool,
    /// The GPU copy of the state and its tables.
    mirror: *mut c_void,
    teams_dst: *mut u8,
    teams_src: *const u8,
}

/// Event pools for the `_on_queue` routines' events, reused after a wait.
#[derive(Default)]
struct Events {
    pools: Vec<ze_event_pool_handle_t>,
    /// Events created in the last pool.
    used: u32,
    free: Vec<ze_event_handle_t>,
    outstanding: HashSet<usize>,
}

// SAFETY: Level Zero handles and addresses are plain values usable from any
// thread; every mutable use is behind a lock.
unsafe impl Send for Slot {}
// SAFETY: as above.
unsafe impl Sync for Slot {}
// SAFETY: as above.
unsafe impl Send for Open {}
// SAFETY: as above.
unsafe impl Sync for Open {}
// SAFETY: as above.
unsafe impl Send for Library {}
// SAFETY: as above.
unsafe impl Sync for Library {}
// SAFETY: as above.
unsafe impl Send for Events {}

/// Intel GPUs through Level Zero.
pub struct ZeDevice {
    l: &'static Loader,
    ctx: ze_context_handle_t,
    slots: Vec<Slot>,
    /// `ISHMEM_ZE_DEVICE`.
    wanted: Option<u64>,
    device_lib: Option<String>,
    get_ipc_handles: Option<GetIpcHandlesFn>,
    open: OnceLock<Open>,
    lib: Mutex<Option<Library>>,
    events: Mutex<Events>,
    server: Mutex<Option<RingServer>>,
}

// SAFETY: as for Open.
unsafe impl Send for ZeDevice {}
// SAFETY: as above.
unsafe impl Sync for ZeDevice {}

/// `/dev/dri/renderD*`, the device nodes of GPUs a compute driver opens.
fn render_nodes() -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir("/dev/dri")
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("renderD")))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Why `zeInit` found no GPU (`init` is its result when it failed), by
/// what is missing: the driver library, the GPU's device node, the right
/// to open it.
fn no_gpu_reason(l: &Loader, init: Option<ze_result_t>) -> ZeError {
    // Whether the driver library is there (the loader opens it the same way).
    let mut search = Search::new("a Level Zero GPU driver", "");
    let driver = DRIVER_NAMES.iter().copied().find(|name| search.open(name, dynlib::Open::Local).is_some());
    let Some(driver) = driver else {
        let driver_tried = search.failed().tried.iter().map(|(name, why)| format!("{name} ({why})")).collect();
        return ZeError::NoDriver { loader: l.path.to_string(), init, driver_tried };
    };
    let driver = driver.to_string();
    let nodes = render_nodes();
    if nodes.is_empty() {
        let drm = std::fs::read_dir("/sys/class/drm")
            .map(|d| d.filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned())).collect())
            .unwrap_or_default();
        return ZeError::NoDeviceNode { driver, init, drm };
    }
    let denied: Vec<String> = nodes
        .iter()
        .filter(|p| {
            std::fs::OpenOptions::new().read(true).write(true).open(p).err().map(|e| e.kind())
                == Some(std::io::ErrorKind::PermissionDenied)
        })
        .map(|p| p.display().to_string())
        .collect();
    if !denied.is_empty() {
        return ZeError::NodeDenied { driver, init, nodes: denied };
    }
    let nodes = nodes.iter().map(|p| p.display().to_string()).collect();
    ZeError::NoUsableGpu { driver, init, nodes, mask: crate::env::ze_affinity_mask().map(|m| m.to_string()) }
}

/// Opens the Level Zero loader: `path` (`ISHMEM_ZE_LOADER`) or the usual
/// names; the error names every path tried and why.
fn load_loader(path: Option<&str>) -> Result<Loader, LoadError> {
    let mut search = Search::new(
        "the Level Zero loader",
        "install libze1, or Intel's level-zero package, and a GPU driver such as intel-level-zero-gpu",
    );
    let names: Vec<&str> = path.map_or_else(|| LOADER_NAMES.to_vec(), |p| vec![p]);
    for name in names {
        let Some(lib) = search.open(name, dynlib::Open::Local) else { continue };
        match Loader::bind(lib, name) {
            Ok(l) => return Ok(l),
            Err(why) => search.unusable(name, why),
        }
    }
    Err(search.failed())
}

/// What `ishmem-info` reports: the GPUs Level Zero sees, or why none.
pub fn probe(loader: Option<&str>) -> Result<String, ZeError> {
    let l = load_loader(loader).map_err(ZeError::Load)?;
    // SAFETY: discovery calls with valid out-pointers.
    let gpus = unsafe { discover(&l)? };
    let names: Vec<String> = gpus.1.iter().map(|(_, p)| device_name(p)).collect();
    Ok(format!("loader {}; {} GPU(s): {}", l.path, names.len(), names.join(", ")))
}

fn device_name(p: &ze_device_properties_t) -> String {
    // SAFETY: the driver writes a NUL-terminated name.
    unsafe { CStr::from_ptr(p.name.as_ptr()) }.to_string_lossy().into_owned()
}

/// `zeInit`, then the first driver that reports GPUs, and its GPUs.
///
/// # Safety
/// `l` is a loaded table.
#[allow(clippy::type_complexity)]
unsafe fn discover(
    l: &Loader,
) -> Result<(ze_driver_handle_t, Vec<(ze_device_handle_t, ze_device_properties_t)>), ZeError> {
    // SAFETY: loader calls with valid out-pointers (the caller's contract).
    unsafe {
        let r = (l.init)(ZE_INIT_FLAG_GPU_ONLY);
        if r != ZE_RESULT_SUCCESS {
            return Err(no_gpu_reason(l, Some(r)));
        }
        let mut n = 0u32;
        check("zeDriverGet", (l.driver_get)(&mut n, null_mut()))?;
        let mut drivers = vec![null_mut(); n as usize];
        check("zeDriverGet", (l.driver_get)(&mut n, drivers.as_mut_ptr()))?;
        for drv in drivers.into_iter().take(n as usize) {
            let mut c = 0u32;
            check("zeDeviceGet", (l.device_get)(drv, &mut c, null_mut()))?;
            let mut devs = vec![null_mut(); c as usize];
            check("zeDeviceGet", (l.device_get)(drv, &mut c, devs.as_mut_ptr()))?;
            let mut gpus = Vec::new();
            for d in devs.into_iter().take(c as usize) {
                let mut p: ze_device_properties_t = std::mem::zeroed();
                p.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
                check("zeDeviceGetProperties", (l.device_get_properties)(d, &mut p))?;
                if p.type_ == ZE_DEVICE_TYPE_GPU {
                    gpus.push((d, p));
                }
            }
            if !gpus.is_empty() {
                return Ok((drv, gpus));
            }
        }
        Err(no_gpu_reason(l, None))
    }
}

/// A command-queue group of `dev`: the first copy-only group (a copy
/// engine), or with `compute`, the first compute group; `None` when there
/// is none.
///
/// # Safety
/// `dev` is a device handle of `l`'s driver.
unsafe fn queue_group(l: &Loader, dev: ze_device_handle_t, compute: bool) -> Result<Option<(u32, u32)>, ZeError> {
    // SAFETY: two-call enumeration with a buffer of the reported size.
    unsafe {
        let mut n = 0u32;
        check(
            "zeDeviceGetCommandQueueGroupProperties",
            (l.device_get_command_queue_group_properties)(dev, &mut n, null_mut()),
        )?;
        let mut v: Vec<ze_command_queue_group_properties_t> = vec![std::mem::zeroed(); n as usize];
        for g in &mut v {
            g.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES;
        }
        check(
            "zeDeviceGetCommandQueueGroupProperties",
            (l.device_get_command_queue_group_properties)(dev, &mut n, v.as_mut_ptr()),
        )?;
        Ok(v.iter()
            .take(n as usize)
            .position(|g| {
                let c = g.flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE != 0;
                if compute {
                    c
                } else {
                    !c && g.flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY != 0
                }
            })
            .map(|i| (i as u32, v[i].numQueues)))
    }
}

impl ZeDevice {
    /// Loads the loader, finds the driver and its GPUs (fail fast).
    pub fn new(config: &Config) -> Result<ZeDevice, DeviceError> {
        let l = load_loader(config.ze_loader.as_deref())?;
        let l: &'static Loader = Box::leak(Box::new(l));
        // SAFETY: discovery and driver queries with valid out-pointers.
        unsafe {
            let (driver, gpus) = discover(l).map_err(unavailable)?;
            let mut ipc: ze_driver_ipc_properties_t = std::mem::zeroed();
            ipc.stype = ZE_STRUCTURE_TYPE_DRIVER_IPC_PROPERTIES;
            check("zeDriverGetIpcProperties", (l.driver_get_ipc_properties)(driver, &mut ipc)).map_err(unavailable)?;
            if ipc.flags & ZE_IPC_PROPERTY_FLAG_MEMORY == 0 {
                return Err(unavailable(ZeError::NoIpcMemory));
            }
            let ext = |name: &CStr| -> Option<*mut c_void> {
                let mut f = null_mut();
                let r = (l.driver_get_extension_function_address)(driver, name.as_ptr(), &mut f);
                (r == ZE_RESULT_SUCCESS && !f.is_null()).then_some(f)
            };
            // SAFETY: the driver's extension with its documented prototype.
            let get_ipc_handles =
                ext(c"zexMemGetIpcHandles").map(|f| std::mem::transmute::<*mut c_void, GetIpcHandlesFn>(f));
            let mut slots = Vec::new();
            for (d, p) in gpus {
                let name = device_name(&p);
                let mut subs = Vec::new();
                if config.ze_subdevices {
                    let mut n = 0u32;
                    check("zeDeviceGetSubDevices", (l.device_get_sub_devices)(d, &mut n, null_mut()))
                        .map_err(unavailable)?;
                    subs = vec![null_mut(); n as usize];
                    check("zeDeviceGetSubDevices", (l.device_get_sub_devices)(d, &mut n, subs.as_mut_ptr()))
                        .map_err(unavailable)?;
                    subs.truncate(n as usize);
                }
                if subs.is_empty() {
                    slots.push(Slot { dev: d, name, max_alloc: p.maxMemAllocSize });
                } else {
                    for (t, s) in subs.into_iter().enumerate() {
                        let mut sp: ze_device_properties_t = std::mem::zeroed();
                        sp.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
                        check("zeDeviceGetProperties", (l.device_get_properties)(s, &mut sp)).map_err(unavailable)?;
                        slots.push(Slot { dev: s, name: format!("{name} tile {t}"), max_alloc: sp.maxMemAllocSize });
                    }
                }
            }
            let mut desc: ze_context_desc_t = std::mem::zeroed();
            desc.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC;
            let mut ctx = null_mut();
            check("zeContextCreate", (l.context_create)(driver, &desc, &mut ctx)).map_err(unavailable)?;
            Ok(ZeDevice {
                l,
                ctx,
                slots,
                wanted: config.ze_device,
                device_lib: config.device_lib.clone(),
                get_ipc_handles,
                open: OnceLock::new(),
                lib: Mutex::new(None),
                events: Mutex::new(Events::default()),
                server: Mutex::new(None),
            })
        }
    }

    fn gpu(&self) -> Result<&Open, ZeError> {
        self.open.get().ok_or(ZeError::NotOpen)
    }

    /// An immediate command list on group `ordinal` of `dev`.
    fn list(
        &self, dev: ze_device_handle_t, (ordinal, index): (u32, u32), mode: ze_command_queue_mode_t,
    ) -> Result<ze_command_list_handle_t, ZeError> {
        // SAFETY: a descriptor of ours; the list is kept until exit.
        unsafe {
            let mut d: ze_command_queue_desc_t = std::mem::zeroed();
            d.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC;
            d.ordinal = ordinal;
            d.index = index;
            d.mode = mode;
            let mut h = null_mut();
            check("zeCommandListCreateImmediate", (self.l.command_list_create_immediate)(self.ctx, dev, &d, &mut h))?;
            Ok(h)
        }
    }

    /// Chooses and opens this PE's GPU (once).
    fn open(&self, local: LocalRank) -> Result<&Open, DeviceError> {
        if let Some(o) = self.open.get() {
            return Ok(o);
        }
        let n = self.slots.len();
        let index = match self.wanted {
            Some(w) if w as usize >= n => return Err(unavailable(ZeError::NoSuchGpu { wanted: w, count: n })),
            Some(w) => w as usize,
            None => local.rank % n,
        };
        let s = &self.slots[index];
        let e =
            |error: ZeError| DeviceError::Ze { context: format!("ISHMEM_DEVICE=ze: GPU {index} ({})", s.name), error };
        // The node's other PEs' GPUs (by the same rule) must be reachable.
        if self.wanted.is_none() {
            for r in 0..local.size {
                let j = r % n;
                if j == index {
                    continue;
                }
                let mut ok: ze_bool_t = 0;
                // SAFETY: two device handles of our driver.
                let rc = unsafe { (self.l.device_can_access_peer)(s.dev, self.slots[j].dev, &mut ok) };
                check("zeDeviceCanAccessPeer", rc).map_err(e)?;
                if ok == 0 {
                    return Err(e(ZeError::NoPeerAccess { gpu: j, name: self.slots[j].name.clone(), pe: r }));
                }
            }
        }
        // Kernels reach the ring and the control segment (ordinary host
        // memory, the segment shared between processes) at their addresses.
        // SAFETY: a device handle of our driver; a descriptor of ours.
        let sys = unsafe {
            let mut m: ze_device_memory_access_properties_t = std::mem::zeroed();
            m.stype = ZE_STRUCTURE_TYPE_DEVICE_MEMORY_ACCESS_PROPERTIES;
            check("zeDeviceGetMemoryAccessProperties", (self.l.device_get_memory_access_properties)(s.dev, &mut m))
                .map_err(e)?;
            m.sharedSystemAllocCapabilities
        };
        let need = ZE_MEMORY_ACCESS_CAP_FLAG_RW | ZE_MEMORY_ACCESS_CAP_FLAG_ATOMIC;
        if sys & need != need {
            return Err(e(ZeError::NoSharedSystemMemory { caps: sys }));
        }
        // SAFETY: a device handle of our driver.
        let compute =
            unsafe { queue_group(self.l, s.dev, true) }.map_err(e)?.ok_or_else(|| e(ZeError::NoComputeEngine))?;
        // SAFETY: as above.
        let copy = unsafe { queue_group(self.l, s.dev, false) }.map_err(e)?.unwrap_or(compute);
        // The program's list on the compute group's first queue; the host
        // AMO kernel on another queue of the group when there is one.
        let internal = (compute.0, compute.1.saturating_sub(1).min(1));
        let o = Open {
            index,
            dev: s.dev,
            name: s.name.clone(),
            max_alloc: s.max_alloc,
            copy: Mutex::new(self.list(s.dev, (copy.0, 0), ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS).map_err(e)?),
            compute: Mutex::new(self.list(s.dev, internal, ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS).map_err(e)?),
            queue: self.list(s.dev, (compute.0, 0), ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS).map_err(e)?,
        };
        let _ = self.open.set(o);
        Ok(self.gpu()?)
    }

    /// The descriptor inside an IPC handle of `zeMemGetIpcHandle`.
    fn fd_of(&self, h: &ze_ipc_mem_handle_t) -> Result<i32, ZeError> {
        if let Some(f) = self.l.mem_get_file_descriptor_from_ipc_handle {
            let mut v = 0u64;
            // SAFETY: spec 1.6's conversion on a handle of ours.
            let r = unsafe { f(self.ctx, *h, &mut v) };
            if r == ZE_RESULT_SUCCESS {
                return Ok(v as i32);
            }
            if r != ZE_RESULT_ERROR_UNSUPPORTED_FEATURE {
                check("zeMemGetFileDescriptorFromIpcHandleExp", r)?;
            }
        }
        let b: Vec<u8> = h.data.iter().map(|&c| c as u8).collect();
        if b[4..].iter().any(|&x| x != 0) {
            return Err(ZeError::OpaqueIpcHandle);
        }
        Ok(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// The IPC handle for a descriptor a peer exported: zeros and the
    /// descriptor, as Intel's driver lays out its own (spec 1.6's
    /// zeMemGetIpcHandleFromFileDescriptorExp only knows descriptors its own
    /// process exported).
    fn handle_of(fd: i32) -> ze_ipc_mem_handle_t {
        // SAFETY: an all-zero handle is a valid value of the plain array.
        let mut h: ze_ipc_mem_handle_t = unsafe { std::mem::zeroed() };
        for (i, b) in (fd as u64).to_le_bytes().into_iter().enumerate() {
            h.data[i] = b as c_char;
        }
        h
    }

    /// How a heap is given back when its region drops: freed (ours) or
    /// closed (a peer's).
    fn release(&self, imported: bool) -> Release {
        let (l, ctx) = (self.l, self.ctx as usize);
        Release::Device(Box::new(move |base, _| {
            // SAFETY: the allocation or import of this region; nothing uses
            // it after the region is dropped.
            unsafe {
                if imported {
                    (l.mem_close_ipc_handle)(ctx as ze_context_handle_t, base as *const c_void);
                } else {
                    (l.mem_free)(ctx as ze_context_handle_t, base.cast());
                }
            }
        }))
    }

    /// Runs `f` on the synchronous copy list (complete when it returns).
    fn on_copy(&self, what: &str, f: impl FnOnce(ze_command_list_handle_t) -> ze_result_t) -> Result<(), ZeError> {
        let o = self.gpu()?;
        let list = o.copy.lock().unwrap_or_else(|e| e.into_inner());
        check(what, f(*list))
    }

    /// Copies `len` bytes on the synchronous copy list.
    ///
    /// # Safety
    /// `src` and `dst` are valid for `len` bytes, in memory the GPU reaches.
    unsafe fn copy_list(&self, dst: *mut u8, src: *const u8, len: usize) -> Result<(), ZeError> {
        if len == 0 {
            return Ok(());
        }
        let l = self.l;
        // SAFETY: the caller's contract; the list is synchronous, so the
        // copy is complete when the append returns.
        self.on_copy("zeCommandListAppendMemoryCopy", |list| unsafe {
            (l.command_list_append_memory_copy)(list, dst.cast(), src.cast(), len, null_mut(), 0, null_mut())
        })
    }

    /// A module from SPIR-V `il` with `flags`; a failure carries the build log.
    fn module(&self, il: &[u8], flags: &str, what: &str) -> Result<ze_module_handle_t, ZeError> {
        let o = self.gpu()?;
        let flags = CString::new(flags).unwrap_or_default();
        // SAFETY: a descriptor of ours over `il`, which outlives the call.
        unsafe {
            let mut d: ze_module_desc_t = std::mem::zeroed();
            d.stype = ZE_STRUCTURE_TYPE_MODULE_DESC;
            d.format = ZE_MODULE_FORMAT_IL_SPIRV;
            d.inputSize = il.len();
            d.pInputModule = il.as_ptr();
            d.pBuildFlags = flags.as_ptr();
            let (mut m, mut log) = (null_mut(), null_mut());
            let r = (self.l.module_create)(self.ctx, o.dev, &d, &mut m, &mut log);
            let text = self.take_log(log);
            check(&format!("zeModuleCreate ({what})"), r).map_err(|e| e.hint(text))?;
            Ok(m)
        }
    }

    /// The text of a build log (then destroyed), as `": <text>"` or empty.
    fn take_log(&self, log: ze_module_build_log_handle_t) -> String {
        if log.is_null() {
            return String::new();
        }
        // SAFETY: two-call query into a buffer of the reported size.
        unsafe {
            let mut n = 0usize;
            (self.l.module_build_log_get_string)(log, &mut n, null_mut());
            let mut buf = vec![0 as c_char; n.max(1)];
            (self.l.module_build_log_get_string)(log, &mut n, buf.as_mut_ptr());
            (self.l.module_build_log_destroy)(log);
            let t = CStr::from_ptr(buf.as_ptr()).to_string_lossy().trim().to_string();
            if t.is_empty() {
                t
            } else {
                format!(": {t}")
            }
        }
    }

    /// A kernel of the library module.
    fn kernel(&self, module: ze_module_handle_t, name: &str) -> Result<ze_kernel_handle_t, ZeError> {
        let cname = CString::new(name).unwrap_or_default();
        // SAFETY: a descriptor of ours; the kernel lives until exit.
        unsafe {
            let mut d: ze_kernel_desc_t = std::mem::zeroed();
            d.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC;
            d.pKernelName = cname.as_ptr();
            let mut k = null_mut();
            check(&format!("zeKernelCreate({name})"), (self.l.kernel_create)(module, &d, &mut k))
                .map_err(|e| e.hint(": is ishmem_device.spv (ISHMEM_DEVICE_LIB) the one of this libishmem?"))?;
            check("zeKernelSetGroupSize", (self.l.kernel_set_group_size)(k, 1, 1, 1))?;
            check("zeKernelSetIndirectAccess", (self.l.kernel_set_indirect_access)(k, INDIRECT))?;
            Ok(k)
        }
    }

    /// Sets kernel arguments (each a plain value of its size).
    ///
    /// # Safety
    /// The values match the kernel's parameters.
    unsafe fn set_args(&self, k: ze_kernel_handle_t, args: &[(&[u8], usize)]) -> Result<(), ZeError> {
        for (i, (v, n)) in args.iter().enumerate() {
            // SAFETY: the caller's contract.
            let r = unsafe { (self.l.kernel_set_argument_value)(k, i as u32, *n, v.as_ptr().cast()) };
            check("zeKernelSetArgumentValue", r)?;
        }
        Ok(())
    }

    /// An event for an `_on_queue` operation, from the pools.
    fn event(&self) -> Result<ze_event_handle_t, ZeError> {
        let o = self.gpu()?;
        let mut ev = self.events.lock().unwrap_or_else(|e| e.into_inner());
        let h = match ev.free.pop() {
            Some(h) => h,
            None => {
                // SAFETY: descriptors of ours; pools live until exit.
                unsafe {
                    if ev.pools.is_empty() || ev.used == POOL_EVENTS {
                        let mut d: ze_event_pool_desc_t = std::mem::zeroed();
                        d.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC;
                        d.flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE;
                        d.count = POOL_EVENTS;
                        let mut dev = o.dev;
                        let mut p = null_mut();
                        check("zeEventPoolCreate", (self.l.event_pool_create)(self.ctx, &d, 1, &mut dev, &mut p))?;
                        ev.pools.push(p);
                        ev.used = 0;
                    }
                    let mut d: ze_event_desc_t = std::mem::zeroed();
                    d.stype = ZE_STRUCTURE_TYPE_EVENT_DESC;
                    d.index = ev.used;
                    d.signal = ZE_EVENT_SCOPE_FLAG_HOST;
                    d.wait = ZE_EVENT_SCOPE_FLAG_HOST;
                    let mut h = null_mut();
                    check("zeEventCreate", (self.l.event_create)(*ev.pools.last().unwrap_or(&null_mut()), &d, &mut h))?;
                    ev.used += 1;
                    h
                }
            }
        };
        ev.outstanding.insert(h as usize);
        Ok(h)
    }

    /// Loads the device library module, registers the ring and the control
    /// segment, and installs the state.
    fn attach_library(&self, o: &Open, a: &Attach) -> Result<Library, ZeError> {
        let il = read_library(self.device_lib.as_deref()).map_err(ZeError::Library)?;
        // SAFETY: the state lives as long as the running PE (Attach's contract).
        let st: ishmemx_device_state_t = unsafe { *a.state };
        // The bytes device code addresses in the heap: the user's part and,
        // past it, the sync words where the state points at them.
        let reach = if st.sync_words != 0 {
            st.sync_words - st.heap_base + crate::sync_words::SYNC_RESERVE as u64
        } else {
            st.heap_size
        };
        let mut flags = "-ze-take-global-address -library-compilation".to_string();
        if reach > 4 << 30 {
            flags.push_str(" -ze-opt-greater-than-4GB-buffer-required");
        }
        let module = self.module(&il, &flags, "the device library ishmem_device.spv")?;
        let amo = self.kernel(module, "ishmemi_host_amo")?;
        let l = self.l;
        // SAFETY: driver calls on memory of ours; each is undone by detach.
        unsafe {
            let mut hd: ze_host_mem_alloc_desc_t = std::mem::zeroed();
            hd.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC;
            let mut amo_result = null_mut();
            check("zeMemAllocHost (host AMO result)", (l.mem_alloc_host)(self.ctx, &hd, 64, 64, &mut amo_result))?;
            // The state and its tables in GPU memory (as the CUDA device's
            // mirror): device code reads them on every operation.
            let n = st.n_pes as usize;
            let head = std::mem::size_of::<ishmemx_device_state_t>().next_multiple_of(64);
            let bases = head;
            let locals = bases + 8 * n;
            let teams = (locals + n).next_multiple_of(64);
            let teams_len = 2 * TEAM_SLOTS * 8;
            let quiet = (teams + teams_len).next_multiple_of(64);
            let total = quiet + 64;
            let mut dd: ze_device_mem_alloc_desc_t = std::mem::zeroed();
            dd.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC;
            let mut mirror = null_mut();
            check(
                "zeMemAllocDevice (device state)",
                (l.mem_alloc_device)(self.ctx, &dd, total, 64, o.dev, &mut mirror),
            )?;
            let m = mirror as u64;
            let mut copy = st;
            copy.peer_heap_base = m + bases as u64;
            copy.peer_is_local = m + locals as u64;
            copy.teams = m + teams as u64;
            copy.quiet_words = m + quiet as u64;
            copy.copy_cutover = 0;
            copy.copy_cutover_group = 0;
            let mb = mirror as *mut u8;
            let up = |dst: *mut u8, src: *const u8, len: usize| {
                // SAFETY: host source valid for len; dst inside the mirror.
                self.copy_list(dst, src, len)
            };
            up(mb, (&copy as *const ishmemx_device_state_t).cast(), std::mem::size_of_val(&copy))?;
            up(mb.add(bases), st.peer_heap_base as *const u8, 8 * n)?;
            up(mb.add(locals), st.peer_is_local as *const u8, n)?;
            up(mb.add(teams), st.teams as *const u8, teams_len)?;
            up(mb.add(quiet), [0u8; 64].as_ptr(), 64)?;
            // The library's global `ishmemi_state` (linked programs import
            // it) points at the mirror.
            let (mut size, mut gp) = (0usize, null_mut());
            check(
                "zeModuleGetGlobalPointer(ishmemi_state)",
                (l.module_get_global_pointer)(module, c"ishmemi_state".as_ptr(), &mut size, &mut gp),
            )?;
            if size != 8 {
                return Err(ZeError::WrongLibrary { size });
            }
            up(gp.cast(), (&m as *const u64).cast(), 8)?;
            Ok(Library {
                module,
                amo: Mutex::new(amo),
                amo_result: amo_result.cast(),
                kernels: Mutex::new(HashMap::new()),
                big_heap: reach > 4 << 30,
                mirror,
                teams_dst: mb.add(teams),
                teams_src: st.teams as *const u8,
            })
        }
    }

    fn with_lib<T>(&self, f: impl FnOnce(&Library) -> Result<T, ZeError>) -> Result<T, ZeError> {
        let g = self.lib.lock().unwrap_or_else(|e| e.into_inner());
        f(g.as_ref().ok_or(ZeError::NotAttached)?)
    }
}

impl DeviceMemory for ZeDevice {
    unsafe fn copy(&self, dst: *mut u8, src: *const u8, len: usize) -> Result<(), DeviceError> {
        // SAFETY: the caller's contract.
        Ok(unsafe { self.copy_list(dst, src, len) }?)
    }

    unsafe fn zero(&self, dst: *mut u8, len: usize) -> Result<(), DeviceError> {
        if len == 0 {
            return Ok(());
        }
        let l = self.l;
        let zero = 0u8;
        // SAFETY: the caller's contract; synchronous list as in copy_list.
        Ok(self.on_copy("zeCommandListAppendMemoryFill", |list| unsafe {
            (l.command_list_append_memory_fill)(
                list,
                dst.cast(),
                (&zero as *const u8).cast(),
                1,
                len,
                null_mut(),
                0,
                null_mut(),
            )
        })?)
    }

    unsafe fn atomic(&self, addr: *mut u8, amo: Amo) -> Result<u64, DeviceError> {
        let Amo { op, size, operand, cond } = amo;
        let o = self.gpu()?;
        let l = self.l;
        Ok(self.with_lib(|lib| {
            let k = lib.amo.lock().unwrap_or_else(|e| e.into_inner());
            let (a, sz, opc, out) = (addr as u64, size as u32, op as u32, lib.amo_result as u64);
            // SAFETY: the library's ishmemi_host_amo(ulong addr, uint size,
            // uint op, ulong operand, ulong cond, global ulong *out); the
            // compute list is synchronous, so the result is written when the
            // append returns.
            unsafe {
                self.set_args(
                    *k,
                    &[
                        (&a.to_ne_bytes(), 8),
                        (&sz.to_ne_bytes(), 4),
                        (&opc.to_ne_bytes(), 4),
                        (&operand.to_ne_bytes(), 8),
                        (&cond.to_ne_bytes(), 8),
                        (&out.to_ne_bytes(), 8),
                    ],
                )?;
                let list = o.compute.lock().unwrap_or_else(|e| e.into_inner());
                let g = ze_group_count_t { groupCountX: 1, groupCountY: 1, groupCountZ: 1 };
                check(
                    "zeCommandListAppendLaunchKernel (host AMO)",
                    (l.command_list_append_launch_kernel)(*list, *k, &g, null_mut(), 0, null_mut()),
                )?;
                Ok(std::ptr::read_volatile(lib.amo_result))
            }
        })?)
    }
}

impl Device for ZeDevice {
    fn kind(&self) -> DeviceKind {
        DeviceKind::Ze
    }

    fn heap_align(&self) -> usize {
        HEAP_ALIGN
    }

    fn heap_granularity(&self) -> usize {
        HEAP_ALIGN
    }

    fn create_heap(&self, size: usize, pe: usize, local: LocalRank) -> Result<HeapRegion, DeviceError> {
        let o = self.open(local)?;
        let what = format!("cannot create a {size}-byte symmetric heap on GPU {} ({}) for PE {pe}", o.index, o.name);
        let e = |error: ZeError| DeviceError::Ze { context: what.clone(), error };
        // SAFETY: driver calls with descriptors of ours and valid
        // out-pointers; the exported descriptor is duplicated into one we own.
        unsafe {
            let mut relaxed: ze_relaxed_allocation_limits_exp_desc_t = std::mem::zeroed();
            relaxed.stype = ZE_STRUCTURE_TYPE_RELAXED_ALLOCATION_LIMITS_EXP_DESC;
            relaxed.flags = ZE_RELAXED_ALLOCATION_LIMITS_EXP_FLAG_MAX_SIZE;
            let mut d: ze_device_mem_alloc_desc_t = std::mem::zeroed();
            d.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC;
            if size as u64 > o.max_alloc {
                d.pNext = (&mut relaxed as *mut ze_relaxed_allocation_limits_exp_desc_t).cast();
            }
            let mut p = null_mut();
            check("zeMemAllocDevice", (self.l.mem_alloc_device)(self.ctx, &d, size, HEAP_ALIGN, o.dev, &mut p))
                .map_err(|m| {
                    e(m.hint(format!(
                        " (the GPU's largest single allocation is {} bytes; a smaller ISHMEM_SYMMETRIC_SIZE may fit)",
                        o.max_alloc
                    )))
                })?;
            let region = HeapRegion::device(p.cast(), size, None, self.release(false));
            if let Some(f) = self.get_ipc_handles {
                let mut n = 0u32;
                if f(self.ctx, p, &mut n, null_mut()) == ZE_RESULT_SUCCESS && n > 1 {
                    return Err(e(ZeError::ImplicitScaling { tiles: n }));
                }
            }
            let mut h: ze_ipc_mem_handle_t = std::mem::zeroed();
            check("zeMemGetIpcHandle", (self.l.mem_get_ipc_handle)(self.ctx, p, &mut h)).map_err(e)?;
            let fd = self.fd_of(&h).map_err(e)?;
            let dup = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0);
            if dup < 0 {
                return Err(e(ZeError::DupHandle { fd, source: std::io::Error::last_os_error() }));
            }
            let region = region.with_handle(OwnedFd::from_raw_fd(dup));
            // The driver's own reference (spec 1.6); older drivers keep it
            // until the heap is freed.
            if let Some(put) = self.l.mem_put_ipc_handle {
                put(self.ctx, h);
            }
            // Zeroed, as CPU heaps are.
            self.zero(p.cast(), size)?;
            Ok(region)
        }
    }

    fn map_peer_heap(&self, handle: &OwnedFd, size: usize, pe: usize) -> Result<HeapRegion, DeviceError> {
        let o = self.gpu()?;
        let what = format!("cannot map the heap of PE {pe} for GPU {} ({})", o.index, o.name);
        let h = Self::handle_of(handle.as_raw_fd());
        let mut p = null_mut();
        // SAFETY: opening a handle a peer exported; the descriptor stays ours.
        let r = unsafe { (self.l.mem_open_ipc_handle)(self.ctx, o.dev, h, 0, &mut p) };
        check("zeMemOpenIpcHandle", r).map_err(|m| DeviceError::Ze {
            context: what,
            error: m.hint(" (can the GPUs map each other's memory?)"),
        })?;
        Ok(HeapRegion::device(p.cast(), size, None, self.release(true)))
    }

    fn memory(&self) -> Option<&dyn DeviceMemory> {
        Some(self)
    }

    fn attach(&self, a: Attach) -> Result<(), DeviceError> {
        let o = self.gpu()?;
        let lib = self.attach_library(o, &a).map_err(|error| DeviceError::Ze {
            context: format!("GPU {} ({}): cannot set up device code", o.index, o.name),
            error,
        })?;
        *self.lib.lock().unwrap_or_else(|e| e.into_inner()) = Some(lib);
        *self.server.lock().unwrap_or_else(|e| e.into_inner()) = Some(RingServer::start(a.handler, a.ring));
        Ok(())
    }

    fn needs_host_cores(&self) -> bool {
        true
    }

    fn teams_changed(&self) -> Result<(), DeviceError> {
        let (dst, src) = {
            let g = self.lib.lock().unwrap_or_else(|e| e.into_inner());
            match g.as_ref() {
                Some(l) => (l.teams_dst, l.teams_src),
                None => return Ok(()),
            }
        };
        // SAFETY: the team table and its mirror, both 2 * TEAM_SLOTS words.
        unsafe { self.copy(dst, src, 2 * TEAM_SLOTS * 8) }
    }

    fn detach(&self) {
        self.server.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(lib) = self.lib.lock().unwrap_or_else(|e| e.into_inner()).take() {
            // SAFETY: undoing attach; no device code runs any more.
            unsafe {
                (self.l.mem_free)(self.ctx, lib.mirror);
                (self.l.mem_free)(self.ctx, lib.amo_result.cast());
            }
        }
    }

    fn native(&self, what: Native) -> Result<*mut c_void, DeviceError> {
        let o = self.gpu()?;
        Ok(match what {
            Native::Context => self.ctx.cast(),
            Native::Device => o.dev.cast(),
            Native::Queue => o.queue.cast(),
        })
    }

    fn link_program(&self, il: &[u8]) -> Result<*mut c_void, DeviceError> {
        let (lib, big) = self.with_lib(|l| Ok((l.module, l.big_heap)))?;
        let flags = if big { "-ze-opt-greater-than-4GB-buffer-required" } else { "" };
        let m = self.module(il, flags, "the program")?;
        let mut pair = [m, lib];
        let mut log = null_mut();
        // SAFETY: two modules of ours; the log is read and destroyed.
        let r = unsafe { (self.l.module_dynamic_link)(2, pair.as_mut_ptr(), &mut log) };
        let text = self.take_log(log);
        if let Err(e) = check("zeModuleDynamicLink (the program with ishmem_device.spv)", r) {
            // SAFETY: our module, used by nothing else.
            unsafe { (self.l.module_destroy)(m) };
            return Err(e.hint(text).into());
        }
        Ok(m.cast())
    }

    fn enqueue(&self, op: QueueOp, queue: *mut c_void, deps: &[*mut c_void]) -> Result<*mut c_void, DeviceError> {
        let Some((kernel, args)) = op.spirv_kernel() else {
            return Err(ZeError::NoQueueKernel.into());
        };
        let name = kernel.name;
        // Each argument's bytes and size (pointers as 64-bit addresses).
        let args: Vec<(Vec<u8>, usize)> = args
            .into_iter()
            .map(|a| match a {
                QueueArg::Ptr(p) => ((p as u64).to_ne_bytes().to_vec(), 8),
                QueueArg::U64(v) => (v.to_ne_bytes().to_vec(), 8),
                QueueArg::I32(v) => (v.to_ne_bytes().to_vec(), 4),
            })
            .collect();
        let ev = self.event()?;
        let l = self.l;
        let r = self.with_lib(|lib| {
            let mut ks = lib.kernels.lock().unwrap_or_else(|e| e.into_inner());
            let k = match ks.get(name) {
                Some(k) => *k,
                None => {
                    let k = self.kernel(lib.module, name)?;
                    ks.insert(name, k);
                    k
                }
            };
            let args: Vec<(&[u8], usize)> = args.iter().map(|(v, n)| (v.as_slice(), *n)).collect();
            let mut deps: Vec<ze_event_handle_t> = deps.iter().map(|d| d.cast()).collect();
            // SAFETY: the library kernel's parameters; the program's list
            // and events (the core checked the list is not null). Arguments
            // are captured at the append, under the kernels' lock.
            unsafe {
                self.set_args(k, &args)?;
                let g = ze_group_count_t { groupCountX: 1, groupCountY: 1, groupCountZ: 1 };
                check(
                    &format!(
                        "zeCommandListAppendLaunchKernel({name}) on the program's list (an immediate command list of ishmemx_ze_context() and ishmemx_ze_device())"
                    ),
                    (l.command_list_append_launch_kernel)(
                        queue.cast(),
                        k,
                        &g,
                        ev,
                        deps.len() as u32,
                        if deps.is_empty() { null_mut() } else { deps.as_mut_ptr() },
                    ),
                )
            }
        });
        if let Err(e) = r {
            let mut evs = self.events.lock().unwrap_or_else(|e| e.into_inner());
            evs.outstanding.remove(&(ev as usize));
            evs.free.push(ev);
            return Err(e.into());
        }
        Ok(ev.cast())
    }

    fn wait(&self, events: &[*mut c_void]) -> Result<(), DeviceError> {
        for &e in events {
            let h: ze_event_handle_t = e.cast();
            if !self.events.lock().unwrap_or_else(|e| e.into_inner()).outstanding.remove(&(h as usize)) {
                return Err(ZeError::ForeignEvent { event: e as usize }.into());
            }
            // SAFETY: an event of our pools, signalled by an appended launch.
            unsafe {
                check("zeEventHostSynchronize", (self.l.event_host_synchronize)(h, u64::MAX))?;
                check("zeEventHostReset", (self.l.event_host_reset)(h))?;
            }
            self.events.lock().unwrap_or_else(|e| e.into_inner()).free.push(h);
        }
        Ok(())
    }
}
