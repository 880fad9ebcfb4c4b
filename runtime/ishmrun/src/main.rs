//! `ishmrun -n N [--] program [args...]`: starts N PEs of an OpenSHMEM
//! program on this node, serves their init-time exchange, forwards their
//! exit status, and when one PE fails, stops the others and says which PE
//! failed and how.

use ishmem_runtime::api::launch::{self, wire as bootstrap};
use ishmem_runtime::api::launch::{ctrl_size, Ctrl, LIFE_FINALIZED, LIFE_RUNNING};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// After asking PEs to stop (SIGTERM), wait this long before SIGKILL.
const KILL_GRACE: Duration = Duration::from_secs(2);

const USAGE: &str = "\
usage: ishmrun -n N [options] [--] program [args...]
       mpiexec -n N ishmrun program [args...]     (Intel SHMEM's form)

Starts N processing elements (PEs) of an OpenSHMEM program on this node:
N processes that share their symmetric heaps through memory. The program
is found as a shell would (a path, or a name on PATH).

options:
  -n N, -nN, -np N, --npes N, --npes=N, --np=N
                        number of PEs to start (N >= 1)
  -t, --timeout SECS    stop the job with an error after SECS seconds
                        (also --timeout=SECS)
  -v, --verbose         report each PE's start and exit
  -h, --help            print this help
  -V, --version         print the version

Under another launcher (mpiexec, mpirun, srun, oshrun: it sets variables
such as OMPI_COMM_WORLD_SIZE, PMI_RANK, PMIX_RANK or SLURM_PROCID),
ishmrun without -n runs the program as it is, and the PEs join over MPI:
  mpiexec -n 4 ishmrun ./prog      srun -n 8 ishmrun ./prog
Giving -n there as well is an error: each process would start its own job.

examples:
  ishmrun -n 4 ./prog
  ishmrun -n 2 -t 60 -v ./prog arg1
  ISHMEM_SYMMETRIC_SIZE=2g ishmrun -n 8 ./prog

environment (read by the PEs; ishmem-info lists them all):
  ISHMEM_SYMMETRIC_SIZE   heap size per PE (default 512m; 1.5g allowed)
  ISHMEM_DEBUG            print initialization details
  ISHMEM_DEVICE           cpu, cuda or auto
  SHMEM_INFO, SHMEM_VERSION   print the variables or the version at init
Across nodes, use mpiexec/srun (docs/cluster.md).
";

/// What ishmrun does with its command line.
#[derive(Debug)]
enum Action {
    /// Start a job of N PEs.
    Run(Options),
    /// Under another launcher without -n: become the program.
    PassThrough(Vec<String>),
}

#[derive(Debug)]
struct Options {
    npes: usize,
    timeout: Option<Duration>,
    verbose: bool,
    program: Vec<String>,
}

/// Parses the command line; `launcher` is the variable (and job size) of
/// another launcher that started ishmrun, if any.
fn parse_args(args: &[String], launcher: Option<(&str, Option<usize>)>) -> Result<Action, String> {
    let mut npes = None;
    let mut timeout = None;
    let mut verbose = false;
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        // `--opt=value`, `-n4`, or the next argument.
        let (name, inline): (&str, Option<&str>) = match a.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v)),
            _ => match a.strip_prefix("-np").or_else(|| a.strip_prefix("-n")).or_else(|| a.strip_prefix("-t")) {
                Some(rest)
                    if !rest.is_empty()
                        && !a.starts_with("--")
                        && rest.bytes().all(|b| b.is_ascii_digit() || b == b'.') =>
                {
                    (&a[..a.len() - rest.len()], Some(rest))
                }
                _ => (a, None),
            },
        };
        let mut used = 1;
        let mut value = || -> Result<&str, String> {
            match inline {
                Some(v) => Ok(v),
                None => {
                    used = 2;
                    args.get(i + 1).map(|s| s.as_str()).ok_or_else(|| format!("option {name} needs a value"))
                }
            }
        };
        match name {
            "-n" | "-np" | "--npes" | "--np" | "--n" => {
                let v = value()?;
                let n: usize = v.parse().map_err(|_| format!("bad PE count {v:?} for {name}"))?;
                if n == 0 || n > i32::MAX as usize {
                    return Err(format!("bad PE count {n} for {name}: it must be at least 1"));
                }
                npes = Some(n);
            }
            "-t" | "--timeout" => {
                let v = value()?;
                let s: f64 = v.parse().map_err(|_| format!("bad timeout {v:?}"))?;
                if !(s > 0.0 && s.is_finite()) {
                    return Err(format!("bad timeout {v:?}: it must be a positive number of seconds"));
                }
                timeout = Some(Duration::try_from_secs_f64(s).map_err(|_| format!("bad timeout {v:?}: too large"))?);
            }
            "-v" | "--verbose" if inline.is_none() => verbose = true,
            "-h" | "--help" if inline.is_none() => {
                print!("{USAGE}");
                std::process::exit(0);
            }
            "-V" | "--version" if inline.is_none() => {
                println!("ishmrun (ishmem-rs) {}", env!("CARGO_PKG_VERSION"));
                std::process::exit(0);
            }
            "--" => {
                i += 1;
                break;
            }
            s if s.starts_with('-') && s.len() > 1 => return Err(format!("unknown option {a:?} (try --help)")),
            _ => break,
        }
        i += used;
    }
    let program: Vec<String> = args[i..].to_vec();
    if program.is_empty() {
        return Err("no program given".into());
    }
    match (npes, launcher) {
        (None, Some(_)) => Ok(Action::PassThrough(program)),
        (Some(n), Some((var, size))) => Err(format!(
            "-n {n} under another launcher ({var} is set{}): every process it started would start {n} PEs of its own. \
             Under mpiexec or srun leave out -n (mpiexec -n {n} ishmrun {prog} runs the program as it is), or run \
             ishmrun alone (ishmrun -n {n} {prog})",
            size.map(|s| format!(", a job of {s} processes")).unwrap_or_default(),
            prog = program[0]
        )),
        (None, None) => Err("the number of PEs is required (-n N)".into()),
        (Some(npes), None) => Ok(Action::Run(Options { npes, timeout, verbose, program })),
    }
}

