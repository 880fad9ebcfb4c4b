//! The CPU device backend's device side: an OpenCL runtime that consumes
//! SPIR-V (Intel's CPU runtime, found through the ICD loader), the device
//! library `ishmem_device.spv`, and linking user programs against it.
//!
//! OpenCL is loaded at run time through one function table (libloading);
//! programs that never ask for a device queue never load it. A load failure
//! lists every path tried. Verified facts about the runtime are in
//! `device-lib/README.md`.

use super::program_cache::{Key, ProgramCache};
use crate::dynlib::{symbol, LoadError, Open, Search};
use std::ffi::{c_char, c_void, CString};
use std::fmt;
use std::path::Path;
use std::ptr::null_mut;
use std::sync::Mutex;

type Handle = *mut c_void;
type Notify = *const c_void;

const CL_DEVICE_TYPE_CPU: u64 = 1 << 1;
const CL_PROGRAM_BUILD_LOG: u32 = 0x1183;
const CL_PROGRAM_BINARY_SIZES: u32 = 0x1165;
const CL_PROGRAM_BINARIES: u32 = 0x1166;
const CL_PLATFORM_VERSION: u32 = 0x0901;
const CL_PLATFORM_NAME: u32 = 0x0902;
const CL_DEVICE_NAME: u32 = 0x102B;
const CL_DRIVER_VERSION: u32 = 0x102D;
const CL_DEVICE_VERSION: u32 = 0x102F;

/// The OpenCL entry points the runtime uses.
struct Cl {
    _lib: libloading::Library,
    get_platform_ids: unsafe extern "C" fn(u32, *mut Handle, *mut u32) -> i32,
    get_device_ids: unsafe extern "C" fn(Handle, u64, u32, *mut Handle, *mut u32) -> i32,
    create_context: unsafe extern "C" fn(*const isize, u32, *const Handle, Notify, *mut c_void, *mut i32) -> Handle,
    create_queue: unsafe extern "C" fn(Handle, Handle, *const u64, *mut i32) -> Handle,
    create_program_with_il: unsafe extern "C" fn(Handle, *const c_void, usize, *mut i32) -> Handle,
    compile_program: unsafe extern "C" fn(
        Handle,
        u32,
        *const Handle,
        *const c_char,
        u32,
        *const Handle,
        *const *const c_char,
        Notify,
        *mut c_void,
    ) -> i32,
    link_program: unsafe extern "C" fn(
        Handle,
        u32,
        *const Handle,
        *const c_char,
        u32,
        *const Handle,
        Notify,
        *mut c_void,
        *mut i32,
    ) -> Handle,
    get_program_build_info: unsafe extern "C" fn(Handle, Handle, u32, usize, *mut c_void, *mut usize) -> i32,
    get_program_info: unsafe extern "C" fn(Handle, u32, usize, *mut c_void, *mut usize) -> i32,
    get_device_info: unsafe extern "C" fn(Handle, u32, usize, *mut c_void, *mut usize) -> i32,
    get_platform_info: unsafe extern "C" fn(Handle, u32, usize, *mut c_void, *mut usize) -> i32,
    create_program_with_binary:
        unsafe extern "C" fn(Handle, u32, *const Handle, *const usize, *const *const u8, *mut i32, *mut i32) -> Handle,
    build_program: unsafe extern "C" fn(Handle, u32, *const Handle, *const c_char, Notify, *mut c_void) -> i32,
    release_program: unsafe extern "C" fn(Handle) -> i32,
    create_kernel: unsafe extern "C" fn(Handle, *const c_char, *mut i32) -> Handle,
    set_kernel_arg_svm_pointer: unsafe extern "C" fn(Handle, u32, *const c_void) -> i32,
    set_kernel_arg: unsafe extern "C" fn(Handle, u32, usize, *const c_void) -> i32,
    enqueue_nd_range_kernel: unsafe extern "C" fn(
        Handle,
        Handle,
        u32,
        *const usize,
        *const usize,
        *const usize,
        u32,
        *const Handle,
        *mut Handle,
    ) -> i32,
    finish: unsafe extern "C" fn(Handle) -> i32,
    release_queue: unsafe extern "C" fn(Handle) -> i32,
    release_kernel: unsafe extern "C" fn(Handle) -> i32,
    wait_for_events: unsafe extern "C" fn(u32, *const Handle) -> i32,
    release_event: unsafe extern "C" fn(Handle) -> i32,
}

