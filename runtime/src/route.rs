//! The one routing decision: given a PE and a symmetric offset, is the
//! target mapped here (a local pointer, reached by load/store and CPU
//! atomics) or remote (the proxy, a region and an offset in it)?
//!
//! Symmetric offsets address one space per PE: `[0, heap_size)` is the
//! symmetric heap, `[heap_size, heap_size + data_size)` the symmetric data
//! segment (the program's globals; `dataseg.rs`). The control segment is
//! addressed by its words ([`Router::ctrl_store`], [`Router::ctrl_load`]).
//!
//! Every data movement, AMO, signal and control word of RMA, AMOs, teams,
//! collectives and locks goes through the [`Router`]; no other module knows
//! region ids or the proxy's AMO codes, or touches symmetric memory itself.
//! The local path is inlined and monomorphic (a put to a mapped PE is the
//! checks and a copy); only the remote path, out of line, calls the proxy
//! through its trait.
//!
//! Heaps the host cannot load from or store to (GPU memory: the device's
//! [`DeviceMemory`]) are reached through the device instead: copies for
//! data, the device's atomics for AMOs and for reading a value a PE waits
//! on. That is one branch on the local path, taken the same way on every
//! call.

use crate::device::{DeviceMemory, PassAtomic};
use crate::remote::{Region, RegionAccess, Remote, RemoteAddr, Strides};
use crate::types::{Amo, AmoOp, Blocks};
use ishmem_proxy_abi::atomic;
use std::sync::atomic::{AtomicU64, Ordering};

/// The routing tables of one PE (immutable after init).
pub struct Router {
    my_pe: usize,
    heap_size: usize,
    /// Address of each PE's heap in this process; null when not mapped.
    heap_base: Box<[*mut u8]>,
    /// Address of each PE's data segment in this process; null when not
    /// mapped (or when the job has no symmetric data segment).
    data_base: Box<[*mut u8]>,
    /// This node's control segment (offsets of its words are the same on
    /// every node).
    ctrl_base: usize,
    ctrl_size: usize,
    /// Reaches the PEs not mapped here; `None` when every PE is mapped.
    remote: Option<&'static Remote>,
    /// Every AMO goes through `remote`, this PE's own included.
    amo_remote_all: bool,
    /// Host access to heaps in device memory; `None` when the host reaches
    /// the heaps by loads and stores.
    mem: Option<&'static dyn DeviceMemory>,
}

// SAFETY: the tables are immutable after init; targets are shared memory.
unsafe impl Send for Router {}
// SAFETY: as above.
unsafe impl Sync for Router {}

/// Where the symmetric segments are: every PE's heap and data segment as
/// mapped in this process (null where not mapped), and this node's control
/// segment.
pub struct Segments {
    pub heap_size: usize,
    pub heap_base: Box<[*mut u8]>,
    pub data_base: Box<[*mut u8]>,
    pub ctrl_base: *mut u8,
    pub ctrl_size: usize,
}

impl Router {
    pub fn new(
        my_pe: usize, segments: Segments, remote: Option<&'static Remote>, amo_remote_all: bool,
        mem: Option<&'static dyn DeviceMemory>,
    ) -> Router {
        let Segments { heap_size, heap_base, data_base, ctrl_base, ctrl_size } = segments;
        Router {
            my_pe,
            heap_size,
            heap_base,
            data_base,
            ctrl_base: ctrl_base as usize,
            ctrl_size,
            remote,
            amo_remote_all: amo_remote_all && remote.is_some(),
            mem,
        }
    }

    /// True when the host reaches the heaps by loads and stores.
    #[inline(always)]
    fn host_direct(&self) -> bool {
        self.mem.is_none()
    }

    /// True when the symmetric heap is host memory this process can read
    /// and write (not GPU memory): a query for the bindings (the safe Rust
    /// API copies through the library otherwise), not a routing decision.
    #[inline]
    pub fn heap_is_host_memory(&self) -> bool {
        self.host_direct()
    }

