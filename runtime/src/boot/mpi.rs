//! Bootstrap of a job started by an MPI launcher: which PEs share this node,
//! and the node-local exchange of heaps.
//!
//! Every PE contributes a record to one allgather through the proxy: a hash
//! of its node identity (host name, kernel boot id, network namespace), its
//! heap and data-segment sizes, a random job secret and a random socket
//! name (PE 0's are used). PEs with the same node hash can pass memfds to
//! each other, so they share heaps by load/store exactly as under ishmrun:
//! the first PE of the node listens on an abstract Unix socket with the
//! random name (nothing in the file system, but visible in
//! /proc/net/unix) and serves the same exchange ishmrun serves
//! (`bootstrap::serve`), including the node's
//! control segment. A connection counts only when its process runs as
//! the same user (`SO_PEERCRED`) and sends the secret, which never appears
//! in the name; others are closed and the wait goes on, to a deadline. The
//! node is detected, never assumed: two PEs whose
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
use std::time::{Duration, Instant};

/// Loads the MPI proxy, takes rank and size from it, creates this PE's heap
/// and runs the node-local exchange.
pub fn start(
    config: &Config, opts: &InitOptions, device: &dyn Device, heap_size: usize,
) -> Result<JobLayout, InitError> {
    let ops = plugin::load(
        config.mpi_proxy.as_deref(),
        config.root.as_deref(),
        opts.app_comm,
        opts.requested_thread,
        config.proxy_put_copy as usize,
        config.progress_thread,
    )?;
    let r: &'static Remote = Box::leak(Box::new(Remote::new(Box::new(ops))));
    let (my_pe, n_pes) = (r.rank(), r.size());
    if n_pes == 0 || n_pes > i32::MAX as usize || my_pe >= n_pes {
        return Err(format!("MPI reports rank {my_pe} of {n_pes} processes").into());
    }
    crate::phase::set_my_pe(my_pe);
    let data = shared_data();
    exchange(r, my_pe, n_pes, device, heap_size, data, config.enable_shm)
}

const RECORD: usize = 64;

/// FNV-1a, enough to compare node identities.
/// PE `me`'s place among the job's processes on its node (`nodes[pe]` is
/// PE `pe`'s node identity), whether or not they share memory: a GPU
/// device picks its GPU by it. (With `ISHMEM_ENABLE_SHM=0` the place among
/// the PEs sharing memory is always the first, and every PE took GPU 0.)
fn place_on_node(nodes: &[u64], me: usize) -> LocalRank {
    let mine = nodes[me];
    LocalRank {
        rank: nodes[..me].iter().filter(|&&n| n == mine).count(),
        size: nodes.iter().filter(|&&n| n == mine).count(),
    }
}

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

/// Neither `getrandom` nor /dev/urandom gave the random bytes of the node
/// bootstrap's secret (the error is /dev/urandom's).
#[derive(Debug)]
struct NoRandomBytes(io::Error);

impl std::fmt::Display for NoRandomBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "no random bytes for the node bootstrap's secret (getrandom, /dev/urandom: {})", self.0)
    }
}

impl std::error::Error for NoRandomBytes {}

impl From<NoRandomBytes> for InitError {
    fn from(e: NoRandomBytes) -> Self {
        InitError::Bootstrap(e.to_string())
    }
}

fn random_token() -> Result<u128, NoRandomBytes> {
    let mut b = [0u8; 16];
    // SAFETY: the buffer is writable for 16 bytes.
    let n = unsafe { libc::getrandom(b.as_mut_ptr() as *mut libc::c_void, 16, 0) };
    if n != 16 {
        use std::io::Read;
        std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut b)).map_err(NoRandomBytes)?;
    }
    Ok(u128::from_le_bytes(b))
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

/// How long the node's first PE waits for the others to connect.
const ACCEPT_DEADLINE: Duration = Duration::from_secs(60);
/// How long a connection may take to authenticate.
const AUTH_DEADLINE: Duration = Duration::from_secs(5);
const AUTH: u32 = u32::from_le_bytes(*b"AUTH");

/// A test hook (internal variable): PEs other than the node's first wait
/// this long before connecting, so a test can race the socket reliably.
fn test_connect_delay() {
    if let Some(ms) = crate::env::test_connect_delay_ms() {
        std::thread::sleep(Duration::from_millis(ms.min(10_000)));
    }
}

