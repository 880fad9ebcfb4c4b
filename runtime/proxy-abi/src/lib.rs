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

#[cfg(feature = "std")]
extern crate std;

use core::ffi::{c_char, c_int, c_void};

/// Version of this ABI; a plugin built for another version is refused.
pub const ABI_VERSION: u32 = 8;

/// [`ProxyInitArgs::flags`]: the core runs a progress thread that calls
/// `progress` whenever the plugin's thread level lets any thread call
/// (`THREAD_MULTIPLE`, or `THREAD_SERIALIZED` in a runtime the plugin
/// initialized), so requests to this PE are served while it computes.
/// Since ABI 6.
pub const INIT_PROGRESS_THREAD: u32 = 1;

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

/// `amo` flag, with [`FLAG_NBI`]: a fetching AMO that does not wait for its
/// answer. The plugin writes the old value, as an unsigned integer of the
/// AMO's `size` (not a whole `u64`), to `old` once the answer arrives, at
/// the latest by the next `flush` of `pe` or of every PE; `old` stays valid
/// until then. Without this flag, `amo` with [`FLAG_NBI`] is a posted
/// (non-fetching) AMO and `*old` is 0. Since ABI 8.
pub const FLAG_FETCH: u32 = 2;

/// Writes an AMO's old value `v` to `dst` as an unsigned integer of `size`
/// bytes, as [`FLAG_FETCH`] asks (any other `size` writes all 8).
///
/// # Safety
/// `dst` is valid for a write of `size` bytes (no alignment needed).
pub unsafe fn write_old(dst: *mut u8, v: u64, size: usize) {
    // SAFETY: the caller's contract; the writes are unaligned.
    unsafe {
        match size {
            1 => dst.write(v as u8),
            2 => dst.cast::<u16>().write_unaligned(v as u16),
            4 => dst.cast::<u32>().write_unaligned(v as u32),
            _ => dst.cast::<u64>().write_unaligned(v),
        }
    }
}

/// Makes [`AmoOp`] and everything that lists its codes from one table: a
/// row is the operation, its ABI code and the name the device library gives
/// it (`ISHMEMI_<name>` in its generated `device_codes.h`).
macro_rules! amo_ops {
    ($($op:ident = $code:literal, $device:literal;)*) => {
        /// An atomic memory operation. Non-fetching API forms use the fetching op
        /// and drop the result. The discriminants are the ABI's AMO codes (and the
        /// device ring's), so `op as u32` is what crosses the C boundary.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(u32)]
        pub enum AmoOp {
            $($op = $code,)*
        }

        impl AmoOp {
            /// Every operation, in the order of its code.
            pub const ALL: &'static [AmoOp] = &[$(AmoOp::$op),*];

            /// The operation with ABI code `code`, if there is one.
            pub const fn from_code(code: u32) -> Option<AmoOp> {
                match code {
                    $($code => Some(AmoOp::$op),)*
                    _ => None,
                }
            }

            /// The device library's name of the operation's code
            /// (`ISHMEMI_<name>`, generated from this table).
            pub const fn device_name(self) -> &'static str {
                match self {
                    $(AmoOp::$op => $device,)*
                }
            }
        }
    };
}

amo_ops! {
    Fetch = 0, "FETCH";
    Set = 1, "SET";
    Swap = 2, "SWAP";
    CompareSwap = 3, "CSWAP";
    FetchAdd = 4, "FADD";
    FetchAnd = 5, "FAND";
    FetchOr = 6, "FOR";
    FetchXor = 7, "FXOR";
}

// The codes as both sides use them: 0, 1, ... in table order (device code
// switches on them, with its last case as the default), each decoded back
// to itself, and within the low byte of the ring message's AMO field (the
// size goes above it). The device library's generated header asserts the
// same values.
const _: () = {
    let mut i = 0;
    while i < AmoOp::ALL.len() {
        let op = AmoOp::ALL[i];
        assert!(op as u32 == i as u32, "AMO codes are 0, 1, ... in table order");
        assert!(matches!(AmoOp::from_code(op as u32), Some(o) if o as u32 == op as u32));
        assert!((op as u32) < 256, "AMO codes fit the ring's 8-bit field");
        i += 1;
    }
    assert!(AmoOp::from_code(AmoOp::ALL.len() as u32).is_none());
};

