//! Safe Rust API of ishmem-rs.
//!
//! Run a program under the launcher: `ishmrun -n 4 target/debug/prog`; run
//! without it, it is a single PE (as the examples in these docs are).
//!
//! ```
//! use ishmem::Ishmem;
//! let shmem = Ishmem::init().expect("init");
//! let (me, n) = (shmem.my_pe(), shmem.n_pes());
//! // Collective: every PE allocates the same symmetric vector.
//! let mut inbox = shmem.alloc::<u64>(4).expect("alloc");
//! inbox.put(0, &[me as u64; 4], (me + 1) % n);
//! shmem.barrier_all();
//! assert_eq!(inbox.read_local_at(0), ((me + n - 1) % n) as u64);
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
//! Memory model: a PE's own elements of a symmetric vector may be changed
//! by other PEs' puts at any time; as in C, a program reads them only after
//! the synchronization that orders those puts (a barrier, a wait on a
//! flag). The safe calls copy them ([`SymmVec::read_local`],
//! [`SymmVec::read_local_at`], [`SymmVec::write_local`]); borrowing them as
//! a slice ([`SymmVec::local`]) is unsafe, since another PE may write under
//! the borrow.

use ishmem_runtime::api::{self, state, AmoOp, Blocks, CmpValues, RedOp, State, SyncMode};
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
            Error::OutOfMemory { requested } => {
                write!(f, "symmetric heap exhausted allocating {requested} bytes (raise ISHMEM_SYMMETRIC_SIZE)")
            }
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

/// Types on which fetch, set and swap are atomic (OpenSHMEM's extended AMO
/// types).
///
/// # Safety
/// The type must be 1, 4 or 8 bytes, naturally aligned, valid for any bits.
pub unsafe trait AmoValue: Symmetric {}

/// Integer types with the full set of AMOs and with wait/test.
///
/// # Safety
/// As [`AmoValue`]; comparisons must be those of the integer type.
pub unsafe trait AmoInt: AmoValue + PartialOrd {
    const ONE: Self;
    const ZERO: Self;
}

macro_rules! amo_types {
    ($($t:ty),*) => { $(
        // SAFETY: fixed-size primitive integer.
        unsafe impl AmoValue for $t {}
        // SAFETY: as above; PartialOrd is the integer order.
        unsafe impl AmoInt for $t { const ONE: Self = 1; const ZERO: Self = 0; }
    )* };
}
amo_types!(i8, i32, i64, isize, u32, u64, usize);
// SAFETY: 4- and 8-byte floats; fetch/set/swap move bits.
unsafe impl AmoValue for f32 {}
// SAFETY: as above.
unsafe impl AmoValue for f64 {}

/// Comparison operators of `wait_until` and `test` (§9.11).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
}

impl Cmp {
    fn code(self) -> i32 {
        match self {
            Cmp::Eq => api::CMP_EQ,
            Cmp::Ne => api::CMP_NE,
            Cmp::Gt => api::CMP_GT,
            Cmp::Ge => api::CMP_GE,
            Cmp::Lt => api::CMP_LT,
            Cmp::Le => api::CMP_LE,
        }
    }
}

/// How `put_signal` updates the signal (§9.8).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignalOp {
    Set,
    Add,
}

impl SignalOp {
    fn code(self) -> i32 {
        match self {
            SignalOp::Set => api::SIGNAL_SET,
            SignalOp::Add => api::SIGNAL_ADD,
        }
    }
}

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
        api::init().map_err(|e| {
            HANDLE_TAKEN.store(false, std::sync::atomic::Ordering::SeqCst);
            Error::Init(e.to_string())
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
            return Ok(SymmVec { ptr: NonNull::dangling(), len, shmem: self, owned: true });
        }
        let bytes = len.checked_mul(size_of::<T>()).ok_or(Error::OutOfMemory { requested: usize::MAX })?;
        let align = align.max(std::mem::align_of::<T>()).max(size_of::<usize>());
        let call = "ishmem::Ishmem::alloc";
        let p = if align <= api::MIN_ALIGN {
            self.st.calloc(call, len, size_of::<T>())
        } else {
            let p = self.st.align(call, align, bytes);
            if !p.is_null() {
                // SAFETY: fresh block of `bytes` in our heap. No peer writes
                // it before returning from this call, which needs the barrier
                // below, which we reach only after zeroing.
                unsafe { std::ptr::write_bytes(p, 0, bytes) };
                self.st.barrier_all("ishmem::Ishmem::alloc");
            }
            p
        };
        match NonNull::new(p as *mut T) {
            Some(ptr) => Ok(SymmVec { ptr, len, shmem: self, owned: true }),
            None => Err(Error::OutOfMemory { requested: bytes }),
        }
    }

    /// A symmetric view of `len` elements of a global of the program (a
    /// `static` or `static mut` of the executable, which every PE runs):
    /// other PEs' copies are reached with the same calls as a symmetric
    /// allocation's. Dropping the view frees nothing.
    ///
    /// ```
    /// static mut COUNTER: u64 = 0;
    /// let shmem = ishmem::Ishmem::init().unwrap();
    /// // SAFETY: COUNTER is a global of this program, accessed only through
    /// // the view while it exists.
    /// let c = unsafe { shmem.global(std::ptr::addr_of_mut!(COUNTER), 1) };
    /// c.atomic_add(0, 2, 0);
    /// shmem.barrier_all();
    /// ```
    ///
    /// # Safety
    /// `ptr` points to `len` elements of a global of the main executable,
    /// and the program does not otherwise access them in ways that race
    /// with other PEs' operations on them (as for any symmetric object).
    pub unsafe fn global<T: Symmetric>(&self, ptr: *mut T, len: usize) -> SymmVec<'_, T> {
        let call = "ishmem::Ishmem::global";
        let bytes = len.saturating_mul(size_of::<T>());
        if bytes > 0 {
            // Fatal, naming the address, when the range is not symmetric.
            self.st.sym_offset(call, "ptr", ptr as *const u8, bytes);
        }
        match NonNull::new(ptr) {
            Some(ptr) => SymmVec { ptr, len, shmem: self, owned: false },
            None => api::fatal(call, format_args!("ptr is a null pointer")),
        }
    }

    /// `barrier_all`: completes this PE's operations and waits for all PEs.
    pub fn barrier_all(&self) {
        self.st.barrier_all("ishmem::Ishmem::barrier_all")
    }

    /// `sync_all`: waits for all PEs without completing operations.
    pub fn sync_all(&self) {
        self.st.sync_all("ishmem::Ishmem::sync_all")
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
        api::finalize();
    }
}

