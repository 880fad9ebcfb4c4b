//! The CPU device, the embedded default: heaps in anonymous shared memory
//! (memfd, owner-only, no name in any file system), device code on a CPU
//! OpenCL runtime that consumes SPIR-V (`opencl.rs`), opened at the first
//! device call together with the thread that serves the PE's ring.

use super::opencl::{ClDevice, KernelArg};
use super::ring_server::RingServer;
use super::{Attach, Device, DeviceError, LocalRank, Native, QueueArg, QueueOp};
use crate::env::DeviceKind;
use crate::mem::{self, HeapRegion, HEAP_BASE_ALIGN};
use std::ffi::c_void;
use std::os::fd::OwnedFd;
use std::sync::{Mutex, OnceLock};

/// Heaps in shared memory; kernels on the CPU through OpenCL.
pub struct CpuDevice {
    /// `ISHMEM_DEVICE_LIB`: where the SPIR-V device library is.
    device_lib: Option<String>,
    /// `ISHMEM_DEVICE_CACHE`: where compiled programs are kept.
    cache_dir: Option<String>,
    /// `ISHMEM_CPU_KERNEL_THREADS`, when set.
    kernel_threads: Option<u64>,
    attach: OnceLock<Attach>,
    /// The OpenCL device, opened at first use (and then kept: programs may
    /// hold its handles until exit).
    cl: Mutex<Option<&'static ClDevice>>,
    server: Mutex<Option<RingServer>>,
}

impl CpuDevice {
    pub fn new(device_lib: Option<String>, cache_dir: Option<String>, kernel_threads: Option<u64>) -> CpuDevice {
        CpuDevice {
            device_lib,
            cache_dir,
            kernel_threads,
            attach: OnceLock::new(),
            cl: Mutex::new(None),
            server: Mutex::new(None),
        }
    }

    fn attached(&self) -> Result<&Attach, DeviceError> {
        self.attach.get().ok_or_else(|| DeviceError::Runtime("the device is not attached to a running PE".into()))
    }

    /// This PE's OpenCL device, opened on first use, with the thread that
    /// serves its reverse-offload ring.
    fn cl(&self) -> Result<&'static ClDevice, DeviceError> {
        let mut d = self.cl.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(dev) = *d {
            return Ok(dev);
        }
        let a = *self.attached()?;
        let threads = kernel_threads(self.kernel_threads, Cores::of_process(), a.node_pes, a.ring_served);
        let dev: &'static ClDevice = Box::leak(Box::new(ClDevice::open(
            self.device_lib.as_deref(),
            self.cache_dir.as_deref().map(std::path::Path::new),
            threads,
        )?));
        *self.server.lock().unwrap_or_else(|e| e.into_inner()) = Some(RingServer::start(a.handler, a.ring));
        *d = Some(dev);
        Ok(dev)
    }
}

/// The CPU cores this process may run on (its affinity, and a cgroup's
/// quota), and the cores the machine has online.
#[derive(Clone, Copy, Debug)]
struct Cores {
    usable: usize,
    online: usize,
}

impl Cores {
    fn of_process() -> Cores {
        let usable = std::thread::available_parallelism().map_or(1, |n| n.get());
        // SAFETY: sysconf has no memory arguments.
        let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
        Cores { usable, online: usize::try_from(online).unwrap_or(usable).max(usable) }
    }
}

/// How many threads of the OpenCL runtime run this PE's kernels (`None`:
/// all of its compute units, the runtime's default).
///
/// `set` is `ISHMEM_CPU_KERNEL_THREADS` (0: all). Otherwise all, unless
/// the ring carries requests: a kernel's work-items then spin on ring
/// completions, and the runtime's threads, one per core, take the cores
/// the ring's server needs to answer them (on 2 cores a tenth of the rate
/// with a core left to it). Then this PE's share of the cores, less one for
/// the server: a process its launcher bound to fewer cores than the
/// machine has owns them (the launcher split the node); one that may run
/// anywhere shares the machine with the node's other PEs.
fn kernel_threads(set: Option<u64>, cores: Cores, node_pes: usize, ring_served: bool) -> Option<usize> {
    match set {
        Some(0) => None,
        Some(n) => Some(usize::try_from(n).unwrap_or(usize::MAX)),
        None if !ring_served => None,
        None => {
            let share = if cores.usable < cores.online { cores.usable } else { cores.usable / node_pes.max(1) };
            Some(share.saturating_sub(1).max(1))
        }
    }
}

