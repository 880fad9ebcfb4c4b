//! The multi-PE harness shared by `tests/tests/programs.rs` (the programs
//! of `tests/programs.list`) and `tests/tests/multi_pe.rs` (the checks that
//! need more than a program and its expected output): building the C,
//! C++ and Fortran programs against the generated headers and
//! `libishmem.so`, starting them under a launcher with a timeout, and
//! recording every run in `TEST_RESULTS` for the summary of
//! `tests/run-all.sh`.
//!
//! The launcher is `TEST_LAUNCHER` (ishmrun, openmpi, mpich, oshmem, sos);
//! the device is `ISHMEM_DEVICE` (passed to the PEs, default cpu).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Limit of one ordinary program run.
pub const TIMEOUT: Duration = Duration::from_secs(120);
/// Limit of a run that is expected to fail, and the time it must end in.
pub const FAIL_TIMEOUT: Duration = Duration::from_secs(30);
pub const FAIL_WITHIN: Duration = Duration::from_secs(10);

pub struct Env {
    pub root: PathBuf,
    pub bin_dir: PathBuf,
    pub build_dir: PathBuf,
}

/// The repository, the build's binary directory (`target/<profile>`) and
/// the directory the programs are compiled into.
pub fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
        // The test executable lives in <target>/<profile>/deps.
        let exe = std::env::current_exe().unwrap();
        let bin_dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
        for f in ["ishmrun", "libishmem.so"] {
            assert!(
                bin_dir.join(f).exists(),
                "{} is missing: run `cargo build --workspace --all-targets` before the tests",
                bin_dir.join(f).display()
            );
        }
        // Programs record the soname; give it a name next to the library.
        let so0 = bin_dir.join("libishmem.so.0");
        if std::fs::read_link(&so0).ok().as_deref() != Some(Path::new("libishmem.so")) {
            let tmp = bin_dir.join(format!("libishmem.so.0.{}", std::process::id()));
            let _ = std::fs::remove_file(&tmp);
            std::os::unix::fs::symlink("libishmem.so", &tmp).expect("symlink libishmem.so.0");
            std::fs::rename(&tmp, &so0).expect("rename libishmem.so.0");
        }
        let build_dir = bin_dir.join("c-tests");
        std::fs::create_dir_all(&build_dir).unwrap();
        Env { root, bin_dir, build_dir }
    })
}

// ----- building --------------------------------------------------------------

/// Programs built by this process (each once).
static BUILT: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Builds `name` once per test process with `build`; returns the
/// executable. Two test binaries may build the same name at once: each
/// writes a file of its own and renames it into place.
fn build_once(name: &str, build: impl FnOnce(&Path)) -> PathBuf {
    let out = env().build_dir.join(name);
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if !built.iter().any(|b| b == name) {
        let tmp = env().build_dir.join(format!(".{name}.{}", std::process::id()));
        build(&tmp);
        std::fs::rename(&tmp, &out).unwrap_or_else(|e| panic!("renaming {} into place: {e}", tmp.display()));
        built.push(name.to_string());
    }
    out
}

/// Compiles `tests/c/<name>.c`; returns the executable.
pub fn c_program(name: &str) -> PathBuf {
    compile_c(&env().root.join("tests/c").join(format!("{name}.c")), name)
}

/// Compiles a C PE program against the generated headers and libishmem.so.
pub fn compile_c(src: &Path, name: &str) -> PathBuf {
    let inc = env().root.join("tests/c");
    build_once(name, |out| {
        compile(
            "CC",
            "cc",
            &["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-pthread"],
            &[src],
            &[&inc],
            &["-lm"],
            out,
        )
    })
}

/// Compiles a C++ PE program against the headers (C++ layer included).
pub fn compile_cxx(src: &Path, name: &str) -> PathBuf {
    build_once(name, |out| {
        compile("CXX", "c++", &["-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror"], &[src], &[], &[], out)
    })
}

/// Compiles a Fortran PE program with the generated `shmem` and `ishmem`
/// modules (built into a directory of its own).
pub fn compile_fortran(src: &Path, name: &str) -> PathBuf {
    let e = env();
    build_once(name, |out| {
        let moddir = e.build_dir.join(format!("fmod-{name}"));
        std::fs::create_dir_all(&moddir).unwrap();
        let (shmem, ishmem) = (e.root.join("bindings/fortran/shmem.f90"), e.root.join("bindings/fortran/ishmem.f90"));
        let j = format!("-J{}", moddir.display());
        compile("FC", "gfortran", &["-O2", "-Wall", "-Werror", &j], &[&shmem, &ishmem, src], &[], &[], out)
    })
}

