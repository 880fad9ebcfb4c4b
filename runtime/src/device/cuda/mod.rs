//! The CUDA device: symmetric heaps in NVIDIA GPU memory, device code in
//! CUDA kernels linked with the CUDA device library (`libishmem_device.a`).
//!
//! * Heap: a CUDA virtual-memory allocation (`cuMemCreate`) exported as a
//!   POSIX file descriptor, which the bootstraps pass to the node's other
//!   PEs exactly like a memfd; each maps it (`cuMemImportFromShareableHandle`,
//!   `cuMemMap`) and gives its own GPU access (`cuMemSetAccess`), so kernels
//!   reach peers' heaps by loads and stores (NVLink, or the same GPU).
//! * GPU choice: `ISHMEM_CUDA_DEVICE`, else the PE's rank on its node modulo
//!   the visible GPUs (`CUDA_VISIBLE_DEVICES` is the driver's business). The
//!   primary context of that GPU is the one the program's CUDA runtime uses.
//! * Device code reaches the control segment and the reverse-offload ring in
//!   host memory registered with the driver (mapped, same address on both
//!   sides); the state it reads (and the peer and team tables) is copied to
//!   GPU memory, installed into the program by the device library's hook.
//! * Host operations on GPU memory ([`DeviceMemory`]) are copies on an
//!   internal non-blocking stream (so they never wait for the program's
//!   kernels on the legacy default stream), and AMOs are a one-thread kernel
//!   with system-scope atomics (`host_amo.ptx`): correct against device
//!   AMOs, at the cost of a kernel launch (several microseconds) each.
//!
//! Driver calls go through one function table (`driver.rs`), loaded when
//! the device is selected: without a driver or a GPU, init fails at once,
//! naming what was tried.

pub mod driver;
pub mod library;

use library::library;
pub use library::library_linked;

use super::ring_server::RingServer;
use super::{Attach, Device, DeviceError, DeviceMemory, LocalRank, Native, PassAtomic, QueueOp};
use crate::ctrl::TEAM_SLOTS;
use crate::device_state::ishmemx_device_state_t;
use crate::env::{Config, DeviceKind};
use crate::mem::{HeapRegion, Release, HEAP_BASE_ALIGN};
use crate::types::{Amo, AmoOp};
use driver::*;
use std::ffi::{c_int, c_void, CString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::{Mutex, OnceLock};

/// The PTX of the host-AMO kernel (generated from device-lib/cuda/host_amo.cu).
const HOST_AMO_PTX: &str = include_str!("host_amo.ptx");

/// The GPU this PE uses, once chosen.
struct Open {
    ordinal: usize,
    dev: CUdevice,
    ctx: CUcontext,
    name: String,
    /// The internal stream for host copies and AMO kernels; the lock
    /// serializes its users (application threads, the ring server).
    stream: Mutex<CUstream>,
    /// The host-AMO kernel and its result word (registered host memory),
    /// loaded at the first host AMO on GPU memory.
    amo: OnceLock<Result<AmoKernel, AmoSetup>>,
}

struct AmoKernel {
    func: CUfunction,
    /// `ishmemi_host_amo_batch`: several AMOs in one launch.
    batch: CUfunction,
    /// The registered page the kernels write their results to: the single
    /// kernel's word at its start, the batch kernel's at [`BATCH_OUT`], its
    /// requests at [`BATCH_REQS`].
    result: *mut u64,
}

/// AMOs the batch kernel performs in one launch (one thread each, one
/// block).
const AMO_BATCH: usize = 256;
/// Byte offsets in the host AMO page of the batch kernel's old values and
/// requests (32-byte records: address, size | opcode << 32 | wave << 48,
/// operand, compare value; `device-lib/cuda/host_amo.cu`), and the page's
/// size (rounded up to whole pages).
const BATCH_OUT: usize = 64;
const BATCH_REQS: usize = BATCH_OUT + 8 * AMO_BATCH;
const AMO_PAGE_BYTES: usize = BATCH_REQS + 32 * AMO_BATCH;

/// Why the host-AMO kernel could not be set up (kept, so every later host
/// AMO reports it).
enum AmoSetup {
    Cuda(CuError),
    Mmap(String),
}

impl From<CuError> for AmoSetup {
    fn from(e: CuError) -> AmoSetup {
        AmoSetup::Cuda(e)
    }
}

/// What attach set up, undone by detach.
struct Attached {
    /// Host ranges registered with the driver (ring, control segment).
    registered: Vec<*mut c_void>,
    /// The GPU copy of the device state and its tables.
    mirror: CUdeviceptr,
    /// Where the team table lives in the mirror, and its host original.
    teams_dst: CUdeviceptr,
    teams_src: *const u8,
}

// SAFETY: driver handles and addresses are plain values usable from any
// thread with the context current; the driver API is thread-safe.
unsafe impl Send for Open {}
// SAFETY: as above.
unsafe impl Sync for Open {}
// SAFETY: as above.
unsafe impl Send for Attached {}

/// NVIDIA GPUs through the CUDA driver.
pub struct CudaDevice {
    drv: &'static Driver,
    count: usize,
    /// `ISHMEM_CUDA_DEVICE`.
    wanted: Option<u64>,
    /// `ISHMEM_CUDA_COPY_CUTOVER` and `_GROUP`: device puts and gets to
    /// the node from this size on go to a copy engine.
    copy_cutover: (u64, u64),
    granularity: usize,
    open: OnceLock<Open>,
    attached: Mutex<Option<Attached>>,
    server: Mutex<Option<RingServer>>,
    /// The idle probe (see `idle`).
    probe: std::sync::Arc<Mutex<Probe>>,
}

/// A `cuCtxSynchronize` on a helper thread: it returns once every kernel
/// and copy of the context has finished.
#[derive(Default)]
struct Probe {
    /// A helper thread is still synchronizing.
    in_flight: bool,
    /// Whether the last probe returned, and when it was started.
    finished: bool,
    started_ms: u64,
}

/// CUDA loads a kernel at its first launch by default ("lazy loading",
/// since CUDA 12.2). That first launch holds the context's lock until the
/// GPU's running kernels end, and every other CUDA call of the process
/// waits for the lock: a proxy thread's copy into this GPU's memory (a
/// flag another PE's sync sends, a served put) then waits behind a kernel
/// that waits for that very copy, and the job hangs (a stream collective's
/// team sync on 2 GPUs with every peer remote, whenever the program
/// launched one of its kernels for the first time meanwhile). Eager
/// loading, where every kernel is loaded at the start, has no such wait.
/// So unless the user chose, `new` asks for it before the driver starts
/// (`env::cuda_eager_loading_unless_set`); that has no effect when the
/// program started CUDA already, and then this warns.
fn warn_if_lazy(drv: &Driver) {
    let mut mode: std::ffi::c_uint = 0;
    // SAFETY: a query with a valid out-pointer.
    if unsafe { (drv.module_get_loading_mode)(&mut mode) } != CUDA_SUCCESS || mode != CU_MODULE_LAZY_LOADING {
        return;
    }
    let why = match crate::env::cuda_module_loading() {
        Some(v) if v != "EAGER" => format!("CUDA_MODULE_LOADING={v}"),
        _ => "the program started CUDA before ishmem_init".to_string(),
    };
    crate::error::warn(format_args!(
        "CUDA loads kernels lazily ({why}): a kernel's first launch waits, holding the driver's lock, until the \
         GPU's running kernels end, so a kernel that waits for another PE or for this PE's proxy can hang the \
         job; set CUDA_MODULE_LOADING=EAGER in the environment of every PE"
    ));
}

/// The library's own threads (named `ishmem-*`: the ring server, the
/// progress thread, the watchdog and its probe) call CUDA while the program
/// may be capturing one of its streams into a graph. In CUDA's default
/// capture mode (global) a capture anywhere in the process forbids every
/// other thread's potentially unsafe calls (a stream query or synchronize,
/// an allocation): such a call fails and invalidates the program's capture.
/// These threads work on the library's own stream, so each one switches
/// itself to relaxed mode at its first CUDA use; a program's own threads
/// keep the mode they chose. (The idle probe's `cuCtxSynchronize` waits on
/// every stream, a capturing one too, and invalidates a capture in any
/// mode; it runs only while a thread of this PE has waited in the library
/// for a second: docs/device.md says so.) The exchange fails only where
/// the driver has no capture, so its result is not needed.
fn relax_library_thread(drv: &Driver) {
    thread_local!(static DONE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) });
    if DONE.with(|d| d.replace(true)) {
        return;
    }
    if std::thread::current().name().is_some_and(|n| n.starts_with("ishmem-")) {
        let mut mode = CU_STREAM_CAPTURE_MODE_RELAXED;
        // SAFETY: sets this thread's capture mode; the old one comes back in `mode`.
        unsafe { (drv.thread_exchange_stream_capture_mode)(&mut mode) };
    }
}

