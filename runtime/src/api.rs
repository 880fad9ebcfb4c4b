//! The runtime's public surface: everything the C ABI (`bindings/c`), the
//! safe Rust crate (`bindings/rust`), the generator (`bindings/gen`) and the
//! launcher (`ishmrun`, `ishmem-info`) use. Every other module of the
//! runtime is private to it; the `layers` test checks that code outside the
//! runtime names `ishmem_runtime::api` and nothing else.
//!
//! The root holds what a binding needs to implement the API (the lifecycle,
//! the running PE, errors, the API's constants and value types);
//! [`codes`] the stream collectives' codes the typed families pass;
//! [`abi`] the tables the generator turns into headers shared with device
//! code; [`launch`] what the launcher and the diagnostics tool use.

// The lifecycle and the running PE.
pub use crate::core::{
    finalize, init, init_with, state, InitError, InitOptions, Runtime, SPEC_MAJOR, SPEC_MINOR, VENDOR,
};
pub use crate::state::State;

// Errors: the one way a call reports a fatal error, a warning, or ends the
// job.
pub use crate::error::{abort_job, fatal, global_exit, panic_message, warn, ERROR_EXIT_CODE};

// The API's constants and value types.
pub use crate::alloc::MIN_ALIGN;
pub use crate::amo::{
    from_bits, CmpValues, SyncMode, CMP_EQ, CMP_GE, CMP_GT, CMP_LE, CMP_LT, CMP_NE, SIGNAL_ADD, SIGNAL_SET,
};
pub use crate::coll::Group;
pub use crate::collsig::RedOp;
pub use crate::ctx::{CTX_DEFAULT, CTX_INVALID, CTX_NOSTORE, CTX_PRIVATE, CTX_SERIALIZED, NO_TEAM};
pub use crate::device::cuda::library::{ishmemx_cuda_device_library_t, register_library};
pub use crate::device::{Native, QueueColl, QueueOp};
pub use crate::device_state::ishmemx_device_state_t;
pub use crate::env::{launched_by_mpi, under_ishmrun, DeviceKind};
pub use crate::team::{Team, TEAM_INVALID, TEAM_NODE, TEAM_SHARED, TEAM_WORLD};
pub use crate::types::{AmoOp, Blocks};

/// The codes a stream-ordered collective passes (which collective, the
/// element kind, the reduction operator) and what a long device wait waits
/// in: the runtime's tables, which the device library's generated
/// `device_codes.h` repeats.
pub mod codes {
    pub use crate::device::sig_code_lists;
    pub use crate::device::{
        COLL_ALLTOALL, COLL_BROADCAST, COLL_COLLECT, COLL_EXSCAN, COLL_FCOLLECT, COLL_INSCAN, COLL_REDUCE,
        COLL_TEAM_SYNC, ELEM_F32, ELEM_F64, ELEM_I16, ELEM_I32, ELEM_I64, ELEM_I8, ELEM_U16, ELEM_U32, ELEM_U64,
        ELEM_U8, ROP_AND, ROP_MAX, ROP_MIN, ROP_OR, ROP_PROD, ROP_SUM, ROP_XOR, STREAM_CODES,
    };
}

/// The tables the generator (`bindings/gen`) writes into headers, docs and
/// man pages: the host/device structs with their field offsets, the ring's
/// layout, the device sync words, the CUDA library's registration structs,
/// the queue kernels and the environment table.
pub mod abi {
    pub use crate::activeset::SYNC_SIZE;
    pub use crate::device::cuda::library::{
        ishmemx_cuda_queue_op_t, library_fields, queue_op_fields, ISHMEMX_CUDA_DEVICE_LIBRARY_VERSION, QUEUE_OP_KINDS,
    };
    pub use crate::device::QUEUE_KERNELS;
    pub use crate::device_state::{field_offsets, FIELDS};
    pub use crate::env::VARS;
    pub use crate::ring::{
        layout as ring_layout, COMPLETION_FIELDS, DEVICE_BAD_ADDR, DEVICE_BAD_PE, DEVICE_COLL_MISMATCH,
        DEVICE_CTRL_MISMATCH, MSG_FIELDS, RING_AMO, RING_CTRL_GET, RING_CTRL_SET, RING_ERROR, RING_FENCE, RING_G,
        RING_GET, RING_NBI, RING_NOP, RING_P, RING_PUT, RING_PUT_SIGNAL, RING_QUIET, RING_SLOTS,
    };
    pub use crate::sync_words::{
        SYNC_COUNTS, SYNC_CSEQ, SYNC_FLAGS, SYNC_LL, SYNC_LLDONE, SYNC_LL_BYTES, SYNC_LL_PES, SYNC_LL_SLOTS,
        SYNC_LL_WORDS, SYNC_MAX_PES, SYNC_PAIRS, SYNC_SCRATCH, SYNC_SCRATCH_BYTES, SYNC_SCRATCH_WORDS, SYNC_SLOTS,
        SYNC_WORDS,
    };
}

/// What the launcher (`ishmrun`) and the diagnostics tool (`ishmem-info`)
/// use: the bootstrap's wire protocol, the control segment the launcher
/// creates (`memfd`, `map_region`) and watches, the environment as the
/// library reads it, and the probes of each device backend and proxy
/// plugin. The runtime's tests of the message parsers (`Sig`, `RawMsg`)
/// use it too.
pub mod launch {
    pub use crate::boot::wire;
    pub use crate::collsig::Sig;
    pub use crate::ctrl::{ctrl_size, Ctrl, LIFE_FINALIZED, LIFE_RUNNING};
    pub use crate::env::{cuda_module_loading, effective, foreign_launcher, parse_size, unknown_vars, Config, Source};
    pub use crate::mem::{map_region, memfd};
    pub use crate::remote::plugin::installed_plugins;
    pub use crate::ring::RawMsg;

    /// The device backends' probes: what each finds on this machine, or why
    /// it cannot run here.
    pub use crate::device::opencl::probe_cpu_platform;
    pub use crate::device::ze::probe as probe_level_zero;

    /// Whether the CUDA driver loads (the error lists every path tried).
    pub fn probe_cuda() -> Result<(), crate::dynlib::LoadError> {
        crate::device::cuda::driver::Driver::probe()
    }
}
