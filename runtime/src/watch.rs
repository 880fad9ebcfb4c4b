//! The watchdog: a thread of every PE, from the end of init to the end of
//! finalize's barrier, that ends the PE when the job cannot go on, also
//! while none of its threads waits in the library (a host thread in a
//! device synchronize, a kernel spinning on a flag, plain computation):
//!
//! - another PE aborted, called `global_exit`, or ended without
//!   finalizing: ishmrun records such a PE; under an MPI launcher the
//!   watchdogs of a node's PEs watch each other's processes end (pidfds);
//!   PEs on other nodes are the MPI launcher's to end;
//! - this PE's device context failed (a kernel fault): [`Device::health`];
//! - every PE of the job waits, for `ISHMEM_DEADLOCK_TIMEOUT` seconds, in
//!   the library while nothing else of it runs (no other thread uses the
//!   CPU, its device runs nothing), or in a kernel's `wait_until` or
//!   `signal_wait_until` while nothing of its device waits and ring
//!   requests changes: one report of what each waits for (host waits
//!   publish themselves once they last, `wait.rs`; device waits record
//!   themselves in the ring's wait words, [`DeviceWaits`]). A report in
//!   which kernels wait only warns unless `ISHMEM_DEADLOCK_DEVICE_ABORT=1`,
//!   or unless every kernel wait in it is one of the library's own syncs
//!   that nothing can release ([`kernels_cannot_go_on`]).
//!
//! Ten ticks a second on its own thread; nothing on any call's path.
//!
//! [`Device::health`]: crate::device::Device::health

use crate::ctrl::{Awaits, Ctrl, LIFE_FINALIZING, LIFE_RUNNING, LOST_UNKNOWN};
use crate::state::State;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// How often the watchdog looks.
const TICK: Duration = Duration::from_millis(100);
/// Every this many ticks, a PE with a published wait checks whether its
/// other threads use the CPU.
const QUIET_TICKS: u32 = 10;
/// CPU clock ticks (usually 10 ms) the other threads of a PE may use in
/// [`QUIET_TICKS`] ticks and still count as idle (runtime helper threads
/// wake now and then).
const IDLE_CPU_TICKS: u64 = 3;

/// The running watchdog, stopped by [`stop`].
struct Watchdog {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: std::thread::JoinHandle<()>,
}

static WATCHDOG: Mutex<Option<Watchdog>> = Mutex::new(None);

/// Starts this PE's watchdog (the end of init).
pub(crate) fn start(st: &'static State) {
    let stop = Arc::new((Mutex::new(false), Condvar::new()));
    let s2 = Arc::clone(&stop);
    let thread = std::thread::Builder::new()
        .name("ishmem-watch".into())
        .spawn(move || run(st, &s2))
        .expect("spawn the watchdog thread");
    *WATCHDOG.lock().unwrap_or_else(|e| e.into_inner()) = Some(Watchdog { stop, thread });
}

/// Stops and joins the watchdog (finalize, after its barrier).
pub(crate) fn stop() {
    let w = WATCHDOG.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(w) = w {
        *w.stop.0.lock().unwrap_or_else(|e| e.into_inner()) = true;
        w.stop.1.notify_all();
        let _ = w.thread.join();
    }
}

fn run(st: &'static State, stop: &(Mutex<bool>, Condvar)) {
    let mut peers = NodePeers::open(st);
    let mut quiet = Quiet::default();
    let mut device_waits = DeviceWaits::default();
    let mut tick: u32 = 0;
    loop {
        {
            let stopped = stop.0.lock().unwrap_or_else(|e| e.into_inner());
            let (stopped, _) = stop.1.wait_timeout(stopped, TICK).unwrap_or_else(|e| e.into_inner());
            if *stopped {
                return;
            }
        }
        tick = tick.wrapping_add(1);
        if let Some(p) = peers.as_mut() {
            p.poll(&st.ctrl);
        }
        // Another PE aborted, exited or was lost: leave, or end with a
        // message naming it and what this PE was doing.
        crate::error::check_abort(None);
        if let Err(e) = st.device.health() {
            let (call, _) = crate::error::doing(None);
            crate::error::fatal(
                &call,
                format_args!("{e}; a kernel of this PE faulted (illegal address, trap or launch failure), so this PE cannot go on"),
            )
        }
        if st.config.deadlock_timeout > 0 {
            device_waits.sample(st, tick.is_multiple_of(QUIET_TICKS));
            if tick.is_multiple_of(QUIET_TICKS) {
                quiet.sample(st);
            }
            deadlock(st);
        }
    }
}

