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

/// The fields of [`ishmemx_cuda_queue_op_t`] in order, with their offsets
/// and C types: ishmem-gen writes the device library's copy of the struct
/// (`device-lib/cuda/library_abi.h`) from it, every field asserted there
/// at the offset the runtime uses.
pub fn queue_op_fields() -> Vec<(&'static str, &'static str, usize)> {
    use std::mem::offset_of;
    type S = ishmemx_cuda_queue_op_t;
    vec![
        ("kind", "uint32_t", offset_of!(S, kind)),
        ("pe", "int32_t", offset_of!(S, pe)),
        ("op", "int32_t", offset_of!(S, op)),
        ("reserved", "uint32_t", offset_of!(S, reserved)),
        ("dest", "void *", offset_of!(S, dest)),
        ("source", "const void *", offset_of!(S, source)),
        ("nbytes", "uint64_t", offset_of!(S, nbytes)),
        ("sig_addr", "uint64_t *", offset_of!(S, sig_addr)),
        ("value", "uint64_t", offset_of!(S, value)),
        ("team", "int32_t", offset_of!(S, team)),
        ("root", "int32_t", offset_of!(S, root)),
        ("coll", "uint32_t", offset_of!(S, coll)),
        ("dtype", "uint32_t", offset_of!(S, dtype)),
        ("rop", "uint32_t", offset_of!(S, rop)),
        ("elem", "uint32_t", offset_of!(S, elem)),
    ]
}

/// The fields of [`ishmemx_cuda_device_library_t`], as
/// [`queue_op_fields`] (the function pointers' C declarators with `{}` for
/// the name).
pub fn library_fields() -> Vec<(&'static str, &'static str, usize)> {
    use std::mem::offset_of;
    type S = ishmemx_cuda_device_library_t;
    vec![
        ("version", "uint32_t", offset_of!(S, version)),
        ("reserved", "uint32_t", offset_of!(S, reserved)),
        ("install", "int (*{})(int device, void *state)", offset_of!(S, install)),
        (
            "enqueue",
            "int (*{})(const ishmemx_cuda_queue_op_t *op, void *stream, void *const *deps, uint32_t num_deps)",
            offset_of!(S, enqueue),
        ),
    ]
}

/// The operation kinds ([`ishmemx_cuda_queue_op_t::kind`]) by name.
pub const QUEUE_OP_KINDS: &[(&str, u32)] = &[
    ("PUT", ISHMEMX_CUDA_OP_PUT),
    ("GET", ISHMEMX_CUDA_OP_GET),
    ("BARRIER_ALL", ISHMEMX_CUDA_OP_BARRIER_ALL),
    ("QUIET", ISHMEMX_CUDA_OP_QUIET),
    ("PUT_SIGNAL", ISHMEMX_CUDA_OP_PUT_SIGNAL),
    ("SIGNAL_WAIT_UNTIL", ISHMEMX_CUDA_OP_SIGNAL_WAIT_UNTIL),
    ("SYNC_ALL", ISHMEMX_CUDA_OP_SYNC_ALL),
    ("COLL", ISHMEMX_CUDA_OP_COLL),
];

/// Version of [`ishmemx_cuda_device_library_t`] and of the device state
/// protocol the library speaks.
pub const ISHMEMX_CUDA_DEVICE_LIBRARY_VERSION: u32 = 4;

static LIBRARY: AtomicPtr<ishmemx_cuda_device_library_t> = AtomicPtr::new(std::ptr::null_mut());

/// A CUDA device library of another version than this libishmem's.
#[derive(Debug)]
pub struct VersionMismatch {
    /// The version the device library speaks.
    pub library: u32,
}

impl std::fmt::Display for VersionMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the CUDA device library speaks version {}, this libishmem {ISHMEMX_CUDA_DEVICE_LIBRARY_VERSION}: rebuild the program against the installed headers",
            self.library
        )
    }
}

impl std::error::Error for VersionMismatch {}

/// Registers the CUDA device library (called by its constructor).
pub fn register_library(lib: &'static ishmemx_cuda_device_library_t) -> Result<(), VersionMismatch> {
    if lib.version != ISHMEMX_CUDA_DEVICE_LIBRARY_VERSION {
        return Err(VersionMismatch { library: lib.version });
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The tables name every field once, in order, ending at the struct's
    /// size: a field added to a struct and not to its table fails here.
    #[test]
    fn the_field_tables_cover_the_structs() {
        for (fields, size) in [
            (queue_op_fields(), std::mem::size_of::<ishmemx_cuda_queue_op_t>()),
            (library_fields(), std::mem::size_of::<ishmemx_cuda_device_library_t>()),
        ] {
            let mut end = 0;
            for (name, ty, off) in &fields {
                assert!(*off >= end, "{name} overlaps the field before it");
                let width = if ty.contains('*') || ty.contains("64") { 8 } else { 4 };
                assert!(off - end < width, "a field is missing before {name} (gap at {end})");
                end = off + width;
            }
            assert!(size - end < 8, "a field is missing at the end ({end} of {size} bytes)");
        }
        let kinds: Vec<u32> = QUEUE_OP_KINDS.iter().map(|k| k.1).collect();
        assert_eq!(kinds, (0..kinds.len() as u32).collect::<Vec<_>>(), "every kind once, in order");
    }
}
