//! Bootstrap: how a job starts, one module per way, each returning the same
//! [`JobLayout`] (who this PE is, its heap, the control segment, which peers
//! are mapped here and where, and the remote proxy for the rest).
//!
//! * [`ishmrun`]: started by `ishmrun` (one node, shared memory);
//! * [`mpi`]: started by an MPI launcher, through the MPI proxy plugin, with
//!   node-local heap sharing;
//! * [`openshmem`]: started by a host OpenSHMEM library's launcher, every
//!   other PE through that library;
//! * [`singleton`]: one PE without a launcher.
//!
//! [`start`] picks one from the environment and the init options, runs it
//! and does what all of them share at the end: the handles peers mapped are
//! closed, and when some PE is not mapped here, this PE's regions are
//! exposed to the proxy, which is installed for wait loops and job abort.

pub mod ishmrun;
pub mod mpi;
pub mod openshmem;
pub mod singleton;
pub mod wire;

use crate::ctrl::{ctrl_size, Ctrl};
use crate::dataseg::DataSegment;
use crate::device::{Device, DeviceError, DeviceMemory};
use crate::env::{self, Config, EnvError, RuntimeChoice};
use crate::error::warn;
use crate::mem::{self, HeapRegion};
use crate::remote::{Region, RegionAccess, Remote, RemoteError};
use std::fmt;

/// How `init` bootstraps (Intel SHMEM's `ishmemx_attr_t`).
#[derive(Clone, Copy, Debug)]
pub struct InitOptions {
    /// Bootstrap through MPI even without a detected MPI launcher.
    pub force_mpi: bool,
    /// Bootstrap through a host OpenSHMEM library (as ISHMEM_RUNTIME=OPENSHMEM).
    pub force_openshmem: bool,
    /// The application's `MPI_Comm` (a pointer to it) when it owns MPI:
    /// the job is that communicator's processes; MPI stays the
    /// application's to finalize.
    pub app_comm: *const std::ffi::c_void,
    /// The OpenSHMEM thread level asked for (`SHMEM_THREAD_*`).
    pub requested_thread: i32,
}

impl Default for InitOptions {
    fn default() -> Self {
        InitOptions { force_mpi: false, force_openshmem: false, app_comm: std::ptr::null(), requested_thread: 3 }
    }
}

/// How this job bootstrapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runtime {
    /// Started by ishmrun (one node, shared memory).
    Ishmrun,
    /// Started by an MPI launcher; remote PEs through the MPI proxy.
    Mpi,
    /// Started by a host OpenSHMEM library's launcher; every other PE
    /// through that library (the OpenSHMEM proxy).
    OpenShmem,
    /// A single PE without a launcher.
    Singleton,
}

/// Why init failed.
#[derive(Debug)]
pub enum InitError {
    /// A bad environment variable.
    Env(EnvError),
    /// The remote proxy could not be loaded or started.
    Remote(RemoteError),
    /// The device backend failed.
    Device(DeviceError),
    /// The bootstrap exchange failed (what, and why).
    Bootstrap(String),
    /// Called again after finalize.
    Finalized,
    /// The job cannot start for a reason the launcher reports once for
    /// every PE (a PE ended before calling `shmem_init`): the C API ends
    /// this PE without a message of its own.
    Reported(String),
}

impl fmt::Display for InitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InitError::Env(e) => e.fmt(f),
            InitError::Remote(e) => e.fmt(f),
            InitError::Device(e) => e.fmt(f),
            InitError::Bootstrap(m) | InitError::Reported(m) => f.write_str(m),
            InitError::Finalized => {
                f.write_str("called after the library was finalized; it cannot be initialized again")
            }
        }
    }
}

impl std::error::Error for InitError {}

impl From<EnvError> for InitError {
    fn from(e: EnvError) -> Self {
        InitError::Env(e)
    }
}
impl From<RemoteError> for InitError {
    fn from(e: RemoteError) -> Self {
        InitError::Remote(e)
    }
}
impl From<DeviceError> for InitError {
    fn from(e: DeviceError) -> Self {
        InitError::Device(e)
    }
}
impl From<String> for InitError {
    fn from(m: String) -> Self {
        InitError::Bootstrap(m)
    }
}

/// What a bootstrap learned and set up: everything the core needs to run.
pub struct JobLayout {
    pub runtime: Runtime,
    pub my_pe: usize,
    pub n_pes: usize,
    /// This PE's heap.
    pub heap: HeapRegion,
    pub heap_size: usize,
    /// Largest alignment `align` can honour (alignment of the heap base).
    pub heap_align: usize,
    /// This PE's symmetric data segment, when globals are symmetric.
    pub data: Option<DataSegment>,
    /// Data-segment address of every PE here; null when not mapped.
    pub data_base: Vec<*mut u8>,
    /// Heap address of every PE here; null when not mapped (remote).
    pub peer_base: Vec<*mut u8>,
    /// The node's control segment.
    pub ctrl_region: HeapRegion,
    /// Mappings of peers' heaps and data segments (kept until finalize).
    pub peer_maps: Vec<HeapRegion>,
    /// World PEs that share memory with this one (this node), ascending.
    pub node_pes: Vec<usize>,
    /// Processes of this job on this node (more than `node_pes` when
    /// node-local sharing is off): waits sleep when they outnumber cores.
    pub node_procs: usize,
    /// The proxy the job bootstrapped with (finalized at the end).
    pub boot_remote: Option<&'static Remote>,
    /// The proxy that reaches the PEs not mapped here; `None` when every
    /// PE is mapped.
    pub route_remote: Option<&'static Remote>,
    /// Every AMO goes through `route_remote`, this PE's own included (a
    /// host OpenSHMEM library's atomics need not be atomic with CPU ones).
    pub amo_remote_all: bool,
}

