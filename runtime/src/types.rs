//! Plain types shared by the layers: the requests an operation passes down
//! (an atomic on a word, a block-strided transfer) and team shapes.

pub use ishmem_proxy_abi::AmoOp;

/// One atomic operation on a naturally aligned word of `size` bytes (1, 2,
/// 4 or 8), as it goes down the layers: the router, the remote seam, the
/// device's atomics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Amo {
    pub op: AmoOp,
    pub size: usize,
    /// The operand, in the word's low bits.
    pub operand: u64,
    /// The compare value of `CompareSwap` (ignored by the other ops).
    pub cond: u64,
}

/// The shape of a block-strided transfer (`iput`, `ibget`, strided
/// `alltoalls`): `nblocks` blocks of `bsize` elements of `elem` bytes;
/// block `b` starts at element `b * dst` of the destination and element
/// `b * sst` of the source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Blocks {
    pub elem: usize,
    pub bsize: usize,
    pub nblocks: usize,
    /// Destination stride, in elements.
    pub dst: isize,
    /// Source stride, in elements.
    pub sst: isize,
}

impl Blocks {
    /// Bytes of one block.
    #[inline(always)]
    pub fn block_bytes(&self) -> usize {
        self.bsize * self.elem
    }

    /// Byte offsets of block `b` from the destination's and the source's
    /// start.
    #[inline(always)]
    pub fn offsets(&self, b: usize) -> (isize, isize) {
        let (b, elem) = (b as isize, self.elem as isize);
        (b * self.dst * elem, b * self.sst * elem)
    }
}

impl Amo {
    /// `op` with `operand` on a `size`-byte word (no compare value).
    #[inline(always)]
    pub const fn new(op: AmoOp, size: usize, operand: u64) -> Amo {
        Amo { op, size, operand, cond: 0 }
    }
}

/// Predefined team handles (Intel SHMEM's values).
pub const TEAM_WORLD: i32 = 0;
pub const TEAM_SHARED: i32 = 1;
pub const TEAM_NODE: i32 = 2;
pub const TEAM_INVALID: i32 = -1;
/// Slots 0..PREDEFINED are the predefined teams.
pub const PREDEFINED: usize = 3;

/// A team as this PE knows it: a strided set of world PEs (`start + i *
/// stride`, `i < size`) and the slot its synchronization state lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Team {
    pub slot: usize,
    /// World PE of team rank 0.
    pub start: usize,
    /// World-PE distance between consecutive ranks.
    pub stride: isize,
    pub size: usize,
    /// This PE's rank in the team.
    pub my_rank: usize,
    /// `num_contexts` from the creation config (§9.4.3).
    pub num_contexts: i32,
}

impl Team {
    /// World PE of team rank `rank`.
    #[inline]
    pub fn world(&self, rank: usize) -> usize {
        (self.start as isize + rank as isize * self.stride) as usize
    }

    /// Team rank of world PE `pe`, if it is a member.
    pub fn rank_of(&self, pe: usize) -> Option<usize> {
        let d = pe as isize - self.start as isize;
        if self.stride == 0 {
            return (d == 0).then_some(0);
        }
        if d % self.stride != 0 {
            return None;
        }
        let r = d / self.stride;
        (r >= 0 && (r as usize) < self.size).then_some(r as usize)
    }
}

/// A new team's shape, as one member computes it.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub start: usize,
    pub stride: isize,
    pub size: usize,
    pub my_rank: usize,
}

/// A member's bookkeeping of the small collectives of one group (a team,
/// or a pSync array with an active set; see `stage.rs`): the epoch of its
/// last call, its horizon (every member has completed its calls below
/// it), and the last epoch up to which it compared its predecessor's calls
/// with its own.
#[derive(Default, Clone, Copy, Debug)]
pub struct Marks {
    pub epoch: u64,
    pub horizon: u64,
    pub checked: u64,
}

/// [`Marks`] of one (pSync, active set) pair, kept by the process (see
/// `activeset.rs`); written only by the thread making the pair's calls.
#[derive(Default, Debug)]
pub struct SetMarks {
    pub epoch: std::sync::atomic::AtomicU64,
    pub horizon: std::sync::atomic::AtomicU64,
    pub checked: std::sync::atomic::AtomicU64,
}

/// Key of a (pSync, active set): pSync offset and the set's two key words
/// (start and size, stride).
pub type SetKey = (usize, (u64, u64));