fn unavailable(msg: String) -> DeviceError {
    DeviceError::Unavailable(msg)
}

impl CudaDevice {
    /// Loads the driver and checks there is a GPU (fail fast).
    pub fn new(config: &Config) -> Result<CudaDevice, DeviceError> {
        let drv: &'static Driver = Box::leak(Box::new(Driver::load()?));
        let e = |m: String| unavailable(format!("ISHMEM_DEVICE=cuda: {m}"));
        crate::env::cuda_eager_loading_unless_set();
        // SAFETY: plain driver calls with valid out-pointers.
        unsafe {
            drv.check("cuInit", (drv.init)(0))
                .map_err(|m| e(format!("the CUDA driver {} did not start: {m}", drv.path)))?;
            warn_if_lazy(drv);
            let mut n = 0;
            let r = (drv.device_get_count)(&mut n);
            if r == CUDA_ERROR_NO_DEVICE || (r == CUDA_SUCCESS && n == 0) {
                let vis = crate::env::cuda_visible_devices()
                    .map_or(String::new(), |v| format!(" (CUDA_VISIBLE_DEVICES={v})"));
                return Err(e(format!("the CUDA driver {} sees no GPU{vis}", drv.path)));
            }
            drv.check("cuDeviceGetCount", r).map_err(|m| e(m.to_string()))?;
            let mut dev0 = 0;
            drv.check("cuDeviceGet", (drv.device_get)(&mut dev0, 0)).map_err(|m| e(m.to_string()))?;
            let prop = alloc_prop(dev0);
            let mut g = 0usize;
            drv.check(
                "cuMemGetAllocationGranularity",
                (drv.mem_get_allocation_granularity)(&mut g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
            )
            .map_err(|m| e(m.to_string()))?;
            Ok(CudaDevice {
                drv,
                count: n as usize,
                wanted: config.cuda_device,
                copy_cutover: (config.cuda_copy_cutover, config.cuda_copy_cutover_group),
                granularity: g.max(crate::mem::page_size()),
                open: OnceLock::new(),
                attached: Mutex::new(None),
                server: Mutex::new(None),
                probe: Default::default(),
            })
        }
    }

    fn err(&self, r: Result<(), CuError>) -> Result<(), DeviceError> {
        r.map_err(DeviceError::from)
    }

    /// The opened GPU (after `create_heap`).
    fn gpu(&self) -> Result<&Open, DeviceError> {
        let o = self.open.get().ok_or_else(|| DeviceError::Runtime("the CUDA device is not open yet".into()))?;
        // SAFETY: the primary context is retained for the life of the process.
        self.err(self.drv.check("cuCtxSetCurrent", unsafe { (self.drv.ctx_set_current)(o.ctx) }))?;
        relax_library_thread(self.drv);
        Ok(o)
    }

    /// Chooses and opens this PE's GPU (once).
    fn open(&self, local: LocalRank) -> Result<&Open, DeviceError> {
        if let Some(o) = self.open.get() {
            return Ok(o);
        }
        let ordinal = match self.wanted {
            Some(w) if w as usize >= self.count => {
                return Err(unavailable(format!(
                    "ISHMEM_CUDA_DEVICE={w}, but the CUDA driver sees {} GPU(s) (0..{})",
                    self.count,
                    self.count - 1
                )))
            }
            Some(w) => w as usize,
            None => local.rank % self.count,
        };
        let d = self.drv;
        let e = |r: Result<(), CuError>| r.map_err(|m| unavailable(format!("GPU {ordinal}: {m}")));
        // SAFETY: driver calls with valid out-pointers; the primary context
        // is retained (never released: programs may use it until exit).
        unsafe {
            let mut dev = 0;
            e(d.check("cuDeviceGet", (d.device_get)(&mut dev, ordinal as c_int)))?;
            let attr = |a: c_int| -> Result<c_int, DeviceError> {
                let mut v = 0;
                e(d.check("cuDeviceGetAttribute", (d.device_get_attribute)(&mut v, a, dev)))?;
                Ok(v)
            };
            let mut name = [0 as std::ffi::c_char; 256];
            e(d.check("cuDeviceGetName", (d.device_get_name)(name.as_mut_ptr(), 256, dev)))?;
            let name = std::ffi::CStr::from_ptr(name.as_ptr()).to_string_lossy().into_owned();
            let need = [
                (CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, "unified addressing"),
                (CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, "virtual memory management"),
                (
                    CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
                    "export of memory as file descriptors",
                ),
                (
                    CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM,
                    "registered host memory at the host's addresses",
                ),
            ];
            for (a, what) in need {
                if attr(a)? == 0 {
                    return Err(unavailable(format!("GPU {ordinal} ({name}) does not support {what}")));
                }
            }
            // PEs of this node on this GPU (round-robin; unknown, taken as
            // 1, when ISHMEM_CUDA_DEVICE chooses).
            let sharing = match self.wanted {
                Some(_) => 1,
                None => local.size / self.count + usize::from(ordinal < local.size % self.count),
            };
            let mode = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_MODE)?;
            if mode == CU_COMPUTEMODE_PROHIBITED {
                return Err(unavailable(format!(
                    "GPU {ordinal} ({name}) is in compute mode Prohibited: no process may use it (nvidia-smi -q shows the mode; an administrator sets it with nvidia-smi -c)"
                )));
            }
            let mps = std::path::Path::new(&crate::env::cuda_mps_pipe_directory()).join("control").exists();
            let mut ctx = std::ptr::null_mut();
            let r = (d.primary_ctx_retain)(&mut ctx, dev);
            if r != CUDA_SUCCESS && mode == CU_COMPUTEMODE_EXCLUSIVE_PROCESS {
                return Err(unavailable(format!(
                    "GPU {ordinal} ({name}) is in exclusive-process mode and another process holds it ({}): {sharing} PE(s) of this node use this GPU; run one PE per GPU, start the MPS daemon (nvidia-cuda-mps-control -d), which lets several processes share an exclusive GPU, or have the mode set to Default (nvidia-smi -c DEFAULT)",
                    d.check("cuDevicePrimaryCtxRetain", r).unwrap_err()
                )));
            }
            d.check("cuDevicePrimaryCtxRetain", r).map_err(|m| {
                let hint = if sharing > 1 {
                    format!(" ({sharing} PEs of this node share this GPU: too many for it? run fewer PEs per GPU)")
                } else {
                    String::new()
                };
                unavailable(format!("GPU {ordinal}: {m}{hint}"))
            })?;
            if sharing > 1 && !mps && local.rank == ordinal {
                crate::error::warn(format_args!(
                    "{sharing} PEs share GPU {ordinal} ({name}) without MPS (no daemon's control pipe in {}): their kernels take turns on the GPU, so device operations between them are slow and a kernel that waits for another PE's kernel on this GPU waits for time slices; start MPS before the job (nvidia-cuda-mps-control -d), or run one PE per GPU",
                    crate::env::cuda_mps_pipe_directory()
                ));
            }
            e(d.check("cuCtxSetCurrent", (d.ctx_set_current)(ctx)))?;
            let mut stream = std::ptr::null_mut();
            e(d.check("cuStreamCreate", (d.stream_create)(&mut stream, CU_STREAM_NON_BLOCKING)))?;
            let _ = self.open.set(Open { ordinal, dev, ctx, name, stream: Mutex::new(stream), amo: OnceLock::new() });
        }
        self.gpu()
    }

