//! The init-time exchange between `ishmrun` and its PEs.
//!
//! `ishmrun` gives each PE one end of a `SOCK_SEQPACKET` socket pair (no
//! name in any file system) and tells it the descriptor number, its rank and
//! the job size through `ISHMRUN_FD`, `ISHMRUN_PE` and `ISHMRUN_NPES`. Each
//! PE sends a HELLO carrying its heap's memfd; when all have arrived, the
//! launcher sends every PE a WELCOME with the control segment's memfd and
//! then the heap memfds of all PEs (in chunks, `SCM_RIGHTS`). Both sides
//! check with `SO_PEERCRED` that the other runs as the same user.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

const HELLO: u32 = u32::from_le_bytes(*b"HELO");
const WELCOME: u32 = u32::from_le_bytes(*b"WLCM");
const PEERS: u32 = u32::from_le_bytes(*b"PEER");
const FAIL: u32 = u32::from_le_bytes(*b"FAIL");
const LEFT: u32 = u32::from_le_bytes(*b"LEFT");

/// What a PE learns when another PE ended before its HELLO (before calling
/// `shmem_init`): the launcher reports that to the user, so this PE ends
/// without a message of its own.
#[derive(Debug)]
pub struct PeerLeft(pub u32);

impl std::fmt::Display for PeerLeft {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PE {} ended before calling shmem_init", self.0)
    }
}

impl std::error::Error for PeerLeft {}

/// Why the launcher's side of the exchange failed.
#[derive(Debug)]
pub enum ServeError {
    /// The PEs of sockets `left` ended (or closed their socket) before their
    /// HELLO while those of `waiting` had sent theirs. Under ishmrun a
    /// socket's index is its PE. The waiting PEs were told (after
    /// `serve`'s `on_left`) and end without a message of their own.
    Left { left: Vec<usize>, waiting: Vec<usize> },
    /// The exchange failed otherwise: every PE was told why.
    Failed(String),
    /// The job could not be sent to some PEs (after every HELLO).
    Send(String),
}

impl std::fmt::Display for ServeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServeError::Left { left, .. } => {
                write!(f, "PE {} ended before calling shmem_init", left.first().copied().unwrap_or(0))
            }
            ServeError::Failed(m) | ServeError::Send(m) => f.write_str(m),
        }
    }
}

/// Descriptors per message (the kernel allows at most 253).
pub const FDS_PER_MESSAGE: usize = 128;
/// PEs described per PEERS message (two descriptors each at most).
pub const PES_PER_MESSAGE: usize = FDS_PER_MESSAGE / 2;
const MAX_MSG: usize = 16 + 8 * FDS_PER_MESSAGE + 4096;

