//! The multi-PE harness: builds the C PE programs against the generated
//! headers and `libishmem.so`, runs every PE program under `ishmrun` on 1..4
//! PEs with a timeout, and prints a program's output only when it fails.
//!
//! Needs `cargo build --workspace` first (the README's test command does it)
//! for `ishmrun` and `libishmem.so`.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const TIMEOUT: Duration = Duration::from_secs(120);

struct Env {
    root: PathBuf,
    bin_dir: PathBuf,
    build_dir: PathBuf,
}

fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
        // The test executable lives in <target>/<profile>/deps.
        let exe = std::env::current_exe().unwrap();
        let bin_dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
        for f in ["ishmrun", "libishmem.so"] {
            assert!(
                bin_dir.join(f).exists(),
                "{} is missing: run `cargo build --workspace` before the tests",
                bin_dir.join(f).display()
            );
        }
        // Programs record the soname; give it a name next to the library.
        let so0 = bin_dir.join("libishmem.so.0");
        let _ = std::fs::remove_file(&so0);
        std::os::unix::fs::symlink("libishmem.so", &so0).expect("symlink libishmem.so.0");
        let build_dir = bin_dir.join("c-tests");
        std::fs::create_dir_all(&build_dir).unwrap();
        Env { root, bin_dir, build_dir }
    })
}

/// Compiles `tests/c/<name>.c` once; returns the executable.
fn c_program(name: &str) -> PathBuf {
    compile_c(&env().root.join("tests/c").join(format!("{name}.c")), name)
}

/// Compiles a C PE program once, against the generated headers and
/// libishmem.so; returns the executable.
fn compile_c(src: &Path, name: &str) -> PathBuf {
    static BUILT: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap();
    let out = env().build_dir.join(name);
    if !built.iter().any(|b| b == name) {
        let e = env();
        let inc = e.root.join("tests/c");
        compile(
            "CC",
            "cc",
            &["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-pthread"],
            &[src],
            &[&inc],
            &["-lm"],
            name,
        );
        built.push(name.to_string());
    }
    out
}

/// Compiles a C++ PE program against the headers (C++ layer included).
fn compile_cxx(src: &Path, name: &str) -> PathBuf {
    compile("CXX", "c++", &["-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror"], &[src], &[], &[], name)
}

/// Compiles a Fortran PE program with the generated `shmem` and `ishmem`
/// modules (built into a directory of its own).
fn compile_fortran(src: &Path, name: &str) -> PathBuf {
    let e = env();
    let moddir = e.build_dir.join(format!("fmod-{name}"));
    std::fs::create_dir_all(&moddir).unwrap();
    let (shmem, ishmem) = (e.root.join("bindings/fortran/shmem.f90"), e.root.join("bindings/fortran/ishmem.f90"));
    let j = format!("-J{}", moddir.display());
    compile("FC", "gfortran", &["-O2", "-Wall", "-Werror", &j], &[&shmem, &ishmem, src], &[], &[], name)
}

/// Runs compiler `$var` (default `default`) on `srcs` with the generated
/// headers on the include path and libishmem linked; returns the program.
fn compile(
    var: &str, default: &str, flags: &[&str], srcs: &[&Path], incs: &[&Path], libs: &[&str], name: &str,
) -> PathBuf {
    let e = env();
    let out = e.build_dir.join(name);
    let compiler = std::env::var(var).unwrap_or_else(|_| default.into());
    let mut cmd = Command::new(&compiler);
    cmd.args(flags).args(srcs).arg("-I").arg(e.root.join("bindings/c/include"));
    for i in incs {
        cmd.arg("-I").arg(i);
    }
    cmd.arg("-L").arg(&e.bin_dir).arg("-lishmem").args(libs);
    cmd.arg(format!("-Wl,-rpath,{}", e.bin_dir.display())).arg("-o").arg(&out);
    let o = cmd.output().unwrap_or_else(|err| panic!("cannot run {compiler} (tests/run-all.sh installs it): {err}"));
    assert!(o.status.success(), "compiling {srcs:?} with {compiler}:\n{}", String::from_utf8_lossy(&o.stderr));
    out
}

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

impl Run {
    fn report(&self, what: &str) -> String {
        format!(
            "{what}: exit {:?} after {:.1?}\n--- stdout ---\n{}--- stderr ---\n{}",
            self.code, self.elapsed, self.stdout, self.stderr
        )
    }
}

/// Runs `cmd` with a timeout, collecting its output.
fn run_cmd(mut cmd: Command, timeout: Duration) -> Run {
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
            // SAFETY: signalling our own child (ishmrun forwards it).
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            std::thread::sleep(Duration::from_secs(3));
            let _ = child.kill();
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let mut stderr = t_err.join().unwrap();
    if timed_out {
        stderr.push_str(&format!("\n[harness: killed after the {timeout:?} timeout]\n"));
    }
    Run { code: status.code(), stdout: t_out.join().unwrap(), stderr, elapsed: start.elapsed() }
}

/// What starts the PEs. `TEST_LAUNCHER=openmpi|mpich` runs the
/// suite under that MPI's launcher, so the programs bootstrap through the
/// MPI proxy; `ISHMEM_ENABLE_SHM` (passed through) decides whether PEs on
/// this machine share memory or reach each other only through MPI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Launcher {
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

fn launcher() -> Launcher {
    match std::env::var("TEST_LAUNCHER").as_deref() {
        Err(_) | Ok("") | Ok("ishmrun") => Launcher::Ishmrun,
        Ok("openmpi") => Launcher::OpenMpi,
        Ok("mpich") => Launcher::Mpich,
        Ok("oshmem") => Launcher::Oshmem,
        Ok("sos") => Launcher::Sos,
        Ok(other) => panic!("TEST_LAUNCHER={other}: expected ishmrun, openmpi, mpich, oshmem or sos"),
    }
}

/// True when the suite runs under an MPI launcher (ishmrun-only checks are
/// left to the ishmrun run of the suite).
fn under_mpi() -> bool {
    launcher() != Launcher::Ishmrun
}

