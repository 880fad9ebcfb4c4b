//! Non-typed routines under OpenSHMEM 1.5 names. cbindgen reads this file to
//! write `include/shmem/shmem_api.h`. Each forwards to the same core call as
//! its `ishmem_` twin, passing its own name for error messages.

use crate::guard;
use crate::plain::{info_get_name, info_get_version, init_or_die};
use ishmem_profiling::profiling_name;
use ishmem_runtime::api::{self, state};
use std::ffi::{c_char, c_int, c_long, c_void};

/// Major version of the OpenSHMEM specification implemented.
pub const SHMEM_MAJOR_VERSION: c_int = 1;
/// Minor version of the OpenSHMEM specification implemented.
pub const SHMEM_MINOR_VERSION: c_int = 5;
/// Size of the buffer `shmem_info_get_name` writes, terminator included.
pub const SHMEM_MAX_NAME_LEN: c_int = 256;

const _: () = assert!(
    SHMEM_MAJOR_VERSION == api::SPEC_MAJOR
        && SHMEM_MINOR_VERSION == api::SPEC_MINOR
        && SHMEM_MAX_NAME_LEN == crate::plain::ISHMEM_MAX_NAME_LEN
);

/// Initializes the library; collective (§9.1.1).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_init() {
    guard("shmem_init", || init_or_die("shmem_init"))
}

/// Completes all operations and releases resources; collective (§9.1.5).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_finalize() {
    guard("shmem_finalize", api::finalize)
}

/// This PE's number (§9.1.2).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_my_pe() -> c_int {
    guard("shmem_my_pe", || state("shmem_my_pe").my_pe as c_int)
}

/// Number of PEs (§9.1.3).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_n_pes() -> c_int {
    guard("shmem_n_pes", || state("shmem_n_pes").n_pes as c_int)
}

/// Writes the implemented specification version (§9.1.7).
#[profiling_name]
#[no_mangle]
pub unsafe extern "C" fn shmem_info_get_version(major: *mut c_int, minor: *mut c_int) {
    // SAFETY: the C caller passes `major` and `minor` each null or valid for
    // a write of one int (§9.1.7), which is `info_get_version`'s contract.
    unsafe { info_get_version("shmem_info_get_version", major, minor) }
}

/// Writes the vendor string (§9.1.8).
#[profiling_name]
#[no_mangle]
pub unsafe extern "C" fn shmem_info_get_name(name: *mut c_char) {
    // SAFETY: the C caller passes `name` null or valid for writes of
    // SHMEM_MAX_NAME_LEN (= ISHMEM_MAX_NAME_LEN) bytes (§9.1.8), which is
    // `info_get_name`'s contract.
    unsafe { info_get_name("shmem_info_get_name", name) }
}

/// Profiling control (OpenSHMEM 1.5 §10.1): `void shmem_pcontrol(const int
/// level, ...)`. It exists for profiling libraries that intercept it (level
/// 0 disables profiling, 1 is the default, 2 asks for more detail); the
/// library itself has nothing to profile and ignores it, as the
/// specification allows. Defined without the C variadic part, which it never
/// reads: on x86-64 and AArch64 Linux a variadic call passes its named
/// arguments exactly as a plain call does.
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_pcontrol(level: c_int) {
    let _ = level;
}

/// Load/store address of symmetric `dest` on `pe`, or NULL (§9.2.5).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_ptr(dest: *const c_void, pe: c_int) -> *mut c_void {
    guard("shmem_ptr", || state("shmem_ptr").ptr("shmem_ptr", dest.cast(), pe).cast())
}

/// Collective symmetric allocation (§9.3.1).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_malloc(size: usize) -> *mut c_void {
    guard("shmem_malloc", || state("shmem_malloc").malloc("shmem_malloc", size).cast())
}

/// Collective zeroed allocation (§9.3.3).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_calloc(count: usize, size: usize) -> *mut c_void {
    guard("shmem_calloc", || state("shmem_calloc").calloc("shmem_calloc", count, size).cast())
}

/// Collective aligned allocation (§9.3.1).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_align(alignment: usize, size: usize) -> *mut c_void {
    guard("shmem_align", || state("shmem_align").align("shmem_align", alignment, size).cast())
}

/// Collective free (§9.3.1).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_free(ptr: *mut c_void) {
    guard("shmem_free", || state("shmem_free").free("shmem_free", ptr.cast()))
}

