//! The host-OpenSHMEM remote: a host OpenSHMEM library loaded
//! at run time — Sandia OpenSHMEM's `libsma`, Open MPI's `liboshmem`, or any
//! library named by `ISHMEM_SHMEM_LIB_NAME` — called directly from Rust
//! behind the [`RemoteOps`] trait.
//!
//! * The loaded library bootstraps the job (its launcher, `oshrun`, `srun`
//!   or `mpiexec`, started the PEs): rank and size are its `shmem_my_pe`
//!   and `shmem_n_pes`.
//! * Memory: OpenSHMEM libraries can only reach their own symmetric
//!   objects, so [`RemoteOps::alloc`] hands the core memory from the
//!   library's `shmem_align`, and the core places its heap and control
//!   segment there. A remote address is then the *local* address of the
//!   same symmetric offset (every OpenSHMEM library translates local
//!   symmetric addresses). The program's globals are symmetric in the
//!   library already (its data segment).
//! * Puts and gets: `shmem_putmem`/`shmem_getmem` (`_nbi` when the library
//!   has them); flush is `shmem_quiet` (OpenSHMEM has no per-PE quiet).
//! * AMOs: the library's 64-bit atomics (OpenSHMEM 1.4
//!   `shmem_uint64_atomic_*`, else `shmem_ulong_atomic_*`, else the 1.3
//!   `shmem_long_*` names); operations a library lacks, and 8/16/32-bit
//!   AMOs, are compare-and-swap loops on the containing 64-bit word. The
//!   core sends every AMO through here, including a PE's AMOs on its own
//!   memory, so all AMOs to a location use one mechanism (the library's).
//! * Progress: Open MPI's OSHMEM over UCX needs the target of an atomic
//!   or of an access to the program's globals to progress, so wait loops
//!   and the proxy progress thread call its `opal_progress`; other
//!   libraries are taken to progress themselves (`self_progressing`).
//!
//! A library that provides `SHMEM_THREAD_MULTIPLE` is called from any
//! thread as is; for one that provides less, every call into it is made
//! under one lock, so a `SHMEM_THREAD_SERIALIZED` library serves a
//! multi-threaded program.

use super::{
    Region, RegionAccess, RemoteAddr, RemoteError, RemoteOps, THREAD_MULTIPLE, THREAD_SERIALIZED, THREAD_SINGLE,
};
use crate::dynlib::{Open, Search};
use crate::types::{Amo, AmoOp};
use ishmem_proxy_abi::atomic::narrow_by_word;
use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

type VoidFn = unsafe extern "C" fn();
type IntFn = unsafe extern "C" fn() -> c_int;
type InitThreadFn = unsafe extern "C" fn(c_int, *mut c_int) -> c_int;
type AlignFn = unsafe extern "C" fn(usize, usize) -> *mut c_void;
type MallocFn = unsafe extern "C" fn(usize) -> *mut c_void;
type FreeFn = unsafe extern "C" fn(*mut c_void);
type PutFn = unsafe extern "C" fn(*mut c_void, *const c_void, usize, c_int);
type GetFn = unsafe extern "C" fn(*mut c_void, *const c_void, usize, c_int);
type ExitFn = unsafe extern "C" fn(c_int);

/// The library's 64-bit atomics. Only compare-and-swap is required; bitwise
/// operations are always compare-and-swap loops (Open MPI 4.1's 64-bit
/// fetch_or gave wrong results in tests/c/amo.c).
struct Amos {
    fetch: Option<unsafe extern "C" fn(*const u64, c_int) -> u64>,
    set: Option<unsafe extern "C" fn(*mut u64, u64, c_int)>,
    swap: Option<unsafe extern "C" fn(*mut u64, u64, c_int) -> u64>,
    cswap: unsafe extern "C" fn(*mut u64, u64, u64, c_int) -> u64,
    fetch_add: Option<unsafe extern "C" fn(*mut u64, u64, c_int) -> u64>,
    add: Option<unsafe extern "C" fn(*mut u64, u64, c_int)>,
}