    /// Reserves address space aligned like CPU heaps, maps allocation `h`
    /// of `size` bytes there and gives this PE's GPU read-write access.
    /// The handle is released (the mapping keeps the memory).
    fn map(&self, o: &Open, h: CUmemGenericAllocationHandle, size: usize, what: &str) -> Result<*mut u8, DeviceError> {
        let d = self.drv;
        // SAFETY: driver calls on a handle we hold and a range we reserve.
        unsafe {
            let mut va: CUdeviceptr = 0;
            let r = (d.mem_address_reserve)(&mut va, size, HEAP_BASE_ALIGN, 0, 0);
            if let Err(error) = d.check("cuMemAddressReserve", r) {
                (d.mem_release)(h);
                return Err(DeviceError::Cuda { context: what.to_string(), error });
            }
            let r = (d.mem_map)(va, size, 0, h, 0);
            (d.mem_release)(h);
            if let Err(error) = d.check("cuMemMap", r) {
                (d.mem_address_free)(va, size);
                return Err(DeviceError::Cuda { context: what.to_string(), error });
            }
            let access = CUmemAccessDesc {
                location: CUmemLocation { type_: CU_MEM_LOCATION_TYPE_DEVICE, id: o.dev },
                flags: CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
            };
            let r = (d.mem_set_access)(va, size, &access, 1);
            if let Err(error) = d.check("cuMemSetAccess", r) {
                (d.mem_unmap)(va, size);
                (d.mem_address_free)(va, size);
                let context = format!(
                    "{what}: GPU {} ({}) cannot access this memory (can the GPUs map each other's memory?)",
                    o.ordinal, o.name
                );
                return Err(DeviceError::Cuda { context, error });
            }
            Ok(va as *mut u8)
        }
    }