/// Prints `ishmrun: <message>` to stderr in one write, so that it does not
/// interleave with the PEs' output.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write;
        let line = format!("ishmrun: {}\n", format_args!($($arg)*));
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }};
}

/// PIDs of the started PEs, for the signal handler.
static PIDS: OnceLock<Vec<libc::pid_t>> = OnceLock::new();
/// The first terminating signal ishmrun received (0: none); a watcher
/// thread turns it into the job's terminate path, which escalates to
/// SIGKILL after [`KILL_GRACE`].
static GOT_SIGNAL: AtomicI32 = AtomicI32::new(0);

/// Signal handler. It has no panic boundary on purpose: `catch_unwind` is
/// not async-signal-safe, and nothing here can panic (a lock-free read and
/// `kill`); an unwind would abort the process (Rust 1.81 and later).
extern "C" fn forward_signal(sig: libc::c_int) {
    let _ = GOT_SIGNAL.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
    if let Some(pids) = PIDS.get() {
        for &p in pids {
            // SAFETY: kill is async-signal-safe.
            unsafe { libc::kill(p, sig) };
        }
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        _ => "signal",
    }
}

fn socketpair() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: fds has room for two descriptors.
    let r = unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fresh descriptors we own.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Job-wide state the watcher threads share.
struct Job {
    pids: Vec<libc::pid_t>,
    alive: Mutex<Vec<bool>>,
    terminating: AtomicBool,
    /// PEs that ended before calling shmem_init while others waited there
    /// (reported once by the bootstrap thread; the waiting PEs then end
    /// without messages of their own).
    left_before_init: Mutex<Option<Vec<usize>>>,
}

impl Job {
    /// Asks every live PE to stop, then kills those still alive after a grace.
    fn terminate(self: &Arc<Self>, why: &str) {
        self.stop(Some(why))
    }

    /// As [`Job::terminate`], for a stop ishmrun was asked for (a signal):
    /// the PEs already got the signal; no "PE failed" report.
    fn terminate_quietly(self: &Arc<Self>) {
        self.stop(None)
    }