    /// The device memory `offset` lies in, when the host cannot touch it.
    #[inline(always)]
    fn device_mem(&self, offset: usize) -> Option<&'static dyn DeviceMemory> {
        match self.mem {
            Some(m) if offset < self.heap_size => Some(m),
            _ => None,
        }
    }

    #[cold]
    #[inline(never)]
    fn device_failed(&self, call: &str, e: crate::device::DeviceError) -> ! {
        crate::error::fatal(call, format_args!("{e}"))
    }

    /// Copies between local memories when a device heap is involved.
    ///
    /// # Safety
    /// Both ranges are valid for `len` bytes.
    #[inline(never)]
    unsafe fn device_copy(&self, call: &str, m: &dyn DeviceMemory, dst: *mut u8, src: *const u8, len: usize) {
        // SAFETY: the caller's contract.
        if let Err(e) = unsafe { m.copy(dst, src, len) } {
            self.device_failed(call, e)
        }
    }

    /// Starts a device copy ([`DeviceMemory::copy_start`]).
    ///
    /// # Safety
    /// As [`DeviceMemory::copy_start`].
    unsafe fn device_copy_start(&self, call: &str, m: &dyn DeviceMemory, dst: *mut u8, src: *const u8, len: usize) {
        // SAFETY: the caller's contract.
        if let Err(e) = unsafe { m.copy_start(dst, src, len) } {
            self.device_failed(call, e)
        }
    }

    /// Waits for the device copies started so far.
    fn device_copies_wait(&self, call: &str, m: &dyn DeviceMemory) {
        if let Err(e) = m.copies_done(true) {
            self.device_failed(call, e)
        }
    }

    /// Address of symmetric offset `offset` on `pe`, if `pe` is mapped here.
    #[inline(always)]
    fn local(&self, pe: usize, offset: usize) -> Option<*mut u8> {
        let (b, off) = if offset < self.heap_size {
            (self.heap_base[pe], offset)
        } else {
            (self.data_base[pe], offset - self.heap_size)
        };
        if b.is_null() {
            None
        } else {
            // The caller checked offset against the segment.
            Some(b.wrapping_add(off))
        }
    }

    /// Address of symmetric offset `offset` on this PE (always mapped).
    #[inline]
    pub fn mine(&self, offset: usize) -> *mut u8 {
        self.local(self.my_pe, offset).expect("this PE's own segments are mapped")
    }

    /// True when `pe`'s memory is mapped here (same node).
    #[inline]
    fn is_local(&self, pe: usize) -> bool {
        !self.heap_base[pe].is_null()
    }

    /// True when some PE is reached through the proxy.
    #[inline]
    pub fn has_remote(&self) -> bool {
        self.remote.is_some()
    }

    /// The proxy, for what is not data movement (its description, thread
    /// level).
    pub fn remote(&self) -> Option<&'static Remote> {
        self.remote
    }

    #[inline]
    fn remote_addr(&self, pe: usize, off: usize) -> RemoteAddr {
        if off < self.heap_size {
            RemoteAddr { region: Region::Heap, pe, offset: off }
        } else {
            RemoteAddr { region: Region::Data, pe, offset: off - self.heap_size }
        }
    }

    #[cold]
    #[inline(never)]
    fn unreachable(&self, call: &str, pe: usize) -> ! {
        crate::error::fatal(call, format_args!("PE {pe} is not reachable: no transport reaches it"))
    }

    #[inline]
    fn proxy(&self, call: &str, pe: usize) -> &'static Remote {
        match self.remote {
            Some(r) => r,
            None => self.unreachable(call, pe),
        }
    }

    // ----- data movement --------------------------------------------------

    /// Copies `len` bytes from local `src` to `offset` on `pe`; with `nbi`
    /// a remote transfer completes by the next flush.
    ///
    /// # Safety
    /// `src` is valid for `len` bytes (until the next flush with `nbi`);
    /// `offset + len` lies inside one symmetric segment.
    #[inline(always)]
    pub unsafe fn put(&self, call: &str, pe: usize, offset: usize, src: *const u8, len: usize, nbi: bool) {
        match (self.local(pe, offset), self.mem) {
            // SAFETY: the caller's contract; the target is mapped here.
            (Some(d), None) => unsafe { std::ptr::copy(src, d, len) },
            // SAFETY: as above; a device heap is involved.
            (Some(d), Some(m)) => unsafe { self.device_copy(call, m, d, src, len) },
            // SAFETY: the caller's contract.
            (None, _) => unsafe { self.remote_put(call, pe, offset, src, len, nbi) },
        }
    }

    /// Copies `len` bytes at `offset` on `pe` to local `dst`.
    ///
    /// # Safety
    /// `dst` is valid for `len` bytes (until the next flush with `nbi`);
    /// `offset + len` lies inside one symmetric segment.
    #[inline(always)]
    pub unsafe fn get(&self, call: &str, pe: usize, offset: usize, dst: *mut u8, len: usize, nbi: bool) {
        match (self.local(pe, offset), self.mem) {
            // SAFETY: the caller's contract; the source is mapped here.
            (Some(s), None) => unsafe { std::ptr::copy(s as *const u8, dst, len) },
            // SAFETY: as above; a device heap is involved.
            (Some(s), Some(m)) => unsafe { self.device_copy(call, m, dst, s, len) },
            // SAFETY: the caller's contract.
            (None, _) => unsafe { self.remote_get(call, pe, offset, dst, len, nbi) },
        }
    }

    /// # Safety
    /// As [`Router::put`].
    #[inline(never)]
    unsafe fn remote_put(&self, call: &str, pe: usize, offset: usize, src: *const u8, len: usize, nbi: bool) {
        let at = self.remote_addr(pe, offset);
        let proxy = self.proxy(call, pe);
        match self.mem {
            // The source is device memory, which the proxy cannot read:
            // staged through the halves of a host buffer, the device
            // copying the next piece into one while the proxy sends the
            // other.
            Some(m) if !m.host_accessible(src, len) => self.staged(call, m, |buf| {
                let piece = |k: usize| piece(buf, len, k);
                let pieces = len.div_ceil(HALF);
                // SAFETY: the caller's contract; a half holds HALF bytes.
                unsafe { self.device_copy_start(call, m, piece(0).0, src, piece(0).1) };
                for k in 0..pieces {
                    self.device_copies_wait(call, m);
                    if k + 1 < pieces {
                        let (b, n) = piece(k + 1);
                        // SAFETY: as above; the blocking put out of this
                        // half (piece k - 1) has returned.
                        unsafe { self.device_copy_start(call, m, b, src.add((k + 1) * HALF), n) };
                    }
                    let (b, n) = piece(k);
                    // SAFETY: piece k is in its half (the wait above).
                    unsafe { proxy.put(call, at.offset_by((k * HALF) as isize), b, n, false) };
                }
            }),
            // SAFETY: the caller's contract.
            _ => unsafe { proxy.put(call, at, src, len, nbi) },
        }
    }

    /// # Safety
    /// As [`Router::get`].
    #[inline(never)]
    unsafe fn remote_get(&self, call: &str, pe: usize, offset: usize, dst: *mut u8, len: usize, nbi: bool) {
        let at = self.remote_addr(pe, offset);
        let proxy = self.proxy(call, pe);
        match self.mem {
            // The destination is device memory: as in remote_put, the
            // device copying one piece out of its half while the proxy
            // gets the next into the other.
            Some(m) if !m.host_accessible(dst, len) => self.staged(call, m, |buf| {
                let piece = |k: usize| piece(buf, len, k);
                for k in 0..len.div_ceil(HALF) {
                    let (b, n) = piece(k);
                    // SAFETY: the caller's contract; the copy out of this
                    // half (piece k - 2) ended at the wait of the last round.
                    unsafe { proxy.get(call, at.offset_by((k * HALF) as isize), b, n, false) };
                    self.device_copies_wait(call, m);
                    // SAFETY: the caller's contract; the half holds piece k
                    // until the next round's wait.
                    unsafe { self.device_copy_start(call, m, dst.add(k * HALF), b, n) };
                }
                self.device_copies_wait(call, m);
            }),
            // SAFETY: the caller's contract.
            _ => unsafe { proxy.get(call, at, dst, len, nbi) },
        }
    }

    /// A non-blocking get through the proxy of `len` bytes at `offset` on
    /// `pe` (a PE [`Router::through_proxy`] says is reached so) into host
    /// memory the caller owns: no question to the device about `dst`.
    ///
    /// # Safety
    /// `dst` is host memory valid for `len` bytes until the next flush of
    /// `pe`; `offset + len` lies inside one symmetric segment.
    pub unsafe fn proxy_get_to_host(&self, call: &str, pe: usize, offset: usize, dst: *mut u8, len: usize) {
        // SAFETY: the caller's contract.
        unsafe { self.proxy(call, pe).get(call, self.remote_addr(pe, offset), dst, len, true) }
    }

    /// Whether the local blocks of a strided transfer starting at `local`
    /// lie in memory the proxy can read and write (not device memory).
    fn host_blocks(&self, local: *const u8, s: Strides) -> bool {
        let Some(m) = self.mem else { return true };
        let last = (s.nblocks as isize - 1) * s.local;
        let (lo, hi) = (last.min(0), last.max(0) + s.block as isize);
        m.host_accessible(local.wrapping_offset(lo), (hi - lo) as usize)
    }

    /// Runs `with(buf)` with a staging buffer of the device (pinned host
    /// memory) of [`STAGE_BYTES`].
    fn staged(&self, call: &str, m: &dyn DeviceMemory, with: impl FnOnce(*mut u8)) {
        // A free buffer, or a new one (as many as transfers ever ran at
        // once; they are kept for the life of the process).
        let buf = STAGES.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let buf = match buf {
            Some(b) => b as *mut u8,
            None => m.staging(STAGE_BYTES).unwrap_or_else(|e| self.device_failed(call, e)),
        };
        with(buf);
        STAGES.lock().unwrap_or_else(|e| e.into_inner()).push(buf as usize);
    }

    /// `len` bytes at `offset` on `pe`, readable here: the mapped address,
    /// else a copy fetched into `tmp`.
    ///
    /// # Safety
    /// `tmp` is valid for `len` bytes; `offset + len` lies inside one
    /// symmetric segment.
    #[inline]
    pub unsafe fn read(&self, call: &str, pe: usize, offset: usize, len: usize, tmp: *mut u8) -> *const u8 {
        match (self.local(pe, offset), self.mem) {
            (Some(s), None) => s,
            _ => {
                // SAFETY: the caller's contract.
                unsafe { self.get(call, pe, offset, tmp, len, false) };
                tmp
            }
        }
    }

    // ----- single elements and strided transfers ---------------------------

    /// `p`: stores one element at `offset` on `pe` (one volatile store
    /// where the host reaches the target by stores).
    ///
    /// # Safety
    /// `offset` is aligned for `T` and `offset + size_of::<T>()` lies
    /// inside one symmetric segment.
    #[inline(always)]
    pub unsafe fn p<T: Copy>(&self, call: &str, pe: usize, offset: usize, value: T) {
        match self.local(pe, offset) {
            // SAFETY: the caller's contract; the target is mapped here.
            Some(a) if self.host_direct() => unsafe { std::ptr::write_volatile(a as *mut T, value) },
            // SAFETY: the caller's contract; a blocking put reads `value`
            // before it returns.
            _ => unsafe { self.put(call, pe, offset, (&value as *const T).cast(), std::mem::size_of::<T>(), false) },
        }
    }

    /// `g`: loads one element at `offset` on `pe`.
    ///
    /// # Safety
    /// As [`Router::p`]; `T` is a plain value type.
    #[inline(always)]
    pub unsafe fn g<T: Copy>(&self, call: &str, pe: usize, offset: usize) -> T {
        match self.local(pe, offset) {
            // SAFETY: the caller's contract; the source is mapped here.
            Some(a) if self.host_direct() => unsafe { std::ptr::read_volatile(a as *const T) },
            _ => {
                let mut v = std::mem::MaybeUninit::<T>::uninit();
                // SAFETY: the caller's contract; the blocking get fills
                // all of `v`.
                unsafe {
                    self.get(call, pe, offset, v.as_mut_ptr().cast(), std::mem::size_of::<T>(), false);
                    v.assume_init()
                }
            }
        }
    }

    /// Block-strided put: the blocks of local `src` go to `pe`, block 0's
    /// target at `offset` (see [`Blocks`]). `src` is reusable on return
    /// (with `nbi`, after the next flush); a remote put is complete at the
    /// target by the next flush, as a contiguous one (the proxy moves the
    /// blocks in one operation where it can).
    ///
    /// # Safety
    /// `src` is valid for the block-strided reads (until the next flush
    /// with `nbi`); every block's target lies inside the symmetric segment
    /// `offset` is in.
    pub unsafe fn put_strided(&self, call: &str, pe: usize, offset: usize, src: *const u8, shape: Blocks, nbi: bool) {
        match self.local(pe, offset) {
            // SAFETY: the caller's contract; the target is mapped here.
            Some(base) => unsafe { self.strided(call, base, src, shape) },
            None => {
                let s = byte_strides(shape, shape.dst, shape.sst);
                if self.host_blocks(src, s) {
                    let at = self.remote_addr(pe, offset);
                    // SAFETY: the caller's contract; the blocks are in host memory.
                    return unsafe { self.proxy(call, pe).put_strided(call, at, src, s, nbi) };
                }
                // Device memory: block by block, each staged.
                for (d, l) in s.blocks() {
                    // SAFETY: the caller's contract, block by block.
                    unsafe {
                        self.remote_put(call, pe, offset.wrapping_add_signed(d), src.wrapping_offset(l), s.block, true)
                    };
                }
                if !nbi {
                    self.flush(call, Some(pe));
                }
            }
        }
    }

    /// Block-strided get, the mirror of [`Router::put_strided`]: the blocks
    /// from `pe`, block 0's source at `offset`, go to local `dest`;
    /// complete on return.
    ///
    /// # Safety
    /// `dest` is valid for the block-strided writes; every block's source
    /// lies inside the symmetric segment `offset` is in.
    pub unsafe fn get_strided(&self, call: &str, pe: usize, offset: usize, dest: *mut u8, shape: Blocks) {
        match self.local(pe, offset) {
            // SAFETY: the caller's contract; the source is mapped here.
            Some(base) => unsafe { self.strided(call, dest, base, shape) },
            None => {
                let s = byte_strides(shape, shape.sst, shape.dst);
                if self.host_blocks(dest, s) {
                    let at = self.remote_addr(pe, offset);
                    // SAFETY: the caller's contract; the blocks are in host memory.
                    return unsafe { self.proxy(call, pe).get_strided(call, at, dest, s, false) };
                }
                // Device memory: block by block, each staged.
                for (r, l) in s.blocks() {
                    // SAFETY: the caller's contract, block by block.
                    unsafe {
                        self.remote_get(call, pe, offset.wrapping_add_signed(r), dest.wrapping_offset(l), s.block, true)
                    };
                }
                self.flush(call, Some(pe));
            }
        }
    }

    // ----- what other modules may ask --------------------------------------

    /// `shmem_ptr`'s answer: the address of `offset` on `pe` in this
    /// process when `pe` is mapped here (an address of device memory when
    /// the heaps are on a device), else `None`. Not a routing decision:
    /// every transfer goes through the methods above.
    #[inline]
    pub fn address(&self, pe: usize, offset: usize) -> Option<*mut u8> {
        self.local(pe, offset)
    }

    /// True when every PE of `pes` is mapped here (same node): a team's
    /// small collectives then publish and pull through the control
    /// segment (`stage.rs`).
    pub fn all_mapped(&self, mut pes: impl Iterator<Item = usize>) -> bool {
        pes.all(|pe| self.is_local(pe))
    }

    /// The `T` at `offset` on `pe`, when it is mapped here in memory the
    /// host loads from and stores to (the staged collectives' pSync words
    /// and slots); `None` otherwise.
    ///
    /// # Safety
    /// `offset` is aligned for `T` and `offset + size_of::<T>()` lies
    /// inside one symmetric segment; every process accesses those bytes
    /// as `T` only, for as long as the reference is used.
    #[inline]
    pub unsafe fn shared<T: Shared>(&self, pe: usize, offset: usize) -> Option<&T> {
        if self.device_mem(offset).is_some() {
            return None;
        }
        let a = self.local(pe, offset)?;
        debug_assert!((a as usize).is_multiple_of(std::mem::align_of::<T>()));
        // SAFETY: the caller's contract; the mapping lives as long as the
        // router (the job).
        Some(unsafe { &*(a as *const T) })
    }

    /// True when [`Router::shared`] answers for `offset` on every PE of
    /// `pes`.
    pub fn all_shared(&self, mut pes: impl Iterator<Item = usize>, offset: usize) -> bool {
        self.device_mem(offset).is_none() && pes.all(|pe| self.local(pe, offset).is_some())
    }

    /// Copies the blocks of `shape` between local memory and a mapped
    /// symmetric range (an address from [`Router::local`]).
    ///
    /// # Safety
    /// Every block of both sides is valid.
    unsafe fn strided(&self, call: &str, dest: *mut u8, src: *const u8, shape: Blocks) {
        match self.mem {
            // SAFETY: the caller's contract.
            None => unsafe { strided_copy(dest, src, shape) },
            Some(m) => {
                for b in 0..shape.nblocks {
                    let (d, s) = shape.offsets(b);
                    // SAFETY: the caller's contract, block by block.
                    unsafe {
                        self.device_copy(call, m, dest.wrapping_offset(d), src.wrapping_offset(s), shape.block_bytes())
                    };
                }
            }
        }
    }

    /// Zeroes `len` bytes at `offset` on this PE.
    pub fn zero_mine(&self, call: &str, offset: usize, len: usize) {
        let p = self.mine(offset);
        match self.device_mem(offset) {
            Some(m) => {
                // SAFETY: a checked range of this PE's heap.
                if let Err(e) = unsafe { m.zero(p, len) } {
                    self.device_failed(call, e)
                }
            }
            // SAFETY: a checked range of this PE's symmetric memory.
            None => unsafe { std::ptr::write_bytes(p, 0, len) },
        }
    }

    /// Reads the naturally aligned `size`-byte value at `offset` on this PE
    /// with an acquire load (a value the PE waits on, or a lock word).
    #[inline]
    pub fn load_mine(&self, call: &str, offset: usize, size: usize) -> u64 {
        let p = self.mine(offset);
        match self.device_mem(offset) {
            None => {
                use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU8};
                // SAFETY: aligned and inside this PE's mapped memory (the
                // caller checked); symmetric values are accessed atomically.
                unsafe {
                    match size {
                        1 => (*(p as *const AtomicU8)).load(Ordering::Acquire) as u64,
                        2 => (*(p as *const AtomicU16)).load(Ordering::Acquire) as u64,
                        4 => (*(p as *const AtomicU32)).load(Ordering::Acquire) as u64,
                        _ => (*(p as *const AtomicU64)).load(Ordering::Acquire),
                    }
                }
            }
            Some(m) => {
                let mut v = 0u64;
                // SAFETY: as above; a copy of up to 8 aligned bytes is one
                // read of the word.
                unsafe { self.device_copy(call, m, (&mut v as *mut u64).cast(), p, size) };
                v
            }
        }
    }

    /// Reads `out.len()` aligned words at `offset` on this PE (a snapshot
    /// for the watchdog, each word read once, not all at one instant), or
    /// the device's error.
    pub fn read_mine(&self, offset: usize, out: &mut [u64]) -> Result<(), crate::device::DeviceError> {
        let p = self.mine(offset);
        match self.device_mem(offset) {
            // SAFETY: a range of this PE's heap (the caller's offset and
            // length), read into `out`.
            Some(m) => unsafe { m.copy(out.as_mut_ptr().cast(), p, std::mem::size_of_val(out)) },
            None => {
                for (i, w) in out.iter_mut().enumerate() {
                    // SAFETY: aligned words inside this PE's mapped memory
                    // (the caller's range), accessed atomically.
                    *w = unsafe { (*(p as *const AtomicU64).add(i)).load(Ordering::Relaxed) };
                }
                Ok(())
            }
        }
    }

    // ----- atomics ---------------------------------------------------------

    /// `amo` on the naturally aligned value at `offset` on `pe`; returns
    /// the old value (0 for `Set`). Local targets take one
    /// CPU atomic, sequentially consistent (ordered after this PE's earlier
    /// stores); remote ones wait for the answer.
    ///
    /// # Safety
    /// `offset` is aligned to `amo.size` and `offset + amo.size` lies
    /// inside one symmetric segment.
    #[inline(always)]
    pub unsafe fn amo(&self, call: &str, pe: usize, offset: usize, amo: Amo) -> u64 {
        if !self.amo_remote_all {
            if let Some(a) = self.local(pe, offset) {
                if let Some(m) = self.device_mem(offset) {
                    // SAFETY: as below, on device memory.
                    return unsafe { self.device_amo(call, m, a, amo) };
                }
                // SAFETY: aligned and inside a mapped segment (the caller);
                // AMO targets are only accessed atomically.
                return unsafe { atomic::apply(a, amo.size, amo.op, amo.operand, amo.cond) };
            }
        }
        self.remote_amo(call, pe, offset, amo, false)
    }

    /// Whether an operation on `offset` of `pe` goes through the proxy (the
    /// PE is not mapped here): the ring server gathers such `g`s, issues
    /// them all, then flushes their PEs once.
    #[inline]
    pub fn through_proxy(&self, pe: usize, offset: usize) -> bool {
        self.local(pe, offset).is_none()
    }

    /// Whether any AMO may be one of the device's atomics (the heaps are in
    /// device memory and AMOs are not all sent to the proxy): the ring
    /// server asks before it checks a request for a device pass.
    #[inline]
    pub fn device_atomics_possible(&self) -> bool {
        self.mem.is_some() && !self.amo_remote_all
    }

    /// Where an AMO at `offset` on `pe` is one of the device's atomics on
    /// memory this process maps (a GPU heap of this node): the address, for
    /// [`Router::device_atomics`]; `None` when it goes elsewhere (host
    /// memory, the proxy). The ring server gathers such AMOs into one
    /// device pass.
    #[inline]
    pub fn device_atomic_target(&self, pe: usize, offset: usize) -> Option<*mut u8> {
        if !self.device_atomics_possible() {
            return None;
        }
        self.device_mem(offset)?;
        self.local(pe, offset)
    }

    /// The AMOs `ops` (addresses from [`Router::device_atomic_target`]) in
    /// one pass of the device ([`DeviceMemory::atomics`]); old values into
    /// `out`.
    ///
    /// # Safety
    /// Each address is aligned to its AMO's size.
    pub unsafe fn device_atomics(&self, call: &str, ops: &[PassAtomic], out: &mut [u64]) {
        let Some(m) = self.mem else { unreachable!("device_atomic_target gives addresses only with device memory") };
        // SAFETY: the caller's contract; the addresses are device heap
        // memory mapped here.
        unsafe { m.atomics(ops, out) }.unwrap_or_else(|e| self.device_failed(call, e))
    }

    /// An AMO on device memory, with the device's atomics.
    ///
    /// # Safety
    /// `a` is aligned device memory valid for `amo.size` bytes.
    #[inline(never)]
    unsafe fn device_amo(&self, call: &str, m: &dyn DeviceMemory, a: *mut u8, amo: Amo) -> u64 {
        // SAFETY: the caller's contract.
        unsafe { m.atomic(a, amo) }.unwrap_or_else(|e| self.device_failed(call, e))
    }

    /// A fetching AMO whose old value (`amo.size` bytes) is written to
    /// `old`: at once on this node, by the next flush of `pe` (or of every
    /// PE) through the proxy, which does not wait for the answer.
    ///
    /// # Safety
    /// As [`Router::amo`]; `old` is valid for a write of `amo.size` bytes
    /// until that flush.
    #[inline]
    pub unsafe fn amo_fetch_nbi(&self, call: &str, pe: usize, offset: usize, amo: Amo, old: *mut u8) {
        if self.amo_remote_all || self.local(pe, offset).is_none() {
            // SAFETY: the caller's contract.
            unsafe { self.proxy(call, pe).amo_fetch_nbi(call, self.remote_addr(pe, offset), amo, old) };
        } else {
            // SAFETY: the caller's contract.
            unsafe { ishmem_proxy_abi::write_old(old, self.amo(call, pe, offset, amo), amo.size) };
        }
    }

    /// AMOs on `pe` (a PE [`Router::through_proxy`] says is reached so),
    /// sent together through the proxy: `ops` are (symmetric offset, AMO);
    /// with `old`, fetching (`old[i]` holds op `i`'s old value, a whole
    /// `u64`, after the next flush of `pe`), else posted.
    ///
    /// # Safety
    /// Each offset is aligned to its AMO's size inside one symmetric
    /// segment; `old`, if given, is valid for `ops.len()` writes until
    /// that flush.
    pub unsafe fn proxy_amo_batch(&self, call: &str, pe: usize, ops: &[(usize, Amo)], old: Option<*mut u64>) {
        let proxy = self.proxy(call, pe);
        // One batch per run of AMOs on one region (the heap, the data
        // segment).
        let at: Vec<RemoteAddr> = ops.iter().map(|&(off, _)| self.remote_addr(pe, off)).collect();
        let mut start = 0;
        while start < ops.len() {
            let region = at[start].region;
            let end = at[start..].iter().position(|a| a.region != region).map_or(ops.len(), |k| start + k);
            let batch: Vec<(usize, Amo)> = (start..end).map(|k| (at[k].offset, ops[k].1)).collect();
            // SAFETY: the caller's contract, for this part of ops and old.
            unsafe { proxy.amo_batch(call, region, pe, &batch, old.map(|o| o.add(start))) };
            start = end;
        }
    }

    /// A non-fetching AMO: to a remote PE it is not waited for (it
    /// completes by quiet, and stays ordered with this PE's later AMOs to
    /// that PE).
    ///
    /// # Safety
    /// As [`Router::amo`].
    #[inline(always)]
    pub unsafe fn amo_post(&self, call: &str, pe: usize, offset: usize, amo: Amo) {
        if !self.amo_remote_all {
            if let Some(a) = self.local(pe, offset) {
                match self.device_mem(offset) {
                    // SAFETY: as in `amo`.
                    Some(m) => unsafe { self.device_amo(call, m, a, amo) },
                    // SAFETY: as in `amo`.
                    None => unsafe { atomic::apply(a, amo.size, amo.op, amo.operand, amo.cond) },
                };
                return;
            }
        }
        self.remote_amo(call, pe, offset, amo, true);
    }

    /// The signal of a `put_signal` to `pe`, after its data: local, one
    /// atomic (ordered after the data's stores); remote, the data is
    /// completed at the target first, then the signal is posted.
    ///
    /// # Safety
    /// As [`Router::amo`] for an 8-byte value.
    #[inline]
    pub unsafe fn signal(&self, call: &str, pe: usize, offset: usize, op: AmoOp, value: u64) {
        if !self.amo_remote_all {
            if let Some(a) = self.local(pe, offset) {
                match self.device_mem(offset) {
                    // SAFETY: as in `amo` (the data's copies completed).
                    Some(m) => unsafe { self.device_amo(call, m, a, Amo::new(op, 8, value)) },
                    // SAFETY: as in `amo`.
                    None => unsafe { atomic::apply(a, 8, op, value, 0) },
                };
                return;
            }
        }
        self.flush(call, Some(pe));
        self.remote_amo(call, pe, offset, Amo::new(op, 8, value), true);
    }

    #[inline(never)]
    fn remote_amo(&self, call: &str, pe: usize, offset: usize, amo: Amo, nbi: bool) -> u64 {
        self.proxy(call, pe).amo(call, self.remote_addr(pe, offset), amo, nbi)
    }

    // ----- control words ---------------------------------------------------

    /// Offset of `word` (a word of this node's control segment) in the
    /// segment.
    fn ctrl_offset(&self, word: &AtomicU64) -> usize {
        let a = word as *const AtomicU64 as usize;
        debug_assert!(a >= self.ctrl_base && a + 8 <= self.ctrl_base + self.ctrl_size);
        a - self.ctrl_base
    }

    /// The word of this node's control segment at `addr`, when `addr` is
    /// an aligned word inside it (a device names control words by their
    /// addresses).
    pub fn ctrl_word(&self, addr: usize) -> Option<&AtomicU64> {
        let inside = addr >= self.ctrl_base
            && addr.checked_add(8).is_some_and(|end| end <= self.ctrl_base + self.ctrl_size)
            && addr.is_multiple_of(8);
        // SAFETY: checked inside the mapped control segment and aligned;
        // control words are accessed atomically.
        inside.then(|| unsafe { &*(addr as *const AtomicU64) })
    }

    /// Stores `v` into control word `word` of PE `pe`'s record (`word` is
    /// the word's address in this node's segment): directly on this node,
    /// through the proxy otherwise (an AMO the target applies with a CPU
    /// atomic, after this PE's earlier operations to it complete).
    pub fn ctrl_store(&self, call: &str, pe: usize, word: &AtomicU64, v: u64) {
        if self.is_local(pe) {
            word.store(v, Ordering::Release);
        } else {
            let off = self.ctrl_offset(word);
            self.proxy(call, pe).amo(call, ctrl_addr(pe, off), Amo::new(AmoOp::Set, 8, v), true);
        }
    }

    /// Reads control word `word` of PE `pe`'s record (a value that does not
    /// change while it is read).
    pub fn ctrl_load(&self, call: &str, pe: usize, word: &AtomicU64) -> u64 {
        if self.is_local(pe) {
            word.load(Ordering::Acquire)
        } else {
            let off = self.ctrl_offset(word);
            let mut v = 0u64;
            // SAFETY: an 8-byte word inside the control region.
            unsafe { self.proxy(call, pe).get(call, ctrl_addr(pe, off), &mut v as *mut u64 as *mut u8, 8, false) };
            v
        }
    }

    /// Claims the one report of an error several PEs may detect at once
    /// for the whole job: the first PE to set `word` (this node's
    /// `abort_reporter`) of world PE 0's node to `me` wins, through the
    /// proxy when PE 0 is not mapped here (a compare-and-swap PE 0 applies
    /// with the CPU atomics its node peers use on the same word).
    pub fn claim_report(&self, word: &std::sync::atomic::AtomicI32, me: i32) -> bool {
        if self.is_local(0) {
            return word.compare_exchange(0, me, Ordering::AcqRel, Ordering::Acquire).is_ok();
        }
        let call = "reporting an error";
        let a = word as *const std::sync::atomic::AtomicI32 as usize;
        debug_assert!(a >= self.ctrl_base && a + 4 <= self.ctrl_base + self.ctrl_size);
        let cas = Amo { op: AmoOp::CompareSwap, size: 4, operand: me as u32 as u64, cond: 0 };
        let old = self.proxy(call, 0).amo(call, ctrl_addr(0, a - self.ctrl_base), cas, false);
        old == 0
    }

    // ----- completion --------------------------------------------------------

    /// Completes this PE's remote operations to `pe` (`None`: to every PE);
    /// nothing to do when every PE is mapped.
    #[inline]
    pub fn flush(&self, call: &str, pe: Option<usize>) {
        if let Some(r) = self.remote {
            r.flush(call, pe);
        }
    }

    /// `fence`: orders this PE's puts and AMOs to each PE. Through the
    /// proxy, ordering costs completion (MPI orders nothing between puts),
    /// so fence is a flush there.
    #[inline]
    pub fn fence(&self, call: &str) {
        // Stores to shared memory are complete when issued; a release fence
        // keeps the compiler and CPU from moving later stores before them.
        std::sync::atomic::fence(Ordering::Release);
        self.flush(call, None);
    }

    /// `quiet`: completes every operation this PE issued.
    #[inline]
    pub fn quiet(&self, call: &str) {
        std::sync::atomic::fence(Ordering::SeqCst);
        self.flush(call, None);
    }
}

