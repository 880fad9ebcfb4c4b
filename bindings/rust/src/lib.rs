//! Safe Rust API of ishmem-rs.
//!
//! ```no_run
//! use ishmem::Ishmem;
//! let shmem = Ishmem::init().expect("init");
//! let (me, n) = (shmem.my_pe(), shmem.n_pes());
//! // Collective: every PE allocates the same symmetric vector.
//! let mut inbox = shmem.alloc::<u64>(4).expect("alloc");
//! inbox.put(0, &[me as u64; 4], (me + 1) % n);
//! shmem.barrier_all();
//! assert_eq!(inbox.local()[0], ((me + n - 1) % n) as u64);
//! ```
//!
//! The handle [`Ishmem`] stands for the initialized library: everything that
//! needs the library borrows it, and dropping it finalizes the library
//! (collectively, like `shmem_finalize`). Symmetric allocations are
//! [`SymmVec`]s, freed (collectively) on drop.
//!
//! Argument errors that the OpenSHMEM specification leaves undefined (a PE
//! out of range, an index past the end of a symmetric vector) stop the job
//! with a PE-tagged message, as in C; failures the specification defines
//! (initialization, heap exhaustion) are `Result`s.
//!
//! Memory model: a PE's local view ([`SymmVec::local`]) may be changed by
//! other PEs' puts at any time; as in C, a program reads it only after the
//! synchronization that orders those puts (a barrier, a wait on a flag).

use ishmem_runtime::core::{self, state, State};
use std::fmt;
use std::marker::PhantomData;
use std::mem::size_of;
use std::ptr::NonNull;

/// Errors the library reports as values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// Initialization failed (bad environment variable, bootstrap failure).
    Init(String),
    /// The symmetric heap has no room for the requested allocation.
    OutOfMemory { requested: usize },
    /// The library is already initialized by another handle.
    AlreadyInitialized,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Init(m) => write!(f, "ishmem initialization failed: {m}"),
            Error::OutOfMemory { requested } => write!(
                f,
                "symmetric heap exhausted allocating {requested} bytes (raise ISHMEM_SYMMETRIC_SIZE)"
            ),
            Error::AlreadyInitialized => write!(f, "ishmem is already initialized by another handle"),
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// Types that may live in symmetric memory and be moved bytewise between PEs.
///
/// # Safety
/// Every bit pattern of the type's size must be a valid value, and the type
/// must have no padding or pointers that are meaningful only on one PE.
pub unsafe trait Symmetric: Copy + 'static {}

macro_rules! symmetric {
    ($($t:ty),*) => { $(
        // SAFETY: primitive numeric types: every bit pattern is valid.
        unsafe impl Symmetric for $t {}
    )* };
}
symmetric!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize, f32, f64);
// SAFETY: arrays of Symmetric types have no padding between elements.
unsafe impl<T: Symmetric, const N: usize> Symmetric for [T; N] {}

static HANDLE_TAKEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The initialized library. Dropping it finalizes the library.
pub struct Ishmem {
    st: &'static State,
    // The handle stays on the thread that initialized the library.
    _not_send: PhantomData<*const ()>,
}

