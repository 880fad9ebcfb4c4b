//! The CUDA driver API, loaded at run time from `libcuda.so.1` through one
//! function table (a program that never asks for CUDA needs no CUDA
//! installed). Only the entry points the CUDA device uses; the versioned
//! symbol names are those `cuda.h` 13.0 maps the API names to.

use crate::dynlib::{symbol, LoadError, Open, Search};
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};

pub type CUresult = c_int;
pub type CUdevice = c_int;
pub type CUdeviceptr = u64;
pub type CUcontext = *mut c_void;
pub type CUstream = *mut c_void;
pub type CUmodule = *mut c_void;
pub type CUfunction = *mut c_void;
pub type CUmemGenericAllocationHandle = u64;

pub const CUDA_SUCCESS: CUresult = 0;
pub const CUDA_ERROR_OUT_OF_MEMORY: CUresult = 2;
pub const CUDA_ERROR_NO_DEVICE: CUresult = 100;

/// A driver API call that failed: the call (and what it worked on), its
/// result code, and the driver's name and description of the code.
/// Shown as `call failed: CUDA_ERROR_X (description, error N)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CuError {
    pub call: String,
    pub code: CUresult,
    pub name: String,
    pub desc: String,
}

impl std::fmt::Display for CuError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} failed: {} ({}, error {})", self.call, self.name, self.desc, self.code)
    }
}

impl std::error::Error for CuError {}

/// `cuStreamQuery`: work is still pending on the stream.
pub const CUDA_ERROR_NOT_READY: CUresult = 600;
pub const CU_POINTER_ATTRIBUTE_MEMORY_TYPE: c_int = 2;
pub const CU_MEMORYTYPE_HOST: c_uint = 1;
/// `CUmoduleLoadingMode`: kernels loaded at their first launch.
pub const CU_MODULE_LAZY_LOADING: c_uint = 2;

pub const CU_DEVICE_ATTRIBUTE_COMPUTE_MODE: c_int = 20;
/// `CU_DEVICE_ATTRIBUTE_COMPUTE_MODE` values.
pub const CU_COMPUTEMODE_PROHIBITED: c_int = 2;
pub const CU_COMPUTEMODE_EXCLUSIVE_PROCESS: c_int = 3;
pub const CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: c_int = 41;
pub const CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: c_int = 91;
pub const CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: c_int = 102;
pub const CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED: c_int = 103;

pub const CU_MEM_ALLOCATION_TYPE_PINNED: c_uint = 1;
pub const CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR: c_uint = 1;
pub const CU_MEM_LOCATION_TYPE_DEVICE: c_uint = 1;
pub const CU_MEM_ACCESS_FLAGS_PROT_READWRITE: c_uint = 3;
pub const CU_MEM_ALLOC_GRANULARITY_MINIMUM: c_uint = 0;

pub const CU_MEMHOSTREGISTER_PORTABLE: c_uint = 1;
pub const CU_MEMHOSTREGISTER_DEVICEMAP: c_uint = 2;

pub const CU_STREAM_NON_BLOCKING: c_uint = 1;
/// `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED` .. `CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD`:
/// a call refused because of a stream capture (not a failed context).
pub const CUDA_ERROR_STREAM_CAPTURE: std::ops::RangeInclusive<CUresult> = 900..=908;
/// `CUstreamCaptureMode`: this thread's calls are not restricted by other
/// threads' stream captures.
pub const CU_STREAM_CAPTURE_MODE_RELAXED: c_uint = 2;

/// `CUmemLocation`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct CUmemLocation {
    pub type_: c_uint,
    pub id: c_int,
}

/// The `allocFlags` member of `CUmemAllocationProp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct CUmemAllocFlags {
    pub compression_type: u8,
    pub gpu_direct_rdma_capable: u8,
    pub usage: u16,
    pub reserved: [u8; 4],
}

/// `CUmemAllocationProp`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUmemAllocationProp {
    pub type_: c_uint,
    pub requested_handle_types: c_uint,
    pub location: CUmemLocation,
    pub win32_handle_meta_data: *mut c_void,
    pub alloc_flags: CUmemAllocFlags,
}

/// `CUmemAccessDesc`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUmemAccessDesc {
    pub location: CUmemLocation,
    pub flags: c_uint,
}

// The layouts of cuda.h 13.0 (x86-64 and aarch64 Linux).
const _: () = {
    assert!(std::mem::size_of::<CUmemLocation>() == 8);
    assert!(std::mem::size_of::<CUmemAllocationProp>() == 32);
    assert!(std::mem::offset_of!(CUmemAllocationProp, win32_handle_meta_data) == 16);
    assert!(std::mem::offset_of!(CUmemAllocationProp, alloc_flags) == 24);
    assert!(std::mem::size_of::<CUmemAccessDesc>() == 12);
};

