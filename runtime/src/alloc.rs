//! Deterministic allocator for the symmetric heap.
//!
//! Every PE runs the same sequence of collective allocation calls through
//! its own instance, so every PE computes the same offsets. The metadata
//! lives in ordinary process memory, never in the heap, so remote writes
//! into the heap cannot corrupt it. First fit by address with coalescing on
//! free: freed space is reused and the result depends only on the call
//! sequence.

use std::collections::BTreeMap;

/// Every block starts on, and is a multiple of, this many bytes (a cache
/// line: blocks never share a line, and any C type is suitably aligned).
pub const MIN_ALIGN: usize = 64;

/// Allocation failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutOfSpace {
    pub requested: usize,
    pub free_total: usize,
    pub largest_free: usize,
}

#[derive(Debug)]
pub struct SymAllocator {
    /// offset -> length of each free block; adjacent blocks are always merged.
    free: BTreeMap<usize, usize>,
    /// offset -> length of each allocated block.
    used: BTreeMap<usize, usize>,
}

fn round_up(n: usize, a: usize) -> Option<usize> {
    n.checked_add(a - 1).map(|v| v & !(a - 1))
}

impl SymAllocator {
    pub fn new(size: usize) -> Self {
        let size = size & !(MIN_ALIGN - 1);
        let mut free = BTreeMap::new();
        if size > 0 {
            free.insert(0, size);
        }
        SymAllocator { free, used: BTreeMap::new() }
    }

    pub fn free_total(&self) -> usize {
        self.free.values().sum()
    }

    pub fn largest_free(&self) -> usize {
        self.free.values().copied().max().unwrap_or(0)
    }

    /// Allocates `size > 0` bytes at an offset that is a multiple of `align`
    /// (a power of two; raised to [`MIN_ALIGN`]).
    pub fn alloc(&mut self, size: usize, align: usize) -> Result<usize, OutOfSpace> {
        debug_assert!(size > 0 && align.is_power_of_two());
        let align = align.max(MIN_ALIGN);
        let fail =
            |s: &Self| OutOfSpace { requested: size, free_total: s.free_total(), largest_free: s.largest_free() };
        let Some(len) = round_up(size, MIN_ALIGN) else { return Err(fail(self)) };
        let mut found = None;
        for (&off, &blen) in &self.free {
            let Some(start) = round_up(off, align) else { break };
            if start >= off + blen {
                continue;
            }
            if off + blen - start >= len {
                found = Some((off, blen, start));
                break;
            }
        }
        let Some((off, blen, start)) = found else { return Err(fail(self)) };
        self.free.remove(&off);
        if start > off {
            self.free.insert(off, start - off);
        }
        let end = start + len;
        if end < off + blen {
            self.free.insert(end, off + blen - end);
        }
        self.used.insert(start, len);
        Ok(start)
    }

    /// Length of the block that starts at `off`, if one does.
    pub fn block_len(&self, off: usize) -> Option<usize> {
        self.used.get(&off).copied()
    }

    /// Frees the block starting at `off`; returns its length, or None when no
    /// block starts there.
    pub fn free(&mut self, off: usize) -> Option<usize> {
        let len = self.used.remove(&off)?;
        let mut start = off;
        let mut end = off + len;
        if let Some((&poff, &plen)) = self.free.range(..off).next_back() {
            if poff + plen == off {
                self.free.remove(&poff);
                start = poff;
            }
        }
        if let Some(&nlen) = self.free.get(&end) {
            self.free.remove(&end);
            end += nlen;
        }
        self.free.insert(start, end - start);
        Some(len)
    }

    /// Tries to resize the block at `off` in place to `new_size` bytes.
    pub fn resize_in_place(&mut self, off: usize, new_size: usize) -> bool {
        let Some(len) = self.used.get(&off).copied() else { return false };
        let Some(new_len) = round_up(new_size, MIN_ALIGN) else { return false };
        if new_len <= len {
            if new_len < len {
                self.used.insert(off, new_len);
                // Give the tail back (merging with a following free block).
                let tail = off + new_len;
                let mut tlen = len - new_len;
                if let Some(&n) = self.free.get(&(off + len)) {
                    self.free.remove(&(off + len));
                    tlen += n;
                }
                self.free.insert(tail, tlen);
            }
            return true;
        }
        let end = off + len;
        match self.free.get(&end).copied() {
            Some(flen) if len + flen >= new_len => {
                self.free.remove(&end);
                let rest = len + flen - new_len;
                if rest > 0 {
                    self.free.insert(off + new_len, rest);
                }
                self.used.insert(off, new_len);
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuse_and_coalesce() {
        let mut a = SymAllocator::new(1 << 20);
        let x = a.alloc(100, 8).unwrap();
        let y = a.alloc(1000, 8).unwrap();
        let z = a.alloc(10, 8).unwrap();
        assert_eq!(x, 0);
        assert_eq!(y, 128);
        assert!(z >= y + 1000);
        assert_eq!(a.free(y), Some(1024));
        assert_eq!(a.alloc(500, 8).unwrap(), y, "freed space is reused first-fit");
        assert_eq!(a.free(x), Some(128));
        assert_eq!(a.free(x), None, "double free is detected");
        a.free(y).unwrap();
        a.free(z).unwrap();
        assert_eq!(a.free_total(), 1 << 20);
        assert_eq!(a.largest_free(), 1 << 20, "everything merged back");
    }

    #[test]
    fn alignment() {
        let mut a = SymAllocator::new(1 << 20);
        a.alloc(8, 8).unwrap();
        let b = a.alloc(64, 4096).unwrap();
        assert_eq!(b % 4096, 0);
        let c = a.alloc(8, 8).unwrap();
        assert_eq!(c, 64, "the gap before an aligned block is still usable");
    }

    #[test]
    fn exhaustion() {
        let mut a = SymAllocator::new(4096);
        let x = a.alloc(4096, 8).unwrap();
        let e = a.alloc(1, 8).unwrap_err();
        assert_eq!(e.free_total, 0);
        a.free(x);
        let e = a.alloc(5000, 8).unwrap_err();
        assert_eq!((e.requested, e.free_total, e.largest_free), (5000, 4096, 4096));
        assert!(a.alloc(usize::MAX - 3, 8).is_err());
    }

    #[test]
    fn deterministic() {
        let run = || {
            let mut a = SymAllocator::new(1 << 16);
            let mut out = vec![];
            let mut live = vec![];
            for i in 1..200usize {
                if i % 3 == 0 && !live.is_empty() {
                    let off = live.remove((i * 7) % live.len());
                    a.free(off);
                } else if let Ok(o) = a.alloc((i * 37) % 700 + 1, 1 << (i % 8)) {
                    out.push(o);
                    live.push(o);
                }
            }
            out
        };
        assert_eq!(run(), run());
    }

    #[test]
    fn resize() {
        let mut a = SymAllocator::new(1 << 16);
        let x = a.alloc(64, 8).unwrap();
        assert!(a.resize_in_place(x, 1000));
        assert_eq!(a.block_len(x), Some(1024));
        let y = a.alloc(64, 8).unwrap();
        assert!(!a.resize_in_place(x, 2000), "blocked by y");
        assert!(a.resize_in_place(x, 100));
        assert_eq!(a.block_len(x), Some(128));
        let z = a.alloc(500, 8).unwrap();
        assert_eq!(z, 128, "shrunk tail reused");
        a.free(y);
        a.free(z);
        a.free(x);
        assert_eq!(a.largest_free(), 1 << 16);
    }
}
