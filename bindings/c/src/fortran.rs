//! The classic Fortran interface (`shmem.fh`): the untyped routines, and
//! the argument readers the generated typed ones (`fortran_classic.rs`)
//! use.
//!
//! A classic program calls these through implicit interfaces: every
//! argument by reference, default integers of 4 bytes, `LOGICAL` results
//! as C `int` (gfortran's `.TRUE.` is 1), and the hidden length of a
//! `CHARACTER` argument passed by value after the others. The external
//! names are the routine names in lower case with one trailing underscore,
//! the convention of gfortran, Intel Fortran, flang and nvfortran.

use crate::plain_shmem as ps;
use ishmem_runtime::api::fatal;
use std::ffi::{c_char, c_int, c_long, c_void};

/// Reads default integer argument `arg` of `call`.
///
/// # Safety
/// `p` is null or points to an integer.
#[inline]
pub(crate) unsafe fn int(call: &str, arg: &str, p: *const c_int) -> c_int {
    // SAFETY: forwarded.
    unsafe { val(call, arg, p) }
}

/// Reads element-count argument `arg` of `call`: a default integer >= 0.
///
/// # Safety
/// `p` is null or points to an integer.
#[inline]
pub(crate) unsafe fn count(call: &str, arg: &str, p: *const c_int) -> usize {
    // SAFETY: forwarded.
    let n = unsafe { int(call, arg, p) };
    usize::try_from(n).unwrap_or_else(|_| fatal(call, format_args!("{arg} {n} is negative")))
}

/// Reads value argument `arg` of `call` (an AMO operand or comparison
/// value).
///
/// # Safety
/// `p` is null or points to a `T`.
#[inline]
pub(crate) unsafe fn val<T: Copy>(call: &str, arg: &str, p: *const T) -> T {
    if p.is_null() {
        fatal(call, format_args!("argument {arg} is missing (a null reference)"))
    }
    // SAFETY: non-null, and the caller passed it by reference.
    unsafe { *p }
}

/// `SHMEM_INIT()`.
#[no_mangle]
pub extern "C" fn shmem_init_() {
    ps::shmem_init()
}

/// `START_PES(npes)` (deprecated): initializes; `npes` is ignored.
///
/// # Safety
/// `npes` is a valid reference.
#[no_mangle]
pub unsafe extern "C" fn start_pes_(npes: *const c_int) {
    // SAFETY: the caller's contract.
    ps::start_pes(unsafe { int("START_PES", "npes", npes) })
}

/// `SHMEM_FINALIZE()`.
#[no_mangle]
pub extern "C" fn shmem_finalize_() {
    ps::shmem_finalize()
}

/// `INTEGER MY_PE()`.
#[no_mangle]
pub extern "C" fn my_pe_() -> c_int {
    ps::shmem_my_pe()
}

/// `INTEGER NUM_PES()`.
#[no_mangle]
pub extern "C" fn num_pes_() -> c_int {
    ps::shmem_n_pes()
}

/// `INTEGER SHMEM_MY_PE()`.
#[no_mangle]
pub extern "C" fn shmem_my_pe_() -> c_int {
    ps::shmem_my_pe()
}

/// `INTEGER SHMEM_N_PES()`.
#[no_mangle]
pub extern "C" fn shmem_n_pes_() -> c_int {
    ps::shmem_n_pes()
}

/// `SHMEM_BARRIER_ALL()`.
#[no_mangle]
pub extern "C" fn shmem_barrier_all_() {
    ps::shmem_barrier_all()
}

/// `SHMEM_BARRIER(PE_start, logPE_stride, PE_size, pSync)`.
///
/// # Safety
/// Valid references; `pSync` a symmetric array of
/// `SHMEM_BARRIER_SYNC_SIZE` default integers.
#[no_mangle]
pub unsafe extern "C" fn shmem_barrier_(
    pe_start: *const c_int, log_stride: *const c_int, pe_size: *const c_int, psync: *mut c_long,
) {
    let c = "SHMEM_BARRIER";
    // SAFETY: the caller's contract.
    unsafe {
        ps::shmem_barrier(
            int(c, "PE_start", pe_start),
            int(c, "logPE_stride", log_stride),
            int(c, "PE_size", pe_size),
            psync,
        )
    }
}

/// `SHMEM_FENCE()`.
#[no_mangle]
pub extern "C" fn shmem_fence_() {
    ps::shmem_fence()
}

