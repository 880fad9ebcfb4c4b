//! The remote seam: how this PE reaches PEs it cannot map (PEs on other
//! nodes, or every other PE with `ISHMEM_ENABLE_SHM=0` or through a host
//! OpenSHMEM library), and how a job that no `ishmrun` started bootstraps.
//!
//! [`RemoteOps`] is the trait a way of reaching remote PEs implements; there
//! are two:
//!
//! * [`plugin::PluginRemote`]: the MPI-3 RMA proxy, a plugin loaded at run
//!   time through one C function table (`ishmem_proxy_abi::ProxyOps`), so
//!   `libishmem` links no MPI. It is the only place that crosses that table.
//! * [`shmem::ShmemRemote`]: a host OpenSHMEM library loaded at run time and
//!   called directly from Rust.
//!
//! [`Remote`] wraps the one in use with what does not depend on it: which
//! threads may call (MPI's thread level), the progress thread, the hooks
//! that let wait loops progress it and a fatal error end the job through
//! it, and turning its typed errors into PE-tagged fatal errors that name
//! the API call. The routing step (`route.rs`) is its only user after init.
//!
//! Threads: with a runtime below at `THREAD_MULTIPLE`, or one the proxy
//! initialized itself at `THREAD_SERIALIZED` or more (the proxy serializes
//! its own calls), any thread may call, and a progress thread serves other
//! PEs' requests while this PE computes. Otherwise (an application that
//! owns MPI at `FUNNELED` or `SERIALIZED`) only the thread that initialized
//! the library may; another thread that needs a remote PE gets a clear
//! error, and requests from other PEs are served whenever that thread is
//! inside the library.

pub mod plugin;
pub mod shmem;

use crate::dynlib::LoadError;
use crate::error::fatal;
use crate::types::Amo;
use std::ffi::c_int;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::thread::ThreadId;

/// Thread levels (OpenSHMEM's and MPI's, in the same order).
pub use ishmem_proxy_abi::{THREAD_MULTIPLE, THREAD_SERIALIZED, THREAD_SINGLE};

/// The symmetric regions a PE exposes to remote PEs; a remote address is a
/// region and an offset in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Region {
    /// The symmetric heap.
    Heap,
    /// The symmetric data segment (the program's globals).
    Data,
    /// The node's control segment (barrier flags, collective scratch).
    Ctrl,
}

impl Region {
    pub const ALL: [Region; 3] = [Region::Heap, Region::Data, Region::Ctrl];

