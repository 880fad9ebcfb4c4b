//! Atomic memory operations, signals and point-to-point synchronization
//! (OpenSHMEM 1.5 §9.7, §9.8, §9.11).
//!
//! Atomicity: every AMO is a hardware atomic on the target location through
//! the PE's transport (shared memory: the peer heap mapped here), and every
//! wait/test reads the location with an atomic load, so concurrent AMOs of
//! one type on one location are exclusive, also against wait/test.
//!
//! Ordering (stronger than NVSHMEM's relaxed model): AMOs are sequentially
//! consistent. Two blocking fetching AMOs from one PE to one location return
//! values in program order (the second sees the first's effect), and an AMO
//! is ordered after this PE's earlier puts to any PE, so `put_signal` and
//! "put; atomic_set(flag)" publish their data without an extra fence.

use crate::error::fatal;
use crate::state::State;
use crate::types::{Amo, AmoOp};
use crate::wait::wait_until;
use std::ffi::c_int;
use std::mem::size_of;

/// Comparison operators (`ISHMEM_CMP_*`, `SHMEM_CMP_*`; Intel SHMEM values).
pub const CMP_EQ: c_int = 1;
pub const CMP_NE: c_int = 2;
pub const CMP_GT: c_int = 3;
pub const CMP_GE: c_int = 4;
pub const CMP_LT: c_int = 5;
pub const CMP_LE: c_int = 6;
/// Signal operators (`ISHMEM_SIGNAL_*`, `SHMEM_SIGNAL_*`).
pub const SIGNAL_SET: c_int = 0;
pub const SIGNAL_ADD: c_int = 1;

/// The bits of a 1-, 2-, 4- or 8-byte value, zero-extended.
#[inline(always)]
pub fn to_bits<T: Copy>(v: T) -> u64 {
    // SAFETY: each arm reads exactly size_of::<T>() bytes of `v`.
    unsafe {
        match size_of::<T>() {
            1 => std::mem::transmute_copy::<T, u8>(&v) as u64,
            2 => std::mem::transmute_copy::<T, u16>(&v) as u64,
            4 => std::mem::transmute_copy::<T, u32>(&v) as u64,
            8 => std::mem::transmute_copy::<T, u64>(&v),
            n => unreachable!("atomic type of {n} bytes"),
        }
    }
}

/// The value whose bits are the low bytes of `b`.
#[inline(always)]
pub fn from_bits<T: Copy>(b: u64) -> T {
    // SAFETY: each arm produces exactly size_of::<T>() bytes; callers use
    // plain integer and floating-point types, valid for any bits.
    unsafe {
        match size_of::<T>() {
            1 => std::mem::transmute_copy::<u8, T>(&(b as u8)),
            2 => std::mem::transmute_copy::<u16, T>(&(b as u16)),
            4 => std::mem::transmute_copy::<u32, T>(&(b as u32)),
            8 => std::mem::transmute_copy::<u64, T>(&b),
            n => unreachable!("atomic type of {n} bytes"),
        }
    }
}

/// The comparison `value CMP cmp_value`.
#[inline(always)]
pub fn compare<T: PartialOrd>(cmp: c_int, value: T, cmp_value: T) -> bool {
    match cmp {
        CMP_EQ => value == cmp_value,
        CMP_NE => value != cmp_value,
        CMP_GT => value > cmp_value,
        CMP_GE => value >= cmp_value,
        CMP_LT => value < cmp_value,
        _ => value <= cmp_value,
    }
}

/// The name of comparison `cmp` (checked) as messages show it, spelled
/// as the API of `call` spells it (`ISHMEM_CMP_EQ` for an `ishmem_*`
/// call, else `SHMEM_CMP_EQ`).
pub(crate) fn cmp_name(call: &str, cmp: c_int) -> String {
    let name = ["EQ", "NE", "GT", "GE", "LT", "LE"].get((cmp - CMP_EQ) as usize).copied().unwrap_or("?");
    let prefix = if call.starts_with("ishmem") { "ISHMEM" } else { "SHMEM" };
    format!("{prefix}_CMP_{name}")
}

