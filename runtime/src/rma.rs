//! Host RMA and ordering (OpenSHMEM 1.5 §9.5, §9.6, §9.10, §9.9.1-3):
//! contiguous, element and strided puts and gets, `ptr`, fence, quiet and
//! the world barrier.
//!
//! Every routine checks its arguments (PE range, symmetric bounds, null
//! local buffers) and moves data through the routing step: a `memcpy` to
//! or from a mapped peer, the proxy for the rest.

use crate::collsig::Sig;
use crate::error::fatal;
use crate::state::State;
use crate::types::Blocks;

impl State {
    // ----- contiguous RMA ------------------------------------------------

    /// `put`: copies `len` bytes from local `src` to symmetric `dest` on `pe`.
    ///
    /// # Safety
    /// `src` must be valid for reads of `len` bytes.
    #[inline(always)]
    pub unsafe fn put(&self, call: &str, dest: *mut u8, src: *const u8, len: usize, pe: i32) {
        // SAFETY: `src` is valid for reads of `len` bytes (this function's
        // contract), which is `put_impl`'s for a blocking put.
        unsafe { self.put_impl(call, dest, src, len, pe, false) }
    }

    /// `put_nbi`: as [`State::put`]; remote transfers complete at quiet.
    ///
    /// # Safety
    /// `src` must stay valid and unchanged until the next quiet.
    #[inline(always)]
    pub unsafe fn put_nbi(&self, call: &str, dest: *mut u8, src: *const u8, len: usize, pe: i32) {
        // SAFETY: `src` is valid for reads of `len` bytes and unchanged until
        // the next quiet (this function's contract), which is `put_impl`'s
        // with `nbi`.
        unsafe { self.put_impl(call, dest, src, len, pe, true) }
    }

    /// The body of [`State::put`] and [`State::put_nbi`].
    ///
    /// # Safety
    /// `src` is valid for reads of `len` bytes, with `nbi` unchanged until
    /// the next quiet.
    #[inline(always)]
    unsafe fn put_impl(&self, call: &str, dest: *mut u8, src: *const u8, len: usize, pe: i32, nbi: bool) {
        let pe = self.check_pe(call, pe);
        if len == 0 {
            return;
        }
        let off = self.sym_offset(call, "dest", dest, len);
        self.check_local(call, "source", src);
        // SAFETY: the destination range is checked inside the heap; src is
        // valid for len bytes (the caller's contract).
        unsafe { self.route.put(call, pe, off, src, len, nbi) }
    }

    /// `get`: copies `len` bytes from symmetric `src` on `pe` to local `dest`.
    ///
    /// # Safety
    /// `dest` must be valid for writes of `len` bytes.
    #[inline(always)]
    pub unsafe fn get(&self, call: &str, dest: *mut u8, src: *const u8, len: usize, pe: i32) {
        // SAFETY: `dest` is valid for writes of `len` bytes (this function's
        // contract), which is `get_impl`'s for a blocking get.
        unsafe { self.get_impl(call, dest, src, len, pe, false) }
    }

    /// `get_nbi`: as [`State::get`]; remote transfers complete at quiet.
    ///
    /// # Safety
    /// `dest` must stay valid until the next quiet.
    #[inline(always)]
    pub unsafe fn get_nbi(&self, call: &str, dest: *mut u8, src: *const u8, len: usize, pe: i32) {
        // SAFETY: `dest` is valid for writes of `len` bytes until the next
        // quiet (this function's contract), which is `get_impl`'s with `nbi`.
        unsafe { self.get_impl(call, dest, src, len, pe, true) }
    }

    /// The body of [`State::get`] and [`State::get_nbi`].
    ///
    /// # Safety
    /// `dest` is valid for writes of `len` bytes, with `nbi` until the next
    /// quiet.
    #[inline(always)]
    unsafe fn get_impl(&self, call: &str, dest: *mut u8, src: *const u8, len: usize, pe: i32, nbi: bool) {
        let pe = self.check_pe(call, pe);
        if len == 0 {
            return;
        }
        let off = self.sym_offset(call, "source", src, len);
        self.check_local(call, "dest", dest);
        // SAFETY: the source range is checked inside the heap; dest is
        // valid for len bytes (the caller's contract).
        unsafe { self.route.get(call, pe, off, dest, len, nbi) }
    }

    /// `p`: stores one element to symmetric `dest` on `pe`.
    ///
    /// # Safety
    /// `T` must be a plain value type.
    #[inline(always)]
    pub unsafe fn p<T: Copy>(&self, call: &str, dest: *mut T, value: T, pe: i32) {
        let pe = self.check_pe(call, pe);
        let off = self.sym_offset(call, "dest", dest as *const u8, std::mem::size_of::<T>());
        // SAFETY: the range is checked inside the heap; T is a plain value
        // type (the caller's contract).
        unsafe { self.route.p(call, pe, off, value) }
    }

    /// `g`: loads one element from symmetric `src` on `pe`.
    ///
    /// # Safety
    /// `T` must be a plain value type.
    #[inline(always)]
    pub unsafe fn g<T: Copy>(&self, call: &str, src: *const T, pe: i32) -> T {
        let pe = self.check_pe(call, pe);
        let off = self.sym_offset(call, "source", src as *const u8, std::mem::size_of::<T>());
        // SAFETY: the range is checked inside the heap; T is a plain value
        // type (the caller's contract).
        unsafe { self.route.g(call, pe, off) }
    }

    // ----- strided RMA ---------------------------------------------------

