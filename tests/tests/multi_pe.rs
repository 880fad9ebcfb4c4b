//! The multi-PE checks that need more than a program and its expected
//! output (those are lines of `tests/programs.list`, run by
//! `tests/tests/programs.rs`): launcher behaviour, signals, security
//! probes, MPI-only paths. Shares the harness of `tests/src/harness.rs`.
//!
//! Needs `cargo build --workspace --all-targets` first (the README's test
//! command does it) for `ishmrun` and `libishmem.so`.

use ishmem_tests::harness::*;
use std::io::Read;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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
        &["cannot load the Level Zero loader: tried /nonexistent/libze_loader.so.1 (", "install libze1"],
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

    let mut cmd = Command::new(env().bin_dir.join("ishmrun"));
    cmd.args(["-n", "1", "-t", "1e30"]).arg(&prog).arg("ok");
    let r = run_cmd(cmd, Duration::from_secs(10));
    assert!(r.code == Some(2) && r.stderr.contains("bad timeout \"1e30\": too large"), "{}", r.report("-t 1e30"));

    // A program that never initializes the library runs fine under ishmrun.
    let mut cmd = Command::new(env().bin_dir.join("ishmrun"));
    cmd.args(["-n", "3", "/bin/true"]);
    let r = run_cmd(cmd, Duration::from_secs(10));
    assert!(r.code == Some(0), "{}", r.report("/bin/true"));
}

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
/// Builds a planted "MPI proxy plugin" in `dir`
/// (`libishmem_proxy_oshmpi-openmpi.so`) whose constructor creates `mark`:
/// if that file ever exists, the library ran code it should have refused.
fn build_planted_plugin(dir: &Path, mark: &Path) -> std::path::PathBuf {
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
    plugin
}

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
    let plugin = build_planted_plugin(&dir, &mark);
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

/// Security: a plugin path through a symbolic link another user controls
/// is refused, so that user cannot swap the link between the library's
/// check and its load: another user (nobody, through setpriv) flips a link
/// in a world-writable sticky directory between the real plugin and a
/// planted one, as fast as it can, during 100 starts that name the link;
/// the planted plugin's constructor never runs. (Before the library
/// loaded through the descriptor it checked, about 7 in 100 starts ran it.)
#[test]
fn mpi_plugin_link_race_refused() {
    if under_mpi() {
        return; // launcher-independent: the starts run the program directly
    }
    // SAFETY: getuid cannot fail.
    if unsafe { libc::getuid() } != 0 {
        eprintln!("mpi_plugin_link_race_refused: not root, so no second user to race with: skipped");
        return;
    }
    let real = env().bin_dir.join("ishmem/libishmem_proxy_oshmpi-openmpi.so");
    assert!(real.exists(), "{} is missing: proxy-oshmpi/build-plugins.sh builds it", real.display());
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("plugin-race-test.{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("nobody")).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let plant_dir = dir.join("nobody");
    let mark = dir.join("planted-ran");
    let plant = build_planted_plugin(&plant_dir, &mark);
    // The planted plugin and its directory belong to the other user; the
    // marker file may be written by it.
    let chown = |p: &Path| {
        let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
        // SAFETY: a valid path; chown to nobody.
        assert_eq!(unsafe { libc::chown(c.as_ptr(), 65534, 65534) }, 0, "chown {}", p.display());
    };
    chown(&plant_dir);
    chown(&plant);
    let link = dir.join("proxy.so");
    let script = format!(
        "while :; do ln -sfn {real} {d}/a.tmp && mv -Tf {d}/a.tmp {link}; ln -sfn {plant} {d}/b.tmp && mv -Tf {d}/b.tmp {link}; done",
        real = real.display(),
        plant = plant.display(),
        d = plant_dir.display(),
        link = link.display()
    );
    // In a process group of its own, so that its `ln` and `mv` end with it
    // (one left running re-created the link after the cleanup below).
    let mut racer = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "sh", "-c", &script])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("start the racer (setpriv)");
    // Until the racer's link exists.
    let t0 = Instant::now();
    while std::fs::symlink_metadata(&link).is_err() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let prog = c_program("rma_types");
    let mut refused = 0;
    let mut last = String::new();
    for _ in 0..100 {
        // An MPI start of one process (no launcher needed to load the
        // plugin: the load comes before MPI_Init).
        let mut c = Command::new(&prog);
        c.env_remove("ISHMRUN_FD")
            .env("ISHMEM_RUNTIME", "MPI")
            .env("ISHMEM_MPI_PROXY", &link)
            .env_remove("ISHMEM_ROOT");
        let r = run_cmd(c, Duration::from_secs(30));
        if r.code != Some(0) && r.stderr.contains("refused: the symbolic link") {
            refused += 1;
        }
        last = r.report("a start naming the raced link");
        if mark.exists() {
            break;
        }
    }
    // SAFETY: signalling our own child's process group.
    unsafe { libc::kill(-(racer.id() as i32), libc::SIGKILL) };
    let _ = racer.wait();
    let ran = mark.exists();
    // The group's last `mv` may still be finishing: try again briefly.
    for _ in 0..50 {
        if std::fs::remove_dir_all(&dir).is_ok() || !dir.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!ran, "the planted plugin ran\n{last}");
    assert_eq!(refused, 100, "every start must refuse the other user's link\n{last}");
    assert!(last.contains("is owned by uid 65534, not by this user or root"), "{last}");
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

