//! Non-typed routines under Intel SHMEM names. cbindgen reads this file
//! (and `runtime/src/device_state.rs`) to write `include/ishmem/ishmem_api.h`.

use crate::guard;
use ishmem_runtime::core::{self, state};
use ishmem_runtime::device_state::ishmemx_device_state_t;
use ishmem_runtime::error::fatal;
use std::ffi::{c_char, c_int, c_void};

/// Major version of the OpenSHMEM specification implemented.
pub const ISHMEM_MAJOR_VERSION: c_int = 1;
/// Minor version of the OpenSHMEM specification implemented.
pub const ISHMEM_MINOR_VERSION: c_int = 5;
/// Size of the buffer `ishmem_info_get_name` writes, terminator included.
pub const ISHMEM_MAX_NAME_LEN: c_int = 256;

const _: () = assert!(ISHMEM_MAJOR_VERSION == core::SPEC_MAJOR && ISHMEM_MINOR_VERSION == core::SPEC_MINOR);

/// Initializes the library; collective over all PEs (OpenSHMEM 1.5 §9.1.1).
#[no_mangle]
pub extern "C" fn ishmem_init() {
    guard("ishmem_init", || init_or_die("ishmem_init"))
}

pub(crate) fn init_or_die(call: &'static str) {
    if let Err(e) = core::init() {
        fatal(call, format_args!("{e}"))
    }
}

/// Completes all operations and releases the library's resources;
/// collective (§9.1.5). Also run at exit if the program did not call it.
#[no_mangle]
pub extern "C" fn ishmem_finalize() {
    guard("ishmem_finalize", core::finalize)
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

pub(crate) unsafe fn info_get_version(call: &'static str, major: *mut c_int, minor: *mut c_int) {
    guard(call, || {
        if major.is_null() || minor.is_null() {
            fatal(call, format_args!("major or minor is a null pointer"))
        }
        *major = core::SPEC_MAJOR;
        *minor = core::SPEC_MINOR;
    })
}

pub(crate) unsafe fn info_get_name(call: &'static str, name: *mut c_char) {
    guard(call, || {
        if name.is_null() {
            fatal(call, format_args!("name is a null pointer"))
        }
        let v = core::VENDOR.as_bytes();
        let n = v.len().min(ISHMEM_MAX_NAME_LEN as usize - 1);
        std::ptr::copy_nonoverlapping(v.as_ptr(), name as *mut u8, n);
        *name.add(n) = 0;
    })
}

/// Writes the implemented specification version (§9.1.7).
#[no_mangle]
pub unsafe extern "C" fn ishmem_info_get_version(major: *mut c_int, minor: *mut c_int) {
    info_get_version("ishmem_info_get_version", major, minor)
}

/// Writes the vendor string, at most ISHMEM_MAX_NAME_LEN bytes (§9.1.8).
#[no_mangle]
pub unsafe extern "C" fn ishmem_info_get_name(name: *mut c_char) {
    info_get_name("ishmem_info_get_name", name)
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
    guard("ishmem_barrier_all", || state("ishmem_barrier_all").barrier_all())
}

/// Synchronization of all PEs without completing operations (§9.9.5).
#[no_mangle]
pub extern "C" fn ishmem_sync_all() {
    guard("ishmem_sync_all", || state("ishmem_sync_all").sync_all())
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
    use ishmem_runtime::amo as a;
    assert!(ISHMEM_CMP_EQ == a::CMP_EQ && ISHMEM_CMP_NE == a::CMP_NE && ISHMEM_CMP_GT == a::CMP_GT);
    assert!(ISHMEM_CMP_GE == a::CMP_GE && ISHMEM_CMP_LT == a::CMP_LT && ISHMEM_CMP_LE == a::CMP_LE);
    assert!(ISHMEM_SIGNAL_SET == a::SIGNAL_SET && ISHMEM_SIGNAL_ADD == a::SIGNAL_ADD);
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