    /// `ibput`: the blocks of local `src` go to symmetric `dest` on `pe`
    /// (block `b`, `bsize` contiguous elements, from element `b * sst` to
    /// element `b * dst`).
    ///
    /// # Safety
    /// `src` must be valid for the block-strided reads.
    pub unsafe fn ibput(&self, call: &str, dest: *mut u8, src: *const u8, shape: Blocks, pe: i32) {
        let Some((pe, first)) = self.strided_target(call, pe, dest, src, shape, true) else { return };
        // SAFETY: the caller's contract for `src`; every block's target is
        // inside the checked symmetric range.
        unsafe { self.route.put_strided(call, pe, first, src, shape, false) }
    }

    /// `ibget`: the mirror of [`State::ibput`].
    ///
    /// # Safety
    /// `dest` must be valid for the block-strided writes.
    pub unsafe fn ibget(&self, call: &str, dest: *mut u8, src: *const u8, shape: Blocks, pe: i32) {
        let Some((pe, first)) = self.strided_target(call, pe, src, dest, shape, false) else { return };
        // SAFETY: the caller's contract for `dest`; every block's source is
        // inside the checked symmetric range.
        unsafe { self.route.get_strided(call, pe, first, dest, shape) }
    }

    /// The checks both block-strided directions make: `pe`, the extent of
    /// each side (`sym`, the symmetric one: `dest` of a put, `source` of a
    /// get), and the local side's pointer. `None` for an empty transfer,
    /// else the PE and block 0's offset in the symmetric range.
    fn strided_target(
        &self, call: &str, pe: i32, sym: *const u8, local: *const u8, shape: Blocks, put: bool,
    ) -> Option<(usize, usize)> {
        let pe = self.check_pe(call, pe);
        if shape.bsize == 0 || shape.nblocks == 0 {
            return None;
        }
        let (dest, source) = (("dest", shape.dst), ("source", shape.sst));
        let ((sym_name, sym_stride), (local_name, local_stride)) = if put { (dest, source) } else { (source, dest) };
        let (lo, span) = extent(call, sym_name, sym_stride, shape);
        let off = self.sym_offset(call, sym_name, sym.wrapping_offset(lo), span);
        let _ = extent(call, local_name, local_stride, shape);
        self.check_local(call, local_name, local);
        // Block 0's offset (`lo` is the lowest block's, at or before it).
        Some((pe, (off as isize - lo) as usize))
    }

    // ----- ordering and synchronization ------------------------------------

    /// `fence`: orders this PE's puts and AMOs to each PE. Through the
    /// proxy, ordering costs completion (MPI orders nothing between
    /// puts), so fence is quiet there.
    #[inline]
    pub fn fence(&self) {
        self.route.fence("shmem_fence");
    }

    /// `quiet`: completes all of this PE's outstanding operations.
    #[inline]
    pub fn quiet(&self) {
        // Requests this PE's kernels posted complete first (`ring::drain`).
        crate::ring::drain(self.ring);
        self.route.quiet("shmem_quiet");
    }

    /// `sync_all`: waits until every PE has arrived (the world team's
    /// dissemination barrier, see `team.rs`).
    pub fn sync_all(&self, call: &str) {
        let world = self.world_team();
        self.team_sync_sig(call, &world, Sig::sync());
    }

    /// `barrier_all`: `quiet` then `sync_all`.
    pub fn barrier_all(&self, call: &str) {
        self.barrier_sig(call, Sig::sync());
    }

    /// A world barrier (`quiet`, then sync) made by the collective call `sig`.
    pub(crate) fn barrier_sig(&self, call: &str, sig: Sig) {
        self.quiet();
        let world = self.world_team();
        self.team_sync_sig(call, &world, sig);
    }

    /// `ptr`: the address of symmetric `addr` on `pe` usable by loads and
    /// stores from this PE, or null when `pe` cannot be reached that way or
    /// `addr` is not symmetric.
    pub fn ptr(&self, call: &str, addr: *const u8, pe: i32) -> *mut u8 {
        let pe = self.check_pe(call, pe);
        let off = (addr as usize).wrapping_sub(self.heap_base);
        let off = if off < self.heap_size {
            off
        } else {
            match self.data_offset(addr, 1) {
                Some(o) => o,
                None => return std::ptr::null_mut(),
            }
        };
        self.route.address(pe, off).unwrap_or(std::ptr::null_mut())
    }

    /// True when `addr` (one byte) is inside the symmetric heap or the
    /// symmetric data segment.
    pub fn is_symmetric(&self, addr: *const u8) -> bool {
        (addr as usize).wrapping_sub(self.heap_base) < self.heap_size || self.data_offset(addr, 1).is_some()
    }
}

/// Byte extent `(lowest offset, span)` touched by `nblocks` blocks of
/// `bsize` elements of `elem` bytes whose starts are `stride` elements apart.
fn extent(call: &str, what: &str, stride: isize, shape: Blocks) -> (isize, usize) {
    let Blocks { elem, bsize, nblocks, .. } = shape;
    let calc = || -> Option<(isize, usize)> {
        let last = (nblocks as i128 - 1) * stride as i128 * elem as i128;
        let lo = last.min(0);
        let hi = last.max(0) + bsize as i128 * elem as i128;
        Some((isize::try_from(lo).ok()?, usize::try_from(hi - lo).ok()?))
    };
    match calc() {
        Some(v) => v,
        None => fatal(
            call,
            format_args!(
                "{what} stride {stride} with {nblocks} blocks of {bsize} elements overflows the address space"
            ),
        ),
    }
}