impl AmoOp {
    /// The new value of a word holding `old` after this operation with
    /// `operand` (and compare value `cond`), all in the low `bits` bits.
    pub const fn apply_to(self, old: u64, operand: u64, cond: u64, bits: u32) -> u64 {
        let lane = if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 };
        (match self {
            AmoOp::Fetch => old,
            AmoOp::Set | AmoOp::Swap => operand,
            AmoOp::CompareSwap => {
                if old & lane == cond & lane {
                    operand
                } else {
                    old
                }
            }
            AmoOp::FetchAdd => old.wrapping_add(operand),
            AmoOp::FetchAnd => old & operand,
            AmoOp::FetchOr => old | operand,
            AmoOp::FetchXor => old ^ operand,
        }) & lane
    }
}

/// AMO codes as carried by [`ProxyOps::amo`].
pub const AMO_FETCH: u32 = AmoOp::Fetch as u32;
pub const AMO_SET: u32 = AmoOp::Set as u32;
pub const AMO_SWAP: u32 = AmoOp::Swap as u32;
pub const AMO_COMPARE_SWAP: u32 = AmoOp::CompareSwap as u32;
pub const AMO_FETCH_ADD: u32 = AmoOp::FetchAdd as u32;
pub const AMO_FETCH_AND: u32 = AmoOp::FetchAnd as u32;
pub const AMO_FETCH_OR: u32 = AmoOp::FetchOr as u32;
pub const AMO_FETCH_XOR: u32 = AmoOp::FetchXor as u32;

/// The AMO helpers every implementation shares: the core's load/store path
/// and the MPI plugin's AMO server apply operations to local memory with
/// the same CPU atomics (so both are atomic with each other); a proxy whose
/// library only has 64-bit atomics builds narrower ones from them.
pub mod atomic {
    use super::AmoOp;
    use core::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering::SeqCst};

    /// Applies `op` to the naturally aligned `size`-byte (1, 2, 4 or 8)
    /// unsigned integer at `addr` with a sequentially consistent CPU
    /// atomic; `operand` and `cond` carry the value in their low `size`
    /// bytes. Returns the old value (0 for `Set`).
    ///
    /// # Safety
    /// `addr` is aligned to `size` and valid for reads and writes of it, and
    /// every concurrent access to those bytes is atomic.
    #[inline(always)]
    pub unsafe fn apply(addr: *mut u8, size: usize, op: AmoOp, operand: u64, cond: u64) -> u64 {
        macro_rules! rmw {
            ($atomic:ty, $t:ty) => {{
                // SAFETY: the caller guarantees alignment, validity and that
                // every concurrent access is atomic.
                let at = unsafe { &*(addr as *const $atomic) };
                let v = operand as $t;
                (match op {
                    AmoOp::Fetch => at.load(SeqCst),
                    AmoOp::Set => {
                        at.store(v, SeqCst);
                        0
                    }
                    AmoOp::Swap => at.swap(v, SeqCst),
                    AmoOp::CompareSwap => match at.compare_exchange(cond as $t, v, SeqCst, SeqCst) {
                        Ok(x) | Err(x) => x,
                    },
                    AmoOp::FetchAdd => at.fetch_add(v, SeqCst),
                    AmoOp::FetchAnd => at.fetch_and(v, SeqCst),
                    AmoOp::FetchOr => at.fetch_or(v, SeqCst),
                    AmoOp::FetchXor => at.fetch_xor(v, SeqCst),
                }) as u64
            }};
        }
        match size {
            1 => rmw!(AtomicU8, u8),
            2 => rmw!(AtomicU16, u16),
            4 => rmw!(AtomicU32, u32),
            _ => rmw!(AtomicU64, u64),
        }
    }

    /// An 8-, 16- or 32-bit AMO at `addr` performed as a compare-and-swap
    /// loop on the aligned 64-bit word containing it (little-endian lanes),
    /// for a library that only offers 64-bit atomics. `fetch(word)` reads
    /// the word atomically, `cas(word, expected, new)` is the library's
    /// compare-and-swap returning the old word. Returns the old lane value.
    pub fn narrow_by_word(
        addr: usize, size: usize, op: AmoOp, operand: u64, cond: u64, fetch: &mut dyn FnMut(usize) -> u64,
        cas: &mut dyn FnMut(usize, u64, u64) -> u64,
    ) -> u64 {
        let word = addr & !7;
        let bits = (size * 8) as u32;
        let shift = ((addr & 7) * 8) as u32;
        let lane: u64 = if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 };
        let mask = lane << shift;
        let mut old_word = fetch(word);
        loop {
            let old = (old_word & mask) >> shift;
            if op == AmoOp::Fetch {
                return old;
            }
            let new = op.apply_to(old, operand & lane, cond & lane, bits);
            let new_word = (old_word & !mask) | (new << shift);
            if new_word == old_word {
                return old;
            }
            let got = cas(word, old_word, new_word);
            if got == old_word {
                return old;
            }
            old_word = got;
        }
    }
}

