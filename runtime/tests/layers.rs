//! The runtime's structural rules, checked by machine: the module import
//! graph follows the layer list of `src/lib.rs` and `docs/architecture.md`
//! (no cycles, nothing but the public surface imports the lifecycle), code
//! outside the runtime uses only the public surface, and the concerns that have
//! one home stay there (the environment, the proxy's C table and region
//! ids, CPU atomics on remote memory, the device library's routing), and
//! errors are typed inside.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Layers, bottom first. A module may use modules of its own layer or
/// below; within a layer the graph must still be acyclic.
const LAYERS: &[&[&str]] = &[
    &["phase", "env", "types", "collsig", "ctrl", "device_state", "sync_words", "alloc", "mem", "dynlib"],
    &["error", "wait", "dataseg", "ring"],
    &["remote", "device"],
    &["boot"],
    &["route"],
    &["state", "rma", "amo", "symheap", "team", "coll", "activeset", "lock", "ctx", "queue", "serve", "stage", "watch"],
    &["core"],
    &["api"],
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`.
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The top-level module a source file belongs to (`remote/plugin.rs` ->
/// `remote`).
fn module_of(p: &Path) -> String {
    let rel = p.strip_prefix(src()).unwrap();
    let first = rel.components().next().unwrap().as_os_str().to_string_lossy().into_owned();
    first.trim_end_matches(".rs").to_string()
}

/// The file's code without comments (doc links are not imports).
fn code(p: &Path) -> String {
    let text = std::fs::read_to_string(p).unwrap();
    text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// Module -> the top-level modules its code names through `crate::`.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let mut all = Vec::new();
    files(&src(), &mut all);
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &all {
        let m = module_of(f);
        if m == "lib" {
            continue;
        }
        let c = code(f);
        let deps = g.entry(m.clone()).or_default();
        for (i, _) in c.match_indices("crate::") {
            let rest = &c[i + "crate::".len()..];
            let name: String = rest.chars().take_while(|ch| ch.is_alphanumeric() || *ch == '_').collect();
            if !name.is_empty() && name != m {
                deps.insert(name);
            }
        }
        // `use super::x` inside a directory module stays inside it.
    }
    g
}

fn layer(m: &str) -> usize {
    LAYERS.iter().position(|l| l.contains(&m)).unwrap_or_else(|| panic!("module {m} is in no layer of LAYERS"))
}

#[test]
fn every_module_is_in_a_layer_and_imports_only_downwards() {
    let g = graph();
    let mut bad = Vec::new();
    for (m, deps) in &g {
        for d in deps {
            if layer(d) > layer(m) {
                bad.push(format!("{m} (layer {}) uses {d} (layer {})", layer(m) + 1, layer(d) + 1));
            }
        }
    }
    assert!(bad.is_empty(), "imports against the layering:\n{}", bad.join("\n"));
    for l in LAYERS {
        for m in *l {
            assert!(g.contains_key(*m), "LAYERS names {m}, which is not a module of src/");
        }
    }
}

#[test]
fn the_import_graph_has_no_cycle() {
    let g = graph();
    // Depth-first search with colours; report one cycle.
    fn visit(
        m: &str, g: &BTreeMap<String, BTreeSet<String>>, state: &mut BTreeMap<String, u8>, path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match state.get(m) {
            Some(1) => {
                let at = path.iter().position(|p| p == m).unwrap();
                let mut cycle = path[at..].to_vec();
                cycle.push(m.to_string());
                return Some(cycle);
            }
            Some(2) => return None,
            _ => {}
        }
        state.insert(m.to_string(), 1);
        path.push(m.to_string());
        for d in g.get(m).into_iter().flatten() {
            if let Some(c) = visit(d, g, state, path) {
                return Some(c);
            }
        }
        path.pop();
        state.insert(m.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for m in g.keys() {
        if let Some(c) = visit(m, &g, &mut state, &mut Vec::new()) {
            panic!("import cycle: {}", c.join(" -> "));
        }
    }
    for (m, deps) in &g {
        assert!(
            m == "api" || !deps.contains("core"),
            "{m} imports core (the lifecycle is the top of the runtime; only the public surface re-exports it)"
        );
    }
}

/// True when `text` contains `needle` as a whole word (not preceded by an
/// identifier character).
fn has_word(text: &str, needle: &str) -> bool {
    text.match_indices(needle)
        .any(|(i, _)| !text[..i].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_'))
}

/// Files (relative to src/) whose code contains `needle` as a word.
fn containing(needle: &str) -> Vec<String> {
    let mut all = Vec::new();
    files(&src(), &mut all);
    let mut v: Vec<String> = all
        .iter()
        .filter(|f| has_word(&code(f), needle))
        .map(|f| f.strip_prefix(src()).unwrap().display().to_string())
        .collect();
    v.sort();
    v
}

#[test]
fn only_env_reads_the_environment() {
    for needle in ["env::var(", "env::var_os(", "env::vars(", "env::vars_os(", "env::set_var(", "env::remove_var("] {
        let found = containing(needle);
        assert!(found.iter().all(|f| f == "env.rs"), "{needle} outside env.rs: {found:?}");
    }
}

#[test]
fn only_the_plugin_crosses_the_c_table_and_knows_region_ids() {
    for needle in ["REGION_HEAP", "REGION_DATA", "REGION_CTRL", "ProxyOps", "AMO_FETCH", "FLAG_NBI"] {
        let found = containing(needle);
        assert!(found.iter().all(|f| f == "remote/plugin.rs"), "{needle} outside remote/plugin.rs: {found:?}");
    }
    // The regions by name: the routing step, the proxies, and the
    // bootstrap that exposes them.
    let found = containing("Region::");
    let allowed = ["route.rs", "boot/mod.rs"];
    assert!(
        found.iter().all(|f| f.starts_with("remote/") || allowed.contains(&f.as_str())),
        "Region:: outside route, remote and boot: {found:?}"
    );
}

#[test]
fn cpu_atomics_on_symmetric_memory_only_in_the_routing_step() {
    // The routing step on host-reachable heaps; the opaque test device on
    // the aliases behind its DeviceMemory (as the CUDA device runs its
    // atomics kernel on GPU heaps).
    let found = containing("atomic::apply(");
    assert_eq!(
        found,
        vec!["device/opaque.rs".to_string(), "route.rs".to_string()],
        "the shared AMO helper is applied only by the routing step and the opaque device"
    );
}

#[test]
fn the_router_alone_decides_where_an_operation_goes() {
    // Whether a PE is mapped here and whether the host reaches the heaps by
    // loads and stores are the router's private questions: other modules
    // call an operation (p, g, put, strided, AMO, ...) or a typed query
    // (all_mapped, shared), never branch on a mapping themselves.
    let route = code(&src().join("route.rs"));
    for f in ["fn local(", "fn is_local(", "fn host_direct("] {
        assert!(!route.contains(&format!("pub {f}")), "route.rs makes `{f}` public: only the router may branch on it");
    }
    for needle in [".local(", ".is_local(", ".host_direct("] {
        let found = containing(&format!("route{needle}"));
        assert!(found.is_empty(), "route{needle} outside route.rs: {found:?}");
    }
    // shmem_ptr's answer, and nothing else, asks for a mapped address.
    let found = containing("route.address(");
    assert_eq!(found, vec!["rma.rs".to_string()], "route.address( is shmem_ptr's alone");
}

/// A C source without its comments (`/* */` and `//`), line breaks kept.
fn c_code(text: &str) -> String {
    let (mut out, mut rest) = (String::new(), text);
    while let Some(i) = rest.find(['/']) {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if let Some(body) = tail.strip_prefix("/*") {
            let end = body.find("*/").map_or(body.len(), |e| e + 2);
            out.extend(body[..end.min(body.len())].chars().filter(|&c| c == '\n'));
            rest = &body[end.min(body.len())..];
        } else if tail.starts_with("//") {
            rest = &tail[tail.find('\n').unwrap_or(tail.len())..];
        } else {
            out.push('/');
            rest = &tail[1..];
        }
    }
    out + rest
}

#[test]
fn the_device_library_routes_in_one_section() {
    // The device's counterpart of the router: core.h's routing section is
    // the only code that asks whether a PE is mapped here (and so chooses
    // between loads and stores, a copy engine and the ring); the typed
    // routines, the non-typed ones, the CUDA kernels and the collectives
    // call its routines.
    let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("../device-lib");
    let mut sources = Vec::new();
    for dir in ["src", "cuda", "include"] {
        for e in std::fs::read_dir(lib.join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| ["h", "cl", "cu"].contains(&x.to_str().unwrap())) {
                sources.push(p);
            }
        }
    }
    assert!(sources.len() > 8, "device-lib sources not found: {sources:?}");
    let (begin, end) = ("===== routing: begin", "===== routing: end");
    for p in &sources {
        let text = std::fs::read_to_string(p).unwrap();
        let name = p.strip_prefix(&lib).unwrap().display().to_string();
        let outside = if name == "src/core.h" {
            let (b, e) = (text.find(begin), text.find(end));
            assert!(b.is_some() && e > b, "core.h lost its routing section markers");
            let (b, e) = (b.unwrap(), e.unwrap());
            // The peer tables' definitions (the #define of
            // ISHMEMI_PEER_LOCAL and its continuation lines, before the
            // section) name the tables; nothing else before it may.
            let mut before = String::new();
            let mut in_def = false;
            for line in c_code(&text[..b]).lines() {
                in_def = in_def || line.trim_start().starts_with("#define ISHMEMI_PEER_LOCAL");
                if !in_def {
                    before.push_str(line);
                    before.push('\n');
                }
                in_def = in_def && line.trim_end().ends_with('\\');
            }
            before + &c_code(&text[e..])
        } else {
            c_code(&text)
        };
        // The tables' declarations (`__constant__`) aside, whitespace out,
        // so that `ishmemi_is_local (pe)` is found too.
        let outside: String = outside
            .lines()
            .filter(|l| !l.contains("__constant__"))
            .flat_map(|l| l.chars().filter(|c| !c.is_whitespace()))
            .collect();
        // The decision, its macro, and the tables behind them (the CUDA
        // copies in constant memory, the state's table).
        for needle in ["ishmemi_is_local(", "ISHMEMI_PEER_LOCAL(", "ishmemi_cpeer_local[", "peer_is_local)["] {
            assert!(!outside.contains(needle), "{name}: `{needle}` outside core.h's routing section");
        }
    }
}

