//! Collectives over teams (OpenSHMEM 1.5 §9.9): broadcast, collect,
//! fcollect, alltoall, alltoalls, reductions, and Intel SHMEM's sum scans.
//!
//! Each collective is: a team sync (inputs ready, outputs free), a parallel
//! data phase in which every member moves its share directly between heaps
//! (load/store for mapped members, the proxy's put/get for members on other
//! nodes: `xput`/`xget`/`xread`), and a team sync (outputs complete, inputs
//! free for reuse). Because both syncs are inside the call, back-to-back collectives
//! on the same buffers need no extra barrier, and no pSync arrays exist.
//! The data phases (see docs/collectives.md for cutovers):
//!
//! * broadcast: every member pulls the root's source into its own dest, in
//!   parallel (one copy per PE instead of n copies by the root);
//! * fcollect / collect: every member pushes its block into every member's
//!   dest (stores, not loads, cross the interconnect); collect first
//!   exchanges counts through the control segment to compute offsets;
//! * alltoall(s): every member pushes block j to member j;
//! * reductions: reduce-scatter + allgather in one pass: member r reduces
//!   slice r of the vector over all members' sources (loads, in fixed member
//!   order, so every PE gets bitwise identical results) in a 16 KiB stack
//!   buffer and stores it into every member's dest. Small vectors (below
//!   `SMALL_REDUCE_BYTES`) are reduced whole by every member instead, which
//!   avoids the n-way scatter of tiny slices;
//! * sum_inscan / sum_exscan: member r sums members 0..=r (0..r) itself.

use crate::collsig::{HostForm, RedOp, Sig};
use crate::ctrl::{Awaits, StageSlot, STAGE_DATA, STAGE_SLOTS};
use crate::state::State;
use crate::types::{Blocks, Marks, Team};
use std::sync::atomic::{AtomicU64, Ordering};

/// Below this many bytes, every member reduces the whole vector itself.
pub const SMALL_REDUCE_BYTES: usize = 2048;
/// Reduction work buffer (on the stack: no allocation per call).
const CHUNK_BYTES: usize = 16 * 1024;

/// A reduction work buffer, aligned for every element type (long double
/// and the complex types need 16 bytes).
#[repr(C, align(64))]
struct Chunk([u8; CHUNK_BYTES]);

impl Chunk {
    fn new() -> Self {
        Chunk([0; CHUNK_BYTES])
    }
}

/// Result of a collective: 0, or non-zero for `TEAM_INVALID` (§9.9).
pub type CollResult = i32;

