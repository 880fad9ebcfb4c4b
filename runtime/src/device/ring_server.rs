//! The host thread that serves a PE's reverse-offload ring (the protocol
//! is described in `ring.rs`): it reads slots in ticket order, performs
//! each request through the [`RingHandler`], writes the slot's completion
//! and bumps `completed`.

use super::RingHandler;
use crate::ring::{Ring, RING_SLOTS};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

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

fn serve(handler: &dyn RingHandler, ring: &Ring, stop: &AtomicBool) {
    crate::ring::mark_server_thread();
    let mut next: u64 = 0;
    let mut idle: u32 = 0;
    loop {
        let slot = &ring.msgs[(next % RING_SLOTS as u64) as usize];
        if slot.sequence.load(Ordering::Acquire) != next + 1 {
            if stop.load(Ordering::Acquire) {
                return;
            }
            // Spin (without giving the core away) for about a millisecond:
            // device work-items usually spin on their completions, and a
            // yield can lose the core to them for a whole time slice. Then
            // back off so an idle device costs nothing.
            idle = idle.saturating_add(1);
            if idle < 1 << 16 {
                std::hint::spin_loop();
            } else if idle < (1 << 16) + 64 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(std::time::Duration::from_micros(50));
            }
            continue;
        }
        idle = 0;
        let req = match slot.read().decode() {
            Ok(r) => r,
            Err(e) => handler.corrupt(e),
        };
        let result = handler.serve(&req);
        let c = &ring.completions[(next % RING_SLOTS as u64) as usize];
        c.value.store(result, Ordering::Relaxed);
        c.sequence.store(next + 1, Ordering::Release);
        if req.nbi {
            c.ack.store(next + 1, Ordering::Release);
        }
        ring.completed.store(next + 1, Ordering::Release);
        next += 1;
    }
}