/// Types that [`Router::shared`] hands out over memory other processes
/// use at the same time.
///
/// # Safety
/// Implementors consist of atomics, and of cells accessed under a
/// protocol that orders them by those atomics, only; every bit pattern is
/// a valid value.
pub unsafe trait Shared {}
// SAFETY: an atomic word.
unsafe impl Shared for AtomicU64 {}
// SAFETY: atomic words.
unsafe impl<const N: usize> Shared for [AtomicU64; N] {}
// SAFETY: atomic header words and a data cell that the stage protocol
// orders by word 0 (`stage.rs`).
unsafe impl Shared for crate::ctrl::StageSlot {}

/// Host memory served on request (`ISHMEM_PROXY_RMA=message`): other PEs'
/// puts, gets and AMOs are requests this PE's proxy performs with copies
/// and the CPU atomics its node peers use (so they stay atomic with them).
struct HostRegion {
    base: usize,
}

/// The proxy's access to host region `base` served on request (kept for
/// the life of the process).
pub fn host_region(base: *mut u8) -> &'static dyn RegionAccess {
    Box::leak(Box::new(HostRegion { base: base as usize }))
}

impl RegionAccess for HostRegion {
    unsafe fn write(&self, offset: usize, src: *const u8, len: usize) {
        // SAFETY: the proxy checked the range against the region; src is
        // valid (the caller's contract).
        unsafe { std::ptr::copy(src, (self.base + offset) as *mut u8, len) }
    }