/// The loaded library's entry points.
struct Lib {
    path: String,
    my_pe: IntFn,
    n_pes: IntFn,
    align: Option<AlignFn>,
    malloc: MallocFn,
    free: FreeFn,
    putmem: PutFn,
    getmem: GetFn,
    putmem_nbi: Option<PutFn>,
    getmem_nbi: Option<GetFn>,
    quiet: VoidFn,
    barrier_all: VoidFn,
    finalize: VoidFn,
    global_exit: Option<ExitFn>,
    /// What makes the library serve other PEs' requests when this PE is not
    /// otherwise calling it: Open MPI's `opal_progress` (OSHMEM over UCX
    /// emulates atomics and accesses to memory UCX did not allocate, such
    /// as the program's globals, with messages the target must progress).
    /// `None`: the library progresses itself.
    progress: Option<VoidFn>,
    a64: Amos,
}

/// Looks up `name` in `lib`.
///
/// # Safety
/// `T` is the function pointer type of the symbol's C declaration.
unsafe fn sym<T: Copy>(lib: &libloading::Library, name: &str) -> Option<T> {
    // SAFETY: the caller's contract.
    unsafe { crate::dynlib::symbol(lib, name) }.ok()
}

/// The 64-bit atomics of `l`: the OpenSHMEM 1.4 fixed-width names, then
/// the 1.4 `ulong` names (Open MPI 4.1 has only these for arithmetic), then
/// the 1.3 `long` names. `None` without a compare-and-swap.
fn amos(l: &libloading::Library) -> Option<Amos> {
    fn find<T: Copy>(l: &libloading::Library, op: &str, old_op: &str) -> Option<T> {
        // SAFETY: the OpenSHMEM declarations of these names have the type of
        // the field they are assigned to (`long` is 64-bit: LP64).
        unsafe {
            sym(l, &format!("shmem_uint64_atomic_{op}"))
                .or_else(|| sym(l, &format!("shmem_ulong_atomic_{op}")))
                .or_else(|| sym(l, &format!("shmem_long_{old_op}")))
        }
    }
    Some(Amos {
        cswap: find(l, "compare_swap", "cswap")?,
        fetch: find(l, "fetch", "fetch"),
        set: find(l, "set", "set"),
        swap: find(l, "swap", "swap"),
        fetch_add: find(l, "fetch_add", "fadd"),
        add: find(l, "add", "add"),
    })
}

/// Library names tried, in order, when `ISHMEM_SHMEM_LIB_NAME` is unset.
const DEFAULT_NAMES: &[&str] = &["libsma.so", "liboshmem.so", "liboshmem.so.40"];

impl Lib {
    /// Loads the first library of `names` that has every required symbol;
    /// the error lists every name tried and why it failed.
    fn load(names: &[String]) -> Result<(Lib, libloading::Library), RemoteError> {
        let mut search = Search::new("a host OpenSHMEM library", "set ISHMEM_SHMEM_LIB_NAME to its name or path");
        for name in names {
            // Global, so that the components it loads itself (Open MPI's
            // MCA plugins) see its symbols; deep-bound, so that its own
            // calls to shmem_* names bind to itself, not to ours (libishmem
            // exports the same names and was loaded first).
            let Some(lib) = search.open(name, Open::GlobalDeepBind) else { continue };
            let mut missing = Vec::new();
            macro_rules! req {
                ($n:literal) => {{
                    // SAFETY: the standard's declaration of this name has
                    // the type it is assigned to.
                    let f = unsafe { sym(&lib, $n) };
                    if f.is_none() {
                        missing.push($n);
                    }
                    f
                }};
            }
            let my_pe = req!("shmem_my_pe");
            let n_pes = req!("shmem_n_pes");
            let malloc = req!("shmem_malloc");
            let free = req!("shmem_free");
            let putmem = req!("shmem_putmem");
            let getmem = req!("shmem_getmem");
            let quiet = req!("shmem_quiet");
            let barrier_all = req!("shmem_barrier_all");
            let finalize = req!("shmem_finalize");
            let a64 = amos(&lib);
            if a64.is_none() {
                missing.push("shmem_uint64_atomic_compare_swap (or shmem_ulong_atomic_compare_swap, shmem_long_cswap)");
            }
            if !missing.is_empty() {
                search.unusable(name, format!("not an OpenSHMEM library: lacks {}", missing.join(", ")));
                continue;
            }
            // SAFETY: as for req!.
            let l = unsafe {
                Lib {
                    path: name.clone(),
                    my_pe: my_pe.unwrap(),
                    n_pes: n_pes.unwrap(),
                    align: sym(&lib, "shmem_align"),
                    malloc: malloc.unwrap(),
                    free: free.unwrap(),
                    putmem: putmem.unwrap(),
                    getmem: getmem.unwrap(),
                    putmem_nbi: sym(&lib, "shmem_putmem_nbi"),
                    getmem_nbi: sym(&lib, "shmem_getmem_nbi"),
                    quiet: quiet.unwrap(),
                    barrier_all: barrier_all.unwrap(),
                    finalize: finalize.unwrap(),
                    global_exit: sym(&lib, "shmem_global_exit"),
                    progress: sym(&lib, "opal_progress"),
                    a64: a64.unwrap(),
                }
            };
            return Ok((l, lib));
        }
        Err(RemoteError::Load(search.failed()))
    }
}

