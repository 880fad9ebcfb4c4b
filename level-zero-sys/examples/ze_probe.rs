//! Opens the Level Zero loader and initializes it: prints the loader, then
//! what zeInit returned and how many drivers and devices it sees.
//!   cargo run -p level-zero-sys --example ze_probe [LOADER_PATH]
use level_zero_sys::*;

fn main() {
    let mut names: Vec<String> = std::env::args().skip(1).collect();
    if names.is_empty() {
        names = LOADER_NAMES.iter().map(|s| s.to_string()).collect();
    }
    let mut loaded = None;
    for name in &names {
        // SAFETY: loading the Level Zero loader; its initializers are its own.
        match unsafe { libloading::Library::new(name) }
            .map_err(|e| e.to_string())
            .and_then(|lib| Loader::bind(lib, name))
        {
            Ok(l) => {
                loaded = Some(l);
                break;
            }
            Err(e) => println!("{name}: {e}"),
        }
    }
    let Some(l) = loaded else { std::process::exit(1) };
    println!("loader {}: spec-1.6 IPC fd calls {}", l.path, l.mem_get_file_descriptor_from_ipc_handle.is_some());
    // SAFETY: plain calls into the loader with valid out-pointers.
    unsafe {
        let r = (l.init)(0);
        println!("zeInit: {r:#x}");
        if r != ZE_RESULT_SUCCESS {
            std::process::exit(2);
        }
        let mut n = 0u32;
        let r = (l.driver_get)(&mut n, std::ptr::null_mut());
        println!("zeDriverGet: {r:#x}, {n} driver(s)");
    }
}
