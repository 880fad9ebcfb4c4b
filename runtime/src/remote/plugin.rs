//! The MPI proxy plugin: a shared object built once per MPI ABI family
//! (`libishmem_proxy_oshmpi-openmpi.so`, `libishmem_proxy_oshmpi-mpich.so`,
//! the latter also serving MPICH-ABI libraries such as Intel MPI and
//! MVAPICH), loaded at run time. [`load`] picks the one matching the MPI in
//! use and reports every path it tried when none loads.
//!
//! This is the only module that crosses the plugin's C function table
//! ([`ishmem_proxy_abi::ProxyOps`]): [`PluginRemote`] turns it into the
//! [`RemoteOps`] trait, with a typed error built from the plugin's
//! `last_error` on every failure.

use super::{Region, RegionAccess, RemoteAddr, RemoteError, RemoteOps, Strides};
use crate::dynlib::{Open, Search};
use crate::env::{self, MpiFamily};
use crate::types::{Amo, AmoOp};
use ishmem_proxy_abi as abi;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::path::PathBuf;

/// A loaded, initialized MPI proxy plugin.
pub struct PluginRemote {
    ops: abi::ProxyOps,
    path: PathBuf,
}

// SAFETY: the plugin's functions are thread-safe under the thread rules the
// `Remote` wrapper enforces; ctx is only passed back to them.
unsafe impl Send for PluginRemote {}
// SAFETY: as above.
unsafe impl Sync for PluginRemote {}

/// Every MPI family a plugin is built for, with its file-name suffix.
const FAMILIES: [(MpiFamily, &str); 2] = [(MpiFamily::OpenMpi, "openmpi"), (MpiFamily::Mpich, "mpich")];

/// The MPI ABI family in use: from the MPI library already loaded into the
/// process (an application that linked MPI), else from the launcher's
/// environment. `None`: unknown (try every family).
fn detect_family() -> Option<MpiFamily> {
    type GetVersion = unsafe extern "C" fn(*mut c_char, *mut c_int) -> c_int;
    // SAFETY: dlsym on the global scope with a NUL-terminated name.
    let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"MPI_Get_library_version".as_ptr()) };
    if !f.is_null() {
        // SAFETY: the symbol is MPI's, with the standard signature; MPI
        // allows it before MPI_Init. The buffer exceeds every MPI's maximum.
        let s = unsafe {
            let g: GetVersion = std::mem::transmute::<*mut c_void, GetVersion>(f);
            let mut buf = vec![0u8; 8192];
            let mut len = 0;
            g(buf.as_mut_ptr() as *mut c_char, &mut len);
            buf.truncate(len.clamp(0, 8192) as usize);
            String::from_utf8_lossy(&buf).to_string()
        };
        if s.contains("Open MPI") {
            return Some(MpiFamily::OpenMpi);
        }
        if ["MPICH", "Intel(R) MPI", "MVAPICH", "CRAY MPICH"].iter().any(|m| s.contains(m)) {
            return Some(MpiFamily::Mpich);
        }
    }
    env::mpi_launcher_family()
}

/// Directories searched for plugins, in order: the installation's own
/// plugin directory, `ishmem/` beside the shared library holding this code
/// (found with `dladdr`: `<prefix>/lib/ishmem`, or `target/<profile>/ishmem`
/// in a build tree), then `$ISHMEM_ROOT/lib/ishmem`. Never the executable's
/// directory: a program in a directory others can write (a statically
/// linked one in /tmp) must not load a plugin planted beside it. A program
/// linked statically has no library file, so it finds plugins through
/// `ISHMEM_ROOT` (set by the module files) or `ISHMEM_MPI_PROXY`.
fn plugin_dirs(root: Option<&str>) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    // SAFETY: dladdr on the address of one of our own functions.
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        if libc::dladdr(plugin_dirs as *const c_void, &mut info) != 0 && !info.dli_fname.is_null() {
            let me = CStr::from_ptr(info.dli_fname).to_string_lossy().into_owned();
            let me = std::fs::canonicalize(&me).unwrap_or_else(|_| PathBuf::from(me));
            let exe = std::env::current_exe().ok().and_then(|e| std::fs::canonicalize(e).ok());
            if exe.as_deref() != Some(me.as_path()) {
                if let Some(d) = me.parent() {
                    dirs.push(d.join("ishmem"));
                }
            }
        }
    }
    // The installation the module files point at.
    if let Some(root) = root.filter(|r| !r.is_empty()) {
        let p = PathBuf::from(root).join("lib/ishmem");
        if !dirs.contains(&p) {
            dirs.push(p);
        }
    }
    dirs
}

