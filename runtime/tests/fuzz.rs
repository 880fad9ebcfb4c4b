//! Fuzzing of the runtime's parsers of untrusted input, as plain tests: the
//! environment table (`Config::from_lookup`, `parse_size`), the bootstrap
//! messages a peer sends (`wire::read_hello`, `wire::pe_exchange`, over a
//! real socket pair, descriptors included) and the reverse-offload ring's
//! message decoder. Each target runs random and mutated inputs for
//! `ISHMEM_FUZZ_SECS` seconds (default 2; CI runs the default, longer runs
//! by hand: `ISHMEM_FUZZ_SECS=600 cargo test -p ishmem-runtime --test
//! fuzz`). An input passes when the parser returns (a value or an error)
//! without panicking or hanging; the seed is printed so a failure can be
//! replayed with `ISHMEM_FUZZ_SEED`.

use ishmem_runtime::api::launch::{wire, RawMsg, Sig};
use ishmem_runtime::api::{
    abi::VARS,
    launch::{parse_size, Config},
};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    /// A value biased to the edges parsers get wrong.
    fn edgy(&mut self) -> u64 {
        const EDGES: [u64; 10] = [0, 1, 2, 7, 8, 63, 64, u32::MAX as u64, i64::MAX as u64, u64::MAX];
        match self.below(3) {
            0 => EDGES[self.below(EDGES.len())],
            1 => self.next() & 0xffff,
            _ => self.next(),
        }
    }
    fn text(&mut self) -> String {
        const PIECES: [&str; 18] = [
            "",
            " ",
            "0",
            "1",
            "512m",
            "2g",
            "k",
            "t",
            "ib",
            "-",
            "99999999999999999999",
            "yes",
            "off",
            "\u{0}",
            "é",
            "0x10",
            ".",
            "1.5",
        ];
        let mut s = String::new();
        for _ in 0..self.below(4) {
            if self.below(3) == 0 {
                s.push(char::from_u32(self.next() as u32 % 0x250).unwrap_or('?'));
            } else {
                s.push_str(PIECES[self.below(PIECES.len())]);
            }
        }
        s
    }
}

fn budget() -> (Duration, u64) {
    let secs = std::env::var("ISHMEM_FUZZ_SECS").ok().and_then(|v| v.parse().ok()).unwrap_or(2.0f64);
    let seed = std::env::var("ISHMEM_FUZZ_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64) | 1
    });
    (Duration::from_secs_f64(secs), seed)
}

fn run(name: &str, mut one: impl FnMut(&mut Rng)) {
    let (secs, seed) = budget();
    eprintln!("fuzz {name}: seed {seed}, {secs:?}");
    let mut rng = Rng(seed);
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < secs {
        one(&mut rng);
        n += 1;
    }
    eprintln!("fuzz {name}: {n} inputs");
    assert!(n > 0);
}

#[test]
fn env_table() {
    let names: Vec<&str> = VARS.iter().map(|v| v.name).collect();
    run("env", |r| {
        let set: Vec<(String, String)> =
            (0..r.below(6)).map(|_| (names[r.below(names.len())].to_string(), r.text())).collect();
        let _ = Config::from_lookup(&|n| set.iter().rev().find(|(k, _)| k == n).map(|(_, v)| v.clone()));
        let _ = parse_size(&r.text());
    });
}

/// Collective signatures read from another PE's control words: any words
/// decode to a signature or to nothing, describe without panicking, and a
/// decoded signature encodes back to the same words.
#[test]
fn collective_signatures() {
    run("collsig", |r| {
        let w =
            [r.edgy(), if r.below(2) == 0 { r.below(20) as u64 | r.edgy() << 8 } else { r.edgy() }, r.edgy(), r.edgy()];
        if let Some(s) = Sig::from_words(w) {
            assert!(!s.describe().is_empty());
            let e = r.edgy();
            let back = s.words(e);
            assert_eq!(back[1..], w[1..], "{s:?}");
            assert!(Sig::same_epoch(back[0], e));
        }
    });
}

#[test]
fn ring_decoder() {
    run("ring", |r| {
        let m = RawMsg {
            dest: r.edgy(),
            source: r.edgy(),
            value: r.edgy(),
            cond: r.edgy(),
            sig: r.edgy(),
            pe: r.edgy() as u32,
            op: if r.below(2) == 0 { r.below(12) as u32 } else { r.edgy() as u32 },
            amo: if r.below(2) == 0 { (r.below(40) as u32) | ((1u32 << r.below(5)) << 8) } else { r.edgy() as u32 },
            flags: r.edgy() as u32,
            check: r.edgy(),
        };
        let _ = m.decode();
        let _ = m.is_whole(r.edgy());
    });
}

fn pair() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: fds has room for two descriptors.
    let rc = unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) };
    assert_eq!(rc, 0);
    // SAFETY: fresh descriptors we own.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

/// A bootstrap message: random bytes, or a well-formed header with random
/// fields; with 0..3 descriptors attached.
fn message(r: &mut Rng, magics: &[&[u8; 4]]) -> (Vec<u8>, usize) {
    let mut m = Vec::new();
    if r.below(4) != 0 {
        m.extend_from_slice(magics[r.below(magics.len())]);
    }
    for _ in 0..r.below(40) {
        if r.below(2) == 0 {
            m.extend_from_slice(&r.edgy().to_le_bytes());
        } else {
            m.push(r.next() as u8);
        }
    }
    (m, r.below(4))
}

#[test]
fn bootstrap_messages() {
    let dev_null = std::fs::File::open("/dev/null").unwrap();
    run("bootstrap", |r| {
        let launcher_side = r.below(2) == 0;
        let (a, b) = pair();
        let n_msgs = 1 + r.below(3);
        for _ in 0..n_msgs {
            let (m, nfd) = message(r, &[b"HELO", b"WLCM", b"PEER", b"FAIL"]);
            let fds = vec![dev_null.as_raw_fd(); nfd];
            let _ = wire::send_msg(b.as_raw_fd(), &m, &fds);
        }
        drop(b); // the reader sees the end after the messages: no hang
        if launcher_side {
            let _ = wire::read_hello(a.as_raw_fd());
        } else {
            let heap = std::fs::File::open("/dev/null").unwrap();
            let heap = OwnedFd::from(heap);
            let _ = wire::pe_exchange(a.as_raw_fd(), 0, &heap, 4096, None);
        }
    });
}