/// Globals of PEs running different executables are not symmetric: say so
/// once (PE 0).
pub(crate) fn warn_data_not_symmetric(my_pe: usize) {
    if my_pe == 0 {
        warn(format_args!("the PEs run different executables: global and static variables are not symmetric"));
    }
}

/// The program's globals moved onto shareable memory for local peers, or
/// `None` (with a warning) when that fails.
pub(crate) fn shared_data() -> Option<DataSegment> {
    match crate::dataseg::share_main_data() {
        Ok(d) => d,
        Err(e) => {
            warn(format_args!("global and static variables are not symmetric: cannot share the data segment: {e}"));
            None
        }
    }
}

/// A fresh private control segment for `n_pes` PEs (a node of one PE).
pub(crate) fn private_ctrl(n_pes: usize) -> Result<HeapRegion, InitError> {
    let r = mem::map_private(ctrl_size(n_pes)).map_err(|e| format!("cannot map the control segment: {e}"))?;
    // SAFETY: fresh zeroed mapping of ctrl_size(n_pes) bytes.
    unsafe { Ctrl::new(r.base(), n_pes) }.initialize();
    Ok(r)
}

/// This PE's heap in device memory, as the proxy reaches it when it serves
/// other PEs (the device's copies and atomics; a failure ends the job).
struct DeviceHeap {
    mem: &'static dyn DeviceMemory,
    base: usize,
    size: usize,
    pe: usize,
}

impl DeviceHeap {
    #[cold]
    fn failed(&self, what: &str, offset: usize, len: usize, e: DeviceError) -> ! {
        crate::error::fatal(
            "ishmem proxy",
            format_args!(
                "serving another PE's {what} of {len} bytes at offset {offset} of PE {}'s heap ({} bytes): {e}",
                self.pe, self.size
            ),
        )
    }
}

impl RegionAccess for DeviceHeap {
    unsafe fn write(&self, offset: usize, src: *const u8, len: usize) {
        // SAFETY: the proxy checked the range against the heap; src is
        // valid (the caller's contract).
        if let Err(e) = unsafe { self.mem.copy((self.base + offset) as *mut u8, src, len) } {
            self.failed("put", offset, len, e)
        }
    }

    unsafe fn write_start(&self, offset: usize, src: *const u8, len: usize) {
        // SAFETY: as in write; src stays until writes_done (the caller's
        // contract).
        if let Err(e) = unsafe { self.mem.copy_start((self.base + offset) as *mut u8, src, len) } {
            self.failed("put", offset, len, e)
        }
    }

    fn writes_done(&self, wait: bool) -> bool {
        self.mem.copies_done(wait).unwrap_or_else(|e| {
            crate::error::fatal("ishmem proxy", format_args!("serving another PE's put to PE {}'s heap: {e}", self.pe))
        })
    }

    unsafe fn read(&self, offset: usize, dst: *mut u8, len: usize) {
        // SAFETY: as in write.
        if let Err(e) = unsafe { self.mem.copy(dst, (self.base + offset) as *const u8, len) } {
            self.failed("get", offset, len, e)
        }
    }

    fn amo(&self, offset: usize, amo: crate::types::Amo) -> u64 {
        // SAFETY: the proxy checked that the value is aligned and inside the heap.
        unsafe { self.mem.atomic((self.base + offset) as *mut u8, amo) }
            .unwrap_or_else(|e| self.failed("AMO", offset, amo.size, e))
    }

    fn amo_many(&self, ops: &[(usize, crate::types::Amo, bool)], out: &mut [u64]) {
        let pass: Vec<crate::device::PassAtomic> = ops
            .iter()
            .map(|&(offset, amo, posted)| crate::device::PassAtomic {
                addr: (self.base + offset) as *mut u8,
                amo,
                posted,
                ordered: false,
            })
            .collect();
        // SAFETY: the proxy checked that each value is aligned and inside
        // the heap.
        if let Err(e) = unsafe { self.mem.atomics(&pass, out) } {
            crate::error::fatal(
                "ishmem proxy",
                format_args!("serving {} AMOs and gets of other PEs on PE {}'s heap: {e}", ops.len(), self.pe),
            )
        }
    }