/// File name of the MPI proxy plugin for MPI family suffix `family`.
fn plugin_file(family: &str) -> String {
    format!("libishmem_proxy_oshmpi-{family}.so")
}

/// The plugin files to try: `explicit` (`ISHMEM_MPI_PROXY`, a file, or a
/// directory holding the family's file) alone when given, else the
/// family's file in each of [`plugin_dirs`].
fn candidate_paths(explicit: Option<&str>, root: Option<&str>) -> Vec<PathBuf> {
    let families: Vec<&str> = match detect_family() {
        Some(f) => FAMILIES.iter().filter(|(k, _)| *k == f).map(|(_, s)| *s).collect(),
        None => FAMILIES.iter().map(|(_, s)| *s).collect(),
    };
    let dirs = match explicit.filter(|p| !p.is_empty()) {
        Some(p) if !std::path::Path::new(p).is_dir() => return vec![PathBuf::from(p)],
        Some(p) => vec![PathBuf::from(p)],
        None => plugin_dirs(root),
    };
    let mut v = Vec::new();
    for d in dirs {
        for f in &families {
            v.push(d.join(plugin_file(f)));
        }
    }
    v
}

/// Whether `uid` may own a file this process loads code from.
fn trusted_owner(uid: u32) -> bool {
    // SAFETY: getuid cannot fail.
    uid == unsafe { libc::getuid() } || uid == 0
}

/// Why a plugin file is not trusted (see [`open_trusted`]); the text is
/// made at the edge, by `Display`.
#[derive(Debug)]
pub enum Untrusted {
    /// A symbolic link on the way is owned by `uid`, neither this user nor
    /// root.
    LinkOwner { link: PathBuf, uid: u32 },
    /// A symbolic link on the way is in `dir`, which others may write and
    /// which has no sticky bit (`mode`: its mode).
    LinkInOpenDir { link: PathBuf, dir: PathBuf, mode: u32 },
    /// The file could not be opened.
    Open(std::io::Error),
    /// The open file could not be examined.
    Stat(std::io::Error),
    /// The open file's real path could not be read.
    Resolve(std::io::Error),
    /// The file (`real`: its real path) is not a regular file.
    NotRegular { real: PathBuf },
    /// The file is owned by `uid`, neither this user nor root.
    FileOwner { real: PathBuf, uid: u32 },
    /// Others may write the file (`mode`: its mode).
    FileWritable { real: PathBuf, mode: u32 },
    /// A directory of the real path could not be examined.
    DirStat { dir: PathBuf, source: std::io::Error },
    /// A directory of the real path (`parent`: the file's own) is owned by
    /// `uid`, neither this user nor root.
    DirOwner { dir: PathBuf, parent: bool, uid: u32 },
    /// Others may write a directory of the real path (`mode`: its mode):
    /// the file's own (`parent`), or one above it without a sticky bit.
    DirWritable { dir: PathBuf, parent: bool, mode: u32 },
}

/// Who may write a file or directory of mode `mode` that others may write.
fn writers(mode: u32) -> &'static str {
    if mode & 0o002 != 0 {
        "everyone"
    } else {
        "its group"
    }
}

/// How a directory of the real path is named: the plugin's own, or one
/// above it.
fn dir_name(parent: bool) -> &'static str {
    if parent {
        "its directory"
    } else {
        "the directory"
    }
}

