//! A cache of compiled device programs on disk, shared by the PEs of a
//! node and by later jobs of the same user: linking a program with the
//! device library is seconds of compiler work per PE (the CPU OpenCL
//! runtime), loading its binary is milliseconds.
//!
//! Entries are files named by a 128-bit key over everything the binary
//! depends on (the caller's inputs: the compiler's identity, options and
//! every input module). Because a binary from the cache is code this
//! process runs, the cache is trusted only when it is private: the
//! directory must belong to this user and give nobody else any access,
//! and each entry must be a regular file of this user's that no one else
//! may write (checked on the open descriptor, not on the path). A cache
//! that fails the check is not used, with one warning.
//!
//! PEs that miss at the same moment do not all compile: the first takes
//! the key's lock file (`flock`), compiles and stores; the others wait on
//! the lock and then find the entry. Entries are written to a temporary
//! name and renamed into place, so a reader never sees half a file. When
//! the cache holds more than [`MAX_ENTRIES`] entries, storing removes the
//! least recently used ones.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Entries kept at most (each a whole linked program: megabytes).
pub const MAX_ENTRIES: usize = 64;
/// What an entry starts with: the format, then the key.
const MAGIC: &[u8; 8] = b"ISHMPC01";

/// A private directory of compiled programs.
pub struct ProgramCache {
    dir: PathBuf,
}

/// A key over the inputs of a compilation.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Key([u64; 2]);

impl Key {
    /// Hashes `parts` (each length-prefixed, so boundaries count) with two
    /// independent 64-bit functions.
    pub fn of(parts: &[&[u8]]) -> Key {
        // FNV-1a 64 and a multiply-rotate hash with other constants.
        let (mut a, mut b) = (0xcbf2_9ce4_8422_2325u64, 0x9e37_79b9_7f4a_7c15u64);
        let mut feed = |bytes: &[u8]| {
            for &x in bytes {
                a = (a ^ u64::from(x)).wrapping_mul(0x0000_0100_0000_01b3);
                b = (b ^ u64::from(x)).wrapping_mul(0xff51_afd7_ed55_8ccd).rotate_left(29);
            }
        };
        for p in parts {
            feed(&(p.len() as u64).to_le_bytes());
            feed(p);
        }
        Key([a, b])
    }

    fn hex(&self) -> String {
        format!("{:016x}{:016x}", self.0[0], self.0[1])
    }

    fn bytes(&self) -> [u8; 16] {
        let mut v = [0u8; 16];
        v[..8].copy_from_slice(&self.0[0].to_le_bytes());
        v[8..].copy_from_slice(&self.0[1].to_le_bytes());
        v
    }
}

/// This process's user.
fn uid() -> u32 {
    // SAFETY: getuid cannot fail.
    unsafe { libc::getuid() }
}

/// Why a cache directory is not used.
#[derive(Debug)]
pub enum CacheError {
    /// It could not be created.
    Create { dir: PathBuf, source: std::io::Error },
    /// It could not be examined.
    Stat { dir: PathBuf, source: std::io::Error },
    /// It is no directory (a symbolic link is not followed).
    NotDirectory { dir: PathBuf },
    /// Another user (`owner`) owns it.
    Owner { dir: PathBuf, owner: u32, me: u32 },
    /// Other users may reach it (`mode`).
    Open { dir: PathBuf, mode: u32 },
}

impl fmt::Display for CacheError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CacheError::Create { dir, source } => write!(f, "cannot create {}: {source}", dir.display()),
            CacheError::Stat { dir, source } => write!(f, "cannot stat {}: {source}", dir.display()),
            CacheError::NotDirectory { dir } => {
                write!(f, "{} is not a directory (a symbolic link is not accepted)", dir.display())
            }
            CacheError::Owner { dir, owner, me } => {
                write!(f, "{} belongs to uid {owner}, not to this user ({me})", dir.display())
            }
            CacheError::Open { dir, mode } => {
                write!(f, "{} is open to other users (mode {mode:04o}; chmod 700 it)", dir.display())
            }
        }
    }
}

impl std::error::Error for CacheError {}

