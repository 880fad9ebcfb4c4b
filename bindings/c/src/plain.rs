//! Non-typed routines under Intel SHMEM names. cbindgen reads this file
//! (and `runtime/src/device_state.rs`) to write `include/ishmem/ishmem_api.h`.

use crate::guard;
use ishmem_runtime::api::{self, fatal, ishmemx_device_state_t, state, DeviceKind};
use std::ffi::{c_char, c_int, c_long, c_void};

/// Major version of the OpenSHMEM specification implemented.
pub const ISHMEM_MAJOR_VERSION: c_int = 1;
/// Minor version of the OpenSHMEM specification implemented.
pub const ISHMEM_MINOR_VERSION: c_int = 5;
/// Size of the buffer `ishmem_info_get_name` writes, terminator included.
pub const ISHMEM_MAX_NAME_LEN: c_int = 256;

const _: () = assert!(ISHMEM_MAJOR_VERSION == api::SPEC_MAJOR && ISHMEM_MINOR_VERSION == api::SPEC_MINOR);

/// Initializes the library; collective over all PEs (OpenSHMEM 1.5 §9.1.1).
#[no_mangle]
pub extern "C" fn ishmem_init() {
    guard("ishmem_init", || init_or_die("ishmem_init"))
}

pub(crate) fn init_or_die(call: &'static str) {
    init_opts_or_die(call, &api::InitOptions::default())
}

fn init_opts_or_die(call: &'static str, opts: &api::InitOptions) {
    match api::init_with(opts) {
        Ok(()) => {}
        // The launcher has said why, once for the job.
        Err(api::InitError::Reported(_)) => api::abort_job(api::ERROR_EXIT_CODE),
        Err(e) => fatal(call, format_args!("{e}")),
    }
}

/// `ishmemx_runtime_type_t`: bootstrap through MPI (the MPI proxy plugin).
pub const ISHMEMX_RUNTIME_MPI: c_int = 0;
/// Through a host OpenSHMEM library (not available in this version).
pub const ISHMEMX_RUNTIME_OPENSHMEM: c_int = 1;
/// Through PMI (not available in this version).
pub const ISHMEMX_RUNTIME_PMI: c_int = 2;
/// Started by `ishmrun` (this library's launcher; one node).
pub const ISHMEMX_RUNTIME_ISHMRUN: c_int = 3;
/// A single PE started without a launcher.
pub const ISHMEMX_RUNTIME_SINGLETON: c_int = 4;

/// Initialization attributes (Intel SHMEM's `ishmemx_attr_t`; the C
/// definition, with Intel's C++ default member values, is written by
/// ishmem-gen; layout: int, bool, bool, pointer).
#[allow(non_camel_case_types)]
#[repr(C)]
pub struct ishmemx_attr_t {
    pub runtime: c_int,
    pub initialize_runtime: bool,
    pub gpu: bool,
    pub mpi_comm: *mut c_void,
}

const _: () = assert!(std::mem::size_of::<ishmemx_attr_t>() == 16);

/// Initializes with attributes (Intel SHMEM extension): `runtime` picks the
/// bootstrap (ISHMEMX_RUNTIME_MPI; ignored under ishmrun); `mpi_comm`
/// points to the application's `MPI_Comm` when it initialized MPI itself
/// (`initialize_runtime` false): the job is that communicator and MPI stays
/// the application's. `ISHMEM_RUNTIME` in the environment wins over
/// `runtime`.
#[no_mangle]
pub unsafe extern "C" fn ishmemx_init_attr(attr: *mut ishmemx_attr_t) {
    const CALL: &str = "ishmemx_init_attr";
    guard(CALL, || {
        if attr.is_null() {
            fatal(CALL, format_args!("attr is a null pointer"))
        }
        // SAFETY: not null (checked above); the C caller passes the address
        // of an initialized `ishmemx_attr_t`, which nothing writes during
        // the call.
        let a = unsafe { &*attr };
        let under_ishmrun = api::under_ishmrun();
        match a.runtime {
            ISHMEMX_RUNTIME_MPI | ISHMEMX_RUNTIME_OPENSHMEM | ISHMEMX_RUNTIME_ISHMRUN | ISHMEMX_RUNTIME_SINGLETON => {}
            ISHMEMX_RUNTIME_PMI => fatal(
                CALL,
                format_args!(
                    "runtime {} (PMI) is not available in this version: use ISHMEMX_RUNTIME_MPI, ISHMEMX_RUNTIME_OPENSHMEM or ishmrun",
                    a.runtime
                ),
            ),
            r => fatal(CALL, format_args!("runtime {r} is not an ishmemx_runtime_type_t value")),
        }
        if a.runtime == ISHMEMX_RUNTIME_MPI && !a.initialize_runtime && a.mpi_comm.is_null() && !under_ishmrun {
            fatal(
                CALL,
                format_args!("initialize_runtime is false but mpi_comm is null: pass the application's communicator"),
            )
        }
        if under_ishmrun && !a.mpi_comm.is_null() {
            fatal(CALL, format_args!("mpi_comm was given, but this job was started by ishmrun (start it with mpiexec)"))
        }
        let opts = api::InitOptions {
            force_mpi: a.runtime == ISHMEMX_RUNTIME_MPI && !under_ishmrun && launched_or_comm(a),
            force_openshmem: a.runtime == ISHMEMX_RUNTIME_OPENSHMEM && !under_ishmrun,
            app_comm: a.mpi_comm as *const c_void,
            requested_thread: ISHMEM_THREAD_MULTIPLE,
        };
        init_opts_or_die(CALL, &opts);
    })
}

/// Intel's default attributes ask for MPI: honour that when MPI is there
/// (a communicator, or an MPI launcher); a program started without any
/// launcher stays a singleton.
fn launched_or_comm(a: &ishmemx_attr_t) -> bool {
    !a.mpi_comm.is_null() || api::launched_by_mpi()
}

/// How the job bootstrapped (`ishmemx_runtime_type_t`).
#[no_mangle]
pub extern "C" fn ishmemx_runtime_get_type() -> c_int {
    const CALL: &str = "ishmemx_runtime_get_type";
    guard(CALL, || match state(CALL).runtime() {
        api::Runtime::Mpi => ISHMEMX_RUNTIME_MPI,
        api::Runtime::OpenShmem => ISHMEMX_RUNTIME_OPENSHMEM,
        api::Runtime::Ishmrun => ISHMEMX_RUNTIME_ISHMRUN,
        api::Runtime::Singleton => ISHMEMX_RUNTIME_SINGLETON,
    })
}

/// Completes all operations and releases the library's resources;
/// collective (§9.1.5). Also run at exit if the program did not call it.
#[no_mangle]
pub extern "C" fn ishmem_finalize() {
    guard("ishmem_finalize", api::finalize)
}

