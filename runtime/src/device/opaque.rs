//! The opaque test device (`ISHMEM_DEVICE=opaque`): heaps in shared
//! memory, as on the CPU device, that the program cannot load from or
//! store to, as on a GPU. Each heap is mapped twice: at the address the
//! program and the routing tables see, with no access at all, and at an
//! alias that only this module knows. The runtime reaches the heaps only
//! through [`DeviceMemory`], the seam GPU heaps use, which translates heap
//! addresses to their aliases.
//!
//! So a host program (or a runtime path) that touches symmetric memory
//! directly faults here as it would on a GPU heap, on any machine: the
//! host test suite runs in this mode in CI to stay runnable with
//! `ISHMEM_DEVICE=cuda`. Kernels cannot run on this device.
//!
//! Copies started with [`DeviceMemory::copy_start`] are made late, as a
//! GPU's copy engine makes them: at the first poll of
//! [`DeviceMemory::copies_done`] (which still says "not yet") or before
//! the next operation on device memory. A caller that reuses a source
//! before the copy ended sends the wrong bytes here too.

use super::{Attach, Device, DeviceError, DeviceMemory, LocalRank, Native, QueueOp};
use crate::env::DeviceKind;
use crate::mem::{self, HeapRegion, Release, HEAP_BASE_ALIGN};
use crate::types::Amo;
use ishmem_proxy_abi::atomic;
use std::ffi::c_void;
use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex, RwLock};

/// A heap: where the program sees it, its size, and where its bytes are.
#[derive(Clone, Copy)]
struct Alias {
    base: usize,
    size: usize,
    alias: usize,
}

/// Heaps behind no-access mappings, reached through their aliases.
pub struct OpaqueDevice {
    heaps: Arc<RwLock<Vec<Alias>>>,
    /// Copies started and not made yet: (destination, source, length),
    /// aliases resolved.
    started: Mutex<Vec<(usize, usize, usize)>>,
}

impl Default for OpaqueDevice {
    fn default() -> Self {
        Self::new()
    }
}

fn no_kernels() -> DeviceError {
    DeviceError::Unavailable(
        "ISHMEM_DEVICE=opaque is a test device for host programs: it runs no kernels and has no queues".into(),
    )
}

impl OpaqueDevice {
    pub fn new() -> OpaqueDevice {
        OpaqueDevice { heaps: Arc::new(RwLock::new(Vec::new())), started: Mutex::new(Vec::new()) }
    }

    /// Maps `fd` twice: a no-access reservation aligned to `align` (the
    /// heap's address) and the shared mapping behind it.
    /// Returns the heap's address and how to release both mappings.
    fn map(&self, fd: &OwnedFd, size: usize, align: usize) -> std::io::Result<(*mut u8, Release)> {
        let base = mem::reserve_aligned(size, align)?;
        let alias = match mem::map_shared(fd, size) {
            Ok(a) => a,
            Err(e) => {
                // SAFETY: the reservation is ours.
                unsafe { libc::munmap(base as *mut c_void, size) };
                return Err(e);
            }
        };
        self.heaps.write().unwrap_or_else(|e| e.into_inner()).push(Alias {
            base: base as usize,
            size,
            alias: alias as usize,
        });
        let heaps = Arc::clone(&self.heaps);
        let release = Release::Device(Box::new(move |base, size| {
            let mut h = heaps.write().unwrap_or_else(|e| e.into_inner());
            if let Some(i) = h.iter().position(|a| a.base == base as usize) {
                let a = h.swap_remove(i);
                // SAFETY: both mappings were made here and are released once.
                unsafe { libc::munmap(a.alias as *mut c_void, a.size) };
            }
            // SAFETY: as above.
            unsafe { libc::munmap(base as *mut c_void, size) };
        }));
        Ok((base, release))
    }

    /// Where `len` bytes at `p` are: the alias for a heap address, `p`
    /// itself for other memory.
    fn at(&self, p: usize, len: usize) -> Result<usize, DeviceError> {
        let h = self.heaps.read().unwrap_or_else(|e| e.into_inner());
        match h.iter().find(|a| p >= a.base && p < a.base + a.size) {
            Some(a) if len <= a.base + a.size - p => Ok(a.alias + (p - a.base)),
            Some(a) => Err(DeviceError::Runtime(format!(
                "{len} bytes at {p:#x} run past the end of the heap at {:#x} ({} bytes)",
                a.base, a.size
            ))),
            None => Ok(p),
        }
    }

