//! Generic bodies of the typed C routines; `typed.rs` instantiates them.

use crate::guard;
pub use ishmem_runtime::api::RedOp;
use ishmem_runtime::api::{fatal, state, Blocks};
use std::ffi::c_int;
use std::mem::size_of;

#[inline(always)]
fn bytes<T>(call: &str, nelems: usize) -> usize {
    match nelems.checked_mul(size_of::<T>()) {
        Some(b) => b,
        None => fatal(call, format_args!("nelems {nelems} is too large for elements of {} bytes", size_of::<T>())),
    }
}

/// Typed `ishmemx_TYPE_put_on_queue` / `get_on_queue` (Intel SHMEM's
/// queue-ordered RMA): `nelems` elements, returning the `cl_event`.
///
/// # Safety
/// `deps` points to `num_deps` events when `num_deps > 0`; the local
/// buffer (`src` of a put, `dest` of a get) stays valid for `nelems`
/// elements until the event completes.
#[allow(clippy::too_many_arguments)]
pub unsafe fn rma_on_queue<T>(
    call: &'static str, put: bool, dest: *mut T, src: *const T, nelems: usize, pe: c_int, queue: *mut std::ffi::c_void,
    num_deps: u32, deps: *const *mut std::ffi::c_void,
) -> *mut std::ffi::c_void {
    let nbytes = guard(call, || bytes::<T>(call, nelems));
    // SAFETY: `deps` points to `num_deps` events and the local buffer stays
    // valid for `nbytes` bytes until the event completes (this function's
    // contract), which is `plain::rma_on_queue`'s.
    unsafe { crate::plain::rma_on_queue(call, put, dest.cast(), src.cast(), nbytes, pe, queue, num_deps, deps) }
}

/// A typed collective launched on a CUDA stream: `kind` is the runtime's
/// `device::COLL_*`, `dtype` the element kind and `rop` the reduction
/// operator (`ishmemx_cuda_queue_op_t`'s numbering).
///
/// # Safety
/// `dest` and `source` are symmetric addresses valid for the counts given
/// (the runtime checks their extents in the heap before launching).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn coll_on_stream<T>(
    call: &'static str, kind: u32, team: c_int, dest: *mut T, source: *const T, nelems: usize, root: c_int, dtype: u32,
    rop: u32, stream: *mut std::ffi::c_void,
) -> c_int {
    let c = ishmem_runtime::api::QueueColl {
        kind,
        team,
        dest: dest.cast(),
        source: source.cast(),
        nelems,
        elem: std::mem::size_of::<T>(),
        root,
        dtype,
        rop,
    };
    crate::plain::coll_on_stream(call, c, stream)
}

/// `nelems` elements from local `src` to symmetric `dest` on `pe`.
///
/// # Safety
/// `src` is valid for reads of `nelems` elements (the runtime checks
/// `dest` in the symmetric memory).
#[inline(always)]
pub unsafe fn put<T>(call: &'static str, dest: *mut T, src: *const T, nelems: usize, pe: c_int) {
    guard(call, || {
        let st = state(call);
        // SAFETY: `src` is valid for reads of `nelems` elements, the byte
        // count passed (this function's contract); the runtime checks the
        // range of `dest`.
        unsafe { st.put(call, dest.cast(), src.cast(), bytes::<T>(call, nelems), pe) }
    })
}

/// `nelems` elements from symmetric `src` on `pe` to local `dest`.
///
/// # Safety
/// `dest` is valid for writes of `nelems` elements (the runtime checks
/// `src` in the symmetric memory).
#[inline(always)]
pub unsafe fn get<T>(call: &'static str, dest: *mut T, src: *const T, nelems: usize, pe: c_int) {
    guard(call, || {
        let st = state(call);
        // SAFETY: `dest` is valid for writes of `nelems` elements, the byte
        // count passed (this function's contract); the runtime checks the
        // range of `src`.
        unsafe { st.get(call, dest.cast(), src.cast(), bytes::<T>(call, nelems), pe) }
    })
}

/// [`put`], complete at the next quiet.
///
/// # Safety
/// `src` is valid for reads of `nelems` elements and unchanged until the
/// next quiet.
#[inline(always)]
pub unsafe fn put_nbi<T>(call: &'static str, dest: *mut T, src: *const T, nelems: usize, pe: c_int) {
    guard(call, || {
        let st = state(call);
        // SAFETY: `src` is valid for reads of `nelems` elements, the byte
        // count passed, until the next quiet (this function's contract); the
        // runtime checks the range of `dest`.
        unsafe { st.put_nbi(call, dest.cast(), src.cast(), bytes::<T>(call, nelems), pe) }
    })
}

/// [`get`], complete at the next quiet.
///
/// # Safety
/// `dest` is valid for writes of `nelems` elements until the next quiet.
#[inline(always)]
pub unsafe fn get_nbi<T>(call: &'static str, dest: *mut T, src: *const T, nelems: usize, pe: c_int) {
    guard(call, || {
        let st = state(call);
        // SAFETY: `dest` is valid for writes of `nelems` elements, the byte
        // count passed, until the next quiet (this function's contract); the
        // runtime checks the range of `src`.
        unsafe { st.get_nbi(call, dest.cast(), src.cast(), bytes::<T>(call, nelems), pe) }
    })
}

