//! The validating core: library lifecycle and the host operations of the
//! OpenSHMEM 1.5 memory-management, RMA, ordering and barrier sections.
//!
//! Every entry point takes the name of the API call it serves (`call`) so
//! that errors name what the user called. Checks are always on and cost a
//! few compares: PE range, symmetric-heap bounds, null pointers, library
//! phase.

use crate::alloc::{SymAllocator, MIN_ALIGN};
use crate::bootstrap;
use crate::ctrl::{ctrl_size, Ctrl};
use crate::device::{self, CpuDevice, Device, HeapRegion};
use crate::device_state::*;
use crate::env::{self, Config};
use crate::error::{self, fatal, warn};
use crate::transport::{ShmTransport, Transport};
use crate::wait::wait_until;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;

/// OpenSHMEM specification version implemented.
pub const SPEC_MAJOR: i32 = 1;
pub const SPEC_MINOR: i32 = 5;
/// Vendor string returned by `info_get_name`.
pub const VENDOR: &str = concat!("ishmem-rs ", env!("CARGO_PKG_VERSION"));

/// The state of an initialized PE.
pub struct State {
    pub my_pe: usize,
    pub n_pes: usize,
    heap_base: usize,
    heap_size: usize,
    /// This PE's symmetric data segment (address, size); size 0 when none.
    data_base: usize,
    data_size: usize,
    config: Config,
    device_name: &'static str,
    pub(crate) shm: ShmTransport,
    pub(crate) ctrl: Ctrl,
    alloc: Mutex<SymAllocator>,
    alloc_seq: AtomicU64,
    pub(crate) teams: std::sync::RwLock<Vec<Option<crate::team::Team>>>,
    device_state: Box<ishmemx_device_state_t>,
    ring: &'static crate::ring::Ring,
    /// Reaches the PEs not mapped here; `None` when every PE is mapped.
    pub(crate) proxy: Option<&'static crate::proxy::Proxy>,
    /// The MPI proxy this job bootstrapped with (finalized at the end).
    mpi: Option<&'static crate::proxy::Proxy>,
    runtime: Runtime,
    /// Every AMO goes through the proxy, this PE's own included (a host
    /// OpenSHMEM library's atomics need not be atomic with CPU ones).
    pub(crate) amo_through_proxy: bool,
    /// Largest alignment `align` can honour (alignment of the heap base).
    heap_align: usize,
    /// World PEs that share memory with this one (this node), ascending.
    pub(crate) node_pes: Vec<usize>,
    /// The device-visible team table (see `ishmemx_device_team_t`).
    pub(crate) device_teams: Box<[std::sync::atomic::AtomicU64]>,
    _peer_base_table: Box<[u64]>,
    _peer_local_table: Box<[u8]>,
    // Mappings last: dropped (unmapped) after everything pointing into them.
    _peer_heaps: Vec<HeapRegion>,
    _heap: HeapRegion,
    _data: Option<crate::dataseg::DataSegment>,
    _ctrl_region: HeapRegion,
}

const PHASE_NEW: u8 = 0;
const PHASE_RUNNING: u8 = 1;
const PHASE_FINALIZED: u8 = 2;

static STATE: AtomicPtr<State> = AtomicPtr::new(std::ptr::null_mut());
static PHASE: AtomicU8 = AtomicU8::new(PHASE_NEW);
static LIFECYCLE: Mutex<()> = Mutex::new(());

/// The running state, or a fatal error naming `call` before init or after
/// finalize.
#[inline(always)]
pub fn state(call: &str) -> &'static State {
    let p = STATE.load(Ordering::Acquire);
    if p.is_null() {
        not_running(call)
    }
    // SAFETY: non-null STATE points to a leaked Box that lives until
    // finalize; using the library concurrently with finalize is a user error
    // the spec leaves undefined.
    unsafe { &*p }
}

/// The running state if the library is initialized.
pub fn try_state() -> Option<&'static State> {
    // SAFETY: as in `state`.
    unsafe { STATE.load(Ordering::Acquire).as_ref() }
}

/// True between a successful init and finalize.
pub fn is_initialized() -> bool {
    PHASE.load(Ordering::Acquire) == PHASE_RUNNING
}

#[cold]
#[inline(never)]
fn not_running(call: &str) -> ! {
    if PHASE.load(Ordering::Acquire) == PHASE_FINALIZED {
        fatal(call, format_args!("called after the library was finalized"))
    } else {
        fatal(call, format_args!("called before the library was initialized (call ishmem_init or shmem_init first)"))
    }
}

/// The process is leaving through `global_exit`: no collective finalize at
/// exit, and later calls are errors.
pub(crate) fn mark_exiting() {
    PHASE.store(PHASE_FINALIZED, Ordering::Release);
}

extern "C" {
    /// glibc: like atexit, with the exit status.
    fn on_exit(f: extern "C" fn(libc::c_int, *mut libc::c_void), arg: *mut libc::c_void) -> libc::c_int;
}

/// Finalizes a program that returns from main (or calls exit(0)) without
/// calling finalize. A failing exit (non-zero status) does not: the other
/// PEs may never reach a matching finalize, and the launcher ends the job.
extern "C" fn finalize_at_exit(status: libc::c_int, _: *mut libc::c_void) {
    // exit() called from inside MPI (a peer's MPI_Abort reaching this
    // process): the job is over; a collective finalize would hang.
    if status != 0 || crate::proxy::in_plugin_call() {
        return;
    }
    if PHASE.load(Ordering::Acquire) == PHASE_RUNNING {
        finalize();
    }
}

fn env_uint(name: &'static str) -> Result<Option<u64>, String> {
    match std::env::var(name) {
        Err(_) => Ok(None),
        Ok(v) => v
            .trim()
            .parse::<u64>()
            .map(Some)
            .map_err(|_| env::EnvError { name, value: v, expected: "a non-negative integer" }.to_string()),
    }
}

/// How `init_with` bootstraps (Intel SHMEM's `ishmemx_attr_t`).
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

/// Initializes the library (collective over all PEs of the job). A second
/// call while initialized does nothing; a call after finalize is an error.
pub fn init() -> Result<(), String> {
    init_with(&InitOptions::default())
}