/// PE side: prove membership of the job with its secret.
fn send_auth(sock: &OwnedFd, token: u128) -> io::Result<()> {
    let mut m = AUTH.to_le_bytes().to_vec();
    m.extend_from_slice(&token.to_le_bytes());
    wire::send_msg(sock.as_raw_fd(), &m, &[])
}

/// Whether `m` is an AUTH message carrying `token` (compared in constant
/// time).
fn auth_ok(m: &[u8], token: u128) -> bool {
    if m.len() != 20 || m[0..4] != AUTH.to_le_bytes() {
        return false;
    }
    let want = token.to_le_bytes();
    m[4..20].iter().zip(want.iter()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

fn set_nonblocking(fd: &OwnedFd, on: bool) -> io::Result<()> {
    // SAFETY: fcntl on a descriptor we own.
    unsafe {
        let fl = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
        if fl < 0 {
            return Err(io::Error::last_os_error());
        }
        let fl = if on { fl | libc::O_NONBLOCK } else { fl & !libc::O_NONBLOCK };
        if libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, fl) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Why the node's first PE did not get every PE of its node.
#[derive(Debug)]
enum AcceptError {
    /// The listening socket could not be made non-blocking.
    Socket(io::Error),
    /// `poll` on the listening socket failed.
    Poll(io::Error),
    /// `arrived` of the node's `n` PEs authenticated before the deadline
    /// (`secs`); `refused` other connections were closed.
    Deadline { arrived: usize, n: usize, secs: u64, refused: usize },
}

impl std::fmt::Display for AcceptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AcceptError::Socket(e) => write!(f, "bootstrap socket: {e}"),
            AcceptError::Poll(e) => write!(f, "poll on the node's bootstrap socket: {e}"),
            AcceptError::Deadline { arrived, n, secs, refused } => write!(
                f,
                "only {arrived} of the {n} PEs of this node reached its bootstrap socket within {secs} s ({refused} other connection(s) refused)"
            ),
        }
    }
}

impl std::error::Error for AcceptError {}

/// The node's first PE: accepts connections until `n` have authenticated
/// (same user by `SO_PEERCRED`, then the job's secret), closing every
/// connection that fails either check or stays silent for
/// [`AUTH_DEADLINE`], so an outsider's connection neither takes a PE's
/// place nor fails the job. Fails after `deadline` naming how many PEs
/// arrived.
fn accept_node_pes(l: &OwnedFd, n: usize, token: u128, deadline: Duration) -> Result<Vec<OwnedFd>, AcceptError> {
    let start = Instant::now();
    set_nonblocking(l, true).map_err(AcceptError::Socket)?;
    let mut pending: Vec<(OwnedFd, Instant)> = Vec::new();
    let mut good: Vec<OwnedFd> = Vec::with_capacity(n);
    let mut refused = 0usize;
    while good.len() < n {
        let now = Instant::now();
        if now.duration_since(start) > deadline {
            return Err(AcceptError::Deadline { arrived: good.len(), n, secs: deadline.as_secs(), refused });
        }
        pending.retain(|(_, t)| now.duration_since(*t) < AUTH_DEADLINE);
        let mut fds: Vec<libc::pollfd> = std::iter::once(l)
            .chain(pending.iter().map(|(s, _)| s))
            .map(|s| libc::pollfd { fd: s.as_raw_fd(), events: libc::POLLIN, revents: 0 })
            .collect();
        // SAFETY: fds is a live array of pollfd of the given length.
        let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 200) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(AcceptError::Poll(e));
        }
        // Authenticate the connections that spoke (back to front, so the
        // indices stay valid while removing).
        for i in (1..fds.len()).rev() {
            if fds[i].revents == 0 {
                continue;
            }
            let (s, _) = pending.remove(i - 1);
            let ok = wire::check_peer_uid(s.as_raw_fd()).is_ok()
                && matches!(wire::recv_msg(s.as_raw_fd()), Ok((m, f)) if f.is_empty() && auth_ok(&m, token))
                && set_nonblocking(&s, false).is_ok();
            if ok {
                good.push(s);
            } else {
                refused += 1;
            }
        }
        if fds[0].revents != 0 {
            loop {
                // SAFETY: accept on our (non-blocking) listening socket.
                let fd = unsafe {
                    libc::accept4(
                        l.as_raw_fd(),
                        std::ptr::null_mut(),
                        std::ptr::null_mut(),
                        libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
                    )
                };
                if fd < 0 {
                    break;
                }
                // SAFETY: fresh descriptor we own.
                pending.push((unsafe { OwnedFd::from_raw_fd(fd) }, Instant::now()));
            }
        }
    }
    Ok(good)
}

