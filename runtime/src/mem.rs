//! Memory the runtime maps: shared-memory files (memfd) that travel between
//! processes as descriptors, aligned mappings of them, and the
//! [`HeapRegion`] that owns a mapping. Plain system calls, no policy: the
//! device backends (`device/`) and the bootstraps (`boot/`) decide what
//! goes where.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr;

/// How a [`HeapRegion`]'s memory is given back.
pub enum Release {
    /// `munmap` (memory this process mapped itself).
    Unmap,
    /// Nothing: someone else owns it (a proxy's symmetric heap) and
    /// releases it.
    Foreign,
    /// The device that made it releases it (GPU memory mappings).
    Device(Box<dyn FnOnce(*mut u8, usize) + Send + Sync>),
}

impl std::fmt::Debug for Release {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Release::Unmap => "Unmap",
            Release::Foreign => "Foreign",
            Release::Device(_) => "Device",
        })
    }
}

/// A mapped region of memory, released on drop.
#[derive(Debug)]
pub struct HeapRegion {
    base: *mut u8,
    size: usize,
    /// A handle peers can map (for the CPU backend, a memfd; for a GPU, the
    /// allocation exported as a file descriptor).
    handle: Option<OwnedFd>,
    release: Option<Release>,
}

// SAFETY: the region is plain shared memory; synchronization is the user's
// (OpenSHMEM's) business, as for any symmetric object.
unsafe impl Send for HeapRegion {}
// SAFETY: as above.
unsafe impl Sync for HeapRegion {}

impl HeapRegion {
    pub fn base(&self) -> *mut u8 {
        self.base
    }
    pub fn size(&self) -> usize {
        self.size
    }
    pub fn handle(&self) -> Option<&OwnedFd> {
        self.handle.as_ref()
    }
    /// Memory provided by someone else (a proxy's `alloc`) that lives at
    /// least as long as the region and is released by its owner.
    pub fn foreign(base: *mut u8, size: usize) -> HeapRegion {
        HeapRegion { base, size, handle: None, release: Some(Release::Foreign) }
    }
    /// Memory a device mapped; `release` gives it back.
    pub fn device(base: *mut u8, size: usize, handle: Option<OwnedFd>, release: Release) -> HeapRegion {
        HeapRegion { base, size, handle, release: Some(release) }
    }
    /// The region with its shareable handle (a device that exports the
    /// handle after allocating, so a failed export still frees the memory).
    pub fn with_handle(mut self, handle: OwnedFd) -> HeapRegion {
        self.handle = Some(handle);
        self
    }
    /// Drops the shareable handle once peers have their copies; the mapping
    /// stays valid.
    pub fn close_handle(&mut self) {
        self.handle = None;
    }
}

impl Drop for HeapRegion {
    fn drop(&mut self) {
        if self.base.is_null() || self.size == 0 {
            return;
        }
        match self.release.take() {
            Some(Release::Unmap) | None => {
                // SAFETY: base/size came from a successful mmap owned by us.
                unsafe { libc::munmap(self.base as *mut libc::c_void, self.size) };
            }
            Some(Release::Foreign) => {}
            Some(Release::Device(f)) => f(self.base, self.size),
        }
    }
}

/// Creates an anonymous, owner-only, close-on-exec memfd of `size` bytes.
/// It has no name in any file system, so nothing is left behind when the
/// job ends, however it ends.
pub fn memfd(name: &str, size: usize) -> io::Result<OwnedFd> {
    let cname = std::ffi::CString::new(name).expect("no NUL in memfd name");
    // SAFETY: valid C string; flags are constants.
    let fd = unsafe { libc::memfd_create(cname.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor we own.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: fd is valid.
    if unsafe { libc::fchmod(fd.as_raw_fd(), 0o600) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is valid; size fits off_t on 64-bit Linux.
    if unsafe { libc::ftruncate(fd.as_raw_fd(), size as libc::off_t) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}

/// A PE's own heap starts at a multiple of this, so that heap offsets
/// aligned to any power of two up to it are addresses aligned the same way
/// (`align` is implemented on offsets, identically on every PE).
pub const HEAP_BASE_ALIGN: usize = 1 << 30;

/// Alignment of a heap placed in a proxy's memory (a host OpenSHMEM
/// library's `shmem_align`): the largest alignment `ishmem_align` offers
/// then.
pub const PROXY_HEAP_ALIGN: usize = 2 << 20;

/// Maps `size` bytes of `fd` shared and read-write.
pub fn map_shared(fd: &OwnedFd, size: usize) -> io::Result<*mut u8> {
    map_shared_aligned(fd, size, 1)
}

/// Reserves `size` bytes of address space with no access, at an address
/// that is a multiple of `align` (a power of two): reserves `size + align`
/// bytes and releases the unaligned head and the tail. Nothing is
/// committed; the caller maps over it with `MAP_FIXED` or unmaps it.
pub fn reserve_aligned(size: usize, align: usize) -> io::Result<*mut u8> {
    let reserve = size.checked_add(align).ok_or_else(|| io::Error::from(io::ErrorKind::OutOfMemory))?;
    // SAFETY: an address-space reservation with no access; nothing is
    // committed.
    let r = unsafe {
        libc::mmap(
            ptr::null_mut(),
            reserve,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if r == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    let start = r as usize;
    let aligned = (start + align - 1) & !(align - 1);
    // SAFETY: unmapping the unused head and tail of our reservation.
    unsafe {
        if aligned > start {
            libc::munmap(r, aligned - start);
        }
        let tail = aligned + size;
        if start + reserve > tail {
            libc::munmap(tail as *mut libc::c_void, start + reserve - tail);
        }
    }
    Ok(aligned as *mut u8)
}

/// Maps `size` bytes of `fd` shared and read-write at an address that is a
/// multiple of `align` (a power of two), over a [`reserve_aligned`]
/// reservation.
pub fn map_shared_aligned(fd: &OwnedFd, size: usize, align: usize) -> io::Result<*mut u8> {
    let aligned = reserve_aligned(size, align)?;
    // SAFETY: MAP_FIXED over the reservation we own.
    let p = unsafe {
        libc::mmap(
            aligned as *mut libc::c_void,
            size,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_FIXED,
            fd.as_raw_fd(),
            0,
        )
    };
    if p == libc::MAP_FAILED {
        let e = io::Error::last_os_error();
        // SAFETY: the reservation is ours and nothing else is in it.
        unsafe { libc::munmap(aligned as *mut libc::c_void, size) };
        return Err(e);
    }
    Ok(p as *mut u8)
}

/// Maps `size` bytes of private zeroed memory (singleton control segment).
pub fn map_private(size: usize) -> io::Result<HeapRegion> {
    // SAFETY: anonymous mapping, no fd.
    let p = unsafe {
        libc::mmap(
            ptr::null_mut(),
            size,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(HeapRegion { base: p as *mut u8, size, handle: None, release: Some(Release::Unmap) })
}

/// A region over memory this process mapped itself.
pub fn owned(base: *mut u8, size: usize, handle: Option<OwnedFd>) -> HeapRegion {
    HeapRegion { base, size, handle, release: Some(Release::Unmap) }
}

/// Maps a shared-memory handle as a [`HeapRegion`] that does not keep the fd.
pub fn map_region(fd: &OwnedFd, size: usize) -> io::Result<HeapRegion> {
    Ok(HeapRegion { base: map_shared(fd, size)?, size, handle: None, release: Some(Release::Unmap) })
}

/// The system page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}