/// Under an MPI launcher: the node's other PEs' processes, as pidfds (ishmrun
/// watches its PEs itself and knows how they ended).
struct NodePeers {
    fds: Vec<(usize, OwnedFd)>,
}

impl NodePeers {
    fn open(st: &State) -> Option<NodePeers> {
        if st.runtime != crate::boot::Runtime::Mpi {
            return None;
        }
        let mut fds = Vec::new();
        for pe in (0..st.n_pes).filter(|&p| p != st.my_pe) {
            let pid = st.ctrl.pe(pe).pid.load(Ordering::Relaxed);
            if pid <= 0 {
                continue; // on another node: its segment is not ours
            }
            // SAFETY: pidfd_open takes a pid and flags and returns a new fd.
            let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
            if fd >= 0 {
                // SAFETY: a fresh fd we own.
                fds.push((pe, unsafe { OwnedFd::from_raw_fd(fd as i32) }));
            }
        }
        Some(NodePeers { fds })
    }

    /// Records a node PE that ended while running as lost.
    fn poll(&mut self, ctrl: &Ctrl) {
        if self.fds.is_empty() {
            return;
        }
        let mut pfds: Vec<libc::pollfd> = self
            .fds
            .iter()
            .map(|(_, fd)| libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 })
            .collect();
        // SAFETY: a valid array of pollfds; timeout 0 (no wait).
        if unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, 0) } <= 0 {
            return;
        }
        let mut ended = Vec::new();
        for (i, p) in pfds.iter().enumerate() {
            if p.revents != 0 {
                let pe = self.fds[i].0;
                if ctrl.pe(pe).life.load(Ordering::Acquire) == LIFE_RUNNING {
                    ctrl.mark_lost(pe, LOST_UNKNOWN);
                }
                ended.push(i);
            }
        }
        for i in ended.into_iter().rev() {
            self.fds.remove(i);
        }
    }
}

/// Whether this PE's threads other than its published waiters and the
/// library's own threads use the CPU, or its device runs work, published as
/// [`crate::ctrl::PeCtrl::quiet_since_ms`].
#[derive(Default)]
struct Quiet {
    /// CPU ticks of the other threads at the last sample, and when.
    last: Option<(u64, u64)>,
}

impl Quiet {
    fn sample(&mut self, st: &State) {
        let me = st.ctrl.pe(st.my_pe);
        if me.blocked.read().is_none() {
            self.last = None;
            me.quiet_since_ms.store(0, Ordering::Relaxed);
            return;
        }
        let now = crate::wait::monotonic_ms();
        let cpu = other_threads_cpu();
        // Kernels still running may be what the waits wait for.
        let device_idle = st.device.idle();
        match (self.last, cpu) {
            (Some((before, at)), Some(c)) if device_idle && c.saturating_sub(before) <= IDLE_CPU_TICKS => {
                if me.quiet_since_ms.load(Ordering::Relaxed) == 0 {
                    me.quiet_since_ms.store(at, Ordering::Relaxed);
                }
            }
            _ => me.quiet_since_ms.store(0, Ordering::Relaxed),
        }
        self.last = cpu.map(|c| (c, now));
    }
}

/// CPU clock ticks used so far by this process's threads, leaving out the
/// threads now waiting in the library and the library's own threads
/// (named `ishmem-*`); `None` when `/proc` cannot tell.
fn other_threads_cpu() -> Option<u64> {
    let waiting = crate::wait::waiting_tids();
    let mut total = 0u64;
    for e in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let name = e.file_name();
        let Some(tid) = name.to_str().and_then(|t| t.parse::<i32>().ok()) else { continue };
        if waiting.contains(&tid) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else { continue };
        // "tid (comm) state ...": comm may hold spaces and parentheses.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else { continue };
        if stat[open + 1..close].starts_with("ishmem-") {
            continue;
        }
        let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        // After the comm: state is field 3 of stat(5); utime and stime are 14 and 15.
        let t = |i: usize| fields.get(i - 3).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        total += t(14) + t(15);
    }
    Some(total)
}

/// A PE that cannot go on, as [`stuck`] finds it.
struct Stuck {
    /// How long it has been stuck (ms).
    for_ms: u64,
    /// Its line of the report.
    line: String,
    /// Whether kernels of it wait (else its device runs nothing).
    kernels: bool,
    /// The kernels' wait, when it is one of the library's own team syncs
    /// or collectives (what it waits for is known).
    awaits: Option<Awaits>,
    /// The host's wait, when it is a team sync or collective's.
    host_awaits: Option<Awaits>,
}