/// A loaded, initialized host OpenSHMEM library.
pub struct ShmemRemote {
    lib: Lib,
    rank: usize,
    size: usize,
    /// (local base, size) of each exposed region, set once at init (before
    /// any transfer names the region; 0 = not exposed).
    regions: [(AtomicUsize, AtomicUsize); 3],
    /// Serializes calls into a library that is not THREAD_MULTIPLE; `None`
    /// when it is (its own locking is then all that is needed).
    lock: Option<Mutex<()>>,
    thread_level: c_int,
    name: String,
}

fn lib_err(call: &'static str, detail: impl Into<String>) -> RemoteError {
    RemoteError::Library { call, detail: detail.into() }
}

impl ShmemRemote {
    fn guard(&self) -> Option<std::sync::MutexGuard<'_, ()>> {
        self.lock.as_ref().map(|l| l.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Local address of `offset` in `region` (the library maps it to `pe`).
    fn addr(&self, region: Region, offset: usize, len: usize) -> Result<usize, RemoteError> {
        let (base, size) = &self.regions[region.index()];
        let (base, size) = (base.load(Ordering::Acquire), size.load(Ordering::Acquire));
        if base == 0 || offset.checked_add(len).is_none_or(|end| end > size) {
            return Err(RemoteError::OutOfRegion { region, offset, len, size });
        }
        Ok(base + offset)
    }

    /// One AMO on the 64-bit word at `addr` on `pe`; returns the old value.
    ///
    /// # Safety
    /// `addr` is an 8-byte aligned symmetric address of the library.
    unsafe fn amo64(&self, addr: usize, pe: c_int, op: AmoOp, v: u64, cond: u64, nbi: bool) -> u64 {
        let a = &self.lib.a64;
        let w = addr as *mut u64;
        // SAFETY: the library's atomics on a symmetric, aligned 64-bit word,
        // as the caller guarantees.
        let fetch = || unsafe {
            match a.fetch {
                Some(f) => f(w, pe),
                None => (a.cswap)(w, 0, 0, pe),
            }
        };
        let cas_loop = |f: &dyn Fn(u64) -> u64| {
            let mut old = fetch();
            loop {
                // SAFETY: as for `fetch`.
                let got = unsafe { (a.cswap)(w, old, f(old), pe) };
                if got == old {
                    return old;
                }
                old = got;
            }
        };
        // SAFETY: as for `fetch`.
        unsafe {
            match op {
                AmoOp::Fetch => fetch(),
                AmoOp::Set => match (a.set, a.swap) {
                    (Some(f), _) => {
                        f(w, v, pe);
                        0
                    }
                    (None, Some(f)) => f(w, v, pe),
                    (None, None) => cas_loop(&|_| v),
                },
                AmoOp::Swap => match a.swap {
                    Some(f) => f(w, v, pe),
                    None => cas_loop(&|_| v),
                },
                AmoOp::CompareSwap => (a.cswap)(w, cond, v, pe),
                AmoOp::FetchAdd => match (nbi, a.add, a.fetch_add) {
                    (true, Some(f), _) => {
                        f(w, v, pe);
                        0
                    }
                    (_, _, Some(f)) => f(w, v, pe),
                    _ => cas_loop(&|o| o.wrapping_add(v)),
                },
                AmoOp::FetchAnd => cas_loop(&|o| o & v),
                AmoOp::FetchOr => cas_loop(&|o| o | v),
                AmoOp::FetchXor => cas_loop(&|o| o ^ v),
            }
        }
    }
}

impl RemoteOps for ShmemRemote {
    fn kind(&self) -> &'static str {
        "OpenSHMEM proxy"
    }

