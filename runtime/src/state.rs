//! The state of an initialized PE, its queries, and the argument checks
//! every operation shares (PE range, symmetric bounds, null pointers).
//!
//! The operations themselves live in the modules that implement the
//! specification's sections on [`State`] (`rma`, `amo`, `team`, `coll`,
//! `activeset`, `lock`, `ctx`, `symheap`, `queue`); all of them reach other
//! PEs through the routing step ([`crate::route::Router`]) and synchronize
//! through the control segment ([`crate::ctrl`]).

use crate::alloc::SymAllocator;
use crate::boot::Runtime;
use crate::ctrl::Ctrl;
use crate::dataseg::DataSegment;
use crate::device::Device;
use crate::device_state::ishmemx_device_state_t;
use crate::env::{Config, DeviceKind};
use crate::error::fatal;
use crate::mem::HeapRegion;
use crate::remote::Remote;
use crate::ring::Ring;
use crate::route::Router;
use crate::types::Team;
use std::sync::atomic::AtomicU64;
use std::sync::{Mutex, RwLock};

/// Memory a PE keeps mapped while it runs (dropped last, after everything
/// that points into it).
#[allow(dead_code, reason = "held for their Drop, which unmaps them; only the control segment is read")]
pub struct Mappings {
    pub peer_maps: Vec<HeapRegion>,
    pub heap: HeapRegion,
    pub data: Option<DataSegment>,
    pub ctrl_region: HeapRegion,
}

/// The state of an initialized PE.
pub struct State {
    pub my_pe: usize,
    pub n_pes: usize,
    pub(crate) heap_base: usize,
    pub(crate) heap_size: usize,
    /// This PE's symmetric data segment (address, size); size 0 when none.
    pub(crate) data_base: usize,
    pub(crate) data_size: usize,
    /// Largest alignment `align` can honour (alignment of the heap base).
    pub(crate) heap_align: usize,
    pub(crate) config: Config,
    pub(crate) runtime: Runtime,
    /// The one routing decision (local pointer or proxy).
    pub(crate) route: Router,
    pub(crate) ctrl: Ctrl,
    /// The proxy this job bootstrapped with (finalized at the end).
    pub(crate) boot_remote: Option<&'static Remote>,
    pub(crate) device: &'static dyn Device,
    pub(crate) alloc: Mutex<SymAllocator>,
    pub(crate) alloc_seq: AtomicU64,
    pub(crate) teams: RwLock<Vec<Option<Team>>>,
    /// Stage bookkeeping of each (pSync, active set) this PE used (a
    /// program uses a few; records live as long as the process).
    pub(crate) set_marks: Mutex<std::collections::HashMap<crate::types::SetKey, &'static crate::types::SetMarks>>,
    /// World PEs that share memory with this one (this node), ascending.
    pub(crate) node_pes: Vec<usize>,
    /// Processes on this node (the launcher's count: also the PEs this PE
    /// does not share memory with, `ISHMEM_ENABLE_SHM=0`).
    pub(crate) node_procs: usize,
    pub(crate) device_state: Box<ishmemx_device_state_t>,
    /// The device-visible team table (see `ishmemx_device_team_t`).
    pub(crate) device_teams: Box<[AtomicU64]>,
    /// The device state's quiet words (host memory; kept alive).
    pub(crate) _device_quiet: Box<[AtomicU64]>,
    pub(crate) ring: &'static Ring,
    pub(crate) _peer_base_table: Box<[u64]>,
    pub(crate) _peer_local_table: Box<[u8]>,
    // Mappings last: dropped (unmapped) after everything pointing into them.
    pub(crate) _mem: Mappings,
}

impl State {
    // ----- queries -------------------------------------------------------

