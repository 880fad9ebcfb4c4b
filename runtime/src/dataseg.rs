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

use crate::mem::memfd;
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
    /// The writable segments inside `[start, end)`.
    segs: Vec<(usize, usize)>,
}

/// The writable data of a loaded object from its program headers: the
/// span of its writable `PT_LOAD` segments, page-aligned, without the pages
/// the loader write-protects after relocation (`PT_GNU_RELRO`, which
/// starts the first writable segment). Executables whose RELRO data has a
/// load segment of its own (common for Rust programs) thus get the
/// segment after it. `None` when nothing writable is left.
fn writable_span(loads: &[(usize, usize, bool)], relro: Option<(usize, usize)>, page: usize) -> Option<(usize, usize)> {
    let w = loads.iter().filter(|l| l.2);
    let lo = w.clone().map(|l| l.0).min()? & !(page - 1);
    let hi = (w.map(|l| l.1).max()? + page - 1) & !(page - 1);
    // The loader write-protects whole pages below the RELRO end.
    let lo = match relro {
        Some((_, end)) => lo.max(end & !(page - 1)),
        None => lo,
    };
    (hi > lo).then_some((lo, hi))
}

unsafe extern "C" fn find_main(
    info: *mut libc::dl_phdr_info, _size: libc::size_t, data: *mut libc::c_void,
) -> libc::c_int {
    crate::error::callback_guard("ishmem_init (finding the program's data segment)", || {
        // SAFETY: the loader passes a valid info whose phdr array has
        // dlpi_phnum entries; `data` is the `Option<Found>` of main_data.
        let (out, info) = unsafe { (&mut *(data as *mut Option<Found>), &*info) };
        let mut loads = Vec::new();
        let mut relro = None;
        for i in 0..info.dlpi_phnum as usize {
            // SAFETY: i < dlpi_phnum.
            let ph = unsafe { &*info.dlpi_phdr.add(i) };
            let start = info.dlpi_addr as usize + ph.p_vaddr as usize;
            let end = start + ph.p_memsz as usize;
            match ph.p_type {
                libc::PT_LOAD => loads.push((start, end, ph.p_flags & libc::PF_W != 0)),
                libc::PT_GNU_RELRO => relro = Some((start, end)),
                _ => {}
            }
        }
        if let Some((start, end)) = writable_span(&loads, relro, crate::mem::page_size()) {
            let segs = loads.iter().filter(|l| l.2).map(|l| (l.0, l.1)).collect();
            *out = Some(Found { start, end, segs });
        }
        1 // stop after the main program (the first object reported)
    })
}

/// True when the page at `addr` is mapped in this process.
fn mapped(addr: usize, page: usize) -> bool {
    // SAFETY: msync only inspects the range; ENOMEM means unmapped.
    unsafe { libc::msync(addr as *mut libc::c_void, page, libc::MS_ASYNC) == 0 }
}

/// The main program's writable data (page-aligned, without RELRO), left
/// where it is. A host OpenSHMEM library (the OpenSHMEM proxy) already
/// treats it as symmetric, so it is used in place there.
pub fn main_data() -> Option<DataSegment> {
    let Found { start, end, .. } = find()?;
    Some(DataSegment { base: start as *mut u8, size: end - start, fd: None })
}

fn find() -> Option<Found> {
    let mut found: Option<Found> = None;
    // SAFETY: the callback only reads the program headers it is given and
    // writes `found`, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(find_main), &mut found as *mut _ as *mut libc::c_void) };
    found
}

/// Moves the main program's writable data onto a shareable memfd. Returns
/// `None` when the program has no such segment.
pub fn share_main_data() -> io::Result<Option<DataSegment>> {
    let Some(Found { start, end, segs }) = find() else { return Ok(None) };
    let size = end - start;
    let fd = memfd("ishmem-data", size)?;
    let page = crate::mem::page_size();
    let in_segment = |a: usize| segs.iter().any(|&(s, e)| a + page > (s & !(page - 1)) && a < e);
    let mut off = 0;
    while off < size {
        let n = page.min(size - off);
        // Pages between two writable segments are normally unmapped: they
        // read as zeros (and become shared memory like the rest). Anything
        // else mapped there is not ours to replace.
        if !in_segment(start + off) {
            if mapped(start + off, n) {
                return Err(io::Error::other(format!(
                    "the page at {:#x}, between the program's writable segments, is mapped by something else",
                    start + off
                )));
            }
            off += n;
            continue;
        }
        // SAFETY: the page is mapped, and readable: it belongs to one of
        // the program's writable segments.
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

#[cfg(test)]
mod tests {
    use super::writable_span;
    const P: usize = 4096;

    #[test]
    fn one_segment_minus_relro() {
        // .data.rel.ro and .got at the start of the one writable segment.
        let loads = [(0x1000, 0x5000, false), (0x6100, 0x9800, true)];
        assert_eq!(writable_span(&loads, Some((0x6100, 0x7400)), P), Some((0x7000, 0xa000)));
    }

    #[test]
    fn relro_in_its_own_segment() {
        // The first writable segment is RELRO entirely; the data follows.
        let loads = [(0x1000, 0x5000, false), (0x6000, 0x8000, true), (0x9000, 0xb800, true)];
        assert_eq!(writable_span(&loads, Some((0x6000, 0x8000)), P), Some((0x8000, 0xc000)));
    }

    #[test]
    fn nothing_writable_left() {
        let loads = [(0x1000, 0x5000, false), (0x6000, 0x8000, true)];
        assert_eq!(writable_span(&loads, Some((0x6000, 0x8000)), P), None);
        assert_eq!(writable_span(&[(0x1000, 0x2000, false)], None, P), None);
    }
}