    /// Makes the copies started so far, in order; whether there were any.
    fn make_started(&self) -> bool {
        let mut s = self.started.lock().unwrap_or_else(|e| e.into_inner());
        for &(d, src, len) in s.iter() {
            // SAFETY: copy_start's caller kept both ranges valid until
            // copies_done says they ended, which is after this.
            unsafe { std::ptr::copy(src as *const u8, d as *mut u8, len) };
        }
        let any = !s.is_empty();
        s.clear();
        any
    }
}

impl DeviceMemory for OpaqueDevice {
    unsafe fn copy(&self, dst: *mut u8, src: *const u8, len: usize) -> Result<(), DeviceError> {
        self.make_started();
        let d = self.at(dst as usize, len)?;
        let s = self.at(src as usize, len)?;
        // SAFETY: the caller's contract, moved to the aliases; `memmove`
        // (a put to oneself may overlap).
        unsafe { std::ptr::copy(s as *const u8, d as *mut u8, len) };
        Ok(())
    }

    unsafe fn copy_start(&self, dst: *mut u8, src: *const u8, len: usize) -> Result<(), DeviceError> {
        let d = self.at(dst as usize, len)?;
        let s = self.at(src as usize, len)?;
        self.started.lock().unwrap_or_else(|e| e.into_inner()).push((d, s, len));
        Ok(())
    }

    fn copies_done(&self, wait: bool) -> Result<bool, DeviceError> {
        Ok(!self.make_started() || wait)
    }

    unsafe fn zero(&self, dst: *mut u8, len: usize) -> Result<(), DeviceError> {
        self.make_started();
        let d = self.at(dst as usize, len)?;
        // SAFETY: the caller's contract, moved to the alias.
        unsafe { std::ptr::write_bytes(d as *mut u8, 0, len) };
        Ok(())
    }

    unsafe fn atomic(&self, addr: *mut u8, amo: Amo) -> Result<u64, DeviceError> {
        self.make_started();
        let a = self.at(addr as usize, amo.size)?;
        // SAFETY: the caller's contract (aligned, valid), moved to the alias.
        Ok(unsafe { atomic::apply(a as *mut u8, amo.size, amo.op, amo.operand, amo.cond) })
    }

    /// Everything but the heaps (as CUDA's pointer query tells host
    /// memory from GPU memory).
    fn host_accessible(&self, p: *const u8, len: usize) -> bool {
        let (p, end) = (p as usize, (p as usize).saturating_add(len));
        let h = self.heaps.read().unwrap_or_else(|e| e.into_inner());
        !h.iter().any(|a| p < a.base + a.size && end > a.base)
    }
}

impl Device for OpaqueDevice {
    fn kind(&self) -> DeviceKind {
        DeviceKind::Opaque
    }

    fn heap_align(&self) -> usize {
        HEAP_BASE_ALIGN
    }

    fn heap_granularity(&self) -> usize {
        mem::page_size()
    }

    fn create_heap(&self, size: usize, pe: usize, _local: LocalRank) -> Result<HeapRegion, DeviceError> {
        let heap_err =
            |source| DeviceError::Heap { what: format!("cannot create a symmetric heap of {size} bytes"), source };
        let fd = mem::memfd(&format!("ishmem-heap-pe{pe}"), size).map_err(heap_err)?;
        let (base, release) = self.map(&fd, size, HEAP_BASE_ALIGN).map_err(heap_err)?;
        Ok(HeapRegion::device(base, size, Some(fd), release))
    }

    fn map_peer_heap(&self, handle: &OwnedFd, size: usize, pe: usize) -> Result<HeapRegion, DeviceError> {
        let (base, release) = self
            .map(handle, size, 1)
            .map_err(|source| DeviceError::Heap { what: format!("cannot map the heap of PE {pe}"), source })?;
        Ok(HeapRegion::device(base, size, None, release))
    }

    fn memory(&self) -> Option<&dyn DeviceMemory> {
        Some(self)
    }

    fn attach(&self, _a: Attach) -> Result<(), DeviceError> {
        Ok(())
    }

    fn detach(&self) {}

    fn native(&self, _what: Native) -> Result<*mut c_void, DeviceError> {
        Err(no_kernels())
    }

    fn link_program(&self, _il: &[u8]) -> Result<*mut c_void, DeviceError> {
        Err(no_kernels())
    }

    fn enqueue(&self, _op: QueueOp, _queue: *mut c_void, _deps: &[*mut c_void]) -> Result<*mut c_void, DeviceError> {
        Err(no_kernels())
    }

    fn wait(&self, _events: &[*mut c_void]) -> Result<(), DeviceError> {
        Err(no_kernels())
    }
}