/// One element to symmetric `dest` on `pe`.
///
/// # Safety
/// `T` is a plain value type (the routine's C type; the runtime checks
/// `dest`).
#[inline(always)]
pub unsafe fn p<T: Copy>(call: &'static str, dest: *mut T, value: T, pe: c_int) {
    // SAFETY: T is a plain value type (this function's contract), as
    // `State::p` asks; it checks the range of `dest`.
    guard(call, || unsafe { state(call).p(call, dest, value, pe) })
}

/// One element from symmetric `src` on `pe`.
///
/// # Safety
/// As [`p`].
#[inline(always)]
pub unsafe fn g<T: Copy>(call: &'static str, src: *const T, pe: c_int) -> T {
    // SAFETY: T is a plain value type (this function's contract), as
    // `State::g` asks; it checks the range of `src`.
    guard(call, || unsafe { state(call).g(call, src, pe) })
}

/// `nelems` single elements of `T`, `dst` elements apart at the
/// destination and `sst` at the source (`iput`, `iget`, `alltoalls`).
#[inline(always)]
fn elements<T>(nelems: usize, dst: isize, sst: isize) -> Blocks {
    Blocks { elem: size_of::<T>(), bsize: 1, nblocks: nelems, dst, sst }
}

/// Strided put: `nelems` elements, `sst` elements apart in local `src`,
/// to `dst` elements apart in symmetric `dest` on `pe`.
///
/// # Safety
/// `src` is valid for reads of `nelems` elements `sst` elements apart
/// (the runtime checks `dest`).
#[inline(always)]
pub unsafe fn iput<T>(
    call: &'static str, dest: *mut T, src: *const T, dst: isize, sst: isize, nelems: usize, pe: c_int,
) {
    let shape = elements::<T>(nelems, dst, sst);
    // SAFETY: `src` is valid for the strided reads `shape` describes (this
    // function's contract), as `State::ibput` asks; it checks the extent of
    // `dest`.
    guard(call, || unsafe { state(call).ibput(call, dest.cast(), src.cast(), shape, pe) })
}

/// Strided get, the mirror of [`iput`].
///
/// # Safety
/// `dest` is valid for writes of `nelems` elements `dst` elements apart
/// (the runtime checks `src`).
#[inline(always)]
pub unsafe fn iget<T>(
    call: &'static str, dest: *mut T, src: *const T, dst: isize, sst: isize, nelems: usize, pe: c_int,
) {
    let shape = elements::<T>(nelems, dst, sst);
    // SAFETY: `dest` is valid for the strided writes `shape` describes
    // (this function's contract), as `State::ibget` asks; it checks the
    // extent of `src`.
    guard(call, || unsafe { state(call).ibget(call, dest.cast(), src.cast(), shape, pe) })
}

/// Block-strided put: `nblocks` blocks of `bsize` elements, `sst` elements
/// apart in local `src`, to `dst` elements apart in symmetric `dest`.
///
/// # Safety
/// `src` is valid for reads of those blocks (the runtime checks `dest`).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn ibput<T>(
    call: &'static str, dest: *mut T, src: *const T, dst: isize, sst: isize, bsize: usize, nblocks: usize, pe: c_int,
) {
    guard(call, || {
        let shape = Blocks { elem: size_of::<T>(), bsize, nblocks, dst, sst };
        // SAFETY: `src` is valid for the block-strided reads `shape`
        // describes (this function's contract), as `State::ibput` asks; it
        // checks the extent of `dest`.
        unsafe { state(call).ibput(call, dest.cast(), src.cast(), shape, pe) }
    })
}

/// Block-strided get, the mirror of [`ibput`].
///
/// # Safety
/// `dest` is valid for writes of the blocks (the runtime checks `src`).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn ibget<T>(
    call: &'static str, dest: *mut T, src: *const T, dst: isize, sst: isize, bsize: usize, nblocks: usize, pe: c_int,
) {
    guard(call, || {
        let shape = Blocks { elem: size_of::<T>(), bsize, nblocks, dst, sst };
        // SAFETY: `dest` is valid for the block-strided writes `shape`
        // describes (this function's contract), as `State::ibget` asks; it
        // checks the extent of `src`.
        unsafe { state(call).ibget(call, dest.cast(), src.cast(), shape, pe) }
    })
}

/// The 128-bit element of the `*128` sized routines.
#[derive(Clone, Copy)]
#[repr(C)]
pub struct Bits128([u64; 2]);

// ----- AMOs, signals, point-to-point synchronization ----------------------

use ishmem_runtime::api::{from_bits, AmoOp, CmpValues, SyncMode};

#[inline(always)]
pub fn one<T: Copy>() -> T {
    from_bits(1)
}

#[inline(always)]
pub fn zero<T: Copy>() -> T {
    from_bits(0)
}