/// This PE's number in the world team (§9.1.2).
#[no_mangle]
pub extern "C" fn ishmem_my_pe() -> c_int {
    guard("ishmem_my_pe", || state("ishmem_my_pe").my_pe as c_int)
}

/// Number of PEs in the world team (§9.1.3).
#[no_mangle]
pub extern "C" fn ishmem_n_pes() -> c_int {
    guard("ishmem_n_pes", || state("ishmem_n_pes").n_pes as c_int)
}

/// `info_get_version` for the routine `call`.
///
/// # Safety
/// `major` and `minor` are each null or valid for a write of one `c_int`
/// (a null one is reported).
pub(crate) unsafe fn info_get_version(call: &'static str, major: *mut c_int, minor: *mut c_int) {
    guard(call, || {
        if major.is_null() || minor.is_null() {
            fatal(call, format_args!("major or minor is a null pointer"))
        }
        // SAFETY: neither is null (checked above), so by this function's
        // contract each is valid for a write of one c_int.
        unsafe {
            *major = api::SPEC_MAJOR;
            *minor = api::SPEC_MINOR;
        }
    })
}

/// `info_get_name` for the routine `call`.
///
/// # Safety
/// `name` is null (reported) or valid for writes of
/// `ISHMEM_MAX_NAME_LEN` bytes.
pub(crate) unsafe fn info_get_name(call: &'static str, name: *mut c_char) {
    guard(call, || {
        if name.is_null() {
            fatal(call, format_args!("name is a null pointer"))
        }
        let v = api::VENDOR.as_bytes();
        let n = v.len().min(ISHMEM_MAX_NAME_LEN as usize - 1);
        // SAFETY: `name` is not null (checked above), so by this function's
        // contract it is valid for ISHMEM_MAX_NAME_LEN bytes, of which n + 1
        // are written; `v` is a static string, apart from the caller's
        // buffer.
        unsafe {
            std::ptr::copy_nonoverlapping(v.as_ptr(), name as *mut u8, n);
            *name.add(n) = 0;
        }
    })
}

/// Writes the implemented specification version (§9.1.7).
#[no_mangle]
pub unsafe extern "C" fn ishmem_info_get_version(major: *mut c_int, minor: *mut c_int) {
    // SAFETY: the C caller passes `major` and `minor` each null or valid for
    // a write of one int (§9.1.7), which is `info_get_version`'s contract.
    unsafe { info_get_version("ishmem_info_get_version", major, minor) }
}

/// Writes the vendor string, at most ISHMEM_MAX_NAME_LEN bytes (§9.1.8).
#[no_mangle]
pub unsafe extern "C" fn ishmem_info_get_name(name: *mut c_char) {
    // SAFETY: the C caller passes `name` null or valid for writes of
    // ISHMEM_MAX_NAME_LEN bytes (§9.1.8), which is `info_get_name`'s
    // contract.
    unsafe { info_get_name("ishmem_info_get_name", name) }
}

/// Address of symmetric `dest` on `pe` for direct loads and stores, or
/// NULL when `pe` cannot be reached that way (§9.2.5).
#[no_mangle]
pub extern "C" fn ishmem_ptr(dest: *const c_void, pe: c_int) -> *mut c_void {
    guard("ishmem_ptr", || state("ishmem_ptr").ptr("ishmem_ptr", dest.cast(), pe).cast())
}

/// Collective symmetric allocation; barrier on exit (§9.3.1).
#[no_mangle]
pub extern "C" fn ishmem_malloc(size: usize) -> *mut c_void {
    guard("ishmem_malloc", || state("ishmem_malloc").malloc("ishmem_malloc", size).cast())
}

/// Collective zeroed allocation of `count * size` bytes (§9.3.3).
#[no_mangle]
pub extern "C" fn ishmem_calloc(count: usize, size: usize) -> *mut c_void {
    guard("ishmem_calloc", || state("ishmem_calloc").calloc("ishmem_calloc", count, size).cast())
}

/// Collective aligned allocation (§9.3.1).
#[no_mangle]
pub extern "C" fn ishmem_align(alignment: usize, size: usize) -> *mut c_void {
    guard("ishmem_align", || state("ishmem_align").align("ishmem_align", alignment, size).cast())
}

/// Collective free; barrier on entry (§9.3.1).
#[no_mangle]
pub extern "C" fn ishmem_free(ptr: *mut c_void) {
    guard("ishmem_free", || state("ishmem_free").free("ishmem_free", ptr.cast()))
}

/// Collective resize keeping the contents (§9.3.1).
#[no_mangle]
pub extern "C" fn ishmem_realloc(ptr: *mut c_void, size: usize) -> *mut c_void {
    guard("ishmem_realloc", || state("ishmem_realloc").realloc("ishmem_realloc", ptr.cast(), size).cast())
}

/// Orders puts and AMOs to each PE (§9.10.1).
#[no_mangle]
pub extern "C" fn ishmem_fence() {
    guard("ishmem_fence", || state("ishmem_fence").fence())
}

/// Completes all outstanding puts, AMOs and nbi operations (§9.10.2).
#[no_mangle]
pub extern "C" fn ishmem_quiet() {
    guard("ishmem_quiet", || state("ishmem_quiet").quiet())
}

/// quiet + synchronization of all PEs (§9.9.3).
#[no_mangle]
pub extern "C" fn ishmem_barrier_all() {
    guard("ishmem_barrier_all", || state("ishmem_barrier_all").barrier_all("ishmem_barrier_all"))
}

/// Synchronization of all PEs without completing operations (§9.9.5).
#[no_mangle]
pub extern "C" fn ishmem_sync_all() {
    guard("ishmem_sync_all", || state("ishmem_sync_all").sync_all("ishmem_sync_all"))
}

/// The state device code reads (heap base, peer table); valid until
/// finalize.
#[no_mangle]
pub extern "C" fn ishmemx_get_device_state() -> *const ishmemx_device_state_t {
    guard("ishmemx_get_device_state", || state("ishmemx_get_device_state").device_state() as *const _)
}

/// Comparison operators of wait_until and test (§9.11).
pub const ISHMEM_CMP_EQ: c_int = 1;
pub const ISHMEM_CMP_NE: c_int = 2;
pub const ISHMEM_CMP_GT: c_int = 3;
pub const ISHMEM_CMP_GE: c_int = 4;
pub const ISHMEM_CMP_LT: c_int = 5;
pub const ISHMEM_CMP_LE: c_int = 6;
/// Signal operators of put_signal (§9.8).
pub const ISHMEM_SIGNAL_SET: c_int = 0;
pub const ISHMEM_SIGNAL_ADD: c_int = 1;