    unsafe fn read(&self, offset: usize, dst: *mut u8, len: usize) {
        // SAFETY: as in write.
        unsafe { std::ptr::copy((self.base + offset) as *const u8, dst, len) }
    }

    fn amo(&self, offset: usize, amo: Amo) -> u64 {
        // SAFETY: the proxy checked that the value is aligned and inside
        // the region; symmetric words are accessed atomically.
        unsafe { atomic::apply((self.base + offset) as *mut u8, amo.size, amo.op, amo.operand, amo.cond) }
    }

    fn staging(&self, len: usize) -> *mut u8 {
        Box::leak(vec![0u8; len].into_boxed_slice()).as_mut_ptr()
    }
}

/// Word `off` of `pe`'s control segment, as the proxy reaches it.
fn ctrl_addr(pe: usize, off: usize) -> RemoteAddr {
    RemoteAddr { region: Region::Ctrl, pe, offset: off }
}

/// Pieces of remote transfers that device memory is part of move through
/// a staging buffer of this size.
const STAGE_BYTES: usize = 4 << 20;
/// A staged transfer's piece: half a staging buffer.
const HALF: usize = STAGE_BYTES / 2;

/// Piece `k` of a staged transfer of `len` bytes through `buf`: the half
/// it goes through (pieces alternate) and its length.
fn piece(buf: *mut u8, len: usize, k: usize) -> (*mut u8, usize) {
    (buf.wrapping_add((k % 2) * HALF), (len - k * HALF).min(HALF))
}