/// A blocking or fetching AMO on symmetric `dest` at `pe`.
///
/// # Safety
/// `T` is a plain 1-, 2-, 4- or 8-byte integer or floating-point type
/// (the routine's C type; the runtime checks `dest`).
#[inline(always)]
pub unsafe fn amo<T: Copy>(call: &'static str, dest: *const T, op: AmoOp, value: T, cond: T, pe: c_int) -> T {
    // SAFETY: T is a plain AMO type (this function's contract), as
    // `State::amo` asks; it checks `dest`.
    guard(call, || unsafe { state(call).amo(call, dest, op, value, cond, pe) })
}

/// A non-fetching AMO (set, inc, add, and, or, xor).
///
/// # Safety
/// As [`amo`].
#[inline(always)]
pub unsafe fn post<T: Copy>(call: &'static str, dest: *const T, op: AmoOp, value: T, pe: c_int) {
    // SAFETY: T is a plain AMO type (this function's contract), as
    // `State::amo_post` asks; it checks `dest`.
    guard(call, || unsafe { state(call).amo_post(call, dest, op, value, pe) })
}

/// Atomic fetch.
///
/// # Safety
/// As [`amo`].
#[inline(always)]
pub unsafe fn fetch<T: Copy>(call: &'static str, source: *const T, pe: c_int) -> T {
    // SAFETY: this function's contract is `amo`'s.
    unsafe { amo(call, source, AmoOp::Fetch, zero(), zero(), pe) }
}

/// A fetching AMO without a condition.
///
/// # Safety
/// As [`amo`].
#[inline(always)]
pub unsafe fn op<T: Copy>(call: &'static str, dest: *const T, op: AmoOp, value: T, pe: c_int) -> T {
    // SAFETY: this function's contract is `amo`'s.
    unsafe { amo(call, dest, op, value, zero(), pe) }
}

/// Atomic fetch-and-increment.
///
/// # Safety
/// As [`amo`].
#[inline(always)]
pub unsafe fn inc<T: Copy>(call: &'static str, dest: *const T, pe: c_int) -> T {
    // SAFETY: this function's contract is `amo`'s.
    unsafe { amo(call, dest, AmoOp::FetchAdd, one(), zero(), pe) }
}

/// Atomic compare-and-swap.
///
/// # Safety
/// As [`amo`].
#[inline(always)]
pub unsafe fn compare_swap<T: Copy>(call: &'static str, dest: *const T, cond: T, value: T, pe: c_int) -> T {
    // SAFETY: this function's contract is `amo`'s.
    unsafe { amo(call, dest, AmoOp::CompareSwap, value, cond, pe) }
}

/// A non-blocking fetching AMO: the old value reaches `fetch` by the next
/// quiet.
///
/// # Safety
/// As [`amo`]; `fetch` is valid for a write of one `T` until the next
/// quiet.
#[inline(always)]
pub unsafe fn nbi<T: Copy>(call: &'static str, fetch: *mut T, dest: *const T, op: AmoOp, value: T, cond: T, pe: c_int) {
    // SAFETY: T is a plain AMO type and `fetch` is valid for a write of one
    // T until the next quiet (this function's contract), as
    // `State::amo_nbi` asks; it checks `dest`.
    guard(call, || unsafe { state(call).amo_nbi(call, fetch, dest, op, value, cond, pe) })
}

/// `nelems` elements from local `src` to symmetric `dest` on `pe`, then
/// the signal update at `sig_addr`.
///
/// # Safety
/// `src` is valid for reads of `nelems` elements (the runtime checks
/// `dest` and `sig_addr`).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn put_signal<T>(
    call: &'static str, dest: *mut T, src: *const T, nelems: usize, sig_addr: *mut u64, signal: u64, sig_op: c_int,
    pe: c_int,
) {
    guard(call, || {
        let st = state(call);
        let len = bytes::<T>(call, nelems);
        // SAFETY: `src` is valid for reads of `nelems` elements, `len` bytes
        // (this function's contract); the runtime checks `dest` and
        // `sig_addr`.
        unsafe { st.put_signal(call, dest.cast(), src.cast(), len, sig_addr, signal, sig_op, pe) }
    })
}

/// Waits until this PE's symmetric `*ivar` compares to `value` by `cmp`.
///
/// # Safety
/// `T` is a plain integer type (the routine's C type; the runtime checks
/// `ivar`).
#[inline(always)]
pub unsafe fn wait_until<T: Copy + PartialOrd>(call: &'static str, ivar: *const T, cmp: c_int, value: T) {
    // SAFETY: T is a plain integer type (this function's contract), as
    // `State::wait_until` asks; it checks `ivar`.
    guard(call, || unsafe { state(call).wait_until(call, ivar, cmp, value) })
}

/// Whether this PE's symmetric `*ivar` compares to `value` by `cmp`.
///
/// # Safety
/// As [`wait_until`].
#[inline(always)]
pub unsafe fn test<T: Copy + PartialOrd>(call: &'static str, ivar: *const T, cmp: c_int, value: T) -> c_int {
    // SAFETY: T is a plain integer type (this function's contract), as
    // `State::test` asks; it checks `ivar`.
    guard(call, || c_int::from(unsafe { state(call).test(call, ivar, cmp, value) }))
}