/// Collective resize (§9.3.1).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_realloc(ptr: *mut c_void, size: usize) -> *mut c_void {
    guard("shmem_realloc", || state("shmem_realloc").realloc("shmem_realloc", ptr.cast(), size).cast())
}

/// Orders puts and AMOs to each PE (§9.10.1).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_fence() {
    guard("shmem_fence", || state("shmem_fence").fence())
}

/// Completes all outstanding operations (§9.10.2).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_quiet() {
    guard("shmem_quiet", || state("shmem_quiet").quiet())
}

/// quiet + synchronization of all PEs (§9.9.3).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_barrier_all() {
    guard("shmem_barrier_all", || state("shmem_barrier_all").barrier_all("shmem_barrier_all"))
}

/// Synchronization of all PEs (§9.9.5).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_sync_all() {
    guard("shmem_sync_all", || state("shmem_sync_all").sync_all("shmem_sync_all"))
}

/// Comparison operators of wait_until and test (§9.11).
pub const SHMEM_CMP_EQ: c_int = 1;
pub const SHMEM_CMP_NE: c_int = 2;
pub const SHMEM_CMP_GT: c_int = 3;
pub const SHMEM_CMP_GE: c_int = 4;
pub const SHMEM_CMP_LT: c_int = 5;
pub const SHMEM_CMP_LE: c_int = 6;
/// Signal operators of put_signal (§9.8).
pub const SHMEM_SIGNAL_SET: c_int = 0;
pub const SHMEM_SIGNAL_ADD: c_int = 1;

const _: () = {
    use crate::plain as i;
    assert!(SHMEM_CMP_EQ == i::ISHMEM_CMP_EQ && SHMEM_CMP_NE == i::ISHMEM_CMP_NE && SHMEM_CMP_GT == i::ISHMEM_CMP_GT);
    assert!(SHMEM_CMP_GE == i::ISHMEM_CMP_GE && SHMEM_CMP_LT == i::ISHMEM_CMP_LT && SHMEM_CMP_LE == i::ISHMEM_CMP_LE);
    assert!(SHMEM_SIGNAL_SET == i::ISHMEM_SIGNAL_SET && SHMEM_SIGNAL_ADD == i::ISHMEM_SIGNAL_ADD);
};

/// Atomically reads a local signal (§9.8.3).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_signal_fetch(sig_addr: *const u64) -> u64 {
    guard("shmem_signal_fetch", || state("shmem_signal_fetch").signal_fetch("shmem_signal_fetch", sig_addr))
}

/// Waits until the local signal satisfies the comparison (§9.11.15).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_signal_wait_until(sig_addr: *mut u64, cmp: c_int, cmp_value: u64) -> u64 {
    let call = "shmem_signal_wait_until";
    guard(call, || state(call).signal_wait_until(call, sig_addr, cmp, cmp_value))
}

/// Atomically adds to a remote signal (OpenSHMEM 1.6).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_signal_add(sig_addr: *mut u64, signal: u64, pe: c_int) {
    let call = "shmem_signal_add";
    guard(call, || state(call).signal_update(call, sig_addr, signal, SHMEM_SIGNAL_ADD, pe))
}

/// Atomically sets a remote signal (OpenSHMEM 1.6).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_signal_set(sig_addr: *mut u64, signal: u64, pe: c_int) {
    let call = "shmem_signal_set";
    guard(call, || state(call).signal_update(call, sig_addr, signal, SHMEM_SIGNAL_SET, pe))
}

/// A team handle (§9.4).
pub type shmem_team_t = c_int;
pub const SHMEM_TEAM_WORLD: shmem_team_t = 0;
pub const SHMEM_TEAM_SHARED: shmem_team_t = 1;
pub const SHMEMX_TEAM_NODE: shmem_team_t = 2;
pub const SHMEM_TEAM_INVALID: shmem_team_t = -1;
pub const SHMEM_TEAM_NUM_CONTEXTS: c_long = 1;

const _: () = {
    use crate::plain as i;
    assert!(SHMEM_TEAM_WORLD == i::ISHMEM_TEAM_WORLD && SHMEM_TEAM_SHARED == i::ISHMEM_TEAM_SHARED);
    assert!(SHMEMX_TEAM_NODE == i::ISHMEMX_TEAM_NODE && SHMEM_TEAM_INVALID == i::ISHMEM_TEAM_INVALID);
    assert!(SHMEM_TEAM_NUM_CONTEXTS == i::ISHMEM_TEAM_NUM_CONTEXTS);
};

