//! The proxy: how this PE reaches PEs it cannot map (PEs on other nodes, or
//! every other PE with `ISHMEM_ENABLE_SHM=0`), and how a job that no
//! `ishmrun` started bootstraps.
//!
//! A proxy is a plugin loaded at run time through one function table
//! ([`ishmem_proxy_abi::ProxyOps`]); `libishmem` links no MPI. The MPI-3 RMA
//! proxy (`proxy-oshmpi`) is built once per MPI ABI family
//! (`libishmem_proxy_oshmpi-openmpi.so`, `libishmem_proxy_oshmpi-mpich.so`,
//! the latter also serving MPICH-ABI libraries such as Intel MPI and
//! MVAPICH); [`Proxy::load`] picks the one matching the MPI in use and
//! reports every path it tried when none loads.
//!
//! Threads: MPI's thread level decides who may call the plugin. With
//! `MPI_THREAD_MULTIPLE`, or when the plugin initialized MPI itself with at
//! least `MPI_THREAD_SERIALIZED` (the plugin serializes its own calls), any
//! thread may, and a progress thread serves other PEs' requests while this
//! PE computes. Otherwise (an application that owns MPI at `FUNNELED` or
//! `SERIALIZED`) only the thread that initialized the library may; another
//! thread that needs a remote PE gets a clear error, and requests from
//! other PEs are served whenever that thread is inside the library.

use crate::error::fatal;
use ishmem_proxy_abi as abi;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::thread::ThreadId;

/// A loaded proxy plugin.
pub struct Proxy {
    ops: abi::ProxyOps,
    path: PathBuf,
    kind: &'static str,
    /// Every thread may call the plugin (see the module docs).
    any_thread: bool,
    init_thread: ThreadId,
    pub rank: usize,
    pub size: usize,
    progress_stop: AtomicBool,
    progress_thread: std::sync::Mutex<Option<std::thread::JoinHandle<()>>>,
}

// SAFETY: the plugin's functions are thread-safe under the rules above
// (enforced by `check_thread`); ctx is only passed back to them.
unsafe impl Send for Proxy {}
// SAFETY: as above.
unsafe impl Sync for Proxy {}

/// The proxy of the running job (for wait loops and job abort).
static CURRENT: AtomicPtr<Proxy> = AtomicPtr::new(std::ptr::null_mut());

thread_local! {
    /// This thread is inside a call into the plugin.
    static IN_CALL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// True while this thread is inside the plugin (where an MPI library may
/// call `exit`, e.g. when another process aborted the job).
pub fn in_plugin_call() -> bool {
    IN_CALL.with(|c| c.get())
}

/// Marks this thread as inside the plugin until dropped.
struct InCall(bool);
impl InCall {
    #[inline]
    fn enter() -> InCall {
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

/// MPI ABI families a plugin is built for.
const FLAVORS: [&str; 2] = ["openmpi", "mpich"];

/// The MPI ABI family in use: from the MPI library already loaded into the
/// process (an application that linked MPI), else from the launcher's
/// environment. `None`: unknown (try every family).
fn detect_flavor() -> Option<&'static str> {
    type GetVersion = unsafe extern "C" fn(*mut c_char, *mut c_int) -> c_int;
    // SAFETY: dlsym on the global scope with a NUL-terminated name.
    let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"MPI_Get_library_version".as_ptr()) };
    if !f.is_null() {
        // SAFETY: the symbol is MPI's, with the standard signature; MPI
        // allows it before MPI_Init. The buffer exceeds every MPI's maximum.
        let s = unsafe {
            let g: GetVersion = std::mem::transmute(f);
            let mut buf = vec![0u8; 8192];
            let mut len = 0;
            g(buf.as_mut_ptr() as *mut c_char, &mut len);
            buf.truncate(len.clamp(0, 8192) as usize);
            String::from_utf8_lossy(&buf).to_string()
        };
        if s.contains("Open MPI") {
            return Some("openmpi");
        }
        if ["MPICH", "Intel(R) MPI", "MVAPICH", "CRAY MPICH"].iter().any(|m| s.contains(m)) {
            return Some("mpich");
        }
    }
    let has = |v: &str| std::env::var_os(v).is_some();
    if has("OMPI_COMM_WORLD_SIZE") || has("OMPI_UNIVERSE_SIZE") {
        return Some("openmpi");
    }
    if has("PMI_RANK") || has("PMI_SIZE") || has("MPI_LOCALNRANKS") || has("HYDI_CONTROL_FD") {
        return Some("mpich");
    }
    None
}