/// A symmetric vector: the same allocation on every PE.
///
/// ```
/// let shmem = ishmem::Ishmem::init().unwrap();
/// let v = shmem.alloc::<f64>(4).unwrap();
/// let right = (shmem.my_pe() + 1) % shmem.n_pes();
/// v.put(0, &[1.0, 2.0], right);
/// v.atomic_set(3, 9.5, right);
/// shmem.barrier_all();
/// assert_eq!(v.read_local_at(1), 2.0);
/// ```
pub struct SymmVec<'a, T: Symmetric> {
    ptr: NonNull<T>,
    len: usize,
    shmem: &'a Ishmem,
    /// Allocated by the library (freed on drop); false for a view of a
    /// program global ([`Ishmem::global`]).
    owned: bool,
}

/// The shape of `nelems` single elements of `T`, `dst_stride` elements
/// apart at the destination and `src_stride` at the source (`iput`, `iget`).
fn strided<T>(nelems: usize, dst_stride: usize, src_stride: usize) -> Blocks {
    Blocks { elem: size_of::<T>(), bsize: 1, nblocks: nelems, dst: dst_stride as isize, sst: src_stride as isize }
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
            api::fatal(
                call,
                format_args!(
                    "elements {offset}..{} are out of bounds of a symmetric vector of {} elements",
                    offset.saturating_add(n),
                    self.len
                ),
            )
        }
    }

    /// A copy of this PE's elements.
    ///
    /// Only where the host reaches the heap by loads and stores (not a heap
    /// in GPU memory: read it with [`SymmVec::get`] there; asking is a
    /// PE-tagged error). Other PEs may write these elements at any time, so
    /// the safe API copies them out instead of lending a `&[T]`; read them
    /// after the synchronization that orders those writes (a barrier, a
    /// wait on a flag). [`SymmVec::local`] lends them without a copy, as an
    /// unsafe call.
    pub fn read_local(&self) -> Vec<T> {
        let mut v = Vec::with_capacity(self.len);
        self.read_local_into("ishmem::SymmVec::read_local", 0, v.spare_capacity_mut().as_mut_ptr().cast(), self.len);
        // SAFETY: the copy above initialized all `len` elements.
        unsafe { v.set_len(self.len) };
        v
    }

    /// Element `index` of this PE's copy (as [`SymmVec::read_local`]: read
    /// it after the synchronization that orders other PEs' writes). To wait
    /// for a value other PEs write, use [`SymmVec::wait_until`] or
    /// [`SymmVec::signal_wait_until`], which also make the library progress
    /// remote writes; a loop over this call may never see them.
    pub fn read_local_at(&self, index: usize) -> T {
        let call = "ishmem::SymmVec::read_local_at";
        self.range(call, index, 1);
        self.host_view(call);
        // SAFETY: in bounds of our live allocation, in host memory; a
        // `Symmetric` value is valid for any bits.
        unsafe { self.ptr.as_ptr().add(index).read() }
    }

    /// Copies elements `offset..offset + dst.len()` of this PE's copy into
    /// `dst` (as [`SymmVec::read_local`]).
    pub fn copy_local_to(&self, offset: usize, dst: &mut [T]) {
        self.read_local_into("ishmem::SymmVec::copy_local_to", offset, dst.as_mut_ptr(), dst.len());
    }

    fn read_local_into(&self, call: &str, offset: usize, dst: *mut T, n: usize) {
        self.range(call, offset, n);
        self.host_view(call);
        // SAFETY: bounds checked; host memory; `dst` is valid for `n`
        // elements and is not symmetric memory (a local slice or vector).
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.as_ptr().add(offset), dst, n) }
    }

    /// Stores `src` into elements `offset..` of this PE's copy (local
    /// stores: no other PE sees them before a synchronization, as in C).
    pub fn write_local(&self, offset: usize, src: &[T]) {
        let call = "ishmem::SymmVec::write_local";
        self.range(call, offset, src.len());
        self.host_view(call);
        // SAFETY: bounds checked; host memory; `src` is a local slice.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), self.ptr.as_ptr().add(offset), src.len()) }
    }

    /// This PE's copy, borrowed without a copy.
    ///
    /// # Safety
    /// While the slice lives, nothing may write these elements: no other
    /// PE (a put, an AMO, a collective that writes them), and not this PE
    /// through the library (a put or AMO to itself). Typically: borrow after
    /// a barrier, drop before the next operation on the vector. Host memory
    /// only, as [`SymmVec::read_local`].
    pub unsafe fn local(&self) -> &[T] {
        self.host_view("ishmem::SymmVec::local");
        // SAFETY: ptr/len describe our live allocation, in host memory; the
        // caller guarantees no writes while the borrow lives.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// This PE's copy, borrowed mutably without a copy.
    ///
    /// # Safety
    /// As [`SymmVec::local`]: nothing else may read or write these elements
    /// while the slice lives (`&mut self` excludes this program's other
    /// borrows, not other PEs).
    pub unsafe fn local_mut(&mut self) -> &mut [T] {
        self.host_view("ishmem::SymmVec::local_mut");
        // SAFETY: as in `local`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    fn host_view(&self, call: &str) {
        if self.owned && !self.shmem.st.heap_host_direct() {
            api::fatal(
                call,
                format_args!(
                    "the symmetric heap is in {} memory, which the host cannot read directly: use get() and put()",
                    self.shmem.st.device_name()
                ),
            )
        }
    }

    /// Copies `src` into elements `offset..` of this vector on `pe` (§9.5.1).
    pub fn put(&self, offset: usize, src: &[T], pe: usize) {
        let call = "ishmem::SymmVec::put";
        self.range(call, offset, src.len());
        // SAFETY: bounds checked above; src is a valid slice.
        unsafe {
            self.shmem.st.put(
                call,
                self.ptr.as_ptr().add(offset).cast(),
                src.as_ptr().cast(),
                size_of_val(src),
                pe_i32(pe),
            )
        }
    }

    /// Copies elements `offset..offset + dst.len()` of this vector on `pe`
    /// into `dst` (§9.5.4).
    pub fn get(&self, offset: usize, dst: &mut [T], pe: usize) {
        let call = "ishmem::SymmVec::get";
        self.range(call, offset, dst.len());
        // SAFETY: bounds checked above; dst is a valid slice.
        unsafe {
            self.shmem.st.get(
                call,
                dst.as_mut_ptr().cast(),
                self.ptr.as_ptr().add(offset).cast(),
                size_of_val(dst),
                pe_i32(pe),
            )
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
        assert!(
            (nelems - 1) * src_stride < src.len(),
            "{call}: source too short for {nelems} elements at stride {src_stride}"
        );
        // SAFETY: both extents checked above.
        unsafe {
            self.shmem.st.ibput(
                call,
                self.ptr.as_ptr().add(offset).cast(),
                src.as_ptr().cast(),
                strided::<T>(nelems, dst_stride, src_stride),
                pe_i32(pe),
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
        assert!(
            (nelems - 1) * dst_stride < dst.len(),
            "{call}: destination too short for {nelems} elements at stride {dst_stride}"
        );
        // SAFETY: both extents checked above.
        unsafe {
            self.shmem.st.ibget(
                call,
                dst.as_mut_ptr().cast(),
                self.ptr.as_ptr().add(offset).cast(),
                strided::<T>(nelems, dst_stride, src_stride),
                pe_i32(pe),
            )
        }
    }

    /// `shmem_ptr` as a slice: `pe`'s copy of this vector, readable by plain
    /// loads, when `pe` shares memory with this PE (§9.2.5); `None` when it
    /// does not, or when the heap is in GPU memory. [`SymmVec::get`] reads
    /// any PE's copy safely.
    ///
    /// # Safety
    /// While the slice lives, nothing may write those elements: not `pe`,
    /// not any other PE, not this PE through the library.
    pub unsafe fn peer_slice(&self, pe: usize) -> Option<&[T]> {
        let p = self.peer_ptr("ishmem::SymmVec::peer_slice", pe)?;
        // SAFETY: `p` maps the same live allocation of `len` elements on
        // `pe`, in host memory; the caller guarantees no writes under the
        // borrow.
        Some(unsafe { std::slice::from_raw_parts(p.as_ptr(), self.len) })
    }

    /// `pe`'s copy of this vector, writable by plain stores.
    ///
    /// # Safety
    /// The caller must ensure no other access to those elements (by `pe` or
    /// any PE) overlaps the returned borrow.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn peer_slice_mut(&self, pe: usize) -> Option<&mut [T]> {
        let p = self.peer_ptr("ishmem::SymmVec::peer_slice_mut", pe)?;
        // SAFETY: as in `peer_slice`; the caller guarantees no other access.
        Some(unsafe { std::slice::from_raw_parts_mut(p.as_ptr(), self.len) })
    }

    /// `shmem_ptr` of this vector on `pe`, where the host may load and store.
    fn peer_ptr(&self, call: &str, pe: usize) -> Option<NonNull<T>> {
        if self.owned && !self.shmem.st.heap_host_direct() {
            return None; // GPU memory: not for host loads and stores.
        }
        NonNull::new(self.shmem.st.ptr(call, self.ptr.as_ptr().cast(), pe_i32(pe)) as *mut T)
    }
}

impl<T: Symmetric> Drop for SymmVec<'_, T> {
    fn drop(&mut self) {
        if self.owned && self.len != 0 && size_of::<T>() != 0 {
            self.shmem.st.free("ishmem::SymmVec::drop", self.ptr.as_ptr().cast());
        }
    }
}

/// Atomic memory operations on element `index` of a symmetric vector on
/// `pe` (§9.7). All are sequentially consistent: two fetching AMOs from one
/// PE to one element see each other in program order.
impl<T: AmoValue> SymmVec<'_, T> {
    fn amo(&self, call: &str, index: usize, op: AmoOp, value: T, cond: T, pe: usize) -> T {
        self.range(call, index, 1);
        // SAFETY: bounds checked; T is a plain 1/4/8-byte type.
        unsafe { self.shmem.st.amo(call, self.ptr.as_ptr().add(index), op, value, cond, pe_i32(pe)) }
    }

    /// Atomically reads element `index` on `pe`.
    pub fn atomic_fetch(&self, index: usize, pe: usize) -> T {
        self.amo("ishmem::SymmVec::atomic_fetch", index, AmoOp::Fetch, api::from_bits(0), api::from_bits(0), pe)
    }

    /// Atomically writes `value`.
    pub fn atomic_set(&self, index: usize, value: T, pe: usize) {
        self.amo("ishmem::SymmVec::atomic_set", index, AmoOp::Set, value, value, pe);
    }

    /// Atomically writes `value`, returning the old value.
    pub fn atomic_swap(&self, index: usize, value: T, pe: usize) -> T {
        self.amo("ishmem::SymmVec::atomic_swap", index, AmoOp::Swap, value, value, pe)
    }
}