/// [`init`] with bootstrap options.
pub fn init_with(opts: &InitOptions) -> Result<(), String> {
    let _guard = LIFECYCLE.lock().unwrap_or_else(|e| e.into_inner());
    match PHASE.load(Ordering::Acquire) {
        PHASE_RUNNING => return Ok(()),
        PHASE_FINALIZED => return Err("called after the library was finalized; it cannot be initialized again".into()),
        _ => {}
    }
    let config = Config::from_env().map_err(|e| e.to_string())?;
    for name in env::unknown_vars() {
        warn(format_args!("unknown environment variable {name} is ignored"));
    }
    let heap_size = usize::try_from(config.symmetric_size)
        .ok()
        .and_then(|s| s.checked_next_multiple_of(page_size()))
        .ok_or_else(|| format!("ISHMEM_SYMMETRIC_SIZE={} is too large", config.symmetric_size))?;

    let launcher_fd = env_uint("ISHMRUN_FD")?;
    let use_openshmem = launcher_fd.is_none() && (config.runtime_openshmem || opts.force_openshmem);
    let use_mpi = launcher_fd.is_none()
        && !use_openshmem
        && (config.runtime_mpi || opts.force_mpi || !opts.app_comm.is_null() || crate::proxy::launched_by_mpi());
    let proxy: Option<&'static crate::proxy::Proxy> = if use_openshmem {
        // What the core will take from the library's symmetric heap.
        let need = |n: usize| heap_size + device::PROXY_HEAP_ALIGN + ctrl_size(n) + 4096;
        let p = crate::proxy::Proxy::load_openshmem(config.shmem_lib_name.as_deref(), opts.requested_thread, &need)?;
        Some(Box::leak(Box::new(p)))
    } else if use_mpi {
        let p = crate::proxy::Proxy::load(config.mpi_proxy.as_deref(), opts.app_comm, opts.requested_thread)?;
        Some(Box::leak(Box::new(p)))
    } else {
        None
    };
    let runtime = match (launcher_fd, proxy) {
        (Some(_), _) => Runtime::Ishmrun,
        (None, Some(_)) if use_openshmem => Runtime::OpenShmem,
        (None, Some(_)) => Runtime::Mpi,
        _ => Runtime::Singleton,
    };
    let (my_pe, n_pes) = match launcher_fd {
        None if proxy.is_some() => {
            let p = proxy.unwrap();
            if p.size == 0 || p.size > i32::MAX as usize || p.rank >= p.size {
                return Err(format!("MPI reports rank {} of {} processes", p.rank, p.size));
            }
            (p.rank, p.size)
        }
        Some(_) => {
            let pe = env_uint("ISHMRUN_PE")?.ok_or("ISHMRUN_FD is set but ISHMRUN_PE is not")?;
            let n = env_uint("ISHMRUN_NPES")?.ok_or("ISHMRUN_FD is set but ISHMRUN_NPES is not")?;
            if n == 0 || pe >= n || n > i32::MAX as u64 {
                return Err(format!("ISHMRUN_PE={pe} and ISHMRUN_NPES={n} are inconsistent"));
            }
            (pe as usize, n as usize)
        }
        None => (0, 1),
    };
    error::MY_PE.store(my_pe as i32, Ordering::Relaxed);

    let dev = CpuDevice;
    // A proxy that provides the memory (a host OpenSHMEM library) holds the
    // heap: only its symmetric objects are remote targets for it.
    let proxy_memory = proxy.filter(|p| p.provides_memory());
    let (mut heap, heap_align) = match proxy_memory {
        Some(p) => {
            let base = p.alloc("ishmem_init", heap_size, device::PROXY_HEAP_ALIGN)?;
            (HeapRegion::foreign(base, heap_size), device::PROXY_HEAP_ALIGN)
        }
        None => (
            dev.create_heap(heap_size, my_pe as i32)
                .map_err(|e| format!("cannot create a symmetric heap of {heap_size} bytes: {e}"))?,
            device::HEAP_BASE_ALIGN,
        ),
    };

    // Globals and statics of the program become symmetric (see dataseg.rs);
    // a host OpenSHMEM library has them symmetric already, in place.
    let mut data = if proxy_memory.is_some() {
        crate::dataseg::main_data()
    } else {
        match crate::dataseg::share_main_data() {
            Ok(d) => d,
            Err(e) => {
                warn(format_args!("global and static variables are not symmetric: cannot share the data segment: {e}"));
                None
            }
        }
    };
    let mut data_base_table = vec![std::ptr::null_mut(); n_pes];
    if let (Some(d), None, None) = (&data, launcher_fd, proxy) {
        data_base_table[0] = d.base;
    }

    let mut node_pes: Vec<usize> = (0..n_pes).collect();
    let mut data_symmetric_remote = false;
    let (ctrl_region, peer_heaps, peer_base) = match launcher_fd {
        None if proxy_memory.is_some() => {
            // Every PE alone: the library reaches all others, and the
            // control segment lives in its memory too.
            let p = proxy_memory.unwrap();
            let csize = ctrl_size(n_pes);
            let cbase = p.alloc("ishmem_init", csize, 4096)?;
            // SAFETY: csize fresh bytes from the library; no peer writes
            // them before the barrier at the end of init.
            unsafe {
                std::ptr::write_bytes(cbase, 0, csize);
                Ctrl::new(cbase, n_pes).initialize();
            }
            let dsize = data.as_ref().map_or(0, |d| d.size as u64);
            let sizes = p.allgather("ishmem_init", &dsize.to_le_bytes());
            data_symmetric_remote = dsize > 0 && sizes.chunks(8).all(|c| c == dsize.to_le_bytes());
            if data_symmetric_remote {
                data_base_table[my_pe] = data.as_ref().map_or(std::ptr::null_mut(), |d| d.base);
            } else if data.is_some() && my_pe == 0 {
                warn(format_args!("the PEs run different executables: global and static variables are not symmetric"));
            }
            node_pes = vec![my_pe];
            let mut pb = vec![std::ptr::null_mut(); n_pes];
            pb[my_pe] = heap.base();
            (HeapRegion::foreign(cbase, csize), Vec::new(), pb)
        }
        None if proxy.is_some() => {
            let job = crate::node::exchange(
                proxy.unwrap(),
                my_pe,
                n_pes,
                &dev,
                &heap,
                heap_size,
                data.as_ref(),
                config.enable_shm,
            )?;
            data_base_table = job.data_base;
            node_pes = job.node_pes;
            data_symmetric_remote = job.data_symmetric;
            (job.ctrl_region, job.peer_maps, job.peer_base)
        }
        Some(fd) => {
            // SAFETY: ishmrun passed this descriptor for us to own; nothing
            // else in the process uses it.
            let sock = unsafe { OwnedFd::from_raw_fd(fd as i32) };
            use std::os::fd::AsRawFd;
            let job = bootstrap::pe_exchange(
                sock.as_raw_fd(),
                my_pe as u32,
                heap.handle().expect("new heap has a handle"),
                heap_size as u64,
                data.as_ref().and_then(|d| d.fd.as_ref().map(|fd| (fd, d.size as u64))),
            )
            .map_err(|e| format!("bootstrap with ishmrun failed: {e}"))?;
            drop(sock);
            if job.n_pes != n_pes {
                return Err(format!("ishmrun reports {} PEs, ISHMRUN_NPES says {n_pes}", job.n_pes));
            }
            if job.ctrl_size < ctrl_size(n_pes) {
                return Err("control segment from ishmrun is too small".into());
            }
            let ctrl_region = device::map_region(&job.ctrl_fd, job.ctrl_size)
                .map_err(|e| format!("cannot map the control segment: {e}"))?;
            let mut peer_heaps = Vec::with_capacity(n_pes.saturating_sub(1));
            let mut peer_base = vec![std::ptr::null_mut(); n_pes];
            for (pe, seg) in job.peers.iter().enumerate() {
                let size = seg.heap_size;
                if size as usize != heap_size {
                    return Err(format!(
                        "PE {pe} has a {size}-byte heap and this PE a {heap_size}-byte one: ISHMEM_SYMMETRIC_SIZE must be the same on every PE"
                    ));
                }
                if pe == my_pe {
                    peer_base[pe] = heap.base();
                } else {
                    let r = dev
                        .map_peer_heap(&seg.heap_fd, heap_size)
                        .map_err(|e| format!("cannot map the heap of PE {pe}: {e}"))?;
                    peer_base[pe] = r.base();
                    peer_heaps.push(r);
                }
                match (&seg.data, &data) {
                    (Some(_), Some(d)) if pe == my_pe => data_base_table[pe] = d.base,
                    (Some((fd, size)), Some(_)) => {
                        let r = device::map_region(fd, *size as usize)
                            .map_err(|e| format!("cannot map the data segment of PE {pe}: {e}"))?;
                        data_base_table[pe] = r.base();
                        peer_heaps.push(r);
                    }
                    _ => {}
                }
            }
            if data.is_some() && data_base_table.iter().any(|p| p.is_null()) {
                if my_pe == 0 {
                    warn(format_args!(
                        "the PEs run different executables: global and static variables are not symmetric"
                    ));
                }
                data_base_table.iter_mut().for_each(|p| *p = std::ptr::null_mut());
            }
            (ctrl_region, peer_heaps, peer_base)
        }
        None => {
            let r = device::map_private(ctrl_size(1)).map_err(|e| format!("cannot map the control segment: {e}"))?;
            // SAFETY: fresh zeroed mapping of the right size.
            unsafe { Ctrl::new(r.base(), 1) }.initialize();
            (r, Vec::new(), vec![heap.base()])
        }
    };
    heap.close_handle();
    if let Some(d) = data.as_mut() {
        d.fd = None;
    }
    let (data_base, data_size) = match &data {
        Some(d) if !data_base_table[my_pe].is_null() => (d.base as usize, d.size),
        _ => (0, 0),
    };
    // SAFETY: the region holds ctrl_size(n_pes) bytes, page aligned, and
    // lives in the State as long as the view.
    let ctrl = unsafe { Ctrl::new(ctrl_region.base(), n_pes) };
    if !ctrl.is_valid() {
        return Err("control segment is not initialized for this job size".into());
    }
    error::set_ctrl(Some(ctrl));
    // Some PE is not mapped here (then no PE's node holds the whole job, so
    // this is the same on every PE and the collective calls below match).
    let remote_any = peer_base.iter().any(|p| p.is_null());
    let routing_proxy = if remote_any { proxy } else { None };
    if let Some(p) = routing_proxy {
        // Collective, in the same order on every PE.
        use ishmem_proxy_abi::{REGION_CTRL, REGION_DATA, REGION_HEAP};
        p.expose("ishmem_init", REGION_HEAP, heap.base(), heap_size);
        let (dbase, dsize) = match &data {
            Some(d) if data_symmetric_remote => (d.base, d.size),
            _ => (std::ptr::null_mut(), 0),
        };
        p.expose("ishmem_init", REGION_DATA, dbase, dsize);
        p.expose("ishmem_init", REGION_CTRL, ctrl_region.base(), ctrl_size(n_pes));
        p.install(config.progress_thread);
    } else if let Some(p) = proxy {
        p.install_abort();
    }

    let peer_base_table: Box<[u64]> = peer_base.iter().map(|p| *p as u64).collect();
    // The device-facing "reachable by load/store" table; all zero when
    // every device operation must go through the ring.
    let peer_local_table: Box<[u8]> =
        peer_base.iter().map(|p| u8::from(!p.is_null() && !config.device_ring_all)).collect();
    let ring = crate::ring::new_ring();
    // Two u64 per team slot hold one ishmemx_device_team_t (16 bytes).
    let device_teams: Box<[std::sync::atomic::AtomicU64]> =
        (0..2 * crate::ctrl::TEAM_SLOTS).map(|_| std::sync::atomic::AtomicU64::new(0)).collect();
    let device_state = Box::new(ishmemx_device_state_t {
        magic: ISHMEMX_DEVICE_STATE_MAGIC,
        version: ISHMEMX_DEVICE_STATE_VERSION,
        my_pe: my_pe as i32,
        n_pes: n_pes as i32,
        only_local: u32::from(peer_local_table.iter().all(|&l| l == 1)),
        reserved: 0,
        heap_base: heap.base() as u64,
        heap_size: heap_size as u64,
        peer_heap_base: peer_base_table.as_ptr() as u64,
        peer_is_local: peer_local_table.as_ptr() as u64,
        ctrl_team_base: ctrl.team_base(),
        ctrl_pe_stride: std::mem::size_of::<crate::ctrl::PeCtrl>() as u32,
        ctrl_team_stride: std::mem::size_of::<crate::ctrl::TeamCtrl>() as u32,
        ctrl_epoch_offset: std::mem::offset_of!(crate::ctrl::TeamCtrl, epoch) as u32,
        reserved2: 0,
        ring: ring as *const _ as u64,
        teams: device_teams.as_ptr() as u64,
    });
    if config.debug {
        crate::error::emit_line(&format!(
            "ishmem: PE {my_pe}: initialized: {n_pes} PEs, device {}, heap {heap_size} bytes at {:p}, {}; PEs sharing memory with this one: {:?}",
            dev.name(),
            heap.base(),
            match (runtime, proxy) {
                (Runtime::Mpi | Runtime::OpenShmem, Some(p)) => format!("{} {}", p.kind(), p.describe()),
                (Runtime::Ishmrun, _) => "ishmrun bootstrap".to_string(),
                _ => "singleton".to_string(),
            },
            node_pes,
        ));
    }
    let st = Box::new(State {
        my_pe,
        n_pes,
        heap_base: heap.base() as usize,
        heap_size,
        data_base,
        data_size,
        device_name: dev.name(),
        shm: ShmTransport::new(peer_base.into_boxed_slice(), heap_size, data_base_table.into_boxed_slice()),
        ctrl,
        alloc: Mutex::new(SymAllocator::new(heap_size)),
        alloc_seq: AtomicU64::new(0),
        teams: std::sync::RwLock::new(vec![None; crate::ctrl::TEAM_SLOTS]),
        device_state,
        ring,
        device_teams,
        _peer_base_table: peer_base_table,
        _peer_local_table: peer_local_table,
        _peer_heaps: peer_heaps,
        _heap: heap,
        _data: data,
        _ctrl_region: ctrl_region,
        config,
        proxy: routing_proxy,
        mpi: proxy,
        runtime,
        amo_through_proxy: routing_proxy.is_some() && proxy_memory.is_some(),
        heap_align,
        node_pes,
    });
    st.install_predefined_teams();
    STATE.store(Box::into_raw(st), Ordering::Release);
    PHASE.store(PHASE_RUNNING, Ordering::Release);
    static ATEXIT: std::sync::Once = std::sync::Once::new();
    // SAFETY: registering a plain extern "C" fn.
    ATEXIT.call_once(|| unsafe {
        on_exit(finalize_at_exit, std::ptr::null_mut());
    });
    let st = state("ishmem_init");
    if st.my_pe == 0 && (st.config.print_version || st.config.print_info) {
        print_startup_info(&st.config);
    }
    st.barrier_all();
    Ok(())
}

