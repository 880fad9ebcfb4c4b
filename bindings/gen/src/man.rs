//! Section 3 manual pages (`docs/man/man3/`), generated from the tables the
//! headers come from: one page per typed family (`shmem_put(3)` covers
//! `shmem_TYPENAME_put`, the context forms, `shmem_putSIZE` and
//! `shmem_putmem`), one per routine of the hand-written API (from the doc
//! comments of the cbindgen headers), and the index page `ishmem(3)`.
//! `docs/man/links` lists every other routine name with the page that
//! documents it; the installer makes those names symbolic links.

use crate::{c_decl, ctx_name, expand, routines, Family, Routine, FAMILIES};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One manual page being assembled.
#[derive(Default)]
struct Page {
    /// Names for the NAME line (patterns such as `shmem_TYPENAME_put`).
    names: Vec<String>,
    /// Header to include.
    header: &'static str,
    /// C declarations.
    decls: Vec<String>,
    /// (pattern name, description) paragraphs.
    descs: Vec<(String, String)>,
    /// (C type, TYPENAME) rows of the typed forms.
    types: Vec<(String, String)>,
    /// SIZE values of the sized forms.
    sizes: Vec<String>,
    /// Concrete routine names this page documents.
    routines: Vec<String>,
}

/// The page a typed op pattern belongs to: TYPENAME and SIZE removed, the
/// byte forms (`putmem`, `broadcastmem`) with their typed family.
fn page_key(pattern: &str, f: &Family) -> String {
    let mut k = expand(pattern, f, "", "").replace("__", "_");
    for base in ["put", "get", "broadcast", "fcollect", "collect", "alltoalls", "alltoall"] {
        k = k.replace(&format!("_{base}mem"), &format!("_{base}"));
    }
    k
}

/// Roff-escapes documentation text: backslashes, the section sign, and
/// `code` spans set in italics.
fn roff(text: &str) -> String {
    let mut out = String::new();
    let mut code = false;
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\e"),
            '§' => out.push_str("\\(sc"),
            '`' => {
                out.push_str(if code { "\\fR" } else { "\\fI" });
                code = !code;
            }
            '-' => out.push_str("\\-"),
            c => out.push(c),
        }
    }
    if code {
        out.push_str("\\fR");
    }
    // A line starting with a period or quote would be a request.
    if out.starts_with('.') || out.starts_with('\'') {
        out.insert_str(0, "\\&");
    }
    out
}

fn push_unique(v: &mut Vec<String>, s: String) {
    if !v.contains(&s) {
        v.push(s);
    }
}

/// The typed family pages of family `f`.
fn typed_pages(f: &'static Family, header: &'static str) -> BTreeMap<String, Page> {
    let mut pages: BTreeMap<String, Page> = BTreeMap::new();
    for r in routines(f) {
        let key = page_key(r.op.name, f);
        let p = pages.entry(key).or_default();
        p.header = header;
        p.routines.push(r.name.clone());
        match r.c_ty {
            Some(c) if !p.types.iter().any(|(_, t)| t == r.tname) => {
                let c = c.replace("ISHMEMI_COMPLEXF", "float _Complex").replace("ISHMEMI_COMPLEXD", "double _Complex");
                p.types.push((c, r.tname.to_string()));
            }
            None if !r.tname.is_empty() => push_unique(&mut p.sizes, r.tname.to_string()),
            _ => {}
        }
        let pattern = ctx_name(expand(r.op.name, f, "TYPENAME", "SIZE"), f, r.ctx);
        if p.names.contains(&pattern) {
            continue;
        }
        p.names.push(pattern.clone());
        if !r.ctx {
            let doc = if r.c_ty.is_none() { r.op.doc.replace("{B}", "SIZE") } else { r.op.doc.to_string() };
            p.descs.push((pattern.clone(), doc));
        }
        // The synopsis shows each form once, with TYPE for the element type.
        let generic = Routine { name: pattern, c_ty: r.c_ty.map(|_| "TYPE"), doc: String::new(), ..r };
        let decl = c_decl(&generic, f);
        p.decls.push(decl.lines().filter(|l| !l.starts_with("/**")).collect::<Vec<_>>().join(" "));
    }
    pages
}