/// C++: a generic routine called with an element type OpenSHMEM does not
/// define it for fails at compile time, naming the type (it used to fail
/// only at link time, as an undefined `shmem_atomic_fetch<short>`).
#[test]
fn cxx_unsupported_type_is_a_compile_error() {
    if under_mpi() {
        return; // the compiler's answer does not depend on the launcher
    }
    let e = env();
    let src = e.build_dir.join("cxx_unsupported.cpp");
    std::fs::write(
        &src,
        "#include <shmem.h>\nshort s;\nint main() { shmem_init(); short v = shmem_atomic_fetch(&s, 0); (void)v; return 0; }\n",
    )
    .unwrap();
    let o = Command::new(std::env::var("CXX").unwrap_or_else(|_| "c++".into()))
        .args(["-std=c++17", "-fsyntax-only", "-I"])
        .arg(e.root.join("bindings/c/include"))
        .arg(&src)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "shmem_atomic_fetch(short *) compiled");
    assert!(err.contains("deleted") && err.contains("shmem_atomic_fetch") && err.contains("short"), "{err}");
}

/// ishmrun says "OOM killer" only when the kernel's OOM killer killed the
/// PE: a PE of a job in a memory cgroup with a 256 MiB limit that touches
/// memory until it is killed. (A SIGKILL from outside is the pe_sigkill
/// line of tests/programs.list.) Needs root and a writable memory cgroup
/// (v1 or v2); skipped otherwise.
#[test]
fn ishmrun_names_the_oom_killer() {
    if under_mpi() {
        return;
    }
    // SAFETY: getuid cannot fail.
    if unsafe { libc::getuid() } != 0 {
        eprintln!("ishmrun_names_the_oom_killer: not root: skipped");
        return;
    }
    let name = format!("ishmrun-oom-test.{}", std::process::id());
    let (dir, limit_file) = if Path::new("/sys/fs/cgroup/memory/cgroup.procs").exists() {
        (PathBuf::from("/sys/fs/cgroup/memory").join(&name), "memory.limit_in_bytes")
    } else {
        (PathBuf::from("/sys/fs/cgroup").join(&name), "memory.max")
    };
    if std::fs::create_dir(&dir).is_err() || std::fs::write(dir.join(limit_file), "268435456").is_err() {
        let _ = std::fs::remove_dir(&dir);
        eprintln!("ishmrun_names_the_oom_killer: no writable memory cgroup here: skipped");
        return;
    }
    let prog = c_program("errors");
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(format!(
            "echo $$ > {}/cgroup.procs && exec {} -n 2 {} eat_memory",
            dir.display(),
            env().bin_dir.join("ishmrun").display(),
            prog.display()
        ))
        .env("ISHMEM_SYMMETRIC_SIZE", "16m");
    let r = run_cmd(c, Duration::from_secs(60));
    let _ = std::fs::remove_dir(&dir);
    assert_eq!(r.code, Some(137), "{}", r.report("a PE past its cgroup's memory limit"));
    assert!(
        r.stderr.contains("was killed by signal 9 (SIGKILL) by the kernel's OOM killer"),
        "{}",
        r.report("a PE past its cgroup's memory limit")
    );
}
