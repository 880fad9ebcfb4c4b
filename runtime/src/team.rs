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

use crate::collsig::Sig;
use crate::ctrl::{Awaits, STAGED_TEAMS, STAGE_SLOTS, TEAM_SLOTS};
use crate::device_state::ishmemx_device_team_t;
use crate::error::{fatal, warn};
use crate::state::State;
use crate::wait::wait_until_in;
use std::sync::atomic::{fence, Ordering};

pub use crate::types::{Shape, Team, PREDEFINED, TEAM_INVALID, TEAM_NODE, TEAM_SHARED, TEAM_WORLD};

/// How messages name the team of slot `slot`.
pub(crate) fn slot_name(slot: usize) -> String {
    match slot {
        0 => "the world team".to_string(),
        1 => "the shared team".to_string(),
        2 => "the node team".to_string(),
        s => format!("team slot {s}"),
    }
}

/// Team creation found no team slot free on every member of the parent.
#[derive(Debug)]
pub(crate) struct NoFreeTeamSlot;

impl std::fmt::Display for NoFreeTeamSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "no free team slot: all {TEAM_SLOTS} are in use on some PE of the parent team (destroy unused teams)")
    }
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
        let [a, b] = t.map_or([0, 0], |t| {
            ishmemx_device_team_t {
                start: t.start as i32,
                stride: t.stride as i32,
                size: t.size as i32,
                my_rank: t.my_rank as i32,
            }
            .words()
        });
        self.device_teams[2 * slot].store(a, Ordering::Release);
        self.device_teams[2 * slot + 1].store(b, Ordering::Release);
        // A device that keeps its own copy of the table updates it.
        if let Err(e) = self.device.teams_changed() {
            fatal("ishmem team table", format_args!("{e}"))
        }
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

    /// Synchronizes the members of `team` (dissemination: ceil(log2 size)
    /// rounds, each one flag store to a member and one wait). Through the
    /// proxy, this PE's outstanding operations are completed first, so the
    /// data phases of collectives are complete when a sync returns.
    pub fn team_sync_with(&self, team: &Team) {
        let e = self.next_epoch(team);
        self.ctrl.pe(self.my_pe).teams[team.slot].epoch.store(e, Ordering::Relaxed);
        self.team_sync_watch("a collective's sync", team, e, None)
    }

    /// [`State::team_sync_with`] at `epoch` (already this PE's epoch on the
    /// slot); with `watch` (this call's signature word
    /// 0), a long wait for the predecessor's flag also looks at its stage
    /// header: a member that made a staged call here instead never stores
    /// the flag, and this PE reports the mismatch instead of waiting.
    fn team_sync_watch(&self, call: &str, team: &Team, epoch: u64, watch: Option<u64>) {
        const CALL: &str = "team sync";
        let n = team.size;
        // Requests this PE's kernels posted complete before this sync's
        // flag stores (see `ring::drain`).
        crate::ring::drain(self.ring());
        if n > 1 {
            self.route.flush(CALL, None);
        }
        let mine = &self.ctrl.pe(self.my_pe).teams[team.slot];
        let mut dist = 1usize;
        let mut round = 0usize;
        while dist < n {
            let to = team.world((team.my_rank + dist) % n);
            self.route.ctrl_store(CALL, to, &self.ctrl.pe(to).teams[team.slot].barrier[round], epoch);
            let flag = &mine.barrier[round];
            let from = team.world((team.my_rank + n - dist % n) % n);
            let what = || {
                format!("{call} (the sync of {}, {n} PEs, round {round}: waits for PE {from})", slot_name(team.slot))
            };
            let awaits = Some(Awaits { slot: team.slot, pe: from });
            match watch {
                Some(w) if round == 0 => {
                    let pred = team.world((team.my_rank + n - 1) % n);
                    let hdr = &self.ctrl.stage(pred, team.slot, (epoch % STAGE_SLOTS as u64) as usize).word0;
                    let mut polls = 0u32;
                    wait_until_in(&what, awaits, || {
                        if flag.load(Ordering::Acquire) >= epoch {
                            return true;
                        }
                        polls = polls.wrapping_add(1);
                        if polls.is_multiple_of(1024) {
                            let v = hdr.load(Ordering::Acquire);
                            if v != w && Sig::same_epoch(v, epoch) {
                                self.collective_mismatch_at(CALL, team, None, epoch);
                            }
                        }
                        false
                    })
                }
                _ => wait_until_in(&what, awaits, || flag.load(Ordering::Acquire) >= epoch),
            }
            dist <<= 1;
            round += 1;
        }
        fence(Ordering::SeqCst);
        // Every member has entered this sync: all their calls below it are
        // complete, so stage slots used below it may be rewritten.
        mine.horizon.store(epoch, Ordering::Relaxed);
    }

    /// Whether `team`'s small collectives take the publish-and-pull path
    /// (`stage.rs`): a team slot with stage slots, every member mapped here.
    /// Every member decides alike.
    pub(crate) fn team_staged(&self, team: &Team) -> bool {
        team.size > 1 && team.slot < STAGED_TEAMS && self.route.all_mapped((0..team.size).map(|r| team.world(r)))
    }

    /// Synchronizes `team` for the collective call `sig`, checking (unless
    /// `ISHMEM_COLL_CHECK=0`) that every member made the same call with the
    /// same arguments: word 0 of the signature goes to the successor with
    /// this sync's first flag, and after the sync this PE compares the one
    /// its predecessor pushed (see `collsig.rs`). A mismatch
    /// ends the job with a report of every member's call.
    pub(crate) fn team_sync_sig(&self, call: &str, team: &Team, sig: Sig) {
        let check = team.size > 1 && self.config.coll_check;
        let staged = self.team_staged(team);
        let mine = &self.ctrl.pe(self.my_pe).teams[team.slot];
        let epoch = if staged {
            // The header goes into a stage slot, for members whose call here
            // is a staged one (they compare it) and for a mismatch report.
            // The predecessor's earlier calls are compared first: after this
            // sync it may rewrite their headers.
            let s = self.stage_enter(call, team, sig, true);
            let slot = self.ctrl.stage(self.my_pe, team.slot, (s.epoch % STAGE_SLOTS as u64) as usize);
            for (w, v) in slot.sig.iter().zip(&s.words[1..]) {
                w.store(*v, Ordering::Relaxed);
            }
            slot.word0.store(s.words[0], Ordering::Release);
            s.epoch
        } else {
            let e = self.next_epoch(team);
            mine.epoch.store(e, Ordering::Relaxed);
            e
        };
        let par = (epoch % 2) as usize;
        let words = sig.words(epoch);
        if check {
            // The whole signature stays here for a report; word 0 goes to
            // the successor (this sync's round-0 partner), on the line of
            // the flag this PE stores there next. Through a proxy it lands
            // before that flag: the sync's flush completes it (a host
            // OpenSHMEM library's quiet), or both are messages to that PE,
            // applied in the order sent (the MPI proxy).
            for (w, v) in mine.sig[par].iter().zip(words).skip(1) {
                w.store(v, Ordering::Relaxed);
            }
            mine.sig[par][0].store(words[0], Ordering::Release);
            let next = team.world((team.my_rank + 1) % team.size);
            self.route.ctrl_store(call, next, &self.ctrl.pe(next).teams[team.slot].sig_in[par], words[0]);
        }
        self.team_sync_watch(call, team, epoch, (check && staged).then_some(words[0]));
        if check {
            // The predecessor pushed before its round-0 flag store, which
            // this sync waited for.
            let mut got = mine.sig_in[par].load(Ordering::Acquire);
            if !Sig::same_epoch(got, epoch) && staged {
                // Its push was overwritten (it is ahead) or it made a
                // staged call here: its stage header has this epoch's call.
                let pred = team.world((team.my_rank + team.size - 1) % team.size);
                got = self
                    .ctrl
                    .stage(pred, team.slot, (epoch % STAGE_SLOTS as u64) as usize)
                    .word0
                    .load(Ordering::Acquire);
            }
            if got != words[0] && Sig::same_epoch(got, epoch) {
                self.collective_mismatch(call, team, sig, epoch);
            }
            if staged {
                mine.checked.store(epoch, Ordering::Relaxed);
            }
        }
    }

    /// Reports members of `team` whose call at sync `epoch` differs from
    /// this PE's `mine`, and ends the job.
    #[cold]
    pub(crate) fn collective_mismatch(&self, call: &str, team: &Team, mine: Sig, epoch: u64) -> ! {
        self.collective_mismatch_at(call, team, Some(mine), epoch)
    }

    /// As [`State::collective_mismatch`]; `mine` is `None` when this PE's
    /// own call is read back from its slot.
    #[cold]
    pub(crate) fn collective_mismatch_at(&self, call: &str, team: &Team, mine: Option<Sig>, epoch: u64) -> ! {
        // Every member is inside this call or past it, and none can rewrite
        // what it published for it before this PE moves on: its sync words
        // (sync epoch parity) or, on a staged team, its stage slot for
        // this epoch (rewritten only above the horizon).
        let staged = self.team_staged(team);
        let published = |pe: usize| -> Option<Sig> {
            // A sync's call, the host's or the device's (device syncs
            // through the control segment publish here only).
            let sig = &self.ctrl.pe(pe).teams[team.slot].sig[(epoch % 2) as usize];
            let synced = || -> [u64; 4] { std::array::from_fn(|k| self.route.ctrl_load(call, pe, &sig[k])) };
            let w = synced();
            if Sig::same_epoch(w[0], epoch) {
                return Sig::from_words(w);
            }
            let w: [u64; 4] = if staged {
                let slot = self.ctrl.stage(pe, team.slot, (epoch % STAGE_SLOTS as u64) as usize);
                // A staged call is reported as soon as one slot differs: give
                // members that have not published yet a moment to arrive
                // (in a stage slot, or, a device sync, in the sync words).
                let t0 = std::time::Instant::now();
                let mut w0 = slot.word0.load(Ordering::Acquire);
                while (epoch as u32).wrapping_sub((w0 >> 32) as u32) as i32 > 0 && t0.elapsed().as_millis() < 500 {
                    std::thread::sleep(std::time::Duration::from_micros(100));
                    let w = synced();
                    if Sig::same_epoch(w[0], epoch) {
                        return Sig::from_words(w);
                    }
                    w0 = slot.word0.load(Ordering::Acquire);
                }
                std::array::from_fn(|k| if k == 0 { w0 } else { slot.sig[k - 1].load(Ordering::Relaxed) })
            } else {
                w
            };
            if Sig::same_epoch(w[0], epoch) {
                Sig::from_words(w)
            } else {
                None
            }
        };
        let mine = mine.or_else(|| published(self.my_pe));
        let mut groups: Vec<(Option<Sig>, Vec<usize>)> = vec![(mine, Vec::new())];
        for r in 0..team.size {
            let pe = team.world(r);
            let sig = if pe == self.my_pe { mine } else { published(pe) };
            match groups.iter_mut().find(|g| g.0 == sig) {
                Some(g) => g.1.push(pe),
                None => groups.push((sig, vec![pe])),
            }
        }
        let name = slot_name(team.slot);
        let mut msg = format!(
            "the members of {name} ({} PEs) made different collective calls (every member must make the same call with the same arguments):",
            team.size
        );
        let sigs: Vec<Sig> = groups.iter().filter_map(|g| g.0).collect();
        let forms = sigs.iter().any(|a| sigs.iter().any(|b| a.differs_in_form_only(b)));
        for (sig, pes) in &groups {
            let what = match sig {
                Some(s) if forms => s.describe_form(),
                Some(s) => s.describe(),
                None => {
                    "no collective call recorded at this point (not reached yet, or a device call syncing through GPU memory)".into()
                }
            };
            let label = if pes.len() == 1 { "PE" } else { "PEs" };
            msg.push_str(&format!("\n    {label} {}: {what}", crate::collsig::pe_list(pes)));
        }
        if forms {
            msg.push_str(
                "\n    (one call in different forms: the host's reductions below 2048 bytes and its scans take forms of their own, which a call in kernels does not take, and an in-place call among them does not match one that is not in place: make every member's call alike, on the host or in kernels)",
            );
        }
        msg.push_str("\n    (ISHMEM_COLL_CHECK=0 turns this check off)");
        // Several members may find the mismatch: one reports, the job ends.
        crate::wait::report_once(call, format_args!("{msg}"))
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
        self.route.ctrl_load("team collective", pe, &self.ctrl.pe(pe).teams[team.slot].scratch[(e % 2) as usize])
    }

    /// Creates teams collectively over `parent`: every parent member passes
    /// the shape of the new team it belongs to, or `None`. Returns this PE's
    /// new handle (`TEAM_INVALID` when not a member), or
    /// [`NoFreeTeamSlot`] when no slot is free on every parent member.
    pub(crate) fn create_teams(
        &self, call: &str, sig: Sig, parent: &Team, mine: Option<Shape>, num_contexts: i32,
    ) -> Result<i32, NoFreeTeamSlot> {
        let used: u64 = {
            let teams = self.teams.read().unwrap_or_else(|e| e.into_inner());
            teams.iter().enumerate().filter(|(_, t)| t.is_some()).fold(0, |m, (i, _)| m | 1 << i)
        };
        self.publish_scratch(parent, used);
        self.team_sync_sig(call, parent, sig);
        let all_used = (0..parent.size).fold(0u64, |m, r| m | self.read_scratch(parent, r));
        let slot = (PREDEFINED..TEAM_SLOTS).find(|s| all_used & (1 << s) == 0);
        let base = match (slot, mine) {
            (Some(s), Some(shape)) => (0..shape.size)
                .map(|r| {
                    let pe = (shape.start as isize + r as isize * shape.stride) as usize;
                    self.route.ctrl_load("team creation", pe, &self.ctrl.pe(pe).teams[s].epoch)
                })
                .max()
                .unwrap_or(0),
            _ => 0,
        };
        // Everyone has read the bitmaps and epochs before anyone moves on.
        self.team_sync_with(parent);
        let Some(slot) = slot else { return Err(NoFreeTeamSlot) };
        let Some(shape) = mine else { return Ok(TEAM_INVALID) };
        let rec = &self.ctrl.pe(self.my_pe).teams[slot];
        rec.epoch.store(base, Ordering::Relaxed);
        // The slot's previous team was destroyed (a sync): no member still
        // reads its stage slots.
        rec.horizon.store(base, Ordering::Relaxed);
        rec.checked.store(base, Ordering::Relaxed);
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
            // Still collective: the parent members must not diverge (members
            // that passed other arguments are caught by the check).
            self.team_sync_sig(call, &p, Self::split_sig(start, stride, size));
            return (-1, TEAM_INVALID);
        }
        let stride_world = stride as isize * p.stride;
        let start_world = p.world(start as usize);
        let shape =
            Team { slot: 0, start: start_world, stride: stride_world, size: size as usize, my_rank: 0, num_contexts }
                .rank_of(self.my_pe)
                .map(|r| Shape { start: start_world, stride: stride_world, size: size as usize, my_rank: r });
        match self.create_teams(call, Self::split_sig(start, stride, size), &p, shape, num_contexts) {
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
            self.team_sync_sig(call, &p, Sig::split_2d(xrange));
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
        let xh = self.create_teams(call, Sig::split_2d(xrange), &p, Some(x), num_contexts.0);
        let yh = self.create_teams(call, Sig::split_2d(xrange), &p, Some(y), num_contexts.1);
        match (xh, yh) {
            (Ok(xh), Ok(yh)) => (0, xh, yh),
            (xh, yh) => {
                for h in [&xh, &yh].into_iter().flatten() {
                    self.drop_team(*h);
                }
                if let Some(m) = xh.err().or(yh.err()) {
                    warn(format_args!("{call}: {m}"));
                }
                (-1, TEAM_INVALID, TEAM_INVALID)
            }
        }
    }

    fn split_sig(start: i32, stride: i32, size: i32) -> Sig {
        // A one-PE team's stride is not used: any value is the same team.
        Sig::split_strided(start, if size == 1 { 0 } else { stride }, size)
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
        self.team_sync_sig(call, &t, Sig::team_destroy());
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
