//! Teams (OpenSHMEM 1.5 §9.4).
//!
//! A team is a strided set of world PEs (`start + i * stride`, `i <
//! size`, any non-zero stride, or stride 0 for a one-PE team) plus a slot:
//! an index into every member's table of [`TeamCtrl`] records in the control
//! segment, where the team's barrier flags and small collective values live.
//! The handle a program sees is the slot number, the same on every member.
//!
//! Creation is collective over the parent: members publish their used-slot
//! bitmaps, sync, OR them and take the lowest slot free on every parent
//! member (teams created in the same call, such as the rows of
//! `split_2d`, are disjoint and share that slot number). The new team's
//! sync epoch starts at the highest epoch any member left on the slot, so a
//! reused slot never sees stale flags. No process outside the team is
//! involved.
//!
//! [`TeamCtrl`]: crate::ctrl::TeamCtrl

use crate::core::State;
use crate::ctrl::TEAM_SLOTS;
use crate::error::{fatal, warn};
use crate::transport::AmoOp;
use crate::wait::wait_until;
use std::sync::atomic::{fence, AtomicU64, Ordering};

/// Predefined team handles (Intel SHMEM's values).
pub const TEAM_WORLD: i32 = 0;
pub const TEAM_SHARED: i32 = 1;
pub const TEAM_NODE: i32 = 2;
pub const TEAM_INVALID: i32 = -1;
/// Slots 0..PREDEFINED are the predefined teams.
pub const PREDEFINED: usize = 3;

/// A team as this PE knows it.
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

impl State {
    /// The team behind `handle`; `None` for `TEAM_INVALID`; a fatal error
    /// for anything else that is not a live team on this PE.
    pub fn team(&self, call: &str, handle: i32) -> Option<Team> {
        if handle == TEAM_INVALID {
            return None;
        }
        let teams = self.teams.read().unwrap_or_else(|e| e.into_inner());
        match usize::try_from(handle).ok().and_then(|h| teams.get(h).copied().flatten()) {
            Some(t) => Some(t),
            None => fatal(
                call,
                format_args!("team handle {handle} is not a team this PE belongs to (destroyed, or never created)"),
            ),
        }
    }

    /// Mirrors a team slot into the device-visible table.
    fn publish_device_team(&self, slot: usize, t: Option<&Team>) {
        let (a, b) = match t {
            Some(t) => (
                (t.start as u32 as u64) | ((t.stride as i32 as u32 as u64) << 32),
                (t.size as u32 as u64) | ((t.my_rank as u32 as u64) << 32),
            ),
            None => (0, 0),
        };
        self.device_teams[2 * slot].store(a, Ordering::Release);
        self.device_teams[2 * slot + 1].store(b, Ordering::Release);
    }

    pub(crate) fn install_predefined_teams(&self) {
        let world = Team { slot: 0, start: 0, stride: 1, size: self.n_pes, my_rank: self.my_pe, num_contexts: 0 };
        // SHARED and NODE: the PEs this one shares memory with. Teams are
        // strided sets; a node whose PEs are not one (an irregular rank
        // placement) gets a team of this PE alone, with a warning.
        let node = &self.node_pes;
        let stride = if node.len() > 1 { node[1] as isize - node[0] as isize } else { 1 };
        let strided = node.windows(2).all(|w| w[1] as isize - w[0] as isize == stride);
        let local = if strided {
            Team {
                slot: 0,
                start: node[0],
                stride,
                size: node.len(),
                my_rank: node.iter().position(|&p| p == self.my_pe).unwrap_or(0),
                num_contexts: 0,
            }
        } else {
            if node[0] == self.my_pe {
                warn(format_args!(
                    "the PEs of this node ({node:?}) are not a strided set: SHMEM_TEAM_SHARED and ISHMEMX_TEAM_NODE hold only the calling PE"
                ));
            }
            Team { slot: 0, start: self.my_pe, stride: 1, size: 1, my_rank: 0, num_contexts: 0 }
        };
        let mut teams = self.teams.write().unwrap();
        for slot in 0..PREDEFINED {
            let t = if slot == 0 { world } else { local };
            teams[slot] = Some(Team { slot, ..t });
            self.publish_device_team(slot, teams[slot].as_ref());
        }
    }

