//! The second proxy (issue #11): a host OpenSHMEM library loaded at run
//! time — Sandia OpenSHMEM's `libsma`, Open MPI's `liboshmem`, or any
//! library named by `ISHMEM_SHMEM_LIB_NAME` — reached through the same
//! function table ([`ishmem_proxy_abi::ProxyOps`]) as the MPI plugins, so
//! the core cannot tell them apart.
//!
//! * The loaded library bootstraps the job (its launcher, `oshrun`, `srun`
//!   or `mpiexec`, started the PEs): rank and size are its `shmem_my_pe`
//!   and `shmem_n_pes`.
//! * Memory: OpenSHMEM libraries can only reach their own symmetric
//!   objects, so the table's optional `alloc` hands the core memory from
//!   the library's `shmem_align`, and the core places its heap and control
//!   segment there. A remote address is then the *local* address of the
//!   same symmetric offset (every OpenSHMEM library translates local
//!   symmetric addresses). The program's globals are symmetric in the
//!   library already (its data segment).
//! * Puts and gets: `shmem_putmem`/`shmem_getmem` (`_nbi` when the library
//!   has them); flush is `shmem_quiet` (OpenSHMEM has no per-PE quiet).
//! * AMOs: the library's 64-bit atomics (OpenSHMEM 1.4
//!   `shmem_uint64_atomic_*`, else `shmem_ulong_atomic_*`, else the 1.3
//!   `shmem_long_*` names); operations a library lacks, and 8/16/32-bit
//!   AMOs, are compare-and-swap loops on the containing 64-bit word. The core sends every
//!   AMO through here, including a PE's AMOs on its own memory, so all
//!   AMOs to a location use one mechanism (the library's).
//! * Progress: Open MPI's OSHMEM over UCX needs the target of an atomic
//!   or of an access to the program's globals to progress, so wait loops
//!   and the proxy progress thread call its `opal_progress`; other
//!   libraries are taken to progress themselves (`self_progressing`).
//!
//! A library that provides `SHMEM_THREAD_MULTIPLE` is called from any
//! thread as is; for one that provides less, every call into it is made
//! under one lock, so a `SHMEM_THREAD_SERIALIZED` library serves a
//! multi-threaded program.

use ishmem_proxy_abi as abi;
use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void, CString};
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
    lib.get::<T>(name.as_bytes()).ok().map(|s| *s)
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
    fn load(names: &[String]) -> Result<(Lib, libloading::Library), String> {
        let mut tried = Vec::new();
        for name in names {
            // SAFETY: loading a host OpenSHMEM library. RTLD_GLOBAL so the
            // components it loads itself (Open MPI's MCA plugins) see its
            // symbols; RTLD_DEEPBIND so its own calls to shmem_* names bind
            // to itself, not to ours (libishmem exports the same names and
            // was loaded first).
            let lib = match unsafe {
                libloading::os::unix::Library::open(
                    Some(name.as_str()),
                    libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_GLOBAL | libc::RTLD_DEEPBIND,
                )
            } {
                Ok(l) => libloading::Library::from(l),
                Err(e) => {
                    tried.push(format!("{name} ({e})"));
                    continue;
                }
            };
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
                tried.push(format!("{name} (not an OpenSHMEM library: lacks {})", missing.join(", ")));
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
        Err(format!(
            "cannot load a host OpenSHMEM library (set ISHMEM_SHMEM_LIB_NAME to its name or path); tried:\n    {}",
            tried.join("\n    ")
        ))
    }
}