impl Ishmem {
    /// Initializes the library (collective over all PEs; OpenSHMEM §9.1.1).
    pub fn init() -> Result<Ishmem> {
        if HANDLE_TAKEN.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return Err(Error::AlreadyInitialized);
        }
        core::init().map_err(|e| {
            HANDLE_TAKEN.store(false, std::sync::atomic::Ordering::SeqCst);
            Error::Init(e)
        })?;
        Ok(Ishmem { st: state("Ishmem::init"), _not_send: PhantomData })
    }

    /// This PE's number.
    pub fn my_pe(&self) -> usize {
        self.st.my_pe
    }

    /// Number of PEs.
    pub fn n_pes(&self) -> usize {
        self.st.n_pes
    }

    /// Collectively allocates `len` zeroed elements on every PE (§9.3.3).
    /// `len == 0` gives an empty vector without synchronizing.
    pub fn alloc<T: Symmetric>(&self, len: usize) -> Result<SymmVec<'_, T>> {
        self.alloc_aligned(len, std::mem::align_of::<T>())
    }

    /// Like [`Ishmem::alloc`], with the first element aligned to `align`
    /// bytes (a power of two).
    pub fn alloc_aligned<T: Symmetric>(&self, len: usize, align: usize) -> Result<SymmVec<'_, T>> {
        if len == 0 || size_of::<T>() == 0 {
            return Ok(SymmVec { ptr: NonNull::dangling(), len, shmem: self });
        }
        let bytes = len.checked_mul(size_of::<T>()).ok_or(Error::OutOfMemory { requested: usize::MAX })?;
        let align = align.max(std::mem::align_of::<T>()).max(size_of::<usize>());
        let call = "ishmem::Ishmem::alloc";
        let p = if align <= ishmem_runtime::alloc::MIN_ALIGN {
            self.st.calloc(call, len, size_of::<T>())
        } else {
            let p = self.st.align(call, align, bytes);
            if !p.is_null() {
                // SAFETY: fresh block of `bytes` in our heap. No peer writes
                // it before returning from this call, which needs the barrier
                // below, which we reach only after zeroing.
                unsafe { std::ptr::write_bytes(p, 0, bytes) };
                self.st.barrier_all();
            }
            p
        };
        match NonNull::new(p as *mut T) {
            Some(ptr) => Ok(SymmVec { ptr, len, shmem: self }),
            None => Err(Error::OutOfMemory { requested: bytes }),
        }
    }

    /// `barrier_all`: completes this PE's operations and waits for all PEs.
    pub fn barrier_all(&self) {
        self.st.barrier_all()
    }

    /// `sync_all`: waits for all PEs without completing operations.
    pub fn sync_all(&self) {
        self.st.sync_all()
    }

    /// `fence`: orders this PE's puts to each PE.
    pub fn fence(&self) {
        self.st.fence()
    }

    /// `quiet`: completes all of this PE's outstanding operations.
    pub fn quiet(&self) {
        self.st.quiet()
    }

    /// Finalizes the library (collective). Same as dropping the handle.
    pub fn finalize(self) {}
}

impl Drop for Ishmem {
    fn drop(&mut self) {
        core::finalize();
    }
}

/// A symmetric vector: the same allocation on every PE.
pub struct SymmVec<'a, T: Symmetric> {
    ptr: NonNull<T>,
    len: usize,
    shmem: &'a Ishmem,
}

fn pe_i32(pe: usize) -> i32 {
    i32::try_from(pe).unwrap_or(i32::MAX)
}

