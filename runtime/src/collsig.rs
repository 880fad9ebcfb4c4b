//! Collective call signatures: what a member of a team was asked to do at a
//! synchronization, so that members can check they agree.
//!
//! OpenSHMEM requires every member of a team to make the same collective
//! call with the same arguments (kind, element type, count, root, reduction
//! operator). A member that does not reads or writes outside the buffers
//! the others expect, or waits at a synchronization the others never
//! reach. So each synchronizing call describes itself as a [`Sig`] and the
//! members compare (see `State::team_sync_sig` in `team.rs`).
//!
//! Word 0 of a signature holds the sync epoch and a 32-bit hash of the
//! rest. Before the team sync a member keeps its whole signature in its team
//! slot (`TeamCtrl::sig`, double-buffered by epoch parity) and stores word 0
//! into its successor's `TeamCtrl::sig_in`, on the cache line of the flag it
//! stores there in the sync's first round; after the sync it compares what
//! its predecessor stored. Members form a ring, so if any two members
//! differ some member differs from its predecessor; that member reads
//! everyone's signature for the report. The check costs a few stores to
//! lines the sync touches anyway, and no extra wait. Device syncs through
//! the control segment publish and compare the same words (`core.h`:
//! `ishmemi_ctrl_sig_publish`). A word from another epoch (a device sync
//! through the sync words in the heap, or the slot's previous team) is not
//! compared.

/// What kind of synchronizing call a member made.
#[repr(u8)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum CollKind {
    /// barrier_all, sync_all, team_sync (interchangeable: each is one sync).
    Sync = 1,
    Broadcast,
    Collect,
    Fcollect,
    Alltoall,
    Reduce,
    Inscan,
    Exscan,
    SplitStrided,
    Split2d,
    TeamDestroy,
    Alloc,
    Init,
    Finalize,
}

const KINDS: [CollKind; 14] = [
    CollKind::Sync,
    CollKind::Broadcast,
    CollKind::Collect,
    CollKind::Fcollect,
    CollKind::Alltoall,
    CollKind::Reduce,
    CollKind::Inscan,
    CollKind::Exscan,
    CollKind::SplitStrided,
    CollKind::Split2d,
    CollKind::TeamDestroy,
    CollKind::Alloc,
    CollKind::Init,
    CollKind::Finalize,
];

/// Reduction operators (OpenSHMEM 1.5 §9.9.11, Table 10).
#[repr(u8)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RedOp {
    And = 1,
    Or,
    Xor,
    Max,
    Min,
    Sum,
    Prod,
}

impl RedOp {
    pub fn name(self) -> &'static str {
        match self {
            RedOp::And => "and",
            RedOp::Or => "or",
            RedOp::Xor => "xor",
            RedOp::Max => "max",
            RedOp::Min => "min",
            RedOp::Sum => "sum",
            RedOp::Prod => "prod",
        }
    }
    fn from_code(c: u8) -> Option<RedOp> {
        [RedOp::And, RedOp::Or, RedOp::Xor, RedOp::Max, RedOp::Min, RedOp::Sum, RedOp::Prod]
            .into_iter()
            .find(|o| *o as u8 == c)
    }
}

/// Element types the typed collectives use, by Rust type name (a C type
/// maps to the Rust type of its width: `int` is `i32`), with the name a
/// report shows.
const TYPES: &[(&str, &str)] = &[
    ("i8", "8-bit integer (char, schar, int8)"),
    ("u8", "8-bit unsigned integer (uchar, uint8)"),
    ("i16", "16-bit integer (short, int16)"),
    ("u16", "16-bit unsigned integer (ushort, uint16)"),
    ("i32", "32-bit integer (int, int32)"),
    ("u32", "32-bit unsigned integer (uint, uint32)"),
    ("i64", "64-bit integer (long, longlong, int64, ptrdiff)"),
    ("u64", "64-bit unsigned integer (ulong, ulonglong, uint64, size)"),
    ("f32", "float"),
    ("f64", "double"),
    ("LongDouble", "long double"),
    ("Complex<f32>", "float complex"),
    ("Complex<f64>", "double complex"),
];

/// Flag of a type code that is a hash of an unknown type's name.
const HASHED_TYPE: u16 = 0x8000;

/// The type code of `T` in a signature: its row in the type list, or a
/// hash of its name.
pub fn type_code<T>() -> u16 {
    let name = std::any::type_name::<T>();
    let short = name.rsplit("::").next().unwrap_or(name);
    // `Complex<f32>` is `path::Complex<f32>`: rsplit on "::" keeps it whole
    // unless the parameter has a path, which the listed ones do not.
    match type_code_named(short).or_else(|| type_code_named(name)) {
        Some(c) => c,
        None => HASHED_TYPE | (fnv(name.as_bytes()) as u16 & 0x7fff),
    }
}

