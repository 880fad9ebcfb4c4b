//! The one type table. Every typed family in every language is generated
//! from these rows.

/// Type classes: which typed families a type has. AMO classes follow
/// OpenSHMEM 1.5 Tables 6-8 (`schar` as in Intel SHMEM), reduction classes
/// Table 10.
/// Extended AMO types: fetch, set, swap.
pub const EXT: u32 = 1;
/// Standard AMO types: also compare_swap, inc, add.
pub const STD: u32 = 2;
/// Bitwise AMO types: and, or, xor.
pub const BIT: u32 = 4;
/// Point-to-point synchronization types: wait_until, test.
pub const SYNC: u32 = 8;
/// Bitwise reduction types: and, or, xor reductions (§9.9.11, Table 10,
/// plus `schar` as in Intel SHMEM).
pub const REDBIT: u32 = 16;
/// Deprecated `_to_all` arithmetic reductions (OpenSHMEM 1.4 Table 8):
/// max/min for the types that also have MINMAX, sum/prod for SUMPROD.
pub const DEPRED: u32 = 32;
/// Deprecated `_to_all` bitwise reductions.
pub const DEPBIT: u32 = 64;
/// Deprecated AMO names (`fadd`, `finc`, `add`, `inc`, `cswap`, and with
/// DEPAMOF `swap`, `fetch`, `set`).
pub const DEPAMO: u32 = 128;
pub const DEPAMOF: u32 = 256;
/// Deprecated `shmem_TYPE_wait`.
pub const DEPWAIT: u32 = 512;
/// Standard RMA types (Table 5): RMA, and the data collectives.
pub const RMAT: u32 = 1 << 10;
/// max/min reductions (and Intel SHMEM's sum scans).
pub const MINMAX: u32 = 1 << 11;
/// sum/prod reductions.
pub const SUMPROD: u32 = 1 << 12;
/// Deprecated `wait_until`/`test` types (short and unsigned short: in
/// OpenSHMEM 1.4, deprecated in 1.5).
pub const DEPSYNC: u32 = 1 << 13;
/// Every class of a real arithmetic RMA type: RMA, collectives, all
/// arithmetic reductions.
const ARITH: u32 = RMAT | MINMAX | SUMPROD;

/// One element type of the OpenSHMEM typed interfaces.
pub struct Ty {
    /// TYPENAME in routine names (`ishmem_TYPENAME_put`).
    pub name: &'static str,
    /// C type.
    pub c: &'static str,
    /// Rust type used in the `extern "C"` signature.
    pub rust: &'static str,
    /// Listed in C11 `_Generic` selections (standard C types only: the
    /// fixed-width aliases would be duplicate associations).
    pub generic: bool,
    /// Classes the type belongs to.
    pub classes: u32,
    /// Only in the OpenSHMEM family on the host: no Intel SHMEM name, no
    /// device form (long double and the complex types).
    pub host_only: bool,
}

impl Ty {
    /// Whether the type has every class in `class`.
    pub fn has(&self, class: u32) -> bool {
        self.classes & class == class
    }
}

/// Fortran kinds bound to C types: (C TYPENAME, Fortran declaration,
/// specific-name suffix). One C type per Fortran kind, so generic
/// interfaces stay unambiguous.
pub const FORTRAN: &[(&str, &str, &str)] = &[
    ("int32", "integer(c_int32_t)", "int4"),
    ("int64", "integer(c_int64_t)", "int8"),
    ("float", "real(c_float)", "real4"),
    ("double", "real(c_double)", "real8"),
];

/// Fortran complex kinds, moved by the sized routines of their width.
pub const FORTRAN_COMPLEX: &[(u32, &str, &str)] =
    &[(64, "complex(c_float_complex)", "complex4"), (128, "complex(c_double_complex)", "complex8")];

const fn t(name: &'static str, c: &'static str, rust: &'static str, generic: bool, classes: u32) -> Ty {
    Ty { name, c, rust, generic, classes: classes | ARITH, host_only: false }
}

/// A host-only type of the OpenSHMEM family.
const fn h(name: &'static str, c: &'static str, rust: &'static str, classes: u32) -> Ty {
    Ty { name, c, rust, generic: true, classes, host_only: true }
}