    /// How a mapping is given back when its region drops.
    fn release(&self) -> Release {
        let d = self.drv;
        let ctx = self.open.get().map_or(std::ptr::null_mut(), |o| o.ctx) as usize;
        Release::Device(Box::new(move |base, size| {
            // SAFETY: the range was reserved and mapped by `map`; nothing
            // uses it after its region is dropped.
            unsafe {
                (d.ctx_set_current)(ctx as CUcontext);
                (d.mem_unmap)(base as CUdeviceptr, size);
                (d.mem_address_free)(base as CUdeviceptr, size);
            }
        }))
    }

    /// Runs `f` with the internal stream, then waits for it.
    fn on_stream(&self, what: &str, f: impl FnOnce(CUstream) -> CUresult) -> Result<(), DeviceError> {
        let o = self.gpu()?;
        let s = o.stream.lock().unwrap_or_else(|e| e.into_inner());
        self.err(self.drv.check(what, f(*s)))?;
        // SAFETY: our own stream.
        self.err(self.drv.check("cuStreamSynchronize", unsafe { (self.drv.stream_synchronize)(*s) }))
    }

    fn amo_kernel<'a>(&self, o: &'a Open) -> Result<&'a AmoKernel, DeviceError> {
        let d = self.drv;
        o.amo
            .get_or_init(|| {
                // SAFETY: loading our PTX into the current (primary) context;
                // the result word is one registered page of our own.
                unsafe {
                    let ptx = CString::new(HOST_AMO_PTX).expect("the host AMO PTX has no NUL byte");
                    let mut m = std::ptr::null_mut();
                    d.check("cuModuleLoadData (host AMO kernel)", (d.module_load_data)(&mut m, ptx.as_ptr().cast()))?;
                    let mut func = std::ptr::null_mut();
                    d.check(
                        "cuModuleGetFunction",
                        (d.module_get_function)(&mut func, m, c"ishmemi_host_amo".as_ptr()),
                    )?;
                    let mut batch = std::ptr::null_mut();
                    d.check(
                        "cuModuleGetFunction",
                        (d.module_get_function)(&mut batch, m, c"ishmemi_host_amo_batch".as_ptr()),
                    )?;
                    let bytes = AMO_PAGE_BYTES.next_multiple_of(crate::mem::page_size());
                    let p = libc::mmap(
                        std::ptr::null_mut(),
                        bytes,
                        libc::PROT_READ | libc::PROT_WRITE,
                        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                        -1,
                        0,
                    );
                    if p == libc::MAP_FAILED {
                        return Err(AmoSetup::Mmap(std::io::Error::last_os_error().to_string()));
                    }
                    d.check(
                        "cuMemHostRegister (host AMO result)",
                        (d.mem_host_register)(p, bytes, CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP),
                    )?;
                    Ok(AmoKernel { func, batch, result: p as *mut u64 })
                }
            })
            .as_ref()
            .map_err(|e| match e {
                AmoSetup::Cuda(e) => DeviceError::from(e.clone()),
                AmoSetup::Mmap(m) => DeviceError::Runtime(format!("mapping the host AMO result page: {m}")),
            })
    }

    /// Registers host memory for device access at the same address.
    fn register(&self, base: *mut u8, size: usize, what: &str) -> Result<*mut c_void, DeviceError> {
        let d = self.drv;
        // SAFETY: the range is mapped host memory the caller keeps until
        // detach unregisters it.
        unsafe {
            self.err(d.check(
                &format!("cuMemHostRegister ({what})"),
                (d.mem_host_register)(base.cast(), size, CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP),
            ))?;
            let mut dp: CUdeviceptr = 0;
            self.err(d.check("cuMemHostGetDevicePointer", (d.mem_host_get_device_pointer)(&mut dp, base.cast(), 0)))?;
            if dp != base as u64 {
                return Err(DeviceError::Runtime(format!(
                    "the {what} is mapped for the GPU at {dp:#x}, not at its host address {base:p}"
                )));
            }
        }
        Ok(base.cast())
    }

    /// Copies `len` host bytes to GPU address `dst`.
    fn upload(&self, dst: CUdeviceptr, src: *const u8, len: usize) -> Result<(), DeviceError> {
        let d = self.drv;
        // SAFETY: src is valid host memory for len bytes; dst our allocation.
        self.on_stream("cuMemcpyAsync (device state)", |s| unsafe { (d.memcpy_async)(dst, src as u64, len, s) })
    }
}

/// The allocation properties of a heap on GPU `dev`.
fn alloc_prop(dev: CUdevice) -> CUmemAllocationProp {
    CUmemAllocationProp {
        type_: CU_MEM_ALLOCATION_TYPE_PINNED,
        requested_handle_types: CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
        location: CUmemLocation { type_: CU_MEM_LOCATION_TYPE_DEVICE, id: dev },
        win32_handle_meta_data: std::ptr::null_mut(),
        alloc_flags: CUmemAllocFlags::default(),
    }
}

