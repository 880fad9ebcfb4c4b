//! The lifecycle: `init` (device, bootstrap, routing, state) and
//! `finalize`, and the running state every entry point reaches through
//! [`state`]. This is the top of the runtime: it may use every module, and
//! no module uses it except the bindings above.

use crate::boot::{self, JobLayout};
use crate::ctrl::{self, ctrl_size, Ctrl};
use crate::device::{self, Attach};
use crate::device_state::*;
use crate::env::{self, Config};
use crate::error::{self, fatal, warn};
use crate::phase::{self, Phase};
use crate::route::{Router, Segments};
use crate::state::{Mappings, State};
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::Mutex;

pub use crate::boot::{InitError, InitOptions, Runtime};

/// OpenSHMEM specification version implemented.
pub const SPEC_MAJOR: i32 = 1;
pub const SPEC_MINOR: i32 = 5;
/// Vendor string returned by `info_get_name`.
pub const VENDOR: &str = concat!("ishmem-rs ", env!("CARGO_PKG_VERSION"));

static STATE: AtomicPtr<State> = AtomicPtr::new(std::ptr::null_mut());
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

#[cold]
#[inline(never)]
fn not_running(call: &str) -> ! {
    if phase::get() == Phase::Finalized {
        fatal(call, format_args!("called after the library was finalized"))
    } else {
        fatal(call, format_args!("called before the library was initialized (call ishmem_init or shmem_init first)"))
    }
}

extern "C" {
    /// glibc: like atexit, with the exit status.
    fn on_exit(f: extern "C" fn(libc::c_int, *mut libc::c_void), arg: *mut libc::c_void) -> libc::c_int;
}

/// Finalizes a program that returns from main (or calls exit(0)) without
/// calling finalize. A failing exit (non-zero status) does not: the other
/// PEs may never reach a matching finalize, and the launcher ends the job.
extern "C" fn finalize_at_exit(status: libc::c_int, _: *mut libc::c_void) {
    error::callback_guard("ishmem finalize at exit", || {
        // exit() called from inside MPI (a peer's MPI_Abort reaching this
        // process): the job is over; a collective finalize would hang.
        if status != 0 || crate::remote::in_call() {
            return;
        }
        if phase::get() == Phase::Running {
            finalize();
        }
    })
}

/// Initializes the library (collective over all PEs of the job). A second
/// call while initialized does nothing; a call after finalize is an error.
pub fn init() -> Result<(), InitError> {
    init_with(&InitOptions::default())
}

/// [`init`] with bootstrap options.
pub fn init_with(opts: &InitOptions) -> Result<(), InitError> {
    let _guard = LIFECYCLE.lock().unwrap_or_else(|e| e.into_inner());
    match phase::get() {
        Phase::Running => return Ok(()),
        Phase::Finalized => return Err(InitError::Finalized),
        Phase::New => {}
    }
    let config = Config::from_env()?;
    // Messages before the bootstrap already know the PE (under ishmrun).
    if let Ok(Some(l)) = env::ishmrun_launch() {
        phase::set_my_pe(l.pe);
    }
    for (name, near) in env::unknown_vars() {
        match near {
            Some(n) => warn(format_args!("unknown environment variable {name} is ignored (did you mean {n}?)")),
            None => warn(format_args!("unknown environment variable {name} is ignored")),
        }
    }
    let device = device::select(&config)?;
    let job = boot::start(&config, opts, device, crate::route::host_region)?;
    let st = build_state(config, device, job)?;
    st.install_predefined_teams();
    let st: &'static State = Box::leak(st);
    STATE.store(st as *const State as *mut State, Ordering::Release);
    phase::set(Phase::Running);
    error::set_life(crate::ctrl::LIFE_RUNNING);
    // PEs on other nodes have other control segments: one claim for the
    // whole job, at world PE 0.
    if st.route.has_remote() {
        error::set_claim_hook(Some(claim_report_at_pe0));
    }
    st.device.attach(Attach {
        handler: st,
        ring: st.ring,
        state: &*st.device_state,
        ctrl: (st._mem.ctrl_region.base(), ctrl_size(st.n_pes)),
        node_pes: st.node_procs.max(st.node_pes.len()),
        ring_served: st.config.device_ring_all || st.route.has_remote(),
    })?;
    static ATEXIT: std::sync::Once = std::sync::Once::new();
    // SAFETY: registering a plain extern "C" fn.
    ATEXIT.call_once(|| unsafe {
        on_exit(finalize_at_exit, std::ptr::null_mut());
    });
    if st.my_pe == 0 && device.needs_host_cores() && std::thread::available_parallelism().is_ok_and(|n| n.get() < 2) {
        warn(format_args!(
            "this PE may run on one CPU core only (its launcher bound it there; Open MPI's mpirun binds each process to a core by default): the host threads that serve its {} kernels (the reverse-offload ring, the MPI proxy's progress) share that core with the program, and a device operation they serve can take milliseconds. Give each PE several cores: mpirun --bind-to none, or --map-by slot:PE=4 (Slurm: --cpus-per-task)",
            device.name()
        ));
    }
    if st.my_pe == 0 && (st.config.print_version || st.config.print_info) {
        print_startup_info(&st.config);
    }
    st.barrier_sig("shmem_init", crate::collsig::Sig::init());
    crate::watch::start(st);
    Ok(())
}