/// The PEs a collective runs over: a team, or a deprecated active set
/// (`PE_start`, `logPE_stride`, `PE_size` with a pSync array, see
/// `activeset.rs`).
pub trait Group {
    fn size(&self) -> usize;
    fn my_rank(&self) -> usize;
    /// World PE of member `rank`.
    fn world_pe(&self, rank: usize) -> usize;
    /// Waits until every member has arrived.
    fn sync(&self, st: &State);
    /// What a wait of this group's collective for world PE `pe` awaits,
    /// published with it for the deadlock report (teams; active sets have
    /// no slot).
    fn awaits(&self, _pe: usize) -> Option<Awaits> {
        None
    }
    /// The collective's entry sync: [`Group::sync`], after which a team
    /// checks that every member made the call `sig` (see `collsig.rs`).
    /// Active sets have no slot to publish in and only sync.
    fn entry_sync(&self, st: &State, _call: &str, _sig: Sig) {
        self.sync(st)
    }
    /// Publishes a small value for the next sync (readable by members after
    /// it, until the collective ends).
    fn publish(&self, st: &State, v: u64);
    /// What member `rank` published before the last sync.
    fn read(&self, st: &State, rank: usize) -> u64;
    /// Called after the collective's final sync.
    fn done(&self, _st: &State) {}
    /// Whether this group's small collectives take the publish-and-pull
    /// path (`stage.rs`): stage slots for it, every member mapped on this
    /// node. Every member decides alike.
    fn staged(&self, _st: &State) -> bool {
        false
    }
    /// This member's stage bookkeeping (only when `staged`).
    fn stage_marks(&self, _st: &State) -> Marks {
        unreachable!("stage bookkeeping of a group without stage slots")
    }
    fn stage_set_marks(&self, _st: &State, _m: Marks) {}
    /// Member `rank`'s stage slot for `epoch`.
    fn stage_slot<'s>(&self, _st: &'s State, _rank: usize, _epoch: u64) -> &'s StageSlot {
        unreachable!("stage slot of a group without stage slots")
    }
    /// Member `rank`'s progress word.
    fn stage_progress<'s>(&self, _st: &'s State, _rank: usize) -> &'s AtomicU64 {
        unreachable!("stage progress of a group without stage slots")
    }
    /// Member `rank`'s progress in this group, as its progress word
    /// encodes it (an active set may find it beside the word: see
    /// `activeset.rs`).
    fn stage_progress_value(&self, st: &State, rank: usize) -> u64 {
        self.stage_progress(st, rank).load(Ordering::Acquire)
    }
    /// Before a staged call publishes anything (an active set notes in its
    /// pSync array that the array moved to it from another set).
    fn stage_switch(&self, _st: &State) {}
    /// While this member waits in call `epoch` for member `rank`'s slot,
    /// which `not_there` still says is not there: ends the job when that
    /// member has given the stage area to another group (a pSync array
    /// moved to another active set while this member still needed it).
    fn stage_reused(&self, _st: &State, _call: &str, _rank: usize, _epoch: u64, _not_there: &dyn Fn() -> bool) {}
    /// Tag of this group's progress words (0 for a team; a pSync array
    /// may serve several active sets).
    fn stage_tag(&self) -> u32 {
        0
    }
    /// The header words of call `sig` at `epoch`.
    fn stage_words(&self, sig: Sig, epoch: u64) -> [u64; 4] {
        sig.words(epoch)
    }
    /// Whether members compare their calls (the signature check).
    fn stage_check(&self, _st: &State) -> bool {
        false
    }
    /// A member's slot shows another call at `epoch` (`sig`: this PE's, or
    /// `None` to read it back from its slot): reports and ends the job.
    fn stage_mismatch(&self, _st: &State, call: &str, _sig: Option<Sig>, _epoch: u64) -> ! {
        crate::error::fatal(call, format_args!("the members made different collective calls"))
    }
}

impl Group for Team {
    fn size(&self) -> usize {
        self.size
    }
    fn my_rank(&self) -> usize {
        self.my_rank
    }
    fn world_pe(&self, rank: usize) -> usize {
        self.world(rank)
    }
    fn sync(&self, st: &State) {
        st.team_sync_with(self)
    }
    fn awaits(&self, pe: usize) -> Option<Awaits> {
        Some(Awaits { slot: self.slot, pe })
    }
    fn entry_sync(&self, st: &State, call: &str, sig: Sig) {
        st.team_sync_sig(call, self, sig)
    }
    fn publish(&self, st: &State, v: u64) {
        st.publish_scratch(self, v)
    }
    fn read(&self, st: &State, rank: usize) -> u64 {
        st.read_scratch(self, rank)
    }
    fn staged(&self, st: &State) -> bool {
        st.team_staged(self)
    }
    fn stage_marks(&self, st: &State) -> Marks {
        let c = &st.ctrl.pe(st.my_pe).teams[self.slot];
        Marks {
            epoch: c.epoch.load(Ordering::Relaxed),
            horizon: c.horizon.load(Ordering::Relaxed),
            checked: c.checked.load(Ordering::Relaxed),
        }
    }
    fn stage_set_marks(&self, st: &State, m: Marks) {
        let c = &st.ctrl.pe(st.my_pe).teams[self.slot];
        c.epoch.store(m.epoch, Ordering::Relaxed);
        c.horizon.store(m.horizon, Ordering::Relaxed);
        c.checked.store(m.checked, Ordering::Relaxed);
    }
    fn stage_slot<'s>(&self, st: &'s State, rank: usize, epoch: u64) -> &'s StageSlot {
        let k = (epoch % STAGE_SLOTS as u64) as usize;
        st.ctrl.stage(self.world(rank), self.slot, k)
    }
    fn stage_progress<'s>(&self, st: &'s State, rank: usize) -> &'s AtomicU64 {
        st.ctrl.stage_progress(self.world(rank), self.slot)
    }
    fn stage_check(&self, st: &State) -> bool {
        st.config.coll_check
    }
    fn stage_mismatch(&self, st: &State, call: &str, sig: Option<Sig>, epoch: u64) -> ! {
        st.collective_mismatch_at(call, self, sig, epoch)
    }
}