/// The multi-element waits and tests (see `State::sync_many`).
///
/// # Safety
/// `T` is a plain integer type; `status` (when not null), `indices` (of
/// `SyncMode::Some`) and the comparison values of `CmpValues::Each` are
/// valid for `nelems` elements (the runtime checks `ivars`).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn many<T: Copy + PartialOrd>(
    call: &'static str, ivars: *const T, nelems: usize, status: *const c_int, cmp: c_int, values: CmpValues<T>,
    mode: SyncMode, blocking: bool,
) -> usize {
    // SAFETY: this function's contract is `State::sync_many`'s, which
    // checks `ivars` and reports null `indices` or comparison values.
    guard(call, || unsafe { state(call).sync_many(call, ivars, nelems, status, cmp, values, mode, blocking) })
}

/// Waits until every included element of `ivars` satisfies the comparison.
///
/// # Safety
/// `T` is a plain integer type; `status` is null or valid for `nelems`
/// elements (the runtime checks `ivars`).
pub unsafe fn wait_all<T: Copy + PartialOrd>(
    call: &'static str, ivars: *const T, nelems: usize, status: *const c_int, cmp: c_int, value: T,
) {
    // SAFETY: T is a plain integer type, `status` is null or valid for
    // `nelems` elements (this function's contract), which is what `many`
    // asks.
    unsafe {
        many(call, ivars, nelems, status, cmp, CmpValues::One(value), SyncMode::All, true);
    }
}

/// Waits until some included element satisfies the comparison; returns
/// its index.
///
/// # Safety
/// `T` is a plain integer type; `status` is null or valid for `nelems`
/// elements (the runtime checks `ivars`).
pub unsafe fn wait_any<T: Copy + PartialOrd>(
    call: &'static str, ivars: *const T, nelems: usize, status: *const c_int, cmp: c_int, value: T,
) -> usize {
    // SAFETY: T is a plain integer type, `status` is null or valid for
    // `nelems` elements (this function's contract), which is what `many`
    // asks.
    unsafe { many(call, ivars, nelems, status, cmp, CmpValues::One(value), SyncMode::Any, true) }
}

/// Waits until some included elements satisfy the comparison; writes
/// their indices to `indices` and returns how many.
///
/// # Safety
/// `T` is a plain integer type; `status` is null or valid for `nelems`
/// elements, `indices` for writes of `nelems` elements (the runtime
/// checks `ivars`).
#[allow(clippy::too_many_arguments)]
pub unsafe fn wait_some<T: Copy + PartialOrd>(
    call: &'static str, ivars: *const T, nelems: usize, indices: *mut usize, status: *const c_int, cmp: c_int, value: T,
) -> usize {
    // SAFETY: T is a plain integer type, `status` is null or valid for
    // `nelems` elements, `indices` for `nelems` writes (this function's
    // contract), which is what `many` asks.
    unsafe { many(call, ivars, nelems, status, cmp, CmpValues::One(value), SyncMode::Some(indices), true) }
}

/// [`wait_all`] with one comparison value per element, in `values`.
///
/// # Safety
/// `T` is a plain integer type; `status` is null or valid for `nelems`
/// elements, `values` for reads of `nelems` elements (the runtime checks
/// `ivars`).
pub unsafe fn wait_all_vector<T: Copy + PartialOrd>(
    call: &'static str, ivars: *const T, nelems: usize, status: *const c_int, cmp: c_int, values: *const T,
) {
    // SAFETY: T is a plain integer type, `status` is null or valid for
    // `nelems` elements, `values` for `nelems` reads (this function's
    // contract), which is what `many` asks.
    unsafe {
        many(call, ivars, nelems, status, cmp, CmpValues::Each(values), SyncMode::All, true);
    }
}

/// [`wait_any`] with one comparison value per element, in `values`.
///
/// # Safety
/// `T` is a plain integer type; `status` is null or valid for `nelems`
/// elements, `values` for reads of `nelems` elements (the runtime checks
/// `ivars`).
pub unsafe fn wait_any_vector<T: Copy + PartialOrd>(
    call: &'static str, ivars: *const T, nelems: usize, status: *const c_int, cmp: c_int, values: *const T,
) -> usize {
    // SAFETY: T is a plain integer type, `status` is null or valid for
    // `nelems` elements, `values` for `nelems` reads (this function's
    // contract), which is what `many` asks.
    unsafe { many(call, ivars, nelems, status, cmp, CmpValues::Each(values), SyncMode::Any, true) }
}

/// [`wait_some`] with one comparison value per element, in `values`.
///
/// # Safety
/// `T` is a plain integer type; `status` is null or valid for `nelems`
/// elements, `indices` for writes and `values` for reads of `nelems`
/// elements (the runtime checks `ivars`).
#[allow(clippy::too_many_arguments)]
pub unsafe fn wait_some_vector<T: Copy + PartialOrd>(
    call: &'static str, ivars: *const T, nelems: usize, indices: *mut usize, status: *const c_int, cmp: c_int,
    values: *const T,
) -> usize {
    // SAFETY: T is a plain integer type, `status` is null or valid for
    // `nelems` elements, `indices` for `nelems` writes, `values` for `nelems`
    // reads (this function's contract), which is what `many` asks.
    unsafe { many(call, ivars, nelems, status, cmp, CmpValues::Each(values), SyncMode::Some(indices), true) }
}