/// Compiles a fixed-form Fortran program of the classic interface
/// (`include 'shmem.fh'`, Cray pointers).
pub fn compile_f77(src: &Path, name: &str) -> PathBuf {
    let inc = format!("-I{}", env().root.join("bindings/fortran").display());
    build_once(name, |out| {
        compile("FC", "gfortran", &["-O2", "-Wall", "-Werror", "-fcray-pointer", &inc], &[src], &[], &[], out)
    })
}

/// Runs compiler `$var` (default `default`) on `srcs` with the generated
/// headers on the include path and libishmem linked, writing `out`.
fn compile(var: &str, default: &str, flags: &[&str], srcs: &[&Path], incs: &[&Path], libs: &[&str], out: &Path) {
    let e = env();
    let compiler = std::env::var(var).unwrap_or_else(|_| default.into());
    let mut cmd = Command::new(&compiler);
    cmd.args(flags).args(srcs).arg("-I").arg(e.root.join("bindings/c/include"));
    for i in incs {
        cmd.arg("-I").arg(i);
    }
    cmd.arg("-L").arg(&e.bin_dir).arg("-lishmem").args(libs);
    cmd.arg(format!("-Wl,-rpath,{}", e.bin_dir.display())).arg("-o").arg(out);
    let o = cmd.output().unwrap_or_else(|err| panic!("cannot run {compiler} (tests/run-all.sh installs it): {err}"));
    assert!(o.status.success(), "compiling {srcs:?} with {compiler}:\n{}", String::from_utf8_lossy(&o.stderr));
}

// ----- running ---------------------------------------------------------------

pub struct Run {
    pub code: Option<i32>,
    /// The signal that ended the launcher, if one did.
    pub signal: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
    pub timed_out: bool,
}

impl Run {
    pub fn report(&self, what: &str) -> String {
        format!(
            "{what} [{}]: exit {:?} after {:.1?}\n--- stdout ---\n{}--- stderr ---\n{}",
            leg(),
            self.code,
            self.elapsed,
            self.stdout,
            self.stderr
        )
    }
}

/// Runs `cmd` with a timeout, collecting its output; records the run in
/// `TEST_RESULTS` under `label`. A run the launcher itself broke (see
/// [`launcher_race`]) is run again, twice at most.
pub fn run_labeled(mut cmd: Command, timeout: Duration, label: &str) -> Run {
    let mut r = run_once(&mut cmd, timeout, label);
    for _ in 0..2 {
        let Some(why) = launcher_race(&cmd, &r) else { break };
        eprintln!("{label}: {why}: running it again");
        r = run_once(&mut cmd, timeout, label);
    }
    r
}

/// A failure of the launcher, not of the program, seen on this machine:
/// - MPICH 4.0's `mpiexec` (Hydra) sometimes dies of SIGPIPE, forwarding
///   nothing, when a PE ends during start-up (4 of 60 runs of a PE that
///   fails before `MPI_Init` on a loaded 2-core machine);
/// - Open MPI 4.1's `mpirun`/`oshrun` sometimes fails to create its session
///   directory (`/tmp/ompi.<host>.<uid>`, "File exists") while another job
///   removes it: twice in one CI run of parallel jobs.
fn launcher_race(cmd: &Command, r: &Run) -> Option<&'static str> {
    let prog = file_name(Path::new(cmd.get_program()));
    if prog.starts_with("mpiexec") && r.signal == Some(libc::SIGPIPE) {
        return Some("mpiexec died of SIGPIPE (a Hydra race with PEs that end early)");
    }
    if r.code.is_some_and(|c| c != 0)
        && r.stderr.contains("A call to mkdir was unable to create the desired directory")
        && r.stderr.contains("/ompi.")
    {
        return Some("Open MPI could not create its session directory (a race with another job's cleanup)");
    }
    None
}