    fn describe(&self) -> String {
        format!("{} via {}", self.name, self.lib.path)
    }

    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn thread_level(&self) -> c_int {
        self.thread_level
    }

    fn owns_runtime(&self) -> bool {
        true
    }

    fn self_progressing(&self) -> bool {
        self.lib.progress.is_none()
    }

    fn alloc(&self, size: usize, align: usize) -> Result<*mut u8, RemoteError> {
        let _g = self.guard();
        // SAFETY: the standard's signatures; collective, as our caller is.
        let m = unsafe {
            match self.lib.align {
                Some(f) => f(align, size),
                None => (self.lib.malloc)(size),
            }
        };
        if m.is_null() || !(m as usize).is_multiple_of(align) {
            return Err(lib_err(
                "shmem_align",
                format!(
                    "{} could not allocate {size} bytes of symmetric memory aligned to {align}; \
                     raise its symmetric heap size (SHMEM_SYMMETRIC_SIZE), which ishmem sets from ISHMEM_SYMMETRIC_SIZE",
                    self.lib.path
                ),
            ));
        }
        Ok(m as *mut u8)
    }

    fn allgather(&self, mine: &[u8], all: &mut [u8]) -> Result<(), RemoteError> {
        let _g = self.guard();
        let (me, n, len) = (self.rank, self.size, mine.len());
        let total =
            len.checked_mul(n).ok_or_else(|| lib_err("shmem_malloc", format!("allgather of {n} x {len} bytes")))?;
        // SAFETY: the standard's signatures; symmetric scratch from the
        // library: everyone puts its block into slot `me` of everyone's
        // buffer, then reads its own after the barrier.
        unsafe {
            let buf = (self.lib.malloc)(total.max(1)) as *mut u8;
            if buf.is_null() {
                return Err(lib_err(
                    "shmem_malloc",
                    format!("shmem_malloc({total}) for the bootstrap allgather returned NULL"),
                ));
            }
            // Our own block by a plain copy: SOS 1.5.3 over tcp;ofi_rxm
            // loses a singleton job's puts to itself.
            std::ptr::copy_nonoverlapping(mine.as_ptr(), buf.add(me * len), len);
            for pe in (0..n).filter(|&pe| pe != me) {
                (self.lib.putmem)(buf.add(me * len) as *mut c_void, mine.as_ptr() as *const c_void, len, pe as c_int);
            }
            (self.lib.quiet)();
            (self.lib.barrier_all)();
            std::ptr::copy_nonoverlapping(buf, all.as_mut_ptr(), total.min(all.len()));
            (self.lib.free)(buf as *mut c_void); // collective, with a barrier
        }
        Ok(())
    }

    fn barrier(&self) -> Result<(), RemoteError> {
        let _g = self.guard();
        // SAFETY: the standard's signatures.
        unsafe {
            (self.lib.quiet)();
            (self.lib.barrier_all)();
        }
        Ok(())
    }

    fn expose(&self, region: Region, base: *mut u8, size: usize) -> Result<(), RemoteError> {
        let r = &self.regions[region.index()];
        r.1.store(size, Ordering::Release);
        r.0.store(base as usize, Ordering::Release);
        Ok(())
    }

    fn expose_served(&self, _: Region, _: usize, _: &'static dyn RegionAccess) -> Result<(), RemoteError> {
        Err(RemoteError::Unsupported(format!(
            "the host OpenSHMEM library ({}) only moves host memory, so it cannot reach heaps in device memory; run GPU heaps across \
             nodes under the MPI proxy (mpirun or mpiexec, without ISHMEM_RUNTIME=OPENSHMEM)",
            self.describe()
        )))
    }