/// `SHMEM_QUIET()`.
#[no_mangle]
pub extern "C" fn shmem_quiet_() {
    ps::shmem_quiet()
}

/// `SHMEM_GLOBAL_EXIT(status)`.
///
/// # Safety
/// `status` is a valid reference.
#[no_mangle]
pub unsafe extern "C" fn shmem_global_exit_(status: *const c_int) {
    // SAFETY: the caller's contract.
    ps::shmem_global_exit(unsafe { int("SHMEM_GLOBAL_EXIT", "status", status) })
}

/// `LOGICAL SHMEM_PE_ACCESSIBLE(pe)`.
///
/// # Safety
/// `pe` is a valid reference.
#[no_mangle]
pub unsafe extern "C" fn shmem_pe_accessible_(pe: *const c_int) -> c_int {
    // SAFETY: the caller's contract.
    ps::shmem_pe_accessible(unsafe { int("SHMEM_PE_ACCESSIBLE", "pe", pe) })
}

/// `LOGICAL SHMEM_ADDR_ACCESSIBLE(addr, pe)`.
///
/// # Safety
/// `pe` is a valid reference.
#[no_mangle]
pub unsafe extern "C" fn shmem_addr_accessible_(addr: *const c_void, pe: *const c_int) -> c_int {
    // SAFETY: the caller's contract.
    ps::shmem_addr_accessible(addr, unsafe { int("SHMEM_ADDR_ACCESSIBLE", "pe", pe) })
}

/// `INTEGER*8 SHMEM_PTR(target, pe)`: the address of `target` on `pe` for a
/// Cray pointer, or 0.
///
/// # Safety
/// `pe` is a valid reference.
#[no_mangle]
pub unsafe extern "C" fn shmem_ptr_(target: *const c_void, pe: *const c_int) -> i64 {
    // SAFETY: the caller's contract.
    ps::shmem_ptr(target, unsafe { int("SHMEM_PTR", "pe", pe) }) as i64
}

/// `SHMEM_INFO_GET_VERSION(major, minor)`.
///
/// # Safety
/// Valid references.
#[no_mangle]
pub unsafe extern "C" fn shmem_info_get_version_(major: *mut c_int, minor: *mut c_int) {
    // SAFETY: the caller's contract; the C routine checks for null.
    unsafe { ps::shmem_info_get_version(major, minor) }
}

/// `SHMEM_INFO_GET_NAME(name)`: the vendor string, blank-padded to the
/// length of `name` (Fortran passes it after the arguments).
///
/// # Safety
/// `name` has `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn shmem_info_get_name_(name: *mut c_char, len: usize) {
    let mut buf = [0 as c_char; ps::SHMEM_MAX_NAME_LEN as usize];
    // SAFETY: buf has SHMEM_MAX_NAME_LEN bytes, as the C routine needs.
    unsafe { ps::shmem_info_get_name(buf.as_mut_ptr()) };
    if name.is_null() {
        fatal("SHMEM_INFO_GET_NAME", format_args!("argument name is missing (a null reference)"))
    }
    let n = buf.iter().position(|&c| c == 0).unwrap_or(buf.len());
    let text = buf[..n].iter().copied().chain(std::iter::repeat(b' ' as c_char));
    for (i, c) in text.take(len).enumerate() {
        // SAFETY: i < len, the length of the caller's CHARACTER variable.
        unsafe { *name.add(i) = c };
    }
}

/// `SHMEM_SET_LOCK(lock)`: `lock` is a symmetric `INTEGER*8`.
#[no_mangle]
pub extern "C" fn shmem_set_lock_(lock: *mut c_long) {
    ps::shmem_set_lock(lock)
}

/// `SHMEM_CLEAR_LOCK(lock)`.
#[no_mangle]
pub extern "C" fn shmem_clear_lock_(lock: *mut c_long) {
    ps::shmem_clear_lock(lock)
}

/// `INTEGER SHMEM_TEST_LOCK(lock)`: 0 when the lock was acquired.
#[no_mangle]
pub extern "C" fn shmem_test_lock_(lock: *mut c_long) -> c_int {
    ps::shmem_test_lock(lock)
}

