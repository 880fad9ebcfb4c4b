//! Symmetric heap management (OpenSHMEM 1.5 §9.3): the collective
//! allocation routines and their cross-PE argument check.
//!
//! Offsets, not addresses, are symmetric: every PE runs the same sequence
//! of collective allocation calls through its own [`SymAllocator`], whose
//! metadata lives in private memory. Each call publishes `(sequence, kind,
//! args, result)` in the PE's slot of the control segment (double-buffered
//! by parity), joins the barrier, and compares: a difference stops the job
//! with one report naming the PEs and their arguments.

use crate::alloc::{SymAllocator, MIN_ALIGN};
use crate::collsig::Sig;
use crate::error::{fatal, warn};
use crate::state::State;
use std::sync::atomic::Ordering;

/// Kinds of collective allocation call, as published for the cross-PE check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u64)]
enum AllocKind {
    Malloc = 1,
    Calloc = 2,
    Align = 3,
    Free = 4,
    Realloc = 5,
}

/// One collective allocation as every PE calls it: what the user asked
/// (`kind` and its two arguments, which the PEs compare) and what that
/// means here: `size` bytes (`None` when the request overflows), aligned to
/// `align`, zeroed with `zero`.
struct AllocRequest {
    kind: AllocKind,
    args: (u64, u64),
    size: Option<usize>,
    align: usize,
    zero: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
struct AllocRecord {
    seq: u64,
    kind: u64,
    arg0: u64,
    arg1: u64,
    result: u64,
}

impl AllocRecord {
    fn describe(&self) -> String {
        let (k, a, b) = (self.kind, self.arg0, self.arg1);
        match k {
            1 => format!("malloc(size={a})"),
            2 => format!("calloc(count={a}, size={b})"),
            3 => format!("align(alignment={a}, size={b})"),
            4 => format!("free(heap offset {a})"),
            5 => format!("realloc(heap offset {a}, size={b})"),
            _ => "no call".to_string(),
        }
    }
}

const NO_RESULT: u64 = u64::MAX;

impl State {
    // ----- symmetric heap management ---------------------------------------

    fn publish(&self, kind: AllocKind, arg0: u64, arg1: u64, result: u64) -> AllocRecord {
        let seq = self.alloc_seq.fetch_add(1, Ordering::Relaxed) + 1;
        let slot = &self.ctrl.pe(self.my_pe).alloc[(seq % 2) as usize];
        slot.kind.store(kind as u64, Ordering::Relaxed);
        slot.arg0.store(arg0, Ordering::Relaxed);
        slot.arg1.store(arg1, Ordering::Relaxed);
        slot.result.store(result, Ordering::Relaxed);
        slot.seq.store(seq, Ordering::Release);
        AllocRecord { seq, kind: kind as u64, arg0, arg1, result }
    }