fn run_once(cmd: &mut Command, timeout: Duration, label: &str) -> Run {
    let start = Instant::now();
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let mut timed_out = false;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > timeout && !timed_out {
            timed_out = true;
            // SAFETY: signalling our own child (the launchers forward it).
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            std::thread::sleep(Duration::from_secs(3));
            let _ = child.kill();
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let elapsed = start.elapsed();
    let mut stderr = t_err.join().unwrap();
    if timed_out {
        stderr.push_str(&format!("\n[harness: killed after the {timeout:?} timeout]\n"));
    }
    let signal = std::os::unix::process::ExitStatusExt::signal(&status);
    let r = Run { code: status.code(), signal, stdout: t_out.join().unwrap(), stderr, elapsed, timed_out };
    record(label, &r, timeout);
    r
}

/// [`run_labeled`] with the program's file name and arguments as label.
pub fn run_cmd(cmd: Command, timeout: Duration) -> Run {
    let label = describe(&cmd);
    run_labeled(cmd, timeout, &label)
}

/// A command as a short label: launcher options left out, the program by
/// its file name.
fn describe(cmd: &Command) -> String {
    let mut parts = vec![file_name(Path::new(cmd.get_program()))];
    let mut args = cmd.get_args().map(|a| a.to_string_lossy().into_owned()).peekable();
    while let Some(a) = args.next() {
        if a == "-n" || a == "-np" {
            if let Some(n) = args.next() {
                parts.push(format!("-n {n}"));
            }
        } else if a.starts_with('-') {
            // launcher options and their values are not informative here
            if matches!(a.as_str(), "-x" | "--mca" | "-t") {
                args.next();
                if a == "--mca" {
                    args.next();
                }
            }
        } else {
            parts.push(file_name(Path::new(&a)));
        }
    }
    parts.join(" ")
}

fn file_name(p: &Path) -> String {
    p.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_else(|| p.display().to_string())
}

/// The leg of the suite this process runs in: launcher, device and
/// node-local sharing.
pub fn leg() -> String {
    let shm = match std::env::var("ISHMEM_ENABLE_SHM").as_deref() {
        Ok("0") if under_mpi() => " shm=0",
        _ => "",
    };
    format!("{} {}{shm}", launcher().name(), device())
}

/// Whether this leg's PEs share the node's control segment (lines tagged
/// `node` need it): not under MPI with `ISHMEM_ENABLE_SHM=0`, nor under
/// the host OpenSHMEM launchers (every other PE through that library).
fn node_ctrl_shared() -> bool {
    match launcher() {
        Launcher::Ishmrun => true,
        Launcher::OpenMpi | Launcher::Mpich => std::env::var("ISHMEM_ENABLE_SHM").as_deref() != Ok("0"),
        Launcher::Oshmem | Launcher::Sos => false,
    }
}

/// Appends one line to `TEST_RESULTS` (when set): result, seconds, limit,
/// leg, label, tab-separated.
fn record(label: &str, r: &Run, limit: Duration) {
    let Some(path) = std::env::var_os("TEST_RESULTS").filter(|p| !p.is_empty()) else { return };
    let status = if r.timed_out { "TIMEOUT" } else { "ran" };
    let line = format!("{status}\t{:.2}\t{}\t{}\t{label}\n", r.elapsed.as_secs_f64(), limit.as_secs(), leg());
    // One write of a short line in append mode: lines of parallel tests
    // do not mix.
    if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
        let _ = f.write_all(line.as_bytes());
    }
}

/// What starts the PEs. `TEST_LAUNCHER=openmpi|mpich` runs the suite under
/// that MPI's launcher, so the programs bootstrap through the MPI proxy;
/// `ISHMEM_ENABLE_SHM` (passed through) decides whether PEs on this
/// machine share memory or reach each other only through MPI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Launcher {
    Ishmrun,
    OpenMpi,
    Mpich,
    /// Open MPI's `oshrun`, with the programs bootstrapping through
    /// Open MPI's OSHMEM loaded as the OpenSHMEM proxy
    /// (`ISHMEM_RUNTIME=OPENSHMEM`): every other PE through that library.
    Oshmem,
    /// MPICH's Hydra (`mpiexec.hydra`), with the programs bootstrapping
    /// through Sandia OpenSHMEM loaded as the OpenSHMEM proxy: the
    /// `libsma.so` of the SOS prefix `TEST_SOS_PREFIX` (built by
    /// `tests/sos/build-sos.sh`), over libfabric's `TEST_SOS_PROVIDER`
    /// (default `tcp;ofi_rxm`; SOS 1.5.3 over the sockets provider stalls
    /// in quiet under many outstanding puts).
    Sos,
}