impl ProgramCache {
    /// The cache in `dir`, created (mode 0700) if missing. `Err` says why
    /// it cannot be trusted or made.
    pub fn open(dir: &Path) -> Result<ProgramCache, CacheError> {
        let d = || dir.to_path_buf();
        if !dir.exists() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|source| CacheError::Create { dir: d(), source })?;
        }
        let m = std::fs::symlink_metadata(dir).map_err(|source| CacheError::Stat { dir: d(), source })?;
        if !m.is_dir() {
            return Err(CacheError::NotDirectory { dir: d() });
        }
        if m.uid() != uid() {
            return Err(CacheError::Owner { dir: d(), owner: m.uid(), me: uid() });
        }
        if m.mode() & 0o077 != 0 {
            return Err(CacheError::Open { dir: d(), mode: m.mode() & 0o7777 });
        }
        Ok(ProgramCache { dir: d() })
    }

    fn entry(&self, key: Key) -> PathBuf {
        self.dir.join(format!("{}.bin", key.hex()))
    }

    /// The binary stored under `key`, if there is a trustworthy one.
    pub fn get(&self, key: Key) -> Option<Vec<u8>> {
        let path = self.entry(key);
        let mut f = OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(&path).ok()?;
        let m = f.metadata().ok()?;
        if !m.is_file() || m.uid() != uid() || m.mode() & 0o022 != 0 {
            return None;
        }
        let mut data = Vec::with_capacity(m.len() as usize);
        f.read_to_end(&mut data).ok()?;
        let head = MAGIC.len() + 16;
        if data.len() < head || &data[..MAGIC.len()] != MAGIC || data[MAGIC.len()..head] != key.bytes() {
            return None;
        }
        // Recently used: eviction removes the oldest first.
        // SAFETY: an open descriptor; null times mean now.
        unsafe { libc::futimens(f.as_raw_fd(), std::ptr::null()) };
        data.drain(..head);
        Some(data)
    }

    /// Stores `binary` under `key` (a failure only costs the next
    /// process a compilation).
    pub fn put(&self, key: Key, binary: &[u8]) {
        let tmp = self.dir.join(format!(".{}.{}.tmp", key.hex(), std::process::id()));
        let written = (|| -> std::io::Result<()> {
            let mut f = OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp)?;
            f.write_all(MAGIC)?;
            f.write_all(&key.bytes())?;
            f.write_all(binary)?;
            f.sync_data()?;
            std::fs::rename(&tmp, self.entry(key))
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        self.evict();
    }

    /// Removes the entries beyond [`MAX_ENTRIES`], oldest first.
    fn evict(&self) {
        let Ok(rd) = std::fs::read_dir(&self.dir) else { return };
        let mut entries: Vec<(i64, PathBuf)> = rd
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".bin"))
            .filter_map(|e| Some((e.metadata().ok()?.mtime(), e.path())))
            .collect();
        if entries.len() <= MAX_ENTRIES {
            return;
        }
        entries.sort();
        for (_, p) in &entries[..entries.len() - MAX_ENTRIES] {
            let _ = std::fs::remove_file(p);
        }
    }

    /// Holds `key`'s lock (one compiler per key at a time across
    /// processes) until the guard drops; `None` when the lock file cannot
    /// be made (the caller then compiles without it).
    pub fn lock(&self, key: Key) -> Option<KeyLock> {
        let path = self.dir.join(format!("{}.lock", key.hex()));
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .ok()?;
        loop {
            // SAFETY: an open descriptor.
            if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } == 0 {
                return Some(KeyLock { _file: f, path });
            }
            if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                return None;
            }
        }
    }
}

/// A held key lock; dropping it removes the lock file and releases it.
/// Removing is safe: whoever waits on the old file, or makes a new one,
/// looks the entry up again once it holds the lock.
pub struct KeyLock {
    _file: File,
    path: PathBuf,
}

impl Drop for KeyLock {
    fn drop(&mut self) {
        // The lock goes with the descriptor, closed after this.
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("progcache-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn stores_and_finds_by_key() {
        let d = scratch("basic");
        let c = ProgramCache::open(&d).unwrap();
        assert_eq!(std::fs::metadata(&d).unwrap().mode() & 0o777, 0o700);
        let k = Key::of(&[b"compiler", b"module"]);
        assert_ne!(k, Key::of(&[b"compile", b"rmodule"]), "part boundaries count");
        assert!(c.get(k).is_none());
        {
            let _l = c.lock(k).unwrap();
            c.put(k, b"binary");
        }
        assert_eq!(c.get(k).as_deref(), Some(&b"binary"[..]));
        assert!(c.get(Key::of(&[b"other"])).is_none());
        // An entry others may write is not trusted.
        let e = c.entry(k);
        std::fs::set_permissions(&e, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(c.get(k).is_none());
        std::fs::set_permissions(&e, std::fs::Permissions::from_mode(0o600)).unwrap();
        // A truncated or foreign file is a miss.
        std::fs::write(&e, b"ISHMPC01short").unwrap();
        assert!(c.get(k).is_none());
        // No lock files are left.
        assert!(std::fs::read_dir(&d).unwrap().flatten().all(|f| !f.file_name().to_string_lossy().ends_with(".lock")));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn refuses_a_directory_others_can_reach() {
        let d = scratch("open");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        let e = ProgramCache::open(&d).err().unwrap().to_string();
        assert!(e.contains("open to other users (mode 0755"), "{e}");
        let link = scratch("link");
        std::os::unix::fs::symlink(&d, &link).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(matches!(ProgramCache::open(&link), Err(CacheError::NotDirectory { .. })));
        std::fs::remove_file(&link).unwrap();
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn evicts_the_oldest_beyond_the_limit() {
        let d = scratch("evict");
        let c = ProgramCache::open(&d).unwrap();
        for i in 0..MAX_ENTRIES + 3 {
            let k = Key::of(&[&(i as u64).to_le_bytes()]);
            c.put(k, b"x");
            // distinct modification times, oldest first
            let t = libc::timespec { tv_sec: 1_000_000 + i as i64, tv_nsec: 0 };
            let p = std::ffi::CString::new(c.entry(k).to_str().unwrap()).unwrap();
            // SAFETY: valid path and times.
            unsafe { libc::utimensat(libc::AT_FDCWD, p.as_ptr(), [t, t].as_ptr(), 0) };
        }
        c.evict();
        let n = std::fs::read_dir(&d).unwrap().count();
        assert_eq!(n, MAX_ENTRIES);
        assert!(c.get(Key::of(&[&0u64.to_le_bytes()])).is_none(), "the oldest went");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
