//! `ishmem-info [--json]`: what this ishmem-rs build is, what it can use on
//! this machine, and the effective value of every `ISHMEM_*` variable.

use ishmem_runtime::api::launch::{self as env, Config, Source};

struct Component {
    kind: &'static str,
    name: &'static str,
    available: bool,
    detail: String,
}

/// What this build contains. Backends and proxies of later issues are listed
/// as absent, with the reason, so users see what to expect.
const STATIC_COMPONENTS: &[(&str, &str, bool, &str)] = &[
    ("launcher", "ishmrun", true, "built in: PEs on this node over shared memory"),
    (
        "proxy",
        "openshmem",
        true,
        "built in: ISHMEM_RUNTIME=OPENSHMEM loads a host OpenSHMEM library at run time (ISHMEM_SHMEM_LIB_NAME, libsma.so, liboshmem.so)",
    ),
];

/// The static list plus the MPI proxy, whose availability is whether its
/// plugins are installed where the library looks for them.
fn components() -> Vec<Component> {
    let mut v: Vec<Component> = STATIC_COMPONENTS
        .iter()
        .map(|&(kind, name, available, detail)| Component { kind, name, available, detail: detail.to_string() })
        .collect();
    // The CPU device: heaps in shared memory always; its kernels need an
    // OpenCL platform with a CPU device, so it is "yes" only with one.
    let (available, detail) = match ishmem_runtime::api::launch::probe_cpu_platform() {
        Ok(m) => (true, format!("built in: heaps in shared memory (memfd); device kernels on OpenCL: {m}")),
        Err(e) => (
            false,
            format!("built in: heaps in shared memory work (the host API); device kernels cannot run here: {e}"),
        ),
    };
    v.insert(0, Component { kind: "device", name: "cpu", available, detail });
    // The CUDA device: built in; available when the NVIDIA driver loads.
    let (available, detail) = match ishmem_runtime::api::launch::probe_cuda() {
        Ok(_) => (true, "built in: heaps in NVIDIA GPU memory (ISHMEM_DEVICE=cuda); the CUDA driver loads".to_string()),
        Err(e) => (false, format!("built in, not usable here: {e}")),
    };
    v.push(Component { kind: "device", name: "cuda", available, detail });
    let config = Config::from_env().ok();
    // The Level Zero device: built in; available when the loader finds a GPU.
    let loader = config.as_ref().and_then(|c| c.ze_loader.clone());
    let (available, detail) = match ishmem_runtime::api::launch::probe_level_zero(loader.as_deref()) {
        Ok(m) => (true, format!("built in, unverified on hardware: heaps in Intel GPU memory (ISHMEM_DEVICE=ze); {m}")),
        Err(e) => (false, format!("built in (unverified on hardware), not usable here: {e}")),
    };
    v.push(Component { kind: "device", name: "ze", available, detail });
    let root = config.and_then(|c| c.root);
    // This program is statically linked: besides where the library looks,
    // report the installation it belongs to (bin/../lib/ishmem) and the
    // build tree's (target/<profile>/ishmem).
    let mut also = Vec::new();
    if let Some(d) = std::env::current_exe().ok().and_then(|e| e.parent().map(|d| d.to_path_buf())) {
        also.push(d.join("../lib/ishmem"));
        also.push(d.join("../lib64/ishmem"));
        also.push(d.join("ishmem"));
    }
    let plugins = ishmem_runtime::api::launch::installed_plugins(root.as_deref(), &also);
    let detail = if plugins.is_empty() {
        "no plugin found (libishmem_proxy_oshmpi-<openmpi|mpich>.so beside libishmem or in lib/ishmem/); \
         build them with proxy-oshmpi/build-plugins.sh"
            .to_string()
    } else {
        let names: Vec<String> = plugins.iter().map(|p| p.display().to_string()).collect();
        format!("MPI-3 RMA proxy for PEs on other nodes: {}", names.join(", "))
    };
    v.push(Component { kind: "proxy", name: "mpi", available: !plugins.is_empty(), detail });
    v
}

/// Writes the report; a reader that goes away early (`| head`, `grep -q`)
/// ends the program quietly instead of with a panic.
fn emit(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => {
            eprintln!("ishmem-info: cannot write the report: {e}");
            std::process::exit(1);
        }
    }
}