/// Team creation options (§9.4.3).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct shmem_team_config_t {
    pub num_contexts: c_int,
}

/// This PE's number in `team`, or -1 (§9.4.1).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_team_my_pe(team: shmem_team_t) -> c_int {
    let call = "shmem_team_my_pe";
    guard(call, || state(call).team(call, team).map_or(-1, |t| t.my_rank as c_int))
}

/// Number of PEs in `team`, or -1 (§9.4.2).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_team_n_pes(team: shmem_team_t) -> c_int {
    let call = "shmem_team_n_pes";
    guard(call, || state(call).team(call, team).map_or(-1, |t| t.size as c_int))
}

/// `src_pe` of `src_team` in `dest_team`, or -1 (§9.4.5).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_team_translate_pe(src_team: shmem_team_t, src_pe: c_int, dest_team: shmem_team_t) -> c_int {
    let call = "shmem_team_translate_pe";
    guard(call, || state(call).team_translate_pe(call, src_team, src_pe, dest_team))
}

/// Collective over `parent`: strided split (§9.4.6).
#[profiling_name]
#[no_mangle]
pub unsafe extern "C" fn shmem_team_split_strided(
    parent: shmem_team_t, start: c_int, stride: c_int, size: c_int, config: *const shmem_team_config_t,
    config_mask: c_long, new_team: *mut shmem_team_t,
) -> c_int {
    // SAFETY: the C caller passes `config` null or pointing to a team
    // configuration (§9.4.6: it is read only when `config_mask` selects a
    // field); `shmem_team_config_t` has the layout of `ishmem_team_config_t`
    // (both `#[repr(C)]`, one c_int).
    let contexts = unsafe { crate::plain::config_contexts(config.cast(), config_mask) };
    // SAFETY: the C caller passes `new_team` valid for a write of one team
    // handle (§9.4.6); `split_strided` reports a null one.
    unsafe { crate::plain::split_strided("shmem_team_split_strided", parent, start, stride, size, contexts, new_team) }
}

/// Collective over `parent`: 2-D split (§9.4.7).
#[profiling_name]
#[no_mangle]
pub unsafe extern "C" fn shmem_team_split_2d(
    parent: shmem_team_t, xrange: c_int, xaxis_config: *const shmem_team_config_t, xaxis_mask: c_long,
    xaxis_team: *mut shmem_team_t, yaxis_config: *const shmem_team_config_t, yaxis_mask: c_long,
    yaxis_team: *mut shmem_team_t,
) -> c_int {
    // SAFETY: the C caller passes each axis configuration null or pointing
    // to a team configuration (§9.4.7: read only when its mask selects a
    // field); `shmem_team_config_t` has the layout of `ishmem_team_config_t`.
    let contexts = unsafe {
        (
            crate::plain::config_contexts(xaxis_config.cast(), xaxis_mask),
            crate::plain::config_contexts(yaxis_config.cast(), yaxis_mask),
        )
    };
    // SAFETY: the C caller passes `xaxis_team` and `yaxis_team` each valid
    // for a write of one team handle (§9.4.7); `split_2d` reports a null
    // one.
    unsafe { crate::plain::split_2d("shmem_team_split_2d", parent, xrange, contexts, xaxis_team, yaxis_team) }
}

/// Writes the team's configuration (§9.4.4).
#[profiling_name]
#[no_mangle]
pub unsafe extern "C" fn shmem_team_get_config(
    team: shmem_team_t, config_mask: c_long, config: *mut shmem_team_config_t,
) -> c_int {
    // SAFETY: the C caller passes `config` valid for a write of one team
    // configuration (§9.4.4), whose first field is the c_int `num_contexts`
    // (`#[repr(C)]`); `get_config` reports a null one.
    unsafe { crate::plain::get_config("shmem_team_get_config", team, config_mask, config as *mut c_int) }
}

/// Collective: destroys the team (§9.4.9).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_team_destroy(team: shmem_team_t) {
    let call = "shmem_team_destroy";
    guard(call, || state(call).team_destroy(call, team))
}