const _: () = {
    assert!(ISHMEM_CMP_EQ == api::CMP_EQ && ISHMEM_CMP_NE == api::CMP_NE && ISHMEM_CMP_GT == api::CMP_GT);
    assert!(ISHMEM_CMP_GE == api::CMP_GE && ISHMEM_CMP_LT == api::CMP_LT && ISHMEM_CMP_LE == api::CMP_LE);
    assert!(ISHMEM_SIGNAL_SET == api::SIGNAL_SET && ISHMEM_SIGNAL_ADD == api::SIGNAL_ADD);
};

/// Atomically reads a local signal (§9.8.3).
#[no_mangle]
pub extern "C" fn ishmem_signal_fetch(sig_addr: *const u64) -> u64 {
    guard("ishmem_signal_fetch", || state("ishmem_signal_fetch").signal_fetch("ishmem_signal_fetch", sig_addr))
}

/// Waits until the local signal satisfies the comparison; returns its value
/// (§9.11.15).
#[no_mangle]
pub extern "C" fn ishmem_signal_wait_until(sig_addr: *mut u64, cmp: c_int, cmp_value: u64) -> u64 {
    let call = "ishmem_signal_wait_until";
    guard(call, || state(call).signal_wait_until(call, sig_addr, cmp, cmp_value))
}

/// Atomically adds `signal` to the signal at `sig_addr` on `pe`.
#[no_mangle]
pub extern "C" fn ishmemx_signal_add(sig_addr: *mut u64, signal: u64, pe: c_int) {
    let call = "ishmemx_signal_add";
    guard(call, || state(call).signal_update(call, sig_addr, signal, ISHMEM_SIGNAL_ADD, pe))
}

/// Atomically sets the signal at `sig_addr` on `pe` to `signal`.
#[no_mangle]
pub extern "C" fn ishmemx_signal_set(sig_addr: *mut u64, signal: u64, pe: c_int) {
    let call = "ishmemx_signal_set";
    guard(call, || state(call).signal_update(call, sig_addr, signal, ISHMEM_SIGNAL_SET, pe))
}

/// A team handle (§9.4): a small integer, the same on every member.
pub type ishmem_team_t = c_int;
/// All PEs.
pub const ISHMEM_TEAM_WORLD: ishmem_team_t = 0;
/// PEs that can load and store each other's symmetric heaps.
pub const ISHMEM_TEAM_SHARED: ishmem_team_t = 1;
/// PEs on this node.
pub const ISHMEMX_TEAM_NODE: ishmem_team_t = 2;
/// Not a team: what non-members get from a split.
pub const ISHMEM_TEAM_INVALID: ishmem_team_t = -1;
/// Bit of `config_mask` selecting `num_contexts`.
pub const ISHMEM_TEAM_NUM_CONTEXTS: c_long = 1;

const _: () = {
    assert!(ISHMEM_TEAM_WORLD == api::TEAM_WORLD && ISHMEM_TEAM_SHARED == api::TEAM_SHARED);
    assert!(ISHMEMX_TEAM_NODE == api::TEAM_NODE && ISHMEM_TEAM_INVALID == api::TEAM_INVALID);
};

/// Team creation options (§9.4.3).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ishmem_team_config_t {
    /// Number of contexts the team will create (recorded; see docs).
    pub num_contexts: c_int,
}

/// The `num_contexts` a split asks for: `config`'s when `mask` selects
/// it, else 0.
///
/// # Safety
/// `config` is null or valid for a read of one `ishmem_team_config_t`.
pub(crate) unsafe fn config_contexts(config: *const ishmem_team_config_t, mask: c_long) -> c_int {
    if !config.is_null() && mask & ISHMEM_TEAM_NUM_CONTEXTS != 0 {
        // SAFETY: not null (checked above), so valid for a read by this
        // function's contract.
        unsafe { (*config).num_contexts }
    } else {
        0
    }
}

/// This PE's number in `team`, or -1 for ISHMEM_TEAM_INVALID (§9.4.1).
#[no_mangle]
pub extern "C" fn ishmem_team_my_pe(team: ishmem_team_t) -> c_int {
    let call = "ishmem_team_my_pe";
    guard(call, || state(call).team(call, team).map_or(-1, |t| t.my_rank as c_int))
}

/// Number of PEs in `team`, or -1 for ISHMEM_TEAM_INVALID (§9.4.2).
#[no_mangle]
pub extern "C" fn ishmem_team_n_pes(team: ishmem_team_t) -> c_int {
    let call = "ishmem_team_n_pes";
    guard(call, || state(call).team(call, team).map_or(-1, |t| t.size as c_int))
}

/// `src_pe` of `src_team` as a PE number of `dest_team`, or -1 (§9.4.5).
#[no_mangle]
pub extern "C" fn ishmem_team_translate_pe(src_team: ishmem_team_t, src_pe: c_int, dest_team: ishmem_team_t) -> c_int {
    let call = "ishmem_team_translate_pe";
    guard(call, || state(call).team_translate_pe(call, src_team, src_pe, dest_team))
}

/// Collective over `parent`: a team of parent PEs `start + i * stride`,
/// `i < size` (stride may be negative, or 0 with size 1). Non-members get
/// ISHMEM_TEAM_INVALID. Returns 0 on success (§9.4.6).
#[no_mangle]
pub unsafe extern "C" fn ishmem_team_split_strided(
    parent: ishmem_team_t, start: c_int, stride: c_int, size: c_int, config: *const ishmem_team_config_t,
    config_mask: c_long, new_team: *mut ishmem_team_t,
) -> c_int {
    // SAFETY: the C caller passes `config` null or pointing to a team
    // configuration (§9.4.6: it is read only when `config_mask` selects a
    // field).
    let contexts = unsafe { config_contexts(config, config_mask) };
    // SAFETY: the C caller passes `new_team` valid for a write of one team
    // handle (§9.4.6); `split_strided` reports a null one.
    unsafe { split_strided("ishmem_team_split_strided", parent, start, stride, size, contexts, new_team) }
}

/// `team_split_strided` for the routine `call`.
///
/// # Safety
/// `new_team` is null (reported) or valid for a write of one `c_int`.
pub(crate) unsafe fn split_strided(
    call: &'static str, parent: c_int, start: c_int, stride: c_int, size: c_int, contexts: c_int, new_team: *mut c_int,
) -> c_int {
    guard(call, || {
        if new_team.is_null() {
            fatal(call, format_args!("new_team is a null pointer"))
        }
        let (rc, h) = state(call).team_split_strided(call, parent, start, stride, size, contexts);
        // SAFETY: not null (checked above), so valid for a write of one
        // c_int by this function's contract.
        unsafe { *new_team = h };
        rc
    })
}