fn json_str(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!(
            "usage: ishmem-info [--json | --version]\n\nPrints the ishmem-rs version, build, installation prefix, available\n\
             backends and the effective value and source of every ISHMEM_* environment variable."
        );
        return;
    }
    if args.iter().any(|a| a == "-V" || a == "--version") {
        println!("ishmem-info (ishmem-rs) {}", env!("CARGO_PKG_VERSION"));
        return;
    }
    if let Some(a) = args.iter().find(|a| *a != "--json") {
        eprintln!("ishmem-info: unknown argument {a:?} (try --help)");
        std::process::exit(2);
    }
    let json = !args.is_empty();
    // The parser the library runs at init: a bad value is an error here too.
    if let Err(e) = Config::from_env() {
        eprintln!("ishmem-info: {e}");
        std::process::exit(1);
    }
    let version = env!("CARGO_PKG_VERSION");
    let (major, minor) = (ishmem_runtime::api::SPEC_MAJOR, ishmem_runtime::api::SPEC_MINOR);
    let profile = if cfg!(debug_assertions) { "debug" } else { "release" };
    // The installation this program belongs to: <prefix>/bin/ishmem-info.
    let prefix = std::env::current_exe()
        .ok()
        .and_then(|e| std::fs::canonicalize(e).ok())
        .and_then(|e| e.parent()?.parent().map(|p| p.display().to_string()))
        .unwrap_or_default();
    let vars = env::effective();
    let unknown = env::unknown_vars();
    let comps = components();
    if json {
        let comps: Vec<String> = comps
            .iter()
            .map(|c| {
                format!(
                    "    {{\"kind\": {}, \"name\": {}, \"available\": {}, \"detail\": {}}}",
                    json_str(c.kind),
                    json_str(c.name),
                    c.available,
                    json_str(&c.detail)
                )
            })
            .collect();
        let envs: Vec<String> = vars
            .iter()
            .map(|(v, val, src)| {
                format!(
                    "    {{\"name\": {}, \"value\": {}, \"source\": {}, \"default\": {}, \"kind\": {}, \"internal\": {}, \"help\": {}}}",
                    json_str(v.name),
                    json_str(val),
                    json_str(if *src == Source::Environment { "environment" } else { "default" }),
                    json_str(v.default),
                    json_str(v.kind.as_str()),
                    v.internal,
                    json_str(v.help)
                )
            })
            .collect();
        let unknown: Vec<String> = unknown.iter().map(|(u, _)| json_str(u)).collect();
        emit(&format!(
            "{{\n  \"name\": \"ishmem-rs\",\n  \"version\": {},\n  \"openshmem_version\": \"{major}.{minor}\",\n  \
             \"build\": {{\"profile\": {}, \"arch\": {}}},\n  \"prefix\": {},\n  \"components\": [\n{}\n  ],\n  \"environment\": [\n{}\n  ],\n  \
             \"unknown_variables\": [{}]\n}}\n",
            json_str(version),
            json_str(profile),
            json_str(std::env::consts::ARCH),
            json_str(&prefix),
            comps.join(",\n"),
            envs.join(",\n"),
            unknown.join(", ")
        ));
        return;
    }
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(o, "ishmem-rs {version} (OpenSHMEM {major}.{minor}; Intel SHMEM and OpenSHMEM names)");
    let _ = writeln!(o, "build: {profile} {}", std::env::consts::ARCH);
    let _ = writeln!(o, "prefix: {prefix}");
    let _ = writeln!(o, "\ncomponents:");
    for c in &comps {
        let _ =
            writeln!(o, "  {:<9} {:<11} {:<4} {}", c.kind, c.name, if c.available { "yes" } else { "no" }, c.detail);
    }
    let _ = writeln!(o, "\nenvironment (effective value [source]):");
    for (v, val, src) in vars.iter().filter(|(v, _, _)| !v.internal) {
        let src = if *src == Source::Environment { "set" } else { "default" };
        let _ = writeln!(o, "  {}={} [{src}]\n      {}", v.name, val, v.help);
    }
    for (u, near) in unknown {
        let hint = near.map(|n| format!(" (did you mean {n}?)")).unwrap_or_default();
        let _ = writeln!(o, "  warning: {u} is set but is not an ishmem variable{hint}");
    }
    emit(&o);
}