/// SHMEM_VERSION / SHMEM_INFO printouts (OpenSHMEM 1.5 §8), on PE 0.
fn print_startup_info(config: &Config) {
    let mut out = format!("{VENDOR}: OpenSHMEM {SPEC_MAJOR}.{SPEC_MINOR}\n");
    if config.print_info {
        out.push_str("environment variables:\n");
        for (v, val, src) in env::effective().into_iter().filter(|(v, _, _)| !v.internal) {
            let src = if src == env::Source::Environment { "set" } else { "default" };
            out.push_str(&format!("  {}={} [{src}]: {}\n", v.name, val, v.help));
        }
    }
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    let _ = std::io::stdout().flush();
}

/// Finalizes the library: completes outstanding operations and synchronizes
/// all PEs, then releases the heaps. Does nothing if not initialized.
pub fn finalize() {
    let _guard = LIFECYCLE.lock().unwrap_or_else(|e| e.into_inner());
    if PHASE.load(Ordering::Acquire) != PHASE_RUNNING {
        return;
    }
    let p = STATE.load(Ordering::Acquire);
    // SAFETY: RUNNING implies a valid state pointer.
    let st = unsafe { &*p };
    st.barrier_all();
    // The proxy thread serves device requests with this state: stop it first.
    crate::opencl::stop_proxy();
    // The MPI windows cover our heap: release them while it is mapped.
    if let Some(p) = st.mpi {
        p.finalize();
    }
    PHASE.store(PHASE_FINALIZED, Ordering::Release);
    STATE.store(std::ptr::null_mut(), Ordering::Release);
    error::set_ctrl(None);
    // SAFETY: we own the box; no new caller can obtain it after the swap.
    drop(unsafe { Box::from_raw(p) });
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

/// Kinds of collective allocation call, as published for the cross-PE check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u64)]
enum AllocKind {
    Malloc = 1,
    Calloc = 2,
    Align = 3,
    Free = 4,
    Realloc = 5,
}

#[derive(Clone, Copy, PartialEq, Eq)]
struct AllocRecord {
    seq: u64,
    kind: u64,
    arg0: u64,
    arg1: u64,
    result: u64,
}

impl AllocRecord {
    fn describe(&self) -> String {
        let (k, a, b) = (self.kind, self.arg0, self.arg1);
        match k {
            1 => format!("malloc(size={a})"),
            2 => format!("calloc(count={a}, size={b})"),
            3 => format!("align(alignment={a}, size={b})"),
            4 => format!("free(heap offset {a})"),
            5 => format!("realloc(heap offset {a}, size={b})"),
            _ => "no call".to_string(),
        }
    }
}

const NO_RESULT: u64 = u64::MAX;

impl State {
    // ----- queries -------------------------------------------------------

    pub fn heap_base(&self) -> *mut u8 {
        self.heap_base as *mut u8
    }
    pub fn heap_size(&self) -> usize {
        self.heap_size
    }
    pub fn device_name(&self) -> &'static str {
        self.device_name
    }
    /// How the job bootstrapped.
    pub fn runtime(&self) -> Runtime {
        self.runtime
    }
    /// The proxy plugin's description, under MPI.
    pub fn proxy_description(&self) -> Option<String> {
        self.mpi.map(|p| p.describe())
    }
    /// The highest OpenSHMEM thread level this job can provide.
    pub fn max_thread_level(&self) -> i32 {
        match self.proxy {
            Some(p) if !p.any_thread() => 1,
            _ => 3,
        }
    }
    pub fn config(&self) -> &Config {
        &self.config
    }
    /// The state read by device code.
    pub fn device_state(&self) -> &ishmemx_device_state_t {
        &self.device_state
    }

    /// This PE's reverse-offload ring.
    pub fn ring(&self) -> &'static crate::ring::Ring {
        self.ring
    }

    // ----- checks --------------------------------------------------------

    /// Checks `pe` is a valid PE number and returns it as an index.
    #[inline(always)]
    pub fn check_pe(&self, call: &str, pe: i32) -> usize {
        if pe < 0 || pe as usize >= self.n_pes {
            self.bad_pe(call, pe)
        }
        pe as usize
    }

    #[cold]
    #[inline(never)]
    fn bad_pe(&self, call: &str, pe: i32) -> ! {
        fatal(call, format_args!("PE {pe} is out of range: the job has {} PEs (0..{})", self.n_pes, self.n_pes - 1))
    }

    /// Checks that `len > 0` bytes at `addr` lie inside the symmetric heap
    /// or the symmetric data segment and returns the symmetric offset of
    /// `addr` (see `ShmTransport`).
    #[inline(always)]
    pub fn sym_offset(&self, call: &str, what: &str, addr: *const u8, len: usize) -> usize {
        let off = (addr as usize).wrapping_sub(self.heap_base);
        if off >= self.heap_size || len > self.heap_size - off {
            return self.sym_offset_data(call, what, addr, len);
        }
        off
    }

    /// The symmetric offset of `addr` if it is in the data segment.
    fn data_offset(&self, addr: *const u8, len: usize) -> Option<usize> {
        let off = (addr as usize).wrapping_sub(self.data_base);
        (off < self.data_size && len <= self.data_size - off).then(|| self.heap_size + off)
    }

    #[cold]
    #[inline(never)]
    fn sym_offset_data(&self, call: &str, what: &str, addr: *const u8, len: usize) -> usize {
        match self.data_offset(addr, len) {
            Some(off) => off,
            None => self.not_symmetric(call, what, addr, len),
        }
    }

    #[cold]
    #[inline(never)]
    fn not_symmetric(&self, call: &str, what: &str, addr: *const u8, len: usize) -> ! {
        if addr.is_null() {
            fatal(call, format_args!("{what} is a null pointer ({len} bytes requested)"))
        }
        let end = self.heap_base + self.heap_size;
        let off = (addr as usize).wrapping_sub(self.heap_base);
        if off < self.heap_size {
            fatal(
                call,
                format_args!(
                    "{what} {addr:p} + {len} bytes runs past the end of the symmetric heap [{:#x}, {end:#x})",
                    self.heap_base
                ),
            )
        }
        fatal(
            call,
            format_args!(
                "{what} {addr:p} is not a symmetric address: it is outside the symmetric heap [{:#x}, {end:#x}) and the program's global data [{:#x}, {:#x})",
                self.heap_base,
                self.data_base,
                self.data_base + self.data_size
            ),
        )
    }

    #[inline(always)]
    pub(crate) fn check_local(&self, call: &str, what: &str, p: *const u8) {
        if p.is_null() {
            null_local(call, what)
        }
    }

    // ----- contiguous RMA ------------------------------------------------

    /// `put`: copies `len` bytes from local `src` to symmetric `dest` on `pe`.
    ///
    /// # Safety
    /// `src` must be valid for reads of `len` bytes.
    #[inline(always)]
    pub unsafe fn put(&self, call: &str, dest: *mut u8, src: *const u8, len: usize, pe: i32) {
        self.put_impl(call, dest, src, len, pe, false)
    }

    /// `put_nbi`: as [`State::put`]; remote transfers complete at quiet.
    ///
    /// # Safety
    /// `src` must stay valid and unchanged until the next quiet.
    #[inline(always)]
    pub unsafe fn put_nbi(&self, call: &str, dest: *mut u8, src: *const u8, len: usize, pe: i32) {
        self.put_impl(call, dest, src, len, pe, true)
    }

    #[inline(always)]
    unsafe fn put_impl(&self, call: &str, dest: *mut u8, src: *const u8, len: usize, pe: i32, nbi: bool) {
        let pe = self.check_pe(call, pe);
        if len == 0 {
            return;
        }
        let off = self.sym_offset(call, "dest", dest, len);
        self.check_local(call, "source", src);
        match self.shm.addr(pe, off) {
            Some(d) => std::ptr::copy(src, d, len),
            None => self.remote_put(call, pe, off, src, len, nbi),
        }
    }

    /// `get`: copies `len` bytes from symmetric `src` on `pe` to local `dest`.
    ///
    /// # Safety
    /// `dest` must be valid for writes of `len` bytes.
    #[inline(always)]
    pub unsafe fn get(&self, call: &str, dest: *mut u8, src: *const u8, len: usize, pe: i32) {
        self.get_impl(call, dest, src, len, pe, false)
    }

    /// `get_nbi`: as [`State::get`]; remote transfers complete at quiet.
    ///
    /// # Safety
    /// `dest` must stay valid until the next quiet.
    #[inline(always)]
    pub unsafe fn get_nbi(&self, call: &str, dest: *mut u8, src: *const u8, len: usize, pe: i32) {
        self.get_impl(call, dest, src, len, pe, true)
    }

    #[inline(always)]
    unsafe fn get_impl(&self, call: &str, dest: *mut u8, src: *const u8, len: usize, pe: i32, nbi: bool) {
        let pe = self.check_pe(call, pe);
        if len == 0 {
            return;
        }
        let off = self.sym_offset(call, "source", src, len);
        self.check_local(call, "dest", dest);
        match self.shm.addr(pe, off) {
            Some(s) => std::ptr::copy(s as *const u8, dest, len),
            None => self.remote_get(call, pe, off, dest, len, nbi),
        }
    }

    /// `p`: stores one element to symmetric `dest` on `pe`.
    ///
    /// # Safety
    /// `T` must be a plain value type.
    #[inline(always)]
    pub unsafe fn p<T: Copy>(&self, call: &str, dest: *mut T, value: T, pe: i32) {
        let pe = self.check_pe(call, pe);
        let off = self.sym_offset(call, "dest", dest as *const u8, std::mem::size_of::<T>());
        match self.shm.addr(pe, off) {
            Some(a) => std::ptr::write_volatile(a as *mut T, value),
            None => self.remote_put(call, pe, off, &value as *const T as *const u8, std::mem::size_of::<T>(), false),
        }
    }

    /// `g`: loads one element from symmetric `src` on `pe`.
    ///
    /// # Safety
    /// `T` must be a plain value type.
    #[inline(always)]
    pub unsafe fn g<T: Copy>(&self, call: &str, src: *const T, pe: i32) -> T {
        let pe = self.check_pe(call, pe);
        let off = self.sym_offset(call, "source", src as *const u8, std::mem::size_of::<T>());
        match self.shm.addr(pe, off) {
            Some(a) => std::ptr::read_volatile(a as *const T),
            None => {
                let mut v = std::mem::MaybeUninit::<T>::uninit();
                self.remote_get(call, pe, off, v.as_mut_ptr() as *mut u8, std::mem::size_of::<T>(), false);
                v.assume_init()
            }
        }
    }

    /// The proxy that reaches `pe`, or a fatal error.
    #[inline]
    pub(crate) fn proxy_for(&self, call: &str, pe: usize) -> &'static crate::proxy::Proxy {
        match self.proxy {
            Some(p) => p,
            None => self.unreachable_pe(call, pe),
        }
    }

    /// (proxy region, offset in it) of symmetric offset `off`.
    #[inline]
    pub(crate) fn region_of(&self, off: usize) -> (u32, usize) {
        if off < self.heap_size {
            (ishmem_proxy_abi::REGION_HEAP, off)
        } else {
            (ishmem_proxy_abi::REGION_DATA, off - self.heap_size)
        }
    }

    /// Put to a PE that is not mapped here (through the proxy).
    ///
    /// # Safety
    /// As [`State::put`]; `off + len` is inside one symmetric segment.
    #[inline(never)]
    pub(crate) unsafe fn remote_put(&self, call: &str, pe: usize, off: usize, src: *const u8, len: usize, nbi: bool) {
        let p = self.proxy_for(call, pe);
        let (region, roff) = self.region_of(off);
        p.put(call, region, pe, roff, src, len, nbi);
    }

    /// Get from a PE that is not mapped here (through the proxy).
    ///
    /// # Safety
    /// As [`State::get`]; `off + len` is inside one symmetric segment.
    #[inline(never)]
    pub(crate) unsafe fn remote_get(&self, call: &str, pe: usize, off: usize, dst: *mut u8, len: usize, nbi: bool) {
        let p = self.proxy_for(call, pe);
        let (region, roff) = self.region_of(off);
        p.get(call, region, pe, roff, dst, len, nbi);
    }

    /// True when `pe`'s memory is mapped here (same node).
    #[inline]
    pub fn is_local(&self, pe: usize) -> bool {
        self.shm.addr(pe, 0).is_some()
    }

    #[cold]
    pub(crate) fn unreachable_pe(&self, call: &str, pe: usize) -> ! {
        fatal(call, format_args!("PE {pe} is not reachable: no transport reaches it"))
    }

    // ----- strided RMA ---------------------------------------------------

    /// `iput`: element `i` of `src` (stride `sst` elements) goes to element
    /// `i * dst` of symmetric `dest` on `pe`.
    ///
    /// # Safety
    /// `src` must be valid for the strided reads.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn iput(
        &self, call: &str, dest: *mut u8, src: *const u8, dst: isize, sst: isize, elem: usize, nelems: usize, pe: i32,
    ) {
        self.ibput(call, dest, src, dst, sst, elem, 1, nelems, pe)
    }

    /// `iget`: element `i * sst` of symmetric `src` on `pe` goes to element
    /// `i * dst` of local `dest`.
    ///
    /// # Safety
    /// `dest` must be valid for the strided writes.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn iget(
        &self, call: &str, dest: *mut u8, src: *const u8, dst: isize, sst: isize, elem: usize, nelems: usize, pe: i32,
    ) {
        self.ibget(call, dest, src, dst, sst, elem, 1, nelems, pe)
    }

    /// `ibput`: block `b` (`bsize` contiguous elements) of `src`, starting at
    /// element `b * sst`, goes to element `b * dst` of symmetric `dest`.
    ///
    /// # Safety
    /// `src` must be valid for the block-strided reads.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn ibput(
        &self, call: &str, dest: *mut u8, src: *const u8, dst: isize, sst: isize, elem: usize, bsize: usize,
        nblocks: usize, pe: i32,
    ) {
        let pe = self.check_pe(call, pe);
        if bsize == 0 || nblocks == 0 {
            return;
        }
        let (lo, span) = extent(call, "dest", dst, elem, bsize, nblocks);
        let off = self.sym_offset(call, "dest", dest.wrapping_offset(lo), span);
        let _ = extent(call, "source", sst, elem, bsize, nblocks);
        self.check_local(call, "source", src);
        let base = match self.shm.addr(pe, off) {
            Some(a) => a.wrapping_offset(-lo),
            None => {
                // One transfer per block, completed together.
                let p = self.proxy_for(call, pe);
                let (region, roff) = self.region_of(off);
                for b in 0..nblocks as isize {
                    let d = (roff as isize - lo + b * dst * elem as isize) as usize;
                    p.put(call, region, pe, d, src.wrapping_offset(b * sst * elem as isize), bsize * elem, true);
                }
                p.flush(call, Some(pe));
                return;
            }
        };
        strided_copy(base, dst, src, sst, elem, bsize, nblocks);
    }

    /// `ibget`: the mirror of [`State::ibput`].
    ///
    /// # Safety
    /// `dest` must be valid for the block-strided writes.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn ibget(
        &self, call: &str, dest: *mut u8, src: *const u8, dst: isize, sst: isize, elem: usize, bsize: usize,
        nblocks: usize, pe: i32,
    ) {
        let pe = self.check_pe(call, pe);
        if bsize == 0 || nblocks == 0 {
            return;
        }
        let (lo, span) = extent(call, "source", sst, elem, bsize, nblocks);
        let off = self.sym_offset(call, "source", src.wrapping_offset(lo), span);
        let _ = extent(call, "dest", dst, elem, bsize, nblocks);
        self.check_local(call, "dest", dest);
        let base = match self.shm.addr(pe, off) {
            Some(a) => a.wrapping_offset(-lo) as *const u8,
            None => {
                let p = self.proxy_for(call, pe);
                let (region, roff) = self.region_of(off);
                for b in 0..nblocks as isize {
                    let s = (roff as isize - lo + b * sst * elem as isize) as usize;
                    p.get(call, region, pe, s, dest.wrapping_offset(b * dst * elem as isize), bsize * elem, true);
                }
                p.flush(call, Some(pe));
                return;
            }
        };
        strided_copy(dest, dst, base, sst, elem, bsize, nblocks);
    }

    // ----- ordering and synchronization ------------------------------------

    /// `fence`: orders this PE's puts and AMOs to each PE. Through the
    /// proxy, ordering costs completion (MPI orders nothing between
    /// puts), so fence is quiet there.
    #[inline]
    pub fn fence(&self) {
        self.shm.fence();
        if let Some(p) = self.proxy {
            p.flush("shmem_fence", None);
        }
    }

    /// `quiet`: completes all of this PE's outstanding operations.
    #[inline]
    pub fn quiet(&self) {
        crate::ring::drain(self.ring);
        self.shm.quiet();
        if let Some(p) = self.proxy {
            p.flush("shmem_quiet", None);
        }
    }

    /// `sync_all`: waits until every PE has arrived (the world team's
    /// dissemination barrier, see `team.rs`).
    pub fn sync_all(&self) {
        let world = self.world_team();
        self.team_sync_with(&world);
    }

    /// `barrier_all`: `quiet` then `sync_all`.
    pub fn barrier_all(&self) {
        self.quiet();
        self.sync_all();
    }

    // ----- symmetric heap management ---------------------------------------

    /// `ptr`: the address of symmetric `addr` on `pe` usable by loads and
    /// stores from this PE, or null when `pe` cannot be reached that way or
    /// `addr` is not symmetric.
    pub fn ptr(&self, call: &str, addr: *const u8, pe: i32) -> *mut u8 {
        let pe = self.check_pe(call, pe);
        let off = (addr as usize).wrapping_sub(self.heap_base);
        let off = if off < self.heap_size {
            off
        } else {
            match self.data_offset(addr, 1) {
                Some(o) => o,
                None => return std::ptr::null_mut(),
            }
        };
        self.shm.addr(pe, off).unwrap_or(std::ptr::null_mut())
    }

    /// True when `addr` (one byte) is inside the symmetric heap or the
    /// symmetric data segment.
    pub fn is_symmetric(&self, addr: *const u8) -> bool {
        (addr as usize).wrapping_sub(self.heap_base) < self.heap_size || self.data_offset(addr, 1).is_some()
    }

    fn publish(&self, kind: AllocKind, arg0: u64, arg1: u64, result: u64) -> AllocRecord {
        let seq = self.alloc_seq.fetch_add(1, Ordering::Relaxed) + 1;
        let slot = &self.ctrl.pe(self.my_pe).alloc[(seq % 2) as usize];
        slot.kind.store(kind as u64, Ordering::Relaxed);
        slot.arg0.store(arg0, Ordering::Relaxed);
        slot.arg1.store(arg1, Ordering::Relaxed);
        slot.result.store(result, Ordering::Relaxed);
        slot.seq.store(seq, Ordering::Release);
        AllocRecord { seq, kind: kind as u64, arg0, arg1, result }
    }

    /// After the barrier of a collective allocation call: every PE must have
    /// made the same call with the same arguments and the same outcome.
    fn verify(&self, call: &str, mine: AllocRecord) {
        let read = |pe: usize| -> AllocRecord {
            let s = &self.ctrl.pe(pe).alloc[(mine.seq % 2) as usize];
            AllocRecord {
                seq: self.ctrl_load(call, pe, &s.seq),
                kind: self.ctrl_load(call, pe, &s.kind),
                arg0: self.ctrl_load(call, pe, &s.arg0),
                arg1: self.ctrl_load(call, pe, &s.arg1),
                result: self.ctrl_load(call, pe, &s.result),
            }
        };
        // Every PE compares the PEs of its node and its successor: equality
        // is transitive, so any difference is seen by some PE, and remote
        // reads stay O(1) per call. The report reads everyone.
        let next = (self.my_pe + 1) % self.n_pes;
        if self.node_pes.iter().chain(std::iter::once(&next)).all(|&pe| read(pe) == mine) {
            return;
        }
        let mut differ = Vec::new();
        let mut records = Vec::with_capacity(self.n_pes);
        for pe in 0..self.n_pes {
            let r = read(pe);
            if r != mine {
                differ.push(pe);
            }
            records.push(r);
        }
        if differ.is_empty() {
            return;
        }
        if error::claim_report() {
            let mut msg = format!(
                "collective call #{} has different arguments on different PEs (every PE must pass the same values):",
                mine.seq
            );
            let show: Vec<usize> = std::iter::once(self.my_pe)
                .chain(differ.iter().copied().filter(|&p| p != self.my_pe))
                .take(8)
                .collect();
            for pe in show {
                let r = &records[pe];
                if r.seq < mine.seq {
                    msg.push_str(&format!(
                        "\n    PE {pe}: has not made this call (its latest collective allocation call is #{}: {})",
                        r.seq,
                        r.describe()
                    ));
                } else if r.seq > mine.seq {
                    msg.push_str(&format!(
                        "\n    PE {pe}: is already at collective allocation call #{} ({}): a PE skipped a call",
                        r.seq,
                        r.describe()
                    ));
                } else {
                    msg.push_str(&format!("\n    PE {pe}: {}", r.describe()));
                }
            }
            if differ.len() > 7 {
                msg.push_str(&format!("\n    ... {} PEs differ in all", differ.len()));
            }
            fatal(call, format_args!("{msg}"));
        }
        // Another PE is printing the report and will abort the job.
        wait_until(|| false);
        unreachable!()
    }

    fn out_of_space(&self, call: &str, requested: usize, e: Option<crate::alloc::OutOfSpace>) {
        if self.my_pe == 0 {
            let (free, largest) = e.map_or((0, 0), |e| (e.free_total, e.largest_free));
            warn(format_args!(
                "{call}: out of symmetric memory: requested {requested} bytes, {free} bytes free (largest free block {largest}) of a {}-byte heap; raise ISHMEM_SYMMETRIC_SIZE",
                self.heap_size
            ));
        }
    }

    fn collective_alloc(
        &self, call: &str, kind: AllocKind, arg0: u64, arg1: u64, size: Option<usize>, align: usize, zero: bool,
    ) -> *mut u8 {
        let mut a = self.alloc.lock().unwrap_or_else(|e| e.into_inner());
        let res = match size {
            Some(s) => a.alloc(s, align).map_err(Some),
            None => Err(None),
        };
        let mine = self.publish(kind, arg0, arg1, res.as_ref().map_or(NO_RESULT, |&o| o as u64));
        if let (Ok(off), true) = (&res, zero) {
            // SAFETY: the block lies inside our heap; no peer may use it yet
            // (they are still before the barrier below).
            unsafe { std::ptr::write_bytes(self.heap_base().add(*off), 0, size.unwrap()) };
        }
        self.barrier_all();
        self.verify(call, mine);
        match res {
            Ok(off) => self.heap_base().wrapping_add(off),
            Err(e) => {
                self.out_of_space(call, size.unwrap_or(usize::MAX), e);
                std::ptr::null_mut()
            }
        }
    }

    /// `malloc` (collective; barrier on exit; 0 bytes gives null without one).
    pub fn malloc(&self, call: &str, size: usize) -> *mut u8 {
        if size == 0 {
            return std::ptr::null_mut();
        }
        self.collective_alloc(call, AllocKind::Malloc, size as u64, 0, Some(size), MIN_ALIGN, false)
    }

    /// `calloc`: zeroed `count * size` bytes.
    pub fn calloc(&self, call: &str, count: usize, size: usize) -> *mut u8 {
        if count == 0 || size == 0 {
            return std::ptr::null_mut();
        }
        let total = count.checked_mul(size);
        self.collective_alloc(call, AllocKind::Calloc, count as u64, size as u64, total, MIN_ALIGN, true)
    }

    /// `align`: `size` bytes at a multiple of `alignment`, which must be a
    /// power of two and a multiple of `sizeof(void *)`.
    pub fn align(&self, call: &str, alignment: usize, size: usize) -> *mut u8 {
        if !alignment.is_power_of_two() || alignment < std::mem::size_of::<*const u8>() {
            fatal(
                call,
                format_args!(
                    "alignment {alignment} is not a power of two multiple of sizeof(void *) ({})",
                    std::mem::size_of::<*const u8>()
                ),
            )
        }
        if alignment > self.heap_align {
            fatal(
                call,
                format_args!("alignment {alignment} is larger than the largest supported ({})", self.heap_align),
            )
        }
        if size == 0 {
            return std::ptr::null_mut();
        }
        self.collective_alloc(call, AllocKind::Align, alignment as u64, size as u64, Some(size), alignment, false)
    }

    fn block_offset(&self, call: &str, ptr: *const u8, a: &SymAllocator) -> (usize, usize) {
        let off = self.sym_offset(call, "ptr", ptr, 1);
        match a.block_len(off) {
            Some(len) => (off, len),
            None => fatal(
                call,
                format_args!(
                    "ptr {ptr:p} (heap offset {off}) is not the start of a live symmetric allocation (already freed, or not returned by a symmetric allocation routine)"
                ),
            ),
        }
    }

    /// `free` (collective; barrier on entry; null does nothing).
    pub fn free(&self, call: &str, ptr: *mut u8) {
        if ptr.is_null() {
            return;
        }
        let mut a = self.alloc.lock().unwrap_or_else(|e| e.into_inner());
        let (off, _) = self.block_offset(call, ptr, &a);
        let mine = self.publish(AllocKind::Free, off as u64, 0, 0);
        self.barrier_all();
        self.verify(call, mine);
        a.free(off);
    }

    /// `realloc` (collective): barriers on entry and exit; the first
    /// `min(old, new)` bytes are kept; on failure null is returned and the
    /// old block is left as it was.
    pub fn realloc(&self, call: &str, ptr: *mut u8, size: usize) -> *mut u8 {
        if ptr.is_null() {
            return self.malloc(call, size);
        }
        if size == 0 {
            self.free(call, ptr);
            return std::ptr::null_mut();
        }
        let mut a = self.alloc.lock().unwrap_or_else(|e| e.into_inner());
        let (off, old_len) = self.block_offset(call, ptr, &a);
        // Decide placement now (deterministic), move data after the entry
        // barrier, when no peer still writes the old block.
        let placement: Result<(usize, bool), Option<crate::alloc::OutOfSpace>> = if a.resize_in_place(off, size) {
            Ok((off, false))
        } else {
            a.alloc(size, MIN_ALIGN).map(|n| (n, true)).map_err(Some)
        };
        let mine = self.publish(
            AllocKind::Realloc,
            off as u64,
            size as u64,
            placement.as_ref().map_or(NO_RESULT, |p| p.0 as u64),
        );
        self.barrier_all();
        self.verify(call, mine);
        let result = match placement {
            Ok((new_off, moved)) => {
                if moved {
                    // SAFETY: both blocks are inside our heap and disjoint.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            self.heap_base().add(off),
                            self.heap_base().add(new_off),
                            old_len.min(size),
                        )
                    };
                    a.free(off);
                }
                self.heap_base().wrapping_add(new_off)
            }
            Err(e) => {
                self.out_of_space(call, size, e);
                std::ptr::null_mut()
            }
        };
        self.barrier_all();
        result
    }
}

