//! The Fortran 2008 modules `ishmem` and `shmem`: ISO_C_BINDING interfaces
//! over the C ABI, generic interfaces over the Fortran kinds of the type
//! table, and small module procedures where Fortran needs help (default
//! integer counts, symmetric allocation into Fortran pointers).

use crate::types::{Ty, FORTRAN, FORTRAN_COMPLEX, RMA};
use std::fmt::Write as _;

fn ty(name: &str) -> &'static Ty {
    RMA.iter().find(|t| t.name == name).expect("type in the table")
}

/// Breaks a free-form line to the 132-column limit with `&` continuations.
fn wrap(line: &str) -> String {
    if line.len() <= 100 {
        return format!("{line}\n");
    }
    let indent: String = line.chars().take_while(|c| *c == ' ').collect();
    let mut out = String::new();
    let mut cur = String::new();
    for tok in line.split_inclusive(", ") {
        if cur.len() + tok.len() > 95 && !cur.trim().is_empty() {
            let _ = writeln!(out, "{cur}&");
            cur = format!("{indent}    & ");
        }
        cur.push_str(tok);
    }
    let _ = writeln!(out, "{cur}");
    out
}

struct Gen {
    /// Private bind(C) interface bodies.
    ifaces: String,
    /// Module procedures.
    procs: String,
    /// generic name -> specific procedure names
    generics: Vec<(String, Vec<String>)>,
}

impl Gen {
    fn generic(&mut self, g: &str, specific: String) {
        match self.generics.iter_mut().find(|(n, _)| n == g) {
            Some((_, v)) => v.push(specific),
            None => self.generics.push((g.to_string(), vec![specific])),
        }
    }

    /// A bind(C) interface named `f_name` for C symbol `c_name`.
    fn iface(&mut self, kind: &str, f_name: &str, c_name: &str, args: &[(&str, String)], ret: Option<&str>) {
        let names: Vec<&str> = args.iter().map(|(n, _)| *n).collect();
        let head = match (kind, ret) {
            ("function", Some(r)) => {
                format!("    {r} function {f_name}({}) bind(C, name=\"{c_name}\")", names.join(", "))
            }
            _ => format!("    subroutine {f_name}({}) bind(C, name=\"{c_name}\")", names.join(", ")),
        };
        self.ifaces.push_str(&wrap(&head));
        self.ifaces.push_str("      import\n");
        for (n, d) in args {
            self.ifaces.push_str(&wrap(&format!("      {d} :: {n}")));
        }
        let _ = writeln!(self.ifaces, "    end {}", if ret.is_some() { "function" } else { "subroutine" });
    }

    /// A module procedure body.
    fn proc_(&mut self, text: &str) {
        for l in text.lines() {
            self.procs.push_str(&wrap(l));
        }
    }
}

