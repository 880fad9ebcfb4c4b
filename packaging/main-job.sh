#!/usr/bin/env bash
# The README's main job: build the SDK and run an OpenSHMEM program on 4 PEs
# with the embedded launcher (CPU default; no MPI, no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
. packaging/setup-debian.sh
cargo build --release -p ishmem-capi -p ishmrun
lib=target/release
ln -sf libishmem.so "$lib/libishmem.so.0"
cc -std=c11 -O2 -Wall packaging/examples/hello_ring.c -I bindings/c/include \
   -L "$lib" -lishmem -Wl,-rpath,"$PWD/$lib" -o "$lib/hello_ring"
"$lib/ishmrun" -n 4 "$lib/hello_ring"