/// PE `p`, when it is stuck: a host wait while nothing else of it runs
/// (no other thread uses the CPU, its device runs nothing), or a device
/// wait that lasted while nothing of its device requests changed (then its
/// host may wait in the library or be outside it); `None` when it is not.
fn stuck(p: &crate::ctrl::PeCtrl, now: u64) -> Option<Stuck> {
    let host = p.blocked.read();
    if let Some(d) = p.device_blocked.read() {
        let dfor = secs(now.saturating_sub(d.since_ms));
        let host_awaits = host.as_ref().and_then(|h| h.awaits);
        let (for_ms, line) = match host {
            Some(h) => (
                now.saturating_sub(h.since_ms.max(d.since_ms)),
                format!(
                    "waits in {}, for {}; its kernels wait in {}, for {dfor}",
                    h.text,
                    secs(now.saturating_sub(h.since_ms)),
                    d.text
                ),
            ),
            None => (
                now.saturating_sub(d.since_ms),
                format!("runs outside the library; its kernels wait in {}, for {dfor}", d.text),
            ),
        };
        return Some(Stuck { for_ms, line, kernels: true, awaits: d.awaits, host_awaits });
    }
    let h = host?;
    let quiet = p.quiet_since_ms.load(Ordering::Relaxed);
    (quiet != 0).then(|| Stuck {
        for_ms: now.saturating_sub(h.since_ms.max(quiet)),
        line: format!("waits in {}, for {}", h.text, secs(now.saturating_sub(h.since_ms))),
        kernels: false,
        awaits: None,
        host_awaits: h.awaits,
    })
}

/// Whether the kernels' waits of stuck PEs `waits` (indexed by PE) can be
/// released by nothing: each is a wait of the library's own team sync or
/// collective whose chain of awaited PEs on that team ends at a PE whose
/// device runs nothing and whose host waits in a sync or collective of
/// the same team, or comes back to one already on it. Such a wait needs
/// the awaited PE's part of a collective on the same team, and OpenSHMEM
/// lets a PE be in one collective on a team at a time: a PE that waits in
/// one on that team (in kernels or on the host) sends nothing more there
/// before it returns. Any other wait on the chain (the device API's, a
/// host wait for a flag, a host outside the library) might end by work the
/// host cannot see, and then the PE's kernels might still make the call.
fn kernels_cannot_go_on(waits: &[Stuck]) -> bool {
    waits.iter().filter(|w| w.kernels).all(|w| {
        let mut at = w;
        for _ in 0..waits.len() {
            let Some(a) = at.awaits else { return false };
            let Some(next) = waits.get(a.pe) else { return false };
            if !next.kernels {
                return next.host_awaits.is_some_and(|b| b.slot == a.slot);
            }
            match next.awaits {
                Some(b) if b.slot == a.slot => at = next,
                _ => return false,
            }
        }
        // Around a cycle of such waits.
        true
    })
}

fn secs(ms: u64) -> String {
    format!("{}.{} s", ms / 1000, ms % 1000 / 100)
}