impl<T: AmoInt> SymmVec<'_, T> {
    /// Writes `value` if the element equals `cond`; returns the old value.
    pub fn atomic_compare_swap(&self, index: usize, cond: T, value: T, pe: usize) -> T {
        self.amo("ishmem::SymmVec::atomic_compare_swap", index, AmoOp::CompareSwap, value, cond, pe)
    }

    /// Adds `value` (wrapping), returning the old value.
    pub fn atomic_fetch_add(&self, index: usize, value: T, pe: usize) -> T {
        self.amo("ishmem::SymmVec::atomic_fetch_add", index, AmoOp::FetchAdd, value, T::ZERO, pe)
    }

    /// Adds `value` (wrapping).
    pub fn atomic_add(&self, index: usize, value: T, pe: usize) {
        self.amo("ishmem::SymmVec::atomic_add", index, AmoOp::FetchAdd, value, T::ZERO, pe);
    }

    /// Adds one, returning the old value.
    pub fn atomic_fetch_inc(&self, index: usize, pe: usize) -> T {
        self.amo("ishmem::SymmVec::atomic_fetch_inc", index, AmoOp::FetchAdd, T::ONE, T::ZERO, pe)
    }

    /// Adds one.
    pub fn atomic_inc(&self, index: usize, pe: usize) {
        self.amo("ishmem::SymmVec::atomic_inc", index, AmoOp::FetchAdd, T::ONE, T::ZERO, pe);
    }

    /// Bitwise AND, returning the old value.
    pub fn atomic_fetch_and(&self, index: usize, value: T, pe: usize) -> T {
        self.amo("ishmem::SymmVec::atomic_fetch_and", index, AmoOp::FetchAnd, value, T::ZERO, pe)
    }

    /// Bitwise OR, returning the old value.
    pub fn atomic_fetch_or(&self, index: usize, value: T, pe: usize) -> T {
        self.amo("ishmem::SymmVec::atomic_fetch_or", index, AmoOp::FetchOr, value, T::ZERO, pe)
    }

    /// Bitwise XOR, returning the old value.
    pub fn atomic_fetch_xor(&self, index: usize, value: T, pe: usize) -> T {
        self.amo("ishmem::SymmVec::atomic_fetch_xor", index, AmoOp::FetchXor, value, T::ZERO, pe)
    }

    /// Waits until this PE's element `index` satisfies `element cmp value`
    /// (§9.11.1). Other PEs' updates need nothing from this PE to arrive, so
    /// the wait cannot deadlock this PE's own operations.
    pub fn wait_until(&self, index: usize, cmp: Cmp, value: T) {
        let call = "ishmem::SymmVec::wait_until";
        self.range(call, index, 1);
        // SAFETY: bounds checked; T is a plain integer type.
        unsafe { self.shmem.st.wait_until(call, self.ptr.as_ptr().add(index), cmp.code(), value) }
    }

    /// Whether this PE's element `index` satisfies the comparison (§9.11.8).
    pub fn test(&self, index: usize, cmp: Cmp, value: T) -> bool {
        let call = "ishmem::SymmVec::test";
        self.range(call, index, 1);
        // SAFETY: as in wait_until.
        unsafe { self.shmem.st.test(call, self.ptr.as_ptr().add(index), cmp.code(), value) }
    }

    fn many(&self, call: &str, exclude: Option<&[bool]>, cmp: Cmp, value: T, mode: SyncMode, block: bool) -> usize {
        let status: Option<Vec<i32>> = exclude.map(|e| {
            assert_eq!(e.len(), self.len, "{call}: exclude mask must have one entry per element");
            e.iter().map(|&x| i32::from(x)).collect()
        });
        let sp = status.as_ref().map_or(std::ptr::null(), |s| s.as_ptr());
        // SAFETY: the whole vector is the ivars array; status has len entries.
        unsafe {
            self.shmem.st.sync_many(
                call,
                self.ptr.as_ptr(),
                self.len,
                sp,
                cmp.code(),
                CmpValues::One(value),
                mode,
                block,
            )
        }
    }

    /// Waits until every element not excluded satisfies the comparison
    /// (§9.11.2). `exclude[i] == true` leaves element `i` out.
    pub fn wait_until_all(&self, exclude: Option<&[bool]>, cmp: Cmp, value: T) {
        self.many("ishmem::SymmVec::wait_until_all", exclude, cmp, value, SyncMode::All, true);
    }

    /// Waits until some element not excluded satisfies it and returns its
    /// index; `None` at once when every element is excluded (§9.11.3).
    pub fn wait_until_any(&self, exclude: Option<&[bool]>, cmp: Cmp, value: T) -> Option<usize> {
        let i = self.many("ishmem::SymmVec::wait_until_any", exclude, cmp, value, SyncMode::Any, true);
        (i != usize::MAX).then_some(i)
    }

    /// Waits until at least one element not excluded satisfies it; returns
    /// the indices of all that do (empty when every element is excluded).
    pub fn wait_until_some(&self, exclude: Option<&[bool]>, cmp: Cmp, value: T) -> Vec<usize> {
        let mut idx = vec![0usize; self.len];
        let n =
            self.many("ishmem::SymmVec::wait_until_some", exclude, cmp, value, SyncMode::Some(idx.as_mut_ptr()), true);
        idx.truncate(n);
        idx
    }

    /// Whether every element not excluded satisfies the comparison.
    pub fn test_all(&self, exclude: Option<&[bool]>, cmp: Cmp, value: T) -> bool {
        self.many("ishmem::SymmVec::test_all", exclude, cmp, value, SyncMode::All, false) == 1
    }

    /// The index of an element not excluded that satisfies it, if any.
    pub fn test_any(&self, exclude: Option<&[bool]>, cmp: Cmp, value: T) -> Option<usize> {
        let i = self.many("ishmem::SymmVec::test_any", exclude, cmp, value, SyncMode::Any, false);
        (i != usize::MAX).then_some(i)
    }

    /// The indices of the elements not excluded that satisfy it.
    pub fn test_some(&self, exclude: Option<&[bool]>, cmp: Cmp, value: T) -> Vec<usize> {
        let mut idx = vec![0usize; self.len];
        let n = self.many("ishmem::SymmVec::test_some", exclude, cmp, value, SyncMode::Some(idx.as_mut_ptr()), false);
        idx.truncate(n);
        idx
    }
}