    fn stop(self: &Arc<Self>, why: Option<&str>) {
        if self.terminating.swap(true, Ordering::SeqCst) {
            return;
        }
        let live: Vec<(usize, libc::pid_t)> = {
            let alive = self.alive.lock().unwrap();
            self.pids.iter().enumerate().filter(|(i, _)| alive[*i]).map(|(i, &p)| (i, p)).collect()
        };
        if let (Some(why), false) = (why, live.is_empty()) {
            say!("{why}; terminating the other {} PE{}", live.len(), if live.len() == 1 { "" } else { "s" });
        }
        for &(_, p) in &live {
            // SAFETY: sending a signal to our own child.
            unsafe { libc::kill(p, libc::SIGTERM) };
        }
        let job = Arc::clone(self);
        std::thread::spawn(move || {
            std::thread::sleep(KILL_GRACE);
            let alive = job.alive.lock().unwrap();
            for (i, &p) in job.pids.iter().enumerate() {
                if alive[i] {
                    // SAFETY: still our unreaped child, so the pid is ours.
                    unsafe { libc::kill(p, libc::SIGKILL) };
                }
            }
        });
    }
}

/// Serves the init-time exchange: every PE's HELLO, then the job to each.
fn serve_bootstrap(job: Arc<Job>, socks: Vec<OwnedFd>, ctrl_fd: OwnedFd, ctrl_len: usize) {
    let on_left = |left: &[usize], waiting: &[usize]| {
        if waiting.is_empty() {
            return; // nobody waits: a program that never initializes
        }
        *job.left_before_init.lock().unwrap() = Some(left.to_vec());
        if job.terminating.load(Ordering::SeqCst) {
            return; // a failure already reported ends the job
        }
        let pe = left[0];
        say!(
            "PE {pe} (pid {}) ended before calling shmem_init while {} {} for it there: shmem_init is collective, \
             every PE must call it; ending the job",
            job.pids[pe],
            pe_list(waiting),
            if waiting.len() == 1 { "waits" } else { "wait" }
        );
    };
    // The PEs were told why; only failures to tell them are ours.
    if let Err(e @ bootstrap::ServeError::Send(_)) = bootstrap::serve(&socks, &ctrl_fd, ctrl_len, on_left) {
        say!("{e}")
    }
}

/// "PE 3", "PEs 0 and 1", "PEs 0, 1 and 2", "PEs 0, 1, 2, ... (40 PEs)".
fn pe_list(pes: &[usize]) -> String {
    match pes {
        [] => "no PE".into(),
        [p] => format!("PE {p}"),
        [a, b] => format!("PEs {a} and {b}"),
        _ if pes.len() <= 8 => {
            let head: Vec<String> = pes[..pes.len() - 1].iter().map(|p| p.to_string()).collect();
            format!("PEs {} and {}", head.join(", "), pes[pes.len() - 1])
        }
        _ => {
            let head: Vec<String> = pes[..4].iter().map(|p| p.to_string()).collect();
            format!("PEs {}, ... ({} PEs)", head.join(", "), pes.len())
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opts = match parse_args(&args, ishmem_runtime::api::launch::foreign_launcher()) {
        Ok(Action::Run(o)) => o,
        Ok(Action::PassThrough(program)) => {
            // mpiexec -n N ishmrun ./prog: the launcher made the processes;
            // the program bootstraps over MPI by itself.
            let e = Command::new(&program[0]).args(&program[1..]).exec();
            say!("cannot run {}: {e}", program[0]);
            return ExitCode::from(if e.kind() == std::io::ErrorKind::NotFound { 127 } else { 126 });
        }
        Err(e) => {
            say!("{e}\n\nusage: ishmrun -n N [options] [--] program [args...] (ishmrun --help for more)");
            return ExitCode::from(2);
        }
    };
    match run(opts) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            say!("{e}");
            ExitCode::from(1)
        }
    }
}

/// The program to start, found as a shell would (a name without `/` on
/// PATH), and also in the current directory as mpirun does, so that
/// `ishmrun -n 2 prog` works there; an error that says where it looked.
fn resolve_program(name: &str, path: Option<&std::ffi::OsStr>) -> Result<std::path::PathBuf, String> {
    use std::os::unix::fs::PermissionsExt;
    use std::path::{Path, PathBuf};
    let runnable = |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    if name.contains('/') {
        let p = PathBuf::from(name);
        return match std::fs::metadata(&p) {
            Err(e) => Err(format!("cannot start {name}: {e}")),
            Ok(_) if !runnable(&p) => Err(format!("cannot start {name}: not an executable file")),
            Ok(_) => Ok(p),
        };
    }
    let on_path = path.map(|p| std::env::split_paths(p).collect::<Vec<_>>()).unwrap_or_default();
    if let Some(p) = on_path.iter().map(|d| d.join(name)).find(|p| runnable(p)) {
        return Ok(p);
    }
    let here = Path::new(".").join(name);
    if runnable(&here) {
        return Ok(here);
    }
    Err(format!(
        "cannot find program {name:?}: not on PATH and not an executable file in the current directory (give a path such as ./{name})"
    ))
}