/// Reports a deadlock once every PE of the job (all on this node) has
/// been stuck ([`stuck`]) for the configured time: a report that ends the
/// job (one per job), or, when kernels wait and
/// `ISHMEM_DEADLOCK_DEVICE_ABORT` is off, a warning (one per job, which
/// leaves the report that ends the job to a later deadlock).
fn deadlock(st: &State) {
    let ctrl = &st.ctrl;
    let now = crate::wait::monotonic_ms();
    let limit = st.config.deadlock_timeout.saturating_mul(1000);
    // Cheap first: this PE itself must be stuck.
    if stuck(ctrl.pe(st.my_pe), now).is_none_or(|w| w.for_ms < limit) {
        return;
    }
    let mut waits: Vec<Stuck> = Vec::with_capacity(st.n_pes);
    for pe in 0..st.n_pes {
        let p = ctrl.pe(pe);
        if p.pid.load(Ordering::Relaxed) <= 0 {
            return; // a PE of another node: not ours to judge
        }
        let life = p.life.load(Ordering::Acquire);
        if life != LIFE_RUNNING && life != LIFE_FINALIZING {
            return;
        }
        match stuck(p, now) {
            Some(w) if w.for_ms >= limit => waits.push(w),
            _ => return,
        }
    }
    let kernels = waits.iter().any(|w| w.kernels);
    let certain = kernels && kernels_cannot_go_on(&waits);
    let warn_only = kernels && !certain && !st.config.deadlock_device_abort;
    let claimed = if warn_only { ctrl.claim_deadlock_warning(st.my_pe) } else { ctrl.claim_deadlock_report(st.my_pe) };
    if !claimed {
        return;
    }
    let mut msg = if kernels {
        format!(
            "every PE has waited for at least {} s, in the library or in kernels, and nothing of their device requests changed:",
            st.config.deadlock_timeout
        )
    } else {
        format!(
            "every PE has waited in the library for at least {} s, with no other thread of it running and its device idle, and none can go on:",
            st.config.deadlock_timeout
        )
    };
    for (pe, w) in waits.iter().enumerate() {
        msg.push_str(&format!("\n    PE {pe} {}", w.line));
    }
    if certain {
        msg.push_str(
            "\n    (the kernels wait in the library's own team syncs or collectives, for PEs that wait in the same team's, in kernels or on the host, so nothing can release them: the members made different collective calls, or made one call some on the host and others in kernels, which do not meet where device syncs use the sync words in GPU memory, nor on the host's publish-and-pull path; make every member's call alike, on the same side)",
        );
    }
    if warn_only {
        msg.push_str(
            "\n    (kernels wait, so this only warns and the job goes on: the host cannot see whether a host thread outside the library, or other work-items of a kernel, will still release them; ISHMEM_DEADLOCK_DEVICE_ABORT=1 ends the job instead; ISHMEM_DEADLOCK_TIMEOUT=SECONDS sets the time, 0 turns the check off)",
        );
        crate::error::warn(format_args!("deadlock: {msg}"));
        return;
    }
    msg.push_str(
        "\n    (ISHMEM_DEADLOCK_TIMEOUT=SECONDS sets the time, 0 turns the check off; ISHMEM_DEADLOCK_ABORT=0 only warns)",
    );
    if st.config.deadlock_abort {
        crate::error::fatal("deadlock", format_args!("{msg}"))
    }
    crate::error::warn(format_args!("deadlock: {msg}"));
}

/// This PE's device waits that lasted, published as
/// [`crate::ctrl::PeCtrl::device_blocked`] with the time anything of the
/// device's requests last changed (the waits starting or ending, requests
/// served): the device API's waits, from the ring's wait words
/// (`core.h`: `ISHMEMI_WAIT_LOOP`), else a signal wait of the library's own
/// device syncs and collectives inferred from the device sync words
/// ([`sync_wait`], read once a second).
#[derive(Default)]
struct DeviceWaits {
    /// What was published at the last look: the wait's words, then the
    /// ring's count of requests served.
    last: Option<[u64; 6]>,
    /// The sync wait found at the last read of the sync words.
    sync: Option<SyncWait>,
}

impl DeviceWaits {
    /// One tick: `read_sync` reads the sync words again (when no device
    /// API wait is recorded; a failed read keeps what the last one found).
    fn sample(&mut self, st: &State, read_sync: bool) {
        let ring = st.ring();
        if read_sync {
            self.sync = match ring.wait_count.load(Ordering::Acquire) {
                0 => sync_wait(st).unwrap_or(self.sync),
                _ => None,
            };
        }
        self.look(ring, self.sync, &st.ctrl.pe(st.my_pe).device_blocked, crate::wait::monotonic_ms());
    }

    /// One look at `ring`'s wait words (or, when they hold none, at `sync`)
    /// at `now_ms`: publishes the wait in `rec` when it, or the ring's
    /// count of requests served, changed; clears `rec` when no wait lasts.
    fn look(&mut self, ring: &crate::ring::Ring, sync: Option<SyncWait>, rec: &crate::ctrl::Blocked, now_ms: u64) {
        let count = ring.wait_count.load(Ordering::Acquire);
        // None, or an end counted before its start was seen.
        let recorded = count != 0 && count <= u32::MAX as u64;
        let words = match (recorded, sync) {
            (true, _) => [1, count, ring.wait_epoch.load(Ordering::Acquire), 0, 0],
            (false, Some(w)) => w.key(),
            (false, None) => {
                if self.last.take().is_some() {
                    rec.clear();
                }
                return;
            }
        };
        let completed = ring.completed.load(Ordering::Acquire);
        let [a, b, c, d, e] = words;
        let now = [a, b, c, d, e, completed];
        if self.last == Some(now) {
            return;
        }
        self.last = Some(now);
        let (text, awaits) = match sync {
            Some(w) if !recorded => (w.text(), Some(Awaits { slot: w.slot, pe: w.pe })),
            _ => (device_wait_text(ring, count), recorded_sync(ring, count)),
        };
        rec.publish(now_ms + 1, &text, awaits);
    }
}

