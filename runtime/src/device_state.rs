//! The state every device-side routine reads: who this PE is, where the
//! symmetric heap is, and how to reach each peer.
//!
//! This struct is shared between the host runtime and the device library
//!. It is `#[repr(C)]`, exported to C by cbindgen into
//! `ishmem/ishmem_api.h`, and its size and field offsets are asserted on
//! both sides. Addresses are carried as `u64` so the layout is identical for
//! 64-bit hosts and for device compilers whose pointers differ from the host's.

/// Value of [`ishmemx_device_state_t::magic`].
pub const ISHMEMX_DEVICE_STATE_MAGIC: u32 = 0x4953_4844; // "ISHD"
/// Layout version of [`ishmemx_device_state_t`]; bump on any change.
pub const ISHMEMX_DEVICE_STATE_VERSION: u32 = 6;

/// Per-PE state read by device code.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy)]
pub struct ishmemx_device_state_t {
    /// [`ISHMEMX_DEVICE_STATE_MAGIC`].
    pub magic: u32,
    /// [`ISHMEMX_DEVICE_STATE_VERSION`].
    pub version: u32,
    /// This PE's number in the world team.
    pub my_pe: i32,
    /// Number of PEs in the world team.
    pub n_pes: i32,
    /// 1 when every PE is reachable by load/store from this one.
    pub only_local: u32,
    /// Reserved; zero.
    pub reserved: u32,
    /// Address of this PE's symmetric heap in its own address space.
    pub heap_base: u64,
    /// Size in bytes of each PE's symmetric heap.
    pub heap_size: u64,
    /// Address of a `u64[n_pes]` table: entry `pe` is the address at which
    /// PE `pe`'s heap is mapped in this PE's address space, or 0 when `pe`
    /// is reached through a proxy. A peer address is
    /// `peer_heap_base[pe] + (sym_addr - heap_base)`.
    pub peer_heap_base: u64,
    /// Address of a `u8[n_pes]` table: 1 when `pe` is reached by load/store.
    pub peer_is_local: u64,
    /// Address, in this PE's address space, of the barrier flags of PE 0's
    /// world-team synchronization record in the node's control segment;
    /// PE `p`'s flags for team slot `s` are at
    /// `ctrl_team_base + p * ctrl_pe_stride + s * ctrl_team_stride`: 32
    /// u64 dissemination barrier flags; the sync epoch is at
    /// `ctrl_epoch_offset` from them, followed by the two collective
    /// scratch words. Host and device barriers and collectives share them.
    pub ctrl_team_base: u64,
    pub ctrl_pe_stride: u32,
    pub ctrl_team_stride: u32,
    pub ctrl_epoch_offset: u32,
    /// 1 when device team syncs through the control segment compare the
    /// members' calls (`ISHMEM_COLL_CHECK`; `core.h`:
    /// `ishmemi_ctrl_sig_publish`), else 0.
    pub coll_check: u32,
    /// Address of this PE's reverse-offload ring (`ring.rs`); device
    /// operations on PEs whose `peer_is_local` entry is 0 go through it.
    pub ring: u64,
    /// Address of a `ishmemx_device_team_t[ctrl::TEAM_SLOTS]` table, indexed
    /// by team handle; `size` 0 for slots without a team on this PE. The
    /// host rewrites an entry when it creates or destroys a team.
    pub teams: u64,
    /// Address of a line of u64 words device code reads and writes, in
    /// the memory it reaches fastest (GPU memory on a GPU), zero at first:
    /// word 0 counts the ring messages posted, word 1 is a number of them
    /// known complete (quiet reads the ring's counters in host memory only
    /// when word 0 exceeds it), word 2 is the copy-engine token (1 while
    /// a transfer of this PE is with the copy engine).
    pub quiet_words: u64,
    /// A put or get by one thread to a PE on the node of at least this many
    /// bytes goes to a copy engine through the ring (0: never).
    pub copy_cutover: u64,
    /// The same for the group (warp, block, work-group) forms.
    pub copy_cutover_group: u64,
    /// Address of this PE's device sync words ([`crate::sync_words::SYNC_WORDS`] u64, zero at
    /// first) in a reserved part of its symmetric heap, past the part the
    /// allocator hands out (the same offset on every PE, so peers reach
    /// them), or 0. When set, device team syncs and collectives signal
    /// through them (GPU memory) instead of the control segment: see
    /// [`crate::sync_words`].
    pub sync_words: u64,
}