impl Launcher {
    pub fn name(self) -> &'static str {
        match self {
            Launcher::Ishmrun => "ishmrun",
            Launcher::OpenMpi => "openmpi",
            Launcher::Mpich => "mpich",
            Launcher::Oshmem => "oshmem",
            Launcher::Sos => "sos",
        }
    }
}

pub fn launcher() -> Launcher {
    match std::env::var("TEST_LAUNCHER").as_deref() {
        Err(_) | Ok("") | Ok("ishmrun") => Launcher::Ishmrun,
        Ok("openmpi") => Launcher::OpenMpi,
        Ok("mpich") => Launcher::Mpich,
        Ok("oshmem") => Launcher::Oshmem,
        Ok("sos") => Launcher::Sos,
        Ok(other) => panic!("TEST_LAUNCHER={other}: expected ishmrun, openmpi, mpich, oshmem or sos"),
    }
}

/// The device the PEs' heaps are on (`ISHMEM_DEVICE`, default cpu).
pub fn device() -> String {
    match std::env::var("ISHMEM_DEVICE") {
        Ok(d) if !d.is_empty() && d != "auto" => d,
        _ => "cpu".into(),
    }
}

/// True when the suite runs under an MPI or OpenSHMEM launcher
/// (ishmrun-only checks are left to the ishmrun run of the suite).
pub fn under_mpi() -> bool {
    launcher() != Launcher::Ishmrun
}

/// The command that starts `prog` on `n` PEs with `envs` set for them.
pub fn launch(n: usize, prog: &Path, args: &[&str], envs: &[(&str, &str)], verbose: bool) -> Command {
    // Under MPI, programs linked statically (the Rust ones) find the MPI
    // proxy plugins of the build tree only through ISHMEM_MPI_PROXY: the
    // library never looks beside the executable.
    let proxy_dir = env().bin_dir.join("ishmem").display().to_string();
    let mut envs: Vec<(&str, &str)> = envs.to_vec();
    if matches!(launcher(), Launcher::OpenMpi | Launcher::Mpich)
        && std::env::var_os("ISHMEM_MPI_PROXY").is_none()
        && !envs.iter().any(|(k, _)| *k == "ISHMEM_MPI_PROXY")
    {
        envs.push(("ISHMEM_MPI_PROXY", &proxy_dir));
    }
    let envs = &envs[..];
    // Variables the PEs need besides `envs`.
    let passthrough: Vec<(String, String)> = std::env::vars()
        .filter(|(k, _)| k.starts_with("ISHMEM_"))
        .filter(|(k, _)| !envs.iter().any(|(e, _)| e == k))
        .collect();
    let mut cmd = match launcher() {
        Launcher::Ishmrun => {
            let mut c = Command::new(env().bin_dir.join("ishmrun"));
            if verbose {
                c.arg("-v");
            }
            c.arg("-n").arg(n.to_string()).arg("--");
            c
        }
        Launcher::OpenMpi => {
            let mut c = Command::new("mpirun.openmpi");
            c.args(["--allow-run-as-root", "--oversubscribe"]);
            c.arg("-n").arg(n.to_string());
            for k in envs.iter().map(|(k, _)| k.to_string()).chain(passthrough.iter().map(|(k, _)| k.clone())) {
                c.arg("-x").arg(k);
            }
            c
        }
        Launcher::Mpich => {
            let mut c = Command::new("mpiexec.mpich");
            c.arg("-n").arg(n.to_string());
            c
        }
        Launcher::Oshmem => {
            let mut c = Command::new("oshrun");
            c.args(["--allow-run-as-root", "--oversubscribe", "--mca", "spml", "ucx"]);
            // Open MPI 4.1.4 (Debian 12) crashes in shmem_finalize with its
            // UCX memory hooks on, even for a program that only inits.
            c.args(["--mca", "opal_common_ucx_opal_mem_hooks", "0"]);
            // When a PE exits non-zero, oshrun signals the others and then
            // sleeps its SIGTERM-to-SIGKILL grace period twice, whatever
            // they do (1 s each by default): 2 of the 2.5 s of every
            // expected failure. PEs that survive an expected failure have
            // nothing to clean up that a SIGKILL would leave (the
            // harness's leftovers check still runs).
            c.args(["--mca", "odls_base_sigkill_timeout", "0"]);
            // UCX over shared memory on this machine; UCX's own error
            // handler would turn an abort into a hang.
            c.args(["-x", "UCX_TLS=shm,self", "-x", "UCX_HANDLE_ERRORS=none", "-x", "ISHMEM_RUNTIME=OPENSHMEM"]);
            c.arg("-n").arg(n.to_string());
            for k in envs.iter().map(|(k, _)| k.to_string()).chain(passthrough.iter().map(|(k, _)| k.clone())) {
                c.arg("-x").arg(k);
            }
            c
        }
        Launcher::Sos => {
            let prefix =
                std::env::var("TEST_SOS_PREFIX").expect("TEST_LAUNCHER=sos needs TEST_SOS_PREFIX (an SOS prefix)");
            let provider = std::env::var("TEST_SOS_PROVIDER").unwrap_or_else(|_| "tcp;ofi_rxm".into());
            let lib = Path::new(&prefix).join("lib/libsma.so");
            assert!(lib.exists(), "TEST_SOS_PREFIX={prefix} has no lib/libsma.so (tests/sos/build-sos.sh builds one)");
            let mut c = Command::new("mpiexec.hydra");
            c.arg("-n").arg(n.to_string());
            // Hydra passes the whole environment to the PEs.
            c.env("ISHMEM_RUNTIME", "OPENSHMEM").env("ISHMEM_SHMEM_LIB_NAME", lib);
            let fi = if provider.starts_with("tcp") { "tcp" } else { provider.as_str() };
            c.env("SHMEM_OFI_PROVIDER", &provider).env("FI_PROVIDER", fi);
            c
        }
    };
    cmd.arg(prog).args(args);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd
}