#[test]
fn errors_are_typed_inside() {
    // Typed error enums inside the runtime, strings only at the edge (the
    // messages `error::fatal` prints): no function returns a bare String
    // as its error.
    let mut all = Vec::new();
    files(&src(), &mut all);
    // The text between `Result<` and its closing `>`, without whitespace
    // (and with `->` out of the way of the bracket count).
    let results = |c: &str| -> Vec<String> {
        let c: String = c.replace("->", "").chars().filter(|ch| !ch.is_whitespace()).collect();
        c.match_indices("Result<")
            .map(|(i, _)| {
                let (mut depth, mut end) = (0, c.len());
                for (k, ch) in c[i + 6..].char_indices() {
                    depth += (ch == '<') as i32 - (ch == '>') as i32;
                    if depth == 0 {
                        end = i + 6 + k + 1;
                        break;
                    }
                }
                c[i..end].to_string()
            })
            .collect()
    };
    let stringly =
        |r: &String| [",String>", ",std::string::String>", ",&str>", ",&'staticstr>"].iter().any(|e| r.ends_with(e));
    let found: Vec<String> = all
        .iter()
        .filter(|f| results(&code(f)).iter().any(stringly))
        .map(|f| f.strip_prefix(src()).unwrap().display().to_string())
        .collect();
    assert!(found.is_empty(), "Result<_, String> in {found:?}: give the error a type");
}