/// Signals (§9.8): a `SymmVec<u64>` element used as a signal word.
impl SymmVec<'_, u64> {
    /// Atomically reads this PE's signal `index`.
    pub fn signal_fetch(&self, index: usize) -> u64 {
        let call = "ishmem::SymmVec::signal_fetch";
        self.range(call, index, 1);
        // SAFETY: bounds checked.
        self.shmem.st.signal_fetch(call, unsafe { self.ptr.as_ptr().add(index) })
    }

    /// Waits until this PE's signal `index` satisfies the comparison;
    /// returns its value.
    pub fn signal_wait_until(&self, index: usize, cmp: Cmp, value: u64) -> u64 {
        let call = "ishmem::SymmVec::signal_wait_until";
        self.range(call, index, 1);
        // SAFETY: bounds checked.
        self.shmem.st.signal_wait_until(call, unsafe { self.ptr.as_ptr().add(index) }, cmp.code(), value)
    }

    /// Updates signal `index` on `pe` without data (OpenSHMEM 1.6
    /// `signal_set`/`signal_add`).
    pub fn signal_update(&self, index: usize, value: u64, op: SignalOp, pe: usize) {
        let call = "ishmem::SymmVec::signal_update";
        self.range(call, index, 1);
        // SAFETY: bounds checked.
        self.shmem.st.signal_update(call, unsafe { self.ptr.as_ptr().add(index) }, value, op.code(), pe_i32(pe))
    }
}

