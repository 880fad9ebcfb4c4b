//! `#[profiling_name]`, for the hand-written OpenSHMEM routines of the C ABI
//! (`bindings/c/src/plain_shmem.rs`): the routine as written, and a second
//! definition of the same body under its profiling name (`shmem_x` ->
//! `pshmem_x`, OpenSHMEM 1.5 §10).
//!
//! Two definitions, not one calling the other: a tool's own `shmem_x`
//! wrapper calls `pshmem_x`, which must reach the library, not the wrapper
//! again (a call between two exported functions of a shared library may be
//! bound to another object's definition of the same name). The typed
//! routines get their `pshmem_` twins from the generator's type table
//! (`bindings/gen`), the same way.

use proc_macro::{Ident, TokenStream, TokenTree};

/// Emits the item, then a copy whose function name has `p` in front. The
/// item must be a function whose name starts with `shmem_`.
#[proc_macro_attribute]
pub fn profiling_name(attr: TokenStream, item: TokenStream) -> TokenStream {
    if !attr.is_empty() {
        return error("#[profiling_name] takes no arguments");
    }
    let mut twin = Vec::new();
    let mut after_fn = false;
    let mut renamed = None;
    for t in item.clone() {
        let t = match t {
            TokenTree::Ident(i) if after_fn && renamed.is_none() => {
                let name = i.to_string();
                if !name.starts_with("shmem_") {
                    return error(&format!("#[profiling_name] on `{name}`: only shmem_ routines have profiling names"));
                }
                renamed = Some(name.clone());
                TokenTree::Ident(Ident::new(&format!("p{name}"), i.span()))
            }
            TokenTree::Ident(i) if i.to_string() == "fn" => {
                after_fn = true;
                TokenTree::Ident(i)
            }
            other => other,
        };
        twin.push(t);
    }
    if renamed.is_none() {
        return error("#[profiling_name] applies to functions only");
    }
    let mut out = item;
    out.extend(twin);
    out
}

fn error(msg: &str) -> TokenStream {
    format!("compile_error!({msg:?});").parse().expect("a compile_error! invocation parses")
}
