//! The symmetric data segment: the program's global and static variables as
//! targets of host-initiated RMA and AMOs (Intel SHMEM memory model; OpenSHMEM
//! 1.5 §3.1).
//!
//! At init the writable part of the main executable's data (`.data`, `.bss`:
//! the writable PT_LOAD segment minus the RELRO pages the dynamic loader made
//! read-only) is moved, in place and at the same addresses, onto an anonymous
//! shared-memory file: its current contents are copied into a memfd (all-zero
//! pages are skipped, so a large `.bss` costs nothing) and the memfd is
//! mapped over the range with `MAP_FIXED`. The program sees no difference;
//! peers map the same memfd like a heap. Every PE runs the same executable,
//! so a variable's offset in the segment is the same everywhere.
//!
//! Limits: only the main executable (not shared libraries; Intel SHMEM has
//! the same rule); the remap happens inside `init`, which must not race with
//! other threads writing globals; PEs running different executables (sizes
//! differ) get no symmetric data segment, with a warning.

use crate::device::{map_shared_aligned, memfd};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

/// The remapped segment of this PE.
pub struct DataSegment {
    pub base: *mut u8,
    pub size: usize,
    pub fd: Option<OwnedFd>,
}

// SAFETY: plain shared memory, as a heap.
unsafe impl Send for DataSegment {}
// SAFETY: as above.
unsafe impl Sync for DataSegment {}

struct Found {
    start: usize,
    end: usize,
}

unsafe extern "C" fn find_main(
    info: *mut libc::dl_phdr_info, _size: libc::size_t, data: *mut libc::c_void,
) -> libc::c_int {
    let out = &mut *(data as *mut Option<Found>);
    let info = &*info;
    // The first object reported is the main program.
    let page = libc::sysconf(libc::_SC_PAGESIZE) as usize;
    let mut seg: Option<(usize, usize)> = None;
    let mut relro_end = 0usize;
    for i in 0..info.dlpi_phnum as usize {
        let ph = &*info.dlpi_phdr.add(i);
        let start = info.dlpi_addr as usize + ph.p_vaddr as usize;
        let end = start + ph.p_memsz as usize;
        if ph.p_type == libc::PT_LOAD && ph.p_flags & libc::PF_W != 0 && seg.is_none() {
            seg = Some((start, end));
        }
        if ph.p_type == libc::PT_GNU_RELRO {
            relro_end = end;
        }
    }
    if let Some((s, e)) = seg {
        // The loader write-protects whole pages below the RELRO end.
        let start = (s & !(page - 1)).max(relro_end & !(page - 1));
        let end = (e + page - 1) & !(page - 1);
        if end > start {
            *out = Some(Found { start, end });
        }
    }
    1 // stop after the main program
}

/// The main program's writable data (page-aligned, without RELRO), left
/// where it is. A host OpenSHMEM library (the OpenSHMEM proxy) already
/// treats it as symmetric, so it is used in place there.
pub fn main_data() -> Option<DataSegment> {
    let mut found: Option<Found> = None;
    // SAFETY: the callback only reads the program headers it is given and
    // writes `found`, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(find_main), &mut found as *mut _ as *mut libc::c_void) };
    let Found { start, end } = found?;
    Some(DataSegment { base: start as *mut u8, size: end - start, fd: None })
}

/// Moves the main program's writable data onto a shareable memfd. Returns
/// `None` when the program has no such segment.
pub fn share_main_data() -> io::Result<Option<DataSegment>> {
    let Some(DataSegment { base, size, .. }) = main_data() else { return Ok(None) };
    let start = base as usize;
    let fd = memfd("ishmem-data", size)?;
    let page = 4096usize;
    let mut off = 0;
    while off < size {
        let n = page.min(size - off);
        // SAFETY: the range is mapped readable (it is the program's data).
        let chunk = unsafe { std::slice::from_raw_parts((start + off) as *const u8, n) };
        if chunk.iter().any(|&b| b != 0) {
            // SAFETY: valid fd and buffer.
            let w = unsafe { libc::pwrite(fd.as_raw_fd(), chunk.as_ptr() as *const _, n, off as libc::off_t) };
            if w != n as isize {
                return Err(io::Error::last_os_error());
            }
        }
        off += n;
    }
    // SAFETY: replaces our own writable data pages with a shared mapping of
    // identical contents at the same address; nothing else runs meanwhile
    // (init is called before the program starts threads that use globals).
    let p = unsafe {
        libc::mmap(
            start as *mut libc::c_void,
            size,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_FIXED,
            fd.as_raw_fd(),
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(Some(DataSegment { base: start as *mut u8, size, fd: Some(fd) }))
}

/// Maps a peer's data segment.
pub fn map_peer_data(fd: &OwnedFd, size: usize) -> io::Result<*mut u8> {
    map_shared_aligned(fd, size, 1)
}