/// Whether every included element satisfies the comparison (1 or 0).
///
/// # Safety
/// `T` is a plain integer type; `status` is null or valid for `nelems`
/// elements (the runtime checks `ivars`).
pub unsafe fn test_all<T: Copy + PartialOrd>(
    call: &'static str, ivars: *const T, nelems: usize, status: *const c_int, cmp: c_int, value: T,
) -> c_int {
    // SAFETY: T is a plain integer type, `status` is null or valid for
    // `nelems` elements (this function's contract), which is what `many`
    // asks.
    unsafe { many(call, ivars, nelems, status, cmp, CmpValues::One(value), SyncMode::All, false) as c_int }
}

/// The index of an included element that satisfies the comparison, or
/// `usize::MAX`.
///
/// # Safety
/// `T` is a plain integer type; `status` is null or valid for `nelems`
/// elements (the runtime checks `ivars`).
pub unsafe fn test_any<T: Copy + PartialOrd>(
    call: &'static str, ivars: *const T, nelems: usize, status: *const c_int, cmp: c_int, value: T,
) -> usize {
    // SAFETY: T is a plain integer type, `status` is null or valid for
    // `nelems` elements (this function's contract), which is what `many`
    // asks.
    unsafe { many(call, ivars, nelems, status, cmp, CmpValues::One(value), SyncMode::Any, false) }
}

/// Writes the indices of the included elements that satisfy the
/// comparison to `indices`; returns how many.
///
/// # Safety
/// `T` is a plain integer type; `status` is null or valid for `nelems`
/// elements, `indices` for writes of `nelems` elements (the runtime
/// checks `ivars`).
#[allow(clippy::too_many_arguments)]
pub unsafe fn test_some<T: Copy + PartialOrd>(
    call: &'static str, ivars: *const T, nelems: usize, indices: *mut usize, status: *const c_int, cmp: c_int, value: T,
) -> usize {
    // SAFETY: T is a plain integer type, `status` is null or valid for
    // `nelems` elements, `indices` for `nelems` writes (this function's
    // contract), which is what `many` asks.
    unsafe { many(call, ivars, nelems, status, cmp, CmpValues::One(value), SyncMode::Some(indices), false) }
}

/// [`test_all`] with one comparison value per element, in `values`.
///
/// # Safety
/// `T` is a plain integer type; `status` is null or valid for `nelems`
/// elements, `values` for reads of `nelems` elements (the runtime checks
/// `ivars`).
pub unsafe fn test_all_vector<T: Copy + PartialOrd>(
    call: &'static str, ivars: *const T, nelems: usize, status: *const c_int, cmp: c_int, values: *const T,
) -> c_int {
    // SAFETY: T is a plain integer type, `status` is null or valid for
    // `nelems` elements, `values` for `nelems` reads (this function's
    // contract), which is what `many` asks.
    unsafe { many(call, ivars, nelems, status, cmp, CmpValues::Each(values), SyncMode::All, false) as c_int }
}

/// [`test_any`] with one comparison value per element, in `values`.
///
/// # Safety
/// `T` is a plain integer type; `status` is null or valid for `nelems`
/// elements, `values` for reads of `nelems` elements (the runtime checks
/// `ivars`).
pub unsafe fn test_any_vector<T: Copy + PartialOrd>(
    call: &'static str, ivars: *const T, nelems: usize, status: *const c_int, cmp: c_int, values: *const T,
) -> usize {
    // SAFETY: T is a plain integer type, `status` is null or valid for
    // `nelems` elements, `values` for `nelems` reads (this function's
    // contract), which is what `many` asks.
    unsafe { many(call, ivars, nelems, status, cmp, CmpValues::Each(values), SyncMode::Any, false) }
}

/// [`test_some`] with one comparison value per element, in `values`.
///
/// # Safety
/// `T` is a plain integer type; `status` is null or valid for `nelems`
/// elements, `indices` for writes and `values` for reads of `nelems`
/// elements (the runtime checks `ivars`).
#[allow(clippy::too_many_arguments)]
pub unsafe fn test_some_vector<T: Copy + PartialOrd>(
    call: &'static str, ivars: *const T, nelems: usize, indices: *mut usize, status: *const c_int, cmp: c_int,
    values: *const T,
) -> usize {
    // SAFETY: T is a plain integer type, `status` is null or valid for
    // `nelems` elements, `indices` for `nelems` writes, `values` for `nelems`
    // reads (this function's contract), which is what `many` asks.
    unsafe { many(call, ivars, nelems, status, cmp, CmpValues::Each(values), SyncMode::Some(indices), false) }
}

// ----- collectives ----------------------------------------------------------

