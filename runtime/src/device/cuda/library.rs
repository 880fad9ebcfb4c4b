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
    /// Launches `op` on the CUDA stream `stream` after the CUDA events
    /// `deps` (the stream waits for them); returns 0 or the CUDA runtime's
    /// error code. The runtime has checked the arguments.
    pub enqueue: unsafe extern "C" fn(
        op: *const ishmemx_cuda_queue_op_t,
        stream: *mut c_void,
        deps: *const *mut c_void,
        num_deps: u32,
    ) -> c_int,
}

/// What [`ishmemx_cuda_queue_op_t::kind`] asks for.
pub const ISHMEMX_CUDA_OP_PUT: u32 = 0;
pub const ISHMEMX_CUDA_OP_GET: u32 = 1;
pub const ISHMEMX_CUDA_OP_BARRIER_ALL: u32 = 2;
pub const ISHMEMX_CUDA_OP_QUIET: u32 = 3;
pub const ISHMEMX_CUDA_OP_PUT_SIGNAL: u32 = 4;
pub const ISHMEMX_CUDA_OP_SIGNAL_WAIT_UNTIL: u32 = 5;
pub const ISHMEMX_CUDA_OP_SYNC_ALL: u32 = 6;
/// A collective ([`ishmemx_cuda_queue_op_t::coll`] says which).
pub const ISHMEMX_CUDA_OP_COLL: u32 = 7;

/// A stream-ordered operation for the CUDA device library to launch
/// ([`ishmemx_cuda_device_library_t::enqueue`]); fields an operation does not
/// use are 0.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
#[allow(non_camel_case_types)]
pub struct ishmemx_cuda_queue_op_t {
    /// `ISHMEMX_CUDA_OP_*`.
    pub kind: u32,
    /// Target PE (put, get, put_signal).
    pub pe: i32,
    /// `ISHMEM_SIGNAL_SET`/`ADD` (put_signal) or `ISHMEM_CMP_*` (signal wait).
    pub op: i32,
    pub reserved: u32,
    pub dest: *mut c_void,
    pub source: *const c_void,
    pub nbytes: u64,
    pub sig_addr: *mut u64,
    /// The signal value (put_signal) or the compared value (signal wait).
    pub value: u64,
    /// Collectives: the team handle, the root (broadcast), which collective
    /// (the runtime's `device::COLL_*`), the element kind and reduction
    /// operator of a reduction or scan (`device::ELEM_*`, `device::ROP_*`;
    /// the device library's `device_codes.h` is generated from them), and
    /// the element size; `nbytes` is the element count (per member for
    /// collect, fcollect and alltoall).
    pub team: i32,
    pub root: i32,
    pub coll: u32,
    pub dtype: u32,
    pub rop: u32,
    pub elem: u32,
}

const _: () = assert!(std::mem::size_of::<ishmemx_cuda_queue_op_t>() == 80);
const _: () = assert!(std::mem::offset_of!(ishmemx_cuda_queue_op_t, dest) == 16);
const _: () = assert!(std::mem::offset_of!(ishmemx_cuda_queue_op_t, value) == 48);
const _: () = assert!(std::mem::offset_of!(ishmemx_cuda_queue_op_t, team) == 56);
const _: () = assert!(std::mem::offset_of!(ishmemx_cuda_queue_op_t, elem) == 76);

/// Version of [`ishmemx_cuda_device_library_t`] and of the device state
/// protocol the library speaks.
pub const ISHMEMX_CUDA_DEVICE_LIBRARY_VERSION: u32 = 4;

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