/// The running state from a bootstrapped job: routing tables, the control
/// segment, the device-visible state.
fn build_state(config: Config, device: &'static dyn device::Device, job: JobLayout) -> Result<Box<State>, InitError> {
    let JobLayout {
        runtime,
        my_pe,
        n_pes,
        heap,
        heap_size,
        heap_align,
        data,
        data_base: data_base_table,
        peer_base,
        ctrl_region,
        peer_maps,
        node_pes,
        node_procs,
        boot_remote,
        route_remote,
        amo_remote_all,
    } = job;
    let (data_base, data_size) = data.as_ref().map_or((0, 0), |d| (d.base as usize, d.size));
    // SAFETY: the region holds ctrl_size(n_pes) bytes, page aligned, and
    // lives in the State as long as the view.
    let ctrl = unsafe { Ctrl::new(ctrl_region.base(), n_pes) };
    if !ctrl.is_valid() {
        return Err(InitError::Bootstrap(
            "the launcher's control segment does not match this library (ishmrun and libishmem from different \
             builds? use the ishmrun installed with this library) or this job size"
                .into(),
        ));
    }
    error::set_ctrl(Some(ctrl));
    // More PEs on this node than cores for them: waits yield almost at once.
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    crate::wait::set_oversubscribed(node_procs.max(node_pes.len()) > cores);
    let peer_base_table: Box<[u64]> = peer_base.iter().map(|p| *p as u64).collect();
    // The device-facing "reachable by load/store" table; all zero when
    // every device operation must go through the ring.
    let peer_local_table: Box<[u8]> =
        peer_base.iter().map(|p| u8::from(!p.is_null() && !config.device_ring_all)).collect();
    let ring = crate::ring::new_ring();
    // Two u64 per team slot hold one ishmemx_device_team_t (16 bytes).
    let device_teams: Box<[AtomicU64]> = (0..2 * ctrl::TEAM_SLOTS).map(|_| AtomicU64::new(0)).collect();
    // The device's quiet words (one cache line), in host memory; a GPU
    // device moves them into its own memory.
    let device_quiet: Box<[AtomicU64]> = (0..8).map(|_| AtomicU64::new(0)).collect();
    // The device's reserve at the end of the heap (its sync words): past
    // what the allocator hands out and what device code checks user
    // addresses against. Host routing covers the whole heap (the ring
    // server stores the sync words of PEs the device reaches through it).
    let reserve = device::heap_reserve(device, config.device_sync);
    let user_heap = heap_size - reserve;
    let sync_words =
        if reserve > 0 && n_pes <= crate::sync_words::SYNC_MAX_PES { heap.base() as u64 + user_heap as u64 } else { 0 };
    let device_state = Box::new(ishmemx_device_state_t {
        magic: ISHMEMX_DEVICE_STATE_MAGIC,
        version: ISHMEMX_DEVICE_STATE_VERSION,
        my_pe: my_pe as i32,
        n_pes: n_pes as i32,
        only_local: u32::from(peer_local_table.iter().all(|&l| l == 1)),
        reserved: 0,
        heap_base: heap.base() as u64,
        heap_size: user_heap as u64,
        peer_heap_base: peer_base_table.as_ptr() as u64,
        peer_is_local: peer_local_table.as_ptr() as u64,
        ctrl_team_base: ctrl.team_base(),
        ctrl_pe_stride: std::mem::size_of::<ctrl::PeCtrl>() as u32,
        ctrl_team_stride: std::mem::size_of::<ctrl::TeamCtrl>() as u32,
        ctrl_epoch_offset: ctrl::TEAM_EPOCH_FROM_FLAGS as u32,
        coll_check: u32::from(config.coll_check),
        ring: ring as *const _ as u64,
        teams: device_teams.as_ptr() as u64,
        quiet_words: device_quiet.as_ptr() as u64,
        copy_cutover: 0,
        copy_cutover_group: 0,
        sync_words,
    });
    if config.debug {
        error::emit_line(&format!(
            "ishmem: PE {my_pe}: initialized: {n_pes} PEs, device {}, heap {heap_size} bytes at {:p}, device syncs in {}, {}; PEs sharing memory with this one: {:?}",
            device.name(),
            heap.base(),
            if sync_words != 0 { "the heap" } else { "the control segment" },
            match (runtime, boot_remote) {
                (Runtime::Mpi | Runtime::OpenShmem, Some(p)) => format!("{} {}", p.kind(), p.describe()),
                (Runtime::Ishmrun, _) => "ishmrun bootstrap".to_string(),
                _ => "singleton".to_string(),
            },
            node_pes,
        ));
    }
    let segments = Segments {
        heap_size,
        heap_base: peer_base.into_boxed_slice(),
        data_base: data_base_table.into_boxed_slice(),
        ctrl_base: ctrl_region.base(),
        ctrl_size: ctrl_size(n_pes),
    };
    let route = Router::new(my_pe, segments, route_remote, amo_remote_all, device.memory());
    Ok(Box::new(State {
        my_pe,
        n_pes,
        heap_base: heap.base() as usize,
        heap_size,
        data_base,
        data_size,
        heap_align,
        config,
        runtime,
        route,
        ctrl,
        boot_remote,
        device,
        alloc: Mutex::new(crate::alloc::SymAllocator::new(user_heap)),
        alloc_seq: AtomicU64::new(0),
        teams: std::sync::RwLock::new(vec![None; ctrl::TEAM_SLOTS]),
        set_marks: Default::default(),
        node_pes,
        node_procs,
        device_state,
        device_teams,
        _device_quiet: device_quiet,
        ring,
        _peer_base_table: peer_base_table,
        _peer_local_table: peer_local_table,
        _mem: Mappings { peer_maps, heap, data, ctrl_region },
    }))
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
    if phase::get() != Phase::Running {
        return;
    }
    let p = STATE.load(Ordering::Acquire);
    // SAFETY: Running implies a valid state pointer.
    let st = unsafe { &*p };
    error::set_life(crate::ctrl::LIFE_FINALIZING);
    st.barrier_sig("shmem_finalize", crate::collsig::Sig::finalize());
    error::set_life(crate::ctrl::LIFE_FINALIZED);
    crate::watch::stop();
    // The ring server performs device requests with this state: stop it first.
    st.device.detach();
    error::set_claim_hook(None);
    // The proxy's windows cover our heap: release them while it is mapped.
    if let Some(p) = st.boot_remote {
        p.finalize();
    }
    phase::set(Phase::Finalized);
    STATE.store(std::ptr::null_mut(), Ordering::Release);
    error::set_ctrl(None);
    // SAFETY: we own the box; no new caller can obtain it after the swap.
    drop(unsafe { Box::from_raw(p) });
}

/// The job-wide report claim (see `Router::claim_report`).
fn claim_report_at_pe0() -> bool {
    match try_state() {
        Some(st) => st.route.claim_report(&st.ctrl.header().abort_reporter, st.my_pe as i32 + 1),
        None => true,
    }
}
