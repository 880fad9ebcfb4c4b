//! Plain types shared by the layers: atomic operations and team shapes.

pub use ishmem_proxy_abi::AmoOp;

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
