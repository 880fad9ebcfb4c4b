//! The ABI between the ishmem core and a proxy plugin loaded at run time.
//!
//! A proxy reaches PEs that the core cannot map (PEs on other nodes, or every
//! other PE when `ISHMEM_ENABLE_SHM=0`) and bootstraps the job when no
//! `ishmrun` started it. The MPI-3 RMA proxy (`proxy-oshmpi`) is a shared
//! object that links one MPI library; the core `dlopen`s it, so `libishmem`
//! itself never links MPI and one build of the core works with any MPI that
//! a plugin was built for.
//!
//! The plugin exports [`INIT_SYMBOL`] with the signature [`ProxyInitFn`]. It
//! fills a [`ProxyOps`] table: plain `extern "C"` functions over an opaque
//! context. Every function returns 0 on success or non-zero on failure, in
//! which case `last_error` describes what went wrong (the core reports it,
//! tagged with the PE and the API call, and aborts the job).
//!
//! Addresses on a peer are `(region, offset)` pairs: the core exposes each of
//! its symmetric regions once ([`REGION_HEAP`], [`REGION_DATA`],
//! [`REGION_CTRL`]), collectively, and the plugin maps offsets to whatever
//! its transport needs (an MPI window per region).

#![no_std]

use core::ffi::{c_char, c_int, c_void};

/// Version of this ABI; a plugin built for another version is refused.
pub const ABI_VERSION: u32 = 2;

/// Name of the initialization function a plugin exports.
pub const INIT_SYMBOL: &[u8] = b"ishmem_proxy_init\0";

/// The symmetric heap.
pub const REGION_HEAP: u32 = 0;
/// The symmetric data segment (the program's globals).
pub const REGION_DATA: u32 = 1;
/// The node's control segment (barrier flags, collective scratch words).
pub const REGION_CTRL: u32 = 2;
/// Number of regions.
pub const REGIONS: usize = 3;

/// `put`/`get`/`amo` flag: do not wait for local completion (the operation
/// completes at the next `flush`).
pub const FLAG_NBI: u32 = 1;

/// AMO opcodes (the core's `AmoOp` values).
pub const AMO_FETCH: u32 = 0;
pub const AMO_SET: u32 = 1;
pub const AMO_SWAP: u32 = 2;
pub const AMO_COMPARE_SWAP: u32 = 3;
pub const AMO_FETCH_ADD: u32 = 4;
pub const AMO_FETCH_AND: u32 = 5;
pub const AMO_FETCH_OR: u32 = 6;
pub const AMO_FETCH_XOR: u32 = 7;

/// Thread levels (OpenSHMEM's and MPI's, in the same order).
pub const THREAD_SINGLE: c_int = 0;
pub const THREAD_FUNNELED: c_int = 1;
pub const THREAD_SERIALIZED: c_int = 2;
pub const THREAD_MULTIPLE: c_int = 3;

/// What the core passes to the plugin's init function.
#[repr(C)]
#[derive(Debug)]
pub struct ProxyInitArgs {
    /// [`ABI_VERSION`] of the core.
    pub abi_version: u32,
    /// Reserved, 0.
    pub flags: u32,
    /// Pointer to the application's communicator (an `MPI_Comm` of the MPI
    /// the application uses) when it owns MPI; null to use the plugin's own
    /// (`MPI_COMM_WORLD`, initializing MPI if nobody has).
    pub app_comm: *const c_void,
    /// Thread level the program asked the OpenSHMEM library for.
    pub requested_thread: c_int,
    /// Buffer for an error message when init fails (NUL-terminated).
    pub err: *mut c_char,
    pub err_len: usize,
}