/// What a work-item of this PE's kernels waits for in a device team sync
/// or collective step ([`sync_wait`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct SyncWait {
    /// The team slot, and the team's size.
    slot: usize,
    size: usize,
    /// The world PE it waits for.
    pe: usize,
    what: SyncWaitKind,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum SyncWaitKind {
    /// The PE's signal `want`, of which `have` arrived.
    Signal { want: u64, have: u64 },
    /// The PE's low-latency message of count `count`.
    LlMessage { count: u64 },
    /// The PE to finish reading this PE's low-latency message of count
    /// `count` (it finished `done`), before this PE writes that buffer again.
    LlRead { count: u64, done: u64 },
}

impl SyncWait {
    /// The words that tell one wait from another.
    fn key(&self) -> [u64; 5] {
        let (k, a, b) = match self.what {
            SyncWaitKind::Signal { want, have } => (2, want, have),
            SyncWaitKind::LlMessage { count } => (3, count, 0),
            SyncWaitKind::LlRead { count, done } => (4, count, done),
        };
        [k, self.slot as u64, self.pe as u64, a, b]
    }

    fn text(&self) -> String {
        let (team, size, pe) = (crate::team::slot_name(self.slot), self.size, self.pe);
        match self.what {
            SyncWaitKind::Signal { want, have } => format!(
                "a device team sync or collective of {team} ({size} PEs): waits for PE {pe}'s signal {want} ({have} arrived)"
            ),
            SyncWaitKind::LlMessage { count } => format!(
                "a small device collective of {team} ({size} PEs): waits for PE {pe}'s low-latency message {count}"
            ),
            SyncWaitKind::LlRead { count, done } => format!(
                "a small device collective of {team} ({size} PEs): waits for PE {pe} to read this PE's low-latency message {count} (it read up to {done})"
            ),
        }
    }
}

/// The wait of the library's own device syncs and collectives that this
/// PE's kernels are in, if any, read from its device sync words
/// (`sync_words.rs`); `None` when the words could not be read. The device
/// pays nothing for it:
/// - a work-item that awaits the k-th signal of PE q on a slot first sets
///   this PE's awaited count of the pair (`PAIRS` word 1) to k, then polls
///   q's flag (`FLAGS`, the count in bits 16-63): an awaited count above
///   the flag's is a wait not yet met (the counts are read before the
///   flags, so a wait that ends while they are read is not taken for one);
/// - a low-latency collective marks a pair (word 3) with its count c
///   where it is about to wait on q, and marks it done (word 2) at its
///   end. While marked, it waits either for q to have read its message
///   c - 2 (`LLDONE`, which q writes), or for q's message c (the first
///   word of q's buffer here not yet carrying c).
///
/// Devices that sync through the control segment record those waits
/// themselves (`WAIT_TEAM_SYNC`).
fn sync_wait(st: &State) -> Option<Option<SyncWait>> {
    use crate::sync_words::*;
    let base = st.device_state.sync_words;
    if base == 0 {
        return Some(None);
    }
    let off = (base - st.heap_base as u64) as usize;
    let word = |w: usize| off + 8 * w;
    let teams: Vec<(usize, crate::types::Team)> = st
        .teams
        .try_read()
        .ok()?
        .iter()
        .enumerate()
        .filter_map(|(slot, t)| t.filter(|t| t.size > 1).map(|t| (slot, t)))
        .collect();
    let n = st.n_pes;
    let (mut pairs, mut flags, mut lldone) = (vec![0u64; 4 * n], vec![0u64; n], vec![0u64; n]);
    let mut ll_waits = Vec::new();
    for (slot, t) in teams {
        st.route.read_mine(word(SYNC_PAIRS + 4 * slot * SYNC_MAX_PES), &mut pairs).ok()?;
        st.route.read_mine(word(SYNC_FLAGS + slot * SYNC_MAX_PES), &mut flags).ok()?;
        let ll = slot < SYNC_LL_SLOTS && n <= SYNC_LL_PES;
        if ll {
            st.route.read_mine(word(SYNC_LLDONE + slot * SYNC_MAX_PES), &mut lldone).ok()?;
        }
        for pe in (0..t.size).map(|r| t.world(r)).filter(|&pe| pe != st.my_pe) {
            let at = |what| SyncWait { slot, size: t.size, pe, what };
            let (want, have) = (pairs[4 * pe + 1], flags[pe] >> 16);
            if want > have {
                return Some(Some(at(SyncWaitKind::Signal { want, have })));
            }
            let (done, marked) = (pairs[4 * pe + 2], pairs[4 * pe + 3]);
            if ll && marked > done {
                if marked > 2 && lldone[pe] < marked - 2 {
                    return Some(Some(at(SyncWaitKind::LlRead { count: marked - 2, done: lldone[pe] })));
                }
                ll_waits.push(at(SyncWaitKind::LlMessage { count: marked }));
            }
        }
    }
    // A message not come: the first word of the sender's buffer for it.
    for w in ll_waits {
        let SyncWaitKind::LlMessage { count } = w.what else { continue };
        let buf = SYNC_LL + ((w.slot * SYNC_LL_PES + w.pe) * 2 + (count & 1) as usize) * SYNC_LL_WORDS;
        let mut first = [0u64];
        st.route.read_mine(word(buf), &mut first).ok()?;
        if (first[0] >> 32) & 0xffff != count & 0xffff {
            return Some(Some(w));
        }
    }
    Some(None)
}