impl State {
    fn coll_team(&self, call: &str, team: i32) -> Option<Team> {
        self.team(call, team)
    }

    /// Copies `len` local bytes to symmetric offset `off` on `pe`: a store
    /// on this node; through the proxy otherwise, complete by the next team
    /// sync (`src` must not change before it unless `blocking`).
    #[inline]
    unsafe fn xput(&self, call: &str, pe: usize, off: usize, src: *const u8, len: usize, blocking: bool) {
        // SAFETY: the caller's contract.
        unsafe { self.route.put(call, pe, off, src, len, !blocking) }
    }

    /// `team_sync` (§9.9.4).
    pub fn team_sync(&self, call: &str, team: i32) -> CollResult {
        match self.coll_team(call, team) {
            Some(t) => {
                self.team_sync_sig(call, &t, Sig::sync());
                0
            }
            None => -1,
        }
    }

    /// `broadcast` (§9.9.6): `nbytes` from `source` on team rank `root` to
    /// `dest` on every member, root included.
    #[allow(clippy::too_many_arguments, reason = "the arguments of the OpenSHMEM routine it implements")]
    pub fn broadcast_in<G: Group>(
        &self, call: &str, t: &G, dest: *mut u8, source: *const u8, nbytes: usize, root: i32, include_root: bool,
    ) -> CollResult {
        if root < 0 || root as usize >= t.size() {
            crate::error::fatal(call, format_args!("PE_root {root} is out of range for a team of {} PEs", t.size()))
        }
        let doff = self.sym_extent(call, "dest", dest, nbytes);
        let soff = self.sym_extent(call, "source", source, nbytes);
        let sig = Sig::broadcast(nbytes, root);
        if nbytes <= STAGE_DATA && t.staged(self) {
            let s = self.stage_enter(call, t, sig, false);
            // SAFETY: both ranges checked.
            unsafe { self.broadcast_staged(call, t, s, doff, soff, nbytes, root as usize, include_root) };
            return 0;
        }
        t.entry_sync(self, call, sig);
        if nbytes > 0 && (include_root || t.my_rank() != root as usize) {
            // SAFETY: both ranges checked inside the heaps; the root's
            // source is not written during the collective.
            unsafe { self.route.get(call, t.world_pe(root as usize), soff, self.mine(doff), nbytes, false) };
        }
        t.sync(self);
        t.done(self);
        0
    }

    /// `fcollect` (§9.9.8): every member's `nbytes` block, concatenated in
    /// rank order, in every member's dest.
    pub fn fcollect_in<G: Group>(
        &self, call: &str, t: &G, dest: *mut u8, source: *const u8, nbytes: usize,
    ) -> CollResult {
        let total = nbytes.saturating_mul(t.size());
        let doff = self.sym_extent(call, "dest", dest, total);
        let soff = self.sym_extent(call, "source", source, nbytes);
        let sig = Sig::fcollect(nbytes);
        if nbytes <= STAGE_DATA && t.staged(self) {
            let s = self.stage_enter(call, t, sig, true);
            // SAFETY: both ranges checked.
            unsafe { self.fcollect_staged(call, t, s, doff, soff, nbytes) };
            return 0;
        }
        t.entry_sync(self, call, sig);
        if nbytes > 0 {
            for k in 0..t.size() {
                let r = (t.my_rank() + k) % t.size();
                // SAFETY: dest range checked; blocks of different ranks are
                // disjoint, so members never write the same bytes.
                unsafe { self.xput(call, t.world_pe(r), doff + t.my_rank() * nbytes, source, nbytes, false) };
            }
        }
        t.sync(self);
        t.done(self);
        0
    }

