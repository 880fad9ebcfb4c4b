//! The bottom of the runtime: the library's lifecycle phase and this PE's
//! number. Everything above may read them (error messages are tagged with
//! the PE; every entry point checks the phase); only the lifecycle
//! (`core`) and the exit paths (`error`) change them.

use std::sync::atomic::{AtomicI32, AtomicU8, Ordering};

/// Where the library is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Phase {
    /// Not initialized yet.
    New = 0,
    /// Between a successful init and finalize.
    Running = 1,
    /// Finalized, or the process is leaving (`global_exit`, an abort):
    /// later calls are errors and no collective finalize runs at exit.
    Finalized = 2,
}

static PHASE: AtomicU8 = AtomicU8::new(Phase::New as u8);
/// This PE's number once known (-1 before init).
static MY_PE: AtomicI32 = AtomicI32::new(-1);

/// The current phase.
#[inline]
pub fn get() -> Phase {
    match PHASE.load(Ordering::Acquire) {
        0 => Phase::New,
        1 => Phase::Running,
        _ => Phase::Finalized,
    }
}

/// Moves to `p`.
pub fn set(p: Phase) {
    PHASE.store(p as u8, Ordering::Release);
}

/// The process is leaving (`global_exit`, a job abort): no collective
/// finalize at exit, and later calls are errors.
pub fn mark_exiting() {
    set(Phase::Finalized);
}

/// Records this PE's number (for message tags).
pub fn set_my_pe(pe: usize) {
    MY_PE.store(i32::try_from(pe).unwrap_or(i32::MAX), Ordering::Relaxed);
}

/// This PE's number, once known.
pub fn my_pe() -> Option<usize> {
    usize::try_from(MY_PE.load(Ordering::Relaxed)).ok()
}

/// The PE tag used in messages: `PE 3`, or `PE ?` before init.
pub fn pe_tag() -> String {
    match my_pe() {
        Some(pe) => format!("PE {pe}"),
        None => "PE ?".to_string(),
    }
}