/// An integer wait operand as messages show it: its bits read as signed.
fn show<T: Copy>(v: T) -> i64 {
    let bits = size_of::<T>() * 8;
    let b = to_bits(v);
    if bits == 64 {
        b as i64
    } else {
        ((b << (64 - bits)) as i64) >> (64 - bits)
    }
}

pub(crate) fn check_cmp(call: &str, cmp: c_int) {
    if !(CMP_EQ..=CMP_LE).contains(&cmp) {
        fatal(
            call,
            format_args!("cmp {cmp} is not a comparison operator (ISHMEM_CMP_EQ..ISHMEM_CMP_LE = {CMP_EQ}..{CMP_LE})"),
        )
    }
}

/// Comparison values of a multi-element wait or test: one for all, or one
/// per element (`_vector` forms).
#[derive(Clone, Copy)]
pub enum CmpValues<T> {
    One(T),
    Each(*const T),
}

/// What a multi-element wait or test looks for.
#[derive(Clone, Copy)]
pub enum SyncMode {
    /// Every included element satisfies the condition.
    All,
    /// Some included element does: report its index. Fair: see
    /// [`AnyCursor`].
    Any,
    /// Some do: report all their indices into the array.
    Some(*mut usize),
}

/// Where the next `*_any` search on an array starts. OpenSHMEM asks that
/// repeated `test_any`/`wait_until_any` calls not starve satisfied
/// elements; each thread remembers, per ivars array (the last
/// [`AnyCursor::SLOTS`] arrays it searched), the index after the one it last
/// returned, and the next search starts there and wraps around. A program
/// that calls `test_any` until every index has been returned sees every
/// satisfied index in turn, in ascending order from where it left off.
struct AnyCursor {
    /// (ivars address, next start index); address 0 is an empty slot.
    slots: [(usize, usize); AnyCursor::SLOTS],
    /// Slot to replace when an array not in the table comes.
    victim: usize,
}

impl AnyCursor {
    const SLOTS: usize = 8;

    /// The start index for a search over `nelems` elements at `ivars`.
    fn start(&self, ivars: usize, nelems: usize) -> usize {
        self.slots.iter().find(|s| s.0 == ivars).map_or(0, |s| if nelems == 0 { 0 } else { s.1 % nelems })
    }

    /// Records that a search at `ivars` returned `found`.
    fn returned(&mut self, ivars: usize, found: usize) {
        if let Some(s) = self.slots.iter_mut().find(|s| s.0 == ivars) {
            s.1 = found + 1;
            return;
        }
        self.slots[self.victim] = (ivars, found + 1);
        self.victim = (self.victim + 1) % Self::SLOTS;
    }
}

thread_local! {
    static ANY_CURSOR: std::cell::RefCell<AnyCursor> =
        const { std::cell::RefCell::new(AnyCursor { slots: [(0, 0); AnyCursor::SLOTS], victim: 0 }) };
}

impl State {
    /// A blocking or fetching AMO on `dest` at `pe`: returns the old value
    /// (for `Set`, a meaningless zero).
    ///
    /// # Safety
    /// `T` is a plain 1/2/4/8-byte integer or floating-point type.
    #[inline(always)]
    pub unsafe fn amo<T: Copy>(&self, call: &str, dest: *const T, op: AmoOp, value: T, cond: T, pe: i32) -> T {
        let (pe, off) = self.amo_target(call, dest, pe);
        let amo = Amo { op, size: size_of::<T>(), operand: to_bits(value), cond: to_bits(cond) };
        // SAFETY: the offset is checked aligned and inside the heap.
        from_bits(unsafe { self.route.amo(call, pe, off, amo) })
    }

    /// An AMO's target PE and symmetric offset, checked (the PE, the
    /// range, the alignment).
    #[inline(always)]
    fn amo_target<T>(&self, call: &str, dest: *const T, pe: i32) -> (usize, usize) {
        let pe = self.check_pe(call, pe);
        let off = self.sym_offset(call, "dest", dest as *const u8, size_of::<T>());
        self.check_aligned(call, "dest", dest as *const u8, size_of::<T>());
        (pe, off)
    }