#[cold]
#[inline(never)]
pub(crate) fn null_local(call: &str, what: &str) -> ! {
    fatal(call, format_args!("{what} is a null pointer"))
}

/// Byte extent `(lowest offset, span)` touched by `nblocks` blocks of
/// `bsize` elements of `elem` bytes whose starts are `stride` elements apart.
fn extent(call: &str, what: &str, stride: isize, elem: usize, bsize: usize, nblocks: usize) -> (isize, usize) {
    let calc = || -> Option<(isize, usize)> {
        let last = (nblocks as i128 - 1) * stride as i128 * elem as i128;
        let lo = last.min(0);
        let hi = last.max(0) + bsize as i128 * elem as i128;
        Some((isize::try_from(lo).ok()?, usize::try_from(hi - lo).ok()?))
    };
    match calc() {
        Some(v) => v,
        None => fatal(
            call,
            format_args!(
                "{what} stride {stride} with {nblocks} blocks of {bsize} elements overflows the address space"
            ),
        ),
    }
}

/// Copies `nblocks` blocks of `bsize` elements of `elem` bytes; block `b`
/// starts at element `b * sst` of `src` and `b * dst` of `dest`.
pub(crate) unsafe fn strided_copy(
    dest: *mut u8, dst: isize, src: *const u8, sst: isize, elem: usize, bsize: usize, nblocks: usize,
) {
    #[inline(always)]
    unsafe fn each<T: Copy>(dest: *mut u8, dst: isize, src: *const u8, sst: isize, bsize: usize, nblocks: usize) {
        let (d, s) = (dest as *mut T, src as *const T);
        for b in 0..nblocks as isize {
            let db = d.wrapping_offset(b * dst);
            let sb = s.wrapping_offset(b * sst);
            if bsize == 1 {
                db.write_unaligned(sb.read_unaligned());
            } else {
                std::ptr::copy(sb, db, bsize);
            }
        }
    }
    match elem {
        1 => each::<u8>(dest, dst, src, sst, bsize, nblocks),
        2 => each::<u16>(dest, dst, src, sst, bsize, nblocks),
        4 => each::<u32>(dest, dst, src, sst, bsize, nblocks),
        8 => each::<u64>(dest, dst, src, sst, bsize, nblocks),
        16 => each::<[u64; 2]>(dest, dst, src, sst, bsize, nblocks),
        _ => {
            for b in 0..nblocks as isize {
                std::ptr::copy(
                    src.wrapping_offset(b * sst * elem as isize),
                    dest.wrapping_offset(b * dst * elem as isize),
                    bsize * elem,
                );
            }
        }
    }
}