#[test]
fn symmetric_words_are_typed_by_the_router() {
    // Memory other processes use at the same time is reached as typed
    // atomics handed out by the router (`Router::shared`, the control
    // segment's structs), never by casting an address to an atomic.
    for needle in ["as *const Atomic", "as *mut Atomic", "as *const [Atomic", "as *mut [Atomic"] {
        let mut all = Vec::new();
        files(&src(), &mut all);
        let found: Vec<String> = all
            .iter()
            .filter(|f| code(f).contains(needle))
            .map(|f| f.strip_prefix(src()).unwrap().display().to_string())
            .filter(|f| f != "route.rs")
            .collect();
        assert!(found.is_empty(), "`{needle}` outside route.rs: {found:?}");
    }
}

#[test]
fn devices_are_told_apart_by_kind() {
    // A device's name is for messages; code that depends on which backend
    // runs compares `DeviceKind`s (the runtime and the bindings alike).
    let root = src();
    let mut all = Vec::new();
    files(&root, &mut all);
    for b in ["c", "rust"] {
        files(&root.join("../../bindings").join(b).join("src"), &mut all);
    }
    let mut needles =
        vec![".name()==".to_string(), ".name()!=".into(), "device_name()==".into(), "device_name()!=".into()];
    // A match on the name, and a name literal on either side of a
    // comparison.
    needles.extend([".name(){".to_string(), "device_name(){".into()]);
    for kind in ["cpu", "cuda", "opaque", "ze"] {
        for op in ["==", "!="] {
            needles.push(format!("{op}\"{kind}\""));
            needles.push(format!("\"{kind}\"{op}"));
        }
    }
    let mut found = Vec::new();
    for f in &all {
        let text = code(f).replace(char::is_whitespace, "");
        if needles.iter().any(|n| text.contains(n.as_str())) {
            found.push(f.display().to_string());
        }
    }
    assert!(found.is_empty(), "device names compared as strings: {found:?}");
}