impl DeviceMemory for CudaDevice {
    unsafe fn copy(&self, dst: *mut u8, src: *const u8, len: usize) -> Result<(), DeviceError> {
        if len == 0 {
            return Ok(());
        }
        let d = self.drv;
        // SAFETY: the caller's contract (both ranges valid; unified
        // addressing makes every pointer of the process a CUdeviceptr).
        self.on_stream("cuMemcpyAsync", |s| unsafe { (d.memcpy_async)(dst as u64, src as u64, len, s) })
    }

    unsafe fn copy_start(&self, dst: *mut u8, src: *const u8, len: usize) -> Result<(), DeviceError> {
        if len == 0 {
            return Ok(());
        }
        let (o, d) = (self.gpu()?, self.drv);
        let s = o.stream.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: as in copy; the caller keeps both ranges until
        // copies_done (the internal stream runs them in order).
        self.err(d.check("cuMemcpyAsync", unsafe { (d.memcpy_async)(dst as u64, src as u64, len, *s) }))
    }

    fn copies_done(&self, wait: bool) -> Result<bool, DeviceError> {
        let (o, d) = (self.gpu()?, self.drv);
        let s = o.stream.lock().unwrap_or_else(|e| e.into_inner());
        if wait {
            // SAFETY: our stream.
            self.err(d.check("cuStreamSynchronize", unsafe { (d.stream_synchronize)(*s) }))?;
            return Ok(true);
        }
        // SAFETY: our stream.
        match unsafe { (d.stream_query)(*s) } {
            CUDA_ERROR_NOT_READY => Ok(false),
            r => self.err(d.check("cuStreamQuery", r)).map(|()| true),
        }
    }

    unsafe fn zero(&self, dst: *mut u8, len: usize) -> Result<(), DeviceError> {
        if len == 0 {
            return Ok(());
        }
        let d = self.drv;
        // SAFETY: the caller's contract.
        self.on_stream("cuMemsetD8Async", |s| unsafe { (d.memset_d8_async)(dst as u64, 0, len, s) })
    }

    unsafe fn atomic(&self, addr: *mut u8, amo: Amo) -> Result<u64, DeviceError> {
        let Amo { op, size, operand, cond } = amo;
        let o = self.gpu()?;
        let k = self.amo_kernel(o)?;
        let d = self.drv;
        let (mut a, mut sz, mut opc, mut v, mut c, mut out) =
            (addr as u64, size as u32, op as u32, operand, cond, k.result as u64);
        let mut params: [*mut c_void; 6] = [
            (&mut a as *mut u64).cast(),
            (&mut sz as *mut u32).cast(),
            (&mut opc as *mut u32).cast(),
            (&mut v as *mut u64).cast(),
            (&mut c as *mut u64).cast(),
            (&mut out as *mut u64).cast(),
        ];
        let s = o.stream.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: our kernel with its six parameters; the stream is ours
        // and held; the result word is read after the kernel completed.
        unsafe {
            self.err(d.check(
                "cuLaunchKernel (host AMO)",
                (d.launch_kernel)(k.func, 1, 1, 1, 1, 1, 1, 0, *s, params.as_mut_ptr(), std::ptr::null_mut()),
            ))?;
            self.err(d.check("cuStreamSynchronize", (d.stream_synchronize)(*s)))?;
            Ok(std::ptr::read_volatile(k.result))
        }
    }

    /// Up to [`AMO_BATCH`] AMOs in one launch of the batch kernel, one
    /// thread each (relaxed; in the waves of [`super::pass_waves`], which
    /// the kernel performs one after another).
    unsafe fn atomics(&self, ops: &[PassAtomic], out: &mut [u64]) -> Result<(), DeviceError> {
        if let [op] = ops {
            // SAFETY: the caller's contract.
            out[0] = unsafe { self.atomic(op.addr, op.amo) }?;
            return Ok(());
        }
        let o = self.gpu()?;
        let k = self.amo_kernel(o)?;
        let d = self.drv;
        let page = k.result as *mut u8;
        let s = o.stream.lock().unwrap_or_else(|e| e.into_inner());
        for (ops, out) in ops.chunks(AMO_BATCH).zip(out.chunks_mut(AMO_BATCH)) {
            // SAFETY: the page is ours, registered, and holds AMO_BATCH
            // records and results (AMO_PAGE_BYTES); the stream lock keeps
            // other users of the page out until the results are read.
            unsafe {
                let reqs = page.add(BATCH_REQS) as *mut u64;
                let waves = super::pass_waves(ops);
                for (i, (op, &wave)) in ops.iter().zip(&waves).enumerate() {
                    let r = reqs.add(4 * i);
                    let Amo { op: code, size, operand, cond } = op.amo;
                    r.write_volatile(op.addr as u64);
                    r.add(1).write_volatile(size as u64 | ((code as u64) << 32) | ((wave as u64) << 48));
                    r.add(2).write_volatile(operand);
                    r.add(3).write_volatile(cond);
                }
                let last_wave = waves.iter().copied().max().unwrap_or(0);
                let (mut rq, mut n, mut waves, mut res) =
                    (reqs as u64, ops.len() as u32, last_wave, page.add(BATCH_OUT) as u64);
                let mut params: [*mut c_void; 4] = [
                    (&mut rq as *mut u64).cast(),
                    (&mut n as *mut u32).cast(),
                    (&mut waves as *mut u32).cast(),
                    (&mut res as *mut u64).cast(),
                ];
                self.err(d.check(
                    "cuLaunchKernel (host AMO batch)",
                    (d.launch_kernel)(k.batch, 1, 1, 1, n, 1, 1, 0, *s, params.as_mut_ptr(), std::ptr::null_mut()),
                ))?;
                self.err(d.check("cuStreamSynchronize", (d.stream_synchronize)(*s)))?;
                let res = page.add(BATCH_OUT) as *const u64;
                for (i, o) in out.iter_mut().enumerate() {
                    *o = res.add(i).read_volatile();
                }
            }
        }
        Ok(())
    }