impl<'a, T: Symmetric> SymmVec<'a, T> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The symmetric address of the first element on this PE.
    pub fn as_ptr(&self) -> *const T {
        self.ptr.as_ptr()
    }

    #[track_caller]
    fn range(&self, call: &str, offset: usize, n: usize) {
        if offset.checked_add(n).is_none_or(|end| end > self.len) {
            ishmem_runtime::error::fatal(
                call,
                format_args!("elements {offset}..{} are out of bounds of a symmetric vector of {} elements", offset.saturating_add(n), self.len),
            )
        }
    }

    /// This PE's copy.
    pub fn local(&self) -> &[T] {
        // SAFETY: ptr/len describe our live allocation (see the crate docs
        // on when remote writes may change it).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// This PE's copy, mutably.
    pub fn local_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `local`; `&mut self` excludes other local borrows.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// Copies `src` into elements `offset..` of this vector on `pe` (§9.5.1).
    pub fn put(&self, offset: usize, src: &[T], pe: usize) {
        let call = "ishmem::SymmVec::put";
        self.range(call, offset, src.len());
        // SAFETY: bounds checked above; src is a valid slice.
        unsafe {
            self.shmem.st.put(call, self.ptr.as_ptr().add(offset).cast(), src.as_ptr().cast(), size_of_val(src), pe_i32(pe))
        }
    }

    /// Copies elements `offset..offset + dst.len()` of this vector on `pe`
    /// into `dst` (§9.5.4).
    pub fn get(&self, offset: usize, dst: &mut [T], pe: usize) {
        let call = "ishmem::SymmVec::get";
        self.range(call, offset, dst.len());
        // SAFETY: bounds checked above; dst is a valid slice.
        unsafe {
            self.shmem.st.get(call, dst.as_mut_ptr().cast(), self.ptr.as_ptr().add(offset).cast(), size_of_val(dst), pe_i32(pe))
        }
    }

    /// Stores `value` into element `index` on `pe` (§9.5.2).
    pub fn p(&self, index: usize, value: T, pe: usize) {
        let call = "ishmem::SymmVec::p";
        self.range(call, index, 1);
        // SAFETY: bounds checked above.
        unsafe { self.shmem.st.p(call, self.ptr.as_ptr().add(index), value, pe_i32(pe)) }
    }

    /// Loads element `index` from `pe` (§9.5.5).
    pub fn g(&self, index: usize, pe: usize) -> T {
        let call = "ishmem::SymmVec::g";
        self.range(call, index, 1);
        // SAFETY: bounds checked above.
        unsafe { self.shmem.st.g(call, self.ptr.as_ptr().add(index), pe_i32(pe)) }
    }

    /// Strided put (§9.5.3): `src[i * src_stride]` goes to element
    /// `offset + i * dst_stride` on `pe`, for `i` in `0..nelems`.
    pub fn iput(&self, offset: usize, dst_stride: usize, src: &[T], src_stride: usize, nelems: usize, pe: usize) {
        let call = "ishmem::SymmVec::iput";
        if nelems == 0 {
            return;
        }
        self.range(call, offset, (nelems - 1) * dst_stride + 1);
        assert!((nelems - 1) * src_stride < src.len(), "{call}: source too short for {nelems} elements at stride {src_stride}");
        // SAFETY: both extents checked above.
        unsafe {
            self.shmem.st.iput(
                call, self.ptr.as_ptr().add(offset).cast(), src.as_ptr().cast(),
                dst_stride as isize, src_stride as isize, size_of::<T>(), nelems, pe_i32(pe),
            )
        }
    }

    /// Strided get (§9.5.6): element `offset + i * src_stride` on `pe` goes to
    /// `dst[i * dst_stride]`.
    pub fn iget(&self, offset: usize, src_stride: usize, dst: &mut [T], dst_stride: usize, nelems: usize, pe: usize) {
        let call = "ishmem::SymmVec::iget";
        if nelems == 0 {
            return;
        }
        self.range(call, offset, (nelems - 1) * src_stride + 1);
        assert!((nelems - 1) * dst_stride < dst.len(), "{call}: destination too short for {nelems} elements at stride {dst_stride}");
        // SAFETY: both extents checked above.
        unsafe {
            self.shmem.st.iget(
                call, dst.as_mut_ptr().cast(), self.ptr.as_ptr().add(offset).cast(),
                dst_stride as isize, src_stride as isize, size_of::<T>(), nelems, pe_i32(pe),
            )
        }
    }

    /// `shmem_ptr` as a slice: `pe`'s copy of this vector, readable by plain
    /// loads, when `pe` shares memory with this PE (§9.2.5).
    pub fn peer_slice(&self, pe: usize) -> Option<&[T]> {
        let p = self.shmem.st.ptr("ishmem::SymmVec::peer_slice", self.ptr.as_ptr().cast(), pe_i32(pe));
        // SAFETY: a non-null result maps the same allocation on `pe`.
        NonNull::new(p as *mut T).map(|p| unsafe { std::slice::from_raw_parts(p.as_ptr(), self.len) })
    }

    /// `pe`'s copy of this vector, writable by plain stores.
    ///
    /// # Safety
    /// The caller must ensure no other access to those elements (by `pe` or
    /// any PE) overlaps the returned borrow.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn peer_slice_mut(&self, pe: usize) -> Option<&mut [T]> {
        let p = self.shmem.st.ptr("ishmem::SymmVec::peer_slice_mut", self.ptr.as_ptr().cast(), pe_i32(pe));
        NonNull::new(p as *mut T).map(|p| std::slice::from_raw_parts_mut(p.as_ptr(), self.len))
    }
}

impl<T: Symmetric> Drop for SymmVec<'_, T> {
    fn drop(&mut self) {
        if self.len != 0 && size_of::<T>() != 0 {
            self.shmem.st.free("ishmem::SymmVec::drop", self.ptr.as_ptr().cast());
        }
    }
}