// SAFETY: OpenCL objects and entry points are thread-safe (OpenCL 1.1+),
// except kernels, which this module never shares between threads.
unsafe impl Send for Cl {}
// SAFETY: as above.
unsafe impl Sync for Cl {}

const LIB_NAMES: &[&str] = &["libOpenCL.so.1", "libOpenCL.so"];

impl Cl {
    /// Loads the ICD loader; the error names every path tried and why.
    fn load() -> Result<Cl, LoadError> {
        let mut search = Search::new(
            "an OpenCL runtime",
            "install an OpenCL ICD loader and a CPU runtime: Debian ocl-icd-libopencl1, PyPI intel-opencl-rt with OCL_ICD_FILENAMES=<venv>/lib/libintelocl.so",
        );
        for name in LIB_NAMES {
            let Some(lib) = search.open(name, Open::Local) else { continue };
            match Self::bind(lib) {
                Ok(cl) => return Ok(cl),
                Err(why) => search.unusable(name, why),
            }
        }
        Err(search.failed())
    }

    fn bind(lib: libloading::Library) -> Result<Cl, crate::dynlib::MissingSymbol> {
        macro_rules! sym {
            ($s:literal) => {
                // SAFETY: the symbol has the OpenCL signature declared in
                // the table's field type.
                unsafe { symbol(&lib, $s) }?
            };
        }
        Ok(Cl {
            get_platform_ids: sym!("clGetPlatformIDs"),
            get_device_ids: sym!("clGetDeviceIDs"),
            create_context: sym!("clCreateContext"),
            create_queue: sym!("clCreateCommandQueueWithProperties"),
            create_program_with_il: sym!("clCreateProgramWithIL"),
            compile_program: sym!("clCompileProgram"),
            link_program: sym!("clLinkProgram"),
            get_program_build_info: sym!("clGetProgramBuildInfo"),
            get_program_info: sym!("clGetProgramInfo"),
            get_device_info: sym!("clGetDeviceInfo"),
            get_platform_info: sym!("clGetPlatformInfo"),
            create_program_with_binary: sym!("clCreateProgramWithBinary"),
            build_program: sym!("clBuildProgram"),
            release_program: sym!("clReleaseProgram"),
            create_kernel: sym!("clCreateKernel"),
            set_kernel_arg_svm_pointer: sym!("clSetKernelArgSVMPointer"),
            set_kernel_arg: sym!("clSetKernelArg"),
            enqueue_nd_range_kernel: sym!("clEnqueueNDRangeKernel"),
            finish: sym!("clFinish"),
            release_queue: sym!("clReleaseCommandQueue"),
            release_kernel: sym!("clReleaseKernel"),
            wait_for_events: sym!("clWaitForEvents"),
            release_event: sym!("clReleaseEvent"),
            _lib: lib,
        })
    }
}

/// Where a program is built and its state installed: this PE's own
/// context and queue, or a program's own context (`link_in`: a SYCL
/// runtime's), with a queue made for the install.
#[derive(Clone, Copy)]
struct Target {
    context: Handle,
    device: Handle,
    queue: Handle,
}

/// An argument of a library kernel.
pub enum KernelArg {
    Svm(*const c_void),
    U64(u64),
    I32(i32),
}

