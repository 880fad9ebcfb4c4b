//! The one type table. Every typed family in every language is generated
//! from these rows.

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
}

const fn t(name: &'static str, c: &'static str, rust: &'static str, generic: bool) -> Ty {
    Ty { name, c, rust, generic }
}

/// The standard RMA types (OpenSHMEM 1.5 Table 5; Intel SHMEM's T23).
pub const RMA: &[Ty] = &[
    t("float", "float", "f32", true),
    t("double", "double", "f64", true),
    t("char", "char", "c_char", true),
    t("schar", "signed char", "c_schar", true),
    t("short", "short", "c_short", true),
    t("int", "int", "c_int", true),
    t("long", "long", "c_long", true),
    t("longlong", "long long", "c_longlong", true),
    t("uchar", "unsigned char", "c_uchar", true),
    t("ushort", "unsigned short", "c_ushort", true),
    t("uint", "unsigned int", "c_uint", true),
    t("ulong", "unsigned long", "c_ulong", true),
    t("ulonglong", "unsigned long long", "c_ulonglong", true),
    t("int8", "int8_t", "i8", false),
    t("int16", "int16_t", "i16", false),
    t("int32", "int32_t", "i32", false),
    t("int64", "int64_t", "i64", false),
    t("uint8", "uint8_t", "u8", false),
    t("uint16", "uint16_t", "u16", false),
    t("uint32", "uint32_t", "u32", false),
    t("uint64", "uint64_t", "u64", false),
    t("size", "size_t", "usize", false),
    t("ptrdiff", "ptrdiff_t", "isize", false),
];

/// Sized RMA: bits and the Rust element type moved.
pub const SIZED: &[(u32, &str)] = &[
    (8, "u8"),
    (16, "u16"),
    (32, "u32"),
    (64, "u64"),
    (128, "crate::typed_impl::Bits128"),
];