    /// After the barrier of a collective allocation call: every PE must have
    /// made the same call with the same arguments and the same outcome.
    fn verify(&self, call: &str, mine: AllocRecord) {
        let read = |pe: usize| -> AllocRecord {
            let s = &self.ctrl.pe(pe).alloc[(mine.seq % 2) as usize];
            AllocRecord {
                seq: self.route.ctrl_load(call, pe, &s.seq),
                kind: self.route.ctrl_load(call, pe, &s.kind),
                arg0: self.route.ctrl_load(call, pe, &s.arg0),
                arg1: self.route.ctrl_load(call, pe, &s.arg1),
                result: self.route.ctrl_load(call, pe, &s.result),
            }
        };
        // Every PE compares the PEs of its node and its successor: equality
        // is transitive, so any difference is seen by some PE, and remote
        // reads stay O(1) per call. The report reads everyone.
        let next = (self.my_pe + 1) % self.n_pes;
        if self.node_pes.iter().chain(std::iter::once(&next)).all(|&pe| read(pe) == mine) {
            return;
        }
        let mut differ = Vec::new();
        let mut records = Vec::with_capacity(self.n_pes);
        for pe in 0..self.n_pes {
            let r = read(pe);
            if r != mine {
                differ.push(pe);
            }
            records.push(r);
        }
        if differ.is_empty() {
            return;
        }
        let mut msg = format!(
            "collective call #{} has different arguments on different PEs (every PE must pass the same values):",
            mine.seq
        );
        let show: Vec<usize> =
            std::iter::once(self.my_pe).chain(differ.iter().copied().filter(|&p| p != self.my_pe)).take(8).collect();
        for pe in show {
            let r = &records[pe];
            if r.seq < mine.seq {
                msg.push_str(&format!(
                    "\n    PE {pe}: has not made this call (its latest collective allocation call is #{}: {})",
                    r.seq,
                    r.describe()
                ));
            } else if r.seq > mine.seq {
                msg.push_str(&format!(
                    "\n    PE {pe}: is already at collective allocation call #{} ({}): a PE skipped a call",
                    r.seq,
                    r.describe()
                ));
            } else {
                msg.push_str(&format!("\n    PE {pe}: {}", r.describe()));
            }
        }
        if differ.len() > 7 {
            msg.push_str(&format!("\n    ... {} PEs differ in all", differ.len()));
        }
        crate::wait::report_once(call, format_args!("{msg}"))
    }

    fn out_of_space(&self, call: &str, requested: usize, e: Option<crate::alloc::OutOfSpace>) {
        if self.my_pe == 0 {
            let Some(e) = e else {
                warn(format_args!(
                    "{call}: the requested size does not fit in size_t (count times size overflows); no memory allocated"
                ));
                return;
            };
            let (free, largest) = (e.free_total, e.largest_free);
            warn(format_args!(
                "{call}: out of symmetric memory: requested {requested} bytes, {free} bytes free (largest free block {largest}) of a {}-byte heap; raise ISHMEM_SYMMETRIC_SIZE",
                self.heap_size
            ));
        }
    }

    fn collective_alloc(&self, call: &str, r: AllocRequest) -> *mut u8 {
        let AllocRequest { kind, args: (arg0, arg1), size, align, zero } = r;
        let mut a = self.alloc.lock().unwrap_or_else(|e| e.into_inner());
        let res = match size {
            Some(s) => a.alloc(s, align).map_err(Some),
            None => Err(None),
        };
        let mine = self.publish(kind, arg0, arg1, res.as_ref().map_or(NO_RESULT, |&o| o as u64));
        if let (Ok(off), true) = (&res, zero) {
            // The block lies inside our heap; no peer may use it yet (they
            // are still before the barrier below).
            self.route.zero_mine(call, *off, size.unwrap());
        }
        self.barrier_sig(call, Sig::alloc());
        self.verify(call, mine);
        match res {
            Ok(off) => self.heap_base().wrapping_add(off),
            Err(e) => {
                self.out_of_space(call, size.unwrap_or(usize::MAX), e);
                std::ptr::null_mut()
            }
        }
    }

    /// `malloc` (collective; barrier on exit; 0 bytes gives null without one).
    pub fn malloc(&self, call: &str, size: usize) -> *mut u8 {
        if size == 0 {
            return std::ptr::null_mut();
        }
        self.collective_alloc(
            call,
            AllocRequest {
                kind: AllocKind::Malloc,
                args: (size as u64, 0),
                size: Some(size),
                align: MIN_ALIGN,
                zero: false,
            },
        )
    }

    /// `calloc`: zeroed `count * size` bytes.
    pub fn calloc(&self, call: &str, count: usize, size: usize) -> *mut u8 {
        if count == 0 || size == 0 {
            return std::ptr::null_mut();
        }
        let total = count.checked_mul(size);
        self.collective_alloc(
            call,
            AllocRequest {
                kind: AllocKind::Calloc,
                args: (count as u64, size as u64),
                size: total,
                align: MIN_ALIGN,
                zero: true,
            },
        )
    }