/// State behind the table's context pointer.
struct ShmemProxy {
    lib: Lib,
    /// (local base, size) of each exposed region, set once at init (before
    /// any transfer names the region; 0 = not exposed).
    regions: [(AtomicUsize, AtomicUsize); abi::REGIONS],
    /// Serializes calls into the library.
    /// Serializes calls into a library that is not THREAD_MULTIPLE; `None`
    /// when it is (its own locking is then all that is needed).
    lock: Option<Mutex<()>>,
    name: CString,
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn fail(msg: String) -> c_int {
    LAST_ERROR.with(|e| *e.borrow_mut() = CString::new(msg.replace('\0', " ")).unwrap_or_default());
    1
}

fn ctx<'a>(c: *mut c_void) -> &'a ShmemProxy {
    // SAFETY: c is the pointer `load` put in the table; it is never freed
    // (the process keeps the library loaded until exit).
    unsafe { &*(c as *const ShmemProxy) }
}

impl ShmemProxy {
    fn guard(&self) -> Option<std::sync::MutexGuard<'_, ()>> {
        self.lock.as_ref().map(|l| l.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Local address of `offset` in `region` (the library maps it to `pe`).
    fn addr(&self, region: u32, offset: usize, len: usize) -> Result<usize, String> {
        let (base, size) = self.regions.get(region as usize).ok_or_else(|| format!("no region {region}"))?;
        let (base, size) = (base.load(Ordering::Acquire), size.load(Ordering::Acquire));
        if base == 0 || offset.checked_add(len).is_none_or(|end| end > size) {
            return Err(format!("{len} bytes at offset {offset} are outside region {region} ({size} bytes)"));
        }
        Ok(base + offset)
    }
}

/// One AMO on the 64-bit word at `addr` on `pe`; returns the old value.
///
/// # Safety
/// `addr` is an 8-byte aligned symmetric address of the library.
unsafe fn amo64(p: &ShmemProxy, addr: usize, pe: c_int, op: u32, v: u64, cond: u64, nbi: bool) -> u64 {
    let a = &p.lib.a64;
    let w = addr as *mut u64;
    let fetch = || match a.fetch {
        Some(f) => f(w, pe),
        None => (a.cswap)(w, 0, 0, pe),
    };
    let cas_loop = |f: &dyn Fn(u64) -> u64| {
        let mut old = fetch();
        loop {
            let got = (a.cswap)(w, old, f(old), pe);
            if got == old {
                return old;
            }
            old = got;
        }
    };
    match op {
        abi::AMO_FETCH => fetch(),
        abi::AMO_SET => match (a.set, a.swap) {
            (Some(f), _) => {
                f(w, v, pe);
                0
            }
            (None, Some(f)) => f(w, v, pe),
            (None, None) => cas_loop(&|_| v),
        },
        abi::AMO_SWAP => match a.swap {
            Some(f) => f(w, v, pe),
            None => cas_loop(&|_| v),
        },
        abi::AMO_COMPARE_SWAP => (a.cswap)(w, cond, v, pe),
        abi::AMO_FETCH_ADD => match (nbi, a.add, a.fetch_add) {
            (true, Some(f), _) => {
                f(w, v, pe);
                0
            }
            (_, _, Some(f)) => f(w, v, pe),
            _ => cas_loop(&|o| o.wrapping_add(v)),
        },
        abi::AMO_FETCH_AND => cas_loop(&|o| o & v),
        abi::AMO_FETCH_OR => cas_loop(&|o| o | v),
        _ => cas_loop(&|o| o ^ v),
    }
}

/// An 8-, 16- or 32-bit AMO as a compare-and-swap loop on the aligned
/// 64-bit word that contains it (little-endian lanes). The library's
/// 32-bit atomics are not used at all: Open MPI 4.1's 32-bit
/// compare-and-swap corrupts its caller's stack, and one mechanism per word
/// keeps mixed-width AMOs on it atomic.
///
/// # Safety
/// As for `amo64`; the containing word lies in the same region.
unsafe fn amo_narrow(p: &ShmemProxy, addr: usize, size: u32, pe: c_int, op: u32, v: u64, cond: u64) -> u64 {
    let word = addr & !7;
    let shift = ((addr & 7) * 8) as u32;
    let lane: u64 = (1u64 << (size * 8)) - 1;
    let mask = lane << shift;
    let (v, cond) = (v & lane, cond & lane);
    let mut old_word = amo64(p, word, pe, abi::AMO_FETCH, 0, 0, false);
    loop {
        let old = (old_word & mask) >> shift;
        let new = match op {
            abi::AMO_FETCH => return old,
            abi::AMO_SET | abi::AMO_SWAP => v,
            abi::AMO_COMPARE_SWAP if old != cond => return old,
            abi::AMO_COMPARE_SWAP => v,
            abi::AMO_FETCH_ADD => old.wrapping_add(v) & lane,
            abi::AMO_FETCH_AND => old & v,
            abi::AMO_FETCH_OR => old | v,
            _ => old ^ v,
        };
        let new_word = (old_word & !mask) | (new << shift);
        if new_word == old_word {
            return old;
        }
        let got = amo64(p, word, pe, abi::AMO_COMPARE_SWAP, new_word, old_word, false);
        if got == old_word {
            return old;
        }
        old_word = got;
    }
}

unsafe extern "C" fn op_allgather(c: *mut c_void, send: *const c_void, recv: *mut c_void, len: usize) -> c_int {
    let p = ctx(c);
    let _g = p.guard();
    let (me, n) = ((p.lib.my_pe)() as usize, (p.lib.n_pes)() as usize);
    let Some(total) = len.checked_mul(n) else { return fail(format!("allgather of {n} x {len} bytes")) };
    // Symmetric scratch from the library: everyone puts its block into
    // slot `me` of everyone's buffer.
    let buf = (p.lib.malloc)(total.max(1)) as *mut u8;
    if buf.is_null() {
        return fail(format!("shmem_malloc({total}) for the bootstrap allgather returned NULL"));
    }
    for pe in 0..n {
        (p.lib.putmem)(buf.add(me * len) as *mut c_void, send, len, pe as c_int);
    }
    (p.lib.quiet)();
    (p.lib.barrier_all)();
    std::ptr::copy_nonoverlapping(buf, recv as *mut u8, total);
    (p.lib.free)(buf as *mut c_void); // collective, with a barrier
    0
}

unsafe extern "C" fn op_barrier(c: *mut c_void) -> c_int {
    let p = ctx(c);
    let _g = p.guard();
    (p.lib.quiet)();
    (p.lib.barrier_all)();
    0
}

unsafe extern "C" fn op_expose(c: *mut c_void, region: u32, base: *mut c_void, size: usize) -> c_int {
    let p = ctx(c);
    if region as usize >= abi::REGIONS {
        return fail(format!("no region {region}"));
    }
    let r = &p.regions[region as usize];
    r.1.store(size, Ordering::Release);
    r.0.store(base as usize, Ordering::Release);
    0
}

unsafe extern "C" fn op_alloc(c: *mut c_void, size: usize, align: usize, out: *mut *mut c_void) -> c_int {
    let p = ctx(c);
    let _g = p.guard();
    let m = match p.lib.align {
        Some(f) => f(align, size),
        None => (p.lib.malloc)(size),
    };
    if m.is_null() || (m as usize) % align != 0 {
        return fail(format!(
            "{} could not allocate {size} bytes of symmetric memory aligned to {align}; \
             raise its symmetric heap size (SHMEM_SYMMETRIC_SIZE), which ishmem sets from ISHMEM_SYMMETRIC_SIZE",
            p.lib.path
        ));
    }
    *out = m;
    0
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn op_put(
    c: *mut c_void, region: u32, pe: u32, offset: usize, src: *const c_void, len: usize, flags: u32,
) -> c_int {
    let p = ctx(c);
    let a = match p.addr(region, offset, len) {
        Ok(a) => a,
        Err(e) => return fail(e),
    };
    let _g = p.guard();
    match (flags & abi::FLAG_NBI != 0, p.lib.putmem_nbi) {
        (true, Some(f)) => f(a as *mut c_void, src, len, pe as c_int),
        _ => (p.lib.putmem)(a as *mut c_void, src, len, pe as c_int),
    }
    0
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn op_get(
    c: *mut c_void, region: u32, pe: u32, offset: usize, dst: *mut c_void, len: usize, flags: u32,
) -> c_int {
    let p = ctx(c);
    let a = match p.addr(region, offset, len) {
        Ok(a) => a,
        Err(e) => return fail(e),
    };
    let _g = p.guard();
    match (flags & abi::FLAG_NBI != 0, p.lib.getmem_nbi) {
        (true, Some(f)) => f(dst, a as *const c_void, len, pe as c_int),
        _ => (p.lib.getmem)(dst, a as *const c_void, len, pe as c_int),
    }
    0
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn op_amo(
    c: *mut c_void, region: u32, pe: u32, offset: usize, size: u32, op: u32, operand: u64, cond: u64, old: *mut u64,
    flags: u32,
) -> c_int {
    let p = ctx(c);
    let a = match p.addr(region, offset, size as usize) {
        Ok(a) => a,
        Err(e) => return fail(e),
    };
    if op > abi::AMO_FETCH_XOR || !matches!(size, 1 | 2 | 4 | 8) || a % size as usize != 0 {
        return fail(format!("AMO op {op} on {size} bytes at {a:#x} is not supported"));
    }
    let nbi = flags & abi::FLAG_NBI != 0;
    let _g = p.guard();
    let v = match size {
        8 => amo64(p, a, pe as c_int, op, operand, cond, nbi),
        _ => amo_narrow(p, a, size, pe as c_int, op, operand, cond),
    };
    if !old.is_null() {
        *old = v;
    }
    0
}

unsafe extern "C" fn op_flush(c: *mut c_void, _pe: c_int) -> c_int {
    let p = ctx(c);
    let _g = p.guard();
    (p.lib.quiet)();
    0
}

unsafe extern "C" fn op_progress(c: *mut c_void) -> c_int {
    let p = ctx(c);
    if let Some(f) = p.lib.progress {
        // A thread already in the library progresses it.
        match &p.lock {
            None => f(),
            Some(l) => {
                if let Ok(_g) = l.try_lock() {
                    f();
                }
            }
        }
    }
    0
}

unsafe extern "C" fn op_abort(c: *mut c_void, code: c_int) {
    let p = ctx(c);
    // No lock: another thread may hold it, blocked on a dead peer.
    if let Some(f) = p.lib.global_exit {
        f(code);
    }
}

unsafe extern "C" fn op_finalize(c: *mut c_void) -> c_int {
    let p = ctx(c);
    let _g = p.guard();
    (p.lib.quiet)();
    (p.lib.barrier_all)();
    (p.lib.finalize)();
    0
}

unsafe extern "C" fn op_last_error(_c: *mut c_void) -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

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
/// `inside` is any address inside the loaded library (one of its
/// functions). Returns how many references were pointed, or why none could
/// be; a library without such references is left alone.
fn point_end_at_program(inside: usize) -> Result<usize, String> {
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
        unsafe {
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
        }
        0
    }
    let mut objs: Vec<Obj> = Vec::new();
    // SAFETY: `each` matches the callback type and only pushes to `objs`.
    unsafe { libc::dl_iterate_phdr(Some(each), &mut objs as *mut Vec<Obj> as *mut c_void) };
    // The first object the loader reports is the main program.
    let program_end = objs
        .first()
        .and_then(|o| o.loads.iter().filter(|l| l.2).map(|l| l.1).max())
        .ok_or("the main program has no writable load segment")?;
    let lib = objs
        .iter()
        .find(|o| o.loads.iter().any(|l| (l.0..l.1).contains(&inside)))
        .ok_or("the loaded library is not among the loaded objects")?;
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
            if std::ffi::CStr::from_ptr((strtab + s.name as usize) as *const c_char).to_bytes() != b"_end" {
                continue;
            }
            let slot = (lib.bias + r.offset as usize) as *mut usize;
            // Only a reference that resolved into the library itself.
            if !(lib_span.0..=lib_span.1).contains(&*slot) {
                continue;
            }
            let value = program_end.wrapping_add(r.addend as usize);
            let page_start = slot as usize & !(page - 1);
            let read_only = (lib.relro.0..lib.relro.1).contains(&(slot as usize));
            if read_only && libc::mprotect(page_start as *mut c_void, page, libc::PROT_READ | libc::PROT_WRITE) != 0 {
                return Err(format!(
                    "mprotect of the library's relocated data failed: {}",
                    std::io::Error::last_os_error()
                ));
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

/// The job size the launcher announces, before the library starts (to size
/// the library's symmetric heap for our control segment).
fn launcher_size() -> Option<usize> {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "SLURM_NTASKS"]
        .iter()
        .find_map(|v| std::env::var(v).ok()?.trim().parse().ok())
}

/// Loads and starts the host OpenSHMEM library and returns the proxy table.
/// `lib_name` is `ISHMEM_SHMEM_LIB_NAME`; `need` is the symmetric memory the
/// core will allocate from it for `n_pes` PEs (a function, since the job
/// size is known only once the library has started); the library's heap
/// size (`SHMEM_SYMMETRIC_SIZE`, read by SOS and OSHMEM at init) is set
/// from it.
pub fn load(
    lib_name: Option<&str>, requested_thread: c_int, need: &dyn Fn(usize) -> usize,
) -> Result<(abi::ProxyOps, String), String> {
    let names: Vec<String> = match lib_name.filter(|n| !n.is_empty()) {
        Some(n) => vec![n.to_string()],
        None => DEFAULT_NAMES.iter().map(|s| s.to_string()).collect(),
    };
    let (lib, handle) = Lib::load(&names)?;
    point_end_at_program(lib.my_pe as usize).map_err(|e| format!("{}: {e}", lib.path))?;
    // Room for the heap, the control segment for the announced job size
    // (1024 PEs when unknown), alignment slack, and the library's own use.
    let bytes = need(launcher_size().unwrap_or(1024)) + (64 << 20);
    let mib = bytes.div_ceil(1 << 20);
    // Init time: no thread of ours reads the environment concurrently.
    std::env::set_var("SHMEM_SYMMETRIC_SIZE", format!("{mib}M"));
    std::env::set_var("SMA_SYMMETRIC_SIZE", format!("{mib}M"));
    // SERIALIZED whatever the program asked for: calls into the library
    // from our threads (the program's, the progress thread, the device
    // ring's proxy thread) are serialized by our lock, which costs less
    // than a THREAD_MULTIPLE library's own locking (Open MPI 4.1 over UCX:
    // see docs/cluster.md).
    let _ = requested_thread;
    let mut provided = abi::THREAD_SINGLE;
    // SAFETY: the standard's signatures.
    unsafe {
        match sym::<InitThreadFn>(&handle, "shmem_init_thread") {
            Some(f) => {
                if f(abi::THREAD_SERIALIZED, &mut provided) != 0 {
                    return Err(format!("{}: shmem_init_thread failed", lib.path));
                }
            }
            None => match sym::<VoidFn>(&handle, "shmem_init").or_else(|| sym::<VoidFn>(&handle, "start_pes")) {
                Some(f) => f(),
                None => return Err(format!("{}: has neither shmem_init_thread nor shmem_init", lib.path)),
            },
        }
    }
    // SAFETY: the library is initialized.
    let (rank, size) = unsafe { ((lib.my_pe)(), (lib.n_pes)()) };
    if rank < 0 || size <= 0 || rank >= size {
        return Err(format!("{}: reports PE {rank} of {size}", lib.path));
    }
    let path = lib.path.clone();
    // The library's own name for itself (OpenSHMEM 1.5 §9.1.8), when it says.
    let mut vendor = vec![0u8; 1024];
    // SAFETY: the buffer is larger than SHMEM_MAX_NAME_LEN (256) of every
    // known library; the standard's signature.
    if let Some(f) = unsafe { sym::<unsafe extern "C" fn(*mut c_char)>(&handle, "shmem_info_get_name") } {
        unsafe { f(vendor.as_mut_ptr() as *mut c_char) };
    }
    let vendor =
        std::ffi::CStr::from_bytes_until_nul(&vendor).map(|c| c.to_string_lossy().into_owned()).unwrap_or_default();
    let name =
        CString::new(if vendor.is_empty() { "host OpenSHMEM library".to_string() } else { vendor }).unwrap_or_default();
    // Our lock serializes every call, so SERIALIZED below is MULTIPLE above.
    let level = if provided >= abi::THREAD_SERIALIZED { abi::THREAD_MULTIPLE } else { provided };
    let proxy = Box::leak(Box::new(ShmemProxy {
        lib,
        regions: std::array::from_fn(|_| (AtomicUsize::new(0), AtomicUsize::new(0))),
        lock: (provided < abi::THREAD_MULTIPLE).then(|| Mutex::new(())),
        name,
    }));
    // The library stays loaded for the life of the process.
    std::mem::forget(handle);
    let ops = abi::ProxyOps {
        abi_version: abi::ABI_VERSION,
        rank: rank as u32,
        size: size as u32,
        thread_level: level,
        owns_runtime: 1,
        reserved: 0,
        ctx: proxy as *mut ShmemProxy as *mut c_void,
        name: proxy.name.as_ptr(),
        allgather: op_allgather,
        barrier: op_barrier,
        expose: op_expose,
        put: op_put,
        get: op_get,
        amo: op_amo,
        flush: op_flush,
        progress: op_progress,
        abort: op_abort,
        finalize: op_finalize,
        last_error: op_last_error,
        alloc: Some(op_alloc),
        self_progressing: proxy.lib.progress.is_none() as u32,
        reserved2: 0,
    };
    Ok((ops, path))
}

// The 64-bit fallbacks use the `long` and `unsigned long` names (LP64).
const _: () = assert!(std::mem::size_of::<std::ffi::c_long>() == 8);