impl Device for CpuDevice {
    fn kind(&self) -> DeviceKind {
        DeviceKind::Cpu
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
        let base = mem::map_shared_aligned(&fd, size, HEAP_BASE_ALIGN).map_err(heap_err)?;
        Ok(mem::owned(base, size, Some(fd)))
    }

    fn map_peer_heap(&self, handle: &OwnedFd, size: usize, pe: usize) -> Result<HeapRegion, DeviceError> {
        mem::map_region(handle, size)
            .map_err(|source| DeviceError::Heap { what: format!("cannot map the heap of PE {pe}"), source })
    }

    fn attach(&self, a: Attach) -> Result<(), DeviceError> {
        let _ = self.attach.set(a);
        Ok(())
    }

    fn detach(&self) {
        self.server.lock().unwrap_or_else(|e| e.into_inner()).take();
    }

    fn native(&self, what: Native) -> Result<*mut c_void, DeviceError> {
        let d = self.cl()?;
        Ok(match what {
            Native::Context => d.context,
            Native::Device => d.device,
            Native::Queue => d.queue,
        })
    }

    fn link_program(&self, il: &[u8]) -> Result<*mut c_void, DeviceError> {
        let d = self.cl()?;
        Ok(d.link(il, self.attached()?.state as *const c_void)?)
    }

    fn link_program_in(
        &self, il: &[u8], context: *mut c_void, device: *mut c_void,
    ) -> Result<*mut c_void, DeviceError> {
        let d = self.cl()?; // also starts the ring's server
        Ok(d.link_in(context, device, il, self.attached()?.state as *const c_void)?)
    }

    fn enqueue(&self, op: QueueOp, queue: *mut c_void, deps: &[*mut c_void]) -> Result<*mut c_void, DeviceError> {
        let d = self.cl()?;
        let Some((kernel, args)) = op.spirv_kernel() else {
            return Err(DeviceError::Runtime(format!(
                "collectives on a device queue are built for the cuda device only (this PE's device is {})",
                self.name()
            )));
        };
        let args: Vec<KernelArg> = args
            .into_iter()
            .map(|a| match a {
                QueueArg::Ptr(p) => KernelArg::Svm(p),
                QueueArg::U64(v) => KernelArg::U64(v),
                QueueArg::I32(v) => KernelArg::I32(v),
            })
            .collect();
        Ok(d.enqueue(queue, kernel.name, &args, deps, self.attached()?.state as *const c_void)?)
    }

    fn wait(&self, events: &[*mut c_void]) -> Result<(), DeviceError> {
        Ok(self.cl()?.wait(events)?)
    }
}

#[cfg(test)]
mod tests {
    use super::{kernel_threads, Cores};

    #[test]
    fn kernel_threads_leave_the_ring_server_a_core() {
        let two = Cores { usable: 2, online: 2 };
        // No ring traffic: the runtime's default.
        assert_eq!(kernel_threads(None, two, 1, false), None);
        // One PE on 2 cores: one thread for kernels, one core for the server.
        assert_eq!(kernel_threads(None, two, 1, true), Some(1));
        // Two PEs on 2 cores: at least one thread each.
        assert_eq!(kernel_threads(None, two, 2, true), Some(1));
        // Unbound on 16 cores, 2 PEs: 8 each, 7 for kernels.
        assert_eq!(kernel_threads(None, Cores { usable: 16, online: 16 }, 2, true), Some(7));
        // Bound by the launcher to 4 of 16 cores: those 4 are this PE's.
        assert_eq!(kernel_threads(None, Cores { usable: 4, online: 16 }, 2, true), Some(3));
        // Bound to one core: one thread (it shares the core with the server).
        assert_eq!(kernel_threads(None, Cores { usable: 1, online: 16 }, 8, true), Some(1));
        // The variable wins; 0 is the runtime's default.
        assert_eq!(kernel_threads(Some(3), two, 1, true), Some(3));
        assert_eq!(kernel_threads(Some(0), two, 1, true), None);
    }
}