impl std::fmt::Display for Untrusted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Untrusted::LinkOwner { link, uid } => {
                write!(f, "the symbolic link {} is owned by uid {uid}, not by this user or root", link.display())
            }
            Untrusted::LinkInOpenDir { link, dir, mode } => write!(
                f,
                "the symbolic link {} is in {}, which others may write (mode {:04o})",
                link.display(),
                dir.display(),
                mode & 0o7777
            ),
            Untrusted::Open(e) => write!(f, "cannot open it: {e}"),
            Untrusted::Stat(e) => write!(f, "cannot stat it: {e}"),
            Untrusted::Resolve(e) => write!(f, "cannot resolve it: {e}"),
            Untrusted::NotRegular { real } => write!(f, "the file {} is not a regular file", real.display()),
            Untrusted::FileOwner { real, uid } => {
                write!(f, "the file {} is owned by uid {uid}, not by this user or root", real.display())
            }
            Untrusted::FileWritable { real, mode } => {
                write!(f, "the file {} is writable by {} (mode {:04o})", real.display(), writers(*mode), mode & 0o7777)
            }
            Untrusted::DirStat { dir, source } => write!(f, "cannot stat {}: {source}", dir.display()),
            Untrusted::DirOwner { dir, parent, uid } => {
                write!(f, "{} {} is owned by uid {uid}, not by this user or root", dir_name(*parent), dir.display())
            }
            Untrusted::DirWritable { dir, parent, mode } => write!(
                f,
                "{} {} is writable by {} (mode {:04o})",
                dir_name(*parent),
                dir.display(),
                writers(*mode),
                mode & 0o7777
            ),
        }
    }
}

impl std::error::Error for Untrusted {}

/// Why a directory of the plugin's real path is not safe, if it is not:
/// owned by someone else, or writable by others (`parent`: the plugin's
/// own directory, where even a sticky bit does not help, as the test of
/// planted plugins expects; above it, a sticky directory such as /tmp is
/// fine, since only a directory's owner can replace it there).
fn unsafe_dir(dir: &std::path::Path, parent: bool) -> Option<Untrusted> {
    use std::os::unix::fs::MetadataExt;
    let m = match std::fs::metadata(dir) {
        Ok(m) => m,
        Err(e) => return Some(Untrusted::DirStat { dir: dir.to_path_buf(), source: e }),
    };
    if !trusted_owner(m.uid()) {
        return Some(Untrusted::DirOwner { dir: dir.to_path_buf(), parent, uid: m.uid() });
    }
    let sticky = m.mode() & 0o1000 != 0;
    if m.mode() & 0o022 != 0 && (parent || !sticky) {
        return Some(Untrusted::DirWritable { dir: dir.to_path_buf(), parent, mode: m.mode() });
    }
    None
}

/// Why a symbolic link on the way to the plugin is one another user
/// controls, if it is: owned by someone else, or in a directory others may
/// write without a sticky bit (so they could replace it).
fn unsafe_links(path: &std::path::Path) -> Option<Untrusted> {
    use std::os::unix::fs::MetadataExt;
    let mut prefix = std::path::PathBuf::new();
    for c in path.components() {
        prefix.push(c);
        let Ok(m) = std::fs::symlink_metadata(&prefix) else { continue };
        if !m.file_type().is_symlink() {
            continue;
        }
        if !trusted_owner(m.uid()) {
            return Some(Untrusted::LinkOwner { link: prefix, uid: m.uid() });
        }
        if let Some(dir) = prefix.parent() {
            if let Ok(d) = std::fs::metadata(dir) {
                if d.mode() & 0o022 != 0 && d.mode() & 0o1000 == 0 {
                    return Some(Untrusted::LinkInOpenDir { dir: dir.to_path_buf(), link: prefix, mode: d.mode() });
                }
            }
        }
    }
    None
}