    /// `collect` (§9.9.7): like fcollect with a different element count on
    /// each member; `elem` is the element size.
    pub fn collect_in<G: Group>(
        &self, call: &str, t: &G, dest: *mut u8, source: *const u8, nelems: usize, elem: usize,
    ) -> CollResult {
        let nbytes = nelems.saturating_mul(elem);
        let soff = self.sym_extent(call, "source", source, nbytes);
        if t.staged(self) {
            let sig = Sig::collect(elem);
            let s = self.stage_enter(call, t, sig, true);
            // SAFETY: the source range is checked; the dest is checked
            // once the total is known.
            unsafe { self.collect_staged(call, t, s, dest, soff, nbytes) };
            return 0;
        }
        t.publish(self, nbytes as u64);
        t.entry_sync(self, call, Sig::collect(elem));
        let mut offset = 0usize;
        let mut total = 0usize;
        for r in 0..t.size() {
            let b = t.read(self, r) as usize;
            if r < t.my_rank() {
                offset += b;
            }
            total = total.saturating_add(b);
        }
        let doff = self.sym_extent(call, "dest", dest, total);
        if nbytes > 0 {
            for k in 0..t.size() {
                let r = (t.my_rank() + k) % t.size();
                // SAFETY: dest range [doff, doff + total) checked; ranges of
                // different members are disjoint.
                unsafe { self.xput(call, t.world_pe(r), doff + offset, source, nbytes, false) };
            }
        }
        t.sync(self);
        t.done(self);
        0
    }

    /// `alltoalls` (§9.9.10); `alltoall` is the contiguous case (strides 1).
    /// `shape` is one member pair's part: `nblocks` (the call's `nelems`)
    /// single elements of `elem` bytes at strides `dst` and `sst`. Element
    /// `k` of block `j` of `source` (at `(j * nelems + k) * sst`) goes to
    /// element `(me * nelems + k) * dst` of member `j`'s dest.
    pub fn alltoalls_in<G: Group>(
        &self, call: &str, t: &G, dest: *mut u8, source: *const u8, shape: Blocks,
    ) -> CollResult {
        assert_eq!(shape.bsize, 1, "{call}: alltoalls moves single elements (a shape of blocks of {})", shape.bsize);
        let Blocks { elem, nblocks: nelems, dst, sst, .. } = shape;
        if dst < 1 || sst < 1 {
            crate::error::fatal(call, format_args!("strides must be at least 1 (dst {dst}, sst {sst})"))
        }
        let n_all = nelems.saturating_mul(t.size());
        let span = |stride: isize| -> usize {
            if n_all == 0 {
                0
            } else {
                ((n_all - 1) as u128 * stride as u128 * elem as u128 + elem as u128).min(usize::MAX as u128) as usize
            }
        };
        let doff = self.sym_extent(call, "dest", dest, span(dst));
        let soff = self.sym_extent(call, "source", source, span(sst));
        let sig = Sig::alltoall(nelems, elem, dst, sst);
        let nbytes = nelems.saturating_mul(elem);
        if dst == 1 && sst == 1 && nbytes.saturating_mul(t.size()) <= STAGE_DATA && t.staged(self) {
            let s = self.stage_enter(call, t, sig, true);
            // SAFETY: both ranges checked.
            unsafe { self.alltoall_staged(call, t, s, doff, soff, nbytes) };
            return 0;
        }
        t.entry_sync(self, call, sig);
        if nelems > 0 {
            for k in 0..t.size() {
                let j = (t.my_rank() + k) % t.size();
                let pe = t.world_pe(j);
                // SAFETY: extents checked above; member j's block from this
                // PE is disjoint from every other member's block.
                unsafe {
                    if dst == 1 && sst == 1 {
                        self.xput(
                            call,
                            pe,
                            doff + t.my_rank() * nelems * elem,
                            source.add(j * nelems * elem),
                            nelems * elem,
                            false,
                        );
                    } else {
                        // Complete by the team sync below.
                        let d = doff as isize + t.my_rank() as isize * nelems as isize * dst * elem as isize;
                        let s = source.offset(j as isize * nelems as isize * sst * elem as isize);
                        self.route.put_strided(call, pe, d as usize, s, shape, true);
                    }
                }
            }
        }
        t.sync(self);
        t.done(self);
        0
    }