/// The latest lasting device wait a PE's ring records (its wait words:
/// `what` packs the code in bits 0-7, the element kind or a team sync's
/// round in 8-15, the comparison or a team sync's slot in 16-23;
/// `device::WAIT_CODES`).
struct RecordedWait {
    code: u32,
    elem: u32,
    cmp: i32,
    addr: u64,
    value: u64,
}

impl RecordedWait {
    fn read(ring: &crate::ring::Ring) -> RecordedWait {
        let what = ring.wait_what.load(Ordering::Relaxed);
        RecordedWait {
            code: (what & 0xff) as u32,
            elem: ((what >> 8) & 0xff) as u32,
            cmp: ((what >> 16) & 0xff) as i32,
            addr: ring.wait_addr.load(Ordering::Relaxed),
            value: ring.wait_value.load(Ordering::Relaxed),
        }
    }
}

/// The recorded device waits' [`Awaits`]: one work-item waits, in a team
/// sync through the control segment (whose wait words name the slot and
/// the PE it waits for).
fn recorded_sync(ring: &crate::ring::Ring, count: u64) -> Option<Awaits> {
    let w = RecordedWait::read(ring);
    (count == 1 && w.code == crate::device::WAIT_TEAM_SYNC)
        .then_some(Awaits { slot: w.cmp as usize, pe: w.addr as usize })
}

/// What the latest of a PE's lasting device waits waits for, as the
/// report names it (the ring's wait words, `device::WAIT_CODES`).
fn device_wait_text(ring: &crate::ring::Ring, count: u64) -> String {
    use crate::device::*;
    let RecordedWait { code, elem, cmp, addr, value } = RecordedWait::read(ring);
    let (ty, shown) = match elem {
        ELEM_F32 => ("float", format!("{}", f32::from_bits(value as u32))),
        ELEM_F64 => ("double", format!("{}", f64::from_bits(value))),
        ELEM_I32 => ("int", format!("{}", value as u32 as i32)),
        ELEM_U32 => ("uint", format!("{}", value as u32)),
        ELEM_I64 => ("long", format!("{}", value as i64)),
        _ => ("ulong", format!("{value}")),
    };
    if code == WAIT_TEAM_SYNC {
        let (round, slot) = (elem, cmp);
        let call = format!(
            "a device team sync of {} (through the control segment, epoch {value}, round {round}: waits for PE {addr})",
            crate::team::slot_name(slot as usize)
        );
        return if count == 1 { call } else { format!("{call} (the latest to start of {count} waits)") };
    }
    let cmp_name = crate::amo::cmp_name("ishmem", cmp);
    let call = match code {
        WAIT_UNTIL => format!("ishmem_{ty}_wait_until(ivar {addr:#x}, {cmp_name}, {shown})"),
        WAIT_UNTIL_ALL => format!("ishmem_{ty}_wait_until_all (at its element {addr:#x}: {cmp_name}, {shown})"),
        WAIT_UNTIL_ANY => format!("ishmem_{ty}_wait_until_any(ivars {addr:#x}, {value} elements, {cmp_name})"),
        WAIT_UNTIL_SOME => format!("ishmem_{ty}_wait_until_some(ivars {addr:#x}, {value} elements, {cmp_name})"),
        WAIT_SIGNAL => format!("ishmem_signal_wait_until(sig_addr {addr:#x}, {cmp_name}, {shown})"),
        _ => format!("an unknown wait (code {code})"),
    };
    if count == 1 {
        format!("{call} (1 work-item waiting so)")
    } else {
        format!("{call} (the latest to start of {count} work-items waiting so)")
    }
}

