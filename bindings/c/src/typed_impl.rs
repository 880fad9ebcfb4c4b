//! Generic bodies of the typed C routines; `typed.rs` instantiates them.

use crate::guard;
use ishmem_runtime::core::state;
use ishmem_runtime::error::fatal;
use std::ffi::c_int;
use std::mem::size_of;

#[inline(always)]
fn bytes<T>(call: &str, nelems: usize) -> usize {
    match nelems.checked_mul(size_of::<T>()) {
        Some(b) => b,
        None => fatal(call, format_args!("nelems {nelems} is too large for elements of {} bytes", size_of::<T>())),
    }
}

#[inline(always)]
pub unsafe fn put<T>(call: &'static str, dest: *mut T, src: *const T, nelems: usize, pe: c_int) {
    guard(call, || {
        let st = state(call);
        st.put(call, dest.cast(), src.cast(), bytes::<T>(call, nelems), pe)
    })
}

#[inline(always)]
pub unsafe fn get<T>(call: &'static str, dest: *mut T, src: *const T, nelems: usize, pe: c_int) {
    guard(call, || {
        let st = state(call);
        st.get(call, dest.cast(), src.cast(), bytes::<T>(call, nelems), pe)
    })
}

#[inline(always)]
pub unsafe fn p<T: Copy>(call: &'static str, dest: *mut T, value: T, pe: c_int) {
    guard(call, || state(call).p(call, dest, value, pe))
}

#[inline(always)]
pub unsafe fn g<T: Copy>(call: &'static str, src: *const T, pe: c_int) -> T {
    guard(call, || state(call).g(call, src, pe))
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn iput<T>(call: &'static str, dest: *mut T, src: *const T, dst: isize, sst: isize, nelems: usize, pe: c_int) {
    guard(call, || state(call).iput(call, dest.cast(), src.cast(), dst, sst, size_of::<T>(), nelems, pe))
}

#[inline(always)]
pub unsafe fn iget<T>(call: &'static str, dest: *mut T, src: *const T, dst: isize, sst: isize, nelems: usize, pe: c_int) {
    guard(call, || state(call).iget(call, dest.cast(), src.cast(), dst, sst, size_of::<T>(), nelems, pe))
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn ibput<T>(
    call: &'static str, dest: *mut T, src: *const T, dst: isize, sst: isize, bsize: usize, nblocks: usize, pe: c_int,
) {
    guard(call, || state(call).ibput(call, dest.cast(), src.cast(), dst, sst, size_of::<T>(), bsize, nblocks, pe))
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn ibget<T>(
    call: &'static str, dest: *mut T, src: *const T, dst: isize, sst: isize, bsize: usize, nblocks: usize, pe: c_int,
) {
    guard(call, || state(call).ibget(call, dest.cast(), src.cast(), dst, sst, size_of::<T>(), bsize, nblocks, pe))
}

/// The 128-bit element of the `*128` sized routines.
#[derive(Clone, Copy)]
#[repr(C)]
pub struct Bits128([u64; 2]);
