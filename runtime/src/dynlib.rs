//! Foreign libraries loaded at run time, one pattern for all of them (the
//! CUDA driver, the Level Zero loader, the OpenCL ICD loader, a host
//! OpenSHMEM library, the MPI proxy plugin): try each candidate in turn,
//! bind the first that opens and has what is needed, and when none does,
//! fail with a [`LoadError`] that lists every candidate and why it failed.
//!
//! ```ignore
//! let mut search = Search::new("the CUDA driver", "install the NVIDIA driver");
//! for name in ["libcuda.so.1", "libcuda.so"] {
//!     let Some(lib) = search.open(name) else { continue };
//!     match Driver::bind(lib, name) {
//!         Ok(d) => return Ok(d),
//!         Err(why) => search.unusable(name, why),
//!     }
//! }
//! Err(search.failed())
//! ```

use std::fmt;

/// No candidate of a foreign library could be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    /// What was looked for, as a noun phrase ("the CUDA driver").
    pub what: &'static str,
    /// What to install or set.
    pub hint: &'static str,
    /// Each candidate, in the order tried, and why it was not used.
    pub tried: Vec<(String, String)>,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot load {}: tried ", self.what)?;
        if self.tried.is_empty() {
            f.write_str("nothing")?;
        }
        for (i, (name, why)) in self.tried.iter().enumerate() {
            write!(f, "{}{name} ({why})", if i > 0 { ", " } else { "" })?;
        }
        write!(f, "; {}", self.hint)
    }
}

impl std::error::Error for LoadError {}

/// How a candidate is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Open {
    /// `RTLD_LAZY | RTLD_LOCAL`: a library whose symbols nothing else needs.
    Local,
    /// `RTLD_NOW | RTLD_GLOBAL | RTLD_DEEPBIND`: the components it loads
    /// itself see its symbols, and its own calls to names this library also
    /// exports (a host OpenSHMEM library's `shmem_*`) bind to itself.
    GlobalDeepBind,
}

/// One search for a foreign library: the candidates tried so far.
pub struct Search {
    what: &'static str,
    hint: &'static str,
    tried: Vec<(String, String)>,
}

impl Search {
    pub fn new(what: &'static str, hint: &'static str) -> Search {
        Search { what, hint, tried: Vec::new() }
    }

    /// Opens `name` (a file name the dynamic linker searches, or a path);
    /// `None`, recording why, when it does not open.
    pub fn open(&mut self, name: &str, how: Open) -> Option<libloading::Library> {
        self.open_as(name, name, how)
    }

    /// Opens `path`, recorded as `shown` (the file a descriptor path such as
    /// `/proc/self/fd/N` stands for).
    pub fn open_as(&mut self, path: &str, shown: impl fmt::Display, how: Open) -> Option<libloading::Library> {
        use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_LAZY, RTLD_LOCAL, RTLD_NOW};
        let flags = match how {
            Open::Local => RTLD_LAZY | RTLD_LOCAL,
            Open::GlobalDeepBind => RTLD_NOW | RTLD_GLOBAL | libc::RTLD_DEEPBIND,
        };
        // SAFETY: loading a library runs its initializers; every caller
        // loads a vendor runtime or our own plugin, whose initializers set
        // up only that library.
        match unsafe { Library::open(Some(path), flags) } {
            Ok(l) => Some(l.into()),
            Err(e) => {
                self.unusable(shown, e);
                None
            }
        }
    }

    /// Records that `name` was found but cannot be used, and why.
    pub fn unusable(&mut self, name: impl fmt::Display, why: impl fmt::Display) {
        self.tried.push((name.to_string(), why.to_string()));
    }

    /// The error once every candidate has failed.
    pub fn failed(self) -> LoadError {
        LoadError { what: self.what, hint: self.hint, tried: self.tried }
    }
}

/// A library opened but without a function its table needs.
#[derive(Debug)]
pub struct MissingSymbol {
    /// The function's name.
    pub symbol: String,
    /// What the dynamic loader said.
    pub why: String,
}

impl fmt::Display for MissingSymbol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "lacks {}: {}", self.symbol, self.why)
    }
}

impl std::error::Error for MissingSymbol {}

/// The function `symbol` of `lib`, as the function-pointer type `F`; the
/// error says the library lacks it.
///
/// # Safety
/// `F` must be the symbol's C signature.
pub unsafe fn symbol<F: Copy>(lib: &libloading::Library, symbol: &str) -> Result<F, MissingSymbol> {
    // SAFETY: the caller's contract.
    match unsafe { lib.get::<F>(symbol.as_bytes()) } {
        Ok(f) => Ok(*f),
        Err(e) => Err(MissingSymbol { symbol: symbol.to_string(), why: e.to_string() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_search_names_every_candidate_and_why() {
        let mut s = Search::new("the test library", "install it");
        assert!(s.open("libishmem_absent_a.so.1", Open::Local).is_none());
        assert!(s.open("/nonexistent/libishmem_absent_b.so", Open::GlobalDeepBind).is_none());
        let lib = s.open("libm.so.6", Open::Local).expect("libm opens");
        // SAFETY: never called.
        let missing = unsafe { symbol::<unsafe extern "C" fn()>(&lib, "ishmem_no_such_symbol") }.unwrap_err();
        s.unusable("libm.so.6", missing);
        let e = s.failed().to_string();
        assert!(e.starts_with("cannot load the test library: tried libishmem_absent_a.so.1 ("), "{e}");
        assert!(e.ends_with("; install it"), "{e}");
        for part in [", /nonexistent/libishmem_absent_b.so (", ", libm.so.6 (lacks ishmem_no_such_symbol"] {
            assert!(e.contains(part), "{part:?} not in {e}");
        }
    }
}