#[cfg(test)]
mod tests {
    use super::{device_wait_text, kernels_cannot_go_on, DeviceWaits, Stuck, SyncWait, SyncWaitKind};
    use crate::ctrl::Awaits;
    use crate::ctrl::Blocked;
    use crate::device::{ELEM_I32, ELEM_I64, ELEM_U64, WAIT_SIGNAL, WAIT_TEAM_SYNC, WAIT_UNTIL, WAIT_UNTIL_ANY};
    use crate::ring::new_ring;
    use std::sync::atomic::Ordering;

    #[test]
    fn device_waits_are_named_from_the_ring_s_wait_words() {
        let ring = new_ring();
        let set = |code: u32, elem: u32, cmp: u64, addr: u64, value: u64| {
            ring.wait_what.store(code as u64 | (elem as u64) << 8 | cmp << 16, Ordering::Relaxed);
            ring.wait_addr.store(addr, Ordering::Relaxed);
            ring.wait_value.store(value, Ordering::Relaxed);
        };
        set(WAIT_UNTIL, ELEM_I64, 1, 0x1000, -5i64 as u64);
        assert_eq!(
            device_wait_text(ring, 1),
            "ishmem_long_wait_until(ivar 0x1000, ISHMEM_CMP_EQ, -5) (1 work-item waiting so)"
        );
        set(WAIT_UNTIL, ELEM_I32, 5, 0x2000, 0xffff_fffe);
        assert_eq!(
            device_wait_text(ring, 3),
            "ishmem_int_wait_until(ivar 0x2000, ISHMEM_CMP_LT, -2) (the latest to start of 3 work-items waiting so)"
        );
        set(WAIT_SIGNAL, ELEM_U64, 4, 0x3000, 7);
        assert!(device_wait_text(ring, 1).starts_with("ishmem_signal_wait_until(sig_addr 0x3000, ISHMEM_CMP_GE, 7)"));
        set(WAIT_UNTIL_ANY, ELEM_I32, 2, 0x4000, 16);
        assert!(device_wait_text(ring, 1)
            .starts_with("ishmem_int_wait_until_any(ivars 0x4000, 16 elements, ISHMEM_CMP_NE)"));
    }

    #[test]
    fn a_device_wait_is_published_with_the_time_it_last_changed_and_cleared_when_it_ends() {
        let ring = new_ring();
        // SAFETY: Blocked is atomics only; all-zero is "nothing published".
        let rec: Blocked = unsafe { std::mem::zeroed() };
        let mut w = DeviceWaits::default();
        w.look(ring, None, &rec, 1000);
        assert!(rec.read().is_none(), "no wait lasts: nothing published");
        ring.wait_what.store(WAIT_UNTIL as u64 | (ELEM_I64 as u64) << 8 | 1 << 16, Ordering::Relaxed);
        ring.wait_count.store(1, Ordering::Relaxed);
        ring.wait_epoch.store(1, Ordering::Relaxed);
        w.look(ring, None, &rec, 2000);
        let r = rec.read().expect("a lasting wait is published");
        assert_eq!(r.since_ms, 2001);
        assert!(r.text.starts_with("ishmem_long_wait_until("), "{}", r.text);
        assert_eq!(r.awaits, None, "an API wait: what releases it is not known");
        // Nothing changed: the time stays that of the change.
        w.look(ring, None, &rec, 9000);
        assert_eq!(rec.read().unwrap().since_ms, 2001);
        // Ring traffic counts as a change, as does another wait starting.
        ring.completed.store(5, Ordering::Relaxed);
        w.look(ring, None, &rec, 9500);
        assert_eq!(rec.read().unwrap().since_ms, 9501);
        ring.wait_count.store(2, Ordering::Relaxed);
        ring.wait_epoch.store(2, Ordering::Relaxed);
        w.look(ring, None, &rec, 9800);
        let r = rec.read().unwrap();
        assert_eq!(r.since_ms, 9801);
        assert!(r.text.ends_with("(the latest to start of 2 work-items waiting so)"), "{}", r.text);
        // The waits end: the record goes.
        ring.wait_count.store(0, Ordering::Relaxed);
        w.look(ring, None, &rec, 10000);
        assert!(rec.read().is_none(), "ended waits stay published");
    }