/// Staging buffers not in use (addresses).
static STAGES: std::sync::Mutex<Vec<usize>> = std::sync::Mutex::new(Vec::new());

/// The proxy's shape of `shape`, with the remote and local strides (in
/// elements) in bytes. A stride is used only between blocks: with one
/// block it is 0 (the extent checks ignore it then, so it may be any
/// value).
fn byte_strides(shape: Blocks, remote: isize, local: isize) -> Strides {
    let bytes = |stride: isize| if shape.nblocks > 1 { stride.wrapping_mul(shape.elem as isize) } else { 0 };
    Strides { block: shape.block_bytes(), nblocks: shape.nblocks, remote: bytes(remote), local: bytes(local) }
}

/// Copies the blocks of `shape` from `src` to `dest`.
///
/// # Safety
/// Every block of both sides is valid for `shape.block_bytes()` bytes
/// (reads of `src`, writes of `dest`).
unsafe fn strided_copy(dest: *mut u8, src: *const u8, shape: Blocks) {
    #[inline(always)]
    unsafe fn each<T: Copy>(dest: *mut u8, src: *const u8, shape: Blocks) {
        let (d, s) = (dest as *mut T, src as *const T);
        for b in 0..shape.nblocks as isize {
            let db = d.wrapping_offset(b * shape.dst);
            let sb = s.wrapping_offset(b * shape.sst);
            // SAFETY: the caller's contract: every block of both sides is
            // valid (unaligned: the element type only sets the width).
            unsafe {
                if shape.bsize == 1 {
                    db.write_unaligned(sb.read_unaligned());
                } else {
                    std::ptr::copy(sb, db, shape.bsize);
                }
            }
        }
    }
    // SAFETY: the caller's contract, for the width of `shape.elem`.
    unsafe {
        match shape.elem {
            1 => each::<u8>(dest, src, shape),
            2 => each::<u16>(dest, src, shape),
            4 => each::<u32>(dest, src, shape),
            8 => each::<u64>(dest, src, shape),
            16 => each::<[u64; 2]>(dest, src, shape),
            _ => {
                for b in 0..shape.nblocks {
                    let (d, s) = shape.offsets(b);
                    std::ptr::copy(src.wrapping_offset(s), dest.wrapping_offset(d), shape.block_bytes());
                }
            }
        }
    }
}