    /// World team.
    pub fn world_team(&self) -> Team {
        self.teams.read().unwrap_or_else(|e| e.into_inner())[0].expect("world team exists while running")
    }

    /// Stores `v` into control word `word` of PE `pe`'s record: directly
    /// on this node, through the proxy (an AMO the target applies with a
    /// CPU atomic, after this PE's earlier operations to it complete)
    /// otherwise.
    pub(crate) fn ctrl_store(&self, call: &str, pe: usize, word: &AtomicU64, v: u64) {
        if self.is_local(pe) {
            word.store(v, Ordering::Release);
        } else {
            let off = word as *const AtomicU64 as usize - self.ctrl.base() as usize;
            let p = self.proxy_for(call, pe);
            p.amo(call, ishmem_proxy_abi::REGION_CTRL, pe, off, 8, AmoOp::Set as u32, v, 0, true);
        }
    }

    /// A device team sync's flag store to `pe`, which the device cannot
    /// reach (the ring's `RING_CTRL_SET`): `addr` is the flag's address in
    /// this node's control segment. Like the host's sync, this PE's
    /// outstanding operations complete first.
    pub(crate) fn device_ctrl_set(&self, call: &str, pe: i32, addr: usize, value: u64) {
        let pe = self.check_pe(call, pe);
        let word = self.device_ctrl_word(call, addr);
        if let Some(p) = self.proxy {
            p.flush(call, None);
        }
        self.ctrl_store(call, pe, word, value);
    }

    /// A device collective's read of team-sync scratch word `addr` (its
    /// address in this node's control segment) of `pe`, which the device
    /// cannot reach (the ring's `RING_CTRL_GET`).
    pub(crate) fn device_ctrl_get(&self, call: &str, pe: i32, addr: usize) -> u64 {
        let pe = self.check_pe(call, pe);
        let word = self.device_ctrl_word(call, addr);
        self.ctrl_load(call, pe, word)
    }

    /// The control word at device-supplied address `addr`, checked to lie
    /// in the control segment and aligned.
    fn device_ctrl_word(&self, call: &str, addr: usize) -> &AtomicU64 {
        let base = self.ctrl.base() as usize;
        let end = base + crate::ctrl::ctrl_size(self.n_pes);
        if addr < base || addr + 8 > end || addr % 8 != 0 {
            fatal(call, format_args!("device control word address {addr:#x} is not in the control segment"))
        }
        // SAFETY: checked inside the mapped control segment and aligned.
        unsafe { &*(addr as *const AtomicU64) }
    }

    /// Reads control word `word` of PE `pe`'s record (a value that does not
    /// change while it is read).
    pub(crate) fn ctrl_load(&self, call: &str, pe: usize, word: &AtomicU64) -> u64 {
        if self.is_local(pe) {
            word.load(Ordering::Acquire)
        } else {
            let off = word as *const AtomicU64 as usize - self.ctrl.base() as usize;
            let p = self.proxy_for(call, pe);
            let mut v = 0u64;
            // SAFETY: an 8-byte word inside the control region.
            unsafe { p.get(call, ishmem_proxy_abi::REGION_CTRL, pe, off, &mut v as *mut u64 as *mut u8, 8, false) };
            v
        }
    }

    /// Synchronizes the members of `team` (dissemination: ceil(log2 size)
    /// rounds, each one flag store to a member and one wait). Through the
    /// proxy, this PE's outstanding operations are completed first, so the
    /// data phases of collectives are complete when a sync returns.
    pub fn team_sync_with(&self, team: &Team) {
        const CALL: &str = "team sync";
        let n = team.size;
        // Requests this PE's kernels posted complete before this sync's
        // flag stores (see `ring::drain`).
        crate::ring::drain(self.ring());
        if n > 1 {
            if let Some(p) = self.proxy {
                p.flush(CALL, None);
            }
        }
        let mine = &self.ctrl.pe(self.my_pe).teams[team.slot];
        let epoch = mine.epoch.load(Ordering::Relaxed) + 1;
        mine.epoch.store(epoch, Ordering::Relaxed);
        let mut dist = 1usize;
        let mut round = 0usize;
        while dist < n {
            let to = team.world((team.my_rank + dist) % n);
            self.ctrl_store(CALL, to, &self.ctrl.pe(to).teams[team.slot].barrier[round], epoch);
            let flag = &mine.barrier[round];
            wait_until(|| flag.load(Ordering::Acquire) >= epoch);
            dist <<= 1;
            round += 1;
        }
        fence(Ordering::SeqCst);
    }