/// Sends `data` with `fds` attached.
pub fn send_msg(sock: RawFd, data: &[u8], fds: &[RawFd]) -> io::Result<()> {
    assert!(fds.len() <= FDS_PER_MESSAGE);
    let mut iov = libc::iovec { iov_base: data.as_ptr() as *mut _, iov_len: data.len() };
    let fd_bytes = std::mem::size_of_val(fds) as u32;
    // SAFETY: CMSG_SPACE is a pure computation.
    let space = unsafe { libc::CMSG_SPACE(fd_bytes) } as usize;
    let mut cbuf = vec![0u64; space.div_ceil(8).max(1)];
    // SAFETY: zeroed msghdr is a valid starting point.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if !fds.is_empty() {
        msg.msg_control = cbuf.as_mut_ptr() as *mut _;
        msg.msg_controllen = space as _;
        // SAFETY: msg_control points to `space` bytes we own; the header and
        // data written stay inside them (CMSG_SPACE accounted for both).
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&msg);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(fd_bytes) as _;
            std::ptr::copy_nonoverlapping(fds.as_ptr() as *const u8, libc::CMSG_DATA(c), fd_bytes as usize);
        }
    }
    loop {
        // SAFETY: msg points at live buffers for the duration of the call.
        let r = unsafe { libc::sendmsg(sock, &msg, libc::MSG_NOSIGNAL) };
        if r >= 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Receives one message and the descriptors attached to it (close-on-exec).
/// Returns an `UnexpectedEof` error when the peer has closed its end.
pub fn recv_msg(sock: RawFd) -> io::Result<(Vec<u8>, Vec<OwnedFd>)> {
    let mut data = vec![0u8; MAX_MSG];
    let mut iov = libc::iovec { iov_base: data.as_mut_ptr() as *mut _, iov_len: data.len() };
    // SAFETY: pure computation.
    let space = unsafe { libc::CMSG_SPACE((FDS_PER_MESSAGE * 4) as u32) } as usize;
    let mut cbuf = vec![0u64; space.div_ceil(8)];
    // SAFETY: zeroed msghdr is valid.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr() as *mut _;
    msg.msg_controllen = space as _;
    let n = loop {
        // SAFETY: buffers outlive the call.
        let r = unsafe { libc::recvmsg(sock, &mut msg, libc::MSG_CMSG_CLOEXEC) };
        if r >= 0 {
            break r as usize;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    };
    let mut fds = Vec::new();
    // SAFETY: walking the control buffer the kernel filled, with the libc
    // macros that bound each header by msg_controllen.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let payload = (*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                let p = libc::CMSG_DATA(c) as *const RawFd;
                for i in 0..payload / 4 {
                    fds.push(OwnedFd::from_raw_fd(p.add(i).read_unaligned()));
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    if n == 0 && fds.is_empty() {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "bootstrap peer closed the socket"));
    }
    if msg.msg_flags & libc::MSG_CTRUNC != 0 {
        return Err(io::Error::other("bootstrap message lost descriptors (MSG_CTRUNC)"));
    }
    data.truncate(n);
    Ok((data, fds))
}

/// The credentials (`SO_PEERCRED`) of the process on the other end of
/// `sock`; an error when `sock` is not an open Unix socket.
pub fn peer_cred(sock: RawFd) -> io::Result<libc::ucred> {
    // SAFETY: zeroed ucred is valid; getsockopt writes at most len bytes.
    let mut cred: libc::ucred = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: pointers to live locals.
    let r =
        unsafe { libc::getsockopt(sock, libc::SOL_SOCKET, libc::SO_PEERCRED, &mut cred as *mut _ as *mut _, &mut len) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(cred)
}

/// Checks that the process on the other end of `sock` runs as our user.
pub fn check_peer_uid(sock: RawFd) -> io::Result<()> {
    let cred = peer_cred(sock)?;
    // SAFETY: getuid cannot fail.
    let me = unsafe { libc::getuid() };
    if cred.uid != me {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("bootstrap peer (pid {}) runs as uid {}, not {}", cred.pid, cred.uid, me),
        ));
    }
    Ok(())
}

fn u32_at(b: &[u8], i: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(i..i + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], i: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(i..i + 8)?.try_into().ok()?))
}
fn bad(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("malformed bootstrap message: {what}"))
}

/// What a PE tells the launcher.
#[derive(Debug)]
pub struct Hello {
    pub pe: u32,
    pub pid: u32,
    pub heap_size: u64,
    pub heap_fd: OwnedFd,
    /// Size and handle of the PE's symmetric data segment (0/None: none).
    pub data_size: u64,
    pub data_fd: Option<OwnedFd>,
}

/// One PE's shared segments, as the launcher relays them.
#[derive(Debug)]
pub struct PeerSegments {
    pub heap_fd: OwnedFd,
    pub heap_size: u64,
    pub data: Option<(OwnedFd, u64)>,
}

/// What a PE learns from the launcher.
#[derive(Debug)]
pub struct JobInfo {
    pub n_pes: usize,
    pub ctrl_fd: OwnedFd,
    pub ctrl_size: usize,
    /// Every PE's segments, in PE order.
    pub peers: Vec<PeerSegments>,
}