    /// Host memory the driver does not know (malloc, the stack) or knows
    /// as host memory (registered, pinned); not GPU or managed memory.
    fn host_accessible(&self, p: *const u8, _len: usize) -> bool {
        if self.gpu().is_err() {
            return false;
        }
        let mut kind: std::ffi::c_uint = 0;
        let d = self.drv;
        // SAFETY: a query about an address; kind is a valid out value.
        let r = unsafe {
            (d.pointer_get_attribute)(
                (&mut kind as *mut std::ffi::c_uint).cast(),
                CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                p as u64,
            )
        };
        // An address the driver does not know is plain host memory.
        r != CUDA_SUCCESS || kind == CU_MEMORYTYPE_HOST
    }

    /// Page-aligned host memory registered with the driver (pinned), so
    /// copies to and from the GPU are DMA transfers.
    fn staging(&self, len: usize) -> Result<*mut u8, DeviceError> {
        self.gpu()?;
        let len = len.next_multiple_of(crate::mem::page_size());
        // SAFETY: a fresh private mapping, registered below and kept for the
        // life of the process.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(DeviceError::Runtime(format!(
                "cannot map {len} bytes for staging: {}",
                std::io::Error::last_os_error()
            )));
        }
        let d = self.drv;
        // SAFETY: the mapping above, len bytes.
        self.err(d.check("cuMemHostRegister (staging buffer)", unsafe {
            (d.mem_host_register)(p, len, CU_MEMHOSTREGISTER_PORTABLE)
        }))?;
        Ok(p.cast())
    }
}

impl Device for CudaDevice {
    fn kind(&self) -> DeviceKind {
        DeviceKind::Cuda
    }

    fn heap_align(&self) -> usize {
        HEAP_BASE_ALIGN
    }

    fn heap_granularity(&self) -> usize {
        self.granularity
    }

    /// Device syncs and collectives signal through words in GPU memory.
    fn needs_host_cores(&self) -> bool {
        true
    }

    fn heap_reserve(&self) -> usize {
        crate::sync_words::SYNC_RESERVE
    }

    fn create_heap(&self, size: usize, pe: usize, local: LocalRank) -> Result<HeapRegion, DeviceError> {
        let o = self.open(local)?;
        let d = self.drv;
        let what = format!("cannot create a {size}-byte symmetric heap on GPU {} ({}) for PE {pe}", o.ordinal, o.name);
        let e = |r: Result<(), CuError>| r.map_err(|error| DeviceError::Cuda { context: what.clone(), error });
        // SAFETY: driver calls with valid out-pointers; the exported
        // descriptor is ours to own.
        unsafe {
            let prop = alloc_prop(o.dev);
            let (mut free, mut total) = (0usize, 0usize);
            let known = (d.mem_get_info)(&mut free, &mut total) == CUDA_SUCCESS;
            let fit = |m: String| {
                if !known {
                    return m;
                }
                format!(
                    "{m}: the GPU has {free} of its {total} bytes free, and every PE on it needs its heap there (ISHMEM_SYMMETRIC_SIZE); lower ISHMEM_SYMMETRIC_SIZE, or run fewer PEs per GPU"
                )
            };
            if known && size > free {
                return Err(DeviceError::Runtime(fit(format!("{what}: it does not fit"))));
            }
            let mut h: CUmemGenericAllocationHandle = 0;
            let r = (d.mem_create)(&mut h, size, &prop, 0);
            if r == CUDA_ERROR_OUT_OF_MEMORY {
                return Err(DeviceError::Runtime(fit(format!("{what}: {}", d.check("cuMemCreate", r).unwrap_err()))));
            }
            e(d.check("cuMemCreate", r))?;
            let mut fd: c_int = -1;
            let r = (d.mem_export_to_shareable_handle)(
                (&mut fd as *mut c_int).cast(),
                h,
                CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                0,
            );
            if let Err(error) = d.check("cuMemExportToShareableHandle", r) {
                (d.mem_release)(h);
                return Err(DeviceError::Cuda { context: what, error });
            }
            let fd = OwnedFd::from_raw_fd(fd);
            let base = self.map(o, h, size, &what)?;
            let region = HeapRegion::device(base, size, Some(fd), self.release());
            // Zeroed, as CPU heaps are.
            self.zero(base, size)?;
            Ok(region)
        }
    }

    fn map_peer_heap(&self, handle: &OwnedFd, size: usize, pe: usize) -> Result<HeapRegion, DeviceError> {
        let o = self.gpu()?;
        let d = self.drv;
        let what = format!("cannot map the heap of PE {pe} for GPU {} ({})", o.ordinal, o.name);
        let mut h: CUmemGenericAllocationHandle = 0;
        // SAFETY: importing a descriptor the peer exported; the descriptor
        // stays ours (the driver does not take it).
        let r = unsafe {
            (d.mem_import_from_shareable_handle)(
                &mut h,
                handle.as_raw_fd() as usize as *mut c_void,
                CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
            )
        };
        d.check("cuMemImportFromShareableHandle", r)
            .map_err(|error| DeviceError::Cuda { context: what.clone(), error })?;
        let base = self.map(o, h, size, &what)?;
        Ok(HeapRegion::device(base, size, None, self.release()))
    }

    fn memory(&self) -> Option<&dyn DeviceMemory> {
        Some(self)
    }