#[test]
fn foreign_libraries_load_through_one_loader() {
    // Every foreign library is opened by `dynlib::Search`, whose error
    // lists every candidate tried and why.
    for needle in ["Library::new(", "Library::open(", "dlopen("] {
        let found: Vec<String> = containing(needle).into_iter().filter(|f| f != "dynlib.rs").collect();
        assert!(found.is_empty(), "`{needle}` outside dynlib.rs: {found:?}");
    }
}

#[test]
fn only_the_api_module_is_public() {
    // `src/lib.rs` declares `api` public and every other item of the crate
    // root crate-private: what the bindings and the launcher may use is one
    // module's list of re-exports. (Items inside private modules may be
    // `pub`: only a re-export from `api` makes them reachable.)
    let lib = code(&src().join("lib.rs"));
    let mut public = Vec::new();
    for line in lib.lines().map(str::trim) {
        let Some(rest) = line.strip_prefix("pub") else { continue };
        if rest.starts_with('(') {
            continue; // pub(crate), pub(super), pub(in ...)
        }
        if rest.trim() != "mod api;" {
            public.push(line.to_string());
        }
    }
    assert!(public.is_empty(), "lib.rs makes more than `api` public: {public:?}");
    assert!(lib.contains("pub mod api;"), "lib.rs declares no public `api` module");
    let exported = containing("#[macro_export]");
    assert!(exported.is_empty(), "macros exported from the crate root: {exported:?}");
}

