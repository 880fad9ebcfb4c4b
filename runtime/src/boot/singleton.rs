//! A program started without a launcher: a job of one PE. Its globals are
//! symmetric trivially, in place.

use super::{private_ctrl, InitError, JobLayout, Runtime};
use crate::device::{Device, LocalRank};

pub fn start(device: &dyn Device, heap_size: usize) -> Result<JobLayout, InitError> {
    crate::phase::set_my_pe(0);
    let heap = device.create_heap(heap_size, 0, LocalRank { rank: 0, size: 1 })?;
    let data = crate::dataseg::main_data();
    let data_base = vec![data.as_ref().map_or(std::ptr::null_mut(), |d| d.base)];
    Ok(JobLayout {
        runtime: Runtime::Singleton,
        my_pe: 0,
        n_pes: 1,
        peer_base: vec![heap.base()],
        heap,
        heap_size,
        heap_align: device.heap_align(),
        data,
        data_base,
        ctrl_region: private_ctrl(1)?,
        peer_maps: Vec::new(),
        node_pes: vec![0],
        node_procs: 1,
        boot_remote: None,
        route_remote: None,
        amo_remote_all: false,
    })
}