/// Sum and product of the reduction types: wrapping for integers, IEEE for
/// floating point, complex arithmetic for the complex types.
pub trait Arith: Copy {
    fn zero() -> Self;
    fn add(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
}

/// Maximum and minimum of the real reduction types.
pub trait Order: Copy {
    fn max(self, o: Self) -> Self;
    fn min(self, o: Self) -> Self;
}

/// Bitwise operations of the integer reduction types.
pub trait Bits: Copy {
    fn and(self, o: Self) -> Self;
    fn or(self, o: Self) -> Self;
    fn xor(self, o: Self) -> Self;
}

macro_rules! int_ops {
    ($($t:ty),*) => { $(
        impl Arith for $t {
            #[inline(always)] fn zero() -> Self { 0 }
            #[inline(always)] fn add(self, o: Self) -> Self { self.wrapping_add(o) }
            #[inline(always)] fn mul(self, o: Self) -> Self { self.wrapping_mul(o) }
        }
        impl Order for $t {
            #[inline(always)] fn max(self, o: Self) -> Self { Ord::max(self, o) }
            #[inline(always)] fn min(self, o: Self) -> Self { Ord::min(self, o) }
        }
        impl Bits for $t {
            #[inline(always)] fn and(self, o: Self) -> Self { self & o }
            #[inline(always)] fn or(self, o: Self) -> Self { self | o }
            #[inline(always)] fn xor(self, o: Self) -> Self { self ^ o }
        }
    )* };
}
int_ops!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize);

macro_rules! float_ops {
    ($($t:ty),*) => { $(
        impl Arith for $t {
            #[inline(always)] fn zero() -> Self { 0.0 }
            #[inline(always)] fn add(self, o: Self) -> Self { self + o }
            #[inline(always)] fn mul(self, o: Self) -> Self { self * o }
        }
        impl Order for $t {
            #[inline(always)] fn max(self, o: Self) -> Self { if o > self { o } else { self } }
            #[inline(always)] fn min(self, o: Self) -> Self { if o < self { o } else { self } }
        }
    )* };
}
float_ops!(f32, f64);

/// C `float _Complex` / `double _Complex` (and C++ `std::complex`): real
/// part, then imaginary part.
#[derive(Clone, Copy)]
#[repr(C)]
pub struct Complex<T> {
    re: T,
    im: T,
}

impl<T: Copy + std::ops::Add<Output = T> + std::ops::Sub<Output = T> + std::ops::Mul<Output = T> + Arith> Arith
    for Complex<T>
{
    #[inline(always)]
    fn zero() -> Self {
        Complex { re: T::zero(), im: T::zero() }
    }
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        Complex { re: self.re + o.re, im: self.im + o.im }
    }
    /// (a + bi)(c + di) = (ac - bd) + (ad + bc)i, without C's Annex G
    /// recovery of infinities from NaN results.
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        Complex { re: self.re * o.re - self.im * o.im, im: self.re * o.im + self.im * o.re }
    }
}

/// C `long double` on x86-64: the x87 80-bit extended format in the low 10
/// bytes of a 16-byte, 16-aligned slot. Rust has no such type; arithmetic
/// goes through the x87 unit (`x87` below), and `p`/`g` through assembly
/// trampolines (see `typed.rs`), since the C ABI passes these values in
/// memory and returns them in st(0).
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
#[repr(C, align(16))]
pub struct LongDouble([u8; 16]);

#[cfg(target_arch = "x86_64")]
const _: () = assert!(size_of::<LongDouble>() == 16 && std::mem::align_of::<LongDouble>() == 16);

#[cfg(target_arch = "x86_64")]
mod x87 {
    use super::LongDouble;
    use std::arch::asm;

    /// `op` (an x87 instruction that pops st(0) into st(1), e.g. `faddp`) on
    /// `a` and `b`: loads b, then a, applies op, stores the result. The
    /// padding bytes of the result are zero.
    macro_rules! binary {
        ($name:ident, $insn:literal) => {
            #[inline]
            pub fn $name(a: LongDouble, b: LongDouble) -> LongDouble {
                let mut out = LongDouble([0; 16]);
                // SAFETY: the three pointers address live 16-byte slots; the
                // x87 stack is empty on entry (the ABI's state between
                // calls), gets two pushes and two pops, and every st
                // register is declared clobbered.
                unsafe {
                    asm!(
                        "fld tbyte ptr [{b}]",
                        "fld tbyte ptr [{a}]",
                        $insn,
                        "fstp tbyte ptr [{o}]",
                        a = in(reg) a.0.as_ptr(),
                        b = in(reg) b.0.as_ptr(),
                        o = in(reg) out.0.as_mut_ptr(),
                        out("st(0)") _, out("st(1)") _, out("st(2)") _, out("st(3)") _,
                        out("st(4)") _, out("st(5)") _, out("st(6)") _, out("st(7)") _,
                        options(nostack),
                    );
                }
                out
            }
        };
    }
    binary!(add, "faddp st(1), st");
    binary!(mul, "fmulp st(1), st");