/// Runs `prog` on `n` PEs under the suite's launcher (ordinary limit).
pub fn ishmrun(n: usize, prog: &Path, args: &[&str], envs: &[(&str, &str)]) -> Run {
    run_cmd(launch(n, prog, args, envs, false), TIMEOUT)
}

// ----- expected failures ----------------------------------------------------

/// Names in /dev/shm and /tmp that look like ours.
pub fn leftovers() -> Vec<String> {
    let mut v = Vec::new();
    for d in ["/dev/shm", "/tmp"] {
        if let Ok(rd) = std::fs::read_dir(d) {
            for e in rd.flatten() {
                let n = e.file_name().to_string_lossy().to_string();
                // (nvcc's temporary files while it compiles the CUDA device
                // library, `tmpxft_*_ishmem_device.*`, are not ours.)
                if n.contains("ishm") && !n.starts_with("tmpxft_") {
                    v.push(format!("{d}/{n}"));
                }
            }
        }
    }
    v.sort();
    v
}

/// Runs `prog args` on `n` PEs and expects it to fail with `code` within
/// 10 s, with every string of `expect` in stderr, every PE gone and
/// nothing left behind.
pub fn expect_failure_of(
    prog: &Path, args: &[&str], n: usize, code: i32, expect: &[&str], envs: &[(&str, &str)],
) -> Run {
    let before = leftovers();
    let what = format!("{} {} on {n} PEs", file_name(prog), args.join(" "));
    let r = run_labeled(launch(n, prog, args, envs, true), FAIL_TIMEOUT, &format!("{what} (expected failure)"));
    if launcher() == Launcher::Mpich {
        // Hydra reports the first process that ended badly, which can be a
        // peer it killed (exit 9) rather than the one that called
        // MPI_Abort(code); the message below still names the error.
        assert!(r.code.is_some_and(|c| c != 0), "{}", r.report(&what));
    } else {
        assert_eq!(r.code, Some(code), "{}", r.report(&what));
    }
    assert!(r.elapsed < FAIL_WITHIN, "{}", r.report(&format!("{what} took too long")));
    // ishmrun's own reports are checked in the ishmrun run of the suite.
    for s in expect.iter().filter(|s| !(under_mpi() && s.starts_with("ishmrun:"))) {
        assert!(r.stderr.contains(s), "expected {s:?} in stderr\n{}", r.report(&what));
    }
    // Every PE ishmrun started is gone.
    for (_, rest) in r.stderr.match_indices("started PE ").map(|(i, _)| r.stderr[i..].split_once("(pid ").unwrap()) {
        let pid: i32 = rest[..rest.find(')').unwrap()].parse().unwrap();
        assert!(!Path::new(&format!("/proc/{pid}")).exists(), "PE process {pid} outlived the job\n{}", r.report(&what));
    }
    assert_eq!(leftovers(), before, "files left behind by {what}");
    r
}

