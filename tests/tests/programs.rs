//! The programs of `tests/programs.list`, one trial per program and PE
//! count, under the suite's launcher (`TEST_LAUNCHER`) on the suite's
//! device (`ISHMEM_DEVICE`); `TEST_TIER=core` keeps the lines tagged core,
//! `TEST_MAX_PES` caps the PE count. A program's output is shown only
//! when it fails; each PE count is a trial of its own, so a failure names
//! it and the other counts still run.
//!
//! Needs `cargo build --workspace --all-targets` first (the README's test
//! command does it) for `ishmrun`, `libishmem.so` and the Rust programs.

use ishmem_tests::harness::{self, program_list};
use libtest_mimic::{Arguments, Failed, Trial};

fn main() -> std::process::ExitCode {
    let args = Arguments::from_args();
    let mut trials = Vec::new();
    for entry in program_list() {
        for n in entry.counts_here() {
            let e = entry.clone();
            trials.push(Trial::test(format!("{}/{n}", entry.name), move || e.run(n).map_err(Failed::from)));
        }
    }
    eprintln!("programs: {} runs in the leg {}", trials.len(), harness::leg());
    libtest_mimic::run(&args, trials).exit_code()
}