fn run(mut opts: Options) -> Result<u8, String> {
    opts.program[0] = resolve_program(&opts.program[0], std::env::var_os("PATH").as_deref())?.display().to_string();
    let n = opts.npes;
    let ctrl_len = ctrl_size(n);
    let ctrl_fd =
        launch::memfd("ishmem-ctrl", ctrl_len).map_err(|e| format!("cannot create the control segment: {e}"))?;
    // Kept mapped for the whole job: the PEs record global_exit calls there.
    let ctrl_region =
        launch::map_region(&ctrl_fd, ctrl_len).map_err(|e| format!("cannot map the control segment: {e}"))?;
    // SAFETY: fresh zeroed mapping of ctrl_size(n) bytes, alive until run returns.
    let ctrl = unsafe { Ctrl::new(ctrl_region.base(), n) };
    ctrl.initialize();

    let mut ours = Vec::with_capacity(n);
    let mut pids = Vec::with_capacity(n);
    // SAFETY: getpid has no preconditions.
    let launcher_pid = unsafe { libc::getpid() };
    for pe in 0..n {
        let (mine, theirs) = socketpair().map_err(|e| format!("socketpair: {e}"))?;
        let child_fd = theirs.as_raw_fd();
        let mut cmd = Command::new(&opts.program[0]);
        cmd.args(&opts.program[1..])
            .env("ISHMRUN_PE", pe.to_string())
            .env("ISHMRUN_NPES", n.to_string())
            .env("ISHMRUN_FD", child_fd.to_string());
        // CUDA's lazy kernel loading can hang a GPU job (the library asks
        // for eager loading at ishmem_init, too late for a program that
        // starts CUDA first): eager unless the user chose.
        if ishmem_runtime::api::launch::cuda_module_loading().is_none() {
            cmd.env("CUDA_MODULE_LOADING", "EAGER");
        }
        // SAFETY: the closure only makes async-signal-safe calls (fcntl,
        // prctl, getppid) between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                if libc::fcntl(child_fd, libc::F_SETFD, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // Die with the launcher, however it dies.
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                if libc::getppid() != launcher_pid {
                    libc::_exit(1);
                }
                Ok(())
            });
        }
        match cmd.spawn() {
            Ok(child) => pids.push(child.id() as libc::pid_t),
            Err(e) => {
                for &p in &pids {
                    // SAFETY: our own children.
                    unsafe { libc::kill(p, libc::SIGKILL) };
                }
                return Err(format!("cannot start PE {pe} ({}): {e}", opts.program[0]));
            }
        }
        drop(theirs);
        ours.push(mine);
        if opts.verbose {
            say!("started PE {pe} (pid {})", pids[pe]);
        }
    }
    let _ = PIDS.set(pids.clone());
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
        // SAFETY: installing an async-signal-safe handler.
        unsafe { libc::signal(sig, forward_signal as *const () as libc::sighandler_t) };
    }

    let job = Arc::new(Job {
        pids: pids.clone(),
        alive: Mutex::new(vec![true; n]),
        terminating: AtomicBool::new(false),
        left_before_init: Mutex::new(None),
    });
    {
        let job = Arc::clone(&job);
        std::thread::spawn(move || serve_bootstrap(job, ours, ctrl_fd, ctrl_len));
    }
    {
        // A signal to ishmrun (forwarded to the PEs by the handler) ends the
        // job through the terminate path: PEs that ignore it are killed
        // after the grace period.
        let job = Arc::clone(&job);
        std::thread::spawn(move || loop {
            let sig = GOT_SIGNAL.load(Ordering::SeqCst);
            if sig != 0 {
                say!("got {}; stopping the job", signal_name(sig));
                job.terminate_quietly();
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        });
    }
    let timed_out = Arc::new(AtomicBool::new(false));
    if let Some(t) = opts.timeout {
        let job = Arc::clone(&job);
        let timed_out = Arc::clone(&timed_out);
        std::thread::spawn(move || {
            std::thread::sleep(t);
            timed_out.store(true, Ordering::SeqCst);
            say!("the job did not finish within {:.1} s", t.as_secs_f64());
            job.terminate("timeout");
        });
    }

    let oom_at_start = oom_kills();
    let mut first_failure: Option<u8> = None;
    let mut global_status: Option<u8> = None;
    let mut unjoined_clean: Vec<(usize, libc::pid_t)> = Vec::new();
    let prog = &opts.program[0];
    let mut remaining = n;
    while remaining > 0 {
        let mut status = 0;
        // SAFETY: waiting for any of our children.
        let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
        if pid < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(format!("waitpid: {e}"));
        }
        let Some(pe) = pids.iter().position(|&p| p == pid) else { continue };
        job.alive.lock().unwrap()[pe] = false;
        remaining -= 1;
        let signalled = GOT_SIGNAL.load(Ordering::SeqCst) != 0;
        // 0 until the PE's shmem_init has finished (ctrl segment).
        let joined = ctrl.pe(pe).life.load(Ordering::Acquire) != 0;
        let (failed, code, mut how, lost_status) = if libc::WIFEXITED(status) {
            let c = libc::WEXITSTATUS(status);
            (c != 0, c as u8, format!("exited with status {c}"), c)
        } else if libc::WIFSIGNALED(status) {
            let s = libc::WTERMSIG(status);
            let mut how = format!("was killed by signal {s} ({})", signal_name(s));
            if s == libc::SIGKILL && !job.terminating.load(Ordering::SeqCst) {
                // Out of memory only when the kernel says it killed for it.
                if oom_kills() > oom_at_start {
                    how.push_str(
                        " by the kernel's OOM killer (the system or this job's cgroup ran out of memory; each PE \
                         maps ISHMEM_SYMMETRIC_SIZE of heap: see dmesg or the cgroup's memory.events)",
                    );
                } else {
                    how.push_str(" from outside the job (not by ishmrun, and not by the kernel's OOM killer)");
                }
            }
            (true, 128u8.wrapping_add(s as u8), how, -s)
        } else {
            continue;
        };
        if !joined && failed {
            how.push_str(&if code == 127 {
                format!(
                    " before joining the job: {prog} could not start (127 is the loader's status when a shared \
                     library is missing, see its message above: for libishmem.so.0 load the ishmem module, set \
                     LD_LIBRARY_PATH, or link with -Wl,-rpath,<prefix>/lib; a shell's for a command not found)"
                )
            } else {
                " before joining the job (before its shmem_init finished)".to_string()
            });
        }
        if opts.verbose {
            say!("PE {pe} (pid {pid}) {how}");
        }
        if !joined && !failed {
            unjoined_clean.push((pe, pid));
        }
        // PEs told that another ended before shmem_init (the bootstrap
        // thread said so once) end without more words.
        let told_left =
            !joined && failed && job.left_before_init.lock().unwrap().as_ref().is_some_and(|left| !left.contains(&pe));
        if told_left {
            first_failure.get_or_insert(code);
            continue;
        }
        if let Some((caller, status)) = ctrl.global_exit() {
            if !job.terminating.load(Ordering::SeqCst) {
                say!("PE {caller} called shmem_global_exit({status})");
                job.terminate("global exit");
            }
            global_status.get_or_insert(exit_code(status));
            continue;
        }
        // A PE that ends between init and finalize leaves the others
        // waiting for it: tell them (their waits fail with this PE's name).
        let life = ctrl.pe(pe).life.load(Ordering::Acquire);
        if life == LIFE_RUNNING && !job.terminating.load(Ordering::SeqCst) {
            ctrl.mark_lost(pe, lost_status);
            if !failed {
                say!("PE {pe} (pid {pid}) {how} without calling shmem_finalize; the other PEs will stop");
            }
        } else if life == LIFE_FINALIZED && !failed {
            // Normal at the end of a job; PEs still running (not
            // finalizing) and waiting for it end with a message.
            ctrl.mark_gone(pe);
        }
        if failed && !job.terminating.load(Ordering::SeqCst) && !signalled {
            match ctrl.aborter().filter(|&a| a != pe && a < n) {
                // Another PE's error ended the job and this PE left first
                // (a PE whose exit is slow, e.g. tearing down a GPU
                // context): name the one whose message says why.
                Some(a) if opts.verbose => say!("PE {a} (pid {}) ended the job with the error above", pids[a]),
                Some(a) => say!("{}", left_after_abort(a, pids[a], pe, pid, &how)),
                None if !opts.verbose => say!("PE {pe} (pid {pid}) {how}"),
                None => {}
            }
            first_failure.get_or_insert(code);
            job.terminate(&format!("PE {pe} failed"));
        } else if failed {
            first_failure.get_or_insert(code);
        }
    }
    drop(ctrl_region);
    if n > 1 && unjoined_clean.len() == n && !job.terminating.load(Ordering::SeqCst) {
        // No PE joined and none failed: a program linked with another
        // OpenSHMEM library runs as n unrelated one-PE jobs.
        let (pe, pid) = unjoined_clean[0];
        say!(
            "PE {pe} (pid {pid}) ended without joining the job, as every PE did (none called shmem_init through \
             ishmem); an OpenSHMEM program linked with another OpenSHMEM library runs as {n} unrelated one-PE jobs \
             under ishmrun (check `ldd {prog}`)"
        );
    }
    if timed_out.load(Ordering::SeqCst) {
        return Ok(124);
    }
    if let Some(s) = global_status {
        return Ok(s);
    }
    let sig = GOT_SIGNAL.load(Ordering::SeqCst);
    if sig != 0 {
        return Ok(128u8.wrapping_add(sig as u8));
    }
    Ok(first_failure.unwrap_or(0))
}

