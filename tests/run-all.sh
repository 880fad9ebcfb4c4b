#!/usr/bin/env bash
# The README's test command: the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
. packaging/setup-debian.sh
# Generated files (typed families, headers, env docs) must be up to date.
cargo run -q -p ishmem-gen -- --check
cargo build --workspace --all-targets
cargo test --workspace
