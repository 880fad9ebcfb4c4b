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
        let dev: &'static ClDevice = Box::leak(Box::new(ClDevice::open(
            self.device_lib.as_deref(),
            self.cache_dir.as_deref().map(std::path::Path::new),
        )?));
        *self.server.lock().unwrap_or_else(|e| e.into_inner()) = Some(RingServer::start(a.handler, a.ring));
        *d = Some(dev);
        Ok(dev)
    }
}

/// The CPUs this process may use: its affinity mask, that capped by a
/// cgroup's CPU quota (`usable`), and the CPUs of its container (the
/// cgroup's cpuset, else every CPU online).
#[derive(Clone, Copy, Debug)]
struct Cores {
    affinity: usize,
    usable: usize,
    container: usize,
}

impl Cores {
    fn of_process() -> Cores {
        let usable = std::thread::available_parallelism().map_or(1, |n| n.get());
        // SAFETY: a zeroed cpu_set_t is a valid empty set; the call writes
        // at most its size.
        let affinity = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            match libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) {
                0 => usize::try_from(libc::CPU_COUNT(&set)).unwrap_or(usable),
                _ => usable,
            }
        }
        .max(usable);
        // SAFETY: sysconf has no memory arguments.
        let online = usize::try_from(unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }).unwrap_or(affinity);
        let container = cgroup_cpus().unwrap_or(online).max(affinity);
        Cores { affinity, usable, container }
    }
}

/// How many CPUs this process's cgroup (v2) may use: its
/// `cpuset.cpus.effective` ("0-3,8-11"), where there is one.
fn cgroup_cpus() -> Option<usize> {
    let cgroup = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = cgroup.lines().find_map(|l| l.strip_prefix("0::"))?;
    let list =
        std::fs::read_to_string(format!("/sys/fs/cgroup{}/cpuset.cpus.effective", path.trim_end_matches('/'))).ok()?;
    cpu_list_len(list.trim())
}

/// The number of CPUs in a Linux CPU list ("0-3,8-11" is 8).
fn cpu_list_len(list: &str) -> Option<usize> {
    let mut n = 0;
    for part in list.split(',').filter(|p| !p.is_empty()) {
        n += match part.split_once('-') {
            Some((a, b)) => b.trim().parse::<usize>().ok()?.checked_sub(a.trim().parse().ok()?)? + 1,
            None => part.trim().parse::<usize>().map(|_| 1).ok()?,
        };
    }
    (n > 0).then_some(n)
}

/// This PE's share of the CPUs. A launcher that bound the node's PEs to
/// disjoint sets of CPUs (their masks together fit in the container) gave
/// it its mask; otherwise (no binding, or masks shared: a socket each, a
/// container) its mask is shared by the node's PEs. A CPU quota is the
/// container's, shared too. Without the masks of the other PEs this
/// errs low where masks are shared by some PEs only.
fn share(cores: Cores, node_pes: usize) -> usize {
    let pes = node_pes.max(1);
    let mut share =
        if cores.affinity.saturating_mul(pes) <= cores.container { cores.affinity } else { cores.affinity / pes };
    if cores.usable < cores.affinity {
        share = share.min(cores.usable / pes);
    }
    share.max(1)
}

/// How many threads Intel's OpenCL runtime runs this PE's kernels on
/// (`None`: its default, a thread per CPU of the process).
///
/// `set` is `ISHMEM_CPU_KERNEL_THREADS` (0: the default; at most the
/// container's CPUs). Otherwise the default, unless the ring carries
/// requests: a kernel's work-items then spin on ring completions, and the
/// runtime's threads take the cores the ring's server needs to answer
/// them (on 2 cores a tenth of the rate with a core left to it). Then
/// this PE's share of the CPUs less one, for the server, and at least one:
/// with a share of one CPU the kernels and the server take turns on it,
/// still faster than among a thread per CPU of every PE (2 PEs on 2
/// cores, both sending requests: docs/performance.md).
fn kernel_threads(set: Option<u64>, cores: Cores, node_pes: usize, ring_served: bool) -> Option<usize> {
    match set {
        Some(0) => None,
        Some(n) => Some(usize::try_from(n).unwrap_or(usize::MAX).min(cores.container.max(1))),
        None if !ring_served => None,
        None => Some(share(cores, node_pes).saturating_sub(1).max(1)),
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
        // During init, before the OpenCL runtime starts at the first
        // device call (it reads its thread count once).
        if let Some(n) = kernel_threads(self.kernel_threads, Cores::of_process(), a.node_pes, a.ring_served) {
            crate::env::opencl_cpu_threads_unless_set(n);
        }
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
    use super::{cpu_list_len, kernel_threads, Cores};

    fn cores(affinity: usize, usable: usize, container: usize) -> Cores {
        Cores { affinity, usable, container }
    }

    #[test]
    fn kernel_threads_leave_the_ring_server_a_core() {
        let two = cores(2, 2, 2);
        // No ring traffic: the runtime's default.
        assert_eq!(kernel_threads(None, two, 1, false), None);
        // One PE on 2 CPUs: one thread for kernels, one CPU for the server.
        assert_eq!(kernel_threads(None, two, 1, true), Some(1));
        // Two PEs on 2 CPUs: a CPU each, one thread for kernels.
        assert_eq!(kernel_threads(None, two, 2, true), Some(1));
        // Unbound on 16 CPUs, 2 PEs: 8 each, 7 for kernels.
        assert_eq!(kernel_threads(None, cores(16, 16, 16), 2, true), Some(7));
        // Bound by the launcher to 4 disjoint CPUs of 16: those 4.
        assert_eq!(kernel_threads(None, cores(4, 4, 16), 2, true), Some(3));
        // A socket of 32 CPUs shared by 4 of 8 PEs on 64: errs low (4 each).
        assert_eq!(kernel_threads(None, cores(32, 32, 64), 8, true), Some(3));
        // A container of 8 CPUs on a bigger node, 4 PEs unbound in it.
        assert_eq!(kernel_threads(None, cores(8, 8, 8), 4, true), Some(1));
        // A quota of 4 CPUs over 64, 2 PEs unbound: 2 each.
        assert_eq!(kernel_threads(None, cores(64, 4, 64), 2, true), Some(1));
        // Bound to one CPU: one thread.
        assert_eq!(kernel_threads(None, cores(1, 1, 16), 8, true), Some(1));
        // The variable wins, up to the container's CPUs; 0 is the default.
        assert_eq!(kernel_threads(Some(3), two, 1, true), Some(2));
        assert_eq!(kernel_threads(Some(1), cores(16, 16, 16), 4, false), Some(1));
        assert_eq!(kernel_threads(Some(0), two, 1, true), None);
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(cpu_list_len("0-3,8-11"), Some(8));
        assert_eq!(cpu_list_len("5"), Some(1));
        assert_eq!(cpu_list_len("0-1,4"), Some(3));
        assert_eq!(cpu_list_len(""), None);
        assert_eq!(cpu_list_len("3-1"), None);
        assert_eq!(cpu_list_len("x"), None);
    }
}