/// A team as device code sees it: members are world PEs `start + i *
/// stride`, `i < size`; this PE is member `my_rank`.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, Default)]
pub struct ishmemx_device_team_t {
    pub start: i32,
    pub stride: i32,
    pub size: i32,
    pub my_rank: i32,
}

impl ishmemx_device_team_t {
    /// The two words of the device team table that hold this entry (the
    /// table is read and written as 64-bit atomics; little-endian, so the
    /// first word is `start` then `stride`, the second `size` then
    /// `my_rank`).
    pub fn words(&self) -> [u64; 2] {
        let pair = |lo: i32, hi: i32| (lo as u32 as u64) | ((hi as u32 as u64) << 32);
        [pair(self.start, self.stride), pair(self.size, self.my_rank)]
    }
}

// Layout guard; the C header carries the same numbers as _Static_asserts.
const _: () = {
    assert!(core::mem::size_of::<ishmemx_device_state_t>() == 128);
    assert!(core::mem::size_of::<ishmemx_device_team_t>() == 16);
    assert!(core::mem::offset_of!(ishmemx_device_state_t, sync_words) == 120);
    assert!(core::mem::offset_of!(ishmemx_device_state_t, my_pe) == 8);
    assert!(core::mem::offset_of!(ishmemx_device_state_t, heap_base) == 24);
    assert!(core::mem::offset_of!(ishmemx_device_state_t, heap_size) == 32);
    assert!(core::mem::offset_of!(ishmemx_device_state_t, peer_heap_base) == 40);
    assert!(core::mem::offset_of!(ishmemx_device_state_t, peer_is_local) == 48);
    assert!(core::mem::offset_of!(ishmemx_device_state_t, ctrl_team_base) == 56);
    assert!(core::mem::offset_of!(ishmemx_device_state_t, ctrl_epoch_offset) == 72);
};

/// Every field with its kind (`u32`, `i32`, `u64`), in order: the OpenCL C
/// declaration of the struct is generated from this list.
pub const FIELDS: &[(&str, &str)] = &[
    ("magic", "u32"),
    ("version", "u32"),
    ("my_pe", "i32"),
    ("n_pes", "i32"),
    ("only_local", "u32"),
    ("reserved", "u32"),
    ("heap_base", "u64"),
    ("heap_size", "u64"),
    ("peer_heap_base", "u64"),
    ("peer_is_local", "u64"),
    ("ctrl_team_base", "u64"),
    ("ctrl_pe_stride", "u32"),
    ("ctrl_team_stride", "u32"),
    ("ctrl_epoch_offset", "u32"),
    ("coll_check", "u32"),
    ("ring", "u64"),
    ("teams", "u64"),
    ("quiet_words", "u64"),
    ("copy_cutover", "u64"),
    ("copy_cutover_group", "u64"),
    ("sync_words", "u64"),
];

/// `(field name, offset)` for every field; the header generator turns this
/// into C `_Static_assert`s.
pub fn field_offsets() -> Vec<(&'static str, usize)> {
    use core::mem::offset_of;
    type S = ishmemx_device_state_t;
    vec![
        ("magic", offset_of!(S, magic)),
        ("version", offset_of!(S, version)),
        ("my_pe", offset_of!(S, my_pe)),
        ("n_pes", offset_of!(S, n_pes)),
        ("only_local", offset_of!(S, only_local)),
        ("reserved", offset_of!(S, reserved)),
        ("heap_base", offset_of!(S, heap_base)),
        ("heap_size", offset_of!(S, heap_size)),
        ("peer_heap_base", offset_of!(S, peer_heap_base)),
        ("peer_is_local", offset_of!(S, peer_is_local)),
        ("ctrl_team_base", offset_of!(S, ctrl_team_base)),
        ("ctrl_pe_stride", offset_of!(S, ctrl_pe_stride)),
        ("ctrl_team_stride", offset_of!(S, ctrl_team_stride)),
        ("ctrl_epoch_offset", offset_of!(S, ctrl_epoch_offset)),
        ("coll_check", offset_of!(S, coll_check)),
        ("ring", offset_of!(S, ring)),
        ("teams", offset_of!(S, teams)),
        ("quiet_words", offset_of!(S, quiet_words)),
        ("copy_cutover", offset_of!(S, copy_cutover)),
        ("copy_cutover_group", offset_of!(S, copy_cutover_group)),
        ("sync_words", offset_of!(S, sync_words)),
    ]
}