/// Pages of the hand-written routines: each function declaration of a
/// cbindgen header with the doc comment above it.
fn plain_pages(api_header: &str, header: &'static str, pages: &mut BTreeMap<String, Page>) {
    let lines: Vec<&str> = api_header.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        if lines[i] != "/**" {
            i += 1;
            continue;
        }
        let mut doc = Vec::new();
        i += 1;
        while i < lines.len() && lines[i] != " */" {
            doc.push(lines[i].trim_start_matches(" *").trim());
            i += 1;
        }
        i += 1;
        // The declaration: an unindented line and its continuations, up to
        // the semicolon.
        let mut decl = String::new();
        if i < lines.len() && !lines[i].is_empty() && !lines[i].starts_with([' ', '#']) {
            while i < lines.len() {
                decl.push_str(lines[i].trim());
                decl.push(' ');
                if lines[i].ends_with(';') || lines[i].is_empty() {
                    break;
                }
                i += 1;
            }
        }
        let decl = decl.split_whitespace().collect::<Vec<_>>().join(" ").replace("( ", "(");
        let decl = decl.replace("ISHMEMI_HOSTDEV ", "");
        if !decl.ends_with(");") || decl.starts_with("typedef") {
            continue;
        }
        let Some(open) = decl.find('(') else { continue };
        let name = decl[..open].rsplit([' ', '*']).next().unwrap_or("").to_string();
        if name.is_empty() {
            continue;
        }
        let p = pages.entry(name.clone()).or_default();
        p.header = header;
        push_unique(&mut p.names, name.clone());
        p.decls.push(decl);
        p.descs.push((name.clone(), doc.join(" ")));
        p.routines.push(name);
    }
}

/// The first sentence of a description, for the NAME line.
fn summary(text: &str) -> String {
    let t = text.split(". ").next().unwrap_or(text).trim_end_matches('.');
    roff(t)
}

/// The generated-file comment and the title line of page `name`.
fn head(name: &str, version: &str) -> String {
    format!(
        ".\\\" Generated by ishmem-gen (bindings/gen/src/man.rs). Do not edit.\n\
         .TH {} 3 \"\" \"ishmem-rs {version}\" \"ishmem-rs Library Functions\"\n",
        name.to_uppercase()
    )
}

fn render(key: &str, p: &Page, version: &str) -> String {
    // The first line asks man to run tbl (the TYPE/TYPENAME table).
    let mut s = String::from("'\\\" t\n");
    s.push_str(&head(key, version));
    let _ = writeln!(s, ".SH NAME");
    let first = p.descs.first().map(|(_, d)| summary(d)).unwrap_or_default();
    let _ = writeln!(s, "{} \\- {first}", p.names.iter().map(|n| roff(n)).collect::<Vec<_>>().join(", "));
    let _ = writeln!(s, ".SH SYNOPSIS\n.nf\n.B #include <{}>\n.PP", p.header);
    for d in &p.decls {
        let _ = writeln!(s, "{}", roff(d));
    }
    let _ = writeln!(s, ".fi\n.SH DESCRIPTION");
    for (n, d) in &p.descs {
        let _ = writeln!(s, ".TP\n.B {}\n{}", roff(n), roff(d));
    }
    if !p.types.is_empty() {
        let _ = writeln!(s, ".PP\nTYPE and TYPENAME of the typed forms:\n.TS\nl l.\nTYPE\tTYPENAME");
        for (c, t) in &p.types {
            let _ = writeln!(s, "{}\t{t}", roff(c));
        }
        let _ = writeln!(s, ".TE");
    }
    if !p.sizes.is_empty() {
        let _ = writeln!(s, ".PP\nSIZE of the sized forms, in bits: {}.", p.sizes.join(", "));
    }
    let ctx = p.names.iter().any(|n| n.contains("_ctx_"));
    let _ = writeln!(
        s,
        ".SH NOTES\nArguments are checked: an invalid one (a PE out of range, an address outside the \
         symmetric heap, a count that overflows) ends the job with a message naming the routine and \
         the calling PE.{}{}",
        if ctx { " The context forms address PEs of the context's team." } else { "" },
        if key.starts_with("shmem") { " Each shmem_ routine also has its pshmem_ profiling name." } else { "" }
    );
    let _ = writeln!(
        s,
        ".SH SEE ALSO\n.BR ishmem (3),\n.BR ishmrun (1),\n.BR ishmem\\-info (1);\n\
         the OpenSHMEM 1.5 specification and the Intel SHMEM documentation for the full semantics."
    );
    s
}