/// Opens the plugin file `path` if it can be trusted, and returns the open
/// file: the checks are made on the descriptor (the file that will be
/// loaded) and on every directory of its real path, and the load goes
/// through the same descriptor, so a path swapped after the check (a
/// symbolic link another user flips) cannot change what runs. Refused:
/// symbolic links on the way that another user controls; a file that is
/// not a regular file of this user's or root's, or that others may write;
/// a directory on its real path owned by someone else or writable by
/// others (see [`unsafe_dir`]). Anyone who could write there could make
/// this job run their code.
pub fn open_trusted(path: &std::path::Path) -> Result<std::fs::File, Untrusted> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    if let Some(why) = unsafe_links(path) {
        return Err(why);
    }
    let f = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_CLOEXEC).open(path).map_err(Untrusted::Open)?;
    let m = f.metadata().map_err(Untrusted::Stat)?;
    use std::os::fd::AsRawFd;
    let real = std::fs::read_link(format!("/proc/self/fd/{}", f.as_raw_fd())).map_err(Untrusted::Resolve)?;
    if !m.is_file() {
        return Err(Untrusted::NotRegular { real });
    }
    if !trusted_owner(m.uid()) {
        return Err(Untrusted::FileOwner { real, uid: m.uid() });
    }
    if m.mode() & 0o022 != 0 {
        return Err(Untrusted::FileWritable { real, mode: m.mode() });
    }
    let mut dir = real.parent();
    let mut parent = true;
    while let Some(d) = dir {
        if let Some(why) = unsafe_dir(d, parent) {
            return Err(why);
        }
        parent = false;
        dir = d.parent();
    }
    Ok(f)
}