/// The text of a panic's payload (`panic!` with a literal or a format).
#[cfg(feature = "std")]
pub fn panic_message(p: &(dyn core::any::Any + Send)) -> std::string::String {
    use std::string::ToString;
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<std::string::String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string())
}

/// Runs the body of an `extern "C"` function of a plugin so that a Rust
/// panic does not unwind into C: it becomes the error return `on_panic`
/// (and the panic message goes to `report`, e.g. the plugin's last error).
#[cfg(feature = "std")]
pub fn ffi_guard<R>(on_panic: R, report: impl FnOnce(&str), f: impl FnOnce() -> R) -> R {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            report(&panic_message(&*p));
            on_panic
        }
    }
}

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
    /// [`INIT_PROGRESS_THREAD`] or 0 (reserved before ABI 6).
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
    /// Blocking puts of at most this many bytes may leave from a copy the
    /// plugin keeps until the next flush, instead of waiting for local
    /// completion (0: never). Since ABI 3.
    pub put_copy_max: usize,
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
    /// is complete at the target on return; with it and [`FLAG_FETCH`] the
    /// old value arrives later (see there). AMOs from all ranks to one
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
    /// Optional, collective (since ABI 4): exposes `size` bytes of `region`
    /// of this rank that the host cannot load from or store to (a heap in
    /// GPU memory). The plugin serves other ranks' puts, gets and AMOs on
    /// it by calling `target` (which stays valid until `finalize`) instead
    /// of touching memory; every rank calls `expose` or `expose_served`
    /// for each region, in the same order. Null for proxies that cannot
    /// serve so (the core then refuses such heaps at init).
    pub expose_served:
        Option<unsafe extern "C" fn(ctx: *mut c_void, region: u32, size: usize, target: *const TargetOps) -> c_int>,
    /// 1 when the runtime below needs no `progress` calls from a separate
    /// thread (it completes one-sided operations without the target's
    /// help, or progresses itself); the core then starts no progress
    /// thread.
    pub self_progressing: u32,
    pub reserved2: u32,
    /// Optional (since ABI 6): a block-strided put, `nblocks` blocks of
    /// `block` bytes, block `b` from local `src + b * local_stride` to
    /// `offset + b * target_stride` in `region` of `pe` (strides in bytes,
    /// either sign; block 0 is at `offset`, every block inside the
    /// region). Flags and completion as [`ProxyOps::put`]. Null: the core
    /// puts block by block.
    pub put_strided: Option<
        unsafe extern "C" fn(
            ctx: *mut c_void,
            region: u32,
            pe: u32,
            offset: usize,
            src: *const c_void,
            strides: *const Strides,
            flags: u32,
        ) -> c_int,
    >,
    /// Optional (since ABI 6): the block-strided get, the mirror of
    /// `put_strided` (block `b` from `offset + b * target_stride` to local
    /// `dst + b * local_stride`); completion as [`ProxyOps::get`].
    pub get_strided: Option<
        unsafe extern "C" fn(
            ctx: *mut c_void,
            region: u32,
            pe: u32,
            offset: usize,
            dst: *mut c_void,
            strides: *const Strides,
            flags: u32,
        ) -> c_int,
    >,
    /// Optional (since ABI 8): the AMOs `reqs[..n]` (their `offset`,
    /// `size`, `op`, `operand`, `cond`; `posted` set as below) on `region`
    /// of `pe`, each as `amo` does it, sent together (in one message where
    /// the plugin can), the target applying them in one pass of its device
    /// where it can. With [`FLAG_NBI`] alone they are posted: nobody waits,
    /// `old` is unused (may be null), and the next flush of every PE
    /// completes them. With [`FLAG_NBI`] and [`FLAG_FETCH`], `old[i]`
    /// receives request `i`'s previous value (a whole `u64`, the value
    /// zero-extended) by the next flush of `pe` or of every PE; `old` stays
    /// valid until then. With neither, the old values are in `old` on
    /// return. At the target they keep the order `amo_many` keeps. Null:
    /// the core sends them one by one.
    pub amo_batch: Option<
        unsafe extern "C" fn(
            ctx: *mut c_void,
            region: u32,
            pe: u32,
            n: usize,
            reqs: *const TargetAmo,
            old: *mut u64,
            flags: u32,
        ) -> c_int,
    >,
}

