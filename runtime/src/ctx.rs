//! Communication contexts (OpenSHMEM 1.5 §9.5 "Communication Management").
//!
//! A context is an entry of a lock-free table: `(live, generation, options,
//! team)`. Its handle encodes the slot and the generation, so a destroyed or
//! forged handle is detected without dereferencing anything. Operations on
//! a context address PEs of the context's team (team-relative numbers); the
//! default context is the world team's.
//!
//! Completion: `ctx_quiet` and `ctx_fence` are the PE's `quiet` and `fence`.
//! Every operation of the shared-memory transport is complete when its call
//! returns; what the proxy and the device's ring still have outstanding is
//! counted per PE, not per context, so a context's quiet also completes the
//! other contexts' operations, which the specification allows (it must
//! complete at least the context's own). Per-context counts, kept in the
//! table's slot, would let one context's quiet skip another's operations.

use crate::error::fatal;
use crate::state::State;
use crate::team::{Team, TEAM_INVALID, TEAM_WORLD};
use std::sync::atomic::{AtomicU64, Ordering};

/// Handle of the default context (`SHMEM_CTX_DEFAULT`).
pub const CTX_DEFAULT: usize = 1;
/// `SHMEM_CTX_INVALID`.
pub const CTX_INVALID: usize = 0;
/// Creation options.
pub const CTX_SERIALIZED: i64 = 1;
pub const CTX_PRIVATE: i64 = 2;
pub const CTX_NOSTORE: i64 = 4;

const SLOTS: usize = 4096;
const LIVE: u64 = 1 << 63;
const TAG: usize = 0xC;

static TABLE: [AtomicU64; SLOTS] = [const { AtomicU64::new(0) }; SLOTS];

fn entry(live: bool, gen: u64, options: i64, team: i32) -> u64 {
    (if live { LIVE } else { 0 })
        | (gen & 0x7fff_ffff) << 32
        | ((options as u64) & 0xffff) << 16
        | ((team + 1) as u64 & 0xffff)
}

fn encode(slot: usize, gen: u64) -> usize {
    ((gen as usize & 0x7fff_ffff) << 16 | slot) << 4 | TAG
}

fn decode(h: usize) -> Option<(usize, u64)> {
    (h & 0xf == TAG).then_some(((h >> 4) & 0xffff, (h >> 20) as u64)).filter(|(s, _)| *s < SLOTS)
}

impl State {
    /// `ctx_create` / `team_create_ctx`: a new context on `team`. Returns
    /// `None` when the team is TEAM_INVALID or the options are unknown, or
    /// all context slots are in use (the caller returns non-zero).
    pub fn ctx_create(&self, call: &str, team: i32, options: i64) -> Option<usize> {
        if options & !(CTX_SERIALIZED | CTX_PRIVATE | CTX_NOSTORE) != 0 {
            crate::error::warn(format_args!("{call}: unknown context options {options:#x}"));
            return None;
        }
        self.team(call, team)?;
        for (slot, e) in TABLE.iter().enumerate() {
            let cur = e.load(Ordering::Acquire);
            if cur & LIVE != 0 {
                continue;
            }
            let gen = ((cur >> 32) & 0x7fff_ffff) + 1;
            if e.compare_exchange(cur, entry(true, gen, options, team), Ordering::AcqRel, Ordering::Acquire).is_ok() {
                return Some(encode(slot, gen));
            }
        }
        crate::error::warn(format_args!("{call}: all {SLOTS} contexts of this PE are in use"));
        None
    }

    fn ctx_entry(&self, call: &str, ctx: usize) -> (usize, u64) {
        let bad = || -> ! {
            if ctx == CTX_INVALID {
                fatal(call, format_args!("ctx is SHMEM_CTX_INVALID"))
            }
            fatal(call, format_args!("ctx {ctx:#x} is not a live context (destroyed, or not made by ctx_create)"))
        };
        let Some((slot, gen)) = decode(ctx) else { bad() };
        let e = TABLE[slot].load(Ordering::Acquire);
        if e & LIVE == 0 || (e >> 32) & 0x7fff_ffff != gen {
            bad()
        }
        (slot, e)
    }

    /// The team handle of a context.
    pub fn ctx_team_handle(&self, call: &str, ctx: usize) -> i32 {
        if ctx == CTX_DEFAULT {
            return TEAM_WORLD;
        }
        let (_, e) = self.ctx_entry(call, ctx);
        (e & 0xffff) as i32 - 1
    }

    /// The team of a context (as a value).
    pub fn ctx_team(&self, call: &str, ctx: usize) -> Team {
        let h = self.ctx_team_handle(call, ctx);
        self.team(call, h).unwrap_or_else(|| fatal(call, format_args!("the context's team is invalid")))
    }

    /// World PE number of team PE `pe` of the context's team.
    #[inline]
    pub fn ctx_pe(&self, call: &str, ctx: usize, pe: i32) -> i32 {
        if ctx == CTX_DEFAULT {
            return pe;
        }
        let t = self.ctx_team(call, ctx);
        if pe < 0 || pe as usize >= t.size {
            fatal(call, format_args!("PE {pe} is out of range for the context's team of {} PEs", t.size))
        }
        t.world(pe as usize) as i32
    }

    /// `ctx_destroy`: completes the context's operations and frees it;
    /// no effect on `SHMEM_CTX_INVALID`.
    pub fn ctx_destroy(&self, call: &str, ctx: usize) {
        if ctx == CTX_INVALID {
            return; // "no operation is performed" (OpenSHMEM 1.5 §9.5.2)
        }
        if ctx == CTX_DEFAULT {
            fatal(call, format_args!("SHMEM_CTX_DEFAULT cannot be destroyed"))
        }
        let (slot, e) = self.ctx_entry(call, ctx);
        self.quiet();
        let _ = TABLE[slot].compare_exchange(e, e & !LIVE, Ordering::AcqRel, Ordering::Acquire);
    }

    /// `ctx_fence` / `ctx_quiet`; no effect on `SHMEM_CTX_INVALID`.
    pub fn ctx_order(&self, call: &str, ctx: usize, quiet: bool) {
        if ctx == CTX_INVALID {
            return; // "no operation is performed" (§9.10.1, §9.10.2)
        }
        if ctx != CTX_DEFAULT {
            self.ctx_entry(call, ctx);
        }
        if quiet {
            self.quiet()
        } else {
            self.fence()
        }
    }
}

/// `TEAM_INVALID` re-exported for the C layer's `ctx_get_team`.
pub const NO_TEAM: i32 = TEAM_INVALID;