/// This PE's device: context, queue, and the device library (compiled
/// when a program is linked that the cache does not hold).
pub struct ClDevice {
    cl: Cl,
    pub device: Handle,
    pub context: Handle,
    pub queue: Handle,
    library_spirv: Vec<u8>,
    /// The device library compiled, per context (this PE's own, and the
    /// contexts of `link_in`, which are on this PE's device). Each holds a
    /// reference to its context for the rest of the job.
    library: Mutex<Vec<(Handle, Handle)>>,
    /// The compiled-program cache (`ISHMEM_DEVICE_CACHE`), when usable.
    cache: Option<ProgramCache>,
    /// What a compiled program depends on besides its inputs: this
    /// library's version, the OpenCL platform, device and driver, and the
    /// runtime's `CL_CONFIG_*` settings.
    ident: Vec<u8>,
    /// The device library linked alone, with this PE's state installed:
    /// its kernels implement the on_queue routines. Kernel objects are not
    /// thread-safe, so launches hold this lock.
    on_queue: Mutex<Handle>,
}

// SAFETY: see `Cl`.
unsafe impl Send for ClDevice {}
// SAFETY: see `Cl`.
unsafe impl Sync for ClDevice {}

/// Where the device library is looked for: `explicit` (ISHMEM_DEVICE_LIB),
/// then `<dir of libishmem>/ishmem/ishmem_device.spv` (the installed layout).
fn library_paths(explicit: Option<&str>) -> Vec<std::path::PathBuf> {
    let mut v = Vec::new();
    if let Some(p) = explicit {
        v.push(p.into());
    }
    // SAFETY: dladdr on the address of one of our own functions.
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        if libc::dladdr(library_paths as *const c_void, &mut info) != 0 && !info.dli_fname.is_null() {
            let me = std::ffi::CStr::from_ptr(info.dli_fname).to_string_lossy().into_owned();
            if let Some(dir) = std::path::Path::new(&me).parent() {
                v.push(dir.join("ishmem/ishmem_device.spv"));
            }
        }
    }
    v
}

/// What failed in the OpenCL runtime (or in finding what it needs).
#[derive(Debug)]
pub enum ClError {
    /// The ICD loader did not load: every path tried.
    Load(LoadError),
    /// The ICD loader found no platform.
    NoPlatform,
    /// None of the `platforms` has a CPU device.
    NoCpuDevice { platforms: u32 },
    /// The device library's SPIR-V was not found: each path and why.
    NoLibrary { tried: Vec<String> },
    /// An entry point (`call`, with what it worked on) returned `code`.
    Call { call: String, code: i32 },
    /// A program was to be linked for another OpenCL device than this PE's.
    OtherDevice,
    /// Compiling or linking (`what`) failed with `code`; the build log.
    Build { what: String, code: i32, log: String },
}

impl fmt::Display for ClError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClError::Load(e) => e.fmt(f),
            ClError::NoPlatform => f.write_str(
                "no OpenCL platform is installed (the ICD loader found none; PyPI intel-opencl-rt provides a CPU one)",
            ),
            ClError::NoCpuDevice { platforms } => write!(
                f,
                "none of the {platforms} OpenCL platforms has a CPU device (the CPU device backend needs one that consumes SPIR-V, e.g. PyPI intel-opencl-rt)"
            ),
            ClError::NoLibrary { tried } => write!(
                f,
                "cannot find the device library ishmem_device.spv; tried {} (set ISHMEM_DEVICE_LIB)",
                tried.join("; ")
            ),
            ClError::Call { call, code } => write!(f, "{call} failed with OpenCL error {code}"),
            ClError::OtherDevice => f.write_str(
                "the program's device is not this PE's OpenCL device (the device library is linked for that one)",
            ),
            ClError::Build { what, code, log } => write!(f, "{what} failed (OpenCL error {code}):\n{log}"),
        }
    }
}

impl std::error::Error for ClError {}

/// The device library's SPIR-V, from the first of [`library_paths`] that
/// reads; the error names every path tried.
pub(super) fn read_library(explicit: Option<&str>) -> Result<Vec<u8>, ClError> {
    let mut tried = Vec::new();
    for p in library_paths(explicit) {
        match std::fs::read(&p) {
            Ok(b) => return Ok(b),
            Err(e) => tried.push(format!("{}: {e}", p.display())),
        }
    }
    Err(ClError::NoLibrary { tried })
}

