#!/usr/bin/env bash
# Builds the CUDA device library libishmem_device.a into OUTDIR from the
# shared device sources (device-lib/src, built with target_cuda.h):
#   device-lib/cuda/build.sh OUTDIR
# NVCC names the compiler (default: nvcc on PATH); CUDA_ARCHS the
# GPU architectures (default "80 90": A100, H100/H200, plus PTX for later).
# Each architecture gets machine code and LTO IR: a program linked with
# `nvcc -dlto` inlines the library's routines into its kernels (a call
# across the library boundary otherwise; docs/device.md), one linked
# without it uses the machine code.
#
#   device-lib/cuda/build.sh --arch-check OUTDIR
# compiles only a small kernel over the library's core (arch_check.cu) for
# every default architecture: seconds instead of minutes an architecture,
# for builds (CI) that make the whole library for one.
#
# CUDA_FAST_COMPILE=max (or mid, min: nvcc's -Ofast-compile levels) trades
# the device code's speed for compile time: 40 s instead of about 30 min
# on a 2-core machine at max. For builds that check the library compiles
# and links (CI); never for one that is measured, shipped or run in the GPU
# tests: with such a library tests/cuda/failures.sh's kernel_deadlock case
# under mpirun took 12.7 s against its 10 s limit (3.4 s with the library
# this script builds without it, 2 H200s, 2026-11-28). With CUDA_ARCHS=90
# the full build takes about 10 min on 2 cores.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
default_archs="80 90"
nvcc="${NVCC:-nvcc}"
if [ "${1:-}" = --arch-check ]; then
    out="${2:?usage: build.sh --arch-check OUTDIR}"
    mkdir -p "$out"
    for a in $default_archs; do
        "$nvcc" -rdc=true -O3 -std=c++17 -maxrregcount=64 -arch="sm_$a" -I "$here/../src" \
            -c "$here/arch_check.cu" -o "$out/arch_check_sm_$a.o"
    done
    echo "device-lib/cuda/build.sh: the core compiles for sm_${default_archs// /, sm_}"
    exit 0
fi
out="${1:?usage: build.sh OUTDIR}"
archs="${CUDA_ARCHS:-$default_archs}"
mkdir -p "$out"
gencode=()
last=""
for a in $archs; do
    gencode+=(-gencode "arch=compute_$a,code=[sm_$a,lto_$a]")
    last=$a
done
gencode+=(-gencode "arch=compute_$last,code=compute_$last")
fast=()
case "${CUDA_FAST_COMPILE:-}" in
    "") ;;
    max | mid | min) fast=(-Ofc "$CUDA_FAST_COMPILE") ;;
    *) echo "device-lib/cuda/build.sh: CUDA_FAST_COMPILE=$CUDA_FAST_COMPILE: not max, mid or min" >&2; exit 2 ;;
esac
# At most 64 registers a thread in the library's functions, so that a
# kernel of 1024 threads can call any of them.
"$nvcc" -rdc=true -O3 -std=c++17 -maxrregcount=64 "${fast[@]}" "${gencode[@]}" -Xcompiler -fPIC \
    -I "$here/../src" -c "$here/ishmem_device.cu" -o "$out/ishmem_device.o"
# nvcc gives every __device__ function a host-side stub (which calls exit)
# under the same name. The routines that also exist on the host must
# resolve to libishmem's, so the stubs become local symbols of the object.
objcopy --wildcard --localize-symbol='ishmem_*' --localize-symbol='ishmemx_*' "$out/ishmem_device.o"
if nm "$out/ishmem_device.o" | grep -qE ' [TDB] ishmemx?_'; then
    echo "device-lib/cuda/build.sh: host stubs of device routines are still global" >&2
    exit 1
fi
# The library's own host entry points, under their public names.
objcopy --redefine-sym ishmemi_cuda_collective_launch=ishmemx_collective_launch \
    --redefine-sym ishmemi_cuda_collective_launch_query_gridsize=ishmemx_collective_launch_query_gridsize \
    "$out/ishmem_device.o"
"$nvcc" -lib "$out/ishmem_device.o" -o "$out/libishmem_device.a"
rm -f "$out/ishmem_device.o"