/// The module text for a family (`prefix` "shmem" or "ishmem").
pub fn module(prefix: &str, constants: &[(&str, i64)]) -> String {
    let up = prefix.to_uppercase();
    let block_prefix = if prefix == "shmem" { "shmem" } else { "ishmemx" };
    let _ = block_prefix;
    let mut g = Gen { ifaces: String::new(), procs: String::new(), generics: Vec::new() };
    let c = |n: &str| format!("c_{prefix}_{n}");

    // ----- plain routines
    type Plain<'a> = (&'a str, &'a [(&'a str, &'a str)], Option<&'a str>);
    let plain: &[Plain] = &[
        ("init", &[], None),
        ("finalize", &[], None),
        ("my_pe", &[], Some("integer(c_int)")),
        ("n_pes", &[], Some("integer(c_int)")),
        ("barrier_all", &[], None),
        ("sync_all", &[], None),
        ("fence", &[], None),
        ("quiet", &[], None),
        ("global_exit", &[("status", "integer(c_int), value")], None),
        ("team_my_pe", &[("team", "integer(c_int), value")], Some("integer(c_int)")),
        ("team_n_pes", &[("team", "integer(c_int), value")], Some("integer(c_int)")),
        ("team_destroy", &[("team", "integer(c_int), value")], None),
        ("team_sync", &[("team", "integer(c_int), value")], Some("integer(c_int)")),
        (
            "team_translate_pe",
            &[
                ("src_team", "integer(c_int), value"),
                ("src_pe", "integer(c_int), value"),
                ("dest_team", "integer(c_int), value"),
            ],
            Some("integer(c_int)"),
        ),
        ("malloc", &[("size", "integer(c_size_t), value")], Some("type(c_ptr)")),
        ("free", &[("ptr", "type(c_ptr), value")], None),
        ("ptr", &[("dest", "type(c_ptr), value"), ("pe", "integer(c_int), value")], Some("type(c_ptr)")),
        ("signal_fetch", &[("sig_addr", "integer(c_int64_t), intent(in)")], Some("integer(c_int64_t)")),
        (
            "signal_wait_until",
            &[
                ("sig_addr", "integer(c_int64_t), intent(inout)"),
                ("cmp", "integer(c_int), value"),
                ("cmp_value", "integer(c_int64_t), value"),
            ],
            Some("integer(c_int64_t)"),
        ),
    ];
    let mut public_plain = String::new();
    let mut mem: Vec<String> = Vec::new();
    for (name, args, ret) in plain {
        let a: Vec<(&str, String)> = args.iter().map(|(n, d)| (*n, d.to_string())).collect();
        // These are called directly: the Fortran name is the C name.
        g.iface(
            if ret.is_some() { "function" } else { "subroutine" },
            &format!("{prefix}_{name}"),
            &format!("{prefix}_{name}"),
            &a,
            *ret,
        );
        let _ = write!(public_plain, "{prefix}_{name}, ");
    }
    // team splits: private interfaces + friendly wrappers
    g.iface(
        "function",
        &c("team_split_strided"),
        &format!("{prefix}_team_split_strided"),
        &[
            ("parent", "integer(c_int), value".into()),
            ("start", "integer(c_int), value".into()),
            ("stride", "integer(c_int), value".into()),
            ("size", "integer(c_int), value".into()),
            ("config", "type(c_ptr), value".into()),
            ("config_mask", "integer(c_long), value".into()),
            ("new_team", "integer(c_int), intent(out)".into()),
        ],
        Some("integer(c_int)"),
    );
    g.proc_(&format!(
        "  !> Collective over parent: the team of parent PEs start + i*stride, i < size.\n\
         \x20 !> Non-members get {up}_TEAM_INVALID. Returns 0 on success.\n\
         \x20 integer function {prefix}_team_split_strided(parent, start, stride, size, new_team)\n\
         \x20   integer, intent(in) :: parent, start, stride, size\n\
         \x20   integer, intent(out) :: new_team\n\
         \x20   integer(c_int) :: t\n\
         \x20   {prefix}_team_split_strided = {}(parent, start, stride, size, c_null_ptr, 0_c_long, t)\n\
         \x20   new_team = t\n\
         \x20 end function\n",
        c("team_split_strided")
    ));
    g.iface(
        "function",
        &c("team_split_2d"),
        &format!("{prefix}_team_split_2d"),
        &[
            ("parent", "integer(c_int), value".into()),
            ("xrange", "integer(c_int), value".into()),
            ("xconfig", "type(c_ptr), value".into()),
            ("xmask", "integer(c_long), value".into()),
            ("xteam", "integer(c_int), intent(out)".into()),
            ("yconfig", "type(c_ptr), value".into()),
            ("ymask", "integer(c_long), value".into()),
            ("yteam", "integer(c_int), intent(out)".into()),
        ],
        Some("integer(c_int)"),
    );
    g.proc_(&format!(
        "  !> Collective over parent: row (x) and column (y) teams of a grid with xrange columns.\n\
         \x20 integer function {prefix}_team_split_2d(parent, xrange, xteam, yteam)\n\
         \x20   integer, intent(in) :: parent, xrange\n\
         \x20   integer, intent(out) :: xteam, yteam\n\
         \x20   integer(c_int) :: x, y\n\
         \x20   {prefix}_team_split_2d = {}(parent, xrange, c_null_ptr, 0_c_long, x, c_null_ptr, 0_c_long, y)\n\
         \x20   xteam = x\n\
         \x20   yteam = y\n\
         \x20 end function\n",
        c("team_split_2d")
    ));

    // ----- symmetric allocation into Fortran pointers
    let mut kinds: Vec<(String, String, usize)> = FORTRAN
        .iter()
        .map(|(t, d, s)| (d.to_string(), s.to_string(), if t.ends_with("64") || *t == "double" { 8 } else { 4 }))
        .collect();
    for (bits, d, s) in FORTRAN_COMPLEX {
        kinds.push((d.to_string(), s.to_string(), *bits as usize / 8));
    }
    for (decl, suf, bytes) in &kinds {
        g.proc_(&format!(
            "  !> Collective: a symmetric array of n elements in a (disassociated when n <= 0).\n\
             \x20 subroutine {prefix}_alloc_{suf}(a, n)\n\
             \x20   {decl}, pointer, intent(out) :: a(:)\n\
             \x20   integer, intent(in) :: n\n\
             \x20   type(c_ptr) :: p\n\
             \x20   nullify(a)\n\
             \x20   if (n <= 0) return\n\
             \x20   p = {prefix}_malloc(int(n, c_size_t) * {bytes}_c_size_t)\n\
             \x20   if (c_associated(p)) call c_f_pointer(p, a, [n])\n\
             \x20 end subroutine\n\
             \x20 !> Collective: frees an array from {prefix}_alloc.\n\
             \x20 subroutine {prefix}_dealloc_{suf}(a)\n\
             \x20   {decl}, pointer, intent(inout) :: a(:)\n\
             \x20   if (associated(a)) call {prefix}_free(c_loc(a(1)))\n\
             \x20   nullify(a)\n\
             \x20 end subroutine\n"
        ));
        g.generic(&format!("{prefix}_alloc"), format!("{prefix}_alloc_{suf}"));
        g.generic(&format!("{prefix}_dealloc"), format!("{prefix}_dealloc_{suf}"));
    }

    // ----- typed routines
    let arr = |d: &str, intent: &str| format!("{d}, intent({intent}) :: x(*)").replace(" :: x(*)", "");
    let _ = arr;
    for &(tname, decl, suf) in FORTRAN {
        let t = ty(tname);
        let cname = |op: &str| format!("{prefix}_{}_{op}", t.name);
        let int_kind = tname.starts_with("int");
        // contiguous RMA
        for op in ["put", "get", "put_nbi", "get_nbi"] {
            rma(&mut g, prefix, op, &cname(op), decl, suf);
        }
        for op in ["iput", "iget"] {
            strided(&mut g, prefix, op, &cname(op), decl, suf);
        }
        // p / g
        g.iface(
            "subroutine",
            &c(&format!("p_{suf}")),
            &cname("p"),
            &[
                ("dest", format!("{decl}, intent(inout)")),
                ("value", format!("{decl}, value")),
                ("pe", "integer(c_int), value".into()),
            ],
            None,
        );
        g.generic(&format!("{prefix}_p"), c(&format!("p_{suf}")));
        g.iface(
            "function",
            &c(&format!("g_{suf}")),
            &cname("g"),
            &[("source", format!("{decl}, intent(in)")), ("pe", "integer(c_int), value".into())],
            Some(decl),
        );
        g.generic(&format!("{prefix}_g"), c(&format!("g_{suf}")));
        // AMOs
        let scalar = |n: &'static str| (n, format!("{decl}, intent(inout)"));
        let val = |n: &'static str| (n, format!("{decl}, value"));
        let pe = ("pe", "integer(c_int), value".to_string());
        type Amo<'a> = (&'a str, Vec<(&'a str, String)>, bool);
        let amos: Vec<Amo> = {
            let mut v = vec![
                ("atomic_fetch", vec![scalar("source"), pe.clone()], true),
                ("atomic_set", vec![scalar("dest"), val("value"), pe.clone()], false),
                ("atomic_swap", vec![scalar("dest"), val("value"), pe.clone()], true),
            ];
            if int_kind {
                v.extend([
                    ("atomic_compare_swap", vec![scalar("dest"), val("cond"), val("value"), pe.clone()], true),
                    ("atomic_fetch_inc", vec![scalar("dest"), pe.clone()], true),
                    ("atomic_inc", vec![scalar("dest"), pe.clone()], false),
                    ("atomic_fetch_add", vec![scalar("dest"), val("value"), pe.clone()], true),
                    ("atomic_add", vec![scalar("dest"), val("value"), pe.clone()], false),
                    ("atomic_fetch_and", vec![scalar("dest"), val("value"), pe.clone()], true),
                    ("atomic_and", vec![scalar("dest"), val("value"), pe.clone()], false),
                    ("atomic_fetch_or", vec![scalar("dest"), val("value"), pe.clone()], true),
                    ("atomic_or", vec![scalar("dest"), val("value"), pe.clone()], false),
                    ("atomic_fetch_xor", vec![scalar("dest"), val("value"), pe.clone()], true),
                    ("atomic_xor", vec![scalar("dest"), val("value"), pe.clone()], false),
                ]);
            }
            v
        };
        for (op, args, fetching) in amos {
            let f_name = c(&format!("{op}_{suf}"));
            let r = if fetching { Some(decl) } else { None };
            g.iface(if fetching { "function" } else { "subroutine" }, &f_name, &cname(op), &args, r);
            g.generic(&format!("{prefix}_{op}"), f_name);
        }
        // put_signal
        let sig_specific = format!("{prefix}_put_signal_{suf}");
        g.iface(
            "subroutine",
            &c(&format!("put_signal_{suf}")),
            &cname("put_signal"),
            &[
                ("dest", format!("{decl}, intent(inout)")),
                ("source", format!("{decl}, intent(in)")),
                ("nelems", "integer(c_size_t), value".into()),
                ("sig_addr", "integer(c_int64_t), intent(inout)".into()),
                ("signal", "integer(c_int64_t), value".into()),
                ("sig_op", "integer(c_int), value".into()),
                ("pe", "integer(c_int), value".into()),
            ],
            None,
        );
        g.proc_(&format!(
            "  subroutine {sig_specific}(dest, source, nelems, sig_addr, signal, sig_op, pe)\n\
             \x20   {decl}, intent(inout) :: dest(*)\n\
             \x20   {decl}, intent(in) :: source(*)\n\
             \x20   integer, intent(in) :: nelems, sig_op, pe\n\
             \x20   integer(c_int64_t), intent(inout) :: sig_addr\n\
             \x20   integer(c_int64_t), intent(in) :: signal\n\
             \x20   call {}(dest(1), source(1), int(nelems, c_size_t), sig_addr, signal, sig_op, pe)\n\
             \x20 end subroutine\n",
            c(&format!("put_signal_{suf}"))
        ));
        g.generic(&format!("{prefix}_put_signal"), sig_specific);
        // wait_until / test on integer kinds
        if int_kind {
            g.iface(
                "subroutine",
                &c(&format!("wait_until_{suf}")),
                &cname("wait_until"),
                &[
                    ("ivar", format!("{decl}, intent(inout)")),
                    ("cmp", "integer(c_int), value".into()),
                    ("cmp_value", format!("{decl}, value")),
                ],
                None,
            );
            g.generic(&format!("{prefix}_wait_until"), c(&format!("wait_until_{suf}")));
            g.iface(
                "function",
                &c(&format!("test_{suf}")),
                &cname("test"),
                &[
                    ("ivar", format!("{decl}, intent(inout)")),
                    ("cmp", "integer(c_int), value".into()),
                    ("cmp_value", format!("{decl}, value")),
                ],
                Some("integer(c_int)"),
            );
            g.generic(&format!("{prefix}_test"), c(&format!("test_{suf}")));
        }
        // collectives
        let coll: Vec<(&str, &str)> = {
            let mut v = vec![
                ("broadcast", "root"),
                ("collect", ""),
                ("fcollect", ""),
                ("alltoall", ""),
                ("sum_reduce", ""),
                ("max_reduce", ""),
                ("min_reduce", ""),
                ("prod_reduce", ""),
            ];
            if int_kind {
                v.extend([("and_reduce", ""), ("or_reduce", ""), ("xor_reduce", "")]);
            }
            v
        };
        for (op, extra) in coll {
            let mut args = vec![
                ("team", "integer(c_int), value".to_string()),
                ("dest", format!("{decl}, intent(inout)")),
                ("source", format!("{decl}, intent(in)")),
                ("nelems", "integer(c_size_t), value".to_string()),
            ];
            if !extra.is_empty() {
                args.push(("PE_root", "integer(c_int), value".to_string()));
            }
            let cf = c(&format!("{op}_{suf}"));
            g.iface("function", &cf, &cname(op), &args, Some("integer(c_int)"));
            let specific = format!("{prefix}_{op}_{suf}");
            let (root_decl, root_arg, root_param) = if extra.is_empty() {
                ("", "", "")
            } else {
                ("    integer, intent(in) :: PE_root\n", ", PE_root", ", PE_root")
            };
            g.proc_(&format!(
                "  integer function {specific}(team, dest, source, nelems{root_param})\n\
                 \x20   integer, intent(in) :: team, nelems\n{root_decl}\
                 \x20   {decl}, intent(inout) :: dest(*)\n\
                 \x20   {decl}, intent(in) :: source(*)\n\
                 \x20   {specific} = {cf}(team, dest(1), source(1), int(nelems, c_size_t){root_arg})\n\
                 \x20 end function\n"
            ));
            g.generic(&format!("{prefix}_{op}"), specific);
        }
    }
    // complex kinds: RMA through the sized routines
    for (bits, decl, suf) in FORTRAN_COMPLEX {
        for op in ["put", "get", "put_nbi", "get_nbi"] {
            let cn = match op {
                "put" | "get" => format!("{prefix}_{op}{bits}"),
                _ => format!("{prefix}_{}{bits}_nbi", &op[..3]),
            };
            rma(&mut g, prefix, op, &cn, decl, suf);
        }
        for op in ["iput", "iget"] {
            strided(&mut g, prefix, op, &format!("{prefix}_{op}{bits}"), decl, suf);
        }
    }

    // ----- byte-level RMA: any contiguous array (or array element)
    for op in ["putmem", "getmem", "putmem_nbi", "getmem_nbi"] {
        let cf = c(op);
        g.iface(
            "subroutine",
            &cf,
            &format!("{prefix}_{op}"),
            &[
                ("dest", "type(*), dimension(*), intent(inout)".into()),
                ("source", "type(*), dimension(*), intent(in)".into()),
                ("nelems", "integer(c_size_t), value".into()),
                ("pe", "integer(c_int), value".into()),
            ],
            None,
        );
        g.proc_(&format!(
            "  !> Copies nbytes bytes ({}); dest and source are contiguous arrays.\n\
             \x20 subroutine {prefix}_{op}(dest, source, nbytes, pe)\n\
             \x20   type(*), intent(inout) :: dest(*)\n\
             \x20   type(*), intent(in) :: source(*)\n\
             \x20   integer, intent(in) :: nbytes, pe\n\
             \x20   if (nbytes > 0) call {cf}(dest, source, int(nbytes, c_size_t), pe)\n\
             \x20 end subroutine\n",
            if op.starts_with("put") { "to dest on pe" } else { "from source on pe" }
        ));
        mem.push(format!("{prefix}_{op}"));
    }

    // ----- assemble
    let mut s = format!(
        "! Generated by ishmem-gen (bindings/gen) from its type table. Do not edit;\n\
         ! run `cargo run -p ishmem-gen`.\n!\n\
         ! Fortran 2008 module `{prefix}`: ISO_C_BINDING interfaces over libishmem.\n\
         ! Counts, PEs and teams are default integers; arrays must be contiguous\n\
         ! symmetric objects (from {prefix}_alloc, or SAVEd/module variables).\n\
         module {prefix}\n  use, intrinsic :: iso_c_binding\n  implicit none\n  private\n\n"
    );
    for (name, v) in constants {
        let _ = writeln!(s, "  integer, parameter, public :: {name} = {v}");
    }
    s.push_str("\n  public :: ");
    let mut pubs: Vec<String> = plain.iter().map(|(n, _, _)| format!("{prefix}_{n}")).collect();
    pubs.push(format!("{prefix}_team_split_strided"));
    pubs.push(format!("{prefix}_team_split_2d"));
    pubs.extend(mem);
    pubs.extend(g.generics.iter().map(|(n, _)| n.clone()));
    s.push_str(wrap(&pubs.join(", ")).trim_start());
    s.push_str("\n  interface\n");
    s.push_str(&g.ifaces);
    s.push_str("  end interface\n\n");
    for (name, specifics) in &g.generics {
        let _ = writeln!(s, "  interface {name}");
        for sp in specifics {
            let _ = writeln!(s, "    procedure {sp}");
        }
        let _ = writeln!(s, "  end interface");
    }
    s.push_str("\ncontains\n\n");
    s.push_str(&g.procs);
    let _ = writeln!(s, "end module {prefix}");
    s
}