/// Collective over `parent`: splits it as a grid of `xrange` columns into
/// row (x-axis) and column (y-axis) teams (§9.4.7).
#[no_mangle]
pub unsafe extern "C" fn ishmem_team_split_2d(
    parent: ishmem_team_t, xrange: c_int, xaxis_config: *const ishmem_team_config_t, xaxis_mask: c_long,
    xaxis_team: *mut ishmem_team_t, yaxis_config: *const ishmem_team_config_t, yaxis_mask: c_long,
    yaxis_team: *mut ishmem_team_t,
) -> c_int {
    // SAFETY: the C caller passes each axis configuration null or pointing
    // to a team configuration (§9.4.7: read only when its mask selects a
    // field).
    let contexts = unsafe { (config_contexts(xaxis_config, xaxis_mask), config_contexts(yaxis_config, yaxis_mask)) };
    // SAFETY: the C caller passes `xaxis_team` and `yaxis_team` each valid
    // for a write of one team handle (§9.4.7); `split_2d` reports a null
    // one.
    unsafe { split_2d("ishmem_team_split_2d", parent, xrange, contexts, xaxis_team, yaxis_team) }
}

/// `team_split_2d` for the routine `call`.
///
/// # Safety
/// `x` and `y` are each null (reported) or valid for a write of one
/// `c_int`.
pub(crate) unsafe fn split_2d(
    call: &'static str, parent: c_int, xrange: c_int, contexts: (c_int, c_int), x: *mut c_int, y: *mut c_int,
) -> c_int {
    guard(call, || {
        if x.is_null() || y.is_null() {
            fatal(call, format_args!("xaxis_team or yaxis_team is a null pointer"))
        }
        let (rc, xh, yh) = state(call).team_split_2d(call, parent, xrange, contexts);
        // SAFETY: neither is null (checked above), so each is valid for a
        // write of one c_int by this function's contract.
        unsafe {
            *x = xh;
            *y = yh;
        }
        rc
    })
}

/// Writes the team's configuration selected by `config_mask` (§9.4.4).
/// Returns non-zero for ISHMEM_TEAM_INVALID.
#[no_mangle]
pub unsafe extern "C" fn ishmem_team_get_config(
    team: ishmem_team_t, config_mask: c_long, config: *mut ishmem_team_config_t,
) -> c_int {
    // SAFETY: the C caller passes `config` valid for a write of one team
    // configuration (§9.4.4), whose first field is the c_int `num_contexts`
    // (`#[repr(C)]`); `get_config` reports a null one.
    unsafe { get_config("ishmem_team_get_config", team, config_mask, config as *mut c_int) }
}

/// `team_get_config` for the routine `call`: `num_contexts` is the
/// configuration's field of that name.
///
/// # Safety
/// `num_contexts` is null (reported) or valid for a write of one `c_int`.
pub(crate) unsafe fn get_config(call: &'static str, team: c_int, mask: c_long, num_contexts: *mut c_int) -> c_int {
    guard(call, || {
        if num_contexts.is_null() {
            fatal(call, format_args!("config is a null pointer"))
        }
        match state(call).team(call, team) {
            Some(t) => {
                if mask & ISHMEM_TEAM_NUM_CONTEXTS != 0 {
                    // SAFETY: not null (checked above), so valid for a
                    // write of one c_int by this function's contract.
                    unsafe { *num_contexts = t.num_contexts };
                }
                0
            }
            None => -1,
        }
    })
}

/// Collective over the team: destroys it; its slot can be reused (§9.4.9).
#[no_mangle]
pub extern "C" fn ishmem_team_destroy(team: ishmem_team_t) {
    let call = "ishmem_team_destroy";
    guard(call, || state(call).team_destroy(call, team))
}

/// Load/store address of `dest` on team PE `pe`, or NULL (§9.4.10).
#[no_mangle]
pub extern "C" fn ishmem_team_ptr(team: ishmem_team_t, dest: *const c_void, pe: c_int) -> *mut c_void {
    let call = "ishmem_team_ptr";
    guard(call, || state(call).team_ptr(call, team, dest.cast(), pe).cast())
}

/// Synchronizes the team's PEs; returns non-zero for ISHMEM_TEAM_INVALID
/// (§9.9.4).
#[no_mangle]
pub extern "C" fn ishmem_team_sync(team: ishmem_team_t) -> c_int {
    let call = "ishmem_team_sync";
    guard(call, || state(call).team_sync(call, team))
}

/// Host forms of the device library's group barriers, syncs, fences and
/// quiets (the typed and memory group forms are in typed.rs): a SYCL
/// program's kernels are also compiled for the host, where a thread is a
/// group of one, so each is the routine it is the group form of, under the
/// group form's name in errors.
macro_rules! host_group_forms {
    ($($name:ident => $method:ident $(($team:ident))?;)*) => {$(
        #[doc = concat!("`", stringify!($name), "` from a host thread (a group of one).")]
        #[no_mangle]
        pub extern "C" fn $name($($team: ishmem_team_t)?) $(-> host_group_forms!(@ret $team))? {
            const CALL: &str = stringify!($name);
            guard(CALL, || host_group_forms!(@call CALL $method $($team)?))
        }
    )*};
    (@ret $team:ident) => { c_int };
    (@call $call:ident quiet) => { state($call).quiet() };
    (@call $call:ident fence) => { state($call).fence() };
    (@call $call:ident $method:ident) => { state($call).$method($call) };
    (@call $call:ident $method:ident $team:ident) => { state($call).$method($call, $team) };
}
host_group_forms! {
    ishmemx_fence_work_group => fence;
    ishmemx_quiet_work_group => quiet;
    ishmemx_barrier_all_work_group => barrier_all;
    ishmemx_sync_all_work_group => sync_all;
    ishmemx_team_sync_work_group => team_sync(team);
    ishmemx_fence_sub_group => fence;
    ishmemx_quiet_sub_group => quiet;
    ishmemx_barrier_all_sub_group => barrier_all;
    ishmemx_sync_all_sub_group => sync_all;
}

/// Thread levels (§9.2): only one thread calls the library.
pub const ISHMEM_THREAD_SINGLE: c_int = 0;
/// Only the thread that initialized the library calls it.
pub const ISHMEM_THREAD_FUNNELED: c_int = 1;
/// Any thread, one at a time.
pub const ISHMEM_THREAD_SERIALIZED: c_int = 2;
/// Any thread, concurrently.
pub const ISHMEM_THREAD_MULTIPLE: c_int = 3;
/// `malloc_with_hints` hints (§9.3.2): the block is used by remote AMOs.
pub const ISHMEM_MALLOC_ATOMICS_REMOTE: c_long = 1;
/// The block holds signals for put_signal.
pub const ISHMEM_MALLOC_SIGNAL_REMOTE: c_long = 2;

static THREAD_LEVEL: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(ISHMEM_THREAD_MULTIPLE);