impl<T: Symmetric> SymmVec<'_, T> {
    /// Copies `src` to elements `offset..` on `pe`, then updates
    /// `signals[sig_index]` on `pe`; a PE that sees the signal sees the data
    /// (§9.8.1).
    #[allow(clippy::too_many_arguments)]
    pub fn put_signal(
        &self, offset: usize, src: &[T], signals: &SymmVec<'_, u64>, sig_index: usize, value: u64, op: SignalOp,
        pe: usize,
    ) {
        let call = "ishmem::SymmVec::put_signal";
        self.range(call, offset, src.len());
        signals.range(call, sig_index, 1);
        // SAFETY: both ranges checked; src is a valid slice.
        unsafe {
            self.shmem.st.put_signal(
                call,
                self.ptr.as_ptr().add(offset).cast(),
                src.as_ptr().cast(),
                size_of_val(src),
                signals.ptr.as_ptr().add(sig_index),
                value,
                op.code(),
                pe_i32(pe),
            )
        }
    }
}

/// Reduction operators (§9.9.11).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    And,
    Or,
    Xor,
    Max,
    Min,
    Sum,
    Prod,
}

/// Element types of reductions: every numeric type has max/min/sum/prod
/// (wrapping for integers); integers also have and/or/xor.
pub trait Reduce: Symmetric + PartialOrd {
    const ZERO: Self;
    /// Whether `op` is defined for the type (bitwise operators are not
    /// defined for floating point).
    fn supports(op: ReduceOp) -> bool;
    fn apply_and(a: Self, b: Self) -> Self;
    fn apply_or(a: Self, b: Self) -> Self;
    fn apply_xor(a: Self, b: Self) -> Self;
    fn apply_max(a: Self, b: Self) -> Self;
    fn apply_min(a: Self, b: Self) -> Self;
    fn apply_sum(a: Self, b: Self) -> Self;
    fn apply_prod(a: Self, b: Self) -> Self;
}

macro_rules! reduce_int {
    ($($t:ty),*) => { $(
        impl Reduce for $t {
            const ZERO: Self = 0;
            fn supports(_: ReduceOp) -> bool { true }
            #[inline(always)] fn apply_and(a: Self, b: Self) -> Self { a & b }
            #[inline(always)] fn apply_or(a: Self, b: Self) -> Self { a | b }
            #[inline(always)] fn apply_xor(a: Self, b: Self) -> Self { a ^ b }
            #[inline(always)] fn apply_max(a: Self, b: Self) -> Self { a.max(b) }
            #[inline(always)] fn apply_min(a: Self, b: Self) -> Self { a.min(b) }
            #[inline(always)] fn apply_sum(a: Self, b: Self) -> Self { a.wrapping_add(b) }
            #[inline(always)] fn apply_prod(a: Self, b: Self) -> Self { a.wrapping_mul(b) }
        }
    )* };
}
reduce_int!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize);

macro_rules! reduce_float {
    ($($t:ty),*) => { $(
        impl Reduce for $t {
            const ZERO: Self = 0.0;
            fn supports(op: ReduceOp) -> bool { !matches!(op, ReduceOp::And | ReduceOp::Or | ReduceOp::Xor) }
            fn apply_and(_: Self, _: Self) -> Self { unreachable!("checked by supports") }
            fn apply_or(_: Self, _: Self) -> Self { unreachable!("checked by supports") }
            fn apply_xor(_: Self, _: Self) -> Self { unreachable!("checked by supports") }
            #[inline(always)] fn apply_max(a: Self, b: Self) -> Self { if b > a { b } else { a } }
            #[inline(always)] fn apply_min(a: Self, b: Self) -> Self { if b < a { b } else { a } }
            #[inline(always)] fn apply_sum(a: Self, b: Self) -> Self { a + b }
            #[inline(always)] fn apply_prod(a: Self, b: Self) -> Self { a * b }
        }
    )* };
}
reduce_float!(f32, f64);

/// A team (§9.4). Teams made by splitting are destroyed (collectively) when
/// dropped; the predefined teams are not.
///
/// ```
/// use ishmem::{Ishmem, ReduceOp};
/// let shmem = Ishmem::init().unwrap();
/// let world = shmem.team_world();
/// let x = shmem.alloc::<i64>(2).unwrap();
/// x.put(0, &[shmem.my_pe() as i64 + 1], shmem.my_pe());
/// world.reduce_in_place(ReduceOp::Sum, &x, 1);
/// let n = shmem.n_pes() as i64;
/// assert_eq!(x.read_local_at(0), n * (n + 1) / 2);
/// ```
pub struct Team<'a> {
    handle: i32,
    shmem: &'a Ishmem,
    owned: bool,
}

impl Ishmem {
    /// The world team: every PE.
    pub fn team_world(&self) -> Team<'_> {
        Team { handle: api::TEAM_WORLD, shmem: self, owned: false }
    }

    /// The PEs that share memory with this one.
    pub fn team_shared(&self) -> Team<'_> {
        Team { handle: api::TEAM_SHARED, shmem: self, owned: false }
    }
}