/// True when the environment looks like an MPI launcher started us.
pub fn launched_by_mpi() -> bool {
    ["OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"]
        .iter()
        .any(|v| std::env::var_os(v).is_some())
}

/// Directories searched for plugins: beside the library holding this code
/// (libishmem.so, or the executable when linked statically), in its
/// `ishmem/` subdirectory first, then beside the executable, then
/// `$ISHMEM_ROOT/lib/ishmem`.
fn plugin_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    // SAFETY: dladdr on the address of one of our own functions.
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        if libc::dladdr(plugin_dirs as *const c_void, &mut info) != 0 && !info.dli_fname.is_null() {
            let me = CStr::from_ptr(info.dli_fname).to_string_lossy().into_owned();
            let me = std::fs::canonicalize(&me).unwrap_or_else(|_| PathBuf::from(me));
            if let Some(d) = me.parent() {
                dirs.push(d.join("ishmem"));
                dirs.push(d.to_path_buf());
                dirs.push(d.join("../lib/ishmem"));
            }
        }
    }
    if let Ok(exe) = std::env::current_exe() {
        if let Some(d) = exe.parent() {
            // `../ishmem`: cargo's examples/ and deps/ beside target/<profile>/ishmem.
            for p in [d.join("ishmem"), d.to_path_buf(), d.join("../lib/ishmem"), d.join("../ishmem")] {
                if !dirs.contains(&p) {
                    dirs.push(p);
                }
            }
        }
    }
    // The installation the module files point at (a static link has no
    // library file to look beside).
    if let Some(root) = std::env::var_os("ISHMEM_ROOT").filter(|r| !r.is_empty()) {
        let p = PathBuf::from(root).join("lib/ishmem");
        if !dirs.contains(&p) {
            dirs.push(p);
        }
    }
    dirs
}

/// File name of the MPI proxy plugin for MPI family `flavor`.
fn plugin_file(flavor: &str) -> String {
    format!("libishmem_proxy_oshmpi-{flavor}.so")
}

fn candidate_paths(explicit: Option<&str>) -> Vec<PathBuf> {
    if let Some(p) = explicit.filter(|p| !p.is_empty()) {
        return vec![PathBuf::from(p)];
    }
    let flavors: Vec<&str> = match detect_flavor() {
        Some(f) => vec![f],
        None => FLAVORS.to_vec(),
    };
    let mut v = Vec::new();
    for d in plugin_dirs() {
        for f in &flavors {
            v.push(d.join(plugin_file(f)));
        }
    }
    v
}

/// The MPI proxy plugins this installation has, for `ishmem-info`: every
/// flavor's file found in the directories `Proxy::load` searches.
pub fn installed_plugins() -> Vec<PathBuf> {
    let mut found = Vec::new();
    for d in plugin_dirs() {
        for f in FLAVORS {
            let p = d.join(plugin_file(f));
            if p.is_file() {
                let p = std::fs::canonicalize(&p).unwrap_or(p);
                if !found.contains(&p) {
                    found.push(p);
                }
            }
        }
    }
    found
}

