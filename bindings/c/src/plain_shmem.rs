//! Non-typed routines under OpenSHMEM 1.5 names. cbindgen reads this file to
//! write `include/shmem/shmem_api.h`. Each forwards to the same core call as
//! its `ishmem_` twin, passing its own name for error messages.

use crate::guard;
use crate::plain::{info_get_name, info_get_version, init_or_die};
use ishmem_runtime::core::{self, state};
use std::ffi::{c_char, c_int, c_void};

/// Major version of the OpenSHMEM specification implemented.
pub const SHMEM_MAJOR_VERSION: c_int = 1;
/// Minor version of the OpenSHMEM specification implemented.
pub const SHMEM_MINOR_VERSION: c_int = 5;
/// Size of the buffer `shmem_info_get_name` writes, terminator included.
pub const SHMEM_MAX_NAME_LEN: c_int = 256;

const _: () = assert!(
    SHMEM_MAJOR_VERSION == core::SPEC_MAJOR
        && SHMEM_MINOR_VERSION == core::SPEC_MINOR
        && SHMEM_MAX_NAME_LEN == crate::plain::ISHMEM_MAX_NAME_LEN
);

/// Initializes the library; collective (§9.1.1).
#[no_mangle]
pub extern "C" fn shmem_init() {
    guard("shmem_init", || init_or_die("shmem_init"))
}

/// Completes all operations and releases resources; collective (§9.1.5).
#[no_mangle]
pub extern "C" fn shmem_finalize() {
    guard("shmem_finalize", core::finalize)
}

/// This PE's number (§9.1.2).
#[no_mangle]
pub extern "C" fn shmem_my_pe() -> c_int {
    guard("shmem_my_pe", || state("shmem_my_pe").my_pe as c_int)
}

/// Number of PEs (§9.1.3).
#[no_mangle]
pub extern "C" fn shmem_n_pes() -> c_int {
    guard("shmem_n_pes", || state("shmem_n_pes").n_pes as c_int)
}

/// Writes the implemented specification version (§9.1.7).
#[no_mangle]
pub unsafe extern "C" fn shmem_info_get_version(major: *mut c_int, minor: *mut c_int) {
    info_get_version("shmem_info_get_version", major, minor)
}

/// Writes the vendor string (§9.1.8).
#[no_mangle]
pub unsafe extern "C" fn shmem_info_get_name(name: *mut c_char) {
    info_get_name("shmem_info_get_name", name)
}

/// Load/store address of symmetric `dest` on `pe`, or NULL (§9.2.5).
#[no_mangle]
pub extern "C" fn shmem_ptr(dest: *const c_void, pe: c_int) -> *mut c_void {
    guard("shmem_ptr", || state("shmem_ptr").ptr("shmem_ptr", dest.cast(), pe).cast())
}

/// Collective symmetric allocation (§9.3.1).
#[no_mangle]
pub extern "C" fn shmem_malloc(size: usize) -> *mut c_void {
    guard("shmem_malloc", || state("shmem_malloc").malloc("shmem_malloc", size).cast())
}

/// Collective zeroed allocation (§9.3.3).
#[no_mangle]
pub extern "C" fn shmem_calloc(count: usize, size: usize) -> *mut c_void {
    guard("shmem_calloc", || state("shmem_calloc").calloc("shmem_calloc", count, size).cast())
}

/// Collective aligned allocation (§9.3.1).
#[no_mangle]
pub extern "C" fn shmem_align(alignment: usize, size: usize) -> *mut c_void {
    guard("shmem_align", || state("shmem_align").align("shmem_align", alignment, size).cast())
}

/// Collective free (§9.3.1).
#[no_mangle]
pub extern "C" fn shmem_free(ptr: *mut c_void) {
    guard("shmem_free", || state("shmem_free").free("shmem_free", ptr.cast()))
}

/// Collective resize (§9.3.1).
#[no_mangle]
pub extern "C" fn shmem_realloc(ptr: *mut c_void, size: usize) -> *mut c_void {
    guard("shmem_realloc", || state("shmem_realloc").realloc("shmem_realloc", ptr.cast(), size).cast())
}

/// Orders puts and AMOs to each PE (§9.10.1).
#[no_mangle]
pub extern "C" fn shmem_fence() {
    guard("shmem_fence", || state("shmem_fence").fence())
}

/// Completes all outstanding operations (§9.10.2).
#[no_mangle]
pub extern "C" fn shmem_quiet() {
    guard("shmem_quiet", || state("shmem_quiet").quiet())
}

/// quiet + synchronization of all PEs (§9.9.3).
#[no_mangle]
pub extern "C" fn shmem_barrier_all() {
    guard("shmem_barrier_all", || state("shmem_barrier_all").barrier_all())
}

/// Synchronization of all PEs (§9.9.5).
#[no_mangle]
pub extern "C" fn shmem_sync_all() {
    guard("shmem_sync_all", || state("shmem_sync_all").sync_all())
}
