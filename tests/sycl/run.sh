#!/usr/bin/env bash
# The SYCL leg: builds tests/sycl/sycl_test.cpp with AdaptiveCpp's generic
# (SSCP) compiler against the SDK in the source tree, with the
# libishmem_sycl_cl shim that links the device library into the programs
# the SYCL runtime builds, and runs it on the CPU OpenCL device on 1-4 PEs,
# load/store and with every operation through the ring.
#   tests/sycl/run.sh ACPP_PREFIX
# ACPP_PREFIX: an AdaptiveCpp install (tests/sycl/build-acpp.sh); needs
# TEST_OPENCL_VENV (Intel's CPU OpenCL runtime, as tests/device), the debug
# build of libishmem and ishmrun. This tree's device library is built into
# target/sycl-test.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
fail() { echo "sycl: FAIL: $*" >&2; exit 1; }
acpp_prefix="${1:?usage: run.sh ACPP_PREFIX}"
acpp="$acpp_prefix/bin/acpp"
[ -x "$acpp" ] || fail "$acpp not found"
venv="${TEST_OPENCL_VENV:?set TEST_OPENCL_VENV to a venv with intel-opencl-rt}"
target="${CARGO_TARGET_DIR:-$root/target}"
lib="$target/debug"
out="$target/sycl-test"
mkdir -p "$out/tmp"
"$root/device-lib/build.sh" "$out" >/dev/null # this tree's device library
cc -std=c11 -O2 -Wall -Werror -fPIC -shared "$root/bindings/c/sycl/ishmem_sycl_cl.c" -I "$root/bindings/c/include" \
    -L "$lib" -lishmem -lOpenCL -ldl -lpthread -Wl,-rpath,"$lib" -o "$out/libishmem_sycl_cl.so"
echo "sycl: $("$acpp" --acpp-version | grep -m1 -i 'version' || true)"
t0=$SECONDS
# The shim before the OpenCL loader: linked in, and kept though the
# program calls none of its functions itself.
TMPDIR="$out/tmp" "$acpp" --acpp-targets=generic -O2 -I "$root/bindings/c/include" "$root/tests/sycl/sycl_test.cpp" \
    -L "$out" -Wl,--no-as-needed -lishmem_sycl_cl -Wl,--as-needed -L "$lib" -lishmem -Wl,-rpath,"$out:$lib" \
    -o "$out/sycl_test"
echo "sycl: compiled in $((SECONDS - t0)) s"
export OCL_ICD_FILENAMES="$venv/lib/libintelocl.so" LD_LIBRARY_PATH="$venv/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export ISHMEM_DEVICE_LIB="$out/ishmem_device.spv" ISHMEM_DEVICE_CACHE="$out/program-cache"
export ACPP_APPDB_DIR="$out/appdb"
passed=0
cores="$(nproc)"
for ring in 0 1; do
    for n in 1 2 3 4; do
        # As tests/device: not through the ring on exactly as many PEs as
        # cores (each request can wait for a time slice there).
        [ $ring = 1 ] && [ "$n" = "$cores" ] && continue
        t0=$SECONDS
        log="$(ISHMEM_DEBUG=1 ISHMEM_DEVICE_RING_ALL=$ring timeout -k 10 300 "$target/debug/ishmrun" -n "$n" "$out/sycl_test" 2>&1)" ||
            { echo "$log" >&2; fail "sycl_test on $n PEs, ring-all $ring"; }
        grep -q "sycl ok on $n PEs" <<<"$log" || { echo "$log" >&2; fail "sycl_test on $n PEs, ring-all $ring: no 'sycl ok'"; }
        # The kernel must have called the device library: Intel's CPU
        # runtime resolves a program's undefined functions against the
        # process, where libishmem's host routines would serve it (wrong
        # group semantics, no ring) if the shim did not link the program.
        [ "$(grep -c 'ishmemx_cl_link_program_in: a program of another OpenCL context' <<<"$log")" = "$n" ] ||
            { echo "$log" >&2; fail "sycl_test on $n PEs, ring-all $ring: not every PE linked its program with the device library"; }
        echo "ok: sycl_test on $n PEs, ring-all $ring ($((SECONDS - t0)) s)"
        passed=$((passed + 1))
    done
done
rm -rf "$out/tmp"
echo "sycl: $passed passed, 0 failed"
