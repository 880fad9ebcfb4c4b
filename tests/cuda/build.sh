#!/usr/bin/env bash
# Builds the CUDA device library, the GPU tests and benchmarks into OUTDIR with a CUDA
# 13 nvcc (NVCC; tests/cuda/nvcc.sh installs one from PyPI where there is
# none). Needs no GPU: CI builds them to check they compile (bench_vs is
# the ishmem-rs build of the NVSHMEM comparison, tests/cuda/bench-vs-nvshmem.sh).
#   tests/cuda/build.sh OUTDIR
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:?usage: build.sh OUTDIR}"
nvcc="${NVCC:-nvcc}"
lib="${TEST_LIBDIR:-$root/target/release}"
mkdir -p "$out"
NVCC="$nvcc" "$root/device-lib/cuda/build.sh" "$out"
# The library's core for every default architecture (CUDA_ARCHS may name
# fewer for the whole library).
NVCC="$nvcc" "$root/device-lib/cuda/build.sh" --arch-check "$out"
cudalib="$(dirname "$(command -v "$nvcc")")/../lib"
"$nvcc" -rdc=true -arch=sm_90 -std=c++17 -O2 "$root/tests/cuda/test_cuda.cu" -I "$root/bindings/c/include" \
    -L "$out" -lishmem_device -L "$lib" -lishmem -L "$cudalib" -o "$out/test_cuda"
"$nvcc" -rdc=true -arch=sm_90 -std=c++17 -O2 "$root/tests/cuda/bench_cuda.cu" -I "$root/bindings/c/include" \
    -L "$out" -lishmem_device -L "$lib" -lishmem -L "$cudalib" -o "$out/bench_cuda"
# The benchmark links with link-time optimization (the library's routines
# inlined into its kernels), as docs/device.md recommends.
"$nvcc" -rdc=true -dlto -arch=sm_90 -std=c++17 -O2 "$root/tests/cuda/bench_vs.cu" -I "$root/bindings/c/include" \
    -L "$out" -lishmem_device -L "$lib" -lishmem -L "$cudalib" -o "$out/bench_vs"
# The reverse-offload ring's test, benchmark and floor probe.
"$nvcc" -rdc=true -arch=sm_90 -std=c++17 -O2 "$root/tests/cuda/ring_test.cu" "$root/tests/cuda/ring_bench_nop.cu" \
    -I "$root/bindings/c/include" -I "$root/device-lib/src" \
    -L "$out" -lishmem_device -L "$lib" -lishmem -L "$cudalib" -o "$out/ring_test"
"$nvcc" -rdc=true -arch=sm_90 -std=c++17 -O2 -DRING_NOP "$root/tests/cuda/ring_bench.cu" "$root/tests/cuda/ring_bench_nop.cu" \
    -I "$root/bindings/c/include" -I "$root/device-lib/src" \
    -L "$out" -lishmem_device -L "$lib" -lishmem -L "$cudalib" -o "$out/ring_bench"
"$nvcc" -arch=sm_90 -std=c++17 -O2 "$root/tests/cuda/ring_floor.cu" -L "$cudalib" -o "$out/ring_floor"
# What ordering costs between two GPUs (no library; a probe, not a test).
"$nvcc" -arch=sm_90 -std=c++17 -O2 "$root/tests/cuda/fence_probe.cu" -L "$cudalib" -o "$out/fence_probe"
"$nvcc" -rdc=true -arch=sm_90 -std=c++17 -O2 "$root/tests/cuda/remote_bench.cu" -I "$root/bindings/c/include" \
    -L "$out" -lishmem_device -L "$lib" -lishmem -L "$cudalib" -o "$out/remote_bench"