    /// A non-fetching AMO (`atomic_set`, `add`, `inc`, `and`, `or`, `xor`):
    /// to a remote PE it is not waited for (it completes by quiet, and
    /// stays ordered with this PE's later AMOs to that PE).
    ///
    /// # Safety
    /// As [`State::amo`].
    #[inline(always)]
    pub unsafe fn amo_post<T: Copy>(&self, call: &str, dest: *const T, op: AmoOp, value: T, pe: i32) {
        let (pe, off) = self.amo_target(call, dest, pe);
        let amo = Amo::new(op, size_of::<T>(), to_bits(value));
        // SAFETY: the offset is checked aligned and inside the heap.
        unsafe { self.route.amo_post(call, pe, off, amo) };
    }

    /// A non-blocking fetching AMO: the old value is written to local
    /// `fetch` by the time of the next quiet (on this node before
    /// returning; through the proxy when the answer arrives).
    ///
    /// # Safety
    /// As [`State::amo`]; `fetch` is valid for a write of `T` until the
    /// next quiet.
    #[inline(always)]
    #[allow(clippy::too_many_arguments, reason = "the arguments of the OpenSHMEM routine it implements")]
    pub unsafe fn amo_nbi<T: Copy>(
        &self, call: &str, fetch: *mut T, dest: *const T, op: AmoOp, value: T, cond: T, pe: i32,
    ) {
        self.check_local(call, "fetch", fetch as *const u8);
        let (pe, off) = self.amo_target(call, dest, pe);
        let amo = Amo { op, size: size_of::<T>(), operand: to_bits(value), cond: to_bits(cond) };
        // SAFETY: the offset is checked inside the heap and aligned; fetch
        // is valid until the next quiet (the caller's contract).
        unsafe { self.route.amo_fetch_nbi(call, pe, off, amo, fetch.cast()) }
    }

    /// `put_signal` / `put_signal_nbi`: the data, then the signal update
    /// (`SIGNAL_SET` or `SIGNAL_ADD`) at `sig_addr` on `pe`. The signal is
    /// an AMO ordered after the data, so a PE that sees it sees the data.
    ///
    /// # Safety
    /// `src` is valid for reads of `len` bytes.
    #[allow(clippy::too_many_arguments, reason = "the arguments of the OpenSHMEM routine it implements")]
    pub unsafe fn put_signal(
        &self, call: &str, dest: *mut u8, src: *const u8, len: usize, sig_addr: *mut u64, signal: u64, sig_op: c_int,
        pe: i32,
    ) {
        let op = self.signal_op_code(call, sig_op);
        let pe_idx = self.check_pe(call, pe);
        let sig_off = self.sym_offset(call, "sig_addr", sig_addr as *const u8, 8);
        self.check_aligned(call, "sig_addr", sig_addr as *const u8, 8);
        // SAFETY: src is valid for len bytes (the caller's contract).
        unsafe { self.put(call, dest, src, len, pe) };
        // SAFETY: the signal's offset is checked aligned inside the heap.
        unsafe { self.route.signal(call, pe_idx, sig_off, op, signal) };
    }

    pub(crate) fn signal_op_code(&self, call: &str, sig_op: c_int) -> AmoOp {
        match sig_op {
            SIGNAL_SET => AmoOp::Set,
            SIGNAL_ADD => AmoOp::FetchAdd,
            _ => fatal(
                call,
                format_args!("sig_op {sig_op} is not a signal operator (ISHMEM_SIGNAL_SET = {SIGNAL_SET}, ISHMEM_SIGNAL_ADD = {SIGNAL_ADD})"),
            ),
        }
    }

    /// `ishmemx_signal_set` / `ishmemx_signal_add` (OpenSHMEM 1.6
    /// `shmem_signal_set/add`): update a remote signal without data.
    pub fn signal_update(&self, call: &str, sig_addr: *mut u64, signal: u64, sig_op: c_int, pe: i32) {
        let op = self.signal_op_code(call, sig_op);
        // SAFETY: u64 is a plain type.
        unsafe { self.amo_post(call, sig_addr, op, signal, pe) };
    }