/// PE side: announce ourselves and wait for the job description.
pub fn pe_exchange(
    sock: RawFd, pe: u32, heap_fd: &OwnedFd, heap_size: u64, data: Option<(&OwnedFd, u64)>,
) -> io::Result<JobInfo> {
    check_peer_uid(sock)?;
    let mut m = Vec::with_capacity(32);
    m.extend_from_slice(&HELLO.to_le_bytes());
    m.extend_from_slice(&pe.to_le_bytes());
    m.extend_from_slice(&std::process::id().to_le_bytes());
    m.extend_from_slice(&0u32.to_le_bytes());
    m.extend_from_slice(&heap_size.to_le_bytes());
    m.extend_from_slice(&data.map_or(0, |d| d.1).to_le_bytes());
    let mut fds = vec![heap_fd.as_raw_fd()];
    if let Some((fd, _)) = data {
        fds.push(fd.as_raw_fd());
    }
    send_msg(sock, &m, &fds)?;

    let (d, mut fds) = recv_msg(sock)?;
    match u32_at(&d, 0) {
        Some(WELCOME) => {}
        Some(FAIL) => {
            return Err(io::Error::other(String::from_utf8_lossy(&d[4..]).into_owned()));
        }
        Some(LEFT) => return Err(io::Error::other(PeerLeft(u32_at(&d, 4).ok_or_else(|| bad("LEFT"))?))),
        _ => return Err(bad("expected WELCOME")),
    }
    let n_pes = u32_at(&d, 4).ok_or_else(|| bad("WELCOME"))? as usize;
    let ctrl_size = u64_at(&d, 8).ok_or_else(|| bad("WELCOME"))? as usize;
    if fds.len() != 1 {
        return Err(bad("WELCOME carries one descriptor"));
    }
    let ctrl_fd = fds.pop().unwrap();
    let mut peers = Vec::with_capacity(n_pes);
    while peers.len() < n_pes {
        let (d, fds) = recv_msg(sock)?;
        if u32_at(&d, 0) != Some(PEERS) {
            return Err(bad("expected PEERS"));
        }
        let first = u32_at(&d, 4).ok_or_else(|| bad("PEERS"))? as usize;
        let count = u32_at(&d, 8).ok_or_else(|| bad("PEERS"))? as usize;
        if first != peers.len() || first + count > n_pes {
            return Err(bad("PEERS out of order"));
        }
        // Per PE: heap size, data size; descriptors: heap, then data if its size > 0.
        let mut fds = fds.into_iter();
        for i in 0..count {
            let heap_size = u64_at(&d, 16 + 16 * i).ok_or_else(|| bad("PEERS sizes"))?;
            let data_size = u64_at(&d, 24 + 16 * i).ok_or_else(|| bad("PEERS sizes"))?;
            let heap_fd = fds.next().ok_or_else(|| bad("PEERS descriptors"))?;
            let data = if data_size > 0 {
                Some((fds.next().ok_or_else(|| bad("PEERS descriptors"))?, data_size))
            } else {
                None
            };
            peers.push(PeerSegments { heap_fd, heap_size, data });
        }
        if fds.next().is_some() {
            return Err(bad("PEERS carries extra descriptors"));
        }
    }
    Ok(JobInfo { n_pes, ctrl_fd, ctrl_size, peers })
}

/// Launcher side: read one PE's HELLO.
pub fn read_hello(sock: RawFd) -> io::Result<Hello> {
    check_peer_uid(sock)?;
    let (d, fds) = recv_msg(sock)?;
    let data_size = u64_at(&d, 24).ok_or_else(|| bad("HELLO"))?;
    let want = if data_size > 0 { 2 } else { 1 };
    if u32_at(&d, 0) != Some(HELLO) || fds.len() != want {
        return Err(bad("expected HELLO with its descriptors"));
    }
    let mut fds = fds.into_iter();
    Ok(Hello {
        pe: u32_at(&d, 4).ok_or_else(|| bad("HELLO"))?,
        pid: u32_at(&d, 8).ok_or_else(|| bad("HELLO"))?,
        heap_size: u64_at(&d, 16).ok_or_else(|| bad("HELLO"))?,
        heap_fd: fds.next().unwrap(),
        data_size,
        data_fd: fds.next(),
    })
}

/// Launcher side: send the job description to one PE. With
/// `share_data == false` (the PEs' data segments differ: different
/// executables) no data segments are relayed.
pub fn send_job(
    sock: RawFd, ctrl_fd: &OwnedFd, ctrl_size: usize, hellos: &[Hello], share_data: bool,
) -> io::Result<()> {
    let mut m = Vec::with_capacity(16);
    m.extend_from_slice(&WELCOME.to_le_bytes());
    m.extend_from_slice(&(hellos.len() as u32).to_le_bytes());
    m.extend_from_slice(&(ctrl_size as u64).to_le_bytes());
    send_msg(sock, &m, &[ctrl_fd.as_raw_fd()])?;
    for (c, chunk) in hellos.chunks(PES_PER_MESSAGE).enumerate() {
        let mut m = Vec::with_capacity(16 + 16 * chunk.len());
        m.extend_from_slice(&PEERS.to_le_bytes());
        m.extend_from_slice(&((c * PES_PER_MESSAGE) as u32).to_le_bytes());
        m.extend_from_slice(&(chunk.len() as u32).to_le_bytes());
        m.extend_from_slice(&0u32.to_le_bytes());
        let mut fds: Vec<RawFd> = Vec::with_capacity(2 * chunk.len());
        for h in chunk {
            m.extend_from_slice(&h.heap_size.to_le_bytes());
            fds.push(h.heap_fd.as_raw_fd());
            match (&h.data_fd, share_data) {
                (Some(fd), true) => {
                    m.extend_from_slice(&h.data_size.to_le_bytes());
                    fds.push(fd.as_raw_fd());
                }
                _ => m.extend_from_slice(&0u64.to_le_bytes()),
            }
        }
        send_msg(sock, &m, &fds)?;
    }
    Ok(())
}

