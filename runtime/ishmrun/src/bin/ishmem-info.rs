//! `ishmem-info [--json]`: what this ishmem-rs build is, what it can use on
//! this machine, and the effective value of every `ISHMEM_*` variable.

use ishmem_runtime::env::{self, Config, Source};

struct Component {
    kind: &'static str,
    name: &'static str,
    available: bool,
    detail: &'static str,
}

/// What this build contains. Backends and proxies of later issues are listed
/// as absent, with the reason, so users see what to expect.
const COMPONENTS: &[Component] = &[
    Component {
        kind: "device",
        name: "cpu",
        available: true,
        detail: "built in: symmetric heaps in shared memory (memfd), host-initiated operations",
    },
    Component {
        kind: "device",
        name: "level-zero",
        available: false,
        detail: "not in this build: the Level Zero backend is not implemented yet",
    },
    Component {
        kind: "device",
        name: "cuda",
        available: false,
        detail: "not in this build: the CUDA backend is not implemented yet",
    },
    Component {
        kind: "launcher",
        name: "ishmrun",
        available: true,
        detail: "built in: PEs on this node over shared memory",
    },
    Component {
        kind: "proxy",
        name: "mpi",
        available: false,
        detail: "not in this build: the MPI-3 RMA proxy is not implemented yet",
    },
    Component {
        kind: "proxy",
        name: "openshmem",
        available: false,
        detail: "not in this build: the loaded-OpenSHMEM proxy is not implemented yet",
    },
];

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
            "usage: ishmem-info [--json]\n\nPrints the ishmem-rs version, build, available backends and the\n\
             effective value and source of every ISHMEM_* environment variable."
        );
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
    let (major, minor) = (ishmem_runtime::core::SPEC_MAJOR, ishmem_runtime::core::SPEC_MINOR);
    let profile = if cfg!(debug_assertions) { "debug" } else { "release" };
    let vars = env::effective();
    let unknown = env::unknown_vars();
    if json {
        let comps: Vec<String> = COMPONENTS
            .iter()
            .map(|c| {
                format!(
                    "    {{\"kind\": {}, \"name\": {}, \"available\": {}, \"detail\": {}}}",
                    json_str(c.kind),
                    json_str(c.name),
                    c.available,
                    json_str(c.detail)
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
        let unknown: Vec<String> = unknown.iter().map(|u| json_str(u)).collect();
        println!(
            "{{\n  \"name\": \"ishmem-rs\",\n  \"version\": {},\n  \"openshmem_version\": \"{major}.{minor}\",\n  \
             \"build\": {{\"profile\": {}, \"arch\": {}}},\n  \"components\": [\n{}\n  ],\n  \"environment\": [\n{}\n  ],\n  \
             \"unknown_variables\": [{}]\n}}",
            json_str(version),
            json_str(profile),
            json_str(std::env::consts::ARCH),
            comps.join(",\n"),
            envs.join(",\n"),
            unknown.join(", ")
        );
        return;
    }
    println!("ishmem-rs {version} (OpenSHMEM {major}.{minor}; Intel SHMEM and OpenSHMEM names)");
    println!("build: {profile} {}", std::env::consts::ARCH);
    println!("\ncomponents:");
    for c in COMPONENTS {
        println!("  {:<9} {:<11} {:<4} {}", c.kind, c.name, if c.available { "yes" } else { "no" }, c.detail);
    }
    println!("\nenvironment (effective value [source]):");
    for (v, val, src) in vars.iter().filter(|(v, _, _)| !v.internal) {
        let src = if *src == Source::Environment { "set" } else { "default" };
        println!("  {}={} [{src}]\n      {}", v.name, val, v.help);
    }
    for u in unknown {
        println!("  warning: {u} is set but is not an ishmem variable");
    }
}