/// Runs errors.c in `mode` on `n` PEs; expects failure (see
/// [`expect_failure_of`]).
pub fn expect_failure(mode: &str, n: usize, code: i32, expect: &[&str], envs: &[(&str, &str)]) {
    expect_failure_of(&c_program("errors"), &[mode], n, code, expect, envs);
}

// ----- the program list -----------------------------------------------------

/// How a listed program is built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    C(String),
    Cxx(String),
    F90(String),
    F77(String),
    Rust(String),
    RustExample(String),
}

/// One line of `tests/programs.list`.
#[derive(Clone, Debug)]
pub struct Entry {
    pub name: String,
    pub source: Source,
    pub pes: Vec<usize>,
    /// Empty: any launcher.
    pub launchers: Vec<String>,
    /// Empty: any device.
    pub devices: Vec<String>,
    pub tags: Vec<String>,
    pub exit: i32,
    pub out: Vec<String>,
    pub err: Vec<String>,
    /// Texts stdout must not contain.
    pub no_out: Vec<String>,
    /// Texts stderr must not contain.
    pub no_err: Vec<String>,
    /// Texts stderr must contain exactly once (one report per job).
    pub once: Vec<String>,
    pub env: Vec<(String, String)>,
    pub args: Vec<String>,
}

fn words(s: &str) -> Vec<String> {
    let v: Vec<String> = s.split_whitespace().map(str::to_string).collect();
    if v.len() == 1 && v[0] == "any" {
        Vec::new()
    } else {
        v
    }
}