    /// Reductions (§9.9.11): `dest[i] = op(source_0[i], ..., source_{n-1}[i])`
    /// over members in rank order; `dest == source` (in place) is allowed.
    ///
    /// # Safety
    /// `T` is a plain numeric type; `op` is pure.
    #[allow(clippy::too_many_arguments, reason = "the arguments of the OpenSHMEM routine it implements")]
    pub unsafe fn reduce_in<G: Group, T: Copy>(
        &self, call: &str, t: &G, dest: *mut T, source: *const T, nreduce: usize, which: RedOp, op: impl Fn(T, T) -> T,
    ) -> CollResult {
        let es = std::mem::size_of::<T>();
        let nbytes = nreduce.saturating_mul(es);
        let doff = self.sym_extent(call, "dest", dest as *const u8, nbytes);
        let soff = self.sym_extent(call, "source", source as *const u8, nbytes);
        let plain = Sig::reduce::<T>(which, nreduce);
        if nbytes <= STAGE_DATA && t.staged(self) {
            // (In place or not alike; no device call meets this path.)
            let s = self.stage_enter(call, t, plain, true);
            // SAFETY: `doff` and `soff` are checked ranges of `nbytes`; T is
            // a plain numeric type and `op` pure (this function's contract),
            // as `reduce_staged` asks.
            unsafe { self.reduce_staged(call, t, s, doff, soff, nreduce, op) };
            return 0;
        }
        // Small reductions take a form of the host's own (below), in
        // place one more sync: their calls differ from a device call's,
        // and in place from not.
        let small = nbytes < SMALL_REDUCE_BYTES;
        let in_place = doff == soff;
        let sig = match (small && nreduce > 0, in_place) {
            (false, _) => plain,
            (true, false) => plain.host_form(HostForm::OWN_DEST),
            (true, true) => plain.host_form(HostForm::OWN_DEST | HostForm::IN_PLACE),
        };
        t.entry_sync(self, call, sig);
        if nreduce == 0 {
            t.sync(self);
            t.done(self);
            return 0;
        }
        // `acc` and `tmp` each hold `chunk` elements: CHUNK_BYTES, aligned
        // for every element type.
        let chunk = (CHUNK_BYTES / es).max(1);
        let mut buf = Chunk::new();
        let acc = buf.0.as_mut_ptr() as *mut T;
        // Sources of members on other nodes are fetched here first.
        let mut tmp = Chunk::new();
        let tmp = tmp.0.as_mut_ptr();
        let src_chunk = |r: usize, i: usize, m: usize| {
            // SAFETY: `tmp` holds m <= chunk elements; elements i..i + m are
            // inside the checked source range (i + m <= nreduce).
            unsafe { self.route.read(call, t.world_pe(r), soff + i * es, m * es, tmp) as *const T }
        };
        let reduce_range = |lo: usize, hi: usize, out: &mut dyn FnMut(usize, usize)| {
            let mut i = lo;
            while i < hi {
                let m = chunk.min(hi - i);
                let s0 = src_chunk(0, i, m);
                // SAFETY: `s0` is readable for m elements, `acc` (this call's
                // own buffer, apart from it) writable for chunk >= m.
                unsafe { std::ptr::copy_nonoverlapping(s0 as *const u8, acc as *mut u8, m * es) };
                for r in 1..t.size() {
                    let s = src_chunk(r, i, m);
                    for k in 0..m {
                        // A source that is not aligned for T (the C
                        // compiler aligns T arrays; a packed one is not)
                        // is read as bytes.
                        // SAFETY: k < m: `acc` holds m elements, aligned, and
                        // `s` is readable for m; T is a plain numeric type
                        // (this function's contract), valid for any bytes.
                        unsafe { *acc.add(k) = op(*acc.add(k), s.add(k).read_unaligned()) };
                    }
                }
                out(i, m);
                i += m;
            }
        };
        if small {
            // Every member reduces everything into its own dest; in place,
            // wait until every member has read this PE's source first.
            let me = self.my_pe;
            if in_place {
                reduce_range(0, nreduce, &mut |_, _| {});
                t.sync(self);
                // SAFETY: a small vector is one chunk, so `acc` holds all
                // `nbytes`; the dest range is checked.
                unsafe { self.route.put(call, me, doff, acc as *const u8, nbytes, false) };
            } else {
                reduce_range(0, nreduce, &mut |i, m| {
                    // SAFETY: `acc` holds the m elements reduced; elements
                    // i..i + m are inside the checked dest range.
                    unsafe { self.route.put(call, me, doff + i * es, acc as *const u8, m * es, false) }
                });
            }
        } else {
            // Reduce-scatter + allgather: this member owns one slice, reads
            // it from every source (nobody else reads it), and stores the
            // result into every member's dest.
            let per = nreduce.div_ceil(t.size());
            let lo = (t.my_rank() * per).min(nreduce);
            let hi = (lo + per).min(nreduce);
            reduce_range(lo, hi, &mut |i, m| {
                for k in 0..t.size() {
                    // acc is reused for the next chunk: remote stores are
                    // blocking (the source is copied out before return).
                    let pe = t.world_pe((t.my_rank() + k) % t.size());
                    // SAFETY: `acc` holds the m elements reduced, and the
                    // store is blocking; elements i..i + m are inside the
                    // checked dest range.
                    unsafe { self.xput(call, pe, doff + i * es, acc as *const u8, m * es, true) };
                }
            });
        }
        t.sync(self);
        t.done(self);
        0
    }

