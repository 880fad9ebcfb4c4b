fn main() {
    // Versioned shared library: libishmem.so.0 is what programs record.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libishmem.so.0");
}