impl Proxy {
    /// Loads and initializes the MPI proxy: `explicit` (ISHMEM_MPI_PROXY) or
    /// the plugin for the MPI in use. `app_comm` points to the
    /// application's `MPI_Comm` when it owns MPI.
    pub fn load(explicit: Option<&str>, app_comm: *const c_void, requested_thread: c_int) -> Result<Proxy, String> {
        let mut tried = Vec::new();
        for path in candidate_paths(explicit) {
            if !path.exists() {
                tried.push(format!("{} (no such file)", path.display()));
                continue;
            }
            // SAFETY: loading our own plugin; its initializers only set up
            // the MPI library it links.
            let lib = match unsafe { libloading::Library::new(&path) } {
                Ok(l) => l,
                Err(e) => {
                    tried.push(format!("{} ({e})", path.display()));
                    continue;
                }
            };
            // SAFETY: the symbol has the ABI's init signature.
            let init: abi::ProxyInitFn = match unsafe { lib.get::<abi::ProxyInitFn>(abi::INIT_SYMBOL) } {
                Ok(f) => *f,
                Err(e) => {
                    tried.push(format!("{} (not a proxy plugin: {e})", path.display()));
                    continue;
                }
            };
            let mut err = vec![0u8; 2048];
            let args = abi::ProxyInitArgs {
                abi_version: abi::ABI_VERSION,
                flags: 0,
                app_comm,
                requested_thread,
                err: err.as_mut_ptr() as *mut c_char,
                err_len: err.len(),
            };
            let mut ops = std::mem::MaybeUninit::<abi::ProxyOps>::uninit();
            let _in = InCall::enter();
            // SAFETY: valid pointers for the duration of the call.
            let rc = unsafe { init(&args, ops.as_mut_ptr()) };
            if rc != 0 {
                let msg =
                    CStr::from_bytes_until_nul(&err).map(|c| c.to_string_lossy().into_owned()).unwrap_or_default();
                return Err(format!("the MPI proxy {} failed to initialize: {msg}", path.display()));
            }
            // SAFETY: init returned 0, so it filled the table.
            let ops = unsafe { ops.assume_init() };
            if ops.abi_version != abi::ABI_VERSION {
                return Err(format!(
                    "{} speaks proxy ABI {}, this library {}",
                    path.display(),
                    ops.abi_version,
                    abi::ABI_VERSION
                ));
            }
            // The MPI library stays loaded for the life of the process.
            std::mem::forget(lib);
            return Ok(Proxy::from_ops(ops, path, "MPI proxy"));
        }
        Err(format!(
            "cannot load the MPI proxy plugin (build it with proxy-oshmpi/build-plugins.sh, or set ISHMEM_MPI_PROXY); tried:\n    {}",
            tried.join("\n    ")
        ))
    }

    /// Loads and starts a host OpenSHMEM library as the proxy
    /// (`ISHMEM_RUNTIME=OPENSHMEM`; see shmem_proxy.rs). `need(n_pes)` is
    /// the symmetric memory the core will allocate through it.
    pub fn load_openshmem(
        lib_name: Option<&str>, requested_thread: c_int, need: &dyn Fn(usize) -> usize,
    ) -> Result<Proxy, String> {
        let _in = InCall::enter();
        let (ops, path) = crate::shmem_proxy::load(lib_name, requested_thread, need)?;
        Ok(Proxy::from_ops(ops, PathBuf::from(path), "OpenSHMEM proxy"))
    }

    fn from_ops(ops: abi::ProxyOps, path: PathBuf, kind: &'static str) -> Proxy {
        let any_thread = ops.thread_level == abi::THREAD_MULTIPLE
            || (ops.owns_runtime != 0 && ops.thread_level >= abi::THREAD_SERIALIZED);
        Proxy {
            ops,
            path,
            kind,
            any_thread,
            init_thread: std::thread::current().id(),
            rank: ops.rank as usize,
            size: ops.size as usize,
            progress_stop: AtomicBool::new(false),
            progress_thread: std::sync::Mutex::new(None),
        }
    }

    /// True when the proxy provides the job's symmetric memory (`alloc`):
    /// the core then allocates its heap and control segment through it.
    pub fn provides_memory(&self) -> bool {
        self.ops.alloc.is_some()
    }

