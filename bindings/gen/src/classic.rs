//! The classic Fortran interface: the include file `shmem.fh` and the
//! library entry points behind it (`bindings/c/src/fortran_classic.rs`).
//!
//! Classic SHMEM Fortran programs (OpenSHMEM 1.3 and earlier, SGI/Cray
//! SHMEM) call routines such as `SHMEM_INTEGER_PUT` or `SHMEM_INT8_FADD`
//! through implicit interfaces: every argument by reference, the external
//! name in lower case with one trailing underscore (gfortran, Intel
//! Fortran, flang and nvfortran by default). Each entry point here reads its
//! by-reference integers and calls the C routine of the same meaning, so the
//! checks and errors are the C routine's. Default integers are 4 bytes (no
//! `-fdefault-integer-8`).

use std::fmt::Write as _;

/// What a classic routine's arguments look like.
#[derive(Clone, Copy, PartialEq)]
enum Shape {
    /// (dest, source, nelems, pe)
    Rma,
    /// (dest, source, tst, sst, nelems, pe)
    Strided,
    /// (dest, value, pe) returning the old value
    SwapLike,
    /// (dest, cond, value, pe) returning the old value
    Cswap,
    /// (dest, pe) returning a value
    FetchLike,
    /// (dest, value, pe)
    SetLike,
    /// (dest, pe)
    IncLike,
    /// (ivar, cmp_value)
    Wait,
    /// (ivar, cmp, cmp_value)
    WaitUntil,
    /// (dest, source, nelems, PE_root, PE_start, logPE_stride, PE_size, pSync)
    Bcast,
    /// (dest, source, nelems, PE_start, logPE_stride, PE_size, pSync)
    Collect,
    /// (dest, source, tst, sst, nelems, PE_start, logPE_stride, PE_size, pSync)
    Alltoalls,
    /// (dest, source, nreduce, PE_start, logPE_stride, PE_size, pWrk, pSync)
    ToAll,
}

/// One classic routine: its Fortran name (lower case), its shape, the C
/// routine it calls, and for the AMOs and waits the element type (Rust,
/// Fortran declaration of a function result).
struct Classic {
    name: String,
    shape: Shape,
    c: String,
    elem: (&'static str, &'static str),
}

/// Fortran integer/real kinds of the AMOs and waits: (name part, C TYPENAME,
/// Rust type, Fortran declaration).
const AMO_KINDS: &[(&str, &str, &str, &str)] = &[
    ("int4", "int", "i32", "integer*4"),
    ("int8", "long", "i64", "integer*8"),
    ("real4", "float", "f32", "real*4"),
    ("real8", "double", "f64", "real*8"),
];