    /// `align`: `size` bytes at a multiple of `alignment`, which must be a
    /// power of two. Alignments below `sizeof(void *)` (which the
    /// specification leaves undefined) are rounded up to it, as other
    /// OpenSHMEM libraries do.
    pub fn align(&self, call: &str, alignment: usize, size: usize) -> *mut u8 {
        if !alignment.is_power_of_two() {
            fatal(call, format_args!("alignment {alignment} is not a power of two"))
        }
        let alignment = alignment.max(std::mem::size_of::<*const u8>());
        if alignment > self.heap_align {
            fatal(
                call,
                format_args!("alignment {alignment} is larger than the largest supported ({})", self.heap_align),
            )
        }
        if size == 0 {
            return std::ptr::null_mut();
        }
        self.collective_alloc(
            call,
            AllocRequest {
                kind: AllocKind::Align,
                args: (alignment as u64, size as u64),
                size: Some(size),
                align: alignment,
                zero: false,
            },
        )
    }

    fn block_offset(&self, call: &str, ptr: *const u8, a: &SymAllocator) -> (usize, usize) {
        let off = self.sym_offset(call, "ptr", ptr, 1);
        match a.block_len(off) {
            Some(len) => (off, len),
            None if off >= self.heap_size => fatal(
                call,
                format_args!(
                    "ptr {ptr:p} is a global or static variable (the symmetric data segment), not memory from a symmetric allocation routine"
                ),
            ),
            None => fatal(
                call,
                format_args!(
                    "ptr {ptr:p} (heap offset {off}) is not the start of a live symmetric allocation (already freed, or not returned by a symmetric allocation routine)"
                ),
            ),
        }
    }

    /// `free` (collective; barrier on entry; null does nothing).
    pub fn free(&self, call: &str, ptr: *mut u8) {
        if ptr.is_null() {
            return;
        }
        let mut a = self.alloc.lock().unwrap_or_else(|e| e.into_inner());
        let (off, _) = self.block_offset(call, ptr, &a);
        let mine = self.publish(AllocKind::Free, off as u64, 0, 0);
        self.barrier_sig(call, Sig::alloc());
        self.verify(call, mine);
        a.free(off);
    }

    /// `realloc` (collective): barriers on entry and exit; the first
    /// `min(old, new)` bytes are kept; on failure null is returned and the
    /// old block is left as it was.
    pub fn realloc(&self, call: &str, ptr: *mut u8, size: usize) -> *mut u8 {
        if ptr.is_null() {
            return self.malloc(call, size);
        }
        if size == 0 {
            self.free(call, ptr);
            return std::ptr::null_mut();
        }
        let mut a = self.alloc.lock().unwrap_or_else(|e| e.into_inner());
        let (off, old_len) = self.block_offset(call, ptr, &a);
        // Decide placement now (deterministic), move data after the entry
        // barrier, when no peer still writes the old block.
        let placement: Result<(usize, bool), Option<crate::alloc::OutOfSpace>> = if a.resize_in_place(off, size) {
            Ok((off, false))
        } else {
            a.alloc(size, MIN_ALIGN).map(|n| (n, true)).map_err(Some)
        };
        let mine = self.publish(
            AllocKind::Realloc,
            off as u64,
            size as u64,
            placement.as_ref().map_or(NO_RESULT, |p| p.0 as u64),
        );
        self.barrier_sig(call, Sig::alloc());
        self.verify(call, mine);
        let result = match placement {
            Ok((new_off, moved)) => {
                if moved {
                    // SAFETY: both blocks are inside our heap and disjoint.
                    unsafe { self.route.put(call, self.my_pe, new_off, self.mine(off), old_len.min(size), false) };
                    a.free(off);
                }
                self.heap_base().wrapping_add(new_off)
            }
            Err(e) => {
                self.out_of_space(call, size, e);
                std::ptr::null_mut()
            }
        };
        self.barrier_sig(call, Sig::alloc());
        result
    }
}