/// Load/store address of `dest` on team PE `pe`, or NULL (§9.4.10).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_team_ptr(team: shmem_team_t, dest: *const c_void, pe: c_int) -> *mut c_void {
    let call = "shmem_team_ptr";
    guard(call, || state(call).team_ptr(call, team, dest.cast(), pe).cast())
}

/// Synchronizes the team's PEs (§9.9.4).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_team_sync(team: shmem_team_t) -> c_int {
    let call = "shmem_team_sync";
    guard(call, || state(call).team_sync(call, team))
}

pub const SHMEM_THREAD_SINGLE: c_int = 0;
pub const SHMEM_THREAD_FUNNELED: c_int = 1;
pub const SHMEM_THREAD_SERIALIZED: c_int = 2;
pub const SHMEM_THREAD_MULTIPLE: c_int = 3;
pub const SHMEM_MALLOC_ATOMICS_REMOTE: c_long = 1;
pub const SHMEM_MALLOC_SIGNAL_REMOTE: c_long = 2;

const _: () = {
    use crate::plain as i;
    assert!(SHMEM_THREAD_SINGLE == i::ISHMEM_THREAD_SINGLE && SHMEM_THREAD_MULTIPLE == i::ISHMEM_THREAD_MULTIPLE);
    assert!(
        SHMEM_THREAD_FUNNELED == i::ISHMEM_THREAD_FUNNELED && SHMEM_THREAD_SERIALIZED == i::ISHMEM_THREAD_SERIALIZED
    );
    assert!(SHMEM_MALLOC_ATOMICS_REMOTE == i::ISHMEM_MALLOC_ATOMICS_REMOTE);
    assert!(SHMEM_MALLOC_SIGNAL_REMOTE == i::ISHMEM_MALLOC_SIGNAL_REMOTE);
};

/// Initializes the library at a thread level (§9.1.2).
#[profiling_name]
#[no_mangle]
pub unsafe extern "C" fn shmem_init_thread(requested: c_int, provided: *mut c_int) -> c_int {
    // SAFETY: the C caller passes `provided` null or valid for a write of
    // one int (§9.1.2), which is `init_thread`'s contract.
    unsafe { crate::plain::init_thread("shmem_init_thread", requested, provided) }
}

/// The thread level provided (§9.1.3).
#[profiling_name]
#[no_mangle]
pub unsafe extern "C" fn shmem_query_thread(provided: *mut c_int) {
    // SAFETY: the C caller passes `provided` null or valid for a write of
    // one int (§9.1.3), which is `query_thread`'s contract.
    unsafe { crate::plain::query_thread("shmem_query_thread", provided) }
}

/// Ends every PE of the job with `status` (§9.1.6).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_global_exit(status: c_int) {
    guard("shmem_global_exit", || api::global_exit(status))
}

/// 1 when `pe` can be communicated with (§9.2.3).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_pe_accessible(pe: c_int) -> c_int {
    let call = "shmem_pe_accessible";
    guard(call, || c_int::from(pe >= 0 && (pe as usize) < state(call).n_pes))
}

/// 1 when `addr` is symmetric and `pe` can be reached (§9.2.4).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_addr_accessible(addr: *const c_void, pe: c_int) -> c_int {
    let call = "shmem_addr_accessible";
    guard(call, || {
        let st = state(call);
        c_int::from(pe >= 0 && (pe as usize) < st.n_pes && st.is_symmetric(addr.cast()))
    })
}

/// `malloc` with usage hints (§9.3.2).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_malloc_with_hints(size: usize, hints: c_long) -> *mut c_void {
    let call = "shmem_malloc_with_hints";
    guard(call, || {
        let known = SHMEM_MALLOC_ATOMICS_REMOTE | SHMEM_MALLOC_SIGNAL_REMOTE;
        if hints & !known != 0 {
            api::warn(format_args!("{call}: unknown hint bits {:#x} are ignored", hints & !known));
        }
        state(call).malloc(call, size).cast()
    })
}

/// Acquires the distributed lock `lock` (symmetric long, initially 0) (§9.12.1).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_set_lock(lock: *mut c_long) {
    guard("shmem_set_lock", || state("shmem_set_lock").set_lock("shmem_set_lock", lock.cast()))
}

/// Releases the lock (§9.12.2).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_clear_lock(lock: *mut c_long) {
    guard("shmem_clear_lock", || state("shmem_clear_lock").clear_lock("shmem_clear_lock", lock.cast()))
}