impl<'a> Team<'a> {
    fn info(&self, call: &str) -> api::Team {
        self.shmem.st.team(call, self.handle).expect("a Team value is always a valid team")
    }

    /// The handle C code uses for this team.
    pub fn handle(&self) -> i32 {
        self.handle
    }

    /// This PE's number in the team.
    pub fn my_pe(&self) -> usize {
        self.info("ishmem::Team::my_pe").my_rank
    }

    /// Number of PEs in the team.
    pub fn n_pes(&self) -> usize {
        self.info("ishmem::Team::n_pes").size
    }

    /// Team PE `pe` of this team as a PE of `other`, if it is a member.
    pub fn translate_pe(&self, pe: usize, other: &Team<'_>) -> Option<usize> {
        let r = self.shmem.st.team_translate_pe("ishmem::Team::translate_pe", self.handle, pe_i32(pe), other.handle);
        usize::try_from(r).ok()
    }

    /// Collective over this team: the team of its PEs `start + i * stride`,
    /// `i < size`. `Ok(None)` on PEs that are not members.
    pub fn split_strided(&self, start: usize, stride: isize, size: usize) -> Result<Option<Team<'a>>> {
        let call = "ishmem::Team::split_strided";
        let (rc, h) = self.shmem.st.team_split_strided(
            call,
            self.handle,
            pe_i32(start),
            i32::try_from(stride).unwrap_or(i32::MAX),
            pe_i32(size),
            0,
        );
        if rc != 0 {
            return Err(Error::Init(format!("{call}: start {start}, stride {stride}, size {size} is not a team")));
        }
        Ok((h != api::TEAM_INVALID).then(|| Team { handle: h, shmem: self.shmem, owned: true }))
    }

    /// Collective over this team: its rows and columns as a grid of `xrange`
    /// columns, as (row team, column team).
    pub fn split_2d(&self, xrange: usize) -> Result<(Team<'a>, Team<'a>)> {
        let call = "ishmem::Team::split_2d";
        let (rc, x, y) = self.shmem.st.team_split_2d(call, self.handle, pe_i32(xrange), (0, 0));
        if rc != 0 {
            return Err(Error::Init(format!("{call}: xrange {xrange} does not split the team")));
        }
        Ok((Team { handle: x, shmem: self.shmem, owned: true }, Team { handle: y, shmem: self.shmem, owned: true }))
    }

    /// `team_sync`: waits until every member has arrived.
    pub fn sync(&self) {
        self.shmem.st.team_sync("ishmem::Team::sync", self.handle);
    }

    fn check_len<T: Symmetric>(call: &str, v: &SymmVec<'_, T>, need: usize) {
        v.range(call, 0, need);
    }

    /// `broadcast`: the first `nelems` elements of `src` on team PE `root`
    /// into `dest` on every member.
    pub fn broadcast<T: Symmetric>(&self, dest: &SymmVec<'_, T>, src: &SymmVec<'_, T>, nelems: usize, root: usize) {
        let call = "ishmem::Team::broadcast";
        Self::check_len(call, dest, nelems);
        Self::check_len(call, src, nelems);
        self.shmem.st.broadcast(
            call,
            self.handle,
            dest.ptr.as_ptr().cast(),
            src.ptr.as_ptr().cast(),
            nelems * size_of::<T>(),
            pe_i32(root),
        );
    }

    /// `fcollect`: every member's first `nelems` elements, in team order.
    pub fn fcollect<T: Symmetric>(&self, dest: &SymmVec<'_, T>, src: &SymmVec<'_, T>, nelems: usize) {
        let call = "ishmem::Team::fcollect";
        Self::check_len(call, dest, nelems * self.n_pes());
        Self::check_len(call, src, nelems);
        self.shmem.st.fcollect(
            call,
            self.handle,
            dest.ptr.as_ptr().cast(),
            src.ptr.as_ptr().cast(),
            nelems * size_of::<T>(),
        );
    }

    /// `collect`: like fcollect; `nelems` may differ between members.
    pub fn collect<T: Symmetric>(&self, dest: &SymmVec<'_, T>, src: &SymmVec<'_, T>, nelems: usize) {
        let call = "ishmem::Team::collect";
        Self::check_len(call, src, nelems);
        self.shmem.st.collect(
            call,
            self.handle,
            dest.ptr.as_ptr().cast(),
            src.ptr.as_ptr().cast(),
            nelems,
            size_of::<T>(),
        );
    }

    /// `alltoall`: block `j` (of `nelems`) of `src` to member `j`.
    pub fn alltoall<T: Symmetric>(&self, dest: &SymmVec<'_, T>, src: &SymmVec<'_, T>, nelems: usize) {
        let call = "ishmem::Team::alltoall";
        Self::check_len(call, dest, nelems * self.n_pes());
        Self::check_len(call, src, nelems * self.n_pes());
        self.shmem.st.alltoalls(
            call,
            self.handle,
            dest.ptr.as_ptr().cast(),
            src.ptr.as_ptr().cast(),
            strided::<T>(nelems, 1, 1),
        );
    }

    /// Reduction of the first `nreduce` elements of `src` over the team into
    /// `dest` (which may be `src` itself, see [`Team::reduce_in_place`]).
    pub fn reduce<T: Reduce>(&self, op: ReduceOp, dest: &SymmVec<'_, T>, src: &SymmVec<'_, T>, nreduce: usize) {
        self.reduce_ptrs(op, dest.ptr.as_ptr(), dest.len, src.ptr.as_ptr(), src.len, nreduce)
    }

    /// In-place reduction of the first `nreduce` elements of `buf`.
    pub fn reduce_in_place<T: Reduce>(&self, op: ReduceOp, buf: &SymmVec<'_, T>, nreduce: usize) {
        self.reduce_ptrs(op, buf.ptr.as_ptr(), buf.len, buf.ptr.as_ptr(), buf.len, nreduce)
    }

    fn reduce_ptrs<T: Reduce>(&self, op: ReduceOp, d: *mut T, dlen: usize, s: *mut T, slen: usize, n: usize) {
        let call = "ishmem::Team::reduce";
        if n > dlen || n > slen {
            api::fatal(call, format_args!("nreduce {n} exceeds a vector of {} elements", dlen.min(slen)))
        }
        if !T::supports(op) {
            api::fatal(call, format_args!("{op:?} is not defined for {}", std::any::type_name::<T>()))
        }
        let st = self.shmem.st;
        // Each arm passes a function item, so the element loop is
        // monomorphized and inlined per operator.
        // SAFETY: both vectors hold at least n elements; T is numeric.
        unsafe {
            match op {
                ReduceOp::And => st.reduce(call, self.handle, d, s, n, RedOp::And, T::apply_and),
                ReduceOp::Or => st.reduce(call, self.handle, d, s, n, RedOp::Or, T::apply_or),
                ReduceOp::Xor => st.reduce(call, self.handle, d, s, n, RedOp::Xor, T::apply_xor),
                ReduceOp::Max => st.reduce(call, self.handle, d, s, n, RedOp::Max, T::apply_max),
                ReduceOp::Min => st.reduce(call, self.handle, d, s, n, RedOp::Min, T::apply_min),
                ReduceOp::Sum => st.reduce(call, self.handle, d, s, n, RedOp::Sum, T::apply_sum),
                ReduceOp::Prod => st.reduce(call, self.handle, d, s, n, RedOp::Prod, T::apply_prod),
            }
        };
    }

    /// Intel SHMEM's `sum_inscan` (`exclusive == false`) and `sum_exscan`.
    pub fn sum_scan<T: Reduce>(&self, dest: &SymmVec<'_, T>, src: &SymmVec<'_, T>, nelems: usize, exclusive: bool) {
        let call = "ishmem::Team::sum_scan";
        Self::check_len(call, dest, nelems);
        Self::check_len(call, src, nelems);
        // SAFETY: both vectors hold at least nelems elements.
        unsafe {
            self.shmem.st.sum_scan(
                call,
                self.handle,
                dest.ptr.as_ptr(),
                src.ptr.as_ptr(),
                nelems,
                exclusive,
                T::ZERO,
                T::apply_sum,
            )
        };
    }
}