/// The driver entry points the CUDA device uses.
pub struct Driver {
    _lib: libloading::Library,
    pub path: String,
    pub init: unsafe extern "C" fn(c_uint) -> CUresult,
    pub module_get_loading_mode: unsafe extern "C" fn(*mut c_uint) -> CUresult,
    pub get_error_name: unsafe extern "C" fn(CUresult, *mut *const c_char) -> CUresult,
    pub get_error_string: unsafe extern "C" fn(CUresult, *mut *const c_char) -> CUresult,
    pub device_get_count: unsafe extern "C" fn(*mut c_int) -> CUresult,
    pub device_get: unsafe extern "C" fn(*mut CUdevice, c_int) -> CUresult,
    pub device_get_attribute: unsafe extern "C" fn(*mut c_int, c_int, CUdevice) -> CUresult,
    pub device_get_name: unsafe extern "C" fn(*mut c_char, c_int, CUdevice) -> CUresult,
    pub primary_ctx_retain: unsafe extern "C" fn(*mut CUcontext, CUdevice) -> CUresult,
    pub ctx_set_current: unsafe extern "C" fn(CUcontext) -> CUresult,
    pub mem_get_allocation_granularity:
        unsafe extern "C" fn(*mut usize, *const CUmemAllocationProp, c_uint) -> CUresult,
    pub mem_create:
        unsafe extern "C" fn(*mut CUmemGenericAllocationHandle, usize, *const CUmemAllocationProp, u64) -> CUresult,
    pub mem_release: unsafe extern "C" fn(CUmemGenericAllocationHandle) -> CUresult,
    pub mem_address_reserve: unsafe extern "C" fn(*mut CUdeviceptr, usize, usize, CUdeviceptr, u64) -> CUresult,
    pub mem_address_free: unsafe extern "C" fn(CUdeviceptr, usize) -> CUresult,
    pub mem_map: unsafe extern "C" fn(CUdeviceptr, usize, usize, CUmemGenericAllocationHandle, u64) -> CUresult,
    pub mem_unmap: unsafe extern "C" fn(CUdeviceptr, usize) -> CUresult,
    pub mem_set_access: unsafe extern "C" fn(CUdeviceptr, usize, *const CUmemAccessDesc, usize) -> CUresult,
    pub mem_export_to_shareable_handle:
        unsafe extern "C" fn(*mut c_void, CUmemGenericAllocationHandle, c_uint, u64) -> CUresult,
    pub mem_import_from_shareable_handle:
        unsafe extern "C" fn(*mut CUmemGenericAllocationHandle, *mut c_void, c_uint) -> CUresult,
    pub mem_alloc: unsafe extern "C" fn(*mut CUdeviceptr, usize) -> CUresult,
    pub mem_free: unsafe extern "C" fn(CUdeviceptr) -> CUresult,
    pub mem_host_register: unsafe extern "C" fn(*mut c_void, usize, c_uint) -> CUresult,
    pub mem_host_unregister: unsafe extern "C" fn(*mut c_void) -> CUresult,
    pub mem_host_get_device_pointer: unsafe extern "C" fn(*mut CUdeviceptr, *mut c_void, c_uint) -> CUresult,
    pub pointer_get_attribute: unsafe extern "C" fn(*mut c_void, c_int, CUdeviceptr) -> CUresult,
    pub memcpy_async: unsafe extern "C" fn(CUdeviceptr, CUdeviceptr, usize, CUstream) -> CUresult,
    pub memset_d8_async: unsafe extern "C" fn(CUdeviceptr, u8, usize, CUstream) -> CUresult,
    pub stream_create: unsafe extern "C" fn(*mut CUstream, c_uint) -> CUresult,
    pub stream_synchronize: unsafe extern "C" fn(CUstream) -> CUresult,
    pub stream_query: unsafe extern "C" fn(CUstream) -> CUresult,
    pub ctx_synchronize: unsafe extern "C" fn() -> CUresult,
    pub thread_exchange_stream_capture_mode: unsafe extern "C" fn(*mut c_uint) -> CUresult,
    pub mem_get_info: unsafe extern "C" fn(*mut usize, *mut usize) -> CUresult,
    pub module_load_data: unsafe extern "C" fn(*mut CUmodule, *const c_void) -> CUresult,
    pub module_get_function: unsafe extern "C" fn(*mut CUfunction, CUmodule, *const c_char) -> CUresult,
    #[allow(clippy::type_complexity)]
    pub launch_kernel: unsafe extern "C" fn(
        CUfunction,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        CUstream,
        *mut *mut c_void,
        *mut *mut c_void,
    ) -> CUresult,
}

// SAFETY: the driver API is thread-safe; the table is immutable.
unsafe impl Send for Driver {}
// SAFETY: as above.
unsafe impl Sync for Driver {}

/// Where the driver is looked for.
const LIB_NAMES: &[&str] = &["libcuda.so.1", "libcuda.so"];

impl Driver {
    /// What `ishmem-info` reports: whether the driver loads, and why not.
    pub fn probe() -> Result<(), LoadError> {
        Driver::load().map(|_| ())
    }

