//! Waiting on shared memory: spin briefly, then yield, then sleep, so that a
//! waiting PE costs little when PEs outnumber cores (oversubscribed runs),
//! and leave when another PE aborts the job.

use crate::ctrl::Awaits;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::time::Duration;

/// Called on every poll of a wait once the proxy is up (it serves other
/// PEs' requests and lets MPI progress); null otherwise.
static PROGRESS: AtomicPtr<()> = AtomicPtr::new(std::ptr::null_mut());

pub(crate) fn set_progress(f: Option<fn()>) {
    PROGRESS.store(f.map_or(std::ptr::null_mut(), |f| f as *mut ()), Ordering::Release);
}

/// Threads of this process now waiting inside the library (they progress
/// the proxy themselves, so the progress thread can rest).
pub(crate) static WAITERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Counts this thread in [`WAITERS`] until dropped.
pub(crate) struct Waiting;
impl Waiting {
    pub(crate) fn enter() -> Waiting {
        WAITERS.fetch_add(1, Ordering::Relaxed);
        Waiting
    }
}
impl Drop for Waiting {
    fn drop(&mut self) {
        WAITERS.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Runs the progress hook, if any (also called by single polls such as
/// `test`, so a loop over them progresses).
#[inline]
pub fn progress() {
    let p = PROGRESS.load(Ordering::Relaxed);
    if !p.is_null() {
        // SAFETY: only `fn()` values are stored.
        let f: fn() = unsafe { std::mem::transmute(p) };
        f();
    }
}

/// Spins for this many polls before yielding the CPU: 256 while this
/// node's PEs fit its cores; 4 when they outnumber them, where the PE a
/// waiter waits for may need this very core (see `set_oversubscribed`).
static SPIN_POLLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(256);

/// Called at init: whether this node runs more PEs than the cores this
/// process may use.
pub(crate) fn set_oversubscribed(yes: bool) {
    SPIN_POLLS.store(if yes { 4 } else { 256 }, Ordering::Relaxed);
}
/// Then yields between polls until the wait has lasted this long: when PEs
/// outnumber cores, a yield hands the core to a PE that has work (another
/// waiter yields it back at once), so a collective's latency stays a few
/// context switches instead of a sleep's timer granularity.
const YIELD_FOR: Duration = Duration::from_millis(5);
/// Then sleeps this long between polls (a long wait costs little CPU).
/// Not with a proxy up while the node's PEs fit its cores: then a wait
/// polls without pause (see `wait_slow`).
const SLEEP: Duration = Duration::from_micros(50);

/// Ends the job with a report that several PEs may detect at once (a
/// collective-argument mismatch): the PE that claims the report prints it
/// and aborts the job; the others keep waiting, and serving the proxy for
/// the reporter's reads, until that abort ends them.
pub(crate) fn report_once(call: &str, msg: std::fmt::Arguments<'_>) -> ! {
    if crate::error::claim_report() {
        crate::error::fatal(call, msg)
    }
    wait_until(&|| format!("{call} (waiting for another PE's report to end the job)"), || false);
    unreachable!("the reporting PE aborts the job")
}

/// A wait that lasts this long is published in the control segment (what
/// it waits for, since when) for the watchdog's deadlock report and the
/// messages of PEs that end while this one waits.
const PUBLISH_AFTER: Duration = Duration::from_millis(50);

/// Polls `ready` until it returns true. `what` names the wait as messages
/// show it (the user's call and its arguments, and what it waits for); it
/// runs only when the wait lasts.
#[inline]
pub fn wait_until(what: &dyn Fn() -> String, ready: impl FnMut() -> bool) {
    wait_until_in(what, None, ready)
}

/// [`wait_until`] in a team sync or collective of the team on slot
/// `awaits.slot`, waiting for PE `awaits.pe`'s part of it (published with
/// the wait: the deadlock report tells such waits apart).
#[inline]
pub fn wait_until_in(what: &dyn Fn() -> String, awaits: Option<Awaits>, mut ready: impl FnMut() -> bool) {
    if ready() {
        return;
    }
    wait_slow(what, awaits, &mut ready)
}

/// The thread ids of this process's threads whose wait is published (the
/// record is cleared when the last leaves).
static PUBLISHED: std::sync::Mutex<Vec<i32>> = std::sync::Mutex::new(Vec::new());

/// The threads of this process whose wait is published (the watchdog
/// leaves them out when it looks for other threads at work).
pub(crate) fn waiting_tids() -> Vec<i32> {
    PUBLISHED.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

fn gettid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

/// A published wait, withdrawn on drop.
struct Published;

impl Published {
    fn new(what: &dyn Fn() -> String, awaits: Option<Awaits>, started: std::time::Instant) -> Option<Published> {
        let rec = crate::error::my_blocked()?;
        let since = monotonic_ms().saturating_sub(started.elapsed().as_millis() as u64) + 1;
        let text = what();
        let mut tids = PUBLISHED.lock().unwrap_or_else(|e| e.into_inner());
        tids.push(gettid());
        rec.publish(since, &text, awaits);
        Some(Published)
    }
}

impl Drop for Published {
    fn drop(&mut self) {
        let mut tids = PUBLISHED.lock().unwrap_or_else(|e| e.into_inner());
        let me = gettid();
        if let Some(i) = tids.iter().position(|&t| t == me) {
            tids.swap_remove(i);
        }
        if tids.is_empty() {
            if let Some(rec) = crate::error::my_blocked() {
                rec.clear();
            }
        }
    }
}

/// `CLOCK_MONOTONIC` in milliseconds: one clock for every process of the
/// node (the published waits' times are compared across PEs).
pub(crate) fn monotonic_ms() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid clock id and a valid out pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1000 + ts.tv_nsec as u64 / 1_000_000
}

#[inline(never)]
fn wait_slow(what: &dyn Fn() -> String, awaits: Option<Awaits>, ready: &mut dyn FnMut() -> bool) {
    let _waiting = Waiting::enter();
    // When the wait started spinning slowly (read lazily: nothing extra
    // on a wait that ends within its first polls).
    let mut started: Option<std::time::Instant> = None;
    let mut published: Option<Published> = None;
    let mut polls: u32 = 0;
    let mut since: Option<std::time::Instant> = None;
    let mut sleeping = false;
    let spin = SPIN_POLLS.load(Ordering::Relaxed);
    // A proxy is up and this node's PEs fit its cores: poll without pause,
    // as an MPI wait does. Other PEs' one-sided operations on this PE may
    // progress only while it polls (MPICH over UCX shared memory answers a
    // get from the target's progress): a yield between polls (a system
    // call) made an 8-byte get from a waiting PE 0.8 us against MPI's
    // 0.27 us, a sleep 90 us.
    let busy = spin >= 256 && !PROGRESS.load(Ordering::Relaxed).is_null();
    loop {
        if ready() {
            return;
        }
        progress();
        // Wraps after 2^32 polls (a few spins again), so the checks below
        // keep coming in a wait of any length.
        polls = polls.wrapping_add(1);
        if polls < spin {
            std::hint::spin_loop();
            continue;
        }
        if polls.is_multiple_of(64) {
            crate::error::check_abort(Some(what));
            if published.is_none() && polls.is_multiple_of(1024) {
                let t0 = *started.get_or_insert_with(std::time::Instant::now);
                if t0.elapsed() >= PUBLISH_AFTER {
                    published = Published::new(what, awaits, t0);
                }
            }
        }
        if busy {
            std::hint::spin_loop();
            continue;
        }
        if sleeping {
            std::thread::sleep(SLEEP);
        } else {
            let start = *since.get_or_insert_with(std::time::Instant::now);
            sleeping = polls.is_multiple_of(16) && start.elapsed() >= YIELD_FOR;
            std::thread::yield_now();
        }
    }
}
