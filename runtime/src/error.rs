//! Fatal errors and job abort.
//!
//! Argument errors are reported as `ishmem: PE <n>: <call>: <what>` on stderr,
//! then the whole job stops: the control segment's abort flag makes every
//! PE that is waiting inside the library exit, and `ishmrun` terminates the
//! rest when it sees a PE exit with a non-zero status.

use crate::ctrl::Ctrl;
use crate::phase;
use std::fmt;
use std::io::Write;
use std::sync::atomic::{AtomicPtr, Ordering};

pub use crate::phase::pe_tag;

/// The control segment once mapped, for the abort flag.
static CTRL: AtomicPtr<Ctrl> = AtomicPtr::new(std::ptr::null_mut());

/// Exit status of a job aborted by an argument error.
pub const ERROR_EXIT_CODE: i32 = 1;

/// Ends the whole job through the proxy (MPI_Abort) when one is up.
static ABORT_HOOK: AtomicPtr<()> = AtomicPtr::new(std::ptr::null_mut());

pub(crate) fn set_abort_hook(f: Option<fn(i32)>) {
    ABORT_HOOK.store(f.map_or(std::ptr::null_mut(), |f| f as *mut ()), Ordering::Release);
}

fn run_abort_hook(code: i32) {
    let p = ABORT_HOOK.load(Ordering::Acquire);
    if !p.is_null() {
        // SAFETY: only `fn(i32)` values are stored.
        let f: fn(i32) = unsafe { std::mem::transmute(p) };
        f(code);
    }
}

pub(crate) fn set_ctrl(ctrl: Option<Ctrl>) {
    let new = ctrl.map_or(std::ptr::null_mut(), |c| Box::into_raw(Box::new(c)));
    // The old box is leaked on purpose: a concurrent reader may still hold it.
    CTRL.store(new, Ordering::Release);
}

/// Records this PE's place in its life ([`crate::ctrl::LIFE_RUNNING`],
/// [`crate::ctrl::LIFE_FINALIZED`]) for ishmrun.
pub(crate) fn set_life(v: u32) {
    if let (Some(c), Some(pe)) = (ctrl(), phase::my_pe()) {
        if v == crate::ctrl::LIFE_RUNNING {
            c.pe(pe).pid.store(std::process::id() as i32, Ordering::Relaxed);
        }
        c.pe(pe).life.store(v, Ordering::Release);
    }
}

/// This PE's published-wait record (`wait.rs`), once the job runs.
pub(crate) fn my_blocked() -> Option<&'static crate::ctrl::Blocked> {
    let (c, pe) = ctrl().zip(phase::my_pe())?;
    Some(&c.pe(pe).blocked)
}

fn ctrl() -> Option<&'static Ctrl> {
    let p = CTRL.load(Ordering::Acquire);
    // SAFETY: boxes stored in CTRL are never freed.
    unsafe { p.as_ref() }
}

/// Prints a warning tagged with the PE.
pub fn warn(msg: fmt::Arguments<'_>) {
    emit(&format!("ishmem: {}: warning: {}\n", pe_tag(), msg));
}

/// Writes `line` and a newline to stderr with one write.
pub(crate) fn emit_line(line: &str) {
    emit(&format!("{line}\n"));
}

