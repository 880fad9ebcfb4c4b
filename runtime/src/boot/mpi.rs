//! Bootstrap of a job started by an MPI launcher: which PEs share this node,
//! and the node-local exchange of heaps.
//!
//! Every PE contributes a record to one allgather through the proxy: a hash
//! of its node identity (host name, kernel boot id, network namespace), its
//! heap and data-segment sizes, and a random job token (PE 0's is used).
//! PEs with the same node hash can pass memfds to each other, so they share
//! heaps by load/store exactly as under ishmrun: the first PE of the node
//! listens on an abstract Unix socket named after the token (nothing in the
//! file system; peers are checked to run as the same user) and serves the
//! same exchange ishmrun serves (`bootstrap::serve`), including the node's
//! control segment. The node is detected, never assumed: two PEs whose
//! hosts report different names, or that live in different network
//! namespaces, are on different nodes. With `ISHMEM_ENABLE_SHM=0` every PE
//! is alone on its node.

use super::{private_ctrl, shared_data, warn_data_not_symmetric, wire, InitError, InitOptions, JobLayout, Runtime};
use crate::ctrl::{ctrl_size, Ctrl};
use crate::device::{Device, LocalRank};
use crate::env::Config;
use crate::mem;
use crate::remote::{plugin, Remote};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Loads the MPI proxy, takes rank and size from it, creates this PE's heap
/// and runs the node-local exchange.
pub fn start(
    config: &Config, opts: &InitOptions, device: &dyn Device, heap_size: usize,
) -> Result<JobLayout, InitError> {
    let ops = plugin::load(config.mpi_proxy.as_deref(), config.root.as_deref(), opts.app_comm, opts.requested_thread)?;
    let r: &'static Remote = Box::leak(Box::new(Remote::new(Box::new(ops))));
    let (my_pe, n_pes) = (r.rank(), r.size());
    if n_pes == 0 || n_pes > i32::MAX as usize || my_pe >= n_pes {
        return Err(format!("MPI reports rank {my_pe} of {n_pes} processes").into());
    }
    crate::phase::set_my_pe(my_pe);
    let data = shared_data();
    exchange(r, my_pe, n_pes, device, heap_size, data, config.enable_shm)
}

const RECORD: usize = 48;

/// FNV-1a, enough to compare node identities.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3))
}

/// This process's node identity: what must match for two processes to pass
/// descriptors over an abstract socket and map the same memory.
fn node_identity() -> Vec<u8> {
    let mut v = Vec::new();
    let mut host = [0u8; 256];
    // SAFETY: the buffer is writable for its length.
    if unsafe { libc::gethostname(host.as_mut_ptr() as *mut libc::c_char, host.len()) } == 0 {
        v.extend(host.iter().take_while(|&&b| b != 0));
    }
    v.push(0);
    v.extend(std::fs::read("/proc/sys/kernel/random/boot_id").unwrap_or_default());
    v.push(0);
    if let Ok(ns) = std::fs::read_link("/proc/self/ns/net") {
        v.extend(ns.to_string_lossy().as_bytes());
    }
    v
}

fn random_token() -> u128 {
    let mut b = [0u8; 16];
    // SAFETY: the buffer is writable for 16 bytes.
    let n = unsafe { libc::getrandom(b.as_mut_ptr() as *mut libc::c_void, 16, 0) };
    if n != 16 {
        // Not secret, only unique per job: time and pid will do.
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        return t ^ ((std::process::id() as u128) << 64);
    }
    u128::from_le_bytes(b)
}

fn abstract_addr(name: &str) -> (libc::sockaddr_un, libc::socklen_t) {
    // SAFETY: zeroed sockaddr_un is valid.
    let mut a: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    a.sun_family = libc::AF_UNIX as libc::sa_family_t;
    // Abstract namespace: a leading NUL, no file.
    let bytes = name.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        a.sun_path[i + 1] = b as libc::c_char;
    }
    let len = std::mem::size_of::<libc::sa_family_t>() + 1 + bytes.len();
    (a, len as libc::socklen_t)
}