fn check(call: impl Into<String>, code: i32) -> Result<(), ClError> {
    if code == 0 {
        Ok(())
    } else {
        Err(ClError::Call { call: call.into(), code })
    }
}

/// The first CPU device of the OpenCL platforms: (platform, device,
/// number of platforms).
///
/// # Safety
/// `cl` holds entry points of a loaded OpenCL library.
unsafe fn first_cpu_device(cl: &Cl) -> Result<(Handle, Handle, u32), ClError> {
    let mut n = 0u32;
    // SAFETY: OpenCL calls with valid out-pointers (the caller's contract).
    unsafe {
        check("clGetPlatformIDs", (cl.get_platform_ids)(0, null_mut(), &mut n))?;
        let mut platforms = vec![null_mut(); n as usize];
        check("clGetPlatformIDs", (cl.get_platform_ids)(n, platforms.as_mut_ptr(), null_mut()))?;
        for &p in &platforms {
            let mut d = null_mut();
            if (cl.get_device_ids)(p, CL_DEVICE_TYPE_CPU, 1, &mut d, null_mut()) == 0 {
                return Ok((p, d, n));
            }
        }
    }
    Err(ClError::NoCpuDevice { platforms: n })
}

/// Whether this machine has what the CPU device's kernels need: an OpenCL
/// platform with a CPU device. `Ok` says how many platforms there are;
/// `Err` says what is missing (for `ishmem-info`).
pub fn probe_cpu_platform() -> Result<String, ClError> {
    let cl = Cl::load().map_err(ClError::Load)?;
    let mut n = 0u32;
    // SAFETY: OpenCL calls with valid out-pointers on a loaded library.
    unsafe {
        // CL_PLATFORM_NOT_FOUND_KHR: the ICD loader found no platform.
        if (cl.get_platform_ids)(0, null_mut(), &mut n) == -1001 {
            return Err(ClError::NoPlatform);
        }
        let (_, _, n) = first_cpu_device(&cl)?;
        Ok(format!("an OpenCL CPU device is present ({n} OpenCL platform(s))"))
    }
}

impl ClDevice {
    /// Opens the first CPU device with the device library of `device_lib`
    /// (`ISHMEM_DEVICE_LIB`) and the program cache in `cache_dir`.
    pub(super) fn open(device_lib: Option<&str>, cache_dir: Option<&Path>) -> Result<ClDevice, ClError> {
        let cl = Cl::load().map_err(ClError::Load)?;
        let mut err = 0;
        // SAFETY: OpenCL calls with valid out-pointers throughout.
        unsafe {
            let (platform, device, _) = first_cpu_device(&cl)?;
            let context = (cl.create_context)(std::ptr::null(), 1, &device, std::ptr::null(), null_mut(), &mut err);
            check("clCreateContext", err)?;
            let queue = (cl.create_queue)(context, device, std::ptr::null(), &mut err);
            check("clCreateCommandQueueWithProperties", err)?;
            let library_spirv = read_library(device_lib)?;
            let mut ident = format!("ishmem-rs {}\n", env!("CARGO_PKG_VERSION")).into_bytes();
            for (obj, param, platform) in [
                (platform, CL_PLATFORM_NAME, true),
                (platform, CL_PLATFORM_VERSION, true),
                (device, CL_DEVICE_NAME, false),
                (device, CL_DEVICE_VERSION, false),
                (device, CL_DRIVER_VERSION, false),
            ] {
                ident.extend(info_string(&cl, obj, param, platform)?);
                ident.push(b'\n');
            }
            for (k, v) in crate::env::opencl_cpu_settings() {
                ident.extend_from_slice(k.as_encoded_bytes());
                ident.push(b'=');
                ident.extend_from_slice(v.as_encoded_bytes());
                ident.push(b'\n');
            }
            let cache = cache_dir.and_then(|d| match ProgramCache::open(d) {
                Ok(c) => Some(c),
                Err(why) => {
                    crate::error::warn(format_args!(
                        "the device program cache is not used: {why} (ISHMEM_DEVICE_CACHE names another, 0 turns it off)"
                    ));
                    None
                }
            });
            Ok(ClDevice {
                cl,
                device,
                context,
                queue,
                library_spirv,
                library: Mutex::new(Vec::new()),
                cache,
                ident,
                on_queue: Mutex::new(null_mut()),
            })
        }
    }