/// Takes the lock if free: 0 when taken, 1 when held (§9.12.3).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_test_lock(lock: *mut c_long) -> c_int {
    guard("shmem_test_lock", || state("shmem_test_lock").test_lock("shmem_test_lock", lock.cast()))
}

/// A communication context handle (§9.5). `SHMEM_CTX_DEFAULT` and
/// `SHMEM_CTX_INVALID` are defined in shmem.h.
pub type shmem_ctx_t = *mut c_void;
/// Context options (§9.5.1).
pub const SHMEM_CTX_SERIALIZED: c_long = 1;
pub const SHMEM_CTX_PRIVATE: c_long = 2;
pub const SHMEM_CTX_NOSTORE: c_long = 4;

const _: () = {
    assert!(SHMEM_CTX_SERIALIZED == api::CTX_SERIALIZED && SHMEM_CTX_PRIVATE == api::CTX_PRIVATE);
    assert!(SHMEM_CTX_NOSTORE == api::CTX_NOSTORE);
};

/// `ctx_create` on `team` for the routine `call`.
///
/// # Safety
/// `ctx` is null (reported) or valid for a write of one `shmem_ctx_t`.
pub(crate) unsafe fn create_ctx(
    call: &'static str, team: shmem_team_t, options: c_long, ctx: *mut shmem_ctx_t,
) -> c_int {
    guard(call, || {
        if ctx.is_null() {
            api::fatal(call, format_args!("ctx is a null pointer"))
        }
        let (handle, rc) = match state(call).ctx_create(call, team, options) {
            Some(h) => (h as shmem_ctx_t, 0),
            None => (api::CTX_INVALID as shmem_ctx_t, -1),
        };
        // SAFETY: not null (checked above), so valid for a write of one
        // shmem_ctx_t by this function's contract.
        unsafe { *ctx = handle };
        rc
    })
}

/// Creates a context on the world team; 0 on success (§9.5.1).
#[profiling_name]
#[no_mangle]
pub unsafe extern "C" fn shmem_ctx_create(options: c_long, ctx: *mut shmem_ctx_t) -> c_int {
    // SAFETY: the C caller passes `ctx` valid for a write of one context
    // handle (§9.5.1); `create_ctx` reports a null one.
    unsafe { create_ctx("shmem_ctx_create", SHMEM_TEAM_WORLD, options, ctx) }
}

/// Creates a context on `team`; PE numbers of its operations are team PEs;
/// non-zero (and SHMEM_CTX_INVALID) for SHMEM_TEAM_INVALID (§9.4.8).
#[profiling_name]
#[no_mangle]
pub unsafe extern "C" fn shmem_team_create_ctx(team: shmem_team_t, options: c_long, ctx: *mut shmem_ctx_t) -> c_int {
    // SAFETY: the C caller passes `ctx` valid for a write of one context
    // handle (§9.4.8); `create_ctx` reports a null one.
    unsafe { create_ctx("shmem_team_create_ctx", team, options, ctx) }
}

/// Completes the context's operations and destroys it (§9.5.2).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_ctx_destroy(ctx: shmem_ctx_t) {
    let call = "shmem_ctx_destroy";
    guard(call, || state(call).ctx_destroy(call, ctx as usize))
}

/// The team of a context; non-zero and SHMEM_TEAM_INVALID for
/// SHMEM_CTX_INVALID (§9.5.3).
#[profiling_name]
#[no_mangle]
pub unsafe extern "C" fn shmem_ctx_get_team(ctx: shmem_ctx_t, team: *mut shmem_team_t) -> c_int {
    let call = "shmem_ctx_get_team";
    guard(call, || {
        if team.is_null() {
            api::fatal(call, format_args!("team is a null pointer"))
        }
        if ctx as usize == api::CTX_INVALID {
            // SAFETY: not null (checked above); the C caller passes `team`
            // valid for a write of one team handle (§9.5.3).
            unsafe { *team = api::NO_TEAM };
            return -1;
        }
        let handle = state(call).ctx_team_handle(call, ctx as usize);
        // SAFETY: as above.
        unsafe { *team = handle };
        0
    })
}

/// Orders the context's puts and AMOs to each PE (§9.10.1).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_ctx_fence(ctx: shmem_ctx_t) {
    let call = "shmem_ctx_fence";
    guard(call, || state(call).ctx_order(call, ctx as usize, false))
}