/// Contiguous RMA with a default-integer count.
fn rma(g: &mut Gen, prefix: &str, op: &str, c_name: &str, decl: &str, suf: &str) {
    let cf = format!("c_{prefix}_{op}_{suf}");
    // dest is written (inout keeps a caller's array intent), source only read.
    let (d_int, s_int) = ("inout", "in");
    g.iface(
        "subroutine",
        &cf,
        c_name,
        &[
            ("dest", format!("{decl}, intent({d_int})")),
            ("source", format!("{decl}, intent({s_int})")),
            ("nelems", "integer(c_size_t), value".into()),
            ("pe", "integer(c_int), value".into()),
        ],
        None,
    );
    let specific = format!("{prefix}_{op}_{suf}");
    g.proc_(&format!(
        "  subroutine {specific}(dest, source, nelems, pe)\n\
         \x20   {decl}, intent(inout) :: dest(*)\n\
         \x20   {decl}, intent(in) :: source(*)\n\
         \x20   integer, intent(in) :: nelems, pe\n\
         \x20   if (nelems > 0) call {cf}(dest(1), source(1), int(nelems, c_size_t), pe)\n\
         \x20 end subroutine\n"
    ));
    g.generic(&format!("{prefix}_{op}"), specific);
}

/// Strided RMA (strides in elements) with default integers.
fn strided(g: &mut Gen, prefix: &str, op: &str, c_name: &str, decl: &str, suf: &str) {
    let cf = format!("c_{prefix}_{op}_{suf}");
    g.iface(
        "subroutine",
        &cf,
        c_name,
        &[
            ("dest", format!("{decl}, intent(inout)")),
            ("source", format!("{decl}, intent(in)")),
            ("dst", "integer(c_ptrdiff_t), value".into()),
            ("sst", "integer(c_ptrdiff_t), value".into()),
            ("nelems", "integer(c_size_t), value".into()),
            ("pe", "integer(c_int), value".into()),
        ],
        None,
    );
    let specific = format!("{prefix}_{op}_{suf}");
    g.proc_(&format!(
        "  subroutine {specific}(dest, source, dst, sst, nelems, pe)\n\
         \x20   {decl}, intent(inout) :: dest(*)\n\
         \x20   {decl}, intent(in) :: source(*)\n\
         \x20   integer, intent(in) :: dst, sst, nelems, pe\n\
         \x20   if (nelems > 0) call {cf}(dest(1), source(1), int(dst, c_ptrdiff_t), int(sst, c_ptrdiff_t), &\n\
         \x20       & int(nelems, c_size_t), pe)\n\
         \x20 end subroutine\n"
    ));
    g.generic(&format!("{prefix}_{op}"), specific);
}
