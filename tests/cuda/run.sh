#!/usr/bin/env bash
# The GPU test suite (tests/cuda/test_cuda.cu) on the GPUs of this machine:
# 2 PEs, one GPU each when there are two or more, 4 PEs on four GPUs when
# there are four, 2 PEs sharing GPU 0 (under MPS where the machine has it),
# and 4 PEs on two GPUs (under MPS);
# each with load/store to peers and with every device operation through the
# reverse-offload ring (ISHMEM_DEVICE_RING_ALL=1).
#
#   tests/cuda/run.sh [BUILD_DIR]
#
# Needs libishmem.so and ishmrun (TEST_LIBDIR, TEST_BINDIR; default
# target/release) and a CUDA 13 nvcc (NVCC, default nvcc on PATH), unless
# BUILD_DIR already holds libishmem_device.a and test_cuda (built by
# tests/cuda/build.sh, as CI does without a GPU).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/target/cuda-test}"
lib="${TEST_LIBDIR:-$root/target/release}"
bin="${TEST_BINDIR:-$root/target/release}"
fail() { echo "cuda tests: FAIL: $*" >&2; exit 1; }
[ -f "$build/test_cuda" ] || "$root/tests/cuda/build.sh" "$build"
[ -e "$lib/libishmem.so.0" ] || ln -sf libishmem.so "$lib/libishmem.so.0"
export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
ngpu="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)"
[ "$ngpu" -ge 1 ] || fail "no GPU (nvidia-smi -L lists none)"
run() { # label, scale, env...
    local label="$1" scale="$2"; shift 2
    local t0=$SECONDS modes=all ring=""
    # With every operation through the ring: every section too (test_cuda
    # leaves the collective launch out: docs/device.md, forced ring), and
    # the ring's own test (tests/cuda/ring_test.cu).
    case " $* " in *" ISHMEM_DEVICE_RING_ALL=1 "*) ring=1 ;; esac
    for mode in $modes; do
        if ! out="$(env "$@" "$bin/ishmrun" -n "${pes:-2}" -t 600 "$build/test_cuda" $mode $scale 2>&1)"; then
            echo "$out" >&2; fail "$label ($mode)"
        fi
        echo "$out" | grep -q "cuda $mode ok on ${pes:-2} PEs" || { echo "$out" >&2; fail "$label ($mode) printed no result"; }
    done
    if [ -n "$ring" ]; then
        for args in "storm 8 256 100" "mixed 8 256 4" "full 64 1024 4 20"; do
            out="$(env "$@" "$bin/ishmrun" -n "${pes:-2}" -t 600 "$build/ring_test" $args 2>&1)" \
                || { echo "$out" >&2; fail "$label (ring_test $args)"; }
        done
    fi
    echo "ok: $label ($((SECONDS - t0)) s)"
}
# Two PEs sharing a GPU run under MPS when this machine has it (as
# docs/device.md tells users to). Without MPS the two processes time-slice
# the GPU: with every operation through the ring each host-performed
# request waits for a context switch, so that run uses the smaller sizes.
mps=""
if command -v nvidia-cuda-mps-control >/dev/null; then
    mps="$(mktemp -d)"
    export CUDA_MPS_PIPE_DIRECTORY="$mps/pipe" CUDA_MPS_LOG_DIRECTORY="$mps/log"
fi
start_mps() { # visible devices
    [ -n "$mps" ] || return 1
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    CUDA_VISIBLE_DEVICES="$1" nvidia-cuda-mps-control -d
}
stop_mps() { echo quit | nvidia-cuda-mps-control 2>/dev/null || true; sleep 1; }
trap 'if [ -n "$mps" ]; then stop_mps; rm -rf "$mps"; fi' EXIT
for ring in 0 1; do
    if [ "$ngpu" -ge 2 ]; then
        run "2 PEs on 2 GPUs, ring-all $ring" full ISHMEM_DEVICE_RING_ALL=$ring CUDA_VISIBLE_DEVICES=0,1
    fi
    if [ "$ngpu" -ge 4 ]; then
        pes=4 run "4 PEs on 4 GPUs, ring-all $ring" full ISHMEM_DEVICE_RING_ALL=$ring CUDA_VISIBLE_DEVICES=0,1,2,3
    fi
done
if start_mps 0; then
    for ring in 0 1; do
        run "2 PEs sharing GPU 0 under MPS, ring-all $ring" full ISHMEM_DEVICE_RING_ALL=$ring CUDA_VISIBLE_DEVICES=0
    done
    stop_mps
    # Two PEs on each of two GPUs (MPS over both).
    if [ "$ngpu" -ge 2 ]; then
        start_mps 0,1 || fail "MPS over GPUs 0 and 1 did not start"
        pes=4 run "4 PEs on 2 GPUs (2 per GPU) under MPS, ring-all 0" full ISHMEM_DEVICE_RING_ALL=0 CUDA_VISIBLE_DEVICES=0,1
        stop_mps
    fi
else
    for ring in 0 1; do
        scale=full; [ $ring = 1 ] && scale=small
        run "2 PEs sharing GPU 0, ring-all $ring" $scale ISHMEM_DEVICE_RING_ALL=$ring CUDA_VISIBLE_DEVICES=0
    done
fi
echo "cuda tests: ok ($ngpu GPU(s))"