/// The element types of the typed interfaces: the standard RMA types
/// (OpenSHMEM 1.5 Table 5; Intel SHMEM's T23) with their classes, then the
/// complex reduction types (Table 10). `t` rows have every arithmetic class.
pub const RMA: &[Ty] = &[
    t("float", "float", "f32", true, EXT | DEPRED | DEPAMOF),
    t("double", "double", "f64", true, EXT | DEPRED | DEPAMOF),
    t("char", "char", "c_char", true, 0),
    t("schar", "signed char", "c_schar", true, EXT | STD | BIT | REDBIT),
    t("short", "short", "c_short", true, DEPRED | DEPBIT | DEPWAIT | DEPSYNC),
    t("int", "int", "c_int", true, EXT | STD | SYNC | DEPRED | DEPBIT | DEPAMO | DEPAMOF | DEPWAIT),
    t("long", "long", "c_long", true, EXT | STD | SYNC | DEPRED | DEPBIT | DEPAMO | DEPAMOF | DEPWAIT),
    t("longlong", "long long", "c_longlong", true, EXT | STD | SYNC | DEPRED | DEPBIT | DEPAMO | DEPAMOF | DEPWAIT),
    t("uchar", "unsigned char", "c_uchar", true, REDBIT),
    t("ushort", "unsigned short", "c_ushort", true, REDBIT | DEPSYNC),
    t("uint", "unsigned int", "c_uint", true, EXT | STD | BIT | SYNC | REDBIT),
    t("ulong", "unsigned long", "c_ulong", true, EXT | STD | BIT | SYNC | REDBIT),
    t("ulonglong", "unsigned long long", "c_ulonglong", true, EXT | STD | BIT | SYNC | REDBIT),
    t("int8", "int8_t", "i8", false, REDBIT),
    t("int16", "int16_t", "i16", false, REDBIT),
    t("int32", "int32_t", "i32", false, EXT | STD | BIT | SYNC | REDBIT),
    t("int64", "int64_t", "i64", false, EXT | STD | BIT | SYNC | REDBIT),
    t("uint8", "uint8_t", "u8", false, REDBIT),
    t("uint16", "uint16_t", "u16", false, REDBIT),
    t("uint32", "uint32_t", "u32", false, EXT | STD | BIT | SYNC | REDBIT),
    t("uint64", "uint64_t", "u64", false, EXT | STD | BIT | SYNC | REDBIT),
    t("size", "size_t", "usize", false, EXT | STD | SYNC | REDBIT),
    t("ptrdiff", "ptrdiff_t", "isize", false, EXT | STD | SYNC),
    // x87 80-bit extended precision in 16 bytes (x86-64 only: see
    // `ti::LongDouble`).
    h("longdouble", "long double", "ti::LongDouble", ARITH | DEPRED),
    // C `float _Complex` / C++ `std::complex<float>` (the macro is defined
    // in shmem_typed.h).
    h("complexf", "ISHMEMI_COMPLEXF", "ti::Complex<f32>", SUMPROD | DEPRED),
    h("complexd", "ISHMEMI_COMPLEXD", "ti::Complex<f64>", SUMPROD | DEPRED),
];

/// The standard C type a fixed-width TYPENAME is on LP64 Linux, for the C11
/// and C++ generic selections of classes that list only the fixed-width
/// name (bitwise AMOs on `int32_t`/`int64_t`, bitwise reductions on
/// `int16_t`..., so `int` and `long` select them).
pub fn std_equivalent(name: &str) -> Option<&'static str> {
    Some(match name {
        "int8" => "signed char",
        "int16" => "short",
        "int32" => "int",
        "int64" | "ptrdiff" => "long",
        "uint8" => "unsigned char",
        "uint16" => "unsigned short",
        "uint32" => "unsigned int",
        "uint64" | "size" => "unsigned long",
        _ => return None,
    })
}

/// Sized RMA: bits and the Rust element type moved.
pub const SIZED: &[(u32, &str)] =
    &[(8, "u8"), (16, "u16"), (32, "u32"), (64, "u64"), (128, "crate::typed_impl::Bits128")];

/// OpenCL C type of each RMA type (OpenCL's `long` is 64 bits, as C's
/// `long` and `long long` are on the LP64 hosts we build for).
pub fn opencl(name: &str) -> &'static str {
    match name {
        "float" => "float",
        "double" => "double",
        "char" | "schar" | "int8" => "char",
        "short" | "int16" => "short",
        "int" | "int32" => "int",
        "long" | "longlong" | "int64" | "ptrdiff" => "long",
        "uchar" | "uint8" => "uchar",
        "ushort" | "uint16" => "ushort",
        "uint" | "uint32" => "uint",
        "ulong" | "ulonglong" | "uint64" | "size" => "ulong",
        other => unreachable!("no OpenCL type for {other}"),
    }
}