    pub fn heap_base(&self) -> *mut u8 {
        self.heap_base as *mut u8
    }
    pub fn heap_size(&self) -> usize {
        self.heap_size
    }
    pub fn device_name(&self) -> &'static str {
        self.device.name()
    }
    /// Which device backend this PE runs.
    pub fn device_kind(&self) -> DeviceKind {
        self.device.kind()
    }
    /// The device backend.
    pub fn device(&self) -> &'static dyn Device {
        self.device
    }
    /// True when the host reaches the symmetric heap by loads and stores
    /// (not a heap in GPU memory).
    pub fn heap_host_direct(&self) -> bool {
        self.route.heap_is_host_memory()
    }
    /// How the job bootstrapped.
    pub fn runtime(&self) -> Runtime {
        self.runtime
    }
    /// The proxy's description, when the job bootstrapped through one.
    pub fn proxy_description(&self) -> Option<String> {
        self.boot_remote.map(|p| p.describe())
    }
    /// The highest OpenSHMEM thread level this job can provide.
    pub fn max_thread_level(&self) -> i32 {
        match self.route.remote() {
            Some(p) if !p.any_thread() => 1,
            _ => 3,
        }
    }
    pub fn config(&self) -> &Config {
        &self.config
    }
    /// The state read by device code.
    pub fn device_state(&self) -> &ishmemx_device_state_t {
        &self.device_state
    }
    /// This PE's reverse-offload ring.
    pub fn ring(&self) -> &'static Ring {
        self.ring
    }

    // ----- checks --------------------------------------------------------

    /// Checks `pe` is a valid PE number and returns it as an index.
    #[inline(always)]
    pub fn check_pe(&self, call: &str, pe: i32) -> usize {
        if pe < 0 || pe as usize >= self.n_pes {
            self.bad_pe(call, pe)
        }
        pe as usize
    }

    #[cold]
    #[inline(never)]
    fn bad_pe(&self, call: &str, pe: i32) -> ! {
        fatal(call, format_args!("PE {pe} is out of range: the job has {} PEs (0..{})", self.n_pes, self.n_pes - 1))
    }

    /// Checks that `len > 0` bytes at `addr` lie inside the symmetric heap
    /// or the symmetric data segment and returns the symmetric offset of
    /// `addr` (see `route.rs`).
    #[inline(always)]
    pub fn sym_offset(&self, call: &str, what: &str, addr: *const u8, len: usize) -> usize {
        let off = (addr as usize).wrapping_sub(self.heap_base);
        if off >= self.heap_size || len > self.heap_size - off {
            return self.sym_offset_data(call, what, addr, len);
        }
        off
    }

    /// The symmetric offset of `addr` if it is in the data segment.
    pub(crate) fn data_offset(&self, addr: *const u8, len: usize) -> Option<usize> {
        let off = (addr as usize).wrapping_sub(self.data_base);
        (off < self.data_size && len <= self.data_size - off).then(|| self.heap_size + off)
    }

    #[cold]
    #[inline(never)]
    fn sym_offset_data(&self, call: &str, what: &str, addr: *const u8, len: usize) -> usize {
        match self.data_offset(addr, len) {
            Some(off) => off,
            None => self.not_symmetric(call, what, addr, len),
        }
    }

    #[cold]
    #[inline(never)]
    fn not_symmetric(&self, call: &str, what: &str, addr: *const u8, len: usize) -> ! {
        if addr.is_null() {
            fatal(call, format_args!("{what} is a null pointer ({len} bytes requested)"))
        }
        let end = self.heap_base + self.heap_size;
        let off = (addr as usize).wrapping_sub(self.heap_base);
        if off < self.heap_size {
            fatal(
                call,
                format_args!(
                    "{what} {addr:p} + {len} bytes runs past the end of the symmetric heap [{:#x}, {end:#x})",
                    self.heap_base
                ),
            )
        }
        fatal(
            call,
            format_args!(
                "{what} {addr:p} is not a symmetric address: it is outside the symmetric heap [{:#x}, {end:#x}) and the program's global data [{:#x}, {:#x})",
                self.heap_base,
                self.data_base,
                self.data_base + self.data_size
            ),
        )
    }

    /// Like [`State::sym_offset`], for a range that may be empty (then 0).
    pub(crate) fn sym_extent(&self, call: &str, what: &str, p: *const u8, bytes: usize) -> usize {
        if bytes == 0 {
            return 0;
        }
        self.sym_offset(call, what, p, bytes)
    }

    #[inline(always)]
    pub(crate) fn check_local(&self, call: &str, what: &str, p: *const u8) {
        if p.is_null() {
            null_local(call, what)
        }
    }

    pub(crate) fn check_aligned(&self, call: &str, what: &str, addr: *const u8, size: usize) {
        if !(addr as usize).is_multiple_of(size) {
            fatal(call, format_args!("{what} {addr:p} is not aligned to {size} bytes"))
        }
    }

    /// Address of symmetric offset `off` on this PE.
    #[inline]
    pub(crate) fn mine(&self, off: usize) -> *mut u8 {
        self.route.mine(off)
    }
}

#[cold]
#[inline(never)]
pub(crate) fn null_local(call: &str, what: &str) -> ! {
    fatal(call, format_args!("{what} is a null pointer"))
}