    /// Checks this PE's symmetric variables `p[..nelems]` and returns the
    /// symmetric offset of `p` (0 for none).
    fn local_ivars<T>(&self, call: &str, what: &str, p: *const T, nelems: usize) -> usize {
        let bytes = match nelems.checked_mul(size_of::<T>()) {
            Some(b) if b > 0 => b,
            _ => return 0,
        };
        let off = self.sym_offset(call, what, p as *const u8, bytes);
        self.check_aligned(call, what, p as *const u8, size_of::<T>());
        off
    }

    /// Acquire load of this PE's symmetric value at offset `off` (checked
    /// and aligned), wherever its memory is.
    #[inline]
    fn load_mine<T: Copy>(&self, call: &str, off: usize) -> T {
        from_bits(self.route.load_mine(call, off, size_of::<T>()))
    }

    /// `signal_fetch`: atomic read of a local signal.
    pub fn signal_fetch(&self, call: &str, sig_addr: *const u64) -> u64 {
        let off = self.local_ivars(call, "sig_addr", sig_addr, 1);
        crate::wait::progress();
        self.load_mine(call, off)
    }

    /// `signal_wait_until`: waits until the local signal satisfies the
    /// comparison; returns the value that did.
    pub fn signal_wait_until(&self, call: &str, sig_addr: *const u64, cmp: c_int, cmp_value: u64) -> u64 {
        check_cmp(call, cmp);
        let off = self.local_ivars(call, "sig_addr", sig_addr, 1);
        let seen = std::cell::Cell::new(0);
        let what = || {
            format!(
                "{call}(sig_addr {sig_addr:p}, {}, {cmp_value}) (the signal is {})",
                cmp_name(call, cmp),
                self.load_mine::<u64>(call, off)
            )
        };
        wait_until(&what, || {
            seen.set(self.load_mine(call, off));
            compare(cmp, seen.get(), cmp_value)
        });
        seen.get()
    }

    /// `wait_until` (single variable).
    ///
    /// # Safety
    /// `T` is a plain integer type.
    pub unsafe fn wait_until<T: Copy + PartialOrd>(&self, call: &str, ivar: *const T, cmp: c_int, cmp_value: T) {
        check_cmp(call, cmp);
        let off = self.local_ivars(call, "ivar", ivar, 1);
        let what = || {
            format!(
                "{call}(ivar {ivar:p}, {}, {}) (ivar is {})",
                cmp_name(call, cmp),
                show(cmp_value),
                show(self.load_mine::<T>(call, off))
            )
        };
        wait_until(&what, || compare(cmp, self.load_mine::<T>(call, off), cmp_value));
    }

    /// `test` (single variable).
    ///
    /// # Safety
    /// `T` is a plain integer type.
    pub unsafe fn test<T: Copy + PartialOrd>(&self, call: &str, ivar: *const T, cmp: c_int, cmp_value: T) -> bool {
        check_cmp(call, cmp);
        let off = self.local_ivars(call, "ivar", ivar, 1);
        // A loop of tests must let remote updates through.
        crate::wait::progress();
        compare(cmp, self.load_mine::<T>(call, off), cmp_value)
    }