/// `init_thread` for the routine `call`.
///
/// # Safety
/// `provided` is null (nothing written) or valid for a write of one
/// `c_int`.
pub(crate) unsafe fn init_thread(call: &'static str, requested: c_int, provided: *mut c_int) -> c_int {
    guard(call, || {
        if !(ISHMEM_THREAD_SINGLE..=ISHMEM_THREAD_MULTIPLE).contains(&requested) {
            fatal(call, format_args!("requested thread level {requested} is not one of the THREAD_* constants (0..3)"))
        }
        init_opts_or_die(call, &api::InitOptions { requested_thread: requested, ..Default::default() });
        // Every level is supported on one node (RMA, AMO and wait paths take
        // no locks, so MULTIPLE is also the light path). Across nodes, an
        // application that initialized MPI below MPI_THREAD_MULTIPLE limits
        // us to the thread that initialized (FUNNELED).
        let level = requested.min(state(call).max_thread_level());
        THREAD_LEVEL.store(level, std::sync::atomic::Ordering::Relaxed);
        if !provided.is_null() {
            // SAFETY: not null (checked above), so valid for a write of one
            // c_int by this function's contract.
            unsafe { *provided = level };
        }
        0
    })
}

/// `query_thread` for the routine `call`.
///
/// # Safety
/// `provided` is null (reported) or valid for a write of one `c_int`.
pub(crate) unsafe fn query_thread(call: &'static str, provided: *mut c_int) {
    guard(call, || {
        state(call);
        if provided.is_null() {
            fatal(call, format_args!("provided is a null pointer"))
        }
        let st = state(call);
        let level = THREAD_LEVEL.load(std::sync::atomic::Ordering::Relaxed).min(st.max_thread_level());
        // SAFETY: not null (checked above), so valid for a write of one
        // c_int by this function's contract.
        unsafe { *provided = level };
    })
}

/// Initializes the library at a thread level; `*provided` gets the level
/// provided: the requested one, except across nodes when the application
/// initialized MPI below MPI_THREAD_MULTIPLE (then at most FUNNELED).
/// Returns 0 (§9.1.2).
#[no_mangle]
pub unsafe extern "C" fn ishmem_init_thread(requested: c_int, provided: *mut c_int) -> c_int {
    // SAFETY: the C caller passes `provided` null or valid for a write of
    // one int (§9.1.2), which is `init_thread`'s contract.
    unsafe { init_thread("ishmem_init_thread", requested, provided) }
}

/// The thread level the library was initialized with (§9.1.3).
#[no_mangle]
pub unsafe extern "C" fn ishmem_query_thread(provided: *mut c_int) {
    // SAFETY: the C caller passes `provided` null or valid for a write of
    // one int (§9.1.3), which is `query_thread`'s contract.
    unsafe { query_thread("ishmem_query_thread", provided) }
}

/// Ends every PE of the job with `status` (§9.1.6).
#[no_mangle]
pub extern "C" fn ishmem_global_exit(status: c_int) {
    guard("ishmem_global_exit", || api::global_exit(status))
}

/// 1 when `pe` is a PE of the job this PE can communicate with (§9.2.3).
#[no_mangle]
pub extern "C" fn ishmem_pe_accessible(pe: c_int) -> c_int {
    let call = "ishmem_pe_accessible";
    guard(call, || c_int::from(pe >= 0 && (pe as usize) < state(call).n_pes))
}

/// 1 when `addr` is symmetric and `pe` can be reached (§9.2.4).
#[no_mangle]
pub extern "C" fn ishmem_addr_accessible(addr: *const c_void, pe: c_int) -> c_int {
    let call = "ishmem_addr_accessible";
    guard(call, || {
        let st = state(call);
        c_int::from(pe >= 0 && (pe as usize) < st.n_pes && st.is_symmetric(addr.cast()))
    })
}

/// `malloc` with usage hints (§9.3.2); the hints do not change placement
/// here (every block supports every use).
#[no_mangle]
pub extern "C" fn ishmem_malloc_with_hints(size: usize, hints: c_long) -> *mut c_void {
    let call = "ishmem_malloc_with_hints";
    guard(call, || {
        let known = ISHMEM_MALLOC_ATOMICS_REMOTE | ISHMEM_MALLOC_SIGNAL_REMOTE;
        if hints & !known != 0 {
            api::warn(format_args!("{call}: unknown hint bits {:#x} are ignored", hints & !known));
        }
        state(call).malloc(call, size).cast()
    })
}

/// Acquires the distributed lock `lock` (a symmetric long initialized to 0;
/// heap or global), first come first served (§9.12.1).
#[no_mangle]
pub extern "C" fn ishmemx_set_lock(lock: *mut c_long) {
    guard("ishmemx_set_lock", || state("ishmemx_set_lock").set_lock("ishmemx_set_lock", lock.cast()))
}

/// Releases the lock after completing this PE's operations (§9.12.2).
#[no_mangle]
pub extern "C" fn ishmemx_clear_lock(lock: *mut c_long) {
    guard("ishmemx_clear_lock", || state("ishmemx_clear_lock").clear_lock("ishmemx_clear_lock", lock.cast()))
}

/// Takes the lock if free: 0 when taken, 1 when it was held (§9.12.3).
#[no_mangle]
pub extern "C" fn ishmemx_test_lock(lock: *mut c_long) -> c_int {
    guard("ishmemx_test_lock", || state("ishmemx_test_lock").test_lock("ishmemx_test_lock", lock.cast()))
}

// ----- device backend: native handles, programs, device queues ----------

use ishmem_runtime::api::codes::{COLL_ALLTOALL, COLL_BROADCAST, COLL_COLLECT, COLL_FCOLLECT, COLL_TEAM_SYNC};
use ishmem_runtime::api::{Native, QueueColl, QueueOp};

/// This PE's OpenCL context (a `cl_context`), opened on first use together
/// with the device library; the OpenCL runtime is loaded only then.
#[no_mangle]
pub extern "C" fn ishmemx_cl_context() -> *mut c_void {
    const CALL: &str = "ishmemx_cl_context";
    guard(CALL, || state(CALL).device_native(CALL, Native::Context))
}

/// This PE's OpenCL device (a `cl_device_id`).
#[no_mangle]
pub extern "C" fn ishmemx_cl_device() -> *mut c_void {
    const CALL: &str = "ishmemx_cl_device";
    guard(CALL, || state(CALL).device_native(CALL, Native::Device))
}

/// This PE's in-order OpenCL queue (a `cl_command_queue`).
#[no_mangle]
pub extern "C" fn ishmemx_cl_queue() -> *mut c_void {
    const CALL: &str = "ishmemx_cl_queue";
    guard(CALL, || state(CALL).device_native(CALL, Native::Queue))
}

