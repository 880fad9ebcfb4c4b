//! A job started by `ishmrun`: one node, every PE mapped. This PE sends its
//! heap (and data segment) descriptors over the socket `ishmrun` gave it and
//! receives the control segment and every peer's descriptors (`wire.rs`).

use super::{shared_data, warn_data_not_symmetric, InitError, JobLayout, Runtime};
use crate::ctrl::ctrl_size;
use crate::device::{Device, LocalRank};
use crate::env::IshmrunLaunch;
use crate::mem;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

pub fn start(launch: IshmrunLaunch, device: &dyn Device, heap_size: usize) -> Result<JobLayout, InitError> {
    let IshmrunLaunch { fd, pe: my_pe, n_pes } = launch;
    crate::phase::set_my_pe(my_pe);
    let heap = device.create_heap(heap_size, my_pe, LocalRank { rank: my_pe, size: n_pes })?;
    let data = shared_data();
    // SAFETY: ishmrun passed this descriptor for us to own; nothing else in
    // the process uses it.
    let sock = unsafe { OwnedFd::from_raw_fd(fd) };
    let job = super::wire::pe_exchange(
        sock.as_raw_fd(),
        my_pe as u32,
        heap.handle().expect("new heap has a handle"),
        heap_size as u64,
        data.as_ref().and_then(|d| d.fd.as_ref().map(|fd| (fd, d.size as u64))),
    )
    .map_err(|e| match e.get_ref().and_then(|r| r.downcast_ref::<super::wire::PeerLeft>()) {
        // ishmrun says so once for the job; this PE ends without a word.
        Some(left) => InitError::Reported(left.to_string()),
        None => InitError::Bootstrap(format!("bootstrap with ishmrun failed: {e}")),
    })?;
    drop(sock);
    if job.n_pes != n_pes {
        return Err(format!("ishmrun reports {} PEs, ISHMRUN_NPES says {n_pes}", job.n_pes).into());
    }
    if job.ctrl_size < ctrl_size(n_pes) {
        return Err(InitError::Bootstrap("control segment from ishmrun is too small".into()));
    }
    let ctrl_region =
        mem::map_region(&job.ctrl_fd, job.ctrl_size).map_err(|e| format!("cannot map the control segment: {e}"))?;
    let mut peer_maps = Vec::with_capacity(n_pes.saturating_sub(1));
    let mut peer_base = vec![std::ptr::null_mut(); n_pes];
    let mut data_base = vec![std::ptr::null_mut(); n_pes];
    for (pe, seg) in job.peers.iter().enumerate() {
        let size = seg.heap_size;
        if size as usize != heap_size {
            return Err(format!(
                "PE {pe} has a {size}-byte heap and this PE a {heap_size}-byte one: ISHMEM_SYMMETRIC_SIZE and ISHMEM_DEVICE_SYNC must be the same on every PE"
            )
            .into());
        }
        if pe == my_pe {
            peer_base[pe] = heap.base();
        } else {
            let r = device.map_peer_heap(&seg.heap_fd, heap_size, pe)?;
            peer_base[pe] = r.base();
            peer_maps.push(r);
        }
        match (&seg.data, &data) {
            (Some(_), Some(d)) if pe == my_pe => data_base[pe] = d.base,
            (Some((fd, size)), Some(_)) => {
                let r = mem::map_region(fd, *size as usize)
                    .map_err(|e| format!("cannot map the data segment of PE {pe}: {e}"))?;
                data_base[pe] = r.base();
                peer_maps.push(r);
            }
            _ => {}
        }
    }
    if data.is_some() && data_base.iter().any(|p| p.is_null()) {
        warn_data_not_symmetric(my_pe);
        data_base.iter_mut().for_each(|p| *p = std::ptr::null_mut());
    }
    Ok(JobLayout {
        runtime: Runtime::Ishmrun,
        my_pe,
        n_pes,
        heap,
        heap_size,
        heap_align: device.heap_align(),
        data,
        data_base,
        peer_base,
        ctrl_region,
        peer_maps,
        node_pes: (0..n_pes).collect(),
        node_procs: n_pes,
        boot_remote: None,
        route_remote: None,
        amo_remote_all: false,
    })
}

/// Whether `fd` is this process's bootstrap socket from ishmrun: an open
/// socket whose other end was created by an ancestor of this process
/// (ishmrun makes the socket pair before it starts the PE, possibly
/// through a wrapper script). A child a PE starts after its init inherits
/// the variables but not the socket (the PE closed it after bootstrap).
pub fn started_by_ishmrun(fd: i32) -> bool {
    let Ok(cred) = super::wire::peer_cred(fd) else { return false };
    if cred.pid <= 0 {
        return false;
    }
    // SAFETY: getppid cannot fail.
    let mut p = unsafe { libc::getppid() };
    for _ in 0..64 {
        if p == cred.pid {
            return true;
        }
        if p <= 1 {
            return false;
        }
        p = parent_of(p).unwrap_or(0);
    }
    false
}

/// The parent of process `pid`, from /proc.
fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
    stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()
}