    /// Loads the driver library; the error names every path tried and why.
    pub fn load() -> Result<Driver, LoadError> {
        let mut search =
            Search::new("the CUDA driver", "install the NVIDIA driver, or run on a machine with an NVIDIA GPU");
        for name in LIB_NAMES {
            let Some(lib) = search.open(name, Open::Local) else { continue };
            match Self::bind(lib, name) {
                Ok(d) => return Ok(d),
                Err(why) => search.unusable(name, format!("{why} (a driver older than CUDA 12?)")),
            }
        }
        Err(search.failed())
    }

    fn bind(lib: libloading::Library, name: &str) -> Result<Driver, crate::dynlib::MissingSymbol> {
        macro_rules! sym {
            ($s:literal) => {
                // SAFETY: the symbol has the driver API signature (cuda.h
                // 13.0) declared in the table's field type.
                unsafe { symbol(&lib, $s) }?
            };
        }
        Ok(Driver {
            path: name.to_string(),
            init: sym!("cuInit"),
            module_get_loading_mode: sym!("cuModuleGetLoadingMode"),
            get_error_name: sym!("cuGetErrorName"),
            get_error_string: sym!("cuGetErrorString"),
            device_get_count: sym!("cuDeviceGetCount"),
            device_get: sym!("cuDeviceGet"),
            device_get_attribute: sym!("cuDeviceGetAttribute"),
            device_get_name: sym!("cuDeviceGetName"),
            primary_ctx_retain: sym!("cuDevicePrimaryCtxRetain"),
            ctx_set_current: sym!("cuCtxSetCurrent"),
            mem_get_allocation_granularity: sym!("cuMemGetAllocationGranularity"),
            mem_create: sym!("cuMemCreate"),
            mem_release: sym!("cuMemRelease"),
            mem_address_reserve: sym!("cuMemAddressReserve"),
            mem_address_free: sym!("cuMemAddressFree"),
            mem_map: sym!("cuMemMap"),
            mem_unmap: sym!("cuMemUnmap"),
            mem_set_access: sym!("cuMemSetAccess"),
            mem_export_to_shareable_handle: sym!("cuMemExportToShareableHandle"),
            mem_import_from_shareable_handle: sym!("cuMemImportFromShareableHandle"),
            mem_alloc: sym!("cuMemAlloc_v2"),
            mem_free: sym!("cuMemFree_v2"),
            mem_host_register: sym!("cuMemHostRegister_v2"),
            mem_host_unregister: sym!("cuMemHostUnregister"),
            mem_host_get_device_pointer: sym!("cuMemHostGetDevicePointer_v2"),
            pointer_get_attribute: sym!("cuPointerGetAttribute"),
            memcpy_async: sym!("cuMemcpyAsync"),
            memset_d8_async: sym!("cuMemsetD8Async"),
            stream_create: sym!("cuStreamCreate"),
            stream_synchronize: sym!("cuStreamSynchronize"),
            stream_query: sym!("cuStreamQuery"),
            ctx_synchronize: sym!("cuCtxSynchronize"),
            thread_exchange_stream_capture_mode: sym!("cuThreadExchangeStreamCaptureMode"),
            mem_get_info: sym!("cuMemGetInfo_v2"),
            module_load_data: sym!("cuModuleLoadData"),
            module_get_function: sym!("cuModuleGetFunction"),
            launch_kernel: sym!("cuLaunchKernel"),
            _lib: lib,
        })
    }

    /// `Ok` for `CUDA_SUCCESS`, else the call's [`CuError`].
    pub fn check(&self, call: &str, r: CUresult) -> Result<(), CuError> {
        if r == CUDA_SUCCESS {
            return Ok(());
        }
        let (mut name, mut desc): (*const c_char, *const c_char) = (std::ptr::null(), std::ptr::null());
        // SAFETY: the driver writes pointers to static strings (or leaves
        // them null for an unknown code).
        unsafe {
            (self.get_error_name)(r, &mut name);
            (self.get_error_string)(r, &mut desc);
        }
        let s = |p: *const c_char| {
            if p.is_null() {
                String::new()
            } else {
                // SAFETY: a NUL-terminated static string of the driver.
                unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
            }
        };
        Err(CuError { call: call.to_string(), code: r, name: s(name), desc: s(desc) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::DeviceError;

    #[test]
    fn a_failed_call_reads_as_before_alone_and_with_its_context() {
        let e = CuError {
            call: "cuMemCreate".into(),
            code: 2,
            name: "CUDA_ERROR_OUT_OF_MEMORY".into(),
            desc: "out of memory".into(),
        };
        assert_eq!(e.to_string(), "cuMemCreate failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory, error 2)");
        assert_eq!(DeviceError::from(e.clone()).to_string(), e.to_string());
        let d = DeviceError::Cuda { context: "cannot create a heap".into(), error: e };
        assert_eq!(
            d.to_string(),
            "cannot create a heap: cuMemCreate failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory, error 2)"
        );
    }
}