    /// The sync epoch the next `team_sync_with(team)` will use.
    pub(crate) fn next_epoch(&self, team: &Team) -> u64 {
        self.ctrl.pe(self.my_pe).teams[team.slot].epoch.load(Ordering::Relaxed) + 1
    }

    /// Publishes `value` for the next sync of `team` (readable by members
    /// after it, until the sync after that).
    pub(crate) fn publish_scratch(&self, team: &Team, value: u64) {
        let e = self.next_epoch(team);
        self.ctrl.pe(self.my_pe).teams[team.slot].scratch[(e % 2) as usize].store(value, Ordering::Release);
    }

    /// Reads what member `rank` published for the sync that just completed.
    pub(crate) fn read_scratch(&self, team: &Team, rank: usize) -> u64 {
        let e = self.ctrl.pe(self.my_pe).teams[team.slot].epoch.load(Ordering::Relaxed);
        let pe = team.world(rank);
        self.ctrl_load("team collective", pe, &self.ctrl.pe(pe).teams[team.slot].scratch[(e % 2) as usize])
    }

    /// Creates teams collectively over `parent`: every parent member passes
    /// the shape of the new team it belongs to, or `None`. Returns this PE's
    /// new handle (`TEAM_INVALID` when not a member), or `Err` with a message
    /// when no slot is free on every parent member.
    pub(crate) fn create_teams(&self, parent: &Team, mine: Option<Shape>, num_contexts: i32) -> Result<i32, String> {
        let used: u64 = {
            let teams = self.teams.read().unwrap_or_else(|e| e.into_inner());
            teams.iter().enumerate().filter(|(_, t)| t.is_some()).fold(0, |m, (i, _)| m | 1 << i)
        };
        self.publish_scratch(parent, used);
        self.team_sync_with(parent);
        let all_used = (0..parent.size).fold(0u64, |m, r| m | self.read_scratch(parent, r));
        let slot = (PREDEFINED..TEAM_SLOTS).find(|s| all_used & (1 << s) == 0);
        let base = match (slot, mine) {
            (Some(s), Some(shape)) => (0..shape.size)
                .map(|r| {
                    let pe = (shape.start as isize + r as isize * shape.stride) as usize;
                    self.ctrl_load("team creation", pe, &self.ctrl.pe(pe).teams[s].epoch)
                })
                .max()
                .unwrap_or(0),
            _ => 0,
        };
        // Everyone has read the bitmaps and epochs before anyone moves on.
        self.team_sync_with(parent);
        let Some(slot) = slot else {
            return Err(format!(
                "no free team slot: all {TEAM_SLOTS} are in use on some PE of the parent team (destroy unused teams)"
            ));
        };
        let Some(shape) = mine else { return Ok(TEAM_INVALID) };
        self.ctrl.pe(self.my_pe).teams[slot].epoch.store(base, Ordering::Relaxed);
        let team = Team {
            slot,
            start: shape.start,
            stride: shape.stride,
            size: shape.size,
            my_rank: shape.my_rank,
            num_contexts,
        };
        self.teams.write().unwrap_or_else(|e| e.into_inner())[slot] = Some(team);
        self.publish_device_team(slot, Some(&team));
        Ok(slot as i32)
    }

    /// `team_split_strided` (§9.4.6): members are parent ranks `start +
    /// i * stride`, `i < size`. Returns (status, new handle).
    pub fn team_split_strided(
        &self, call: &str, parent: i32, start: i32, stride: i32, size: i32, num_contexts: i32,
    ) -> (i32, i32) {
        let Some(p) = self.team(call, parent) else { return (-1, TEAM_INVALID) };
        let last = start as i64 + (size as i64 - 1) * stride as i64;
        let ok = size >= 1
            && start >= 0
            && (start as usize) < p.size
            && last >= 0
            && (last as usize) < p.size
            && (stride != 0 || size == 1);
        if !ok {
            warn(format_args!(
                "{call}: start {start}, stride {stride}, size {size} do not describe PEs of the parent team (size {})",
                p.size
            ));
            // Still collective: the parent members must not diverge.
            self.team_sync_with(&p);
            return (-1, TEAM_INVALID);
        }
        let stride_world = stride as isize * p.stride;
        let start_world = p.world(start as usize);
        let shape =
            Team { slot: 0, start: start_world, stride: stride_world, size: size as usize, my_rank: 0, num_contexts }
                .rank_of(self.my_pe)
                .map(|r| Shape { start: start_world, stride: stride_world, size: size as usize, my_rank: r });
        match self.create_teams(&p, shape, num_contexts) {
            Ok(h) => (0, h),
            Err(m) => {
                warn(format_args!("{call}: {m}"));
                (-1, TEAM_INVALID)
            }
        }
    }