/// What ishmrun says when PE `pe` ends (`how`) after PE `aborter` began
/// to abort the job with an error, before the aborting PE has ended.
fn left_after_abort(aborter: usize, aborter_pid: libc::pid_t, pe: usize, pid: libc::pid_t, how: &str) -> String {
    format!("PE {aborter} (pid {aborter_pid}) ended the job with the error above; PE {pe} (pid {pid}) {how}")
}

/// The exit status for `global_exit(status)`: as given when it fits an
/// exit status, else 255 (never 0 for a non-zero status, as `exit(256)`
/// would give).
fn exit_code(status: i32) -> u8 {
    u8::try_from(status).unwrap_or(255)
}

/// Processes the kernel's OOM killer has killed so far: the system's count
/// (/proc/vmstat) plus this process's memory cgroup's (cgroup v2
/// memory.events, or v1 memory.oom_control), so a rise means it killed one
/// during the job. 0 where none is readable.
fn oom_kills() -> u64 {
    let field = |text: &str| {
        text.lines().find_map(|l| l.strip_prefix("oom_kill ").and_then(|v| v.trim().parse::<u64>().ok())).unwrap_or(0)
    };
    let read = |p: String| std::fs::read_to_string(p).map(|t| field(&t)).unwrap_or(0);
    let mut n = read("/proc/vmstat".into());
    for line in std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default().lines() {
        // "0::/path" (v2), "4:memory:/path" (v1)
        let mut f = line.splitn(3, ':');
        let (_, ctrls, path) = (f.next(), f.next().unwrap_or(""), f.next().unwrap_or("").trim());
        if ctrls.is_empty() {
            n += read(format!("/sys/fs/cgroup{path}/memory.events"));
        } else if ctrls.split(',').any(|c| c == "memory") {
            n += read(format!("/sys/fs/cgroup/memory{path}/memory.oom_control"));
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    fn opts(s: &str) -> Result<Options, String> {
        match parse_args(&args(s), None)? {
            Action::Run(o) => Ok(o),
            Action::PassThrough(p) => panic!("pass-through without a launcher: {p:?}"),
        }
    }

    #[test]
    fn parses() {
        let o = opts("-n 4 -- prog -n 3").unwrap();
        assert_eq!(o.npes, 4);
        assert_eq!(o.program, args("prog -n 3"));
        let o = opts("-np 2 -t 1.5 prog").unwrap();
        assert_eq!((o.npes, o.timeout), (2, Some(Duration::from_millis(1500))));
        for spelling in ["-n4", "-n 4", "-np 4", "-np4", "--npes=4", "--npes 4", "--np=4", "--n=4"] {
            let o = opts(&format!("{spelling} prog x")).unwrap_or_else(|e| panic!("{spelling}: {e}"));
            assert_eq!((o.npes, o.program.clone()), (4, args("prog x")), "{spelling}");
        }
        let o = opts("-n2 --timeout=2.5 -v prog").unwrap();
        assert_eq!((o.npes, o.timeout, o.verbose), (2, Some(Duration::from_millis(2500)), true));
        assert_eq!(opts("-n 2 -t5 prog").unwrap().timeout, Some(Duration::from_secs(5)));
        assert!(opts("prog").is_err());
        assert!(opts("-n 0 prog").is_err());
        assert!(opts("-n x prog").is_err());
        assert!(opts("-nx prog").is_err());
        assert!(opts("--npes= prog").is_err());
        assert!(opts("-n 2").is_err());
        assert!(opts("-n 2 --bogus prog").is_err());
        assert!(opts("-n 2 --verbose=1 prog").is_err());
        assert!(opts("-n 2 -t 1e30 prog").unwrap_err().contains("too large"));
        assert!(opts("-n 2 -t nan prog").is_err());
        assert!(opts("-n 99999999999999999999 prog").is_err());
        assert_eq!(exit_code(256), 255);
        assert_eq!(exit_code(-1), 255);
        assert_eq!(exit_code(7), 7);
    }

    #[test]
    fn finds_programs() {
        let dir = std::env::temp_dir().join(format!("ishmrun-find-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = std::ffi::OsString::from("/nonexistent:/bin:/usr/bin");
        assert_eq!(resolve_program("sh", Some(&path)).unwrap().file_name().unwrap(), "sh");
        let e = resolve_program("no-such-program-here", Some(&path)).unwrap_err();
        assert!(e.contains("not on PATH") && e.contains("./no-such-program-here"), "{e}");
        let e = resolve_program("/nonexistent/prog", Some(&path)).unwrap_err();
        assert!(e.contains("/nonexistent/prog") && e.contains("No such file"), "{e}");
        let f = dir.join("data");
        std::fs::write(&f, "x").unwrap();
        assert!(resolve_program(f.to_str().unwrap(), None).unwrap_err().contains("not an executable file"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn under_another_launcher() {
        let l = Some(("OMPI_COMM_WORLD_SIZE", Some(2)));
        match parse_args(&args("./prog a b"), l).unwrap() {
            Action::PassThrough(p) => assert_eq!(p, args("./prog a b")),
            a => panic!("{a:?}"),
        }
        let e = parse_args(&args("-n 2 ./prog"), l).unwrap_err();
        assert!(e.contains("OMPI_COMM_WORLD_SIZE is set, a job of 2 processes") && e.contains("leave out -n"), "{e}");
    }

    /// Random argument lists (ISHMEM_FUZZ_SECS, default 1 s): parsing
    /// returns options or an error, never panics. (`-h`/`-V` exit, so they
    /// are left out.)
    #[test]
    fn fuzz_arguments() {
        let secs: f64 = std::env::var("ISHMEM_FUZZ_SECS").ok().and_then(|v| v.parse().ok()).unwrap_or(1.0);
        const WORDS: [&str; 24] = [
            "-n4",
            "--npes=2",
            "--timeout=",
            "-t0.5",
            "-n",
            "-np",
            "--npes",
            "-t",
            "--timeout",
            "-v",
            "--",
            "prog",
            "0",
            "1",
            "-1",
            "1e30",
            "inf",
            "nan",
            "0.0000001",
            "4294967297",
            "2147483648",
            "",
            "-",
            "--bogus",
        ];
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15 ^ std::process::id() as u64;
        let start = std::time::Instant::now();
        while start.elapsed().as_secs_f64() < secs {
            let mut v = Vec::new();
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            for k in 0..(x % 7) {
                v.push(WORDS[((x >> (8 * k)) % WORDS.len() as u64) as usize].to_string());
            }
            let launcher = x.is_multiple_of(3).then_some(("PMI_RANK", None));
            match parse_args(&v, launcher) {
                Ok(Action::Run(o)) => assert!(o.npes >= 1 && !o.program.is_empty() && launcher.is_none()),
                Ok(Action::PassThrough(p)) => assert!(!p.is_empty() && launcher.is_some()),
                Err(_) => {}
            }
        }
    }
}