/// Reports a failed `SHPALLOC`/`SHPCLMOVE`/`SHPDEALLC`: with `abort` set, ends
/// the job; otherwise stores `code` in the caller's status argument.
///
/// # Safety
/// `status` and `abort` are null or valid references.
unsafe fn shp_fail(call: &str, status: *mut c_int, abort: *const c_int, code: c_int, what: std::fmt::Arguments) {
    // SAFETY: the caller's contract.
    if unsafe { int(call, "abort", abort) } != 0 || status.is_null() {
        fatal(call, what)
    }
    // SAFETY: non-null, passed by reference.
    unsafe { *status = code };
}

/// Reads the word count `length` of `call`: its size in bytes, or `None`
/// after reporting a count that is not positive (-1).
///
/// # Safety
/// As [`shp_fail`]; `length` is null or a valid reference.
unsafe fn shp_bytes(call: &str, length: *const c_int, status: *mut c_int, abort: *const c_int) -> Option<usize> {
    // SAFETY: the caller's contract.
    unsafe {
        let n = int(call, "length", length);
        if n <= 0 {
            shp_fail(call, status, abort, -1, format_args!("length {n} is not a positive number of words"));
            return None;
        }
        Some(n as usize * 4)
    }
}

/// Reports a heap without room for `bytes` (-2).
///
/// # Safety
/// As [`shp_fail`].
unsafe fn shp_no_room(call: &str, status: *mut c_int, abort: *const c_int, bytes: usize) {
    let what =
        format_args!("no room for {} words in the symmetric heap (ISHMEM_SYMMETRIC_SIZE sets its size)", bytes / 4);
    // SAFETY: the caller's contract.
    unsafe { shp_fail(call, status, abort, -2, what) }
}

/// `SHPALLOC(addr, length, errcode, abort)` (collective): allocates `length`
/// 32-bit words of the symmetric heap and stores the address in the Cray
/// pointer `addr`. `errcode` is 0 on success, -1 when `length` is not
/// positive, -2 when the heap has no room; a nonzero `abort` ends the job on
/// an error instead.
///
/// # Safety
/// Valid references; `addr` is an `INTEGER*8` (or a Cray pointer).
#[no_mangle]
pub unsafe extern "C" fn shpalloc_(
    addr: *mut *mut c_void, length: *const c_int, errcode: *mut c_int, abort: *const c_int,
) {
    let c = "SHPALLOC";
    // SAFETY: the caller's contract.
    unsafe {
        let Some(bytes) = shp_bytes(c, length, errcode, abort) else { return };
        let p = ps::shmem_malloc(bytes);
        if p.is_null() {
            return shp_no_room(c, errcode, abort, bytes);
        }
        *addr = p;
        *errcode = 0;
    }
}

/// `SHPDEALLC(addr, errcode, abort)` (collective): frees a block from
/// `SHPALLOC`. `errcode` is -1 for a null address.
///
/// # Safety
/// Valid references.
#[no_mangle]
pub unsafe extern "C" fn shpdeallc_(addr: *mut *mut c_void, errcode: *mut c_int, abort: *const c_int) {
    let c = "SHPDEALLC";
    // SAFETY: the caller's contract; shmem_free rejects addresses that are
    // not the start of a block.
    unsafe {
        let p = val(c, "addr", addr as *const *mut c_void);
        if p.is_null() {
            return shp_fail(c, errcode, abort, -1, format_args!("addr is 0 (not a block from SHPALLOC)"));
        }
        ps::shmem_free(p);
        *errcode = 0;
    }
}

/// `SHPCLMOVE(addr, length, status, abort)` (collective): resizes a block
/// from `SHPALLOC` to `length` words, keeping its contents. `status` is 0
/// when the block stayed in place, 1 when it moved (`addr` is updated), -1
/// for a bad length, -2 when the heap has no room.
///
/// # Safety
/// Valid references.
#[no_mangle]
pub unsafe extern "C" fn shpclmove_(
    addr: *mut *mut c_void, length: *const c_int, status: *mut c_int, abort: *const c_int,
) {
    let c = "SHPCLMOVE";
    // SAFETY: the caller's contract.
    unsafe {
        let old = val(c, "addr", addr as *const *mut c_void);
        let Some(bytes) = shp_bytes(c, length, status, abort) else { return };
        let p = ps::shmem_realloc(old, bytes);
        if p.is_null() {
            return shp_no_room(c, status, abort, bytes);
        }
        *status = c_int::from(p != old);
        *addr = p;
    }
}