/// The MPI proxy plugins this installation has, for `ishmem-info`: every
/// family's file found in the directories [`load`] searches and in `also`.
pub fn installed_plugins(root: Option<&str>, also: &[PathBuf]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for d in plugin_dirs(root).into_iter().chain(also.iter().cloned()) {
        for (_, f) in FAMILIES {
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

/// Loads and initializes the MPI proxy: `explicit` (`ISHMEM_MPI_PROXY`) or
/// the plugin for the MPI in use, searched beside the library and in
/// `root` (`ISHMEM_ROOT`). `app_comm` points to the application's
/// `MPI_Comm` when it owns MPI; `put_copy_max` is `ISHMEM_PROXY_PUT_COPY`;
/// `progress_thread` is `ISHMEM_PROXY_PROGRESS_THREAD`.
pub fn load(
    explicit: Option<&str>, root: Option<&str>, app_comm: *const c_void, requested_thread: c_int, put_copy_max: usize,
    progress_thread: bool,
) -> Result<PluginRemote, RemoteError> {
    let mut search = Search::new(
        "the MPI proxy plugin",
        "build it with proxy-oshmpi/build-plugins.sh; a statically linked program finds it through ISHMEM_ROOT (the module sets it) or ISHMEM_MPI_PROXY (the file, or its directory)",
    );
    for path in candidate_paths(explicit, root) {
        if !path.exists() {
            search.unusable(path.display(), "no such file");
            continue;
        }
        let file = match open_trusted(&path) {
            Ok(f) => f,
            Err(why) => {
                search.unusable(path.display(), format!("refused: {why}"));
                continue;
            }
        };
        // Loaded through the descriptor that was checked (the dynamic
        // linker opens /proc/self/fd/N, which is that file whatever its
        // path names now).
        use std::os::fd::AsRawFd;
        let by_fd = format!("/proc/self/fd/{}", file.as_raw_fd());
        let loaded = search.open_as(&by_fd, path.display(), Open::Local);
        drop(file);
        let Some(lib) = loaded else { continue };
        // SAFETY: the symbol has the ABI's init signature.
        let init: abi::ProxyInitFn = match unsafe { lib.get::<abi::ProxyInitFn>(abi::INIT_SYMBOL) } {
            Ok(f) => *f,
            Err(e) => {
                search.unusable(path.display(), format!("not a proxy plugin: {e}"));
                continue;
            }
        };
        let mut err = vec![0u8; 2048];
        let args = abi::ProxyInitArgs {
            abi_version: abi::ABI_VERSION,
            flags: if progress_thread { abi::INIT_PROGRESS_THREAD } else { 0 },
            app_comm,
            requested_thread,
            err: err.as_mut_ptr() as *mut c_char,
            err_len: err.len(),
            put_copy_max,
        };
        let mut ops = std::mem::MaybeUninit::<abi::ProxyOps>::uninit();
        let _in = super::InCall::enter();
        // SAFETY: valid pointers for the duration of the call.
        let rc = unsafe { init(&args, ops.as_mut_ptr()) };
        if rc != 0 {
            let msg = CStr::from_bytes_until_nul(&err).map(|c| c.to_string_lossy().into_owned()).unwrap_or_default();
            return Err(RemoteError::Init(format!("the MPI proxy {} failed to initialize: {msg}", path.display())));
        }
        // SAFETY: init returned 0, so it filled the table.
        let ops = unsafe { ops.assume_init() };
        if ops.abi_version != abi::ABI_VERSION {
            return Err(RemoteError::Init(format!(
                "{} speaks proxy ABI {}, this library {}",
                path.display(),
                ops.abi_version,
                abi::ABI_VERSION
            )));
        }
        // The MPI library stays loaded for the life of the process.
        std::mem::forget(lib);
        return Ok(PluginRemote { ops, path });
    }
    Err(RemoteError::Load(search.failed()))
}

impl PluginRemote {
    /// The plugin's `amo` at `at` with `flags`, the old value to `old`.
    ///
    /// # Safety
    /// The core checked `at`'s offset and alignment; `old` is valid as
    /// `flags` require (until the flush with `FLAG_FETCH`).
    unsafe fn call_amo(&self, at: RemoteAddr, amo: Amo, old: *mut u64, flags: u32) -> Result<(), RemoteError> {
        let RemoteAddr { region, pe, offset } = at;
        // SAFETY: the caller's contract.
        self.check(unsafe {
            (self.ops.amo)(
                self.ops.ctx,
                region_id(region),
                pe as u32,
                offset,
                amo.size as u32,
                amo.op as u32,
                amo.operand,
                amo.cond,
                old,
                flags,
            )
        })
    }
}

fn abi_strides(s: Strides) -> abi::Strides {
    abi::Strides { block: s.block, nblocks: s.nblocks, target_stride: s.remote, local_stride: s.local }
}

fn region_id(r: Region) -> u32 {
    match r {
        Region::Heap => abi::REGION_HEAP,
        Region::Data => abi::REGION_DATA,
        Region::Ctrl => abi::REGION_CTRL,
    }
}

impl PluginRemote {
    /// The plugin's description of its latest failure on this thread.
    fn error(&self) -> RemoteError {
        // SAFETY: last_error returns a NUL-terminated string of this thread.
        let e = unsafe { CStr::from_ptr((self.ops.last_error)(self.ops.ctx)) };
        RemoteError::Plugin(e.to_string_lossy().into_owned())
    }

    fn check(&self, rc: c_int) -> Result<(), RemoteError> {
        if rc == 0 {
            Ok(())
        } else {
            Err(self.error())
        }
    }
}

impl RemoteOps for PluginRemote {
    fn kind(&self) -> &'static str {
        "MPI proxy"
    }

    fn describe(&self) -> String {
        // SAFETY: the plugin's name is a static NUL-terminated string.
        let name = unsafe { CStr::from_ptr(self.ops.name) }.to_string_lossy();
        format!("{name} via {}", self.path.display())
    }

    fn rank(&self) -> usize {
        self.ops.rank as usize
    }

    fn size(&self) -> usize {
        self.ops.size as usize
    }

    fn thread_level(&self) -> c_int {
        self.ops.thread_level
    }

    fn owns_runtime(&self) -> bool {
        self.ops.owns_runtime != 0
    }

    fn self_progressing(&self) -> bool {
        self.ops.self_progressing != 0
    }

    fn alloc(&self, size: usize, align: usize) -> Result<*mut u8, RemoteError> {
        let f = self.ops.alloc.ok_or_else(|| RemoteError::Unsupported("the MPI proxy provides no memory".into()))?;
        let mut out: *mut c_void = std::ptr::null_mut();
        // SAFETY: out is writable; the plugin keeps the memory until finalize.
        self.check(unsafe { f(self.ops.ctx, size, align, &mut out) })?;
        if out.is_null() {
            return Err(RemoteError::Plugin(format!("allocation of {size} bytes returned NULL")));
        }
        Ok(out as *mut u8)
    }

    fn allgather(&self, mine: &[u8], all: &mut [u8]) -> Result<(), RemoteError> {
        assert_eq!(all.len(), mine.len() * self.size(), "allgather buffer");
        // SAFETY: buffers sized as the ABI requires.
        self.check(unsafe {
            (self.ops.allgather)(
                self.ops.ctx,
                mine.as_ptr() as *const c_void,
                all.as_mut_ptr() as *mut c_void,
                mine.len(),
            )
        })
    }

    fn barrier(&self) -> Result<(), RemoteError> {
        // SAFETY: plain call on the plugin's context.
        self.check(unsafe { (self.ops.barrier)(self.ops.ctx) })
    }

    fn expose(&self, region: Region, base: *mut u8, size: usize) -> Result<(), RemoteError> {
        // SAFETY: the core keeps the memory mapped until `finalize`.
        self.check(unsafe { (self.ops.expose)(self.ops.ctx, region_id(region), base as *mut c_void, size) })
    }

    fn expose_served(&self, region: Region, size: usize, access: &'static dyn RegionAccess) -> Result<(), RemoteError> {
        let Some(f) = self.ops.expose_served else {
            return Err(RemoteError::Unsupported(format!(
                "{} cannot serve a heap in device memory (a plugin of proxy ABI 3 or older)",
                self.describe()
            )));
        };
        // The callbacks' context: the access, boxed once and kept for the
        // rest of the process (the plugin may call until finalize).
        let ctx: &'static &'static dyn RegionAccess = Box::leak(Box::new(access));
        let target: &'static abi::TargetOps = Box::leak(Box::new(abi::TargetOps {
            ctx: ctx as *const &'static dyn RegionAccess as *mut c_void,
            write: target_write,
            read: target_read,
            amo: target_amo,
            staging: target_staging,
            write_start: target_write_start,
            writes_done: target_writes_done,
            amo_many: target_amo_many,
        }));
        // SAFETY: target stays valid for the process's life.
        self.check(unsafe { f(self.ops.ctx, region_id(region), size, target) })
    }

    unsafe fn put(&self, at: RemoteAddr, src: *const u8, len: usize, nbi: bool) -> Result<(), RemoteError> {
        let RemoteAddr { region, pe, offset } = at;
        let flags = if nbi { abi::FLAG_NBI } else { 0 };
        // SAFETY: the caller guarantees src for len bytes; the plugin
        // checks the remote range.
        self.check(unsafe {
            (self.ops.put)(self.ops.ctx, region_id(region), pe as u32, offset, src as *const c_void, len, flags)
        })
    }

    unsafe fn get(&self, at: RemoteAddr, dst: *mut u8, len: usize, nbi: bool) -> Result<(), RemoteError> {
        let RemoteAddr { region, pe, offset } = at;
        let flags = if nbi { abi::FLAG_NBI } else { 0 };
        // SAFETY: as for put.
        self.check(unsafe {
            (self.ops.get)(self.ops.ctx, region_id(region), pe as u32, offset, dst as *mut c_void, len, flags)
        })
    }

    unsafe fn put_strided(&self, at: RemoteAddr, src: *const u8, s: Strides, nbi: bool) -> Result<(), RemoteError> {
        let Some(f) = self.ops.put_strided else {
            // SAFETY: the caller's contract (the default: block by block).
            return unsafe { super::put_blocks(self, at, src, s, nbi) };
        };
        let RemoteAddr { region, pe, offset } = at;
        let (flags, shape) = (if nbi { abi::FLAG_NBI } else { 0 }, abi_strides(s));
        // SAFETY: the caller guarantees src for every block; shape lives
        // across the call.
        self.check(unsafe {
            f(self.ops.ctx, region_id(region), pe as u32, offset, src as *const c_void, &shape, flags)
        })
    }

    unsafe fn get_strided(&self, at: RemoteAddr, dst: *mut u8, s: Strides, nbi: bool) -> Result<(), RemoteError> {
        let Some(f) = self.ops.get_strided else {
            // SAFETY: the caller's contract (the default: block by block).
            return unsafe { super::get_blocks(self, at, dst, s, nbi) };
        };
        let RemoteAddr { region, pe, offset } = at;
        let (flags, shape) = (if nbi { abi::FLAG_NBI } else { 0 }, abi_strides(s));
        // SAFETY: as for put_strided.
        self.check(unsafe { f(self.ops.ctx, region_id(region), pe as u32, offset, dst as *mut c_void, &shape, flags) })
    }

    fn amo(&self, at: RemoteAddr, amo: Amo, nbi: bool) -> Result<u64, RemoteError> {
        let mut old = 0u64;
        let flags = if nbi { abi::FLAG_NBI } else { 0 };
        // SAFETY: old is writable and waited for (no FLAG_FETCH).
        unsafe { self.call_amo(at, amo, &mut old, flags) }?;
        Ok(old)
    }

    unsafe fn amo_fetch_nbi(&self, at: RemoteAddr, amo: Amo, old: *mut u8) -> Result<(), RemoteError> {
        // SAFETY: old stays valid for amo.size bytes until the flush (the
        // caller's contract), which FLAG_FETCH asks of the plugin (ABI 8).
        unsafe { self.call_amo(at, amo, old.cast(), abi::FLAG_NBI | abi::FLAG_FETCH) }
    }

    unsafe fn amo_batch(
        &self, region: Region, pe: usize, ops: &[(usize, Amo)], old: Option<*mut u64>,
    ) -> Result<(), RemoteError> {
        let Some(f) = self.ops.amo_batch else {
            // SAFETY: the caller's contract.
            return unsafe { super::amo_one_by_one(self, region, pe, ops, old) };
        };
        let reqs: Vec<abi::TargetAmo> = ops
            .iter()
            .map(|&(offset, a)| abi::TargetAmo {
                offset,
                size: a.size as u32,
                op: a.op as u32,
                operand: a.operand,
                cond: a.cond,
                posted: u32::from(old.is_none()),
                reserved: 0,
            })
            .collect();
        let flags = abi::FLAG_NBI | if old.is_some() { abi::FLAG_FETCH } else { 0 };
        // SAFETY: the caller's contract: offsets checked, old valid for
        // ops.len() values until the flush.
        self.check(unsafe {
            f(
                self.ops.ctx,
                region_id(region),
                pe as u32,
                reqs.len(),
                reqs.as_ptr(),
                old.unwrap_or(std::ptr::null_mut()),
                flags,
            )
        })
    }

    fn flush(&self, pe: Option<usize>) -> Result<(), RemoteError> {
        // SAFETY: plain call.
        self.check(unsafe { (self.ops.flush)(self.ops.ctx, pe.map_or(-1, |p| p as c_int)) })
    }

    fn progress(&self) -> Result<usize, RemoteError> {
        // SAFETY: plain call.
        let n = unsafe { (self.ops.progress)(self.ops.ctx) };
        usize::try_from(n).map_err(|_| self.error())
    }

    fn abort(&self, code: c_int) {
        // SAFETY: abort may be called from any thread at any time.
        unsafe { (self.ops.abort)(self.ops.ctx, code) }
    }

    fn finalize(&self) -> Result<(), RemoteError> {
        // SAFETY: last call on the context.
        self.check(unsafe { (self.ops.finalize)(self.ops.ctx) })
    }
}