fn table() -> Vec<Classic> {
    let mut v = Vec::new();
    let mut add = |name: String, shape: Shape, c: String, elem: (&'static str, &'static str)| {
        v.push(Classic { name, shape, c, elem })
    };
    let none = ("", "");
    // Contiguous and strided RMA. Fortran types by name (default kinds:
    // character 1 byte, integer/logical/real 4, double and complex 8), then
    // the sized forms, whose numbers are bytes (4, 8) or bits (32, 64, 128).
    let named = [
        ("character", Some("shmem_char_{op}")),
        ("complex", None),
        ("double", Some("shmem_double_{op}")),
        ("integer", Some("shmem_int_{op}")),
        ("logical", Some("shmem_int_{op}")),
        ("real", Some("shmem_float_{op}")),
    ];
    for op in ["put", "get", "put_nbi", "get_nbi", "iput", "iget"] {
        let strided = op.starts_with('i');
        let shape = if strided { Shape::Strided } else { Shape::Rma };
        let base = op.trim_end_matches("_nbi");
        let nbi = if op.ends_with("_nbi") { "_nbi" } else { "" };
        for (f, c) in named {
            if strided && f == "character" {
                continue;
            }
            // complex (two default reals) moves as 64-bit words.
            let c = c.map(|c| c.replace("{op}", op)).unwrap_or_else(|| format!("shmem_{base}64{nbi}"));
            add(format!("shmem_{f}_{op}"), shape, c, none);
        }
        for (f, bits) in [("4", 32), ("8", 64), ("32", 32), ("64", 64), ("128", 128)] {
            add(format!("shmem_{base}{f}{nbi}"), shape, format!("shmem_{base}{bits}{nbi}"), none);
        }
        if !strided {
            add(format!("shmem_{base}mem{nbi}"), shape, format!("shmem_{base}mem{nbi}"), none);
        }
    }
    // AMOs: swap, fetch and set on every kind; the rest on the integers.
    for &(f, c, rust, decl) in AMO_KINDS {
        let e = (rust, decl);
        add(format!("shmem_{f}_swap"), Shape::SwapLike, format!("shmem_{c}_atomic_swap"), e);
        add(format!("shmem_{f}_fetch"), Shape::FetchLike, format!("shmem_{c}_atomic_fetch"), e);
        add(format!("shmem_{f}_set"), Shape::SetLike, format!("shmem_{c}_atomic_set"), e);
        if f.starts_with("int") {
            add(format!("shmem_{f}_cswap"), Shape::Cswap, format!("shmem_{c}_atomic_compare_swap"), e);
            add(format!("shmem_{f}_fadd"), Shape::SwapLike, format!("shmem_{c}_atomic_fetch_add"), e);
            add(format!("shmem_{f}_finc"), Shape::FetchLike, format!("shmem_{c}_atomic_fetch_inc"), e);
            add(format!("shmem_{f}_add"), Shape::SetLike, format!("shmem_{c}_atomic_add"), e);
            add(format!("shmem_{f}_inc"), Shape::IncLike, format!("shmem_{c}_atomic_inc"), e);
            add(format!("shmem_{f}_wait"), Shape::Wait, format!("shmem_{c}_wait"), e);
            add(format!("shmem_{f}_wait_until"), Shape::WaitUntil, format!("shmem_{c}_wait_until"), e);
        }
    }
    // The untyped names work on default integers.
    let int4 = (AMO_KINDS[0].2, AMO_KINDS[0].3);
    add("shmem_swap".into(), Shape::SwapLike, "shmem_int_atomic_swap".into(), int4);
    add("shmem_wait".into(), Shape::Wait, "shmem_int_wait".into(), int4);
    add("shmem_wait_until".into(), Shape::WaitUntil, "shmem_int_wait_until".into(), int4);
    // Active-set collectives: 4/8 bytes or 32/64 bits per element.
    for (f, bits) in [("4", 32), ("8", 64), ("32", 32), ("64", 64)] {
        add(format!("shmem_broadcast{f}"), Shape::Bcast, format!("shmem_broadcast{bits}"), none);
        add(format!("shmem_collect{f}"), Shape::Collect, format!("shmem_collect{bits}"), none);
        add(format!("shmem_fcollect{f}"), Shape::Collect, format!("shmem_fcollect{bits}"), none);
    }
    for bits in [32, 64] {
        add(format!("shmem_alltoall{bits}"), Shape::Collect, format!("shmem_alltoall{bits}"), none);
        add(format!("shmem_alltoalls{bits}"), Shape::Alltoalls, format!("shmem_alltoalls{bits}"), none);
    }
    let reductions: &[(&str, &str, &[&str])] = &[
        ("int4", "int", &["and", "or", "xor", "max", "min", "sum", "prod"]),
        ("int8", "long", &["and", "or", "xor", "max", "min", "sum", "prod"]),
        ("real4", "float", &["max", "min", "sum", "prod"]),
        ("real8", "double", &["max", "min", "sum", "prod"]),
        ("comp4", "complexf", &["sum", "prod"]),
        ("comp8", "complexd", &["sum", "prod"]),
    ];
    for (f, c, ops) in reductions {
        for op in *ops {
            add(format!("shmem_{f}_{op}_to_all"), Shape::ToAll, format!("shmem_{c}_{op}_to_all"), none);
        }
    }
    v
}