    unsafe fn put(&self, at: RemoteAddr, src: *const u8, len: usize, nbi: bool) -> Result<(), RemoteError> {
        let RemoteAddr { region, pe, offset } = at;
        let a = self.addr(region, offset, len)?;
        if pe == self.rank {
            // Our own memory: a copy (SOS 1.5.3 over tcp;ofi_rxm loses a
            // singleton job's puts to itself).
            // SAFETY: `a` is our mapping of `len` symmetric bytes; src valid
            // as the caller guarantees (possibly overlapping).
            unsafe { std::ptr::copy(src, a as *mut u8, len) };
            return Ok(());
        }
        let _g = self.guard();
        // SAFETY: a symmetric address of the library; src valid as the
        // caller guarantees.
        unsafe {
            match (nbi, self.lib.putmem_nbi) {
                (true, Some(f)) => f(a as *mut c_void, src as *const c_void, len, pe as c_int),
                _ => (self.lib.putmem)(a as *mut c_void, src as *const c_void, len, pe as c_int),
            }
        }
        Ok(())
    }

    unsafe fn get(&self, at: RemoteAddr, dst: *mut u8, len: usize, nbi: bool) -> Result<(), RemoteError> {
        let RemoteAddr { region, pe, offset } = at;
        let a = self.addr(region, offset, len)?;
        if pe == self.rank {
            // SAFETY: as for put, the other way.
            unsafe { std::ptr::copy(a as *const u8, dst, len) };
            return Ok(());
        }
        let _g = self.guard();
        // SAFETY: as for put.
        unsafe {
            match (nbi, self.lib.getmem_nbi) {
                (true, Some(f)) => f(dst as *mut c_void, a as *const c_void, len, pe as c_int),
                _ => (self.lib.getmem)(dst as *mut c_void, a as *const c_void, len, pe as c_int),
            }
        }
        Ok(())
    }

    fn amo(&self, at: RemoteAddr, amo: Amo, nbi: bool) -> Result<u64, RemoteError> {
        let RemoteAddr { region, pe, offset } = at;
        let Amo { op, size, operand, cond } = amo;
        let a = self.addr(region, offset, size)?;
        if !matches!(size, 1 | 2 | 4 | 8) || a % size != 0 {
            return Err(RemoteError::Unsupported(format!("AMO {op:?} on {size} bytes at {a:#x}")));
        }
        // The containing word of a narrow AMO lies in the region too: the
        // regions are 8-byte aligned and sized.
        let _g = self.guard();
        let pe = pe as c_int;
        // SAFETY: an aligned symmetric address of the library (checked).
        Ok(unsafe {
            match size {
                8 => self.amo64(a, pe, op, operand, cond, nbi),
                _ => narrow_by_word(
                    a,
                    size,
                    op,
                    operand,
                    cond,
                    &mut |w| self.amo64(w, pe, AmoOp::Fetch, 0, 0, false),
                    &mut |w, expect, new| self.amo64(w, pe, AmoOp::CompareSwap, new, expect, false),
                ),
            }
        })
    }

    fn flush(&self, _pe: Option<usize>) -> Result<(), RemoteError> {
        let _g = self.guard();
        // SAFETY: the standard's signature.
        unsafe { (self.lib.quiet)() };
        Ok(())
    }

    fn progress(&self) -> Result<usize, RemoteError> {
        if let Some(f) = self.lib.progress {
            // A thread already in the library progresses it.
            match &self.lock {
                // SAFETY: opal_progress takes no arguments and may be
                // called by any thread of a THREAD_MULTIPLE library.
                None => unsafe { f() },
                Some(l) => {
                    if let Ok(_g) = l.try_lock() {
                        // SAFETY: as above, serialized by our lock.
                        unsafe { f() };
                    }
                }
            }
        }
        Ok(0)
    }

    fn abort(&self, code: c_int) {
        // The launcher forwards this PE's output (its error message, just
        // written) and handles the abort request on separate channels:
        // MPICH's Hydra under SOS was seen to end the job first and drop
        // the message. A moment for the output to be forwarded first.
        std::thread::sleep(std::time::Duration::from_millis(200));
        // No lock: another thread may hold it, blocked on a dead peer.
        if let Some(f) = self.lib.global_exit {
            // SAFETY: the standard's signature.
            unsafe { f(code) };
        }
    }

    fn finalize(&self) -> Result<(), RemoteError> {
        let _g = self.guard();
        // SAFETY: the standard's signatures; collective.
        unsafe {
            (self.lib.quiet)();
            (self.lib.barrier_all)();
            (self.lib.finalize)();
        }
        Ok(())
    }
}