/// Why the node's bootstrap server (the thread of the node's first PE)
/// failed.
#[derive(Debug)]
enum NodeServerError {
    /// Not every PE of the node connected.
    Accept(AcceptError),
    /// The exchange failed; `ServeError::Left` is a PE of this node that
    /// ended during it (a socket's index is no PE number here).
    Serve(wire::ServeError),
}

impl std::fmt::Display for NodeServerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NodeServerError::Accept(e) => e.fmt(f),
            NodeServerError::Serve(wire::ServeError::Left { .. }) => {
                f.write_str("a PE of this node ended during the node-local bootstrap")
            }
            NodeServerError::Serve(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for NodeServerError {}

impl From<NodeServerError> for InitError {
    fn from(e: NodeServerError) -> Self {
        InitError::Bootstrap(e.to_string())
    }
}

/// The node-local bootstrap under `proxy` (collective over the job).
fn exchange(
    proxy: &'static Remote, my_pe: usize, n_pes: usize, dev: &dyn Device, heap_size: usize,
    data: Option<crate::dataseg::DataSegment>, enable_shm: bool,
) -> Result<JobLayout, InitError> {
    const CALL: &str = "ishmem_init";
    let mut rec = [0u8; RECORD];
    rec[0..8].copy_from_slice(&fnv(&node_identity()).to_le_bytes());
    rec[8..16].copy_from_slice(&(heap_size as u64).to_le_bytes());
    rec[16..24].copy_from_slice(&(data.as_ref().map_or(0, |d| d.size) as u64).to_le_bytes());
    rec[24..40].copy_from_slice(&random_token()?.to_le_bytes());
    rec[40..44].copy_from_slice(&std::process::id().to_le_bytes());
    rec[48..64].copy_from_slice(&random_token()?.to_le_bytes());
    let all = proxy.allgather(CALL, &rec);
    let field =
        |pe: usize, at: usize| u64::from_le_bytes(all[pe * RECORD + at..pe * RECORD + at + 8].try_into().unwrap());
    for pe in 0..n_pes {
        if field(pe, 8) != heap_size as u64 {
            return Err(format!(
                "PE {pe} has a {}-byte heap and this PE a {heap_size}-byte one: ISHMEM_SYMMETRIC_SIZE and ISHMEM_DEVICE_SYNC must be the same on every PE",
                field(pe, 8)
            )
            .into());
        }
    }
    // PE 0's secret (it travels only over MPI) and its public socket name
    // id: a process that reads the name in /proc/net/unix learns nothing
    // it can authenticate with.
    let token = u128::from_le_bytes(all[24..40].try_into().unwrap());
    let name_id = u128::from_le_bytes(all[48..64].try_into().unwrap());
    let my_node = field(my_pe, 0);
    let node_procs = (0..n_pes).filter(|&p| field(p, 0) == my_node).count();
    let node_pes: Vec<usize> =
        if enable_shm { (0..n_pes).filter(|&p| field(p, 0) == my_node).collect() } else { vec![my_pe] };
    let data_size = data.as_ref().map_or(0, |d| d.size) as u64;
    let data_symmetric = data_size > 0 && (0..n_pes).all(|p| field(p, 16) == data_size);
    if data.is_some() && !data_symmetric {
        warn_data_not_symmetric(my_pe);
    }

    // This PE's place among the job's processes on its node, whether or
    // not they share memory: a GPU device picks its GPU by it (with
    // ISHMEM_ENABLE_SHM=0 every PE used to count as the first of its node,
    // and all of them took GPU 0).
    let nodes: Vec<u64> = (0..n_pes).map(|p| field(p, 0)).collect();
    // The heap, now that this PE's place on its node is known.
    let heap = dev.create_heap(heap_size, my_pe, place_on_node(&nodes, my_pe))?;
    let local_idx = node_pes.iter().position(|&p| p == my_pe).expect("this PE is on its node");
    let n_local = node_pes.len();
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
        let name = format!("ishmem-{name_id:032x}-{leader}");
        // The leader listens before anyone connects (the barrier), and
        // serves the exchange from a thread while taking part itself.
        let server = if my_pe == leader {
            let l = listen(&name, 128).map_err(|e| format!("cannot listen on the node's bootstrap socket: {e}"))?;
            let ctrl_fd =
                mem::memfd("ishmem-ctrl", ctrl_len).map_err(|e| format!("cannot create the control segment: {e}"))?;
            {
                let r =
                    mem::map_region(&ctrl_fd, ctrl_len).map_err(|e| format!("cannot map the control segment: {e}"))?;
                // SAFETY: fresh zeroed mapping of ctrl_size(n_pes) bytes.
                unsafe { Ctrl::new(r.base(), n_pes) }.initialize();
            }
            Some(std::thread::spawn(move || -> Result<(), NodeServerError> {
                let socks = accept_node_pes(&l, n_local, token, ACCEPT_DEADLINE).map_err(NodeServerError::Accept)?;
                drop(l);
                // Sockets are in the order the PEs connected: no PE numbers.
                wire::serve(&socks, &ctrl_fd, ctrl_len, |_, _| {}).map_err(NodeServerError::Serve)
            }))
        } else {
            None
        };
        proxy.barrier(CALL);
        if my_pe != leader {
            test_connect_delay();
        }
        let sock =
            connect(&name).map_err(|e| format!("cannot reach the node's bootstrap socket (PE {leader}): {e}"))?;
        send_auth(&sock, token).map_err(|e| format!("cannot authenticate to the node's bootstrap socket: {e}"))?;
        let shared_data =
            if data_symmetric { data.as_ref().and_then(|d| d.fd.as_ref().map(|fd| (fd, d.size as u64))) } else { None };
        let job = wire::pe_exchange(
            sock.as_raw_fd(),
            local_idx as u32,
            heap.handle().expect("new heap has a handle"),
            heap_size as u64,
            shared_data,
        )
        .map_err(|e| match e.get_ref().and_then(|r| r.downcast_ref::<wire::PeerLeft>()) {
            Some(_) => "node-local bootstrap failed: a PE of this node ended during it".to_string(),
            None => format!("node-local bootstrap failed: {e}"),
        })?;
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
        node_procs,
        boot_remote: Some(proxy),
        route_remote: None,
        amo_remote_all: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(tag: &str) -> String {
        format!("ishmem-test-{}-{tag}-{:x}", std::process::id(), random_token().unwrap() as u64)
    }

    /// Each PE's place on its node counts the node's processes in PE
    /// order, interleaved nodes included (a GPU device picks its GPU by it).
    #[test]
    fn place_on_node_counts_the_nodes_processes() {
        let nodes = [7, 9, 7, 7, 9];
        let places: Vec<(usize, usize)> =
            (0..5).map(|pe| place_on_node(&nodes, pe)).map(|l| (l.rank, l.size)).collect();
        assert_eq!(places, [(0, 3), (0, 2), (1, 3), (2, 3), (1, 2)]);
    }

    /// Silent connections and a wrong secret neither take a PE's place nor
    /// fail the accept; the real PE gets in.
    #[test]
    fn accept_skips_silent_and_wrong_secret() {
        let n = name("ok");
        let l = listen(&n, 8).unwrap();
        let token = random_token().unwrap();
        let silent = connect(&n).unwrap();
        let junk = connect(&n).unwrap();
        send_auth(&junk, token ^ 1).unwrap();
        let good = connect(&n).unwrap();
        send_auth(&good, token).unwrap();
        let got = accept_node_pes(&l, 1, token, Duration::from_secs(10)).unwrap();
        assert_eq!(got.len(), 1);
        drop((silent, junk, good));
    }

    /// A PE that never arrives ends the wait at the deadline with a message
    /// saying how many arrived and how many connections were refused.
    #[test]
    fn accept_deadline_names_the_count() {
        let n = name("deadline");
        let l = listen(&n, 8).unwrap();
        let token = random_token().unwrap();
        let _silent = connect(&n).unwrap();
        let junk = connect(&n).unwrap();
        send_auth(&junk, 7).unwrap();
        let good = connect(&n).unwrap();
        send_auth(&good, token).unwrap();
        let t = Instant::now();
        let e = accept_node_pes(&l, 2, token, Duration::from_secs(1)).unwrap_err();
        assert!(t.elapsed() < Duration::from_secs(5), "took {:?}", t.elapsed());
        assert_eq!(
            e.to_string(),
            "only 1 of the 2 PEs of this node reached its bootstrap socket within 1 s (1 other connection(s) refused)"
        );
    }
}
