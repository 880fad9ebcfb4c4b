#!/usr/bin/env bash
# Regenerates runtime/src/device/cuda/host_amo.ptx from host_amo.cu (the
# kernel the runtime launches for host AMOs on GPU memory). NVCC: the CUDA
# 13.0 compiler (tests/cuda/nvcc.sh finds one). With --check, fails when the
# checked-in PTX differs from what the compiler makes.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
nvcc="${NVCC:-nvcc}"
out="$root/runtime/src/device/cuda/host_amo.ptx"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# compute_75: the oldest target CUDA 13 compiles for; the driver
# JIT-compiles the PTX for the GPU it runs on.
"$nvcc" -ptx -arch=compute_75 -O3 -std=c++17 "$root/device-lib/cuda/host_amo.cu" -o "$tmp/host_amo.ptx"
# The compiler stamps its build into a comment; keep the version line only.
grep -v '^// Compiler Build ID\|^// Based on NVVM' "$tmp/host_amo.ptx" > "$tmp/clean.ptx"
if [ "${1:-}" = --check ]; then
    cmp -s "$tmp/clean.ptx" "$out" || { echo "gen-host-amo: $out is out of date (run device-lib/cuda/gen-host-amo.sh)" >&2; exit 1; }
else
    cp "$tmp/clean.ptx" "$out"
fi