/// Why the host library's references to `_end` and `__data_start` could
/// not be pointed at the program (see [`point_end_at_program`]).
#[derive(Debug)]
enum PointEndError {
    /// The loader reported no loaded objects.
    NoObjects,
    /// The main program has no writable load segment.
    NoProgramData,
    /// No loaded object contains the library's address.
    LibraryNotLoaded,
    /// Making a read-only page of the library writable failed.
    Mprotect(std::io::Error),
}

impl std::fmt::Display for PointEndError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PointEndError::NoObjects => f.write_str("no loaded objects"),
            PointEndError::NoProgramData => f.write_str("the main program has no writable load segment"),
            PointEndError::LibraryNotLoaded => f.write_str("the loaded library is not among the loaded objects"),
            PointEndError::Mprotect(e) => write!(f, "mprotect of the library's relocated data failed: {e}"),
        }
    }
}

impl std::error::Error for PointEndError {}

/// Open MPI's OSHMEM finds the program's globals (its "static" symmetric
/// segments) by registering every writable anonymous or program-file
/// mapping below `&_end`, meaning the program's `_end`. A library loaded at
/// run time with RTLD_DEEPBIND (and one whose program does not export
/// `_end`) resolves `_end` to its *own* end instead, so it registers
/// dozens of unrelated mappings (heap arenas, thread stacks, other
/// libraries' bss), a number that differs between PEs: past 32 its key
/// exchange fails or crashes, below that its address translation for
/// globals is wrong. This points the library's dynamic references to `_end`
/// at the program's end (the end of the main executable's last writable
/// load segment), which is what the library was written to see.
///
/// Sandia OpenSHMEM takes its data segment as `[&__data_start, &_end)`
/// through weak references: loaded at run time it sees `__data_start` as 0
/// (PIE programs do not export it) and `_end` as its own end, so it would
/// translate the program's globals as if every PE had them at the same
/// address (wrong under address randomization). The library's unresolved or
/// self-resolved references to `__data_start` are therefore pointed at the
/// start of the program's data (the first byte of its writable load segment
/// after the relocation-read-only part), so both libraries see the
/// program's own data segment.
///
/// `inside` is any address inside the loaded library (one of its
/// functions). Returns how many references were pointed, or why none could
/// be; a library without such references is left alone.
fn point_end_at_program(inside: usize) -> Result<usize, PointEndError> {
    #[repr(C)]
    struct Dyn {
        tag: i64,
        val: u64,
    }
    #[repr(C)]
    struct Rela {
        offset: u64,
        info: u64,
        addend: i64,
    }
    #[repr(C)]
    struct Sym {
        name: u32,
        info: u8,
        other: u8,
        shndx: u16,
        value: u64,
        size: u64,
    }
    const DT_NULL: i64 = 0;
    const DT_STRTAB: i64 = 5;
    const DT_SYMTAB: i64 = 6;
    const DT_RELA: i64 = 7;
    const DT_RELASZ: i64 = 8;
    #[cfg(target_arch = "x86_64")]
    const RELOCS: [u32; 2] = [1 /* R_X86_64_64 */, 6 /* R_X86_64_GLOB_DAT */];
    #[cfg(target_arch = "aarch64")]
    const RELOCS: [u32; 2] = [257 /* R_AARCH64_ABS64 */, 1025 /* R_AARCH64_GLOB_DAT */];
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    const RELOCS: [u32; 0] = [];

    /// One loaded object: load bias, PT_LOAD ranges, dynamic section, RELRO.
    struct Obj {
        bias: usize,
        loads: Vec<(usize, usize, bool)>,
        dynamic: usize,
        relro: (usize, usize),
    }
    unsafe extern "C" fn each(info: *mut libc::dl_phdr_info, _size: usize, out: *mut c_void) -> c_int {
        // SAFETY: the loader passes a valid info whose phdr array has
        // dlpi_phnum entries; `out` is the Vec below.
        crate::error::callback_guard("ishmem_init (walking the loaded objects)", || unsafe {
            let info = &*info;
            let mut o = Obj { bias: info.dlpi_addr as usize, loads: Vec::new(), dynamic: 0, relro: (0, 0) };
            for i in 0..info.dlpi_phnum as usize {
                let ph = &*info.dlpi_phdr.add(i);
                let start = o.bias + ph.p_vaddr as usize;
                match ph.p_type {
                    libc::PT_LOAD => o.loads.push((start, start + ph.p_memsz as usize, ph.p_flags & libc::PF_W != 0)),
                    libc::PT_DYNAMIC => o.dynamic = start,
                    libc::PT_GNU_RELRO => o.relro = (start, start + ph.p_memsz as usize),
                    _ => {}
                }
            }
            (*(out as *mut Vec<Obj>)).push(o);
            0
        })
    }
    let mut objs: Vec<Obj> = Vec::new();
    // SAFETY: `each` matches the callback type and only pushes to `objs`.
    unsafe { libc::dl_iterate_phdr(Some(each), &mut objs as *mut Vec<Obj> as *mut c_void) };
    // The first object the loader reports is the main program.
    let program = objs.first().ok_or(PointEndError::NoObjects)?;
    let data_load = program.loads.iter().filter(|l| l.2).max_by_key(|l| l.1).ok_or(PointEndError::NoProgramData)?;
    let program_end = data_load.1;
    let program_data_start =
        if (data_load.0..data_load.1).contains(&program.relro.1) { program.relro.1 } else { data_load.0 };
    let lib = objs
        .iter()
        .find(|o| o.loads.iter().any(|l| (l.0..l.1).contains(&inside)))
        .ok_or(PointEndError::LibraryNotLoaded)?;
    if lib.dynamic == 0 || RELOCS.is_empty() {
        return Ok(0);
    }
    let lib_span = (lib.loads.iter().map(|l| l.0).min().unwrap_or(0), lib.loads.iter().map(|l| l.1).max().unwrap_or(0));
    // The loader may have relocated the dynamic entries' addresses in place.
    let abs = |v: u64| if (v as usize) < lib.bias { lib.bias + v as usize } else { v as usize };
    let (mut strtab, mut symtab, mut rela, mut relasz) = (0, 0, 0, 0);
    // SAFETY: PT_DYNAMIC of a loaded object is a DT_NULL-terminated array
    // of Elf64_Dyn in mapped memory; the tables it names are mapped too.
    unsafe {
        let mut d = lib.dynamic as *const Dyn;
        while (*d).tag != DT_NULL {
            match (*d).tag {
                DT_STRTAB => strtab = abs((*d).val),
                DT_SYMTAB => symtab = abs((*d).val),
                DT_RELA => rela = abs((*d).val),
                DT_RELASZ => relasz = (*d).val as usize,
                _ => {}
            }
            d = d.add(1);
        }
        if strtab == 0 || symtab == 0 || rela == 0 {
            return Ok(0);
        }
        let mut pointed = 0;
        let page = libc::sysconf(libc::_SC_PAGESIZE) as usize;
        for i in 0..relasz / std::mem::size_of::<Rela>() {
            let r = &*(rela as *const Rela).add(i);
            let (sym, kind) = ((r.info >> 32) as usize, (r.info & 0xffff_ffff) as u32);
            if sym == 0 || !RELOCS.contains(&kind) {
                continue;
            }
            let s = &*(symtab as *const Sym).add(sym);
            let slot = (lib.bias + r.offset as usize) as *mut usize;
            // Only a reference that resolved into the library itself (or,
            // for __data_start, did not resolve).
            let own = (lib_span.0..=lib_span.1).contains(&*slot);
            let target = match std::ffi::CStr::from_ptr((strtab + s.name as usize) as *const c_char).to_bytes() {
                b"_end" if own => program_end,
                b"__data_start" if own || *slot == r.addend as usize => program_data_start,
                _ => continue,
            };
            let value = target.wrapping_add(r.addend as usize);
            let page_start = slot as usize & !(page - 1);
            let read_only = (lib.relro.0..lib.relro.1).contains(&(slot as usize));
            if read_only && libc::mprotect(page_start as *mut c_void, page, libc::PROT_READ | libc::PROT_WRITE) != 0 {
                return Err(PointEndError::Mprotect(std::io::Error::last_os_error()));
            }
            *slot = value;
            if read_only {
                libc::mprotect(page_start as *mut c_void, page, libc::PROT_READ);
            }
            pointed += 1;
        }
        Ok(pointed)
    }
}

