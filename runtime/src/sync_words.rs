//! The layout of the device sync words
//! ([`crate::device_state::ishmemx_device_state_t::sync_words`]): flags and
//! counters in a reserved part of each GPU heap through which device team
//! syncs and collectives signal each other (`device-lib/src/core.h`). Kept
//! out of `device_state.rs` so that the public C header (cbindgen) does not
//! carry them; `ishmem-gen` writes them into `device-lib/src/device_state.h`.

/// Team slots the device sync words cover (every team slot).
pub const SYNC_SLOTS: usize = crate::ctrl::TEAM_SLOTS;
/// Jobs of more PEs than this keep device syncs in the control segment.
pub const SYNC_MAX_PES: usize = 256;
/// Word offsets of the regions of the device sync words. `FLAGS[s][p]`
/// (`s * SYNC_MAX_PES + p`, by team slot and world PE) is written by PE
/// `p` only: the number of signals it has sent this PE on slot `s`, shifted
/// left by 16, with the low 16 bits of the sending call's signature
/// (`core.h`: `ishmemi_sig16`) below (a release store after what they
/// order). `PAIRS[s][p]` is four words read and written by this PE alone:
/// the signals it has sent `p` on `s`, the ones from `p` it has waited
/// for, the low-latency collectives the two have finished on `s` (one of
/// them sent the other a message in each), and the latest one that waited
/// on the other (above the finished count while it runs; the watchdog
/// reads both).
/// Every signal one member of a team sends another is awaited once, in
/// order, so per pair of PEs and slot the counts agree whatever teams used
/// the slot before.
pub const SYNC_FLAGS: usize = 0;
pub const SYNC_PAIRS: usize = SYNC_SLOTS * SYNC_MAX_PES;
/// `COUNTS[s][parity][p]`: element counts of a collect, written by PE `p`
/// (two parities, alternating by the slot's collect sequence).
pub const SYNC_COUNTS: usize = 5 * SYNC_SLOTS * SYNC_MAX_PES;
/// `CSEQ[s]`: this PE's collect calls on slot `s`.
pub const SYNC_CSEQ: usize = 7 * SYNC_SLOTS * SYNC_MAX_PES;
/// `LLDONE[s][p]`, written by PE `p` only: the last low-latency count of the
/// pair on slot `s` whose message from this PE `p` has finished reading.
/// A member waits for it to reach `count - 2` before writing a buffer
/// again: a broadcast's root hears nothing back otherwise.
pub const SYNC_LLDONE: usize = SYNC_CSEQ + SYNC_SLOTS;
/// Low-latency buffers for small collectives on the first [`SYNC_LL_SLOTS`]
/// team slots of jobs of at most [`SYNC_LL_PES`] PEs: `LL[s][p][parity]`
/// of [`SYNC_LL_WORDS`] words, written by PE `p` only. Each word is 4
/// bytes of data and a 4-byte flag (the low 16 bits of the pair's
/// low-latency count, whose parity picks the buffer, and the sending
/// call's 16 signature bits) stored together by one 8-byte store, so a
/// receiver that sees the flag has the data, with no fence in between. A member writes a buffer again (two counts later)
/// only once the receiver's `LLDONE` says it finished reading it.
pub const SYNC_LL: usize = SYNC_LLDONE + SYNC_SLOTS * SYNC_MAX_PES;
pub const SYNC_LL_SLOTS: usize = 8;
pub const SYNC_LL_PES: usize = 16;
/// Words of one low-latency buffer: [`SYNC_LL_BYTES`] of data.
pub const SYNC_LL_WORDS: usize = 2048;
pub const SYNC_LL_BYTES: usize = 4 * SYNC_LL_WORDS;
/// Scratch buffers of this PE's own for the reductions and scans of teams
/// it reaches some members of only through the ring (another node):
/// `SCRATCH[s][half]` of [`SYNC_SCRATCH_WORDS`] words, read and written by
/// this PE alone (its ring gets land there, its ring puts leave from there)
/// while it runs a collective on slot `s`; a slice moves through them in
/// chunks of [`SYNC_SCRATCH_BYTES`].
pub const SYNC_SCRATCH: usize = SYNC_LL + SYNC_LL_SLOTS * SYNC_LL_PES * 2 * SYNC_LL_WORDS;
pub const SYNC_SCRATCH_WORDS: usize = 2048;
pub const SYNC_SCRATCH_BYTES: usize = 8 * SYNC_SCRATCH_WORDS;
/// Number of u64 device sync words.
pub const SYNC_WORDS: usize = SYNC_SCRATCH + SYNC_SLOTS * 2 * SYNC_SCRATCH_WORDS;
/// Bytes a device that uses sync words reserves at the end of each heap.
pub const SYNC_RESERVE: usize = (SYNC_WORDS * 8).next_multiple_of(64 << 10);

const _: () = assert!(SYNC_LL.is_multiple_of(8), "low-latency buffers start on a cache line");
