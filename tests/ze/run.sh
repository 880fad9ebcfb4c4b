#!/usr/bin/env bash
# The device test and the host C/C++ suite on Intel GPUs through Level Zero
# (ISHMEM_DEVICE=ze), for a machine with an Intel GPU: ze_device.c runs the
# kernels of tests/device/kernels.spv (the SPIR-V the CPU device's test
# runs) linked with ishmem_device.spv, with load/store to the node's peers
# and with every operation through the ring (ISHMEM_DEVICE_RING_ALL=1);
# then tests/cuda/host-suite.sh runs the host suite with every heap in GPU
# memory. UNVERIFIED: no Intel GPU has run this yet; CI runs --build-only.
#
#   tests/ze/run.sh [--build-only] [OUTDIR] [PE counts, default "1 2"]
#
# Needs: Level Zero (loader, GPU driver, headers: libze-dev or oneAPI),
# libishmem.so and ishmrun (TEST_LIBDIR, TEST_BINDIR; default
# target/release), clang-14, llvm-spirv-14, spirv-tools and cc. PEs take
# GPU local_rank % GPUs (ISHMEM_ZE_SUBDEVICES=1: per tile).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build_only=0
if [ "${1:-}" = "--build-only" ]; then build_only=1; shift; fi
out="${1:-$root/target/ze-test}"
counts="${2:-1 2}"
lib="${TEST_LIBDIR:-$root/target/release}"
bin="${TEST_BINDIR:-$root/target/release}"
fail() { echo "ze: FAIL: $*" >&2; exit 1; }
mkdir -p "$out"
cc -std=c11 -O2 -Wall -Wextra -Werror "$root/tests/ze/ze_device.c" -I "$root/bindings/c/include" \
    -L "$lib" -lishmem -lze_loader -Wl,-rpath,"$lib" -o "$out/ze_device"
if [ $build_only = 1 ]; then
    echo "ze: device test built ($out/ze_device); not run (--build-only; its SPIR-V is the CPU device test's)"
    exit 0
fi
"$root/tests/device/build-kernels.sh" "$out"
export ISHMEM_DEVICE=ze ISHMEM_DEVICE_LIB="$out/ishmem_device.spv"
"$bin/ishmem-info" | grep '^  device    ze' || true
for ring in 0 1; do
    for n in $counts; do
        t0=$SECONDS
        log="$(ISHMEM_DEVICE_RING_ALL=$ring "$bin/ishmrun" -n "$n" -t 300 "$out/ze_device" "$out/kernels.spv" 2>&1)" \
            || { echo "$log" >&2; fail "device test on $n PEs (ring-all $ring)"; }
        grep -q "ze device ok on $n PEs" <<<"$log" || { echo "$log" >&2; fail "device test on $n PEs (ring-all $ring) printed no result"; }
        echo "ok: device test on $n PEs, ring-all $ring ($((SECONDS - t0)) s)"
    done
done
TEST_LIBDIR="$lib" TEST_BINDIR="$bin" "$root/tests/cuda/host-suite.sh" "$out/host-suite" "$counts"
echo "ze tests: ok"