/// The type code of the listed Rust type `name` (`i64`, `f32`, ...).
/// `size_t` and `ptrdiff_t` are the integer types of their width (in C
/// `size_t` and `unsigned long` are one type on LP64, and the device
/// library knows only widths), so their calls match those.
pub fn type_code_named(name: &str) -> Option<u16> {
    let name = match name {
        "usize" => ["u32", "u64"][(usize::BITS == 64) as usize],
        "isize" => ["i32", "i64"][(usize::BITS == 64) as usize],
        n => n,
    };
    TYPES.iter().position(|(n, _)| *n == name).map(|i| i as u16 + 1)
}

/// How a report names the type of Rust name `rust` (`i64`, `f32`, ...).
pub fn type_description(rust: &str) -> Option<&'static str> {
    TYPES.iter().find(|(n, _)| *n == rust).map(|(_, d)| *d)
}

fn type_name(code: u16) -> String {
    match code {
        c if c & HASHED_TYPE != 0 => format!("type #{:04x}", c & 0x7fff),
        c if c >= 1 && (c as usize) <= TYPES.len() => TYPES[c as usize - 1].1.to_string(),
        c => format!("type #{c}"),
    }
}

fn fnv(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// One member's synchronizing call: its kind and the arguments that every
/// member must pass alike. Fields a kind does not use are 0.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Sig {
    pub kind: CollKind,
    /// [`RedOp`] code of a reduction.
    pub op: u8,
    /// Type code of a reduction or scan; element size of collect and of a
    /// strided alltoall.
    pub ty: u16,
    /// Root (broadcast), start (split_strided).
    pub root: i32,
    /// Bytes (broadcast, fcollect, contiguous alltoall), elements
    /// (reductions, scans, strided alltoall), size (split_strided), xrange
    /// (split_2d).
    pub count: u64,
    /// Strides (strided alltoall, split_strided); a host reduction's or
    /// scan's [`HostForm`] bits.
    pub aux: u64,
}

/// [`Sig::aux`] bits of the host reductions and scans whose algorithm is
/// not the device's (a device call publishes none): members that make such
/// a call on the host while others make it in kernels would read or write
/// what the others do not, so their calls compare as different.
pub struct HostForm;

impl HostForm {
    /// Every member reduces every element into its own dest (host
    /// reductions of 1 element to `coll::SMALL_REDUCE_BYTES` off the
    /// publish-and-pull path, and every host scan; the device's member r
    /// computes slice r into every member's dest).
    pub const OWN_DEST: u64 = 1;
    /// In place, with one more sync before the result is stored.
    pub const IN_PLACE: u64 = 2;
}

impl Sig {
    const fn of(kind: CollKind) -> Sig {
        Sig { kind, op: 0, ty: 0, root: 0, count: 0, aux: 0 }
    }
    pub const fn sync() -> Sig {
        Sig::of(CollKind::Sync)
    }
    pub const fn init() -> Sig {
        Sig::of(CollKind::Init)
    }
    pub const fn finalize() -> Sig {
        Sig::of(CollKind::Finalize)
    }
    pub const fn alloc() -> Sig {
        Sig::of(CollKind::Alloc)
    }
    pub const fn team_destroy() -> Sig {
        Sig::of(CollKind::TeamDestroy)
    }
    pub fn broadcast(nbytes: usize, root: i32) -> Sig {
        Sig { root, count: nbytes as u64, ..Sig::of(CollKind::Broadcast) }
    }
    pub fn fcollect(nbytes: usize) -> Sig {
        Sig { count: nbytes as u64, ..Sig::of(CollKind::Fcollect) }
    }
    /// collect: counts may differ between members; the element size may not.
    pub fn collect(elem: usize) -> Sig {
        Sig { ty: elem as u16, ..Sig::of(CollKind::Collect) }
    }
    pub fn alltoall(nelems: usize, elem: usize, dst: isize, sst: isize) -> Sig {
        if dst == 1 && sst == 1 {
            Sig { count: nelems.saturating_mul(elem) as u64, ..Sig::of(CollKind::Alltoall) }
        } else {
            Sig {
                ty: elem as u16,
                count: nelems as u64,
                aux: (dst as u32 as u64) << 32 | sst as u32 as u64,
                ..Sig::of(CollKind::Alltoall)
            }
        }
    }
    pub fn reduce<T>(op: RedOp, nreduce: usize) -> Sig {
        Sig { op: op as u8, ty: type_code::<T>(), count: nreduce as u64, ..Sig::of(CollKind::Reduce) }
    }
    pub fn scan<T>(exclusive: bool, nelems: usize) -> Sig {
        let kind = if exclusive { CollKind::Exscan } else { CollKind::Inscan };
        Sig { ty: type_code::<T>(), count: nelems as u64, ..Sig::of(kind) }
    }
    /// This reduction or scan in a host form (`HostForm` bits).
    pub fn host_form(self, bits: u64) -> Sig {
        Sig { aux: bits, ..self }
    }
    pub fn split_strided(start: i32, stride: i32, size: i32) -> Sig {
        Sig { root: start, count: size as u32 as u64, aux: stride as u32 as u64, ..Sig::of(CollKind::SplitStrided) }
    }
    pub fn split_2d(xrange: i32) -> Sig {
        Sig { count: xrange as u32 as u64, ..Sig::of(CollKind::Split2d) }
    }

