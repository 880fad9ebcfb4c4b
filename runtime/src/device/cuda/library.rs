//! The registration of the CUDA device library (`libishmem_device.a`): a
//! constructor in the program that linked it hands the runtime a
//! description of itself before `main`, so the runtime knows the program
//! has CUDA device code and how to install each PE's device state into it.
//! The C declarations are generated from this file (cbindgen).

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicPtr, Ordering};

/// What the CUDA device library registers (from a constructor in the
/// program that linked it, before `main`): how to install this PE's device
/// state into the program's device code.
#[repr(C)]
#[allow(non_camel_case_types)]
pub struct ishmemx_cuda_device_library_t {
    /// [`ISHMEMX_CUDA_DEVICE_LIBRARY_VERSION`] of the library's headers.
    pub version: u32,
    pub reserved: u32,
    /// Makes `device` (an ordinal) current for the program's CUDA runtime
    /// and stores `state` (a GPU address) in the library's
    /// `ishmemi_state`; returns 0 or the CUDA runtime's error code.
    pub install: unsafe extern "C" fn(device: c_int, state: *mut c_void) -> c_int,
}

/// Version of [`ishmemx_cuda_device_library_t`] and of the device state
/// protocol the library speaks.
pub const ISHMEMX_CUDA_DEVICE_LIBRARY_VERSION: u32 = 1;

static LIBRARY: AtomicPtr<ishmemx_cuda_device_library_t> = AtomicPtr::new(std::ptr::null_mut());

/// Registers the CUDA device library (called by its constructor).
pub fn register_library(lib: &'static ishmemx_cuda_device_library_t) -> Result<(), String> {
    if lib.version != ISHMEMX_CUDA_DEVICE_LIBRARY_VERSION {
        return Err(format!(
            "the CUDA device library speaks version {}, this libishmem {ISHMEMX_CUDA_DEVICE_LIBRARY_VERSION}: rebuild the program against the installed headers",
            lib.version
        ));
    }
    LIBRARY.store(lib as *const _ as *mut _, Ordering::Release);
    Ok(())
}

/// True when the program linked the CUDA device library.
pub fn library_linked() -> bool {
    !LIBRARY.load(Ordering::Acquire).is_null()
}

pub(super) fn library() -> Option<&'static ishmemx_cuda_device_library_t> {
    // SAFETY: only &'static values are stored.
    unsafe { LIBRARY.load(Ordering::Acquire).as_ref() }
}