/// Parses the text of `tests/programs.list` (see its header).
pub fn parse_list(text: &str) -> Result<Vec<Entry>, String> {
    let mut v: Vec<Entry> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = |m: &str| format!("tests/programs.list:{}: {m}", i + 1);
        let f: Vec<&str> = line.split('|').map(str::trim).collect();
        if f.len() != 9 {
            return Err(at(&format!("{} fields, expected 9", f.len())));
        }
        let (kind, what) = f[1].split_once(':').ok_or_else(|| at("program is not KIND:WHAT"))?;
        let source = match kind {
            "c" => Source::C(what.into()),
            "cxx" => Source::Cxx(what.into()),
            "f90" => Source::F90(what.into()),
            "f77" => Source::F77(what.into()),
            "rust" => Source::Rust(what.into()),
            "rust-example" => Source::RustExample(what.into()),
            _ => return Err(at(&format!("unknown program kind {kind}"))),
        };
        let mut pes = Vec::new();
        for w in f[2].split_whitespace() {
            let bad = || at(&format!("bad PE count {w}"));
            match w.split_once('-') {
                Some((a, b)) => {
                    let (a, b): (usize, usize) = (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
                    pes.extend(a..=b);
                }
                None => pes.push(w.parse().map_err(|_| bad())?),
            }
        }
        if pes.is_empty() {
            return Err(at("no PE counts"));
        }
        let (launchers, devices, tags) = (words(f[3]), words(f[4]), words(f[5]));
        for l in &launchers {
            if !["ishmrun", "openmpi", "mpich", "oshmem", "sos"].contains(&l.as_str()) {
                return Err(at(&format!("unknown launcher {l}")));
            }
        }
        for d in &devices {
            if !["cpu", "opaque", "cuda", "ze"].contains(&d.as_str()) {
                return Err(at(&format!("unknown device {d}")));
            }
        }
        for t in &tags {
            if !["core", "soak", "node"].contains(&t.as_str()) {
                return Err(at(&format!("unknown tag {t}")));
            }
        }
        let (mut exit, mut out, mut err, mut no_out, mut no_err, mut once) =
            (0, Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for clause in f[6].split(';').map(str::trim).filter(|c| !c.is_empty()) {
            match clause.split_once('=') {
                Some(("exit", n)) => exit = n.trim().parse().map_err(|_| at(&format!("bad exit {n}")))?,
                Some(("out", t)) => out.push(t.to_string()),
                Some(("err", t)) => err.push(t.to_string()),
                Some(("!out", t)) => no_out.push(t.to_string()),
                Some(("!err", t)) => no_err.push(t.to_string()),
                Some(("once", t)) => {
                    once.push(t.to_string());
                    err.push(t.to_string());
                }
                _ => return Err(at(&format!("bad expect clause {clause:?}"))),
            }
        }
        let mut env = Vec::new();
        for w in f[7].split_whitespace() {
            let (k, val) = w.split_once('=').ok_or_else(|| at(&format!("env {w} is not NAME=VALUE")))?;
            env.push((k.to_string(), val.to_string()));
        }
        let name = f[0].to_string();
        if v.iter().any(|e| e.name == name) {
            return Err(at(&format!("{name} is listed twice")));
        }
        v.push(Entry {
            name,
            source,
            pes,
            launchers,
            devices,
            tags,
            exit,
            out,
            err,
            no_out,
            no_err,
            once,
            env,
            args: words(f[8]),
        });
    }
    Ok(v)
}

/// The entries of `tests/programs.list`.
pub fn program_list() -> Vec<Entry> {
    let path = env().root.join("tests/programs.list");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    parse_list(&text).unwrap_or_else(|e| panic!("{e}"))
}

impl Entry {
    /// Whether this entry runs in the current leg (launcher, device, tier)
    /// and with which PE counts.
    pub fn counts_here(&self) -> Vec<usize> {
        let l = launcher().name();
        if !self.launchers.is_empty() && !self.launchers.iter().any(|x| x == l) {
            return Vec::new();
        }
        let d = device();
        if !self.devices.is_empty() && !self.devices.contains(&d) {
            return Vec::new();
        }
        if std::env::var("TEST_TIER").as_deref() == Ok("core") && !self.tags.iter().any(|t| t == "core") {
            return Vec::new();
        }
        if self.tags.iter().any(|t| t == "node") && !node_ctrl_shared() {
            return Vec::new();
        }
        let max: usize = std::env::var("TEST_MAX_PES").ok().and_then(|v| v.parse().ok()).unwrap_or(usize::MAX);
        self.pes.iter().copied().filter(|&n| n <= max && !(under_mpi() && n == 1)).collect()
    }

    /// Builds the program; returns the executable.
    pub fn build(&self) -> PathBuf {
        let e = env();
        let name = self.name.split('.').next().unwrap();
        match &self.source {
            Source::C(p) => compile_c(&e.root.join(p), &program_stem(p)),
            Source::Cxx(p) => compile_cxx(&e.root.join(p), &format!("cxx_{}", program_stem(p))),
            Source::F90(p) => compile_fortran(&e.root.join(p), &format!("f_{}", program_stem(p))),
            Source::F77(p) => compile_f77(&e.root.join(p), &format!("f77_{}", program_stem(p))),
            Source::Rust(b) => {
                let p = e.bin_dir.join(b);
                assert!(p.exists(), "{} ({name}) is missing: run cargo build --workspace --all-targets", p.display());
                p
            }
            Source::RustExample(x) => {
                let p = e.bin_dir.join("examples").join(x);
                assert!(p.exists(), "{} ({name}) is missing: run cargo build --workspace --all-targets", p.display());
                p
            }
        }
    }

    /// Runs the program on `n` PEs and checks what the entry expects;
    /// `Err` describes the failure.
    pub fn run(&self, n: usize) -> Result<(), String> {
        let prog = self.build();
        let subst = |s: &str| {
            let others = if n <= 2 { "PE 0".to_string() } else { format!("PEs 0-{}", n - 2) };
            s.replace("{n}", &n.to_string()).replace("{last}", &(n.max(1) - 1).to_string()).replace("{others}", &others)
        };
        let args: Vec<String> = self.args.iter().map(|a| subst(a)).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let envs: Vec<(&str, &str)> = self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let err: Vec<String> = self.err.iter().map(|s| subst(s)).collect();
        let out: Vec<String> = self.out.iter().map(|s| subst(s)).collect();
        let label = format!("{}/{n}", self.name);
        let what = format!("{label} ({})", file_name(&prog));
        let r = if self.exit != 0 {
            let err: Vec<&str> = err.iter().map(String::as_str).collect();
            std::panic::catch_unwind(|| expect_failure_of(&prog, &args, n, self.exit, &err, &envs)).map_err(|p| {
                p.downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "panic".into())
            })?
        } else {
            let r = run_labeled(launch(n, &prog, &args, &envs, false), TIMEOUT, &label);
            if r.code != Some(0) {
                return Err(r.report(&what));
            }
            r
        };
        for s in &self.no_out {
            if r.stdout.contains(s.as_str()) {
                return Err(format!("stdout must not contain {s:?}\n{}", r.report(&what)));
            }
        }
        for s in &self.no_err {
            if r.stderr.contains(s.as_str()) {
                return Err(format!("stderr must not contain {s:?}\n{}", r.report(&what)));
            }
        }
        for s in &self.once {
            let k = r.stderr.matches(s.as_str()).count();
            if k != 1 {
                return Err(format!("{s:?} is in stderr {k} times, expected once\n{}", r.report(&what)));
            }
        }
        for s in &out {
            if !r.stdout.contains(s.as_str()) {
                return Err(format!("expected {s:?} in stdout\n{}", r.report(&what)));
            }
        }
        for s in err.iter().filter(|s| !(under_mpi() && s.starts_with("ishmrun:"))) {
            if !r.stderr.contains(s.as_str()) {
                return Err(format!("expected {s:?} in stderr\n{}", r.report(&what)));
            }
        }
        Ok(())
    }
}

