//! A hostile local process for the bootstrap tests: for SECONDS it watches
//! /proc/net/unix for the node bootstrap sockets of MPI-launched jobs
//! (`@ishmem-...`) and connects to each new one, holding the connections
//! open. With `junk` it also sends a wrong secret. Prints each connection
//! it made, so a test can tell it really raced.
//!
//!   bootstrap_racer SECONDS [junk]

use std::collections::HashSet;
use std::time::{Duration, Instant};

fn connect(name: &str) -> Option<i32> {
    // SAFETY: plain socket call.
    let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return None;
    }
    // SAFETY: zeroed sockaddr_un is valid.
    let mut a: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    a.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let b = name.as_bytes();
    if b.len() + 1 > a.sun_path.len() {
        return None;
    }
    for (i, &c) in b.iter().enumerate() {
        a.sun_path[i + 1] = c as libc::c_char;
    }
    let len = (std::mem::size_of::<libc::sa_family_t>() + 1 + b.len()) as libc::socklen_t;
    // SAFETY: a is a valid sockaddr_un of length len.
    if unsafe { libc::connect(fd, &a as *const _ as *const libc::sockaddr, len) } != 0 {
        // SAFETY: our descriptor.
        unsafe { libc::close(fd) };
        return None;
    }
    Some(fd)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let secs: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(10);
    let junk = args.get(2).is_some_and(|a| a == "junk");
    let end = Instant::now() + Duration::from_secs(secs);
    let mut seen = HashSet::new();
    let mut held = Vec::new();
    println!("racer ready");
    while Instant::now() < end {
        let table = std::fs::read_to_string("/proc/net/unix").unwrap_or_default();
        for line in table.lines() {
            let Some(path) = line.split_whitespace().nth(7) else { continue };
            let Some(name) = path.strip_prefix('@') else { continue };
            if !name.starts_with("ishmem-") || !seen.insert(name.to_string()) {
                continue;
            }
            if let Some(fd) = connect(name) {
                if junk {
                    let mut m = b"AUTH".to_vec();
                    m.extend_from_slice(&[0u8; 16]);
                    // SAFETY: sending from a live buffer on our socket.
                    unsafe { libc::send(fd, m.as_ptr() as *const libc::c_void, m.len(), libc::MSG_NOSIGNAL) };
                }
                println!("racer: connected to {name}");
                held.push(fd);
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    println!("racer: {} connections", held.len());
}