    fn attach(&self, a: Attach) -> Result<(), DeviceError> {
        let o = self.gpu()?;
        let d = self.drv;
        // The host-AMO kernel is loaded now, before any program kernel runs:
        // loading a module can wait for the GPU's running kernels, and a
        // kernel waiting on the ring for a host AMO would never finish.
        self.amo_kernel(o)?;
        // SAFETY: the state is live (the caller's contract).
        let heap = unsafe { (*a.state).heap_base } as *mut u8;
        // Getting the function does not load it under CUDA's lazy loading
        // (the default): its first launch does. A GPU heap served to other
        // nodes meets its first host AMO while kernels run, so launch it
        // once now (a fetch of this PE's first heap word).
        // SAFETY: an aligned word of this PE's heap.
        unsafe { self.atomic(heap, Amo::new(AmoOp::Fetch, 8, 0)) }?;
        let mut registered = Vec::new();
        let ring_size = std::mem::size_of::<crate::ring::Ring>().next_multiple_of(crate::mem::page_size());
        registered.push(self.register(a.ring as *const _ as *mut u8, ring_size, "reverse-offload ring")?);
        let ctrl_size = a.ctrl.1.next_multiple_of(crate::mem::page_size());
        registered.push(self.register(a.ctrl.0, ctrl_size, "control segment")?);
        // The state and its tables, copied to GPU memory: device code reads
        // them on every operation.
        // SAFETY: the state and the tables it points to live as long as
        // the running PE (the caller's contract of Attach).
        let st: ishmemx_device_state_t = unsafe { *a.state };
        let n = st.n_pes as usize;
        let head = std::mem::size_of::<ishmemx_device_state_t>().next_multiple_of(64);
        let bases = head;
        let locals = bases + 8 * n;
        let teams = (locals + n).next_multiple_of(64);
        let teams_len = 2 * TEAM_SLOTS * 8;
        // The quiet words, in GPU memory: kernels count their ring messages
        // there, so a quiet with nothing outstanding never reads host memory.
        let quiet = (teams + teams_len).next_multiple_of(64);
        let total = quiet + 64;
        let mut mirror: CUdeviceptr = 0;
        // SAFETY: an allocation of ours.
        self.err(d.check("cuMemAlloc (device state)", unsafe { (d.mem_alloc)(&mut mirror, total) }))?;
        let mut copy = st;
        copy.peer_heap_base = mirror + bases as u64;
        copy.peer_is_local = mirror + locals as u64;
        copy.teams = mirror + teams as u64;
        copy.quiet_words = mirror + quiet as u64;
        copy.copy_cutover = self.copy_cutover.0;
        copy.copy_cutover_group = self.copy_cutover.1;
        self.upload(mirror, (&copy as *const ishmemx_device_state_t).cast(), std::mem::size_of_val(&copy))?;
        self.upload(mirror + bases as u64, st.peer_heap_base as *const u8, 8 * n)?;
        self.upload(mirror + locals as u64, st.peer_is_local as *const u8, n)?;
        self.upload(mirror + teams as u64, st.teams as *const u8, teams_len)?;
        self.upload(mirror + quiet as u64, [0u8; 64].as_ptr(), 64)?;
        if let Some(lib) = library() {
            // SAFETY: the library's hook, with the GPU ordinal and the GPU
            // address of the state.
            let rc = unsafe { (lib.install)(o.ordinal as c_int, mirror as *mut c_void) };
            if rc != 0 {
                return Err(DeviceError::Runtime(format!(
                    "the CUDA device library could not install the device state on GPU {} (CUDA runtime error {rc})",
                    o.ordinal
                )));
            }
        }
        *self.attached.lock().unwrap_or_else(|e| e.into_inner()) =
            Some(Attached { registered, mirror, teams_dst: mirror + teams as u64, teams_src: st.teams as *const u8 });
        *self.server.lock().unwrap_or_else(|e| e.into_inner()) = Some(RingServer::start(a.handler, a.ring));
        Ok(())
    }

    fn teams_changed(&self) -> Result<(), DeviceError> {
        let g = self.attached.lock().unwrap_or_else(|e| e.into_inner());
        match g.as_ref() {
            Some(a) => self.upload(a.teams_dst, a.teams_src, 2 * TEAM_SLOTS * 8),
            None => Ok(()),
        }
    }

    fn detach(&self) {
        self.server.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(a) = self.attached.lock().unwrap_or_else(|e| e.into_inner()).take() {
            if self.gpu().is_ok() {
                // SAFETY: undoing attach's registrations and allocation; no
                // device code runs any more (the program finalizes).
                unsafe {
                    for p in a.registered {
                        (self.drv.mem_host_unregister)(p);
                    }
                    (self.drv.mem_free)(a.mirror);
                }
            }
        }
    }

    fn health(&self) -> Result<(), DeviceError> {
        // Not open, or detached: nothing to watch.
        if self.attached.lock().unwrap_or_else(|e| e.into_inner()).is_none() {
            return Ok(());
        }
        let o = self.gpu()?;
        // A fault poisons the whole context: every call then returns its
        // error, a query of our idle internal stream too (skipped while
        // another thread uses the stream; the next tick asks again).
        let Ok(stream) = o.stream.try_lock() else { return Ok(()) };
        // SAFETY: our stream, alive while the device is open.
        match unsafe { (self.drv.stream_query)(*stream) } {
            CUDA_SUCCESS | CUDA_ERROR_NOT_READY => Ok(()),
            // Refused because of a capture the program has open: not a
            // failed context (and not sticky: the next tick asks again).
            r if CUDA_ERROR_STREAM_CAPTURE.contains(&r) => Ok(()),
            r => Err(DeviceError::Cuda {
                context: format!("the CUDA context of GPU {} ({}) failed", o.ordinal, o.name),
                error: self.drv.check("cuStreamQuery", r).unwrap_err(),
            }),
        }
    }

