//! How a PE reaches another PE's symmetric heap.
//!
//! A [`Transport`] moves bytes between this PE and a peer's heap, addressed
//! by heap offset. Today there is one: [`ShmTransport`], direct loads and
//! stores into peer heaps mapped in this process. The MPI-RMA proxy (#8) and
//! the loaded-OpenSHMEM proxy (#11) implement the same trait for PEs on other
//! nodes. The core routes each PE once, at init, and calls the shared-memory
//! path statically so that a small put costs only the checks and the copy.

/// An atomic memory operation, as carried by transports (and later by the
/// device ring). Non-fetching API forms use the fetching op and drop the
/// result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum AmoOp {
    Fetch = 0,
    Set = 1,
    Swap = 2,
    CompareSwap = 3,
    FetchAdd = 4,
    FetchAnd = 5,
    FetchOr = 6,
    FetchXor = 7,
}

/// Reaching peers' symmetric heaps.
///
/// # Safety
/// Implementations must move exactly `len` bytes and must not retain the
/// local pointers after the call returns (non-blocking forms may until the
/// next [`Transport::quiet`]).
pub unsafe trait Transport: Send + Sync {
    fn name(&self) -> &'static str;
    /// Copies `len` bytes from local `src` into `pe`'s symmetric memory at
    /// `offset`.
    ///
    /// # Safety
    /// `src` is valid for `len` bytes; `offset + len` is within one segment;
    /// `pe` is reachable through this transport.
    unsafe fn put(&self, pe: usize, offset: usize, src: *const u8, len: usize);
    /// Copies `len` bytes from `pe`'s heap at `offset` into local `dst`.
    ///
    /// # Safety
    /// `dst` is valid for `len` bytes; `offset + len` is within the heap.
    unsafe fn get(&self, pe: usize, offset: usize, dst: *mut u8, len: usize);
    /// Atomic `op` on the naturally aligned `size`-byte (1, 2, 4 or 8)
    /// integer at `offset` in `pe`'s heap; `operand` and `cond` carry the
    /// value's bits in their low `size` bytes. Returns the old value's bits
    /// (0 for `Set`). All AMOs to one location through one transport are
    /// atomic with respect to each other.
    ///
    /// # Safety
    /// `offset` is aligned to `size` and `offset + size` is within the heap.
    unsafe fn amo(&self, pe: usize, offset: usize, size: usize, op: AmoOp, operand: u64, cond: u64) -> u64;
    /// Orders this PE's earlier puts and AMOs to each PE before its later ones.
    fn fence(&self);
    /// Completes every operation this PE has issued through the transport.
    fn quiet(&self);
}

/// Direct load/store into peer segments mapped in this process.
///
/// Offsets address one symmetric space per PE: `[0, heap_size)` is the
/// symmetric heap, `[heap_size, heap_size + data_size)` the symmetric data
/// segment (the program's globals; see `dataseg.rs`).
#[derive(Debug)]
pub struct ShmTransport {
    /// Address of each PE's heap in this process; null when not mapped.
    heap_base: Box<[*mut u8]>,
    heap_size: usize,
    /// Address of each PE's data segment in this process; null when not
    /// mapped (or when the job has no symmetric data segment).
    data_base: Box<[*mut u8]>,
}

// SAFETY: the tables are immutable after init; targets are shared memory.
unsafe impl Send for ShmTransport {}
// SAFETY: as above.
unsafe impl Sync for ShmTransport {}

impl ShmTransport {
    pub fn new(heap_base: Box<[*mut u8]>, heap_size: usize, data_base: Box<[*mut u8]>) -> Self {
        ShmTransport { heap_base, heap_size, data_base }
    }

    /// Address of symmetric offset `offset` on `pe`, if `pe` is mapped here.
    #[inline(always)]
    pub fn addr(&self, pe: usize, offset: usize) -> Option<*mut u8> {
        let (b, off) = if offset < self.heap_size {
            (self.heap_base[pe], offset)
        } else {
            (self.data_base[pe], offset - self.heap_size)
        };
        if b.is_null() {
            None
        } else {
            // SAFETY (for callers): offset was checked against the segment.
            Some(b.wrapping_add(off))
        }
    }

    pub fn peer_bases(&self) -> &[*mut u8] {
        &self.heap_base
    }
}

// SAFETY: copies exactly len bytes and keeps no pointers.
unsafe impl Transport for ShmTransport {
    fn name(&self) -> &'static str {
        "shm"
    }

    #[inline(always)]
    unsafe fn put(&self, pe: usize, offset: usize, src: *const u8, len: usize) {
        let dst = self.addr(pe, offset).unwrap_unchecked();
        std::ptr::copy(src, dst, len);
    }

    #[inline(always)]
    unsafe fn get(&self, pe: usize, offset: usize, dst: *mut u8, len: usize) {
        let src = self.addr(pe, offset).unwrap_unchecked() as *const u8;
        std::ptr::copy(src, dst, len);
    }

    #[inline(always)]
    unsafe fn amo(&self, pe: usize, offset: usize, size: usize, op: AmoOp, operand: u64, cond: u64) -> u64 {
        let a = self.addr(pe, offset).unwrap_unchecked();
        // Sequentially consistent: an AMO is ordered after every earlier
        // store of this PE (so put data is visible before a signal or flag
        // set by AMO), and AMOs are totally ordered.
        macro_rules! rmw {
            ($atomic:ty, $t:ty) => {{
                // SAFETY: caller guarantees alignment and bounds; the heap is
                // shared memory only ever accessed atomically at AMO targets.
                let at = &*(a as *const $atomic);
                let v = operand as $t;
                let old = match op {
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
                };
                old as u64
            }};
        }
        use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering::SeqCst};
        match size {
            1 => rmw!(AtomicU8, u8),
            2 => rmw!(AtomicU16, u16),
            4 => rmw!(AtomicU32, u32),
            8 => rmw!(AtomicU64, u64),
            _ => unreachable!("AMO of {size} bytes"),
        }
    }

    #[inline(always)]
    fn fence(&self) {
        // Stores to shared memory are complete when issued; a release fence
        // keeps the compiler and CPU from moving later stores before them.
        std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
    }

    #[inline(always)]
    fn quiet(&self) {
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    }
}