fn index(pages: &BTreeMap<String, Page>, version: &str) -> String {
    let mut s = head("ishmem", version);
    let _ = writeln!(
        s,
        ".SH NAME\nishmem \\- the ishmem-rs OpenSHMEM and Intel SHMEM library\n.SH SYNOPSIS\n.nf\n\
         .B #include <shmem.h>\n.B #include <ishmem.h>\n.PP\n.B oshcc prog.c \\-o prog\n\
         .B ishmrun \\-n 4 ./prog\n.fi\n.SH DESCRIPTION\nishmem\\-rs implements OpenSHMEM 1.5 \
         (shmem_ names, header shmem.h, extensions in shmemx.h) and the Intel SHMEM API \
         (ishmem_ and ishmemx_ names, header ishmem.h) over one library, libishmem. \
         Each routine below has a page; the typed families are documented once, with their \
         TYPE/TYPENAME tables (shmem_put(3) covers shmem_int_put)."
    );
    for (title, prefix) in [("OPENSHMEM ROUTINES", "shmem"), ("INTEL SHMEM ROUTINES", "ishmem")] {
        let _ = writeln!(s, ".SH {title}");
        for (k, p) in pages.iter().filter(|(k, _)| k.split('_').next().unwrap_or("").trim_end_matches('x') == prefix) {
            let d = p.descs.first().map(|(_, d)| summary(d)).unwrap_or_default();
            let _ = writeln!(s, ".TP\n.BR {} (3)\n{d}", roff(k));
        }
    }
    let _ = writeln!(s, ".SH SEE ALSO\n.BR ishmrun (1),\n.BR ishmem\\-info (1),\n.BR oshcc (1)");
    s
}

/// Every page (file name, text) and the links list.
pub fn pages(shmem_api: &str, ishmem_api: &str, version: &str) -> (Vec<(String, String)>, String) {
    let mut all: BTreeMap<String, Page> = BTreeMap::new();
    all.extend(typed_pages(&FAMILIES[0], "ishmem.h"));
    all.extend(typed_pages(&FAMILIES[1], "shmem.h"));
    plain_pages(ishmem_api, "ishmem.h", &mut all);
    plain_pages(shmem_api, "shmem.h", &mut all);
    let mut files: Vec<(String, String)> = all.iter().map(|(k, p)| (format!("{k}.3"), render(k, p, version))).collect();
    files.push(("ishmem.3".into(), index(&all, version)));
    let mut links = String::from(
        "# Generated by ishmem-gen. Each line: a routine name and the page that\n\
         # documents it; packaging/install.sh makes man3/NAME.3 a link to PAGE.3.\n",
    );
    let mut seen = std::collections::BTreeSet::new();
    for (k, p) in &all {
        for r in &p.routines {
            if r != k && !all.contains_key(r) && seen.insert(r.clone()) {
                let _ = writeln!(links, "{r} {k}");
            }
        }
    }
    (files, links)
}