impl Drop for Team<'_> {
    fn drop(&mut self) {
        if self.owned {
            self.shmem.st.team_destroy("ishmem::Team::drop", self.handle);
        }
    }
}

/// A distributed lock (§9.12): a symmetric `long` managed as an MCS queue
/// lock, so PEs get it first come, first served.
///
/// ```
/// let shmem = ishmem::Ishmem::init().unwrap();
/// let lock = shmem.lock().unwrap();
/// {
///     let _held = lock.lock();
///     // critical section
/// }
/// assert!(lock.try_lock().is_some());
/// ```
pub struct SymmLock<'a> {
    word: SymmVec<'a, i64>,
}

/// Holding a [`SymmLock`]; dropping the guard releases it (after completing
/// this PE's operations, as `clear_lock` does).
pub struct LockGuard<'l, 'a> {
    lock: &'l SymmLock<'a>,
}

impl Ishmem {
    /// Collectively creates a lock.
    pub fn lock(&self) -> Result<SymmLock<'_>> {
        Ok(SymmLock { word: self.alloc::<i64>(1)? })
    }
}

impl<'a> SymmLock<'a> {
    /// Blocks until this PE holds the lock.
    pub fn lock(&self) -> LockGuard<'_, 'a> {
        self.word.shmem.st.set_lock("ishmem::SymmLock::lock", self.word.ptr.as_ptr());
        LockGuard { lock: self }
    }

    /// Takes the lock if it is free.
    pub fn try_lock(&self) -> Option<LockGuard<'_, 'a>> {
        let held = self.word.shmem.st.test_lock("ishmem::SymmLock::try_lock", self.word.ptr.as_ptr());
        (held == 0).then(|| LockGuard { lock: self })
    }
}

impl Drop for LockGuard<'_, '_> {
    fn drop(&mut self) {
        let w = &self.lock.word;
        w.shmem.st.clear_lock("ishmem::SymmLock::unlock", w.ptr.as_ptr());
    }
}

/// Context options (§9.5.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CtxOptions {
    pub serialized: bool,
    pub private: bool,
    pub nostore: bool,
}

/// A communication context (§9.5): its own ordering and completion scope for
/// RMA and AMOs; on a team, PE numbers are the team's. Destroyed on drop
/// (after completing its operations).
///
/// ```
/// let shmem = ishmem::Ishmem::init().unwrap();
/// let v = shmem.alloc::<u32>(8).unwrap();
/// let ctx = shmem.team_world().create_ctx(Default::default()).unwrap();
/// ctx.put(&v, 0, &[1, 2, 3], shmem.my_pe());
/// ctx.quiet();
/// assert_eq!(&v.read_local()[..3], &[1, 2, 3]);
/// ```
pub struct Ctx<'a> {
    handle: usize,
    shmem: &'a Ishmem,
}

impl<'a> Team<'a> {
    /// A context on this team.
    pub fn create_ctx(&self, options: CtxOptions) -> Result<Ctx<'a>> {
        let bits = (i64::from(options.serialized) * api::CTX_SERIALIZED)
            | (i64::from(options.private) * api::CTX_PRIVATE)
            | (i64::from(options.nostore) * api::CTX_NOSTORE);
        self.shmem
            .st
            .ctx_create("ishmem::Team::create_ctx", self.handle, bits)
            .map(|handle| Ctx { handle, shmem: self.shmem })
            .ok_or_else(|| Error::Init("no context could be created (all slots in use)".into()))
    }
}