    /// The published words for sync epoch `epoch`: epoch and hash, then the
    /// fields.
    pub fn words(&self, epoch: u64) -> [u64; 4] {
        let w1 = self.kind as u64 | (self.op as u64) << 8 | (self.ty as u64) << 16 | (self.root as u32 as u64) << 32;
        let mut b = [0u8; 24];
        b[..8].copy_from_slice(&w1.to_le_bytes());
        b[8..16].copy_from_slice(&self.count.to_le_bytes());
        b[16..].copy_from_slice(&self.aux.to_le_bytes());
        let h = fnv(&b);
        [(epoch as u32 as u64) << 32 | ((h ^ h >> 32) as u32 as u64), w1, self.count, self.aux]
    }

    /// Whether published word 0 `w0` is from sync epoch `epoch`.
    pub fn same_epoch(w0: u64, epoch: u64) -> bool {
        (w0 >> 32) as u32 == epoch as u32
    }

    /// Decodes published words (`None` for a word set no host call wrote).
    pub fn from_words(w: [u64; 4]) -> Option<Sig> {
        let kind = KINDS.into_iter().find(|k| *k as u64 == w[1] & 0xff)?;
        Some(Sig {
            kind,
            op: (w[1] >> 8) as u8,
            ty: (w[1] >> 16) as u16,
            root: (w[1] >> 32) as u32 as i32,
            count: w[2],
            aux: w[3],
        })
    }

    /// The call in words, for the mismatch report.
    pub fn describe(&self) -> String {
        let strides = || ((self.aux >> 32) as u32 as i32, self.aux as u32 as i32);
        match self.kind {
            CollKind::Sync => "a barrier or sync (barrier_all, sync_all or team_sync)".into(),
            CollKind::Broadcast => format!("broadcast of {} bytes from team PE {}", self.count, self.root),
            CollKind::Fcollect => format!("fcollect of {} bytes per PE", self.count),
            CollKind::Collect => format!("collect of {}-byte elements", self.ty),
            CollKind::Alltoall if self.aux == 0 => format!("alltoall of {} bytes per PE", self.count),
            CollKind::Alltoall => {
                let (dst, sst) = strides();
                format!("alltoalls of {} elements of {} bytes (dst {dst}, sst {sst})", self.count, self.ty)
            }
            CollKind::Reduce => format!(
                "{} reduction of {} elements of {}",
                RedOp::from_code(self.op).map_or("unknown", |o| o.name()),
                self.count,
                type_name(self.ty)
            ),
            CollKind::Inscan | CollKind::Exscan => format!(
                "sum_{}scan of {} elements of {}",
                if self.kind == CollKind::Inscan { "in" } else { "ex" },
                self.count,
                type_name(self.ty)
            ),
            CollKind::SplitStrided => format!(
                "team_split_strided (start {}, stride {}, size {})",
                self.root, self.aux as u32 as i32, self.count as u32 as i32
            ),
            CollKind::Split2d => format!("team_split_2d (xrange {})", self.count as u32 as i32),
            CollKind::TeamDestroy => "team_destroy".into(),
            CollKind::Alloc => "a symmetric allocation (malloc, calloc, align, realloc or free)".into(),
            CollKind::Init => "init".into(),
            CollKind::Finalize => "finalize (called, or run at exit)".into(),
        }
    }
}

impl Sig {
    /// Reductions and scans: the calls whose `aux` is a [`HostForm`].
    fn has_form(&self) -> bool {
        matches!(self.kind, CollKind::Reduce | CollKind::Inscan | CollKind::Exscan)
    }

    /// [`Sig::describe`] with a reduction's or scan's form (for a report
    /// whose calls differ only in it: [`Sig::differs_in_form_only`]).
    pub fn describe_form(&self) -> String {
        let own = self.aux & HostForm::OWN_DEST != 0;
        let form = match (own, self.aux & HostForm::IN_PLACE != 0) {
            _ if !self.has_form() => "",
            (false, false) if self.kind == CollKind::Reduce => {
                " (the form of kernels and of the host's larger reductions)"
            }
            (false, false) => " (the form of kernels)",
            (true, false) => " (the host's form)",
            (_, true) => " (the host's form, in place)",
        };
        format!("{}{form}", self.describe())
    }