/// The Rust entry point of one classic routine.
fn rust_fn(r: &Classic) -> String {
    let lower = &r.name;
    // Errors name the routine as a Fortran program spells it.
    let up = lower.to_uppercase();
    let n = &up;
    let (e, _) = r.elem;
    let cnt = |arg: &str| format!("fc::count(\"{n}\", \"{arg}\", {arg})");
    let int = |arg: &str| format!("fc::int(\"{n}\", \"{arg}\", {arg})");
    let val = |arg: &str| format!("fc::val(\"{n}\", \"{arg}\", {arg})");
    let aset = "fc::int(\"{n}\", \"PE_start\", PE_start), fc::int(\"{n}\", \"logPE_stride\", logPE_stride), \
                fc::int(\"{n}\", \"PE_size\", PE_size)"
        .replace("{n}", n);
    let (params, ret, call) = match r.shape {
        Shape::Rma => (
            "dest: *mut c_void, source: *const c_void, nelems: *const c_int, pe: *const c_int".to_string(),
            String::new(),
            format!("dest.cast(), source.cast(), {}, {}", cnt("nelems"), int("pe")),
        ),
        Shape::Strided => (
            "dest: *mut c_void, source: *const c_void, tst: *const c_int, sst: *const c_int, nelems: *const c_int, \
             pe: *const c_int"
                .to_string(),
            String::new(),
            format!(
                "dest.cast(), source.cast(), {} as isize, {} as isize, {}, {}",
                int("tst"),
                int("sst"),
                cnt("nelems"),
                int("pe")
            ),
        ),
        Shape::SwapLike => (
            format!("dest: *mut {e}, value: *const {e}, pe: *const c_int"),
            format!(" -> {e}"),
            format!("dest, {}, {}", val("value"), int("pe")),
        ),
        Shape::Cswap => (
            format!("dest: *mut {e}, cond: *const {e}, value: *const {e}, pe: *const c_int"),
            format!(" -> {e}"),
            format!("dest, {}, {}, {}", val("cond"), val("value"), int("pe")),
        ),
        Shape::FetchLike => {
            (format!("dest: *mut {e}, pe: *const c_int"), format!(" -> {e}"), format!("dest, {}", int("pe")))
        }
        Shape::SetLike => (
            format!("dest: *mut {e}, value: *const {e}, pe: *const c_int"),
            String::new(),
            format!("dest, {}, {}", val("value"), int("pe")),
        ),
        Shape::IncLike => (format!("dest: *mut {e}, pe: *const c_int"), String::new(), format!("dest, {}", int("pe"))),
        Shape::Wait => {
            (format!("ivar: *mut {e}, cmp_value: *const {e}"), String::new(), format!("ivar, {}", val("cmp_value")))
        }
        Shape::WaitUntil => (
            format!("ivar: *mut {e}, cmp: *const c_int, cmp_value: *const {e}"),
            String::new(),
            format!("ivar, {}, {}", int("cmp"), val("cmp_value")),
        ),
        Shape::Bcast => (
            "dest: *mut c_void, source: *const c_void, nelems: *const c_int, PE_root: *const c_int, \
             PE_start: *const c_int, logPE_stride: *const c_int, PE_size: *const c_int, pSync: *mut c_void"
                .to_string(),
            String::new(),
            format!("dest.cast(), source.cast(), {}, {}, {aset}, pSync.cast()", cnt("nelems"), int("PE_root")),
        ),
        Shape::Collect => (
            "dest: *mut c_void, source: *const c_void, nelems: *const c_int, PE_start: *const c_int, \
             logPE_stride: *const c_int, PE_size: *const c_int, pSync: *mut c_void"
                .to_string(),
            String::new(),
            format!("dest.cast(), source.cast(), {}, {aset}, pSync.cast()", cnt("nelems")),
        ),
        Shape::Alltoalls => (
            "dest: *mut c_void, source: *const c_void, tst: *const c_int, sst: *const c_int, nelems: *const c_int, \
             PE_start: *const c_int, logPE_stride: *const c_int, PE_size: *const c_int, pSync: *mut c_void"
                .to_string(),
            String::new(),
            format!(
                "dest.cast(), source.cast(), {} as isize, {} as isize, {}, {aset}, pSync.cast()",
                int("tst"),
                int("sst"),
                cnt("nelems")
            ),
        ),
        Shape::ToAll => (
            "dest: *mut c_void, source: *const c_void, nreduce: *const c_int, PE_start: *const c_int, \
             logPE_stride: *const c_int, PE_size: *const c_int, pWrk: *mut c_void, pSync: *mut c_void"
                .to_string(),
            String::new(),
            format!("dest.cast(), source.cast(), {}, {aset}, pWrk.cast(), pSync.cast()", int("nreduce")),
        ),
    };
    format!(
        "/// `{}`: calls `{}`.\n///\n/// # Safety\n/// Fortran passes every argument by reference: each pointer is valid,\n/// and the arrays are as long as the counts say.\n#[no_mangle]\npub unsafe extern \"C\" fn {lower}_({params}){ret} {{\n    // SAFETY: the caller's contract (above); the C routine checks the rest.\n    unsafe {{ crate::typed::{}({call}) }}\n}}\n",
        up, r.c, r.c
    )
}