    /// `team_split_2d` (§9.4.7): the parent as a grid with `xrange` columns;
    /// every parent member joins its row (x-axis team) and its column
    /// (y-axis team). Returns (status, x handle, y handle).
    pub fn team_split_2d(&self, call: &str, parent: i32, xrange: i32, num_contexts: (i32, i32)) -> (i32, i32, i32) {
        let Some(p) = self.team(call, parent) else { return (-1, TEAM_INVALID, TEAM_INVALID) };
        if xrange <= 0 {
            warn(format_args!("{call}: xrange {xrange} must be positive"));
            self.team_sync_with(&p);
            return (-1, TEAM_INVALID, TEAM_INVALID);
        }
        let n = p.size;
        let xr = (xrange as usize).min(n);
        let r = p.my_rank;
        let row_start = r / xr * xr;
        let x =
            Shape { start: p.world(row_start), stride: p.stride, size: xr.min(n - row_start), my_rank: r - row_start };
        let col = r % xr;
        let y = Shape {
            start: p.world(col),
            stride: p.stride * xr as isize,
            size: (n - col).div_ceil(xr),
            my_rank: r / xr,
        };
        let xh = self.create_teams(&p, Some(x), num_contexts.0);
        let yh = self.create_teams(&p, Some(y), num_contexts.1);
        match (xh, yh) {
            (Ok(xh), Ok(yh)) => (0, xh, yh),
            (xh, yh) => {
                for h in [&xh, &yh].into_iter().flatten() {
                    self.drop_team(*h);
                }
                let m = xh.err().or(yh.err()).unwrap_or_default();
                warn(format_args!("{call}: {m}"));
                (-1, TEAM_INVALID, TEAM_INVALID)
            }
        }
    }

    fn drop_team(&self, handle: i32) {
        if handle >= PREDEFINED as i32 {
            self.teams.write().unwrap_or_else(|e| e.into_inner())[handle as usize] = None;
            self.publish_device_team(handle as usize, None);
        }
    }

    /// `team_destroy` (§9.4.9): collective over the team; the slot is free
    /// for reuse afterwards.
    pub fn team_destroy(&self, call: &str, handle: i32) {
        let Some(t) = self.team(call, handle) else { return };
        if t.slot < PREDEFINED {
            fatal(call, format_args!("team {handle} is a predefined team and cannot be destroyed"))
        }
        self.quiet();
        self.team_sync_with(&t);
        self.drop_team(handle);
    }

    /// `team_translate_pe` (§9.4.5): `src_pe` of `src` as a rank of `dest`,
    /// or -1.
    pub fn team_translate_pe(&self, call: &str, src: i32, src_pe: i32, dest: i32) -> i32 {
        let (Some(s), Some(d)) = (self.team(call, src), self.team(call, dest)) else { return -1 };
        if src_pe < 0 || src_pe as usize >= s.size {
            return -1;
        }
        d.rank_of(s.world(src_pe as usize)).map_or(-1, |r| r as i32)
    }

    /// `team_ptr` (§9.4.10): load/store address of `addr` on team rank `pe`.
    pub fn team_ptr(&self, call: &str, handle: i32, addr: *const u8, pe: i32) -> *mut u8 {
        let Some(t) = self.team(call, handle) else { return std::ptr::null_mut() };
        if pe < 0 || pe as usize >= t.size {
            fatal(call, format_args!("PE {pe} is out of range for team {handle} of {} PEs", t.size))
        }
        self.ptr(call, addr, t.world(pe as usize) as i32)
    }
}