/// The shape of a block-strided transfer ([`ProxyOps::put_strided`]):
/// `nblocks` blocks of `block` bytes, consecutive blocks `target_stride`
/// bytes apart on the remote side and `local_stride` bytes apart on this
/// one.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Strides {
    pub block: usize,
    pub nblocks: usize,
    pub target_stride: isize,
    pub local_stride: isize,
}

/// The core's access to one of its regions that the host cannot load from
/// or store to (see [`ProxyOps::expose_served`]). Offsets are relative to
/// the region, checked by the plugin against its size. A failure inside a
/// callback is reported by the core itself (it ends the job); the
/// callbacks return 0.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TargetOps {
    /// Passed back to every callback.
    pub ctx: *mut c_void,
    /// Copies `len` bytes from host memory at `src` to `offset`.
    pub write: unsafe extern "C" fn(ctx: *mut c_void, offset: usize, src: *const c_void, len: usize) -> c_int,
    /// Copies `len` bytes at `offset` to host memory at `dst`.
    pub read: unsafe extern "C" fn(ctx: *mut c_void, offset: usize, dst: *mut c_void, len: usize) -> c_int,
    /// An AMO as [`ProxyOps::amo`] describes, on the naturally aligned
    /// `size`-byte value at `offset`, atomic with the device's own atomics
    /// on it; `*old` receives the previous value.
    pub amo: unsafe extern "C" fn(
        ctx: *mut c_void,
        offset: usize,
        size: u32,
        op: u32,
        operand: u64,
        cond: u64,
        old: *mut u64,
    ) -> c_int,
    /// `len` bytes of host memory that `write` and `read` move fastest
    /// (pinned for the device), valid for the rest of the process: the
    /// plugin's staging buffer. Never null (a failure ends the job).
    pub staging: unsafe extern "C" fn(ctx: *mut c_void, len: usize) -> *mut c_void,
    /// Starts a `write` that may still run when it returns (on the
    /// device's copy engine): `src` must stay unchanged until
    /// `writes_done` returns 1. Writes started end in order.
    pub write_start: unsafe extern "C" fn(ctx: *mut c_void, offset: usize, src: *const c_void, len: usize) -> c_int,
    /// 1 when every write started by `write_start` has ended, else 0;
    /// with `wait` non-zero, waits for them and returns 1.
    pub writes_done: unsafe extern "C" fn(ctx: *mut c_void, wait: u32) -> c_int,
    /// (Since ABI 7.) The AMOs `reqs[..n]`, each as `amo` does it, in one
    /// pass of the device where it can (the plugin's run of requests that
    /// arrived together); `old[i]` receives request `i`'s previous value.
    /// A request is applied after the `posted` ones before it on the same
    /// 8-byte word (its issuer did not wait for them, and may have issued
    /// it after them), except that posted adds (ands, ors, xors) in a row
    /// on one location may be applied in any order among themselves; the
    /// others in any order (a run holds no fence: a flush marker ends it).
    /// `n` is at least 1.
    pub amo_many: unsafe extern "C" fn(ctx: *mut c_void, n: usize, reqs: *const TargetAmo, old: *mut u64) -> c_int,
}

/// One AMO of [`TargetOps::amo_many`]: as [`TargetOps::amo`]'s arguments,
/// and whether its issuer waits for it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TargetAmo {
    pub offset: usize,
    pub size: u32,
    pub op: u32,
    pub operand: u64,
    pub cond: u64,
    /// Non-zero when nobody waits for the result (a posted AMO).
    pub posted: u32,
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<TargetAmo>() == 40, "TargetAmo is 40 bytes on every target");

/// The plugin's exported init function: fills `ops` and returns 0, or
/// returns non-zero with a message in `args.err`.
pub type ProxyInitFn = unsafe extern "C" fn(args: *const ProxyInitArgs, ops: *mut ProxyOps) -> c_int;