/// Completes the context's outstanding operations (§9.10.2).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_ctx_quiet(ctx: shmem_ctx_t) {
    let call = "shmem_ctx_quiet";
    guard(call, || state(call).ctx_order(call, ctx as usize, true))
}

// ----- deprecated names (kept so existing programs compile unchanged) ------

/// Deprecated (OpenSHMEM 1.2): initializes the library; `npes` is ignored.
#[no_mangle]
pub extern "C" fn start_pes(npes: c_int) {
    let _ = npes;
    guard("start_pes", || init_or_die("start_pes"))
}

/// Deprecated: `shmem_my_pe`.
#[no_mangle]
pub extern "C" fn _my_pe() -> c_int {
    guard("_my_pe", || state("_my_pe").my_pe as c_int)
}

/// Deprecated: `shmem_n_pes`.
#[no_mangle]
pub extern "C" fn _num_pes() -> c_int {
    guard("_num_pes", || state("_num_pes").n_pes as c_int)
}

/// Deprecated: `shmem_malloc`.
#[no_mangle]
pub extern "C" fn shmalloc(size: usize) -> *mut c_void {
    guard("shmalloc", || state("shmalloc").malloc("shmalloc", size).cast())
}

/// Deprecated: `shmem_free`.
#[no_mangle]
pub extern "C" fn shfree(ptr: *mut c_void) {
    guard("shfree", || state("shfree").free("shfree", ptr.cast()))
}

/// Deprecated: `shmem_realloc`.
#[no_mangle]
pub extern "C" fn shrealloc(ptr: *mut c_void, size: usize) -> *mut c_void {
    guard("shrealloc", || state("shrealloc").realloc("shrealloc", ptr.cast(), size).cast())
}

/// Deprecated: `shmem_align`.
#[no_mangle]
pub extern "C" fn shmemalign(alignment: usize, size: usize) -> *mut c_void {
    guard("shmemalign", || state("shmemalign").align("shmemalign", alignment, size).cast())
}

/// Deprecated: barrier over an active set (`PE_start + i * 2^logPE_stride`,
/// `i < PE_size`), synchronized through `pSync` (OpenSHMEM 1.4 §9.9.2).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_barrier(PE_start: c_int, logPE_stride: c_int, PE_size: c_int, pSync: *mut c_long) {
    let call = "shmem_barrier";
    guard(call, || {
        use ishmem_runtime::api::Group;
        let st = state(call);
        let a = st.active_set(call, PE_start, logPE_stride, PE_size, pSync.cast());
        st.quiet();
        a.sync(st);
    })
}

/// Deprecated: waits until `*ivar != cmp_value`.
#[profiling_name]
#[no_mangle]
pub unsafe extern "C" fn shmem_wait(ivar: *mut c_long, cmp_value: c_long) {
    // SAFETY: c_long is a plain integer type, which is all `wait_ne` needs:
    // the runtime checks that `ivar` is a symmetric, aligned long.
    unsafe { crate::typed_impl::wait_ne("shmem_wait", ivar, cmp_value) }
}

/// Deprecated: no effect (caches are coherent here).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_clear_cache_inv() {}

/// Deprecated: no effect (caches are coherent here).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_set_cache_inv() {}

/// Deprecated: no effect (caches are coherent here).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_clear_cache_line_inv(dest: *mut c_void) {
    let _ = dest;
}

/// Deprecated: no effect (caches are coherent here).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_set_cache_line_inv(dest: *mut c_void) {
    let _ = dest;
}

/// Deprecated: no effect (caches are coherent here).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_udcflush() {}

/// Deprecated: no effect (caches are coherent here).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_udcflush_line(dest: *mut c_void) {
    let _ = dest;
}

/// Deprecated: synchronization of an active set without completing
/// operations (OpenSHMEM 1.4 `shmem_sync`).
#[profiling_name]
#[no_mangle]
pub extern "C" fn shmem_sync(PE_start: c_int, logPE_stride: c_int, PE_size: c_int, pSync: *mut c_long) {
    let call = "shmem_sync";
    guard(call, || {
        use ishmem_runtime::api::Group;
        let st = state(call);
        st.active_set(call, PE_start, logPE_stride, PE_size, pSync.cast()).sync(st);
    })
}