    /// Whether `self` and `other` are one reduction or scan in different
    /// forms ([`HostForm`]).
    pub fn differs_in_form_only(&self, other: &Sig) -> bool {
        self.has_form() && self.aux != other.aux && Sig { aux: 0, ..*self } == Sig { aux: 0, ..*other }
    }
}

/// One small collective call on the publish-and-pull path (`stage.rs`),
/// as its group prepared it.
pub struct Stage {
    /// The call's signature (what a mismatch report names).
    pub sig: Sig,
    /// The group's epoch for this call.
    pub epoch: u64,
    /// The header this member publishes (word 0: epoch and hash).
    pub words: [u64; 4],
    /// A different call at this epoch is a mismatch to report (teams with
    /// the check on); otherwise a slot is ready only when its word 0
    /// equals ours (active sets: another set's stale slot never matches).
    pub check: bool,
}

/// `0, 2-5, 9` for a sorted list of PEs.
pub fn pe_list(pes: &[usize]) -> String {
    let mut out = Vec::new();
    let mut i = 0;
    while i < pes.len() {
        let mut j = i;
        while j + 1 < pes.len() && pes[j + 1] == pes[j] + 1 {
            j += 1;
        }
        out.push(if j > i { format!("{}-{}", pes[i], pes[j]) } else { pes[i].to_string() });
        i = j + 1;
    }
    if out.len() > 12 {
        let n = out.len();
        out.truncate(12);
        out.push(format!("... ({n} ranges)"));
    }
    out.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip_and_hash_separates() {
        let sigs = [
            Sig::sync(),
            Sig::broadcast(64, 1),
            Sig::broadcast(64, 0),
            Sig::fcollect(8),
            Sig::fcollect(48),
            Sig::collect(4),
            Sig::alltoall(4, 4, 1, 1),
            Sig::alltoall(4, 4, 2, 1),
            Sig::reduce::<i32>(RedOp::Sum, 8),
            Sig::reduce::<f32>(RedOp::Sum, 8),
            Sig::reduce::<i32>(RedOp::Max, 8),
            Sig::scan::<i64>(true, 3),
            Sig::scan::<i64>(false, 3),
            Sig::reduce::<i32>(RedOp::Sum, 8).host_form(HostForm::OWN_DEST),
            Sig::reduce::<i32>(RedOp::Sum, 8).host_form(HostForm::OWN_DEST | HostForm::IN_PLACE),
            Sig::scan::<i64>(false, 3).host_form(HostForm::OWN_DEST),
            Sig::split_strided(0, 2, 3),
            Sig::split_2d(2),
            Sig::alloc(),
            Sig::finalize(),
        ];
        for (i, a) in sigs.iter().enumerate() {
            let w = a.words(7);
            assert!(Sig::same_epoch(w[0], 7) && !Sig::same_epoch(w[0], 9));
            assert_eq!(Sig::from_words(w), Some(*a));
            for b in &sigs[i + 1..] {
                assert_ne!(w[0], b.words(7)[0], "{a:?} and {b:?} hash alike");
            }
            assert!(!a.describe().is_empty());
        }
        assert_eq!(Sig::from_words([0; 4]), None);
        let r = Sig::reduce::<i32>(RedOp::Sum, 8);
        assert!(r.differs_in_form_only(&r.host_form(HostForm::OWN_DEST)));
        assert!(!r.differs_in_form_only(&r));
        assert!(!r.differs_in_form_only(&Sig::reduce::<i32>(RedOp::Sum, 9).host_form(HostForm::OWN_DEST)));
        assert!(r.host_form(HostForm::OWN_DEST).describe_form().ends_with("(the host's form)"));
        assert!(!r.host_form(HostForm::OWN_DEST).describe().contains("form"));
    }

    #[test]
    fn type_codes() {
        assert_eq!(type_name(type_code::<i32>()), "32-bit integer (int, int32)");
        assert_eq!(type_name(type_code::<f64>()), "double");
        struct Odd;
        assert!(type_code::<Odd>() & HASHED_TYPE != 0);
        assert_ne!(type_code::<u32>(), type_code::<f32>());
        // size_t is unsigned long, ptrdiff_t long (LP64).
        assert_eq!(type_code::<usize>(), type_code::<u64>());
        assert_eq!(type_code::<isize>(), type_code::<i64>());
    }

    #[test]
    fn pe_lists() {
        assert_eq!(pe_list(&[0, 2, 3, 4, 9]), "0, 2-4, 9");
        assert_eq!(pe_list(&[5]), "5");
    }
}