/// The command that starts `prog` on `n` PEs with `envs` set for them.
fn launch(n: usize, prog: &Path, args: &[&str], envs: &[(&str, &str)], verbose: bool) -> Command {
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
        .filter(|(k, _)| k.starts_with("ISHMEM_") && k != "TEST_LAUNCHER")
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

fn ishmrun(n: usize, prog: &Path, args: &[&str], envs: &[(&str, &str)]) -> Run {
    run_cmd(launch(n, prog, args, envs, false), TIMEOUT)
}

/// Runs `prog` on 1, 2, 3 and 4 PEs (2..4 under MPI; at most
/// `TEST_MAX_PES` when set); each must succeed.
fn on_1_to_4(prog: &Path, envs: &[(&str, &str)]) {
    let max: usize = std::env::var("TEST_MAX_PES").ok().and_then(|v| v.parse().ok()).unwrap_or(4);
    for n in (if under_mpi() { 2 } else { 1 })..=max.min(4) {
        let r = ishmrun(n, prog, &[], envs);
        assert!(r.code == Some(0), "{}", r.report(&format!("{} on {n} PEs", prog.display())));
    }
}

#[test]
fn c_rma_types() {
    on_1_to_4(&c_program("rma_types"), &[]);
}

#[test]
fn c_fence_order() {
    on_1_to_4(&c_program("fence_order"), &[]);
}

#[test]
fn c_alloc() {
    on_1_to_4(&c_program("alloc"), &[("ISHMEM_SYMMETRIC_SIZE", "64m")]);
}

#[test]
fn c_alloc_exhaustion_message() {
    let r = ishmrun(2, &c_program("alloc"), &[], &[("ISHMEM_SYMMETRIC_SIZE", "64m")]);
    assert!(r.code == Some(0), "{}", r.report("alloc"));
    assert!(
        r.stderr.contains("requested 1099511627776 bytes")
            && r.stderr.contains("bytes free")
            && r.stderr.contains("ISHMEM_SYMMETRIC_SIZE"),
        "{}",
        r.report("exhaustion message")
    );
}

#[test]
fn c_amo() {
    on_1_to_4(&c_program("amo"), &[]);
}

#[test]
fn c_signal() {
    on_1_to_4(&c_program("signal"), &[]);
}

#[test]
fn c_wait_test() {
    on_1_to_4(&c_program("wait_test"), &[]);
}

#[test]
fn rust_amo() {
    on_1_to_4(Path::new(env!("CARGO_BIN_EXE_rust_amo")), &[]);
}

#[test]
fn c_teams_and_collectives() {
    on_1_to_4(&c_program("coll"), &[]);
}

/// The publish-and-pull small collectives (stage.rs): back-to-back calls
/// checked one by one, moving roots, split/strided/reversed teams, active
/// sets alternating pSync arrays; also on 5 and 7 PEs (non-power-of-two,
/// oversubscribed here: members fall far behind one another).
#[test]
fn c_small_collectives() {
    let prog = c_program("coll_small");
    on_1_to_4(&prog, &[]);
    // Without the check, members do not wait for their predecessor's
    // header, so a root runs further ahead.
    on_1_to_4(&prog, &[("ISHMEM_COLL_CHECK", "0")]);
    if !under_mpi() {
        for n in [5, 7] {
            let r = ishmrun(n, &prog, &[], &[]);
            assert!(
                r.code == Some(0) && r.stdout.contains("coll_small ok"),
                "{}",
                r.report(&format!("coll_small on {n} PEs"))
            );
        }
    }
}

#[test]
fn rust_globals() {
    on_1_to_4(Path::new(env!("CARGO_BIN_EXE_rust_globals")), &[]);
}

#[test]
fn rust_coll() {
    on_1_to_4(Path::new(env!("CARGO_BIN_EXE_rust_coll")), &[]);
}

#[test]
fn c_threads_and_queries() {
    on_1_to_4(&c_program("threads_misc"), &[]);
}

#[test]
fn startup_printouts() {
    let r = ishmrun(2, &c_program("errors"), &["ok"], &[("SHMEM_VERSION", "1"), ("SHMEM_INFO", "1")]);
    assert!(r.code == Some(0), "{}", r.report("printouts"));
    assert_eq!(r.stdout.matches("ishmem-rs 0.1.0: OpenSHMEM 1.5").count(), 1, "{}", r.report("version printed once"));
    assert!(
        r.stdout.contains("ISHMEM_SYMMETRIC_SIZE=512m [default]") && r.stdout.contains("SHMEM_INFO=1 [set]"),
        "{}",
        r.report("info")
    );
}

#[test]
fn global_exit_ends_the_job() {
    // PE n-1 calls global_exit(7) while PE 0 computes outside the library
    // and the others wait in a barrier.
    for n in [1, 3] {
        expect_failure("global_exit", n, 7, &[&format!("ishmrun: PE {} called shmem_global_exit(7)", n - 1)], &[]);
    }
}

#[test]
fn c_locks_and_globals() {
    on_1_to_4(&c_program("locks_globals"), &[]);
}

#[test]
fn c_contexts() {
    on_1_to_4(&c_program("ctx"), &[]);
}

#[test]
fn c_deprecated_names_only() {
    let prog = c_program("deprecated");
    for n in 1..=4 {
        let r = ishmrun(n, &prog, &[], &[]);
        assert!(
            r.code == Some(0) && r.stdout.contains("deprecated ok"),
            "{}",
            r.report(&format!("deprecated on {n} PEs"))
        );
    }
}

#[test]
fn c_example_heat() {
    let prog = c_program("example_heat");
    for n in 1..=4 {
        let r = ishmrun(n, &prog, &[], &[]);
        assert!(r.code == Some(0) && r.stdout.contains("heat ok"), "{}", r.report(&format!("heat on {n} PEs")));
    }
}

#[test]
fn c_conformance() {
    on_1_to_4(&c_program("conformance"), &[]);
}

#[test]
fn c_generics_every_selection() {
    on_1_to_4(&c_program("generics"), &[]);
}

#[test]
fn c_profiling_interface() {
    let prog = c_program("profiling");
    for n in [1, 3] {
        let r = ishmrun(n, &prog, &[], &[]);
        assert!(
            r.code == Some(0) && r.stdout.contains("profiling ok"),
            "{}",
            r.report(&format!("profiling on {n} PEs"))
        );
    }
}

#[test]
fn cxx_conformance() {
    let prog = compile_cxx(&env().root.join("tests/cxx/conformance.cpp"), "cxx_conformance");
    for n in 1..=4 {
        let r = ishmrun(n, &prog, &[], &[]);
        assert!(
            r.code == Some(0) && r.stdout.contains("C++ conformance ok"),
            "{}",
            r.report(&format!("C++ conformance on {n} PEs"))
        );
    }
}

#[test]
fn cxx_intel_style() {
    let prog = compile_cxx(&env().root.join("bindings/cxx/examples/intel_style.cpp"), "intel_style");
    for n in 1..=4 {
        let r = ishmrun(n, &prog, &[], &[]);
        assert!(
            r.code == Some(0) && r.stdout.contains("intel-style C++ ok"),
            "{}",
            r.report(&format!("C++ on {n} PEs"))
        );
    }
}

#[test]
fn fortran_examples() {
    for (name, want) in [("heat", "fortran heat ok"), ("coverage", "fortran coverage ok")] {
        let prog =
            compile_fortran(&env().root.join(format!("bindings/fortran/examples/{name}.f90")), &format!("f_{name}"));
        for n in 1..=4 {
            let r = ishmrun(n, &prog, &[], &[]);
            assert!(
                r.code == Some(0) && r.stdout.contains(want),
                "{}",
                r.report(&format!("Fortran {name} on {n} PEs"))
            );
        }
    }
}

/// The classic interface: a fixed-form program with `include 'shmem.fh'`,
/// COMMON blocks and a Cray pointer, and its error for a negative count.
#[test]
fn fortran_classic() {
    let e = env();
    let inc = format!("-I{}", e.root.join("bindings/fortran").display());
    let src = e.root.join("bindings/fortran/examples/classic.f");
    let prog =
        compile("FC", "gfortran", &["-O2", "-Wall", "-Werror", "-fcray-pointer", &inc], &[&src], &[], &[], "f_classic");
    for n in 1..=4 {
        let r = ishmrun(n, &prog, &[], &[]);
        assert!(
            r.code == Some(0) && r.stdout.contains("fortran classic ok"),
            "{}",
            r.report(&format!("classic on {n} PEs"))
        );
    }
    let r = ishmrun(2, &prog, &[], &[("CLASSIC_BAD_COUNT", "1")]);
    assert!(
        r.code != Some(0) && r.stderr.contains("SHMEM_INTEGER_PUT: nelems -1 is negative"),
        "{}",
        r.report("classic with a negative count")
    );
}

#[test]
fn rust_crate_examples() {
    // Built by `cargo build --workspace --all-targets` (tests/run-all.sh).
    let prog = env().bin_dir.join("examples/ring");
    assert!(prog.exists(), "{} is missing: run cargo build --workspace --all-targets", prog.display());
    for n in 1..=4 {
        let r = ishmrun(n, &prog, &[], &[]);
        assert!(r.code == Some(0) && r.stdout.contains("ring ok"), "{}", r.report(&format!("ring on {n} PEs")));
    }
}

#[test]
fn rust_rma() {
    on_1_to_4(Path::new(env!("CARGO_BIN_EXE_rust_rma")), &[]);
}

#[test]
fn hello_ring_example() {
    let prog = compile_c(&env().root.join("packaging/examples/hello_ring.c"), "hello_ring");
    for n in 1..=4 {
        let r = ishmrun(n, &prog, &[], &[]);
        let want = format!("sum = {} (expected {})", 1000 * n + n * (n - 1) / 2, 1000 * n + n * (n - 1) / 2);
        assert!(r.code == Some(0) && r.stdout.contains(&want), "{}", r.report("hello_ring"));
    }
}

#[test]
fn singleton_without_launcher() {
    let mut cmd = Command::new(c_program("rma_types"));
    cmd.env_remove("ISHMRUN_FD");
    let r = run_cmd(cmd, TIMEOUT);
    assert!(r.code == Some(0), "{}", r.report("singleton"));
    let mut cmd = Command::new(c_program("alloc"));
    cmd.env("ISHMEM_SYMMETRIC_SIZE", "64m");
    let r = run_cmd(cmd, TIMEOUT);
    assert!(r.code == Some(0) && r.stdout.contains("alloc ok"), "{}", r.report("singleton alloc"));
}

#[test]
fn openshmem_proxy_load_errors() {
    if under_mpi() {
        return; // launcher-independent: checked once, in the ishmrun run
    }
    // A library that is not there, and one that is not an OpenSHMEM
    // library: a clear error naming what was tried and why, no hang.
    for (lib, why) in [
        (
            "libnot-a-shmem-library.so",
            "libnot-a-shmem-library.so (libnot-a-shmem-library.so: cannot open shared object file",
        ),
        ("libm.so.6", "libm.so.6 (not an OpenSHMEM library: lacks shmem_my_pe, shmem_n_pes"),
    ] {
        let mut cmd = Command::new(c_program("rma_types"));
        cmd.env("ISHMEM_RUNTIME", "OPENSHMEM").env("ISHMEM_SHMEM_LIB_NAME", lib);
        let r = run_cmd(cmd, Duration::from_secs(30));
        let what = format!("OpenSHMEM proxy with ISHMEM_SHMEM_LIB_NAME={lib}");
        assert!(r.code == Some(1) && r.elapsed < Duration::from_secs(10), "{}", r.report(&what));
        assert!(
            r.stderr.contains("shmem_init: cannot load a host OpenSHMEM library") && r.stderr.contains(why),
            "{}",
            r.report(&what)
        );
    }
}

// ----- errors: non-zero exit within seconds, a clear message, nothing left

/// Names in /dev/shm and /tmp that look like ours.
fn leftovers() -> Vec<String> {
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

/// Runs errors.c in `mode` on `n` PEs; expects failure with `code`, within
/// 10 s, with every string of `expect` in stderr.
fn expect_failure(mode: &str, n: usize, code: i32, expect: &[&str], envs: &[(&str, &str)]) {
    let before = leftovers();
    let prog = c_program("errors");
    let r = run_cmd(launch(n, &prog, &[mode], envs, true), Duration::from_secs(30));
    let what = format!("errors {mode} on {n} PEs ({:?})", launcher());
    if launcher() == Launcher::Mpich {
        // Hydra reports the first process that ended badly, which can be a
        // peer it killed (exit 9) rather than the one that called
        // MPI_Abort(code); the message below still names the error.
        assert!(r.code.is_some_and(|c| c != 0), "{}", r.report(&what));
    } else {
        assert_eq!(r.code, Some(code), "{}", r.report(&what));
    }
    assert!(r.elapsed < Duration::from_secs(10), "{}", r.report(&format!("{what} took too long")));
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
}

#[test]
fn error_pe_out_of_range() {
    for n in [1, 2, 4] {
        expect_failure(
            "bad_pe",
            n,
            1,
            &[&format!("ishmem: PE 0: shmem_long_p: PE {n} is out of range"), "ishmrun: PE 0 (pid"],
            &[],
        );
    }
    expect_failure("negative_pe", 3, 1, &["ishmem: PE 2: shmem_long_put: PE -3 is out of range"], &[]);
}

#[test]
fn error_not_symmetric() {
    expect_failure(
        "not_symmetric",
        2,
        1,
        &["ishmem: PE 0: shmem_long_put: dest 0x", "is not a symmetric address"],
        &[],
    );
    expect_failure("past_end", 2, 1, &["shmem_putmem: dest", "runs past the end of the symmetric heap"], &[]);
}

#[test]
fn error_null_pointers() {
    expect_failure("null_dest", 2, 1, &["ishmem: PE 0: shmem_putmem: dest is a null pointer"], &[]);
    expect_failure("null_get_dest", 2, 1, &["ishmem: PE 0: shmem_getmem: dest is a null pointer"], &[]);
}

#[test]
fn error_lifecycle() {
    expect_failure("before_init", 2, 1, &["shmem_barrier_all: called before the library was initialized"], &[]);
    expect_failure("after_finalize", 2, 1, &["shmem_barrier_all: called after the library was finalized"], &[]);
}

#[test]
fn error_collective_mismatch() {
    expect_failure(
        "malloc_mismatch",
        3,
        1,
        &["shmem_malloc: collective call #2 has different arguments", "malloc(size=64)", "PE 2: malloc(size=128)"],
        &[],
    );
    expect_failure("free_mismatch", 2, 1, &["shmem_free: collective call", "PE 1: free(heap offset"], &[]);
    expect_failure("free_bad", 2, 1, &["shmem_free: ptr 0x", "is not the start of a live symmetric allocation"], &[]);
    expect_failure("bad_align", 2, 1, &["shmem_align: alignment 24 is not a power of two"], &[]);
}

#[test]
fn error_amo_signal_wait() {
    expect_failure("amo_bad_pe", 2, 1, &["ishmem: PE 0: shmem_long_atomic_fetch_add: PE 7 is out of range"], &[]);
    expect_failure(
        "wait_not_symmetric",
        2,
        1,
        &["ishmem: PE 0: shmem_long_wait_until: ivar 0x", "is not a symmetric address"],
        &[],
    );
    expect_failure("wait_bad_cmp", 2, 1, &["shmem_long_wait_until: cmp 42 is not a comparison operator"], &[]);
    expect_failure("bad_sig_op", 2, 1, &["shmem_long_put_signal: sig_op 7 is not a signal operator"], &[]);
    expect_failure("amo_misaligned", 1, 1, &["shmem_int_atomic_add: dest 0x", "is not aligned to 4 bytes"], &[]);
}

#[test]
fn error_teams() {
    expect_failure(
        "bad_team",
        2,
        1,
        &["ishmem: PE 0: shmem_int_sum_reduce: team handle 40 is not a team this PE belongs to"],
        &[],
    );
    expect_failure(
        "destroy_world",
        2,
        1,
        &["shmem_team_destroy: team 0 is a predefined team and cannot be destroyed"],
        &[],
    );
    expect_failure("bad_root", 2, 1, &["shmem_long_broadcast: PE_root 9 is out of range for a team of 2 PEs"], &[]);
    expect_failure("coll_not_symmetric", 2, 1, &["shmem_long_broadcast: source 0x", "is not a symmetric address"], &[]);
}

#[test]
fn error_contexts() {
    expect_failure("ctx_destroyed", 2, 1, &["ishmem: PE 0: shmem_ctx_long_put: ctx 0x", "is not a live context"], &[]);
    // RMA on SHMEM_CTX_INVALID is an error (only destroy, fence, quiet and
    // get_team accept it).
    expect_failure("ctx_invalid_put", 2, 1, &["ishmem: PE 0: shmem_ctx_long_put: ctx is SHMEM_CTX_INVALID"], &[]);
    expect_failure(
        "ctx_bad_pe",
        2,
        1,
        &["shmem_ctx_long_p: PE 5 is out of range for the context's team of 2 PEs"],
        &[],
    );
}

#[test]
fn error_active_set() {
    expect_failure(
        "aset_not_member",
        3,
        1,
        &["ishmem: PE 0: shmem_barrier: this PE is not in the active set (PE_start 1, logPE_stride 0, PE_size 2)"],
        &[],
    );
}

#[test]
fn error_bad_environment() {
    expect_failure("ok", 2, 1, &["ISHMEM_SYMMETRIC_SIZE=\"lots\" is not valid"], &[("ISHMEM_SYMMETRIC_SIZE", "lots")]);
    expect_failure(
        "ok",
        2,
        1,
        &["ISHMEM_DEVICE=\"gpu9\" is not valid: expected one of the device backends: auto, cpu, cuda, ze or opaque"],
        &[("ISHMEM_DEVICE", "gpu9")],
    );
}

/// `ISHMEM_DEVICE=ze` without what it needs ends init at once, naming what
/// was tried: no loader, the loader without a GPU driver (Debian's libze1,
/// which the suite installs, has none), and a driver on a machine without a
/// GPU (Debian's intel-opencl-icd unpacked where `TEST_ZE_DRIVER_DIR` says;
/// tests/run-all.sh fetches it).
#[test]
fn error_ze_fail_fast() {
    let ze = ("ISHMEM_DEVICE", "ze");
    expect_failure(
        "ok",
        2,
        1,
        &["ISHMEM_DEVICE=ze: no Level Zero loader: tried /nonexistent/libze_loader.so.1 (", "install libze1"],
        &[ze, ("ISHMEM_ZE_LOADER", "/nonexistent/libze_loader.so.1")],
    );
    expect_failure(
        "ok",
        2,
        1,
        &[
            "ISHMEM_DEVICE=ze: the Level Zero loader libze_loader.so.1 has no GPU driver",
            "ZE_RESULT_ERROR_UNINITIALIZED",
            "tried libze_intel_gpu.so.1 (",
            "install Intel's GPU compute runtime",
        ],
        &[ze],
    );
    match std::env::var("TEST_ZE_DRIVER_DIR") {
        Ok(dir) => expect_failure(
            "ok",
            2,
            1,
            &["ISHMEM_DEVICE=ze: the Level Zero GPU driver libze_intel_gpu.so.1 is installed, but this machine has no GPU device node: no /dev/dri/renderD*"],
            &[ze, ("LD_LIBRARY_PATH", &dir)],
        ),
        Err(_) => eprintln!("error_ze_fail_fast: the no-GPU case skipped (TEST_ZE_DRIVER_DIR is not set)"),
    }
}

#[test]
fn pe_death_ends_the_job() {
    if under_mpi() {
        // The MPI launcher reports a dead process its own way (checked by
        // tests/mpi); these are ishmrun's reports.
        return;
    }
    expect_failure(
        "sigkill",
        4,
        137,
        &["ishmrun: PE 3 (pid", "was killed by signal 9 (SIGKILL)", "terminating the other"],
        &[],
    );
    expect_failure("segv", 2, 139, &["ishmrun: PE 0 (pid", "killed by signal 11 (SIGSEGV)"], &[]);
    expect_failure("exit_code", 3, 3, &["ishmrun: PE 2 (pid", "exited with status 3"], &[]);
}

#[test]
fn ishmrun_timeout_and_usage() {
    if under_mpi() {
        return; // ishmrun itself: covered by the ishmrun run of the suite.
    }
    let prog = c_program("errors");
    let mut cmd = Command::new(env().bin_dir.join("ishmrun"));
    cmd.args(["-n", "2", "-t", "1"]).arg(&prog).arg("hang");
    let r = run_cmd(cmd, Duration::from_secs(30));
    assert!(r.code == Some(124) && r.stderr.contains("did not finish within 1.0 s"), "{}", r.report("timeout"));
    assert!(r.elapsed < Duration::from_secs(6), "{}", r.report("timeout took too long"));

    let r = run_cmd(Command::new(env().bin_dir.join("ishmrun")), Duration::from_secs(10));
    assert!(r.code == Some(2) && r.stderr.contains("usage: ishmrun"), "{}", r.report("usage"));
    let mut cmd = Command::new(env().bin_dir.join("ishmrun"));
    cmd.args(["-n", "2", "/nonexistent/program"]);
    let r = run_cmd(cmd, Duration::from_secs(10));
    assert!(
        r.code == Some(1) && r.stderr.contains("cannot start /nonexistent/program: No such file"),
        "{}",
        r.report("missing program")
    );

    // A program that never initializes the library runs fine under ishmrun.
    let mut cmd = Command::new(env().bin_dir.join("ishmrun"));
    cmd.args(["-n", "3", "/bin/true"]);
    let r = run_cmd(cmd, Duration::from_secs(10));
    assert!(r.code == Some(0), "{}", r.report("/bin/true"));
}

// ----- under an MPI launcher only ------------------------------------------

/// Compiles a C program with the launcher's MPI compiler wrapper.
fn compile_mpi(name: &str) -> PathBuf {
    let wrapper = match launcher() {
        Launcher::OpenMpi => "mpicc.openmpi",
        Launcher::Mpich => "mpicc.mpich",
        Launcher::Ishmrun | Launcher::Oshmem | Launcher::Sos => {
            unreachable!("MPI programs run under an MPI launcher")
        }
    };
    let e = env();
    let out = e.build_dir.join(format!("{name}-{wrapper}"));
    let src = e.root.join("tests/c").join(format!("{name}.c"));
    let o = Command::new(wrapper)
        .args(["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-pthread"])
        .arg(&src)
        .arg("-I")
        .arg(e.root.join("bindings/c/include"))
        .arg("-I")
        .arg(e.root.join("tests/c"))
        .arg("-L")
        .arg(&e.bin_dir)
        .arg("-lishmem")
        .arg(format!("-Wl,-rpath,{}", e.bin_dir.display()))
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap_or_else(|err| panic!("cannot run {wrapper}: {err}"));
    assert!(o.status.success(), "compiling {name} with {wrapper}:\n{}", String::from_utf8_lossy(&o.stderr));
    out
}

#[test]
fn mpi_application_owns_mpi() {
    if !matches!(launcher(), Launcher::OpenMpi | Launcher::Mpich) {
        return; // needs an MPI launcher: run with TEST_LAUNCHER=openmpi|mpich
    }
    let prog = compile_mpi("app_owns_mpi");
    for n in 1..=4 {
        let r = ishmrun(n, &prog, &[], &[]);
        assert!(
            r.code == Some(0) && r.stdout.contains("app owns mpi ok"),
            "{}",
            r.report(&format!("app_owns_mpi on {n} PEs"))
        );
    }
    // FUNNELED and a remote target: another thread gets a clear error.
    if std::env::var("ISHMEM_ENABLE_SHM").as_deref() == Ok("0") {
        let r = ishmrun(2, &prog, &["other_thread"], &[]);
        assert!(
            r.code.is_some_and(|c| c != 0)
                && r.stderr.contains("ishmem_long_put: this operation needs MPI")
                && r.stderr.contains("MPI_THREAD_FUNNELED"),
            "{}",
            r.report("put from a second thread under FUNNELED")
        );
    }
}

/// Security: the MPI proxy plugin is never taken from beside the
/// executable, and a plugin file or directory others can write is refused.
/// A planted plugin's constructor would write its marker file.
#[test]
fn mpi_planted_plugin_refused() {
    if launcher() != Launcher::OpenMpi {
        eprintln!("mpi_planted_plugin_refused: runs in the Open MPI pass of the suite");
        return;
    }
    let dir = std::env::temp_dir().join(format!("planted-plugin-test.{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mark = dir.join("planted-ran");
    let src = dir.join("plant.c");
    std::fs::write(
        &src,
        format!(
            "#include <stdio.h>\n__attribute__((constructor)) static void planted(void) {{ FILE *f = fopen(\"{}\", \"w\"); if (f) fclose(f); }}\nint ishmem_proxy_init(void) {{ return 1; }}\n",
            mark.display()
        ),
    )
    .unwrap();
    let plugin = dir.join("libishmem_proxy_oshmpi-openmpi.so");
    let o = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-shared", "-fPIC", "-o"])
        .arg(&plugin)
        .arg(&src)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // A statically linked program (the runtime is in the executable),
    // copied beside the plant, as in a shared or temporary directory.
    let prog = dir.join("rust_amo");
    std::fs::copy(env!("CARGO_BIN_EXE_rust_amo"), &prog).unwrap();
    let run = |extra: &[(&str, &str)]| {
        let mut c = Command::new("mpirun.openmpi");
        c.args(["--allow-run-as-root", "--oversubscribe", "-n", "1"]).arg(&prog);
        c.env_remove("ISHMEM_MPI_PROXY").env_remove("ISHMEM_ROOT");
        for (k, v) in extra {
            c.env(k, v);
        }
        run_cmd(c, Duration::from_secs(60))
    };
    // Not searched at all: the executable's directory is not a plugin directory.
    let r = run(&[]);
    assert!(
        r.code != Some(0) && r.stderr.contains("cannot load the MPI proxy plugin"),
        "{}",
        r.report("plant beside exe")
    );
    assert!(!r.stderr.contains(&plugin.display().to_string()), "{}", r.report("the exe dir must not be searched"));
    assert!(!mark.exists(), "the planted plugin ran\n{}", r.report("plant beside exe"));
    // Named explicitly but in a directory everyone can write: refused.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let r = run(&[("ISHMEM_MPI_PROXY", plugin.to_str().unwrap())]);
    assert!(
        r.code != Some(0) && r.stderr.contains("refused: its directory") && r.stderr.contains("writable by everyone"),
        "{}",
        r.report("world-writable plugin directory")
    );
    assert!(!mark.exists(), "the planted plugin ran\n{}", r.report("world-writable directory"));
    // A group-writable plugin file in a safe directory: refused too.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&plugin, std::fs::Permissions::from_mode(0o775)).unwrap();
    let r = run(&[("ISHMEM_MPI_PROXY", dir.to_str().unwrap())]);
    assert!(
        r.code != Some(0) && r.stderr.contains("refused: the file") && r.stderr.contains("writable by its group"),
        "{}",
        r.report("group-writable plugin file")
    );
    assert!(!mark.exists(), "the planted plugin ran");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Security: other local processes that connect to a job's node bootstrap
/// socket (read from /proc/net/unix) neither take a PE's place nor end the
/// job: another user's connection (when the suite runs as root) and a
/// same-user one with a wrong secret. The PEs other than the node's first
/// connect late, so the racers are first.
#[test]
fn mpi_bootstrap_survives_racers() {
    if !matches!(launcher(), Launcher::OpenMpi | Launcher::Mpich)
        || std::env::var("ISHMEM_ENABLE_SHM").as_deref() == Ok("0")
    {
        eprintln!("mpi_bootstrap_survives_racers: runs in the MPI passes with node-local sharing");
        return;
    }
    let racer = env!("CARGO_BIN_EXE_bootstrap_racer");
    let mut racers = Vec::new();
    // SAFETY: getuid cannot fail.
    if unsafe { libc::getuid() } == 0 {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", racer, "20"]);
        racers.push(("another user", c));
    } else {
        eprintln!("mpi_bootstrap_survives_racers: not root, so no second user: only the same-user racer runs");
    }
    let mut c = Command::new(racer);
    c.args(["20", "junk"]);
    racers.push(("same user, wrong secret", c));
    let mut children = Vec::new();
    for (what, mut c) in racers {
        let mut ch = c.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let mut line = String::new();
        use std::io::BufRead;
        std::io::BufReader::new(ch.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
        assert!(line.contains("racer ready"), "{what}: racer did not start: {line}");
        children.push((what, ch));
    }
    let r = ishmrun(3, &c_program("rma_types"), &[], &[("ISHMEM_TEST_CONNECT_DELAY_MS", "1000")]);
    for (what, mut ch) in children {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(ch.id() as i32, libc::SIGTERM) };
        let _ = ch.wait();
        let mut out = String::new();
        let _ = ch.stdout.take().unwrap().read_to_string(&mut out);
        assert!(r.code == Some(0), "{}", r.report(&format!("job raced by {what}")));
        assert!(out.contains("racer: connected to ishmem-"), "{what}: the racer never connected: {out}");
    }
    assert!(r.code == Some(0), "{}", r.report("job with racers"));
}

/// Reliability: a PE that ends between init and finalize, or finalizes
/// while the others still wait for it, ends the job within seconds with a
/// message naming it, instead of a hang.
#[test]
fn pe_gone_ends_waits() {
    if under_mpi() {
        eprintln!("pe_gone_ends_waits: ishmrun records PE exits; the MPI launchers end such jobs themselves");
        return;
    }
    for n in [2, 3] {
        let last = n - 1;
        expect_failure(
            "exit_without_finalize",
            n,
            1,
            &[
                &format!("ishmrun: PE {last} (pid"),
                "exited with status 0 without calling shmem_finalize",
                &format!(": waiting in the library: PE {last} exited (status 0) without calling shmem_finalize"),
            ],
            &[],
        );
        // With the collective check off, the finalize at exit matches the
        // others' barrier, and their next wait sees the PE gone.
        expect_failure(
            "finalize_mismatch",
            n,
            1,
            &[&format!(
                ": waiting in the library: PE {last} called shmem_finalize and exited while this PE still waits for it"
            )],
            &[("ISHMEM_COLL_CHECK", "0")],
        );
        // With it on, the first barrier reports the mismatch.
        expect_failure(
            "finalize_mismatch",
            n,
            1,
            &[
                "made different collective calls",
                &format!("PE {last}: finalize (called, or run at exit)"),
                "a barrier or sync (barrier_all, sync_all or team_sync)",
            ],
            &[],
        );
    }
}

/// Mismatched collective calls (the last PE differs): each ends the job
/// with one report naming both calls, instead of corrupting memory or
/// hanging; on 3 PEs one PE's predecessor agrees with it, so the ring check
/// must still catch it.
#[test]
fn collective_mismatch_detected() {
    let cases: &[(&str, &str, &str)] = &[
        ("mm_fcollect", "fcollect of 384 bytes per PE", "fcollect of 64 bytes per PE"),
        ("mm_bcast_size", "broadcast of 64 bytes from team PE 0", "broadcast of 32 bytes from team PE 0"),
        ("mm_bcast_root", "broadcast of 32 bytes from team PE 0", "broadcast of 32 bytes from team PE 1"),
        ("mm_reduce_count", "sum reduction of 4 elements of 32-bit integer", "sum reduction of 2 elements of 32-bit"),
        ("mm_reduce_op", "sum reduction of 4 elements", "max reduction of 4 elements"),
        ("mm_reduce_type", "sum reduction of 4 elements of 32-bit integer", "sum reduction of 4 elements of float"),
        ("mm_barrier_reduce", "sum reduction of 2 elements of 64-bit integer", "a barrier or sync"),
        ("mm_alltoall", "alltoall of 16 bytes per PE", "alltoall of 8 bytes per PE"),
        ("mm_scan", "sum_inscan of 4 elements", "sum_exscan of 4 elements"),
        ("mm_team", "broadcast of 32 bytes from team PE 0", "a barrier or sync"),
    ];
    for n in [2, 3] {
        let last = n - 1;
        let others = if n == 2 { "PE 0".to_string() } else { format!("PEs 0-{}", n - 2) };
        for (mode, theirs, odd) in cases {
            expect_failure(
                mode,
                n,
                1,
                &["made different collective calls", &format!("{others}: {theirs}"), &format!("PE {last}: {odd}")],
                &[],
            );
        }
        expect_failure(
            "mm_split",
            n,
            1,
            &[
                "made different collective calls",
                &format!("{others}: team_split_strided (start 0, stride 1, size {n})"),
                &format!("PE {last}: team_split_strided (start 0, stride 1, size {})", n + 5),
            ],
            &[],
        );
    }
}

/// ishmrun: a signal ends the job even when the PEs ignore it (SIGKILL
/// after the grace period), with ishmrun's own report and 128 + signal.
#[test]
fn ishmrun_signal_escalates() {
    if under_mpi() {
        return;
    }
    let prog = c_program("errors");
    let mut cmd = Command::new(env().bin_dir.join("ishmrun"));
    cmd.args(["-v", "-n", "2"]).arg(&prog).arg("ignore_term");
    let start = Instant::now();
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    use std::io::BufRead;
    out.read_line(&mut line).unwrap();
    assert!(line.contains("ignoring SIGTERM"), "unexpected output {line:?}");
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("ishmrun did not end within 20 s of SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "{err}");
    assert!(err.contains("ishmrun: got SIGTERM; stopping the job"), "{err}");
    assert!(!err.contains("failed; terminating"), "a signal to ishmrun is not a PE failure:\n{err}");
    for (_, rest) in err.match_indices("started PE ").map(|(i, _)| err[i..].split_once("(pid ").unwrap()) {
        let pid: i32 = rest[..rest.find(')').unwrap()].parse().unwrap();
        assert!(!Path::new(&format!("/proc/{pid}")).exists(), "PE process {pid} outlived the job\n{err}");
    }
}

/// The smaller reliability defects: huge timeouts, global_exit statuses
/// that do not fit, children of PEs that call shmem_init, an empty
/// SHMEM_DEBUG, calloc overflow and freeing a global.
#[test]
fn small_reliability_defects() {
    let prog = c_program("errors");
    if !under_mpi() {
        let mut cmd = Command::new(env().bin_dir.join("ishmrun"));
        cmd.args(["-n", "1", "-t", "1e30"]).arg(&prog).arg("ok");
        let r = run_cmd(cmd, Duration::from_secs(10));
        assert!(r.code == Some(2) && r.stderr.contains("bad timeout \"1e30\": too large"), "{}", r.report("-t 1e30"));
        expect_failure("global_exit_256", 2, 255, &["ishmrun: PE 1 called shmem_global_exit(256)"], &[]);
        let r = ishmrun(2, &prog, &["spawn_child"], &[]);
        assert!(
            r.code == Some(0) && r.stdout.contains("child: 0 of 1") && r.stdout.contains("child ok"),
            "{}",
            r.report("a PE's child calls shmem_init")
        );
    }
    let r = ishmrun(2, &prog, &["ok"], &[("SHMEM_DEBUG", "")]);
    assert!(r.code == Some(0), "{}", r.report("SHMEM_DEBUG empty"));
    let r = ishmrun(2, &prog, &["calloc_overflow"], &[]);
    assert!(
        r.code == Some(0) && r.stderr.contains("shmem_calloc: the requested size does not fit in size_t"),
        "{}",
        r.report("calloc overflow")
    );
    expect_failure("free_global", 2, 1, &["is a global or static variable (the symmetric data segment)"], &[]);
}

/// ishmrun explains PEs that never joined: a program the loader cannot
/// start (libishmem.so.0 not found: exit 127) and programs that end
/// without shmem_init (as one linked with another OpenSHMEM library does).
#[test]
fn ishmrun_explains_pes_that_never_joined() {
    if under_mpi() {
        return;
    }
    let e = env();
    // Linked without an rpath and run without LD_LIBRARY_PATH: the loader
    // cannot find libishmem.so.0.
    let out = e.build_dir.join("errors_norpath");
    let o = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-std=c11", "-O2", "-pthread"])
        .arg(e.root.join("tests/c/errors.c"))
        .arg("-I")
        .arg(e.root.join("bindings/c/include"))
        .arg("-L")
        .arg(&e.bin_dir)
        .args(["-lishmem", "-lm", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut cmd = Command::new(e.bin_dir.join("ishmrun"));
    cmd.args(["-n", "2"]).arg(&out).arg("ok").env_remove("LD_LIBRARY_PATH");
    let r = run_cmd(cmd, Duration::from_secs(30));
    assert_eq!(r.code, Some(127), "{}", r.report("libishmem.so.0 not found"));
    for want in ["libishmem.so.0", "exited with status 127 before joining the job", "-Wl,-rpath,<prefix>/lib"] {
        assert!(r.stderr.contains(want), "expected {want:?}\n{}", r.report("libishmem.so.0 not found"));
    }
    // A program name without ./ is found in the current directory too (as
    // mpirun does), else the error says where ishmrun looked.
    let prog = c_program("errors");
    let mut cmd = Command::new(e.bin_dir.join("ishmrun"));
    cmd.current_dir(prog.parent().unwrap()).args(["-n", "2", "errors", "ok"]);
    let r = run_cmd(cmd, Duration::from_secs(30));
    assert_eq!(r.code, Some(0), "{}", r.report("ishmrun -n 2 errors (in its directory)"));
    let mut cmd = Command::new(e.bin_dir.join("ishmrun"));
    cmd.args(["-n", "2", "no-such-program-here"]);
    let r = run_cmd(cmd, Duration::from_secs(30));
    assert_eq!(r.code, Some(1), "{}", r.report("a program that is nowhere"));
    assert!(r.stderr.contains("cannot find program \"no-such-program-here\": not on PATH"), "{}", r.report("nowhere"));
    let mut cmd = Command::new(e.bin_dir.join("ishmrun"));
    cmd.args(["-n", "2", "true"]);
    let r = run_cmd(cmd, Duration::from_secs(30));
    assert_eq!(r.code, Some(0), "{}", r.report("PEs that never call shmem_init"));
    assert_eq!(r.stderr.matches("ended without joining the job").count(), 1, "{}", r.report("never joined"));
    assert!(r.stderr.contains("runs as 2 unrelated one-PE jobs"), "{}", r.report("never joined"));
}

/// Intel SHMEM's launch form: under mpiexec (or srun), `ishmrun ./prog`
/// without -n runs the program as it is and the PEs join over MPI; with -n
/// it is an error that says why.
#[test]
fn ishmrun_under_other_launchers() {
    let ishmrun = env().bin_dir.join("ishmrun");
    if under_mpi() {
        let prog = c_program("rma_types");
        let r = run_cmd(launch(2, &ishmrun, &[prog.to_str().unwrap()], &[], false), Duration::from_secs(120));
        assert_eq!(r.code, Some(0), "{}", r.report("mpiexec -n 2 ishmrun ./prog"));
        let r = run_cmd(launch(2, &ishmrun, &["-n", "2", prog.to_str().unwrap()], &[], false), Duration::from_secs(60));
        assert!(r.code.is_some_and(|c| c != 0), "{}", r.report("mpiexec -n 2 ishmrun -n 2 ./prog"));
        assert!(r.stderr.contains("under another launcher"), "{}", r.report("mpiexec -n 2 ishmrun -n 2"));
        return;
    }
    // As a launcher leaves it: ishmrun becomes the program.
    let mut cmd = Command::new(&ishmrun);
    cmd.args(["sh", "-c", "exit 3"]).env("PMI_RANK", "0");
    let r = run_cmd(cmd, Duration::from_secs(10));
    assert_eq!(r.code, Some(3), "{}", r.report("PMI_RANK=0 ishmrun sh -c 'exit 3'"));
    let mut cmd = Command::new(&ishmrun);
    cmd.args(["-n", "2", "true"]).env("OMPI_COMM_WORLD_SIZE", "2");
    let r = run_cmd(cmd, Duration::from_secs(10));
    assert_eq!(r.code, Some(2), "{}", r.report("ishmrun -n 2 under a launcher"));
    assert!(r.stderr.contains("OMPI_COMM_WORLD_SIZE is set, a job of 2 processes"), "{}", r.report("-n under mpiexec"));
}

/// Environment conventions users bring from OpenSHMEM, Intel SHMEM and
/// NVSHMEM: fractional sizes, ISHMEM_DEBUG with any value, ISHMEM_VERSION,
/// and a suggestion for a misspelled name.
#[test]
fn environment_conventions() {
    let prog = c_program("errors");
    let r = ishmrun(
        2,
        &prog,
        &["ok"],
        &[("ISHMEM_SYMMETRIC_SIZE", "1.5m"), ("ISHMEM_DEBUG", "verbose"), ("ISHMEM_VERSION", "")],
    );
    assert!(r.code == Some(0), "{}", r.report("fractional size, ISHMEM_DEBUG=verbose"));
    assert!(r.stderr.contains("1572864"), "the 1.5m heap is not in the debug output\n{}", r.report("ISHMEM_DEBUG"));
    assert!(r.stdout.contains(": OpenSHMEM 1."), "ISHMEM_VERSION printed nothing\n{}", r.report("ISHMEM_VERSION"));
    let r = ishmrun(1, &prog, &["ok"], &[("ISHMEM_SYMETRIC_SIZE", "1m"), ("SHMEM_DEBGU", "1")]);
    assert!(r.code == Some(0), "{}", r.report("misspelled names"));
    for (bad, good) in [("ISHMEM_SYMETRIC_SIZE", "ISHMEM_SYMMETRIC_SIZE"), ("SHMEM_DEBGU", "SHMEM_DEBUG")] {
        let want = format!("unknown environment variable {bad} is ignored (did you mean {good}?)");
        assert!(r.stderr.contains(&want), "expected {want:?}\n{}", r.report("misspelled names"));
    }
}