/// Compiles a program given as SPIR-V, links it with the device library
/// (`ishmem_device.spv`) and installs this PE's device state in it; returns
/// the linked `cl_program`, whose kernels may call the device API
/// (`ishmem_device.h`). Errors (compile or link logs) stop the job.
///
/// # Safety
/// `spirv` points to `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn ishmemx_cl_link_program(spirv: *const c_void, len: usize) -> *mut c_void {
    const CALL: &str = "ishmemx_cl_link_program";
    guard(CALL, || {
        if spirv.is_null() || len == 0 {
            fatal(CALL, format_args!("spirv is empty or a null pointer"))
        }
        // SAFETY: the caller's contract.
        let bytes = unsafe { std::slice::from_raw_parts(spirv as *const u8, len) };
        state(CALL).link_device_program(CALL, bytes)
    })
}

/// As `ishmemx_cl_link_program`, in another OpenCL context on this PE's
/// device: `context` and `device` (a `cl_context` and `cl_device_id`, for
/// example a SYCL runtime's; the `libishmem_sycl_cl` shim calls this for
/// the programs such a runtime builds). Returns the linked `cl_program`, in
/// `context`; errors stop the job.
///
/// # Safety
/// `spirv` points to `len` readable bytes; `context` and `device` are live
/// OpenCL handles of the same runtime.
#[no_mangle]
pub unsafe extern "C" fn ishmemx_cl_link_program_in(
    context: *mut c_void, device: *mut c_void, spirv: *const c_void, len: usize,
) -> *mut c_void {
    const CALL: &str = "ishmemx_cl_link_program_in";
    guard(CALL, || {
        if spirv.is_null() || len == 0 {
            fatal(CALL, format_args!("spirv is empty or a null pointer"))
        }
        // SAFETY: the caller's contract.
        let bytes = unsafe { std::slice::from_raw_parts(spirv as *const u8, len) };
        state(CALL).link_device_program_in(CALL, bytes, context, device)
    })
}