/// `bindings/c/src/fortran_classic.rs`: the typed classic entry points.
pub fn rust(banner: &str) -> String {
    let mut s = format!(
        "// {banner}\n\n\
         //! The typed routines of the classic Fortran interface (`shmem.fh`):\n\
         //! lower-case names with a trailing underscore, every argument by\n\
         //! reference, each calling the C routine of the same meaning. The\n\
         //! untyped ones (`MY_PE`, `SHPALLOC`, ...) are in `fortran.rs`.\n\n\
         #![allow(non_snake_case)]\n\n\
         use crate::fortran as fc;\n\
         use std::ffi::{{c_int, c_void}};\n\n"
    );
    for r in table() {
        s.push_str(&rust_fn(&r));
        s.push('\n');
    }
    s
}

/// The function results `shmem_decls.fh` declares for the hand-written
/// entry points of `fortran.rs` (the typed ones come from the table).
const PLAIN_RESULTS: &[(&str, &str)] = &[
    ("integer", "my_pe"),
    ("integer", "num_pes"),
    ("integer", "shmem_my_pe"),
    ("integer", "shmem_n_pes"),
    ("logical", "shmem_pe_accessible"),
    ("logical", "shmem_addr_accessible"),
    ("integer*8", "shmem_ptr"),
    ("integer", "shmem_test_lock"),
];

/// Fixed-form-safe line: starts in column 7, ends before column 73.
fn fixed(s: &mut String, line: &str) {
    assert!(line.len() <= 66, "shmem.fh line too long for fixed form: {line}");
    let _ = writeln!(s, "      {line}");
}

/// `bindings/fortran/shmem.fh`: the constants of the classic interface,
/// usable from fixed- and free-form sources. It declares no functions:
/// Fortran forbids declaring a name's type twice, and classic programs
/// declare the ones they call themselves (`integer shmem_my_pe`), as with
/// Sandia OpenSHMEM's and Open MPI's `shmem.fh`. `shmem_decls.fh` ([`decls_fh`])
/// declares them for programs that want the library to.
pub fn fh(banner: &str, constants: &[(&str, i64)], vendor: &str) -> String {
    let mut s = String::new();
    for l in banner.split(". ") {
        let _ = writeln!(s, "! {}", l.trim_end_matches('.'));
    }
    s.push_str(
        "!\n\
         ! shmem.fh: the classic OpenSHMEM Fortran interface (OpenSHMEM 1.3\n\
         ! and earlier, SGI/Cray SHMEM names). INCLUDE it in each program unit\n\
         ! that calls SHMEM; link with -lishmem (oshfort does both). Default\n\
         ! integers are 4 bytes. pSync arrays are default integers of\n\
         ! SHMEM_*_SYNC_SIZE elements aligned to 8 bytes, every element set to\n\
         ! SHMEM_SYNC_VALUE. New code should use the shmem module instead.\n\
         ! Declare the result type of each function you call (integer\n\
         ! shmem_my_pe, integer*8 shmem_int8_fadd, ...), or INCLUDE\n\
         ! 'shmem_decls.fh' after this file to have them all declared.\n!\n",
    );
    for (name, v) in constants {
        fixed(&mut s, &format!("integer {name}"));
        fixed(&mut s, &format!("parameter ({name} = {v})"));
    }
    fixed(&mut s, "character*(*) SHMEM_VENDOR_STRING");
    fixed(&mut s, &format!("parameter (SHMEM_VENDOR_STRING = '{vendor}')"));
    s
}

/// `bindings/fortran/shmem_decls.fh`: the result types of the classic
/// interface's functions, for programs that do not declare them
/// themselves (an opt-in: a program that declares one of them must not
/// include this file).
pub fn decls_fh(banner: &str) -> String {
    let mut s = String::new();
    for l in banner.split(". ") {
        let _ = writeln!(s, "! {}", l.trim_end_matches('.'));
    }
    s.push_str(
        "!\n\
         ! shmem_decls.fh: the result types of the classic interface's\n\
         ! functions. INCLUDE it after 'shmem.fh' in a program unit that does\n\
         ! not declare them itself (Fortran forbids declaring a name twice).\n!\n",
    );
    // EXTERNAL too: a program unit that uses none of them compiles
    // without unused-variable warnings.
    let typed = table();
    let results = PLAIN_RESULTS.iter().map(|(d, n)| (*d, n.to_string())).chain(
        typed
            .iter()
            .filter(|r| matches!(r.shape, Shape::SwapLike | Shape::Cswap | Shape::FetchLike))
            .map(|r| (r.elem.1, r.name.clone())),
    );
    for (decl, name) in results {
        fixed(&mut s, &format!("{decl} {name}"));
        fixed(&mut s, &format!("external {name}"));
    }
    s
}