    /// `a > b` (false when either is a NaN).
    #[inline]
    pub fn gt(a: LongDouble, b: LongDouble) -> bool {
        let r: u8;
        // SAFETY: as in `binary`: two pushes (b, then a), fucomip pops one,
        // fstp pops the other.
        unsafe {
            asm!(
                "fld tbyte ptr [{b}]",
                "fld tbyte ptr [{a}]",
                "fucomip st, st(1)",
                "fstp st(0)",
                "seta {r}",
                a = in(reg) a.0.as_ptr(),
                b = in(reg) b.0.as_ptr(),
                r = out(reg_byte) r,
                out("st(0)") _, out("st(1)") _, out("st(2)") _, out("st(3)") _,
                out("st(4)") _, out("st(5)") _, out("st(6)") _, out("st(7)") _,
                options(nostack),
            );
        }
        r != 0
    }
}

#[cfg(target_arch = "x86_64")]
impl Arith for LongDouble {
    #[inline(always)]
    fn zero() -> Self {
        LongDouble([0; 16])
    }
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        x87::add(self, o)
    }
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        x87::mul(self, o)
    }
}

#[cfg(target_arch = "x86_64")]
impl Order for LongDouble {
    #[inline(always)]
    fn max(self, o: Self) -> Self {
        if x87::gt(o, self) {
            o
        } else {
            self
        }
    }
    #[inline(always)]
    fn min(self, o: Self) -> Self {
        if x87::gt(self, o) {
            o
        } else {
            self
        }
    }
}

/// `shmem_longdouble_p`, called by its trampoline with the value's address.
///
/// # Safety
/// `value` points to the caller's long double argument; the rest as `p`.
#[cfg(target_arch = "x86_64")]
pub unsafe extern "C" fn longdouble_p(dest: *mut LongDouble, pe: c_int, value: *const LongDouble) {
    // SAFETY: the trampoline passes the address of the argument slot.
    unsafe { p("shmem_longdouble_p", dest, *value, pe) }
}

/// `shmem_ctx_longdouble_p`, called by its trampoline.
///
/// # Safety
/// As [`longdouble_p`].
#[cfg(target_arch = "x86_64")]
pub unsafe extern "C" fn longdouble_ctx_p(
    ctx: *mut std::ffi::c_void, dest: *mut LongDouble, pe: c_int, value: *const LongDouble,
) {
    const CALL: &str = "shmem_ctx_longdouble_p";
    // SAFETY: as longdouble_p.
    unsafe { p(CALL, dest, *value, ctx_pe(CALL, ctx, pe)) }
}

/// `shmem_longdouble_g`: writes the value to `out` for the trampoline to
/// load into st(0).
///
/// # Safety
/// `out` is the trampoline's 16-byte buffer; the rest as `g`.
#[cfg(target_arch = "x86_64")]
pub unsafe extern "C" fn longdouble_g(source: *const LongDouble, pe: c_int, out: *mut LongDouble) {
    // SAFETY: as documented.
    unsafe { *out = g("shmem_longdouble_g", source, pe) }
}

/// `shmem_ctx_longdouble_g`, called by its trampoline.
///
/// # Safety
/// As [`longdouble_g`].
#[cfg(target_arch = "x86_64")]
pub unsafe extern "C" fn longdouble_ctx_g(
    ctx: *mut std::ffi::c_void, source: *const LongDouble, pe: c_int, out: *mut LongDouble,
) {
    const CALL: &str = "shmem_ctx_longdouble_g";
    // SAFETY: as longdouble_g.
    unsafe { *out = g(CALL, source, ctx_pe(CALL, ctx, pe)) }
}

/// A reduction on `team` (`op` is the operator `which` names).
///
/// # Safety
/// `T` is a plain numeric type and `op` is pure (the runtime checks
/// `dest` and `source`).
#[inline(always)]
pub unsafe fn reduce<T: Copy>(
    call: &'static str, team: c_int, dest: *mut T, source: *const T, nreduce: usize, which: RedOp,
    op: impl Fn(T, T) -> T,
) -> c_int {
    // SAFETY: T is a plain numeric type and `op` is pure (this function's
    // contract), as `State::reduce` asks; it checks `dest` and `source`.
    guard(call, || unsafe { state(call).reduce(call, team, dest, source, nreduce, which, op) })
}

/// Intel SHMEM's `sum_inscan` / `sum_exscan` on `team`.
///
/// # Safety
/// `T` is a plain numeric type (the runtime checks `dest` and `source`).
#[inline(always)]
pub unsafe fn scan<T: Arith>(
    call: &'static str, team: c_int, dest: *mut T, source: *const T, nelems: usize, exclusive: bool,
) -> c_int {
    // SAFETY: T is a plain numeric type (this function's contract), whose
    // `Arith::add` is pure with `Arith::zero` as its identity, as
    // `State::sum_scan` asks; it checks `dest` and `source`.
    guard(call, || unsafe { state(call).sum_scan(call, team, dest, source, nelems, exclusive, T::zero(), T::add) })
}

#[inline(always)]
pub unsafe fn broadcast<T>(
    call: &'static str, team: c_int, dest: *mut T, source: *const T, nelems: usize, root: c_int,
) -> c_int {
    guard(call, || state(call).broadcast(call, team, dest.cast(), source.cast(), bytes::<T>(call, nelems), root))
}