/// The state of a PE whose device is `kind`; any other device stops the
/// job naming both, then `hint` (what to do instead).
fn state_of_kind(call: &'static str, kind: DeviceKind, hint: &str) -> &'static api::State {
    let st = state(call);
    if st.device_kind() != kind {
        fatal(call, format_args!("this PE's device is {}, not {}{hint}", st.device_name(), kind.name()))
    }
    st
}

/// The state of a PE whose device is Level Zero (`ISHMEM_DEVICE=ze`).
fn ze_state(call: &'static str) -> &'static api::State {
    state_of_kind(call, DeviceKind::Ze, " (set ISHMEM_DEVICE=ze)")
}

/// The state of a PE whose device is CUDA, for the `_on_stream` routines.
fn cuda_state(call: &'static str) -> &'static api::State {
    state_of_kind(
        call,
        DeviceKind::Cuda,
        ": the _on_stream routines take CUDA streams (the _on_queue routines take other devices' queues)",
    )
}

/// With `ISHMEM_DEVICE=ze`: this PE's Level Zero context (a
/// `ze_context_handle_t`).
#[no_mangle]
pub extern "C" fn ishmemx_ze_context() -> *mut c_void {
    const CALL: &str = "ishmemx_ze_context";
    guard(CALL, || ze_state(CALL).device_native(CALL, Native::Context))
}

/// With `ISHMEM_DEVICE=ze`: this PE's GPU or tile (a `ze_device_handle_t`).
#[no_mangle]
pub extern "C" fn ishmemx_ze_device() -> *mut c_void {
    const CALL: &str = "ishmemx_ze_device";
    guard(CALL, || ze_state(CALL).device_native(CALL, Native::Device))
}

/// With `ISHMEM_DEVICE=ze`: this PE's in-order immediate command list on
/// its GPU's compute engine (a `ze_command_list_handle_t`), for the program's
/// kernels and the `_on_queue` routines (which take any immediate command
/// list of this context and device).
#[no_mangle]
pub extern "C" fn ishmemx_ze_command_list() -> *mut c_void {
    const CALL: &str = "ishmemx_ze_command_list";
    guard(CALL, || ze_state(CALL).device_native(CALL, Native::Queue))
}

/// With `ISHMEM_DEVICE=ze`: creates a module from SPIR-V and links it
/// dynamically with the device library (`ishmem_device.spv`), whose state
/// is this PE's; returns the `ze_module_handle_t`, whose kernels may call the
/// device API. Errors (build or link logs) stop the job.
///
/// # Safety
/// `spirv` points to `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn ishmemx_ze_link_module(spirv: *const c_void, len: usize) -> *mut c_void {
    const CALL: &str = "ishmemx_ze_link_module";
    guard(CALL, || {
        if spirv.is_null() || len == 0 {
            fatal(CALL, format_args!("spirv is empty or a null pointer"))
        }
        // SAFETY: the caller's contract.
        let bytes = unsafe { std::slice::from_raw_parts(spirv as *const u8, len) };
        ze_state(CALL).link_device_program(CALL, bytes)
    })
}

/// With `ISHMEM_DEVICE=ze`: waits for `num` events returned by the
/// `_on_queue` routines and gives them back to the library (they may not be
/// used afterwards).
///
/// # Safety
/// `events` points to `num` events when `num > 0`.
#[no_mangle]
pub unsafe extern "C" fn ishmemx_ze_wait_events(events: *const *mut c_void, num: u32) {
    const CALL: &str = "ishmemx_ze_wait_events";
    guard(CALL, || {
        if num == 0 {
            return;
        }
        if events.is_null() {
            fatal(CALL, format_args!("events is a null pointer with num {num}"))
        }
        // SAFETY: the caller's contract.
        let ev = unsafe { std::slice::from_raw_parts(events, num as usize) };
        ze_state(CALL).wait_device_events(CALL, ev)
    })
}

/// Enqueues `op` on `queue` after `deps` (the C calling convention of the
/// `_on_queue` routines).
///
/// # Safety
/// `deps` points to `num_deps` events when `num_deps > 0`.
unsafe fn on_queue(
    call: &'static str, op: QueueOp, queue: *mut c_void, num_deps: u32, deps: *const *mut c_void,
) -> *mut c_void {
    guard(call, || {
        if num_deps > 0 && deps.is_null() {
            fatal(call, format_args!("deps is a null pointer with num_deps {num_deps}"))
        }
        let deps = if num_deps == 0 {
            &[][..]
        } else {
            // SAFETY: the caller's contract.
            unsafe { std::slice::from_raw_parts(deps, num_deps as usize) }
        };
        state(call).on_queue(call, op, queue, deps)
    })
}

/// Enqueues a put (`put == true`) or get of `nbytes` on `queue` after
/// `deps`, for `ishmemx_putmem_on_queue`/`getmem` and their typed forms
/// (`call` names the routine in errors).
///
/// # Safety
/// As [`on_queue`].
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn rma_on_queue(
    call: &'static str, put: bool, dest: *mut c_void, source: *const c_void, nbytes: usize, pe: c_int,
    queue: *mut c_void, num_deps: u32, deps: *const *mut c_void,
) -> *mut c_void {
    let op = if put { QueueOp::Put { dest, source, nbytes, pe } } else { QueueOp::Get { dest, source, nbytes, pe } };
    // SAFETY: the caller's contract.
    unsafe { on_queue(call, op, queue, num_deps, deps) }
}

/// Enqueues a putmem on the OpenCL `queue` (a `cl_command_queue` of this
/// PE's context) after the `num_deps` events in `deps`; returns its
/// `cl_event` (release it with clReleaseEvent). The put is complete when the
/// event is.
///
/// # Safety
/// `deps` points to `num_deps` events; `source` stays valid until the
/// event completes.
#[no_mangle]
pub unsafe extern "C" fn ishmemx_putmem_on_queue(
    dest: *mut c_void, source: *const c_void, nbytes: usize, pe: c_int, queue: *mut c_void, num_deps: u32,
    deps: *const *mut c_void,
) -> *mut c_void {
    // SAFETY: the caller's contract.
    unsafe { rma_on_queue("ishmemx_putmem_on_queue", true, dest, source, nbytes, pe, queue, num_deps, deps) }
}

/// Enqueues a getmem on `queue` after `deps`; returns its `cl_event`.
///
/// # Safety
/// `deps` points to `num_deps` events; `dest` stays valid until the event
/// completes.
#[no_mangle]
pub unsafe extern "C" fn ishmemx_getmem_on_queue(
    dest: *mut c_void, source: *const c_void, nbytes: usize, pe: c_int, queue: *mut c_void, num_deps: u32,
    deps: *const *mut c_void,
) -> *mut c_void {
    // SAFETY: the caller's contract.
    unsafe { rma_on_queue("ishmemx_getmem_on_queue", false, dest, source, nbytes, pe, queue, num_deps, deps) }
}

/// Enqueues a barrier_all on `queue` after `deps`; returns its `cl_event`.
///
/// # Safety
/// `deps` points to `num_deps` events.
#[no_mangle]
pub unsafe extern "C" fn ishmemx_barrier_all_on_queue(
    queue: *mut c_void, num_deps: u32, deps: *const *mut c_void,
) -> *mut c_void {
    // SAFETY: the caller's contract.
    unsafe { on_queue("ishmemx_barrier_all_on_queue", QueueOp::BarrierAll, queue, num_deps, deps) }
}

/// Enqueues a quiet on `queue` after `deps`; returns its `cl_event`.
///
/// # Safety
/// `deps` points to `num_deps` events.
#[no_mangle]
pub unsafe extern "C" fn ishmemx_quiet_on_queue(
    queue: *mut c_void, num_deps: u32, deps: *const *mut c_void,
) -> *mut c_void {
    // SAFETY: the caller's contract.
    unsafe { on_queue("ishmemx_quiet_on_queue", QueueOp::Quiet, queue, num_deps, deps) }
}

/// Enqueues a putmem_signal on `queue` after `deps`: the data, then the
/// signal update (`sig_op`: ISHMEM_SIGNAL_SET or ISHMEM_SIGNAL_ADD) at
/// `sig_addr` on `pe`; returns its event (a `cl_event` on the cpu device).
///
/// # Safety
/// `deps` points to `num_deps` events; `source` stays valid until the
/// event completes.
#[no_mangle]
pub unsafe extern "C" fn ishmemx_putmem_signal_on_queue(
    dest: *mut c_void, source: *const c_void, nbytes: usize, sig_addr: *mut u64, signal: u64, sig_op: c_int, pe: c_int,
    queue: *mut c_void, num_deps: u32, deps: *const *mut c_void,
) -> *mut c_void {
    let op = QueueOp::PutSignal { dest, source, nbytes, sig_addr, signal, sig_op, pe };
    // SAFETY: the caller's contract.
    unsafe { on_queue("ishmemx_putmem_signal_on_queue", op, queue, num_deps, deps) }
}

/// Enqueues a wait until this PE's `*sig_addr CMP cmp_value` on `queue`
/// after `deps`: later operations on the queue start when it holds.
///
/// # Safety
/// `deps` points to `num_deps` events.
#[no_mangle]
pub unsafe extern "C" fn ishmemx_signal_wait_until_on_queue(
    sig_addr: *mut u64, cmp: c_int, cmp_value: u64, queue: *mut c_void, num_deps: u32, deps: *const *mut c_void,
) -> *mut c_void {
    let op = QueueOp::SignalWaitUntil { sig_addr, cmp, cmp_value };
    // SAFETY: the caller's contract.
    unsafe { on_queue("ishmemx_signal_wait_until_on_queue", op, queue, num_deps, deps) }
}

/// Enqueues a sync_all on `queue` after `deps`; returns its event.
///
/// # Safety
/// `deps` points to `num_deps` events.
#[no_mangle]
pub unsafe extern "C" fn ishmemx_sync_all_on_queue(
    queue: *mut c_void, num_deps: u32, deps: *const *mut c_void,
) -> *mut c_void {
    // SAFETY: the caller's contract.
    unsafe { on_queue("ishmemx_sync_all_on_queue", QueueOp::SyncAll, queue, num_deps, deps) }
}

// ----- stream-ordered operations (the cuda device) -------------------------

/// Launches `op` on the CUDA `stream` of a PE whose device is cuda: it runs
/// after the work the program put on the stream before, and the stream's
/// later work runs after it.
fn on_stream(call: &'static str, op: QueueOp, stream: *mut c_void) {
    guard(call, || {
        cuda_state(call).on_queue(call, op, stream, &[]);
    })
}

/// Puts `nbytes` from `source` to `dest` on `pe`, ordered on the CUDA
/// `stream` (a `cudaStream_t`; 0 is the default stream): complete when the
/// stream's later work starts.
#[no_mangle]
pub extern "C" fn ishmemx_putmem_on_stream(
    dest: *mut c_void, source: *const c_void, nbytes: usize, pe: c_int, stream: *mut c_void,
) {
    on_stream("ishmemx_putmem_on_stream", QueueOp::Put { dest, source, nbytes, pe }, stream)
}

/// Gets `nbytes` from `source` on `pe` into `dest`, ordered on `stream`.
#[no_mangle]
pub extern "C" fn ishmemx_getmem_on_stream(
    dest: *mut c_void, source: *const c_void, nbytes: usize, pe: c_int, stream: *mut c_void,
) {
    on_stream("ishmemx_getmem_on_stream", QueueOp::Get { dest, source, nbytes, pe }, stream)
}

/// The non-blocking put on `stream`. It is launched as the blocking one
/// (complete before the stream's next work), which the nbi semantics allow.
#[no_mangle]
pub extern "C" fn ishmemx_putmem_nbi_on_stream(
    dest: *mut c_void, source: *const c_void, nbytes: usize, pe: c_int, stream: *mut c_void,
) {
    on_stream("ishmemx_putmem_nbi_on_stream", QueueOp::Put { dest, source, nbytes, pe }, stream)
}

/// The non-blocking get on `stream` (launched as the blocking one).
#[no_mangle]
pub extern "C" fn ishmemx_getmem_nbi_on_stream(
    dest: *mut c_void, source: *const c_void, nbytes: usize, pe: c_int, stream: *mut c_void,
) {
    on_stream("ishmemx_getmem_nbi_on_stream", QueueOp::Get { dest, source, nbytes, pe }, stream)
}

/// putmem_signal ordered on `stream`: the data, then the signal update.
#[no_mangle]
pub extern "C" fn ishmemx_putmem_signal_on_stream(
    dest: *mut c_void, source: *const c_void, nbytes: usize, sig_addr: *mut u64, signal: u64, sig_op: c_int, pe: c_int,
    stream: *mut c_void,
) {
    let op = QueueOp::PutSignal { dest, source, nbytes, sig_addr, signal, sig_op, pe };
    on_stream("ishmemx_putmem_signal_on_stream", op, stream)
}

/// The non-blocking putmem_signal on `stream` (launched as the blocking one).
#[no_mangle]
pub extern "C" fn ishmemx_putmem_signal_nbi_on_stream(
    dest: *mut c_void, source: *const c_void, nbytes: usize, sig_addr: *mut u64, signal: u64, sig_op: c_int, pe: c_int,
    stream: *mut c_void,
) {
    let op = QueueOp::PutSignal { dest, source, nbytes, sig_addr, signal, sig_op, pe };
    on_stream("ishmemx_putmem_signal_nbi_on_stream", op, stream)
}

/// Holds `stream` until this PE's `*sig_addr CMP cmp_value`.
#[no_mangle]
pub extern "C" fn ishmemx_signal_wait_until_on_stream(
    sig_addr: *mut u64, cmp: c_int, cmp_value: u64, stream: *mut c_void,
) {
    on_stream("ishmemx_signal_wait_until_on_stream", QueueOp::SignalWaitUntil { sig_addr, cmp, cmp_value }, stream)
}

/// quiet ordered on `stream`.
#[no_mangle]
pub extern "C" fn ishmemx_quiet_on_stream(stream: *mut c_void) {
    on_stream("ishmemx_quiet_on_stream", QueueOp::Quiet, stream)
}

/// barrier_all ordered on `stream`: every PE's stream reaches it.
#[no_mangle]
pub extern "C" fn ishmemx_barrier_all_on_stream(stream: *mut c_void) {
    on_stream("ishmemx_barrier_all_on_stream", QueueOp::BarrierAll, stream)
}

/// sync_all ordered on `stream`.
#[no_mangle]
pub extern "C" fn ishmemx_sync_all_on_stream(stream: *mut c_void) {
    on_stream("ishmemx_sync_all_on_stream", QueueOp::SyncAll, stream)
}

/// Launches collective `c` on `stream` (the cuda device only); 0, or -1
/// for an invalid team (nothing launched).
pub(crate) fn coll_on_stream(call: &'static str, c: QueueColl, stream: *mut c_void) -> c_int {
    guard(call, || cuda_state(call).coll_on_queue(call, c, stream))
}

fn mem_coll(kind: u32, team: c_int, dest: *mut c_void, source: *const c_void, nelems: usize, root: c_int) -> QueueColl {
    QueueColl { kind, team, dest, source, nelems, elem: 1, root, dtype: 0, rop: 0 }
}

/// team_sync of `team` ordered on the CUDA `stream`: every member's stream
/// reaches it before any goes on. 0, or non-zero for an invalid team.
#[no_mangle]
pub extern "C" fn ishmemx_team_sync_on_stream(team: c_int, stream: *mut c_void) -> c_int {
    let c = mem_coll(COLL_TEAM_SYNC, team, std::ptr::null_mut(), std::ptr::null(), 0, 0);
    coll_on_stream("ishmemx_team_sync_on_stream", c, stream)
}

/// broadcastmem ordered on `stream`: `nelems` bytes of `source` on team
/// PE `PE_root` to `dest` on every member, complete on this PE when the
/// stream's later work starts. 0, or non-zero for an invalid team.
#[no_mangle]
#[allow(non_snake_case)]
pub extern "C" fn ishmemx_broadcastmem_on_stream(
    team: c_int, dest: *mut c_void, source: *const c_void, nelems: usize, PE_root: c_int, stream: *mut c_void,
) -> c_int {
    let c = mem_coll(COLL_BROADCAST, team, dest, source, nelems, PE_root);
    coll_on_stream("ishmemx_broadcastmem_on_stream", c, stream)
}

/// collectmem ordered on `stream` (`nelems` bytes from this member).
#[no_mangle]
pub extern "C" fn ishmemx_collectmem_on_stream(
    team: c_int, dest: *mut c_void, source: *const c_void, nelems: usize, stream: *mut c_void,
) -> c_int {
    coll_on_stream("ishmemx_collectmem_on_stream", mem_coll(COLL_COLLECT, team, dest, source, nelems, 0), stream)
}

/// fcollectmem ordered on `stream` (`nelems` bytes from every member).
#[no_mangle]
pub extern "C" fn ishmemx_fcollectmem_on_stream(
    team: c_int, dest: *mut c_void, source: *const c_void, nelems: usize, stream: *mut c_void,
) -> c_int {
    coll_on_stream("ishmemx_fcollectmem_on_stream", mem_coll(COLL_FCOLLECT, team, dest, source, nelems, 0), stream)
}

/// alltoallmem ordered on `stream` (`nelems`-byte blocks).
#[no_mangle]
pub extern "C" fn ishmemx_alltoallmem_on_stream(
    team: c_int, dest: *mut c_void, source: *const c_void, nelems: usize, stream: *mut c_void,
) -> c_int {
    coll_on_stream("ishmemx_alltoallmem_on_stream", mem_coll(COLL_ALLTOALL, team, dest, source, nelems, 0), stream)
}

// ----- the CUDA device library's registration ----------------------------

pub use ishmem_runtime::api::ishmemx_cuda_device_library_t;

/// Called by the CUDA device library (`libishmem_device.a`) from a
/// constructor of the program that links it, before `main`: tells the
/// runtime how to install each PE's device state into the program's device
/// code. Not for programs to call.
///
/// # Safety
/// `lib` points to a static description that lives until exit.
#[no_mangle]
pub unsafe extern "C" fn ishmemx_cuda_register_device_library(lib: *const ishmemx_cuda_device_library_t) {
    const CALL: &str = "ishmemx_cuda_register_device_library";
    guard(CALL, || {
        // SAFETY: the caller's contract.
        let Some(lib) = (unsafe { lib.as_ref() }) else { fatal(CALL, format_args!("lib is a null pointer")) };
        if let Err(e) = api::register_library(lib) {
            fatal(CALL, format_args!("{e}"))
        }
    })
}