/// Writes a whole message with one write, so lines from several PEs sharing
/// a terminal or pipe do not interleave.
fn emit(line: &str) {
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// Reports an error in `call` and aborts the whole job. Never returns.
#[cold]
#[inline(never)]
pub fn fatal(call: &str, msg: fmt::Arguments<'_>) -> ! {
    emit(&format!("ishmem: {}: {}: {}\n", pe_tag(), call, msg));
    // This PE's message says why the job ends, for the launcher, which may
    // see another PE end first (before the abort code the others leave on).
    if let (Some(c), Some(me)) = (ctrl(), phase::my_pe()) {
        let _ = c.header().abort_pe.compare_exchange(0, me as i32 + 1, Ordering::AcqRel, Ordering::Acquire);
    }
    abort_job(ERROR_EXIT_CODE)
}

/// Claims the job's report across nodes, where PEs do not share one
/// control segment (installed by the lifecycle when some PE is remote).
static CLAIM_HOOK: AtomicPtr<()> = AtomicPtr::new(std::ptr::null_mut());

pub(crate) fn set_claim_hook(f: Option<fn() -> bool>) {
    CLAIM_HOOK.store(f.map_or(std::ptr::null_mut(), |f| f as *mut ()), Ordering::Release);
}

/// Claims the right to print the one report of a job-wide error that
/// several PEs may detect at once (e.g. a collective argument mismatch).
/// Returns false when another PE has claimed it; that PE will abort the job.
pub(crate) fn claim_report() -> bool {
    let p = CLAIM_HOOK.load(Ordering::Acquire);
    if !p.is_null() {
        // SAFETY: only `fn() -> bool` values are stored.
        let f: fn() -> bool = unsafe { std::mem::transmute(p) };
        return f();
    }
    match ctrl() {
        None => true,
        Some(c) => {
            let me = phase::my_pe().map_or(0, |p| p as i32) + 1;
            c.header().abort_reporter.compare_exchange(0, me, Ordering::AcqRel, Ordering::Acquire).is_ok()
        }
    }
}

/// Marks the job as aborting with `code` and exits this PE without running
/// `atexit` handlers (which would try a collective finalize).
pub fn abort_job(code: i32) -> ! {
    let code = if code == 0 { ERROR_EXIT_CODE } else { code };
    if let Some(c) = ctrl() {
        let _ = c.header().abort_code.compare_exchange(0, code, Ordering::AcqRel, Ordering::Acquire);
    }
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // Across nodes: the MPI launcher ends every process. Some MPIs call
    // exit() inside MPI_Abort: no collective finalize from atexit then.
    phase::mark_exiting();
    run_abort_hook(code);
    // SAFETY: _exit is always safe to call; it does not return.
    unsafe { libc::_exit(code & 0xff) }
}

/// Called from wait loops (`waiting`: what the wait is, as its messages
/// name it) and by the watchdog (`None`: whatever this PE is doing): if
/// another PE aborted the job or called `global_exit`, leave too; if a PE
/// ended without finalizing, or finalized while this PE had not started
/// to, nothing this PE waits for (on the host or in a kernel) can come:
/// end with a message.
#[inline]
pub(crate) fn check_abort(waiting: Option<&dyn Fn() -> String>) {
    if let Some(c) = ctrl() {
        if let Some((_, status)) = c.global_exit() {
            if waiting.is_none() {
                // The watchdog's thread: no atexit handlers or C++
                // destructors while the program's threads still run.
                phase::mark_exiting();
                let _ = std::io::stdout().flush();
                // SAFETY: fflush(NULL) flushes every C stream; _exit does
                // not return.
                unsafe {
                    libc::fflush(std::ptr::null_mut());
                    libc::_exit(exit_status(status))
                }
            }
            exit_with(status)
        }
        if let Some(code) = c.abort_code() {
            exit_for_peer_abort(code)
        }
        if let Some((pe, status)) = c.lost() {
            peer_lost(pe, status, waiting)
        }
        if let Some(pe) = c.gone() {
            // Only a PE that has not started finalizing can be waiting for
            // something the finalized PE would have done.
            if phase::my_pe().is_some_and(|me| c.pe(me).life.load(Ordering::Acquire) == crate::ctrl::LIFE_RUNNING) {
                let (call, waits) = doing(waiting);
                let doing = if waits { "still waits for it" } else { "still ran" };
                fatal(
                    &call,
                    format_args!(
                        "PE {pe} called shmem_finalize and exited while this PE {doing}: its finalize matched a barrier of this PE (every PE must call shmem_finalize, or return from main, at the same point)"
                    ),
                )
            }
        }
    }
}

/// The call a message about this PE names, and whether it is a wait in
/// the library: the wait (from the waiting thread, or as this PE published
/// it), else "outside the library".
pub(crate) fn doing(waiting: Option<&dyn Fn() -> String>) -> (String, bool) {
    if let Some(w) = waiting {
        return (w(), true);
    }
    let published = ctrl().zip(phase::my_pe()).and_then(|(c, me)| c.pe(me).blocked.read());
    match published {
        Some(w) => (w.text, true),
        None => ("outside the library".to_string(), false),
    }
}

/// A PE this one may be waiting for ended between init and finalize
/// (ishmrun, or a node peer's watchdog, recorded it): nothing it would
/// have done can come any more.
#[cold]
#[inline(never)]
fn peer_lost(pe: usize, status: i32, waiting: Option<&dyn Fn() -> String>) -> ! {
    let how = match status {
        crate::ctrl::LOST_UNKNOWN => "ended".to_string(),
        s if s >= 0 => format!("exited (status {s})"),
        s => format!("was killed by signal {}", -s),
    };
    let (call, waits) = doing(waiting);
    let what = if waits {
        "what this PE waits for may never come"
    } else {
        "this PE ran outside the library (a kernel or thread of it may wait for that PE): the job cannot finish"
    };
    fatal(&call, format_args!("PE {pe} {how} without calling shmem_finalize; {what}"))
}

/// `global_exit` (OpenSHMEM 1.5 §9.1.6): every PE ends with `status`. This
/// PE records the call in the control segment (PEs waiting in the library
/// see it and exit with the same status; ishmrun ends the others) and exits
/// as if by `exit(status)`, without a collective finalize.
pub fn global_exit(status: i32) -> ! {
    if let Some(c) = ctrl() {
        let h = c.header();
        h.exit_status.store(status, Ordering::Relaxed);
        let me = phase::my_pe().map_or(0, |p| p as i32) + 1;
        let _ = h.exit_caller.compare_exchange(0, me, Ordering::AcqRel, Ordering::Acquire);
    }
    if !ABORT_HOOK.load(Ordering::Acquire).is_null() {
        // PEs on other nodes see no control segment: the launcher ends them
        // (and the job's exit status is `status` where MPI can pass it on).
        let _ = std::io::stdout().flush();
        phase::mark_exiting();
        run_abort_hook(exit_status(status));
    }
    exit_with(status)
}

/// `status` as a process exit status: itself when it fits, else 255 (a
/// non-zero status must not end the job with 0, as `exit(256)` would).
fn exit_status(status: i32) -> i32 {
    if (0..=255).contains(&status) {
        status
    } else {
        255
    }
}

#[cold]
fn exit_with(status: i32) -> ! {
    phase::mark_exiting();
    let _ = std::io::stdout().flush();
    // SAFETY: exit runs atexit handlers (ours now does nothing) and flushes
    // C stdio, as exit(status) in the program would.
    unsafe { libc::exit(exit_status(status)) }
}

#[cold]
fn exit_for_peer_abort(code: i32) -> ! {
    let _ = std::io::stdout().flush();
    // SAFETY: as in abort_job.
    unsafe { libc::_exit(code & 0xff) }
}

/// Runs the body of one of the runtime's own `extern "C"` callbacks (exit
/// handlers, loader iteration callbacks) so that a panic cannot unwind into
/// C: it becomes a PE-tagged fatal error naming `what`.
pub fn callback_guard<R>(what: &str, f: impl FnOnce() -> R) -> R {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => fatal(what, format_args!("internal error (panic): {}", panic_message(&*p))),
    }
}

pub use ishmem_proxy_abi::panic_message;