/// The plugin's function table.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ProxyOps {
    /// [`ABI_VERSION`] of the plugin.
    pub abi_version: u32,
    /// This process's rank and the job size (the PE number and count).
    pub rank: u32,
    pub size: u32,
    /// Thread level the runtime below provides (MPI's `provided`).
    pub thread_level: c_int,
    /// 1 when the plugin initialized the runtime below (and will finalize
    /// it); 0 when the application owns it.
    pub owns_runtime: u32,
    pub reserved: u32,
    /// Opaque plugin state, passed back to every function.
    pub ctx: *mut c_void,
    /// Human-readable description (e.g. the MPI library version).
    pub name: *const c_char,
    /// Collective: every rank contributes `len` bytes; `recv` gets
    /// `size * len` bytes in rank order.
    pub allgather: unsafe extern "C" fn(ctx: *mut c_void, send: *const c_void, recv: *mut c_void, len: usize) -> c_int,
    /// Collective barrier over the job.
    pub barrier: unsafe extern "C" fn(ctx: *mut c_void) -> c_int,
    /// Collective: makes `size` bytes at `base` remotely accessible as
    /// `region` of this rank (`size` may differ between ranks, and be 0).
    pub expose: unsafe extern "C" fn(ctx: *mut c_void, region: u32, base: *mut c_void, size: usize) -> c_int,
    /// Copies `len` bytes from local `src` to `offset` in `region` of `pe`.
    /// Without [`FLAG_NBI`], `src` may be reused on return.
    pub put: unsafe extern "C" fn(
        ctx: *mut c_void,
        region: u32,
        pe: u32,
        offset: usize,
        src: *const c_void,
        len: usize,
        flags: u32,
    ) -> c_int,
    /// Copies `len` bytes from `offset` in `region` of `pe` to local `dst`.
    /// Without [`FLAG_NBI`], `dst` holds the data on return.
    pub get: unsafe extern "C" fn(
        ctx: *mut c_void,
        region: u32,
        pe: u32,
        offset: usize,
        dst: *mut c_void,
        len: usize,
        flags: u32,
    ) -> c_int,
    /// Atomic `op` on the naturally aligned `size`-byte (1, 2, 4, 8)
    /// unsigned integer at `offset` in `region` of `pe`; `*old` receives the
    /// previous value (0 for `AMO_SET`). Without [`FLAG_NBI`] the operation
    /// is complete at the target on return. AMOs from all ranks to one
    /// location are atomic with respect to each other.
    pub amo: unsafe extern "C" fn(
        ctx: *mut c_void,
        region: u32,
        pe: u32,
        offset: usize,
        size: u32,
        op: u32,
        operand: u64,
        cond: u64,
        old: *mut u64,
        flags: u32,
    ) -> c_int,
    /// Completes every operation issued to `pe` (-1: to every PE), at the
    /// target.
    pub flush: unsafe extern "C" fn(ctx: *mut c_void, pe: c_int) -> c_int,
    /// Lets the runtime below make progress and serves requests from other
    /// PEs; called while the core waits, and by the core's progress thread.
    /// Must be cheap. Returns the number of events handled, or -1 on
    /// failure.
    pub progress: unsafe extern "C" fn(ctx: *mut c_void) -> c_int,
    /// Ends the whole job with `code` (does not return when it works).
    pub abort: unsafe extern "C" fn(ctx: *mut c_void, code: c_int),
    /// Collective: releases the exposed regions, and finalizes the runtime
    /// below if the plugin initialized it.
    pub finalize: unsafe extern "C" fn(ctx: *mut c_void) -> c_int,
    /// Description of the latest failure on this thread (NUL-terminated).
    pub last_error: unsafe extern "C" fn(ctx: *mut c_void) -> *const c_char,
    /// Optional, collective: allocates `size` bytes aligned to `align` that
    /// the runtime below can reach on every rank (a host OpenSHMEM
    /// library's symmetric heap). When present, the core places its heap
    /// and control segment in such memory (then `expose`s them as usual)
    /// instead of creating them itself; the memory is released by
    /// `finalize`. Null for proxies that can expose any memory (MPI).
    pub alloc:
        Option<unsafe extern "C" fn(ctx: *mut c_void, size: usize, align: usize, out: *mut *mut c_void) -> c_int>,
    /// 1 when the runtime below needs no `progress` calls from a separate
    /// thread (it completes one-sided operations without the target's
    /// help, or progresses itself); the core then starts no progress
    /// thread.
    pub self_progressing: u32,
    pub reserved2: u32,
}

/// The plugin's exported init function: fills `ops` and returns 0, or
/// returns non-zero with a message in `args.err`.
pub type ProxyInitFn = unsafe extern "C" fn(args: *const ProxyInitArgs, ops: *mut ProxyOps) -> c_int;