    /// The multi-element waits and tests (`_all`, `_any`, `_some`, and their
    /// `_vector` forms). `status[i] != 0` excludes element `i`; a null
    /// `status` excludes none. Returns: `All`: 1 when satisfied (always, for
    /// a wait); `Any`: the index of a satisfying element, or `usize::MAX`
    /// when none is (a wait with no included element returns it at once);
    /// `Some`: the number of satisfying elements written to `indices` (0
    /// when none is included).
    ///
    /// # Safety
    /// `T` is a plain integer type; `status`, `indices` and vector
    /// comparison values are valid for `nelems` elements when non-null.
    #[allow(clippy::too_many_arguments, reason = "the arguments of the OpenSHMEM routine it implements")]
    pub unsafe fn sync_many<T: Copy + PartialOrd>(
        &self, call: &str, ivars: *const T, nelems: usize, status: *const c_int, cmp: c_int, values: CmpValues<T>,
        mode: SyncMode, blocking: bool,
    ) -> usize {
        check_cmp(call, cmp);
        let off = self.local_ivars(call, "ivars", ivars, nelems);
        if let CmpValues::Each(p) = values {
            if nelems > 0 && p.is_null() {
                crate::state::null_local(call, "cmp_values")
            }
        }
        if let SyncMode::Some(p) = mode {
            if nelems > 0 && p.is_null() {
                crate::state::null_local(call, "indices")
            }
        }
        // SAFETY: `status` is not null past the `||`, so by this function's
        // contract it is valid for `nelems` elements; every use below passes
        // i < nelems.
        let included = |i: usize| status.is_null() || unsafe { *status.add(i) } == 0;
        let holds = |i: usize| {
            let v = match values {
                CmpValues::One(v) => v,
                // SAFETY: `p` is not null when nelems > 0 (checked above), so
                // by this function's contract it is valid for `nelems`
                // elements; every use below passes i < nelems.
                CmpValues::Each(p) => unsafe { *p.add(i) },
            };
            compare(cmp, self.load_mine::<T>(call, off + i * size_of::<T>()), v)
        };
        let any_included = (0..nelems).any(included);
        let start = if matches!(mode, SyncMode::Any) {
            ANY_CURSOR.with(|c| c.borrow().start(ivars as usize, nelems))
        } else {
            0
        };
        let mut result = 0usize;
        let mut poll = || -> bool {
            match mode {
                SyncMode::All => {
                    result = 1;
                    (0..nelems).all(|i| !included(i) || holds(i))
                }
                SyncMode::Any => {
                    result = (start..nelems).chain(0..start).find(|&i| included(i) && holds(i)).unwrap_or(usize::MAX);
                    result != usize::MAX
                }
                SyncMode::Some(indices) => {
                    let mut n = 0;
                    for i in 0..nelems {
                        if included(i) && holds(i) {
                            // SAFETY: `indices` is not null when nelems > 0
                            // (checked above), so by this function's contract
                            // it is valid for `nelems` elements, and
                            // n <= i < nelems.
                            unsafe { *indices.add(n) = i };
                            n += 1;
                        }
                    }
                    result = n;
                    n > 0
                }
            }
        };
        if !blocking {
            crate::wait::progress();
        }
        let what = || {
            let first = (0..nelems).find(|&i| included(i)).map_or(String::new(), |i| {
                format!(", ivars[{i}] is {}", show(self.load_mine::<T>(call, off + i * size_of::<T>())))
            });
            format!("{call}(ivars {ivars:p}, nelems {nelems}, {}{first})", cmp_name(call, cmp))
        };
        match mode {
            SyncMode::All if !blocking => usize::from(poll()),
            SyncMode::All => {
                wait_until(&what, poll);
                1
            }
            _ if !any_included => {
                if matches!(mode, SyncMode::Any) {
                    usize::MAX
                } else {
                    0
                }
            }
            _ => {
                if blocking {
                    wait_until(&what, &mut poll);
                } else {
                    poll();
                }
                if matches!(mode, SyncMode::Any) && result != usize::MAX {
                    ANY_CURSOR.with(|c| c.borrow_mut().returned(ivars as usize, result));
                }
                result
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::AnyCursor;

    #[test]
    fn any_cursor_rotates_per_array() {
        let mut c = AnyCursor { slots: [(0, 0); AnyCursor::SLOTS], victim: 0 };
        assert_eq!(c.start(0x1000, 4), 0);
        c.returned(0x1000, 2);
        assert_eq!(c.start(0x1000, 4), 3);
        c.returned(0x1000, 3);
        assert_eq!(c.start(0x1000, 4), 0, "wraps past the end");
        assert_eq!(c.start(0x2000, 4), 0, "another array starts at 0");
        for k in 0..AnyCursor::SLOTS {
            c.returned(0x3000 + k * 8, 1);
        }
        assert_eq!(c.start(0x1000, 4), 0, "the oldest array was replaced");
        assert_eq!(c.start(0x3000, 4), 2);
    }
}