/// `tests/c/rma_types.c` -> `rma_types`.
fn program_stem(p: &str) -> String {
    Path::new(p).file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| p.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launcher_races_are_told_from_program_failures() {
        let run = |code: Option<i32>, signal: Option<i32>, stderr: &str| Run {
            code,
            signal,
            stdout: String::new(),
            stderr: stderr.into(),
            elapsed: Duration::ZERO,
            timed_out: false,
        };
        let hydra = Command::new("mpiexec.mpich");
        let orte = Command::new("mpirun.openmpi");
        assert!(launcher_race(&hydra, &run(None, Some(libc::SIGPIPE), "")).is_some());
        assert!(launcher_race(&hydra, &run(None, Some(libc::SIGKILL), "")).is_none());
        assert!(launcher_race(&orte, &run(None, Some(libc::SIGPIPE), "")).is_none());
        let session = "A call to mkdir was unable to create the desired directory:\n\n  Directory: /tmp/ompi.vm.0\n";
        assert!(launcher_race(&orte, &run(Some(1), None, session)).is_some());
        assert!(launcher_race(&orte, &run(Some(0), None, session)).is_none());
        assert!(launcher_race(&orte, &run(Some(1), None, "ishmem: PE 0: shmem_init failed")).is_none());
    }

    #[test]
    fn parses_the_list_format() {
        let t = "# comment\n\
                 a | c:tests/c/a.c | 1-3 5 | any | cpu opaque | core | out=x {n}; err=y; exit=0 | K=V L= | ok 2\n\
                 b | rust:rust_amo | 2 | ishmrun | any | | exit=3 | | \n";
        let v = parse_list(t).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].pes, vec![1, 2, 3, 5]);
        assert_eq!(v[0].devices, vec!["cpu", "opaque"]);
        assert!(v[0].launchers.is_empty());
        assert_eq!(v[0].out, vec!["x {n}"]);
        assert_eq!(v[0].env, vec![("K".to_string(), "V".to_string()), ("L".to_string(), String::new())]);
        assert_eq!(v[0].args, vec!["ok", "2"]);
        assert_eq!(v[1].exit, 3);
        assert_eq!(v[1].source, Source::Rust("rust_amo".into()));
        assert!(parse_list("a | c:x | 1 | any | gpu | | | |").unwrap_err().contains("unknown device gpu"));
        assert!(parse_list("a | c:x | 1 | any | any | | |").unwrap_err().contains("8 fields"));
        assert!(parse_list("a | c:x | 1 | any | any | | | |\na | c:x | 1 | any | any | | | |")
            .unwrap_err()
            .contains("listed twice"));
    }
}