    fn idle(&self) -> bool {
        let Some(o) = self.open.get() else { return true };
        let mut p = self.probe.lock().unwrap_or_else(|e| e.into_inner());
        if p.in_flight {
            return false;
        }
        // Idle if the last probe, started at the last ask, found nothing
        // running by the time it returned; then probe again for the next ask.
        let now = crate::wait::monotonic_ms();
        let idle = p.finished && now.saturating_sub(p.started_ms) <= 3000;
        *p = Probe { in_flight: true, finished: false, started_ms: now };
        drop(p);
        let (drv, ctx, probe) = (self.drv, o.ctx as usize, std::sync::Arc::clone(&self.probe));
        let spawned = std::thread::Builder::new().name("ishmem-cudasync".into()).spawn(move || {
            relax_library_thread(drv);
            // SAFETY: the primary context, retained for the life of the
            // process; a synchronize has no effect on the work it waits for.
            let r = unsafe {
                (drv.ctx_set_current)(ctx as CUcontext);
                (drv.ctx_synchronize)()
            };
            let mut p = probe.lock().unwrap_or_else(|e| e.into_inner());
            p.in_flight = false;
            // A failed context is `health`'s to report.
            p.finished = r == CUDA_SUCCESS;
        });
        if spawned.is_err() {
            self.probe.lock().unwrap_or_else(|e| e.into_inner()).in_flight = false;
        }
        idle
    }

    fn native(&self, what: Native) -> Result<*mut c_void, DeviceError> {
        let o = self.gpu()?;
        match what {
            Native::Context => Ok(o.ctx),
            _ => Err(DeviceError::Runtime(format!(
                "the cuda device has no OpenCL {what:?}: CUDA programs use the GPU's own (ordinal {})",
                o.ordinal
            ))),
        }
    }

    fn link_program(&self, _il: &[u8]) -> Result<*mut c_void, DeviceError> {
        Err(DeviceError::Runtime(
            "the cuda device links device code at build time (nvcc -rdc=true ... $(pkg-config --libs ishmem-cuda)), not from SPIR-V".into(),
        ))
    }

    fn enqueue(&self, op: QueueOp, stream: *mut c_void, deps: &[*mut c_void]) -> Result<*mut c_void, DeviceError> {
        use library::*;
        let lib = library().ok_or_else(|| {
            DeviceError::Runtime(
                "stream-ordered operations are launched by the CUDA device library: link it (nvcc -rdc=true ... $(pkg-config --libs ishmem-cuda))".into(),
            )
        })?;
        let o = self.gpu()?;
        let mut q = ishmemx_cuda_queue_op_t {
            kind: 0,
            pe: 0,
            op: 0,
            reserved: 0,
            dest: std::ptr::null_mut(),
            source: std::ptr::null(),
            nbytes: 0,
            sig_addr: std::ptr::null_mut(),
            value: 0,
            team: 0,
            root: 0,
            coll: 0,
            dtype: 0,
            rop: 0,
            elem: 0,
        };
        match op {
            QueueOp::Put { dest, source, nbytes, pe } | QueueOp::Get { dest, source, nbytes, pe } => {
                q.kind = if matches!(op, QueueOp::Put { .. }) { ISHMEMX_CUDA_OP_PUT } else { ISHMEMX_CUDA_OP_GET };
                (q.dest, q.source, q.nbytes, q.pe) = (dest, source, nbytes as u64, pe);
            }
            QueueOp::PutSignal { dest, source, nbytes, sig_addr, signal, sig_op, pe } => {
                q.kind = ISHMEMX_CUDA_OP_PUT_SIGNAL;
                (q.dest, q.source, q.nbytes, q.sig_addr, q.value, q.op, q.pe) =
                    (dest, source, nbytes as u64, sig_addr, signal, sig_op, pe);
            }
            QueueOp::SignalWaitUntil { sig_addr, cmp, cmp_value } => {
                q.kind = ISHMEMX_CUDA_OP_SIGNAL_WAIT_UNTIL;
                (q.sig_addr, q.op, q.value) = (sig_addr, cmp, cmp_value);
            }
            QueueOp::BarrierAll => q.kind = ISHMEMX_CUDA_OP_BARRIER_ALL,
            QueueOp::Quiet => q.kind = ISHMEMX_CUDA_OP_QUIET,
            QueueOp::SyncAll => q.kind = ISHMEMX_CUDA_OP_SYNC_ALL,
            QueueOp::Coll(c) => {
                q.kind = ISHMEMX_CUDA_OP_COLL;
                (q.team, q.root, q.coll, q.dtype, q.rop) = (c.team, c.root, c.kind, c.dtype, c.rop);
                (q.dest, q.source, q.nbytes) = (c.dest, c.source, c.nelems as u64);
                q.elem = u32::try_from(c.elem)
                    .map_err(|_| DeviceError::Runtime(format!("element size {} is too large", c.elem)))?;
            }
        }
        // SAFETY: the library's hook with an operation the core checked, the
        // program's stream and events.
        let rc = unsafe { (lib.enqueue)(&q, stream, deps.as_ptr(), deps.len() as u32) };
        if rc != 0 {
            return Err(DeviceError::Runtime(format!(
                "the CUDA device library could not launch the operation on stream {stream:p} of GPU {} (CUDA runtime error {rc}; is the stream one of this GPU's?)",
                o.ordinal
            )));
        }
        // Stream order is the completion: there is no event.
        Ok(std::ptr::null_mut())
    }

    fn wait(&self, events: &[*mut c_void]) -> Result<(), DeviceError> {
        if events.iter().all(|e| e.is_null()) {
            return Ok(());
        }
        Err(DeviceError::Runtime(
            "the cuda device's queue operations return no events (they are ordered by their CUDA stream: synchronize the stream)".into(),
        ))
    }
}