/// The [`RegionAccess`] behind a [`abi::TargetOps`] context.
///
/// # Safety
/// `ctx` is the context `expose_served` made.
unsafe fn access<'a>(ctx: *mut c_void) -> &'a dyn RegionAccess {
    // SAFETY: the caller's contract: a leaked `&'static dyn RegionAccess`.
    unsafe { *(ctx as *const &'static dyn RegionAccess) }
}

unsafe extern "C" fn target_write(ctx: *mut c_void, offset: usize, src: *const c_void, len: usize) -> c_int {
    crate::error::callback_guard("ishmem proxy (serving a put)", || {
        // SAFETY: the plugin passes our context, a checked range and len
        // readable bytes at src.
        unsafe { access(ctx).write(offset, src as *const u8, len) };
        0
    })
}

unsafe extern "C" fn target_write_start(ctx: *mut c_void, offset: usize, src: *const c_void, len: usize) -> c_int {
    crate::error::callback_guard("ishmem proxy (serving a put)", || {
        // SAFETY: as in target_write; the plugin keeps src until
        // target_writes_done says the write ended.
        unsafe { access(ctx).write_start(offset, src as *const u8, len) };
        0
    })
}

unsafe extern "C" fn target_writes_done(ctx: *mut c_void, wait: u32) -> c_int {
    crate::error::callback_guard("ishmem proxy (serving a put)", || {
        // SAFETY: the plugin passes our context.
        c_int::from(unsafe { access(ctx) }.writes_done(wait != 0))
    })
}

unsafe extern "C" fn target_read(ctx: *mut c_void, offset: usize, dst: *mut c_void, len: usize) -> c_int {
    crate::error::callback_guard("ishmem proxy (serving a get)", || {
        // SAFETY: as in target_write, with len writable bytes at dst.
        unsafe { access(ctx).read(offset, dst as *mut u8, len) };
        0
    })
}

unsafe extern "C" fn target_amo(
    ctx: *mut c_void, offset: usize, size: u32, op: u32, operand: u64, cond: u64, old: *mut u64,
) -> c_int {
    crate::error::callback_guard("ishmem proxy (serving an AMO)", || {
        let Some(op) = AmoOp::from_code(op) else {
            crate::error::fatal("ishmem proxy (serving an AMO)", format_args!("unknown AMO operation {op}"))
        };
        // SAFETY: as in target_write.
        let v = unsafe { access(ctx) }.amo(offset, Amo { op, size: size as usize, operand, cond });
        if !old.is_null() {
            // SAFETY: the plugin passes a valid pointer or null.
            unsafe { *old = v };
        }
        0
    })
}

unsafe extern "C" fn target_amo_many(ctx: *mut c_void, n: usize, reqs: *const abi::TargetAmo, old: *mut u64) -> c_int {
    const CALL: &str = "ishmem proxy (serving AMOs)";
    if n == 0 {
        return 0;
    }
    crate::error::callback_guard(CALL, || {
        // SAFETY: the plugin passes n requests and n result words.
        let (reqs, old) = unsafe { (std::slice::from_raw_parts(reqs, n), std::slice::from_raw_parts_mut(old, n)) };
        let ops: Vec<(usize, Amo, bool)> = reqs
            .iter()
            .map(|r| {
                let Some(op) = AmoOp::from_code(r.op) else {
                    crate::error::fatal(CALL, format_args!("unknown AMO operation {}", r.op))
                };
                (r.offset, Amo { op, size: r.size as usize, operand: r.operand, cond: r.cond }, r.posted != 0)
            })
            .collect();
        // SAFETY: as in target_write.
        unsafe { access(ctx) }.amo_many(&ops, old);
        0
    })
}

unsafe extern "C" fn target_staging(ctx: *mut c_void, len: usize) -> *mut c_void {
    crate::error::callback_guard("ishmem proxy (staging buffer)", || {
        // SAFETY: the plugin passes our context.
        unsafe { access(ctx) }.staging(len) as *mut c_void
    })
}