    fn staging(&self, len: usize) -> *mut u8 {
        self.mem.staging(len).unwrap_or_else(|e| {
            crate::error::fatal("ishmem proxy", format_args!("a {len}-byte staging buffer for PE {}: {e}", self.pe))
        })
    }
}

/// The routing step's access to host memory served on request (it owns the
/// CPU atomics on symmetric memory): `route::host_region`.
pub type HostAccess = fn(*mut u8) -> &'static dyn RegionAccess;

/// Exposes host `region` served on request (through `host`), or as a
/// window where the proxy cannot serve (the host OpenSHMEM proxy, an older
/// plugin).
fn expose_host(r: &Remote, host: HostAccess, region: Region, base: *mut u8, size: usize) {
    if let Err(e) = r.expose_served(region, size, host(base)) {
        match e {
            RemoteError::Unsupported(_) => r.expose("ishmem_init", region, base, size),
            e => crate::error::fatal("ishmem_init", format_args!("exposing the {region:?} region ({size} bytes): {e}")),
        }
    }
}

/// Bootstraps the job: the way chosen by the launcher's environment,
/// `ISHMEM_RUNTIME` and `opts`; heaps from `device`.
/// `host` serves host regions on request (`ISHMEM_PROXY_RMA=message`).
pub fn start(
    config: &Config, opts: &InitOptions, device: &'static dyn Device, host: HostAccess,
) -> Result<JobLayout, InitError> {
    // With the device's reserve, rounded up to its granularity (a page;
    // 2 MiB on GPUs).
    let reserve = crate::device::heap_reserve(device, config.device_sync);
    let heap_size = usize::try_from(config.symmetric_size)
        .ok()
        .and_then(|s| s.checked_add(reserve))
        .and_then(|s| s.checked_next_multiple_of(device.heap_granularity().max(mem::page_size())))
        .ok_or_else(|| format!("ISHMEM_SYMMETRIC_SIZE={} is too large", config.symmetric_size))?;
    // ISHMRUN_* inherited by a child of a PE (it ran a program that also
    // calls shmem_init) describe the parent's socket, not ours: only a
    // process ishmrun started itself takes part in its job.
    let launch = env::ishmrun_launch()?.filter(|l| ishmrun::started_by_ishmrun(l.fd));
    let mut job = match launch {
        Some(launch) => ishmrun::start(launch, device, heap_size)?,
        None if config.runtime == RuntimeChoice::OpenShmem || opts.force_openshmem => {
            openshmem::start(config, heap_size, reserve)?
        }
        None if config.runtime == RuntimeChoice::Mpi
            || opts.force_mpi
            || !opts.app_comm.is_null()
            || env::launched_by_mpi() =>
        {
            mpi::start(config, opts, device, heap_size)?
        }
        None => singleton::start(device, heap_size)?,
    };
    job.heap.close_handle();
    if let Some(d) = job.data.as_mut() {
        d.fd = None;
    }
    if job.data_base.get(job.my_pe).is_none_or(|p| p.is_null()) {
        job.data = None;
    }
    // Some PE is not mapped here (then no PE's node holds the whole job, so
    // this is the same on every PE and the collective calls below match).
    let remote_any = job.peer_base.iter().any(|p| p.is_null());
    match (remote_any, job.boot_remote) {
        (true, Some(r)) => {
            const CALL: &str = "ishmem_init";
            match device.memory() {
                // A heap in device memory: the proxy serves other PEs'
                // operations on it through the device.
                Some(m) => {
                    let access: &'static DeviceHeap = Box::leak(Box::new(DeviceHeap {
                        mem: m,
                        base: job.heap.base() as usize,
                        size: heap_size,
                        pe: job.my_pe,
                    }));
                    r.expose_served(Region::Heap, heap_size, access).map_err(|e| {
                        InitError::Bootstrap(format!(
                            "ISHMEM_DEVICE={}: the PEs this one cannot map are reached through the {}: {e}",
                            device.name(),
                            r.kind()
                        ))
                    })?;
                }
                // Host memory, served on request (ISHMEM_PROXY_RMA=message)
                // where the proxy can, else a window.
                None if config.proxy_rma_messages => expose_host(r, host, Region::Heap, job.heap.base(), heap_size),
                None => r.expose(CALL, Region::Heap, job.heap.base(), heap_size),
            }
            let (dbase, dsize) = job.data.as_ref().map_or((std::ptr::null_mut(), 0), |d| (d.base, d.size));
            if config.proxy_rma_messages {
                expose_host(r, host, Region::Data, dbase, dsize);
            } else {
                r.expose(CALL, Region::Data, dbase, dsize);
            }
            r.expose(CALL, Region::Ctrl, job.ctrl_region.base(), ctrl_size(job.n_pes));
            r.install(config.progress_thread);
            job.route_remote = Some(r);
        }
        (true, None) => return Err(InitError::Bootstrap("some PEs are not reachable and no proxy was loaded".into())),
        (false, Some(r)) => r.install_abort(),
        (false, None) => {}
    }
    job.amo_remote_all &= job.route_remote.is_some();
    Ok(job)
}