/// Loads and starts the host OpenSHMEM library. `lib_name` is
/// `ISHMEM_SHMEM_LIB_NAME`; `need(n_pes)` is the symmetric memory the core
/// will allocate from it for `n_pes` PEs (a function, since the job size is
/// known only once the library has started); the library's heap size
/// (`SHMEM_SYMMETRIC_SIZE`, read by SOS and OSHMEM at init) is set from it.
pub fn load(lib_name: Option<&str>, need: &dyn Fn(usize) -> usize) -> Result<ShmemRemote, RemoteError> {
    let names: Vec<String> = match lib_name.filter(|n| !n.is_empty()) {
        Some(n) => vec![n.to_string()],
        None => DEFAULT_NAMES.iter().map(|s| s.to_string()).collect(),
    };
    let (lib, handle) = Lib::load(&names)?;
    point_end_at_program(lib.my_pe as usize).map_err(|e| RemoteError::Init(format!("{}: {e}", lib.path)))?;
    // Room for the heap, the control segment for the announced job size
    // (1024 PEs when unknown), alignment slack, and the library's own use.
    let bytes = need(crate::env::launcher_job_size().unwrap_or(1024)) + (64 << 20);
    crate::env::set_library_heap_size(bytes.div_ceil(1 << 20));
    // SERIALIZED whatever the program asked for: calls into the library
    // from our threads (the program's, the progress thread, the device
    // ring's proxy thread) are serialized by our lock, which costs less
    // than a THREAD_MULTIPLE library's own locking (Open MPI 4.1 over UCX:
    // see docs/cluster.md).
    let mut provided = THREAD_SINGLE;
    // SAFETY: the standard's signatures.
    unsafe {
        match sym::<InitThreadFn>(&handle, "shmem_init_thread") {
            Some(f) => {
                if f(THREAD_SERIALIZED, &mut provided) != 0 {
                    return Err(RemoteError::Init(format!("{}: shmem_init_thread failed", lib.path)));
                }
            }
            None => match sym::<VoidFn>(&handle, "shmem_init").or_else(|| sym::<VoidFn>(&handle, "start_pes")) {
                Some(f) => f(),
                None => {
                    return Err(RemoteError::Init(format!(
                        "{}: has neither shmem_init_thread nor shmem_init",
                        lib.path
                    )))
                }
            },
        }
    }
    // SAFETY: the library is initialized.
    let (rank, size) = unsafe { ((lib.my_pe)(), (lib.n_pes)()) };
    if rank < 0 || size <= 0 || rank >= size {
        return Err(RemoteError::Init(format!("{}: reports PE {rank} of {size}", lib.path)));
    }
    // The library's own name for itself (OpenSHMEM 1.5 §9.1.8), when it says.
    let mut vendor = vec![0u8; 1024];
    // SAFETY: the buffer is larger than SHMEM_MAX_NAME_LEN (256) of every
    // known library; the standard's signature.
    if let Some(f) = unsafe { sym::<unsafe extern "C" fn(*mut c_char)>(&handle, "shmem_info_get_name") } {
        // SAFETY: as above.
        unsafe { f(vendor.as_mut_ptr() as *mut c_char) };
    }
    let vendor =
        std::ffi::CStr::from_bytes_until_nul(&vendor).map(|c| c.to_string_lossy().into_owned()).unwrap_or_default();
    // The library stays loaded for the life of the process.
    std::mem::forget(handle);
    Ok(ShmemRemote {
        lib,
        rank: rank as usize,
        size: size as usize,
        regions: std::array::from_fn(|_| (AtomicUsize::new(0), AtomicUsize::new(0))),
        lock: (provided < THREAD_MULTIPLE).then(|| Mutex::new(())),
        // Our lock serializes every call, so SERIALIZED below is MULTIPLE above.
        thread_level: if provided >= THREAD_SERIALIZED { THREAD_MULTIPLE } else { provided },
        name: if vendor.is_empty() { "host OpenSHMEM library".to_string() } else { vendor },
    })
}

// The 64-bit fallbacks use the `long` and `unsigned long` names (LP64).
const _: () = assert!(std::mem::size_of::<std::ffi::c_long>() == 8);