impl Ctx<'_> {
    fn pe(&self, call: &str, pe: usize) -> usize {
        self.shmem.st.ctx_pe(call, self.handle, pe_i32(pe)) as usize
    }

    /// `ctx_put`: `src` into elements `offset..` of `v` on team PE `pe`.
    pub fn put<T: Symmetric>(&self, v: &SymmVec<'_, T>, offset: usize, src: &[T], pe: usize) {
        v.put(offset, src, self.pe("ishmem::Ctx::put", pe))
    }

    /// `ctx_get`: elements `offset..` of `v` on team PE `pe` into `dst`.
    pub fn get<T: Symmetric>(&self, v: &SymmVec<'_, T>, offset: usize, dst: &mut [T], pe: usize) {
        v.get(offset, dst, self.pe("ishmem::Ctx::get", pe))
    }

    /// `ctx_atomic_fetch_add` on element `index` of `v` on team PE `pe`.
    pub fn atomic_fetch_add<T: AmoInt>(&self, v: &SymmVec<'_, T>, index: usize, value: T, pe: usize) -> T {
        v.atomic_fetch_add(index, value, self.pe("ishmem::Ctx::atomic_fetch_add", pe))
    }

    /// `ctx_fence`.
    pub fn fence(&self) {
        self.shmem.st.ctx_order("ishmem::Ctx::fence", self.handle, false)
    }

    /// `ctx_quiet`: completes this context's operations.
    pub fn quiet(&self) {
        self.shmem.st.ctx_order("ishmem::Ctx::quiet", self.handle, true)
    }
}

impl Drop for Ctx<'_> {
    fn drop(&mut self) {
        self.shmem.st.ctx_destroy("ishmem::Ctx::drop", self.handle);
    }
}

/// A queue of this PE's device runtime (for the CPU device, an OpenCL
/// `cl_command_queue` of this PE's context), on which the `*_on_queue`
/// operations are enqueued in order with the program's own kernels.
///
/// Events are the runtime's (`cl_event`): an operation is complete when its
/// event is; the program waits for and releases them with the runtime's
/// calls.
#[derive(Clone, Copy)]
pub struct DeviceQueue<'a> {
    raw: *mut std::ffi::c_void,
    shmem: &'a Ishmem,
}

/// An event of the device runtime (a `cl_event` on the CPU device).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueEvent(pub *mut std::ffi::c_void);

impl Ishmem {
    /// This PE's own in-order device queue, opening the device runtime on
    /// first use.
    pub fn device_queue(&self) -> DeviceQueue<'_> {
        let call = "ishmem::Ishmem::device_queue";
        let raw = self.st.device_native(call, api::Native::Queue);
        DeviceQueue { raw, shmem: self }
    }

    /// A queue the program created on this PE's device context.
    ///
    /// # Safety
    /// `raw` is a live queue of this PE's device runtime context.
    pub unsafe fn device_queue_from_raw(&self, raw: *mut std::ffi::c_void) -> DeviceQueue<'_> {
        DeviceQueue { raw, shmem: self }
    }
}

impl DeviceQueue<'_> {
    /// The runtime's queue handle.
    pub fn raw(&self) -> *mut std::ffi::c_void {
        self.raw
    }

    fn enqueue(&self, call: &str, op: api::QueueOp, deps: &[QueueEvent]) -> QueueEvent {
        let deps: Vec<*mut std::ffi::c_void> = deps.iter().map(|e| e.0).collect();
        QueueEvent(self.shmem.st.on_queue(call, op, self.raw, &deps))
    }

    /// `barrier_all` on the queue, after `deps`.
    pub fn barrier_all(&self, deps: &[QueueEvent]) -> QueueEvent {
        self.enqueue("ishmem::DeviceQueue::barrier_all", api::QueueOp::BarrierAll, deps)
    }

    /// `quiet` on the queue, after `deps`.
    pub fn quiet(&self, deps: &[QueueEvent]) -> QueueEvent {
        self.enqueue("ishmem::DeviceQueue::quiet", api::QueueOp::Quiet, deps)
    }

    /// Waits until `events` are complete and releases them.
    pub fn wait(&self, events: &[QueueEvent]) {
        let raw: Vec<*mut std::ffi::c_void> = events.iter().map(|e| e.0).collect();
        self.shmem.st.wait_device_events("ishmem::DeviceQueue::wait", &raw)
    }
}

impl<T: Symmetric> SymmVec<'_, T> {
    fn queue_range(&self, call: &str, offset: usize, n: usize) -> usize {
        match offset.checked_add(n) {
            Some(end) if end <= self.len => n * size_of::<T>(),
            _ => api::fatal(
                call,
                format_args!("elements {offset}..{offset}+{n} are outside a symmetric vector of {}", self.len),
            ),
        }
    }

    /// Enqueues a put of `src` into elements `offset..` of this vector on
    /// `pe`, on `queue` after `deps` (`ishmemx_putmem_on_queue`).
    ///
    /// # Safety
    /// `src` stays valid and unchanged until the returned event completes.
    pub unsafe fn put_on_queue(
        &self, offset: usize, src: &[T], pe: usize, queue: &DeviceQueue<'_>, deps: &[QueueEvent],
    ) -> QueueEvent {
        let call = "ishmem::SymmVec::put_on_queue";
        let nbytes = self.queue_range(call, offset, src.len());
        let op = api::QueueOp::Put {
            dest: self.ptr.as_ptr().wrapping_add(offset).cast(),
            source: src.as_ptr().cast(),
            nbytes,
            pe: pe_i32(pe),
        };
        queue.enqueue(call, op, deps)
    }

    /// Enqueues a get of elements `offset..` of this vector on `pe` into
    /// `dst`, on `queue` after `deps` (`ishmemx_getmem_on_queue`).
    ///
    /// # Safety
    /// `dst` stays valid, and is not read, until the returned event
    /// completes.
    pub unsafe fn get_on_queue(
        &self, offset: usize, dst: &mut [T], pe: usize, queue: &DeviceQueue<'_>, deps: &[QueueEvent],
    ) -> QueueEvent {
        let call = "ishmem::SymmVec::get_on_queue";
        let nbytes = self.queue_range(call, offset, dst.len());
        let op = api::QueueOp::Get {
            dest: dst.as_mut_ptr().cast(),
            source: self.ptr.as_ptr().wrapping_add(offset).cast(),
            nbytes,
            pe: pe_i32(pe),
        };
        queue.enqueue(call, op, deps)
    }
}