fn socket() -> io::Result<OwnedFd> {
    // SAFETY: plain socket call; the descriptor is owned below.
    let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn listen(name: &str, backlog: usize) -> io::Result<OwnedFd> {
    let s = socket()?;
    let (a, len) = abstract_addr(name);
    // SAFETY: a is a valid sockaddr_un of length len.
    if unsafe { libc::bind(s.as_raw_fd(), &a as *const _ as *const libc::sockaddr, len) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: plain listen on our socket.
    if unsafe { libc::listen(s.as_raw_fd(), backlog as i32) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(s)
}

fn connect(name: &str) -> io::Result<OwnedFd> {
    let s = socket()?;
    let (a, len) = abstract_addr(name);
    // SAFETY: a is a valid sockaddr_un of length len.
    if unsafe { libc::connect(s.as_raw_fd(), &a as *const _ as *const libc::sockaddr, len) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(s)
}

fn accept(l: &OwnedFd) -> io::Result<OwnedFd> {
    loop {
        // SAFETY: accept on our listening socket.
        let fd =
            unsafe { libc::accept4(l.as_raw_fd(), std::ptr::null_mut(), std::ptr::null_mut(), libc::SOCK_CLOEXEC) };
        if fd >= 0 {
            // SAFETY: fresh descriptor we own.
            return Ok(unsafe { OwnedFd::from_raw_fd(fd) });
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// The node-local bootstrap under `proxy` (collective over the job).
#[allow(clippy::too_many_arguments)]
fn exchange(
    proxy: &'static Remote, my_pe: usize, n_pes: usize, dev: &dyn Device, heap_size: usize,
    data: Option<crate::dataseg::DataSegment>, enable_shm: bool,
) -> Result<JobLayout, InitError> {
    const CALL: &str = "ishmem_init";
    let mut rec = [0u8; RECORD];
    rec[0..8].copy_from_slice(&fnv(&node_identity()).to_le_bytes());
    rec[8..16].copy_from_slice(&(heap_size as u64).to_le_bytes());
    rec[16..24].copy_from_slice(&(data.as_ref().map_or(0, |d| d.size) as u64).to_le_bytes());
    rec[24..40].copy_from_slice(&random_token().to_le_bytes());
    rec[40..44].copy_from_slice(&std::process::id().to_le_bytes());
    let all = proxy.allgather(CALL, &rec);
    let field =
        |pe: usize, at: usize| u64::from_le_bytes(all[pe * RECORD + at..pe * RECORD + at + 8].try_into().unwrap());
    for pe in 0..n_pes {
        if field(pe, 8) != heap_size as u64 {
            return Err(format!(
                "PE {pe} has a {}-byte heap and this PE a {heap_size}-byte one: ISHMEM_SYMMETRIC_SIZE must be the same on every PE",
                field(pe, 8)
            )
            .into());
        }
    }
    let token = u128::from_le_bytes(all[24..40].try_into().unwrap());
    let my_node = field(my_pe, 0);
    let node_pes: Vec<usize> =
        if enable_shm { (0..n_pes).filter(|&p| field(p, 0) == my_node).collect() } else { vec![my_pe] };
    let data_size = data.as_ref().map_or(0, |d| d.size) as u64;
    let data_symmetric = data_size > 0 && (0..n_pes).all(|p| field(p, 16) == data_size);
    if data.is_some() && !data_symmetric {
        warn_data_not_symmetric(my_pe);
    }

    let local_idx = node_pes.iter().position(|&p| p == my_pe).expect("this PE is on its node");
    let n_local = node_pes.len();
    // The heap, now that this PE's place on its node is known (a GPU device
    // picks its GPU by it).
    let heap = dev.create_heap(heap_size, my_pe, LocalRank { rank: local_idx, size: n_local })?;
    let mut peer_base = vec![std::ptr::null_mut(); n_pes];
    let mut data_base = vec![std::ptr::null_mut(); n_pes];
    peer_base[my_pe] = heap.base();
    if data_symmetric {
        data_base[my_pe] = data.as_ref().map_or(std::ptr::null_mut(), |d| d.base);
    }
    let mut peer_maps = Vec::new();
    let ctrl_len = ctrl_size(n_pes);

    let ctrl_region = if n_local > 1 {
        let leader = node_pes[0];
        let name = format!("ishmem-{token:032x}-{leader}");
        // The leader listens before anyone connects (the barrier), and
        // serves the exchange from a thread while taking part itself.
        let server = if my_pe == leader {
            let l = listen(&name, n_local).map_err(|e| format!("cannot listen on the node's bootstrap socket: {e}"))?;
            let ctrl_fd =
                mem::memfd("ishmem-ctrl", ctrl_len).map_err(|e| format!("cannot create the control segment: {e}"))?;
            {
                let r =
                    mem::map_region(&ctrl_fd, ctrl_len).map_err(|e| format!("cannot map the control segment: {e}"))?;
                // SAFETY: fresh zeroed mapping of ctrl_size(n_pes) bytes.
                unsafe { Ctrl::new(r.base(), n_pes) }.initialize();
            }
            Some(std::thread::spawn(move || -> Result<(), String> {
                let mut socks = Vec::with_capacity(n_local);
                for _ in 0..n_local {
                    let s = accept(&l).map_err(|e| format!("accept on the node's bootstrap socket: {e}"))?;
                    socks.push(s);
                }
                drop(l);
                wire::serve(&socks, &ctrl_fd, ctrl_len)
            }))
        } else {
            None
        };
        proxy.barrier(CALL);
        let sock =
            connect(&name).map_err(|e| format!("cannot reach the node's bootstrap socket (PE {leader}): {e}"))?;
        let shared_data =
            if data_symmetric { data.as_ref().and_then(|d| d.fd.as_ref().map(|fd| (fd, d.size as u64))) } else { None };
        let job = wire::pe_exchange(
            sock.as_raw_fd(),
            local_idx as u32,
            heap.handle().expect("new heap has a handle"),
            heap_size as u64,
            shared_data,
        )
        .map_err(|e| format!("node-local bootstrap failed: {e}"))?;
        drop(sock);
        if let Some(h) = server {
            h.join().map_err(|_| "the node's bootstrap server panicked".to_string())??;
        }
        if job.n_pes != n_local || job.ctrl_size < ctrl_len {
            return Err(InitError::Bootstrap("node-local bootstrap returned an inconsistent job".into()));
        }
        for (i, seg) in job.peers.iter().enumerate() {
            let pe = node_pes[i];
            if pe == my_pe {
                continue;
            }
            let r = dev.map_peer_heap(&seg.heap_fd, heap_size, pe)?;
            peer_base[pe] = r.base();
            peer_maps.push(r);
            if let Some((fd, size)) = &seg.data {
                let r = mem::map_region(fd, *size as usize)
                    .map_err(|e| format!("cannot map the data segment of PE {pe}: {e}"))?;
                data_base[pe] = r.base();
                peer_maps.push(r);
            }
        }
        mem::map_region(&job.ctrl_fd, ctrl_len).map_err(|e| format!("cannot map the control segment: {e}"))?
    } else {
        private_ctrl(n_pes)?
    };
    Ok(JobLayout {
        runtime: Runtime::Mpi,
        my_pe,
        n_pes,
        heap,
        heap_size,
        heap_align: dev.heap_align(),
        data,
        data_base,
        peer_base,
        ctrl_region,
        peer_maps,
        node_pes,
        boot_remote: Some(proxy),
        route_remote: None,
        amo_remote_all: false,
    })
}