    /// Intel SHMEM's `sum_inscan` (`exclusive == false`: member r gets the
    /// sum over members 0..=r) and `sum_exscan` (0..r; member 0 gets zeros).
    ///
    /// # Safety
    /// As [`State::reduce_in`]; `zero` is the additive identity.
    #[allow(clippy::too_many_arguments, reason = "the arguments of the OpenSHMEM routine it implements")]
    pub unsafe fn sum_scan_in<G: Group, T: Copy>(
        &self, call: &str, t: &G, dest: *mut T, source: *const T, nelems: usize, exclusive: bool, zero: T,
        add: impl Fn(T, T) -> T,
    ) -> CollResult {
        let es = std::mem::size_of::<T>();
        let nbytes = nelems.saturating_mul(es);
        let doff = self.sym_extent(call, "dest", dest as *const u8, nbytes);
        let soff = self.sym_extent(call, "source", source as *const u8, nbytes);
        // In place, results wait in `held` (the only allocation, and only
        // for in-place scans) until every member has read this PE's source.
        let in_place = doff == soff;
        let form = if in_place { HostForm::OWN_DEST | HostForm::IN_PLACE } else { HostForm::OWN_DEST };
        t.entry_sync(self, call, Sig::scan::<T>(exclusive, nelems).host_form(form));
        let upto = if exclusive { t.my_rank() } else { t.my_rank() + 1 };
        let mut held: Vec<T> = Vec::new();
        let me = self.my_pe;
        // `acc` and `tmp` each hold `chunk` elements: CHUNK_BYTES, aligned
        // for every element type.
        let chunk = (CHUNK_BYTES / es).max(1);
        let mut buf = Chunk::new();
        let acc = buf.0.as_mut_ptr() as *mut T;
        let mut tmp = Chunk::new();
        let tmp = tmp.0.as_mut_ptr();
        let mut i = 0;
        while i < nelems {
            let m = chunk.min(nelems - i);
            for k in 0..m {
                // SAFETY: k < m <= chunk, the elements `acc` holds.
                unsafe { *acc.add(k) = zero };
            }
            for r in 0..upto {
                // SAFETY: `tmp` holds m <= chunk elements; elements i..i + m
                // are inside the checked source range (i + m <= nelems).
                let s = unsafe { self.route.read(call, t.world_pe(r), soff + i * es, m * es, tmp) } as *const T;
                for k in 0..m {
                    // SAFETY: k < m: `acc` holds m elements, aligned, and `s`
                    // is readable for m (unaligned); T is a plain numeric
                    // type (this function's contract), valid for any bytes.
                    unsafe { *acc.add(k) = add(*acc.add(k), s.add(k).read_unaligned()) };
                }
            }
            if in_place {
                // SAFETY: `acc` holds m initialized elements of T.
                held.extend_from_slice(unsafe { std::slice::from_raw_parts(acc, m) });
            } else {
                // SAFETY: `acc` holds the m elements summed; elements
                // i..i + m are inside the checked dest range.
                unsafe { self.route.put(call, me, doff + i * es, acc as *const u8, m * es, false) };
            }
            i += m;
        }
        if in_place {
            t.sync(self);
            // SAFETY: `held` holds all `nelems` results, `nbytes`; the dest
            // range is checked.
            unsafe { self.route.put(call, me, doff, held.as_ptr() as *const u8, nbytes, false) };
        }
        t.sync(self);
        t.done(self);
        0
    }
    /// `broadcast` on a team (OpenSHMEM 1.5: the root's dest is written too).
    pub fn broadcast(
        &self, call: &str, team: i32, dest: *mut u8, source: *const u8, nbytes: usize, root: i32,
    ) -> CollResult {
        self.coll_team(call, team).map_or(-1, |t| self.broadcast_in(call, &t, dest, source, nbytes, root, true))
    }