    /// Collective: `size` bytes aligned to `align` of memory the proxy can
    /// reach on every PE (only when [`Proxy::provides_memory`]).
    pub fn alloc(&self, call: &str, size: usize, align: usize) -> Result<*mut u8, String> {
        let _in = InCall::enter();
        let f = self.ops.alloc.ok_or_else(|| format!("{} provides no memory", self.kind))?;
        let mut out: *mut c_void = std::ptr::null_mut();
        // SAFETY: out is writable; the proxy returns memory it keeps until finalize.
        if unsafe { f(self.ops.ctx, size, align, &mut out) } != 0 || out.is_null() {
            // SAFETY: last_error returns a NUL-terminated string of this thread.
            let e = unsafe { CStr::from_ptr((self.ops.last_error)(self.ops.ctx)) }.to_string_lossy().into_owned();
            return Err(format!("{call}: {e}"));
        }
        Ok(out as *mut u8)
    }

    /// Which proxy this is, for messages ("MPI proxy", "OpenSHMEM proxy").
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// Description for reports: the plugin and the MPI library.
    pub fn describe(&self) -> String {
        // SAFETY: the plugin's name is a static NUL-terminated string.
        let name = unsafe { CStr::from_ptr(self.ops.name) }.to_string_lossy();
        format!("{name} via {}", self.path.display())
    }