    /// Index of the region in per-region tables.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// What went wrong in a remote operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemoteError {
    /// The plugin reported a failure (its own description).
    Plugin(String),
    /// A call into a host OpenSHMEM library failed.
    Library { call: &'static str, detail: String },
    /// A transfer outside an exposed region.
    OutOfRegion { region: Region, offset: usize, len: usize, size: usize },
    /// An operation the implementation cannot perform.
    Unsupported(String),
    /// Nothing could be loaded: every candidate tried, and why each failed.
    Load(LoadError),
    /// Loaded, but initialization failed.
    Init(String),
}

impl fmt::Display for RemoteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RemoteError::Plugin(m) | RemoteError::Unsupported(m) | RemoteError::Init(m) => f.write_str(m),
            RemoteError::Library { call, detail } => write!(f, "{call}: {detail}"),
            RemoteError::OutOfRegion { region, offset, len, size } => {
                write!(f, "{len} bytes at offset {offset} are outside the {region:?} region ({size} bytes)")
            }
            RemoteError::Load(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for RemoteError {}

/// Host access to a region of this PE that the host cannot load from or
/// store to (a heap in GPU memory): a proxy serves other PEs' operations on
/// such a region through it (the device's copies and atomics) instead of
/// touching the memory. Offsets are relative to the region and checked by
/// the proxy; a failure ends the job (the implementation reports it).
pub trait RegionAccess: Send + Sync {
    /// Copies `len` bytes from host memory at `src` to `offset`.
    ///
    /// # Safety
    /// `src` is valid for `len` bytes; `offset + len` is inside the region.
    unsafe fn write(&self, offset: usize, src: *const u8, len: usize);
    /// Starts a `write` that may still run when this returns;
    /// [`RegionAccess::writes_done`] says when the ones started have ended
    /// (in order). The default writes at once.
    ///
    /// # Safety
    /// As `write`, and `src` stays valid and unchanged until `writes_done`
    /// has returned true.
    unsafe fn write_start(&self, offset: usize, src: *const u8, len: usize) {
        // SAFETY: the caller's contract.
        unsafe { self.write(offset, src, len) }
    }
    /// Whether every write started by `write_start` has ended; with
    /// `wait`, waits for them (and returns true).
    fn writes_done(&self, _wait: bool) -> bool {
        true
    }
    /// Copies `len` bytes at `offset` to host memory at `dst`.
    ///
    /// # Safety
    /// `dst` is valid for `len` bytes; `offset + len` is inside the region.
    unsafe fn read(&self, offset: usize, dst: *mut u8, len: usize);
    /// `amo` on the naturally aligned value at `offset`, atomic with the
    /// device's own atomics; returns the old value.
    fn amo(&self, offset: usize, amo: Amo) -> u64;
    /// Each of `ops` (offset, AMO, posted) as `amo` does it, old values
    /// into `out`, in one pass of the device where it can; an AMO comes
    /// after every posted one before it, the others in any order. The
    /// default does them one by one, in order.
    fn amo_many(&self, ops: &[(usize, Amo, bool)], out: &mut [u64]) {
        for (&(offset, amo, _), o) in ops.iter().zip(out.iter_mut()) {
            *o = self.amo(offset, amo);
        }
    }
    /// `len` bytes of host memory that `write` and `read` move fastest,
    /// kept for the life of the process (the proxy's staging buffer).
    fn staging(&self, len: usize) -> *mut u8;
}

/// A place on another PE: `offset` bytes into `region` of `pe`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RemoteAddr {
    pub region: Region,
    pub pe: usize,
    pub offset: usize,
}

impl RemoteAddr {
    /// The place `bytes` further on (either sign).
    pub fn offset_by(self, bytes: isize) -> RemoteAddr {
        RemoteAddr { offset: self.offset.wrapping_add_signed(bytes), ..self }
    }
}

/// The shape of a block-strided transfer: `nblocks` blocks of `block`
/// bytes, consecutive ones `remote` bytes apart on the remote PE and
/// `local` bytes apart here (either sign).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Strides {
    pub block: usize,
    pub nblocks: usize,
    pub remote: isize,
    pub local: isize,
}

impl Strides {
    /// Each block's (remote, local) byte offset from block 0's.
    pub fn blocks(self) -> impl Iterator<Item = (isize, isize)> {
        (0..self.nblocks as isize).map(move |b| (b * self.remote, b * self.local))
    }
}

/// [`RemoteOps::put_strided`] block by block (its default): each block
/// non-blocking, then (unless `nbi`) a flush of `pe`, which completes them.
///
/// # Safety
/// As [`RemoteOps::put_strided`].
pub unsafe fn put_blocks<R: RemoteOps + ?Sized>(
    ops: &R, at: RemoteAddr, src: *const u8, s: Strides, nbi: bool,
) -> Result<(), RemoteError> {
    for (r, l) in s.blocks() {
        // SAFETY: the caller's contract, block by block; src stays valid
        // until the flush below (or the caller's, with nbi).
        unsafe { ops.put(at.offset_by(r), src.wrapping_offset(l), s.block, true)? };
    }
    if nbi {
        Ok(())
    } else {
        ops.flush(Some(at.pe))
    }
}

/// [`RemoteOps::get_strided`] block by block (its default): each block
/// non-blocking, then (unless `nbi`) a flush of `pe`.
///
/// # Safety
/// As [`RemoteOps::get_strided`].
pub unsafe fn get_blocks<R: RemoteOps + ?Sized>(
    ops: &R, at: RemoteAddr, dst: *mut u8, s: Strides, nbi: bool,
) -> Result<(), RemoteError> {
    for (r, l) in s.blocks() {
        // SAFETY: the caller's contract, block by block; dst stays valid
        // until the flush below (or the caller's, with nbi).
        unsafe { ops.get(at.offset_by(r), dst.wrapping_offset(l), s.block, true)? };
    }
    if nbi {
        Ok(())
    } else {
        ops.flush(Some(at.pe))
    }
}