    /// `fcollect` on a team.
    pub fn fcollect(&self, call: &str, team: i32, dest: *mut u8, source: *const u8, nbytes: usize) -> CollResult {
        self.coll_team(call, team).map_or(-1, |t| self.fcollect_in(call, &t, dest, source, nbytes))
    }

    /// `collect` on a team.
    pub fn collect(
        &self, call: &str, team: i32, dest: *mut u8, source: *const u8, nelems: usize, elem: usize,
    ) -> CollResult {
        self.coll_team(call, team).map_or(-1, |t| self.collect_in(call, &t, dest, source, nelems, elem))
    }

    /// `alltoalls` (and `alltoall`) on a team.
    pub fn alltoalls(&self, call: &str, team: i32, dest: *mut u8, source: *const u8, shape: Blocks) -> CollResult {
        self.coll_team(call, team).map_or(-1, |t| self.alltoalls_in(call, &t, dest, source, shape))
    }

    /// Reductions on a team.
    ///
    /// # Safety
    /// As [`State::reduce_in`].
    #[allow(clippy::too_many_arguments, reason = "the arguments of the OpenSHMEM routine it implements")]
    pub unsafe fn reduce<T: Copy>(
        &self, call: &str, team: i32, dest: *mut T, source: *const T, nreduce: usize, which: RedOp,
        op: impl Fn(T, T) -> T,
    ) -> CollResult {
        match self.coll_team(call, team) {
            // SAFETY: this function's contract is `reduce_in`'s.
            Some(t) => unsafe { self.reduce_in(call, &t, dest, source, nreduce, which, op) },
            None => -1,
        }
    }

    /// Sum scans on a team.
    ///
    /// # Safety
    /// As [`State::sum_scan_in`].
    #[allow(clippy::too_many_arguments, reason = "the arguments of the OpenSHMEM routine it implements")]
    pub unsafe fn sum_scan<T: Copy>(
        &self, call: &str, team: i32, dest: *mut T, source: *const T, nelems: usize, exclusive: bool, zero: T,
        add: impl Fn(T, T) -> T,
    ) -> CollResult {
        match self.coll_team(call, team) {
            // SAFETY: this function's contract is `sum_scan_in`'s.
            Some(t) => unsafe { self.sum_scan_in(call, &t, dest, source, nelems, exclusive, zero, add) },
            None => -1,
        }
    }
}