    /// The thread level of the MPI below, as OpenSHMEM's `SHMEM_THREAD_*`.
    pub fn thread_level(&self) -> c_int {
        self.ops.thread_level
    }

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
                    [self.ops.thread_level.clamp(0, 3) as usize]
            ),
        )
    }

    #[cold]
    #[inline(never)]
    fn failed(&self, call: &str, what: std::fmt::Arguments<'_>) -> ! {
        // SAFETY: last_error returns a NUL-terminated string of this thread.
        let e = unsafe { CStr::from_ptr((self.ops.last_error)(self.ops.ctx)) }.to_string_lossy().into_owned();
        fatal(call, format_args!("{}: {what}: {e}", self.kind))
    }

    /// Collective over the job: all ranks' `mine` concatenated in rank order.
    pub fn allgather(&self, call: &str, mine: &[u8]) -> Vec<u8> {
        let _in = InCall::enter();
        let mut all = vec![0u8; mine.len() * self.size];
        // SAFETY: buffers sized as the ABI requires.
        let rc = unsafe {
            (self.ops.allgather)(
                self.ops.ctx,
                mine.as_ptr() as *const c_void,
                all.as_mut_ptr() as *mut c_void,
                mine.len(),
            )
        };
        if rc != 0 {
            self.failed(call, format_args!("allgather"))
        }
        all
    }

    pub fn barrier(&self, call: &str) {
        let _in = InCall::enter();
        // SAFETY: plain call on the plugin's context.
        if unsafe { (self.ops.barrier)(self.ops.ctx) } != 0 {
            self.failed(call, format_args!("barrier"))
        }
    }

    /// Collective: exposes `size` bytes at `base` as `region`.
    pub fn expose(&self, call: &str, region: u32, base: *mut u8, size: usize) {
        let _in = InCall::enter();
        // SAFETY: the core keeps the memory mapped until `finalize`.
        if unsafe { (self.ops.expose)(self.ops.ctx, region, base as *mut c_void, size) } != 0 {
            self.failed(call, format_args!("exposing region {region} ({size} bytes)"))
        }
    }

    /// # Safety
    /// `src` is valid for `len` bytes (until the next flush with `nbi`);
    /// `offset + len` lies inside `region` on `pe`.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn put(&self, call: &str, region: u32, pe: usize, offset: usize, src: *const u8, len: usize, nbi: bool) {
        let _in = InCall::enter();
        self.check_thread(call);
        let flags = if nbi { abi::FLAG_NBI } else { 0 };
        if (self.ops.put)(self.ops.ctx, region, pe as u32, offset, src as *const c_void, len, flags) != 0 {
            self.failed(call, format_args!("put of {len} bytes to PE {pe}"))
        }
    }

    /// # Safety
    /// `dst` is valid for `len` bytes (until the next flush with `nbi`);
    /// `offset + len` lies inside `region` on `pe`.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn get(&self, call: &str, region: u32, pe: usize, offset: usize, dst: *mut u8, len: usize, nbi: bool) {
        let _in = InCall::enter();
        self.check_thread(call);
        let flags = if nbi { abi::FLAG_NBI } else { 0 };
        if (self.ops.get)(self.ops.ctx, region, pe as u32, offset, dst as *mut c_void, len, flags) != 0 {
            self.failed(call, format_args!("get of {len} bytes from PE {pe}"))
        }
    }

    /// An AMO at `offset` of `region` on `pe`; with `nbi` the result is not
    /// waited for (0 is returned) and the operation completes by `flush`.
    #[allow(clippy::too_many_arguments)]
    pub fn amo(
        &self, call: &str, region: u32, pe: usize, offset: usize, size: usize, op: u32, operand: u64, cond: u64,
        nbi: bool,
    ) -> u64 {
        let _in = InCall::enter();
        self.check_thread(call);
        let mut old = 0u64;
        let flags = if nbi { abi::FLAG_NBI } else { 0 };
        // The plugin waits for the answer (serving others meanwhile).
        let _w = (!nbi).then(crate::wait::Waiting::enter);
        // SAFETY: the core checked offset and alignment; old is writable.
        let rc = unsafe {
            (self.ops.amo)(self.ops.ctx, region, pe as u32, offset, size as u32, op, operand, cond, &mut old, flags)
        };
        if rc != 0 {
            self.failed(call, format_args!("atomic operation on PE {pe}"))
        }
        old
    }

    /// Completes every operation issued to `pe` (`None`: to every PE).
    pub fn flush(&self, call: &str, pe: Option<usize>) {
        let _in = InCall::enter();
        let _w = crate::wait::Waiting::enter();
        self.check_thread(call);
        // SAFETY: plain call.
        if unsafe { (self.ops.flush)(self.ops.ctx, pe.map_or(-1, |p| p as c_int)) } != 0 {
            self.failed(call, format_args!("completing outstanding operations"))
        }
    }

    /// Serves other PEs' requests; a no-op on threads that may not call MPI.
    #[inline]
    pub fn progress(&self) -> c_int {
        if !self.any_thread && std::thread::current().id() != self.init_thread {
            return 0;
        }
        let _in = InCall::enter();
        // SAFETY: plain call.
        let n = unsafe { (self.ops.progress)(self.ops.ctx) };
        if n < 0 {
            self.failed("ishmem progress", format_args!("serving requests"))
        }
        n
    }

    /// Makes this the job's proxy for wait loops and abort, and starts the
    /// progress thread when allowed and enabled.
    pub fn install(&'static self, progress_thread: bool) {
        self.install_abort();
        crate::wait::set_progress(Some(progress_hook));
        if progress_thread && self.any_thread && self.ops.self_progressing == 0 {
            let h = std::thread::Builder::new()
                .name("ishmem-progress".into())
                .spawn(move || self.progress_loop())
                .expect("spawn the progress thread");
            *self.progress_thread.lock().unwrap_or_else(|e| e.into_inner()) = Some(h);
        }
    }

    /// Makes a fatal error on this PE end the whole job through MPI_Abort.
    pub fn install_abort(&'static self) {
        CURRENT.store(self as *const Proxy as *mut Proxy, Ordering::Release);
        crate::error::set_abort_hook(Some(abort_hook));
    }

    /// Polls the plugin while idle: spins while requests keep arriving, then
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
    /// and finalizes MPI if the plugin initialized it.
    pub fn finalize(&self) {
        let _in = InCall::enter();
        self.progress_stop.store(true, Ordering::Release);
        if let Some(h) = self.progress_thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = h.join();
        }
        crate::wait::set_progress(None);
        crate::error::set_abort_hook(None);
        CURRENT.store(std::ptr::null_mut(), Ordering::Release);
        // SAFETY: last call on the context.
        if unsafe { (self.ops.finalize)(self.ops.ctx) } != 0 {
            self.failed("ishmem_finalize", format_args!("finalize"))
        }
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
        // SAFETY: abort may be called from any thread at any time.
        unsafe { (p.ops.abort)(p.ops.ctx, code) };
    }
}