/// [`RemoteOps::amo_batch`] one AMO at a time (its default).
///
/// # Safety
/// As [`RemoteOps::amo_batch`].
pub unsafe fn amo_one_by_one<R: RemoteOps + ?Sized>(
    ops_: &R, region: Region, pe: usize, ops: &[(usize, Amo)], old: Option<*mut u64>,
) -> Result<(), RemoteError> {
    for (k, &(offset, amo)) in ops.iter().enumerate() {
        let at = RemoteAddr { region, pe, offset };
        match old {
            // SAFETY: the caller's contract; the u64 is written 0 first,
            // so the old value (its size's bytes at the start: the low
            // ones on the little-endian targets built for) lands
            // zero-extended.
            Some(o) => unsafe {
                o.add(k).write(0);
                ops_.amo_fetch_nbi(at, amo, o.add(k).cast())?
            },
            None => {
                ops_.amo(at, amo, true)?;
            }
        }
    }
    Ok(())
}

/// A way of reaching remote PEs. Offsets are relative to the start of the
/// region on the target; the caller (the routing step) has checked them
/// against the region's size on this PE, which is the same on every PE.
pub trait RemoteOps: Send + Sync {
    /// Which proxy this is, for messages ("MPI proxy", "OpenSHMEM proxy").
    fn kind(&self) -> &'static str;
    /// Description for reports (the MPI or OpenSHMEM library, the path).
    fn describe(&self) -> String;
    /// This process's PE number and the job size.
    fn rank(&self) -> usize;
    fn size(&self) -> usize;
    /// The thread level of the runtime below (`THREAD_*`).
    fn thread_level(&self) -> c_int;
    /// The proxy initialized the runtime below (and finalizes it).
    fn owns_runtime(&self) -> bool;
    /// The runtime below completes operations without `progress` calls
    /// from a separate thread.
    fn self_progressing(&self) -> bool;
    /// Collective: `size` bytes aligned to `align` that the proxy reaches on
    /// every PE, for proxies that provide the job's symmetric memory (a host
    /// OpenSHMEM library's heap: the `openshmem` bootstrap places the heap
    /// and control segment there); the MPI plugin has none.
    fn alloc(&self, size: usize, align: usize) -> Result<*mut u8, RemoteError>;
    /// Collective: every PE's `mine`, concatenated in PE order, into `all`.
    fn allgather(&self, mine: &[u8], all: &mut [u8]) -> Result<(), RemoteError>;
    /// Collective barrier over the job.
    fn barrier(&self) -> Result<(), RemoteError>;
    /// Collective: exposes `size` bytes at `base` as `region` of this PE.
    fn expose(&self, region: Region, base: *mut u8, size: usize) -> Result<(), RemoteError>;
    /// Collective, in place of [`RemoteOps::expose`]: `region` of this PE
    /// (`size` bytes) is memory the host cannot touch; other PEs'
    /// operations on it are served through `access`. A proxy that cannot
    /// serve so returns [`RemoteError::Unsupported`].
    fn expose_served(&self, region: Region, size: usize, access: &'static dyn RegionAccess) -> Result<(), RemoteError>;
    /// Copies `len` bytes from local `src` to `at`.
    ///
    /// # Safety
    /// `src` is valid for `len` bytes, until the next flush with `nbi`.
    unsafe fn put(&self, at: RemoteAddr, src: *const u8, len: usize, nbi: bool) -> Result<(), RemoteError>;
    /// Copies `len` bytes from `at` to local `dst`.
    ///
    /// # Safety
    /// `dst` is valid for `len` bytes, until the next flush with `nbi`.
    unsafe fn get(&self, at: RemoteAddr, dst: *mut u8, len: usize, nbi: bool) -> Result<(), RemoteError>;
    /// Block-strided put: block `b` of `s` from local `src + b *
    /// s.local` to `at.offset + b * s.remote` in `at`'s region of `at.pe`.
    /// The default puts block by block.
    ///
    /// # Safety
    /// `src` is valid for every block, until the next flush with `nbi`;
    /// every target block lies inside `at`'s region.
    unsafe fn put_strided(&self, at: RemoteAddr, src: *const u8, s: Strides, nbi: bool) -> Result<(), RemoteError> {
        // SAFETY: the caller's contract.
        unsafe { put_blocks(self, at, src, s, nbi) }
    }
    /// Block-strided get, the mirror of [`RemoteOps::put_strided`]: block
    /// `b` from `at.offset + b * s.remote` to local `dst + b * s.local`.
    ///
    /// # Safety
    /// `dst` is valid for every block, until the next flush with `nbi`;
    /// every source block lies inside `at`'s region.
    unsafe fn get_strided(&self, at: RemoteAddr, dst: *mut u8, s: Strides, nbi: bool) -> Result<(), RemoteError> {
        // SAFETY: the caller's contract.
        unsafe { get_blocks(self, at, dst, s, nbi) }
    }
    /// `amo` on the naturally aligned value at `at`; returns the old value (0 with `nbi`, which completes by the
    /// next flush). AMOs from every PE to one location are atomic with each
    /// other and with the node's load/store AMOs.
    fn amo(&self, at: RemoteAddr, amo: Amo, nbi: bool) -> Result<u64, RemoteError>;
    /// A fetching `amo` that does not wait for its answer: the old value,
    /// an unsigned integer of `amo.size` bytes, is written to `old` by the
    /// next flush of `at.pe` (or of every PE). The default waits for it.
    ///
    /// # Safety
    /// `old` is valid for a write of `amo.size` bytes until that flush.
    unsafe fn amo_fetch_nbi(&self, at: RemoteAddr, amo: Amo, old: *mut u8) -> Result<(), RemoteError> {
        let v = self.amo(at, amo, false)?;
        // SAFETY: the caller's contract.
        unsafe { ishmem_proxy_abi::write_old(old, v, amo.size) };
        Ok(())
    }
    /// AMOs on `region` of `pe` sent together (`ops`: offset in the region
    /// and AMO), applied at the target as [`RegionAccess::amo_many`] keeps
    /// them. With `old`, fetching: `old[i]` (a whole `u64`, zero-extended)
    /// receives op `i`'s old value by the next flush of `pe` (or of every
    /// PE); without, posted (completed by a flush of every PE). The
    /// default sends them one by one.
    ///
    /// # Safety
    /// Each offset is aligned to its AMO's size inside the region; `old`,
    /// if given, is valid for `ops.len()` writes until that flush.
    unsafe fn amo_batch(
        &self, region: Region, pe: usize, ops: &[(usize, Amo)], old: Option<*mut u64>,
    ) -> Result<(), RemoteError> {
        // SAFETY: the caller's contract.
        unsafe { amo_one_by_one(self, region, pe, ops, old) }
    }
    /// Completes every operation issued to `pe` (`None`: to every PE).
    fn flush(&self, pe: Option<usize>) -> Result<(), RemoteError>;
    /// Serves other PEs' requests and lets the runtime below progress;
    /// returns the number of events handled. Must be cheap.
    fn progress(&self) -> Result<usize, RemoteError>;
    /// Ends the whole job with `code` (does not return when it works).
    fn abort(&self, code: c_int);
    /// Collective: releases the exposed regions and finalizes the runtime
    /// below if the proxy initialized it.
    fn finalize(&self) -> Result<(), RemoteError>;
}

/// The proxy of the running job (for wait loops and job abort).
static CURRENT: AtomicPtr<Remote> = AtomicPtr::new(std::ptr::null_mut());

thread_local! {
    /// This thread is inside a call into the proxy.
    static IN_CALL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// True while this thread is inside the proxy (where an MPI library may
/// call `exit`, e.g. when another process aborted the job).
pub fn in_call() -> bool {
    IN_CALL.with(|c| c.get())
}

/// Marks this thread as inside the proxy until dropped.
pub(crate) struct InCall(bool);
impl InCall {
    #[inline]
    pub(crate) fn enter() -> InCall {
        InCall(IN_CALL.with(|c| c.replace(true)))
    }
}
impl Drop for InCall {
    #[inline]
    fn drop(&mut self) {
        let prev = self.0;
        IN_CALL.with(|c| c.set(prev));
    }
}

/// The proxy in use, with thread rules and error reporting.
pub struct Remote {
    ops: Box<dyn RemoteOps>,
    /// Every thread may call (see the module docs).
    any_thread: bool,
    init_thread: ThreadId,
    progress_stop: AtomicBool,
    progress_thread: std::sync::Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Remote {
    /// Wraps a loaded, initialized proxy.
    pub fn new(ops: Box<dyn RemoteOps>) -> Remote {
        let any_thread =
            ops.thread_level() == THREAD_MULTIPLE || (ops.owns_runtime() && ops.thread_level() >= THREAD_SERIALIZED);
        Remote {
            ops,
            any_thread,
            init_thread: std::thread::current().id(),
            progress_stop: AtomicBool::new(false),
            progress_thread: std::sync::Mutex::new(None),
        }
    }

    pub fn kind(&self) -> &'static str {
        self.ops.kind()
    }

    pub fn describe(&self) -> String {
        self.ops.describe()
    }

    pub fn rank(&self) -> usize {
        self.ops.rank()
    }

    pub fn size(&self) -> usize {
        self.ops.size()
    }

    /// Any thread may call (else only the one that initialized the library).
    pub fn any_thread(&self) -> bool {
        self.any_thread
    }

    #[inline]
    fn check_thread(&self, call: &str) {
        if !self.any_thread && std::thread::current().id() != self.init_thread {
            self.wrong_thread(call)
        }
    }

    #[cold]
    #[inline(never)]
    fn wrong_thread(&self, call: &str) -> ! {
        fatal(
            call,
            format_args!(
                "this operation needs MPI (a PE on another node), but MPI was initialized by the application with {} and this is not the thread that initialized ishmem; initialize MPI with MPI_THREAD_MULTIPLE",
                ["MPI_THREAD_SINGLE", "MPI_THREAD_FUNNELED", "MPI_THREAD_SERIALIZED", "MPI_THREAD_MULTIPLE"]
                    [self.ops.thread_level().clamp(0, 3) as usize]
            ),
        )
    }

    #[cold]
    #[inline(never)]
    fn failed(&self, call: &str, what: fmt::Arguments<'_>, e: RemoteError) -> ! {
        fatal(call, format_args!("{}: {what}: {e}", self.kind()))
    }

    /// Collective: `size` bytes of the proxy's symmetric memory.
    pub fn alloc(&self, call: &str, size: usize, align: usize) -> *mut u8 {
        let _in = InCall::enter();
        self.ops.alloc(size, align).unwrap_or_else(|e| self.failed(call, format_args!("allocation"), e))
    }

    /// Collective over the job: all PEs' `mine` concatenated in PE order.
    pub fn allgather(&self, call: &str, mine: &[u8]) -> Vec<u8> {
        let _in = InCall::enter();
        let mut all = vec![0u8; mine.len() * self.size()];
        self.ops.allgather(mine, &mut all).unwrap_or_else(|e| self.failed(call, format_args!("allgather"), e));
        all
    }

    pub fn barrier(&self, call: &str) {
        let _in = InCall::enter();
        self.ops.barrier().unwrap_or_else(|e| self.failed(call, format_args!("barrier"), e))
    }

    /// Collective: exposes `size` bytes at `base` as `region`.
    pub fn expose(&self, call: &str, region: Region, base: *mut u8, size: usize) {
        let _in = InCall::enter();
        self.ops
            .expose(region, base, size)
            .unwrap_or_else(|e| self.failed(call, format_args!("exposing the {region:?} region ({size} bytes)"), e))
    }

    /// Collective: exposes `region` (`size` bytes the host cannot touch),
    /// served through `access` (see [`RemoteOps::expose_served`]).
    pub fn expose_served(
        &self, region: Region, size: usize, access: &'static dyn RegionAccess,
    ) -> Result<(), RemoteError> {
        let _in = InCall::enter();
        self.ops.expose_served(region, size, access)
    }

    /// # Safety
    /// As [`RemoteOps::put`]; `len` bytes from `at` lie inside its region.
    pub unsafe fn put(&self, call: &str, at: RemoteAddr, src: *const u8, len: usize, nbi: bool) {
        let _in = InCall::enter();
        self.check_thread(call);
        // SAFETY: forwarded from the caller.
        if let Err(e) = unsafe { self.ops.put(at, src, len, nbi) } {
            self.failed(call, format_args!("put of {len} bytes to PE {}", at.pe), e)
        }
    }

    /// # Safety
    /// As [`RemoteOps::get`]; `len` bytes from `at` lie inside its region.
    pub unsafe fn get(&self, call: &str, at: RemoteAddr, dst: *mut u8, len: usize, nbi: bool) {
        let _in = InCall::enter();
        self.check_thread(call);
        // SAFETY: forwarded from the caller.
        if let Err(e) = unsafe { self.ops.get(at, dst, len, nbi) } {
            self.failed(call, format_args!("get of {len} bytes from PE {}", at.pe), e)
        }
    }

    /// # Safety
    /// As [`RemoteOps::put_strided`].
    pub unsafe fn put_strided(&self, call: &str, at: RemoteAddr, src: *const u8, s: Strides, nbi: bool) {
        let _in = InCall::enter();
        self.check_thread(call);
        // SAFETY: forwarded from the caller.
        if let Err(e) = unsafe { self.ops.put_strided(at, src, s, nbi) } {
            self.failed(
                call,
                format_args!("strided put of {} blocks of {} bytes to PE {}", s.nblocks, s.block, at.pe),
                e,
            )
        }
    }

    /// # Safety
    /// As [`RemoteOps::get_strided`].
    pub unsafe fn get_strided(&self, call: &str, at: RemoteAddr, dst: *mut u8, s: Strides, nbi: bool) {
        let _in = InCall::enter();
        self.check_thread(call);
        // SAFETY: forwarded from the caller.
        if let Err(e) = unsafe { self.ops.get_strided(at, dst, s, nbi) } {
            self.failed(
                call,
                format_args!("strided get of {} blocks of {} bytes from PE {}", s.nblocks, s.block, at.pe),
                e,
            )
        }
    }

    /// An AMO at `at`; with `nbi` the result is not waited for (0 is
    /// returned) and the operation completes by `flush`.
    pub fn amo(&self, call: &str, at: RemoteAddr, amo: Amo, nbi: bool) -> u64 {
        let _in = InCall::enter();
        self.check_thread(call);
        // The proxy waits for the answer (serving others meanwhile).
        let _w = (!nbi).then(crate::wait::Waiting::enter);
        self.ops
            .amo(at, amo, nbi)
            .unwrap_or_else(|e| self.failed(call, format_args!("atomic operation on PE {}", at.pe), e))
    }

    /// A fetching AMO at `at` whose old value (`amo.size` bytes) reaches
    /// `old` by the next `flush` of `at.pe` or of every PE.
    ///
    /// # Safety
    /// `old` is valid for a write of `amo.size` bytes until then.
    pub unsafe fn amo_fetch_nbi(&self, call: &str, at: RemoteAddr, amo: Amo, old: *mut u8) {
        let _in = InCall::enter();
        self.check_thread(call);
        // SAFETY: the caller's contract.
        unsafe { self.ops.amo_fetch_nbi(at, amo, old) }
            .unwrap_or_else(|e| self.failed(call, format_args!("atomic operation on PE {}", at.pe), e))
    }

    /// AMOs on `region` of `pe` sent together ([`RemoteOps::amo_batch`]).
    ///
    /// # Safety
    /// As [`RemoteOps::amo_batch`].
    pub unsafe fn amo_batch(&self, call: &str, region: Region, pe: usize, ops: &[(usize, Amo)], old: Option<*mut u64>) {
        let _in = InCall::enter();
        self.check_thread(call);
        // SAFETY: the caller's contract.
        unsafe { self.ops.amo_batch(region, pe, ops, old) }
            .unwrap_or_else(|e| self.failed(call, format_args!("{} atomic operations on PE {pe}", ops.len()), e))
    }

    /// Completes every operation issued to `pe` (`None`: to every PE).
    pub fn flush(&self, call: &str, pe: Option<usize>) {
        let _in = InCall::enter();
        let _w = crate::wait::Waiting::enter();
        self.check_thread(call);
        self.ops.flush(pe).unwrap_or_else(|e| self.failed(call, format_args!("completing outstanding operations"), e))
    }

    /// Serves other PEs' requests; a no-op on threads that may not call.
    #[inline]
    pub fn progress(&self) -> usize {
        if !self.any_thread && std::thread::current().id() != self.init_thread {
            return 0;
        }
        let _in = InCall::enter();
        self.ops.progress().unwrap_or_else(|e| self.failed("ishmem progress", format_args!("serving requests"), e))
    }

    /// Makes this the job's proxy for wait loops and abort, and starts the
    /// progress thread when allowed and enabled.
    pub fn install(&'static self, progress_thread: bool) {
        self.install_abort();
        crate::wait::set_progress(Some(progress_hook));
        if progress_thread && self.any_thread && !self.ops.self_progressing() {
            let h = std::thread::Builder::new()
                .name("ishmem-progress".into())
                .spawn(move || self.progress_loop())
                .expect("spawn the progress thread");
            *self.progress_thread.lock().unwrap_or_else(|e| e.into_inner()) = Some(h);
        }
    }

    /// Makes a fatal error on this PE end the whole job through the proxy.
    pub fn install_abort(&'static self) {
        CURRENT.store(self as *const Remote as *mut Remote, Ordering::Release);
        crate::error::set_abort_hook(Some(abort_hook));
    }

    /// Polls the proxy while idle: spins while requests keep arriving, then
    /// sleeps longer and longer (up to 200 µs) so an idle PE costs little.
    fn progress_loop(&self) {
        let mut idle: u32 = 0;
        while !self.progress_stop.load(Ordering::Acquire) {
            if crate::wait::WAITERS.load(Ordering::Relaxed) > 0 {
                // A thread waiting in the library progresses; stay out of
                // its way (one core may be all there is).
                std::thread::sleep(std::time::Duration::from_micros(200));
                continue;
            }
            if self.progress() > 0 {
                idle = 0;
                continue;
            }
            idle = idle.saturating_add(1);
            if idle < 64 {
                std::thread::yield_now();
            } else {
                let us = (idle as u64 - 63).min(200);
                std::thread::sleep(std::time::Duration::from_micros(us));
            }
        }
    }

    /// Collective: stops the progress thread, releases the exposed regions
    /// and finalizes the runtime below if the proxy initialized it.
    pub fn finalize(&self) {
        let _in = InCall::enter();
        self.progress_stop.store(true, Ordering::Release);
        if let Some(h) = self.progress_thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = h.join();
        }
        crate::wait::set_progress(None);
        crate::error::set_abort_hook(None);
        CURRENT.store(std::ptr::null_mut(), Ordering::Release);
        self.ops.finalize().unwrap_or_else(|e| self.failed("ishmem_finalize", format_args!("finalize"), e))
    }
}

fn progress_hook() {
    // SAFETY: CURRENT is null or points to the installed proxy, which lives
    // until after it is cleared.
    if let Some(p) = unsafe { CURRENT.load(Ordering::Acquire).as_ref() } {
        p.progress();
    }
}

fn abort_hook(code: c_int) {
    // SAFETY: as in progress_hook.
    if let Some(p) = unsafe { CURRENT.load(Ordering::Acquire).as_ref() } {
        let _in = InCall::enter();
        p.ops.abort(code);
    }
}