/// Every `.rs` file of the crates that use the runtime (and the runtime's
/// integration tests), skipping build output.
fn dependent_sources() -> (PathBuf, Vec<PathBuf>) {
    let root = src().join("../..");
    let mut all = Vec::new();
    for dir in ["bindings/c", "bindings/rust", "bindings/gen", "runtime/ishmrun", "runtime/tests", "tests"] {
        fn walk(d: &Path, out: &mut Vec<PathBuf>) {
            for e in std::fs::read_dir(d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    if p.file_name().is_some_and(|n| n != "target") {
                        walk(&p, out);
                    }
                } else if p.extension().is_some_and(|x| x == "rs") {
                    out.push(p);
                }
            }
        }
        let d = root.join(dir);
        if d.is_dir() {
            walk(&d, &mut all);
        }
    }
    // This file names the crate in its needles.
    all.retain(|f| !f.ends_with("runtime/tests/layers.rs"));
    (root, all)
}

/// The paths after each `ishmem_runtime::` in `text` (whitespace and
/// comments removed): a brace group is split into its entries
/// (`ishmem_runtime::{api::X, core}` gives `api::X` and `core`); an alias
/// of the crate itself (`ishmem_runtime as rt`) is reported as `as`.
fn runtime_paths(text: &str) -> Vec<String> {
    let mut c = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("/*") {
        c.push_str(&rest[..i]);
        rest = rest[i..].find("*/").map_or("", |j| &rest[i + j + 2..]);
    }
    c.push_str(rest);
    // Whitespace runs become one space, none beside `::`, braces and commas.
    let words: Vec<&str> = c.split_whitespace().collect();
    let mut c = words.join(" ");
    for p in ["::", "{", "}", ","] {
        c = c.replace(&format!(" {p}"), p).replace(&format!("{p} "), p);
    }
    let mut out = Vec::new();
    for (i, _) in c.match_indices("ishmem_runtime") {
        let after = &c[i + "ishmem_runtime".len()..];
        if after.starts_with(" as ") {
            out.push("as".to_string());
        } else if let Some(p) = after.strip_prefix("::{") {
            // The group up to its matching brace, split at top-level commas.
            let (mut depth, mut start) = (0usize, 0usize);
            for (k, ch) in p.char_indices() {
                match ch {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        out.push(p[start..k].to_string());
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.push(p[start..k].to_string());
                        start = k + 1;
                    }
                    _ => {}
                }
            }
        } else if let Some(p) = after.strip_prefix("::") {
            out.push(
                p.chars().take_while(|ch| ch.is_alphanumeric() || *ch == '_' || *ch == ':' || *ch == ' ').collect(),
            );
        }
    }
    out.retain(|p| !p.is_empty());
    out
}

#[test]
fn runtime_paths_are_read_through_groups_spaces_and_aliases() {
    let t =
        "use ishmem_runtime::{api::{self, X}, core};\nlet a = ishmem_runtime :: ring::R;\nuse ishmem_runtime as rt;\n\
             use ishmem_runtime::{\n    api::Y,\n  ring as r};";
    assert_eq!(runtime_paths(t), ["api::{self,X}", "core", "ring::R", "as", "api::Y", "ring as r"]);
}

#[test]
fn code_outside_the_runtime_uses_only_the_api() {
    // The bindings, the generator, the launcher, the runtime's own
    // integration tests and the test programs name `ishmem_runtime::api`
    // and nothing else of the runtime, and do not rename the crate.
    let (root, all) = dependent_sources();
    assert!(all.len() > 10, "found too few source files under {}", root.display());
    let mut bad = Vec::new();
    for f in &all {
        for p in runtime_paths(&code(f)) {
            let first = p.split([' ', ':']).next().unwrap_or("");
            let ok = (first == "api" || first == "self") && p != "self as";
            if !ok {
                bad.push(format!("{}: ishmem_runtime::{p}", f.strip_prefix(&root).unwrap_or(f).display()));
            }
        }
    }
    bad.sort();
    bad.dedup();
    assert!(bad.is_empty(), "runtime modules named outside the runtime (use ishmem_runtime::api):\n{}", bad.join("\n"));
}
