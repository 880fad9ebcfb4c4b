//! The host thread that serves a PE's reverse-offload ring (the protocol
//! is described in `ring.rs`): it reads slots in ticket order, checks each
//! message whole, performs it through the [`RingHandler`], writes the
//! slot's completion (once its previous lap's was read) and bumps
//! `completed`.

use super::RingHandler;
use crate::ring::{cpl_check, is_written, slot, DecodeError, Request, Ring, RING_SLOTS};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The running server thread; stopped and joined on drop.
pub struct RingServer {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RingServer {
    /// Starts the thread serving `ring` with `handler`.
    pub fn start(handler: &'static dyn RingHandler, ring: &'static Ring) -> RingServer {
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("ishmem-proxy".into())
            .spawn(move || serve(handler, ring, &s2))
            .expect("spawn the proxy thread");
        RingServer { stop, thread: Some(thread) }
    }
}

impl Drop for RingServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// How long a message may stay torn (sequence there, check not agreeing)
/// before it is reported as corrupt.
const TORN_LIMIT: Duration = Duration::from_secs(1);

/// Waits until slot `t`'s previous lap (ticket `t - RING_SLOTS`) has been
/// acked, so `t`'s completion (or ack) does not overwrite one whose waiter
/// has not read it. Devices take a slot once the server has read its
/// previous message (`completed`, `taken`): a sender never waits for
/// another work-item while it holds a ticket (the server would wait for
/// that ticket's message), so this is where a slow waiter holds things up;
/// a waiter whose completion is there acks at its next poll.
#[inline]
fn completion_free(handler: &dyn RingHandler, ring: &Ring, t: u64, lost_after: Option<Duration>) {
    let Some(lap) = t.checked_sub(RING_SLOTS as u64) else { return };
    // An ack of a later lap counts too (a slot's acks only grow).
    if ring.acks[slot(t)].load(Ordering::Acquire) <= lap {
        await_ack(handler, ring, t, lap, lost_after);
    }
}

/// [`completion_free`]'s wait for an ack of ticket `lap` (or later) in
/// slot `t`.
#[cold]
fn await_ack(handler: &dyn RingHandler, ring: &Ring, t: u64, lap: u64, lost_after: Option<Duration>) {
    let ack = &ring.acks[slot(t)];
    let since = Instant::now();
    let mut polls = 0u32;
    while ack.load(Ordering::Acquire) <= lap {
        polls = polls.wrapping_add(1);
        if polls.is_multiple_of(IDLE_PROGRESS_EVERY) {
            handler.idle();
        }
        if polls.is_multiple_of(1024) {
            if let Some(limit) = lost_after.filter(|&l| since.elapsed() > l) {
                handler.corrupt(DecodeError::Unread { ticket: lap, after: limit });
            }
        }
        // The waiter may need this very core (CPU devices, more PEs than
        // cores): spin briefly, then let it run.
        if polls < 1024 {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

/// How far past a missing message the server looks for a later one (the
/// evidence that the missing request was claimed): the senders of the
/// tickets after a lost one write theirs at once, unless a whole lap
/// behind.
const LOST_LOOKAHEAD: u64 = 64;

/// The first ticket after `next` (within [`LOST_LOOKAHEAD`]) whose message
/// is in the ring.
fn later_written(ring: &Ring, next: u64) -> Option<u64> {
    (next + 1..=next + LOST_LOOKAHEAD).find(|&t| is_written(ring, t))
}

/// Empty polls of the spinning ring between two calls of
/// [`RingHandler::idle`]: often enough that a remote peer's request to
/// this PE waits a few microseconds, seldom enough that a request arriving
/// in the ring usually waits at most one progress call (which may itself
/// serve another PE's request, as a host wait's progress does).
const IDLE_PROGRESS_EVERY: u32 = 16;

/// Empty polls the server spins for (about a millisecond) before it backs
/// off: first [`YIELD_POLLS`] yields, then sleeps of 50 us.
const SPIN_POLLS: u32 = 1 << 16;
const YIELD_POLLS: u32 = 64;

/// What a fatal error of the server names.
const CALL: &str = "ishmem ring server";

/// At most this many requests written one after another are handed to the
/// handler together ([`RingHandler::serve_many`]).
const GATHER: usize = 256;

fn serve(handler: &dyn RingHandler, ring: &Ring, stop: &AtomicBool) {
    crate::ring::mark_server_thread();
    let mut next: u64 = 0;
    let mut idle: u32 = 0;
    let mut torn_since: Option<Instant> = None;
    let mut missing_since: Option<Instant> = None;
    let lost_after = handler.lost_after();
    let mut reqs: Vec<Request> = Vec::with_capacity(GATHER);
    loop {
        let msg = &ring.msgs[slot(next)];
        let found = msg.sequence.load(Ordering::Acquire);
        if found != next + 1 {
            if stop.load(Ordering::Acquire) {
                return;
            }
            // A request claimed but not written yet: normal for a moment,
            // a lost request when it lasts (looked at every 1024 polls;
            // claimed, as a later request's message says).
            if let Some(limit) = lost_after.filter(|_| idle % 1024 == 1023) {
                if let Some(later) = later_written(ring, next) {
                    let since = *missing_since.get_or_insert_with(Instant::now);
                    if since.elapsed() > limit {
                        handler.corrupt(DecodeError::Lost { ticket: next, later, found, after: limit });
                    }
                } else {
                    missing_since = None;
                }
            }
            // Spin (without giving the core away) for about a millisecond:
            // device work-items usually spin on their completions, and a
            // yield can lose the core to them for a whole time slice. Then
            // back off so an idle device costs nothing.
            idle = idle.saturating_add(1);
            // Every poll once backed off (each sleeps anyway; also past
            // the counter's saturation).
            if idle >= SPIN_POLLS || idle.is_multiple_of(IDLE_PROGRESS_EVERY) {
                handler.idle();
            }
            if idle < SPIN_POLLS {
                std::hint::spin_loop();
            } else if idle < SPIN_POLLS + YIELD_POLLS {
                std::thread::yield_now();
            } else {
                std::thread::sleep(Duration::from_micros(50));
            }
            continue;
        }
        let raw = msg.read();
        if !raw.is_whole(next + 1) {
            // Some of the sender's stores are still on their way.
            let since = *torn_since.get_or_insert_with(Instant::now);
            if since.elapsed() > TORN_LIMIT {
                handler.corrupt(DecodeError::Torn { ticket: next });
            }
            std::hint::spin_loop();
            continue;
        }
        torn_since = None;
        missing_since = None;
        idle = 0;
        reqs.clear();
        match raw.decode() {
            Ok(r) => reqs.push(r),
            Err(e) => handler.corrupt(e),
        }
        ring.taken[slot(next)].store(next + 1, Ordering::Release);
        // The requests already written behind it (up to GATHER), for the
        // handler to serve together; a later message not yet whole, or
        // one that does not decode, is left for its own turn.
        while reqs.len() < GATHER {
            let t = next + reqs.len() as u64;
            let m = &ring.msgs[slot(t)];
            if m.sequence.load(Ordering::Acquire) != t + 1 {
                break;
            }
            match m.read() {
                raw if raw.is_whole(t + 1) => match raw.decode() {
                    Ok(r) => reqs.push(r),
                    Err(_) => break,
                },
                _ => break,
            }
            ring.taken[slot(t)].store(t + 1, Ordering::Release);
        }
        let first = next;
        let mut answered = 0usize;
        handler.serve_many(&reqs, &mut |i, result| {
            // `completed` says every earlier ticket is served: answers must
            // come once each, in order.
            if i != answered {
                crate::error::fatal(
                    CALL,
                    format_args!("request {} answered before {}", first + i as u64, first + answered as u64),
                )
            }
            answered += 1;
            let t = first + i as u64;
            completion_free(handler, ring, t, lost_after);
            let c = &ring.completions[slot(t)];
            c.value.store(result, Ordering::Relaxed);
            c.check.store(cpl_check(result, t + 1), Ordering::Release);
            if reqs[i].nbi {
                ring.acks[slot(t)].store(t + 1, Ordering::Release);
            }
            ring.completed.store(t + 1, Ordering::Release);
        });
        if answered != reqs.len() {
            crate::error::fatal(
                CALL,
                format_args!(
                    "requests {} to {} left unanswered",
                    first + answered as u64,
                    next + reqs.len() as u64 - 1
                ),
            )
        }
        next += reqs.len() as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ring::{cpl_check, new_ring, RawMsg, Request, RingOp, RING_G, RING_NBI, RING_NOP, RING_SLOTS};
    use std::sync::Mutex;

    /// Serves every request by returning its `value` + 1 and records it;
    /// a corrupt message panics the server thread with its description;
    /// counts the calls of `idle`.
    struct Echo(Mutex<Vec<Request>>, std::sync::atomic::AtomicU64, Duration);

    /// How long the tests' server waits for a claimed request's message.
    const LOST_AFTER: Duration = Duration::from_millis(300);

    impl RingHandler for Echo {
        fn serve(&self, r: &Request) -> u64 {
            self.0.lock().unwrap().push(*r);
            r.value + 1
        }
        fn corrupt(&self, e: DecodeError) -> ! {
            panic!("{e}")
        }
        fn lost_after(&self) -> Option<Duration> {
            Some(self.2)
        }
        fn idle(&self) {
            self.1.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn start(ring: &'static Ring) -> (&'static Echo, Arc<AtomicBool>, std::thread::JoinHandle<()>) {
        start_with(ring, LOST_AFTER)
    }

    /// [`start`] with another limit for a claimed or unread request.
    fn start_with(
        ring: &'static Ring, lost_after: Duration,
    ) -> (&'static Echo, Arc<AtomicBool>, std::thread::JoinHandle<()>) {
        let h: &'static Echo = Box::leak(Box::new(Echo(Mutex::new(Vec::new()), Default::default(), lost_after)));
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = Arc::clone(&stop);
        (h, stop, std::thread::spawn(move || serve(h, ring, &s2)))
    }

    /// Waits for ticket t's completion as a device does and acks it (a
    /// completion that never comes fails the test instead of hanging it).
    fn wait(ring: &Ring, t: u64) -> u64 {
        let c = &ring.completions[slot(t)];
        let t0 = Instant::now();
        loop {
            assert!(t0.elapsed() < Duration::from_secs(20), "request {t} was never completed");
            let check = c.check.load(Ordering::Acquire);
            let v = c.value.load(Ordering::Relaxed);
            if check == cpl_check(v, t + 1) {
                ring.acks[slot(t)].store(t + 1, Ordering::Release);
                return v;
            }
            std::hint::spin_loop();
        }
    }

    /// Joins the server thread, which is to end by reporting an error: a
    /// server that does not fails the test instead of hanging it.
    fn join_within(thread: std::thread::JoinHandle<()>) -> std::thread::Result<()> {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(thread.join());
        });
        rx.recv_timeout(Duration::from_secs(30)).expect("the server did not report the error")
    }

    /// Flow control as a device does it when a whole lap is outstanding:
    /// slot `t` is free once the server has marked `t - RING_SLOTS` taken.
    fn room(ring: &Ring, t: u64) {
        if let Some(lap) = t.checked_sub(RING_SLOTS as u64) {
            let t0 = Instant::now();
            while ring.taken[slot(t)].load(Ordering::Acquire) <= lap {
                assert!(t0.elapsed() < Duration::from_secs(20), "the server never marked request {lap} taken");
                std::hint::spin_loop();
            }
        }
    }

    /// Writes a request (a no-op echoing `t`, posted when `nbi`: the server
    /// acks it) for ticket `t`.
    fn send(ring: &Ring, t: u64, nbi: bool) {
        room(ring, t);
        let flags = if nbi { RING_NBI } else { 0 };
        ring.msgs[slot(t)].write(&RawMsg { op: RING_NOP, value: t, pe: 1, flags, ..Default::default() }, t);
    }

    /// Whether slot `t`'s completion is ticket `t`'s, of value `t + 1`.
    fn holds(ring: &Ring, t: u64) -> bool {
        let c = &ring.completions[slot(t)];
        c.check.load(Ordering::Acquire) == cpl_check(t + 1, t + 1) && c.value.load(Ordering::Relaxed) == t + 1
    }

    #[test]
    fn a_completion_is_not_overwritten_before_its_waiter_has_read_it() {
        let ring = new_ring();
        // Waits a minute for the unread completion (not reported here).
        let (_h, stop, thread) = start_with(ring, Duration::from_secs(60));
        let lap = RING_SLOTS as u64;
        // A lap of requests, each acked (posted ones by the server) but
        // ticket 5, which its waiter has not read.
        for t in 0..lap {
            send(ring, t, t != 4 && t != 5);
        }
        assert_eq!(wait(ring, 4), 5);
        // The next lap's first requests: the slots' messages are free (the
        // server took the first lap), but slot 5's completion was not read.
        for t in lap..lap + 8 {
            send(ring, t, false);
        }
        for t in lap..lap + 5 {
            assert_eq!(wait(ring, t), t + 1);
        }
        std::thread::sleep(Duration::from_millis(50));
        assert!(holds(ring, 5), "ticket 5's completion was overwritten before it was read");
        assert!(ring.completed.load(Ordering::Acquire) <= lap + 5, "ticket {} served unguarded", lap + 5);
        // Read at last: the server goes on.
        assert_eq!(wait(ring, 5), 6);
        for t in lap + 5..lap + 8 {
            assert_eq!(wait(ring, t), t + 1);
        }
        stop.store(true, Ordering::Release);
        thread.join().unwrap();
    }

    #[test]
    fn a_completion_never_read_is_reported() {
        let ring = new_ring();
        let (_h, _stop, thread) = start(ring);
        let lap = RING_SLOTS as u64;
        // Ticket 0's completion is never read; the others are posted.
        for t in 0..=lap {
            send(ring, t, t != 0 && t != lap);
        }
        let t0 = Instant::now();
        let e = join_within(thread).expect_err("the server must report the unread completion");
        let msg = e.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(
            msg.contains(&format!(
                "the completion of device request 0 was not read within 0.3 s, so request {lap}'s cannot take its place"
            )),
            "{msg}"
        );
        assert!(t0.elapsed() >= LOST_AFTER / 2);
        assert!(holds(ring, 0), "ticket 0's completion was overwritten");
    }

    #[test]
    fn laps_of_the_ring_with_stores_landing_late_are_served_once_each_in_order() {
        let ring = new_ring();
        let (h, stop, thread) = start(ring);
        let laps = 3 * RING_SLOTS as u64 + 17;
        for t in 0..laps {
            room(ring, t);
            let nbi = t % 3 == 0;
            let m = RawMsg {
                op: if t % 2 == 0 { RING_NOP } else { RING_G },
                value: t,
                pe: 1,
                flags: if nbi { RING_NBI } else { 0 },
                ..Default::default()
            };
            let msg = &ring.msgs[slot(t)];
            if t % 8000 == 5 {
                // The sequence and check first, a field 20 ms later: the
                // server waits for the field, then serves the message.
                let meta = m.meta();
                msg.meta.store(meta, Ordering::Relaxed);
                msg.check.store(crate::ring::msg_check(0, 0, t, 0, 0, meta, t + 1), Ordering::Relaxed);
                msg.sequence.store(t + 1, Ordering::Release);
                std::thread::sleep(Duration::from_millis(20));
                msg.value.store(t, Ordering::Release);
            } else {
                msg.write(&m, t);
            }
            if !nbi {
                assert_eq!(wait(ring, t), t + 1);
            }
        }
        while ring.completed.load(Ordering::Acquire) < laps {
            std::hint::spin_loop();
        }
        stop.store(true, Ordering::Release);
        thread.join().unwrap();
        let served = h.0.lock().unwrap();
        assert_eq!(served.len() as u64, laps);
        for (t, r) in served.iter().enumerate() {
            assert_eq!(r.value, t as u64);
            assert_eq!(r.op, if t % 2 == 0 { RingOp::Nop } else { RingOp::G });
        }
    }

    /// Serves a run of requests together: records each run's length and
    /// answers `value * 3` for each, reporting them in order after the
    /// whole run (as the core reports a run of GPU atomics).
    struct Batcher(Mutex<Vec<usize>>);

    impl RingHandler for Batcher {
        fn serve(&self, r: &Request) -> u64 {
            r.value * 3
        }
        fn serve_many(&self, reqs: &[Request], done: &mut dyn FnMut(usize, u64)) {
            self.0.lock().unwrap().push(reqs.len());
            let out: Vec<u64> = reqs.iter().map(|r| self.serve(r)).collect();
            for (i, v) in out.into_iter().enumerate() {
                done(i, v);
            }
        }
        fn corrupt(&self, e: DecodeError) -> ! {
            panic!("{e}")
        }
        fn lost_after(&self) -> Option<Duration> {
            None
        }
    }

    #[test]
    fn requests_written_ahead_are_served_together_in_order_up_to_a_torn_one() {
        let ring = new_ring();
        let n = 1000u64;
        let torn = 500u64;
        for t in 0..n {
            let m = RawMsg { op: RING_NOP, value: t, pe: 1, ..Default::default() };
            if t == torn {
                // The sequence lands first; the value field later.
                let msg = &ring.msgs[slot(t)];
                let meta = m.meta();
                msg.meta.store(meta, Ordering::Relaxed);
                msg.check.store(crate::ring::msg_check(0, 0, t, 0, 0, meta, t + 1), Ordering::Relaxed);
                msg.sequence.store(t + 1, Ordering::Release);
            } else {
                ring.msgs[slot(t)].write(&m, t);
            }
        }
        let h: &'static Batcher = Box::leak(Box::new(Batcher(Mutex::new(Vec::new()))));
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = Arc::clone(&stop);
        let thread = std::thread::spawn(move || serve(h, ring, &s2));
        while ring.completed.load(Ordering::Acquire) < torn {
            std::hint::spin_loop();
        }
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(ring.completed.load(Ordering::Acquire), torn, "the torn request is not served before it is whole");
        ring.msgs[slot(torn)].value.store(torn, Ordering::Release);
        for t in 0..n {
            assert_eq!(wait(ring, t), 3 * t, "ticket {t}");
        }
        stop.store(true, Ordering::Release);
        thread.join().unwrap();
        let runs = h.0.lock().unwrap();
        assert_eq!(runs.iter().sum::<usize>() as u64, n);
        assert_eq!(runs.iter().max(), Some(&GATHER), "runs: {runs:?}");
        // The run before the torn request ends at it.
        let mut at = 0usize;
        assert!(runs.iter().any(|&len| {
            at += len;
            at as u64 == torn
        }));
    }

    #[test]
    fn a_claimed_request_whose_message_never_comes_is_reported() {
        let ring = new_ring();
        let (h, _stop, thread) = start(ring);
        // Ticket 0 is claimed and never written; ticket 1 is.
        ring.msgs[1].write(&RawMsg { op: RING_NOP, value: 1, pe: 1, ..Default::default() }, 1);
        let t0 = Instant::now();
        let e = join_within(thread).expect_err("the server must report the lost request");
        let msg = e.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(
            msg.contains(
                "device request 0 was claimed (request 1's message came) but its message never came within 0.3 s"
            ),
            "{msg}"
        );
        assert!(msg.contains("still holds sequence 0, not 1"), "{msg}");
        assert!(t0.elapsed() >= LOST_AFTER);
        assert!(h.0.lock().unwrap().is_empty(), "a later request was served before a lost one");
    }

    #[test]
    fn a_request_not_written_yet_with_nothing_after_it_is_not_reported() {
        let ring = new_ring();
        let (_h, stop, thread) = start(ring);
        // Ticket 0 claimed, its message on its way; no later request.
        std::thread::sleep(3 * LOST_AFTER);
        stop.store(true, Ordering::Release);
        thread.join().expect("a request still being written is not lost");
    }

    /// Serves each request in a millisecond (a drain that returned early
    /// finds them unserved), counts them, and never reports one lost.
    struct Slow(std::sync::atomic::AtomicU64);

    impl RingHandler for Slow {
        fn serve(&self, r: &Request) -> u64 {
            std::thread::sleep(Duration::from_millis(1));
            self.0.fetch_add(1, Ordering::Relaxed);
            r.value
        }
        fn corrupt(&self, e: DecodeError) -> ! {
            panic!("{e}")
        }
        fn lost_after(&self) -> Option<Duration> {
            None
        }
    }

    /// `drain` on a thread of its own: a drain that never returns fails
    /// the test instead of hanging it.
    fn drain_within(ring: &'static Ring, limit: Duration) {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            crate::ring::drain(ring);
            let _ = tx.send(());
        });
        rx.recv_timeout(limit).expect("drain did not return");
    }

    #[test]
    fn drain_waits_for_every_request_written_and_not_for_one_still_being_written() {
        let ring = new_ring();
        // Tickets 0..100 written (posted), 100 claimed but not written,
        // 101 written: the server stops at 100 (and never reports it lost:
        // this handler has no limit).
        let post = |t: u64| {
            let m = RawMsg { op: RING_NOP, value: t, pe: 1, flags: RING_NBI, ..Default::default() };
            ring.msgs[slot(t)].write(&m, t);
        };
        (0..100).for_each(post);
        post(101);
        let h: &'static Slow = Box::leak(Box::new(Slow(Default::default())));
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = Arc::clone(&stop);
        let thread = std::thread::spawn(move || serve(h, ring, &s2));
        drain_within(ring, Duration::from_secs(30));
        assert!(
            ring.completed.load(Ordering::Acquire) >= 100,
            "drain returned before the written requests were served"
        );
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(ring.completed.load(Ordering::Acquire), 100);
        assert_eq!(h.0.load(Ordering::Relaxed), 100);
        // Written at last: the next drain waits for both.
        post(100);
        drain_within(ring, Duration::from_secs(30));
        assert_eq!(ring.completed.load(Ordering::Acquire), 102);
        stop.store(true, Ordering::Release);
        thread.join().unwrap();
    }

    #[test]
    fn a_message_that_never_checks_is_reported_not_served() {
        let ring = new_ring();
        let (h, _stop, thread) = start(ring);
        let m = RawMsg { op: RING_G, value: 7, pe: 1, ..Default::default() };
        ring.msgs[0].write(&m, 0);
        // A field changed after the check was computed: corrupt.
        ring.msgs[0].dest.store(0xdead, Ordering::Release);
        let t0 = Instant::now();
        let e = join_within(thread).expect_err("the server must report the torn message");
        let msg = e.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(msg.contains("torn or corrupt"), "{msg}");
        assert!(t0.elapsed() >= Duration::from_millis(900));
        assert!(h.0.lock().unwrap().is_empty(), "a torn message was executed");
    }

    #[test]
    fn an_empty_ring_lets_the_transport_progress_spinning_and_backed_off() {
        let ring = new_ring();
        let (h, stop, thread) = start(ring);
        let calls = || h.1.load(Ordering::Relaxed);
        let t0 = Instant::now();
        while calls() == 0 {
            assert!(t0.elapsed() < Duration::from_secs(10), "idle never called while the ring was empty");
            std::thread::yield_now();
        }
        // Past the spinning phase (about a millisecond): still called.
        std::thread::sleep(Duration::from_millis(200));
        let before = calls();
        std::thread::sleep(Duration::from_millis(100));
        assert!(calls() > before, "idle not called once the server backed off");
        stop.store(true, Ordering::Release);
        thread.join().unwrap();
    }
}
