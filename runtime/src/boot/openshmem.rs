//! A job started by a host OpenSHMEM library's launcher (`ISHMEM_RUNTIME=
//! OPENSHMEM`): the library bootstraps, and every other PE is reached
//! through it. Heap and control segment live in the library's symmetric
//! memory (only its symmetric objects are remote targets for it); the
//! program's globals are symmetric in the library already, in place.

use super::{warn_data_not_symmetric, InitError, JobLayout, Runtime};
use crate::ctrl::{ctrl_size, Ctrl};
use crate::env::Config;
use crate::mem::{HeapRegion, PROXY_HEAP_ALIGN};
use crate::remote::{shmem, Remote};

/// `reserve`: the bytes at the end of the heap kept for device sync words,
/// which start at zero (the library's memory need not).
pub fn start(config: &Config, heap_size: usize, reserve: usize) -> Result<JobLayout, InitError> {
    const CALL: &str = "ishmem_init";
    // What the core will take from the library's symmetric heap.
    let need = |n: usize| heap_size + PROXY_HEAP_ALIGN + ctrl_size(n) + 4096;
    let ops = shmem::load(config.shmem_lib_name.as_deref(), &need)?;
    let r: &'static Remote = Box::leak(Box::new(Remote::new(Box::new(ops))));
    let (my_pe, n_pes) = (r.rank(), r.size());
    crate::phase::set_my_pe(my_pe);
    let heap = HeapRegion::foreign(r.alloc(CALL, heap_size, PROXY_HEAP_ALIGN), heap_size);
    // SAFETY: the last `reserve` of heap_size fresh bytes from the library
    // (host memory); no peer writes them before the barrier at the end of
    // init.
    unsafe { std::ptr::write_bytes(heap.base().add(heap_size - reserve), 0, reserve) };
    // Every PE alone: the library reaches all others, and the control
    // segment lives in its memory too.
    let csize = ctrl_size(n_pes);
    let cbase = r.alloc(CALL, csize, 4096);
    // SAFETY: csize fresh bytes from the library; no peer writes them
    // before the barrier at the end of init.
    unsafe {
        std::ptr::write_bytes(cbase, 0, csize);
        Ctrl::new(cbase, n_pes).initialize();
    }
    let data = crate::dataseg::main_data();
    let dsize = data.as_ref().map_or(0, |d| d.size as u64);
    let sizes = r.allgather(CALL, &dsize.to_le_bytes());
    let symmetric = dsize > 0 && sizes.chunks(8).all(|c| c == dsize.to_le_bytes());
    let mut data_base = vec![std::ptr::null_mut(); n_pes];
    if symmetric {
        data_base[my_pe] = data.as_ref().map_or(std::ptr::null_mut(), |d| d.base);
    } else if data.is_some() {
        warn_data_not_symmetric(my_pe);
    }
    let mut peer_base = vec![std::ptr::null_mut(); n_pes];
    peer_base[my_pe] = heap.base();
    Ok(JobLayout {
        runtime: Runtime::OpenShmem,
        my_pe,
        n_pes,
        heap,
        heap_size,
        heap_align: PROXY_HEAP_ALIGN,
        data,
        data_base,
        peer_base,
        ctrl_region: HeapRegion::foreign(cbase, csize),
        peer_maps: Vec::new(),
        node_pes: vec![my_pe],
        node_procs: crate::env::launcher_local_size().unwrap_or(1),
        boot_remote: Some(r),
        route_remote: None,
        amo_remote_all: true,
    })
}