    /// The device library, compiled on first use.
    fn library(&self, t: Target) -> Result<Handle, ClError> {
        let mut libs = self.library.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&(_, lib)) = libs.iter().find(|(c, _)| *c == t.context) {
            return Ok(lib);
        }
        let lib = self.compile(t, &self.library_spirv, "the device library")?;
        libs.push((t.context, lib));
        Ok(lib)
    }

    fn own(&self) -> Target {
        Target { context: self.context, device: self.device, queue: self.queue }
    }

    fn log(&self, t: Target, program: Handle) -> String {
        let mut buf = vec![0u8; 1 << 16];
        let mut len = 0usize;
        // SAFETY: buffer and length out-pointer are valid.
        unsafe {
            (self.cl.get_program_build_info)(
                program,
                t.device,
                CL_PROGRAM_BUILD_LOG,
                buf.len(),
                buf.as_mut_ptr().cast(),
                &mut len,
            )
        };
        String::from_utf8_lossy(&buf[..len.min(buf.len())]).trim_end_matches('\0').trim().to_string()
    }

    fn compile(&self, t: Target, spirv: &[u8], what: &str) -> Result<Handle, ClError> {
        let mut err = 0;
        // SAFETY: valid context, buffer and out-pointers.
        unsafe {
            let p = (self.cl.create_program_with_il)(t.context, spirv.as_ptr().cast(), spirv.len(), &mut err);
            check(format!("clCreateProgramWithIL of {what}"), err)?;
            let opts = CString::new("").unwrap();
            let e = (self.cl.compile_program)(
                p,
                1,
                &t.device,
                opts.as_ptr(),
                0,
                std::ptr::null(),
                std::ptr::null(),
                std::ptr::null(),
                null_mut(),
            );
            if e != 0 {
                return Err(ClError::Build { what: format!("compiling {what}"), code: e, log: self.log(t, p) });
            }
            Ok(p)
        }
    }

    /// Compiles a user program (SPIR-V), links it with the device library
    /// and installs this PE's device state in it. Returns the cl_program.
    pub fn link(&self, spirv: &[u8], state: *const c_void) -> Result<Handle, ClError> {
        let t = self.own();
        let linked = self.cached(t, Some(spirv))?;
        self.install_state(t, linked, state)?;
        Ok(linked)
    }

    /// As `link`, in another OpenCL context on this PE's device (a SYCL
    /// runtime's, `ishmemx_cl_link_program_in`): the program is built
    /// there, and the state installed through a queue made for it.
    pub fn link_in(
        &self, context: Handle, device: Handle, spirv: &[u8], state: *const c_void,
    ) -> Result<Handle, ClError> {
        if device != self.device {
            // The library's compiled forms and the program cache are this
            // device's (its identity is in the cache key).
            return Err(ClError::OtherDevice);
        }
        let mut err = 0;
        // SAFETY: the caller's context and device (checked by the runtime
        // that made them); the queue is released below.
        let queue = unsafe { (self.cl.create_queue)(context, device, std::ptr::null(), &mut err) };
        check("clCreateCommandQueueWithProperties in the program's context", err)?;
        let t = Target { context, device, queue };
        let r = self.cached(t, Some(spirv)).and_then(|linked| self.install_state(t, linked, state).map(|_| linked));
        // SAFETY: the queue made above, idle after install_state's clFinish.
        unsafe { (self.cl.release_queue)(queue) };
        r
    }

    /// The device library linked with the user program `user` (or alone):
    /// from the program cache when it holds the binary, else compiled,
    /// linked and stored there. PEs missing at once wait for the first to
    /// store it.
    fn cached(&self, t: Target, user: Option<&[u8]>) -> Result<Handle, ClError> {
        let key = Key::of(&[&self.ident, user.unwrap_or(b"(library alone)"), &self.library_spirv]);
        let Some(cache) = &self.cache else { return self.compile_and_link(t, user) };
        if let Some(p) = cache.get(key).and_then(|b| self.load_binary(t, &b)) {
            return Ok(p);
        }
        let _lock = cache.lock(key);
        if let Some(p) = cache.get(key).and_then(|b| self.load_binary(t, &b)) {
            return Ok(p);
        }
        let linked = self.compile_and_link(t, user)?;
        if let Some(b) = self.binary(linked) {
            cache.put(key, &b);
        }
        Ok(linked)
    }

    fn compile_and_link(&self, t: Target, user: Option<&[u8]>) -> Result<Handle, ClError> {
        let library = self.library(t)?;
        match user {
            Some(spirv) => {
                let p = self.compile(t, spirv, "the program")?;
                let linked = self.link_programs(t, &[p, library]);
                // SAFETY: a program this function created; the link holds what it needs.
                unsafe { (self.cl.release_program)(p) };
                linked
            }
            None => self.link_programs(t, &[library]),
        }
    }

    /// The executable binary of linked program `p` (one device).
    fn binary(&self, p: Handle) -> Option<Vec<u8>> {
        let mut size = 0usize;
        // SAFETY: valid program; out-pointers sized for one device.
        unsafe {
            if (self.cl.get_program_info)(p, CL_PROGRAM_BINARY_SIZES, 8, (&mut size as *mut usize).cast(), null_mut())
                != 0
                || size == 0
            {
                return None;
            }
            let mut buf = vec![0u8; size];
            let mut ptr = buf.as_mut_ptr();
            if (self.cl.get_program_info)(p, CL_PROGRAM_BINARIES, 8, (&mut ptr as *mut *mut u8).cast(), null_mut()) != 0
            {
                return None;
            }
            Some(buf)
        }
    }

    /// A program built from a cached binary; `None` when the runtime
    /// refuses it (then the caller compiles).
    fn load_binary(&self, t: Target, b: &[u8]) -> Option<Handle> {
        let (mut status, mut err) = (0, 0);
        let len = b.len();
        let ptr = b.as_ptr();
        // SAFETY: valid context and device; the binary outlives the calls.
        unsafe {
            let p = (self.cl.create_program_with_binary)(t.context, 1, &t.device, &len, &ptr, &mut status, &mut err);
            if err != 0 || status != 0 || p.is_null() {
                return None;
            }
            let opts = CString::new("").unwrap();
            if (self.cl.build_program)(p, 1, &t.device, opts.as_ptr(), std::ptr::null(), null_mut()) != 0 {
                (self.cl.release_program)(p);
                return None;
            }
            Some(p)
        }
    }

    /// Enqueues library kernel `name` (one work-item) on `queue` after
    /// `deps`, with `args`; returns the event.
    pub fn enqueue(
        &self, queue: Handle, name: &str, args: &[KernelArg], deps: &[Handle], state: *const c_void,
    ) -> Result<Handle, ClError> {
        let mut prog = self.on_queue.lock().unwrap_or_else(|e| e.into_inner());
        if prog.is_null() {
            let p = self.cached(self.own(), None)?;
            self.install_state(self.own(), p, state)?;
            *prog = p;
        }
        let mut err = 0;
        let cname = CString::new(name).unwrap();
        // SAFETY: valid program/queue; args outlive the calls (values are
        // copied by clSetKernelArg).
        unsafe {
            let k = (self.cl.create_kernel)(*prog, cname.as_ptr(), &mut err);
            check(format!("clCreateKernel({name})"), err)?;
            for (i, arg) in args.iter().enumerate() {
                let r = match arg {
                    KernelArg::Svm(p) => (self.cl.set_kernel_arg_svm_pointer)(k, i as u32, *p),
                    KernelArg::U64(v) => (self.cl.set_kernel_arg)(k, i as u32, 8, v as *const u64 as *const c_void),
                    KernelArg::I32(v) => (self.cl.set_kernel_arg)(k, i as u32, 4, v as *const i32 as *const c_void),
                };
                if r != 0 {
                    (self.cl.release_kernel)(k);
                    return Err(ClError::Call { call: format!("clSetKernelArg {i} of {name}"), code: r });
                }
            }
            let one = 1usize;
            let mut ev: Handle = null_mut();
            let r = (self.cl.enqueue_nd_range_kernel)(
                queue,
                k,
                1,
                std::ptr::null(),
                &one,
                &one,
                deps.len() as u32,
                if deps.is_empty() { std::ptr::null() } else { deps.as_ptr() },
                &mut ev,
            );
            (self.cl.release_kernel)(k);
            check(format!("enqueueing {name}"), r)?;
            Ok(ev)
        }
    }

    /// Waits until every event of `events` is complete, then releases them.
    pub fn wait(&self, events: &[Handle]) -> Result<(), ClError> {
        if events.is_empty() {
            return Ok(());
        }
        // SAFETY: the events are live events of this context (the caller's
        // contract), each released once here.
        unsafe {
            let r = (self.cl.wait_for_events)(events.len() as u32, events.as_ptr());
            for &e in events {
                (self.cl.release_event)(e);
            }
            check("clWaitForEvents", r)
        }
    }

    fn link_programs(&self, t: Target, progs: &[Handle]) -> Result<Handle, ClError> {
        let mut err = 0;
        // SAFETY: valid objects and out-pointers.
        unsafe {
            let opts = CString::new("").unwrap();
            let linked = (self.cl.link_program)(
                t.context,
                1,
                &t.device,
                opts.as_ptr(),
                progs.len() as u32,
                progs.as_ptr(),
                std::ptr::null(),
                null_mut(),
                &mut err,
            );
            if err != 0 || linked.is_null() {
                return Err(ClError::Build {
                    what: "linking with the device library".into(),
                    code: err,
                    log: self.log(t, progs[0]),
                });
            }
            Ok(linked)
        }
    }

    /// Runs the library's `ishmemi_install_state` in linked program `linked`
    /// with this PE's device state.
    fn install_state(&self, t: Target, linked: Handle, state: *const c_void) -> Result<(), ClError> {
        let mut err = 0;
        // SAFETY: a valid linked program; the state outlives the program.
        unsafe {
            let name = CString::new("ishmemi_install_state").unwrap();
            let k = (self.cl.create_kernel)(linked, name.as_ptr(), &mut err);
            check("clCreateKernel(ishmemi_install_state)", err)?;
            check("clSetKernelArgSVMPointer", (self.cl.set_kernel_arg_svm_pointer)(k, 0, state))?;
            let one = 1usize;
            let r = (self.cl.enqueue_nd_range_kernel)(
                t.queue,
                k,
                1,
                std::ptr::null(),
                &one,
                &one,
                0,
                std::ptr::null(),
                null_mut(),
            );
            (self.cl.release_kernel)(k);
            check("installing the device state", r)?;
            check("clFinish", (self.cl.finish)(t.queue))
        }
    }
}

/// A string property of an OpenCL platform (`platform`) or device.
fn info_string(cl: &Cl, obj: Handle, param: u32, platform: bool) -> Result<Vec<u8>, ClError> {
    let get = if platform { cl.get_platform_info } else { cl.get_device_info };
    let mut len = 0usize;
    // SAFETY: valid object; the first call asks for the size.
    unsafe {
        check("clGet*Info", get(obj, param, 0, null_mut(), &mut len))?;
        let mut buf = vec![0u8; len];
        check("clGet*Info", get(obj, param, len, buf.as_mut_ptr().cast(), null_mut()))?;
        while buf.last() == Some(&0) {
            buf.pop();
        }
        Ok(buf)
    }
}