    /// A signal wait inferred from the sync words is published like a
    /// recorded wait, restarts its time when the counts move, gives way to
    /// a recorded wait, and goes when the words show none.
    #[test]
    fn a_sync_wait_is_published_and_gives_way_to_a_recorded_one() {
        let ring = new_ring();
        // SAFETY: Blocked is atomics only; all-zero is "nothing published".
        let rec: Blocked = unsafe { std::mem::zeroed() };
        let mut w = DeviceWaits::default();
        let sw = SyncWait { slot: 0, size: 2, pe: 1, what: SyncWaitKind::Signal { want: 3, have: 2 } };
        w.look(ring, Some(sw), &rec, 1000);
        let r = rec.read().expect("a sync wait is published");
        assert_eq!(r.since_ms, 1001);
        assert_eq!(r.awaits, Some(Awaits { slot: 0, pe: 1 }));
        assert_eq!(
            r.text,
            "a device team sync or collective of the world team (2 PEs): waits for PE 1's signal 3 (2 arrived)"
        );
        w.look(ring, Some(sw), &rec, 5000);
        assert_eq!(rec.read().unwrap().since_ms, 1001, "nothing changed");
        w.look(ring, Some(SyncWait { what: SyncWaitKind::Signal { want: 4, have: 3 }, ..sw }), &rec, 6000);
        assert_eq!(rec.read().unwrap().since_ms, 6001, "the next wait is another one");
        ring.wait_what.store(WAIT_UNTIL as u64 | (ELEM_I64 as u64) << 8 | 1 << 16, Ordering::Relaxed);
        ring.wait_count.store(1, Ordering::Relaxed);
        w.look(ring, Some(sw), &rec, 7000);
        assert!(rec.read().unwrap().text.starts_with("ishmem_long_wait_until("), "the recorded wait is named");
        ring.wait_count.store(0, Ordering::Relaxed);
        w.look(ring, None, &rec, 8000);
        assert!(rec.read().is_none(), "no wait: nothing published");
    }

    /// A team sync through the control segment, recorded by one
    /// work-item, is published with the slot and PE it waits for; by
    /// several, without (others may be in API waits).
    #[test]
    fn a_recorded_team_sync_names_what_it_awaits() {
        let ring = new_ring();
        // SAFETY: Blocked is atomics only; all-zero is "nothing published".
        let rec: Blocked = unsafe { std::mem::zeroed() };
        let mut w = DeviceWaits::default();
        // Round 1 of slot 3, waiting for PE 2.
        ring.wait_what.store(WAIT_TEAM_SYNC as u64 | 1 << 8 | 3 << 16, Ordering::Relaxed);
        ring.wait_addr.store(2, Ordering::Relaxed);
        ring.wait_value.store(9, Ordering::Relaxed);
        ring.wait_count.store(1, Ordering::Relaxed);
        w.look(ring, None, &rec, 1000);
        assert_eq!(rec.read().unwrap().awaits, Some(Awaits { slot: 3, pe: 2 }));
        ring.wait_count.store(2, Ordering::Relaxed);
        w.look(ring, None, &rec, 2000);
        assert_eq!(rec.read().unwrap().awaits, None);
    }

    #[test]
    fn kernel_waits_that_nothing_can_release() {
        let other = || Stuck { for_ms: 0, line: String::new(), kernels: false, awaits: None, host_awaits: None };
        let host = || Stuck { host_awaits: Some(Awaits { slot: 0, pe: 1 }), ..other() };
        let sync = |slot, pe| Stuck { kernels: true, awaits: Some(Awaits { slot, pe }), ..other() };
        let api = || Stuck { kernels: true, ..other() };
        // No kernels: nothing for this check to say no to.
        assert!(kernels_cannot_go_on(&[host(), host()]));
        // A host collective against a kernel's (PE 1 waits for PE 0).
        assert!(kernels_cannot_go_on(&[host(), sync(0, 0)]));
        // A host wait of another kind (a flag), or of another team's
        // collective: its host may go on and launch the call.
        assert!(!kernels_cannot_go_on(&[other(), sync(0, 0)]));
        assert!(!kernels_cannot_go_on(&[host(), sync(3, 0)]));
        // Kernels waiting for each other on one team, in a cycle.
        assert!(kernels_cannot_go_on(&[sync(0, 1), sync(0, 0)]));
        assert!(kernels_cannot_go_on(&[sync(2, 1), sync(2, 2), sync(2, 0)]));
        // A chain on one team that ends at a PE without kernels.
        let host1 = Stuck { host_awaits: Some(Awaits { slot: 1, pe: 0 }), ..other() };
        assert!(kernels_cannot_go_on(&[sync(1, 1), sync(1, 2), host1]));
        // An API wait anywhere on the chain, or another team, may be released.
        assert!(!kernels_cannot_go_on(&[api(), host()]));
        assert!(!kernels_cannot_go_on(&[sync(0, 1), api()]));
        assert!(!kernels_cannot_go_on(&[sync(0, 1), sync(1, 0)]));
        assert!(!kernels_cannot_go_on(&[sync(0, 1), sync(0, 2), api()]));
    }
}