#[inline(always)]
pub unsafe fn fcollect<T>(call: &'static str, team: c_int, dest: *mut T, source: *const T, nelems: usize) -> c_int {
    guard(call, || state(call).fcollect(call, team, dest.cast(), source.cast(), bytes::<T>(call, nelems)))
}

#[inline(always)]
pub unsafe fn collect<T>(call: &'static str, team: c_int, dest: *mut T, source: *const T, nelems: usize) -> c_int {
    guard(call, || state(call).collect(call, team, dest.cast(), source.cast(), nelems, size_of::<T>()))
}

#[inline(always)]
pub unsafe fn alltoall<T>(call: &'static str, team: c_int, dest: *mut T, source: *const T, nelems: usize) -> c_int {
    guard(call, || state(call).alltoalls(call, team, dest.cast(), source.cast(), elements::<T>(nelems, 1, 1)))
}

#[inline(always)]
pub unsafe fn alltoalls<T>(
    call: &'static str, team: c_int, dest: *mut T, source: *const T, dst: isize, sst: isize, nelems: usize,
) -> c_int {
    guard(call, || state(call).alltoalls(call, team, dest.cast(), source.cast(), elements::<T>(nelems, dst, sst)))
}

/// World PE of team PE `pe` of context `ctx` (context forms).
#[inline(always)]
pub fn ctx_pe(call: &'static str, ctx: *mut std::ffi::c_void, pe: c_int) -> c_int {
    guard(call, || state(call).ctx_pe(call, ctx as usize, pe))
}

// ----- deprecated active-set collectives and old names ----------------------

#[inline(always)]
fn nelems_of(call: &str, n: c_int) -> usize {
    usize::try_from(n).unwrap_or_else(|_| fatal(call, format_args!("nreduce {n} is negative")))
}

/// Deprecated `shmem_TYPE_OP_to_all`: a reduction over an active set.
///
/// # Safety
/// As [`reduce`] (the runtime checks `psync` too).
#[allow(clippy::too_many_arguments)]
pub unsafe fn to_all<T: Copy>(
    call: &'static str, dest: *mut T, source: *const T, nreduce: c_int, pe_start: c_int, log_stride: c_int,
    pe_size: c_int, psync: *mut std::ffi::c_long, which: RedOp, op: impl Fn(T, T) -> T,
) {
    guard(call, || {
        let st = state(call);
        let a = st.active_set(call, pe_start, log_stride, pe_size, psync.cast());
        let n = nelems_of(call, nreduce);
        // SAFETY: T is a plain numeric type and `op` is pure (this
        // function's contract), as `State::reduce_in` asks; it checks `dest`
        // and `source`.
        unsafe { st.reduce_in(call, &a, dest, source, n, which, op) };
    })
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn aset_broadcast<T>(
    call: &'static str, dest: *mut T, source: *const T, nelems: usize, root: c_int, pe_start: c_int, log_stride: c_int,
    pe_size: c_int, psync: *mut std::ffi::c_long,
) {
    guard(call, || {
        let st = state(call);
        let a = st.active_set(call, pe_start, log_stride, pe_size, psync.cast());
        if root < 0 || root >= pe_size {
            fatal(call, format_args!("PE_root {root} is out of range for an active set of {pe_size} PEs"))
        }
        // OpenSHMEM 1.4 semantics: the root's dest is not written.
        st.broadcast_in(call, &a, dest.cast(), source.cast(), bytes::<T>(call, nelems), root, false);
    })
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn aset_collect<T>(
    call: &'static str, dest: *mut T, source: *const T, nelems: usize, pe_start: c_int, log_stride: c_int,
    pe_size: c_int, psync: *mut std::ffi::c_long, fixed: bool,
) {
    guard(call, || {
        let st = state(call);
        let a = st.active_set(call, pe_start, log_stride, pe_size, psync.cast());
        if fixed {
            st.fcollect_in(call, &a, dest.cast(), source.cast(), bytes::<T>(call, nelems));
        } else {
            st.collect_in(call, &a, dest.cast(), source.cast(), nelems, size_of::<T>());
        }
    })
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn aset_alltoalls<T>(
    call: &'static str, dest: *mut T, source: *const T, dst: isize, sst: isize, nelems: usize, pe_start: c_int,
    log_stride: c_int, pe_size: c_int, psync: *mut std::ffi::c_long,
) {
    guard(call, || {
        let st = state(call);
        let a = st.active_set(call, pe_start, log_stride, pe_size, psync.cast());
        st.alltoalls_in(call, &a, dest.cast(), source.cast(), elements::<T>(nelems, dst, sst));
    })
}

/// Deprecated `shmem_TYPE_wait(ivar, value)`: waits until `*ivar != value`.
///
/// # Safety
/// As [`wait_until`].
pub unsafe fn wait_ne<T: Copy + PartialOrd>(call: &'static str, ivar: *const T, value: T) {
    // SAFETY: this function's contract is `wait_until`'s.
    unsafe { wait_until(call, ivar, ishmem_runtime::api::CMP_NE, value) }
}