/// Launcher side: tell a PE that bootstrap failed and why.
pub fn send_failure(sock: RawFd, why: &str) {
    let mut m = FAIL.to_le_bytes().to_vec();
    m.extend_from_slice(why.as_bytes());
    m.truncate(MAX_MSG);
    let _ = send_msg(sock, &m, &[]);
}

/// Launcher side of the whole exchange: reads every PE's HELLO (in any
/// order of `socks`; the PEs number themselves 0..n), checks they agree,
/// and sends each the job. Every socket is read to its HELLO or its end, so
/// when it returns every PE has either sent its HELLO or gone. PEs that
/// ended first leave the others waiting: `on_left` hears of it (the
/// launcher reports it) before the waiting PEs are told. On any other
/// failure every PE is told why.
pub fn serve(
    socks: &[OwnedFd], ctrl_fd: &OwnedFd, ctrl_len: usize, on_left: impl FnOnce(&[usize], &[usize]),
) -> Result<(), ServeError> {
    let fail_all = |why: String| -> Result<(), ServeError> {
        for s in socks {
            send_failure(s.as_raw_fd(), &why);
        }
        Err(ServeError::Failed(why))
    };
    let n = socks.len();
    let mut hellos: Vec<Option<Hello>> = (0..n).map(|_| None).collect();
    let mut order: Vec<Option<usize>> = vec![None; n];
    let mut left = Vec::new();
    for (i, s) in socks.iter().enumerate() {
        match read_hello(s.as_raw_fd()) {
            Ok(h) if (h.pe as usize) < n && hellos[h.pe as usize].is_none() => {
                order[i] = Some(h.pe as usize);
                let pe = h.pe as usize;
                hellos[pe] = Some(h);
            }
            Ok(h) => return fail_all(format!("a PE announced itself as PE {} (duplicate, or not below {n})", h.pe)),
            // The PE ended without initializing the library: fine for a
            // program that never does, but PEs that do would wait for it.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => left.push(i),
            Err(e) => return fail_all(format!("bootstrap with PE {i} failed: {e}")),
        }
    }
    if !left.is_empty() {
        let waiting: Vec<usize> = order.iter().flatten().copied().collect();
        on_left(&left, &waiting);
        let mut m = LEFT.to_le_bytes().to_vec();
        m.extend_from_slice(&(left[0] as u32).to_le_bytes());
        for (i, s) in socks.iter().enumerate() {
            if order[i].is_some() {
                let _ = send_msg(s.as_raw_fd(), &m, &[]);
            }
        }
        return Err(ServeError::Left { left, waiting });
    }
    let hellos: Vec<Hello> = hellos.into_iter().map(|h| h.expect("every PE said hello")).collect();
    if let Some(h) = hellos.iter().find(|h| h.heap_size != hellos[0].heap_size) {
        return fail_all(format!(
            "PEs disagree on ISHMEM_SYMMETRIC_SIZE or ISHMEM_DEVICE_SYNC: PE 0 has a heap of {} bytes, PE {} of {} bytes",
            hellos[0].heap_size, h.pe, h.heap_size
        ));
    }
    // Global variables are symmetric only when every PE runs the same
    // executable (same data segment size).
    let share_data = hellos.iter().all(|h| h.data_size == hellos[0].data_size && h.data_size > 0);
    let mut errors = Vec::new();
    for (i, s) in socks.iter().enumerate() {
        if let Err(e) = send_job(s.as_raw_fd(), ctrl_fd, ctrl_len, &hellos, share_data) {
            errors.push(format!("cannot send the job description to PE {}: {e}", order[i].unwrap_or(i)));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ServeError::Send(errors.join("; ")))
    }
}
