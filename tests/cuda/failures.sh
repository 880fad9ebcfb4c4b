#!/usr/bin/env bash
# GPU failures end the job with a message, never a hang: each
# case of tests/cuda/failures.cu on 2 PEs (one GPU each when there are two,
# else sharing GPU 0), under ishmrun and, where there is one, under Open
# MPI's mpirun; each must end within 10 s with its message and exit status
# and leave nothing in /dev/shm.
#
#   tests/cuda/failures.sh [BUILD_DIR]
#
# BUILD_DIR holds libishmem_device.a (tests/cuda/build.sh) and receives the
# failures binary; libishmem.so and ishmrun come from TEST_LIBDIR and
# TEST_BINDIR (default target/release).
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/target/cuda-test}"
lib="${TEST_LIBDIR:-$root/target/release}"
bin="${TEST_BINDIR:-$root/target/release}"
nvcc="${NVCC:-nvcc}"
export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ ! -x "$build/failures" ]; then
    cudalib="$(dirname "$(command -v "$nvcc")")/../lib"
    "$nvcc" -rdc=true -arch=sm_90 -std=c++17 -O2 "$root/tests/cuda/failures.cu" -I "$root/bindings/c/include" \
        -L "$build" -lishmem_device -L "$lib" -lishmem -L "$cudalib" -o "$build/failures" || exit 1
fi
# TEST_GPUS: the GPUs the PEs use (CUDA_VISIBLE_DEVICES); default 0,1
# where there are two, else 0 (two PEs sharing it, no MPS: under MPS a
# fault in one client ends the others' contexts too).
ngpu="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)"
if [ -n "${TEST_GPUS:-}" ]; then
    export CUDA_VISIBLE_DEVICES="$TEST_GPUS"
elif [ "$ngpu" -ge 2 ]; then
    export CUDA_VISIBLE_DEVICES=0,1
else
    export CUDA_VISIBLE_DEVICES=0
fi
echo "failures: 2 PEs on GPUs $CUDA_VISIBLE_DEVICES"
failed=0
# check LAUNCHER MODE EXIT(nonzero|0) TEXT [TEXT_THAT_MUST_NOT_APPEAR]
# (MODE@control: device syncs through the control segment,
# ISHMEM_DEVICE_SYNC=control; MODE@noabort: ISHMEM_DEADLOCK_DEVICE_ABORT=0,
# which every other case sets to 1)
check() {
    local launcher="$1" mode="$2" want="$3" text="$4" not="${5:-}"
    local t0 rc out ms
    local before
    before="$(ls /dev/shm | sort)"
    t0=$(date +%s%N)
    # heap_too_big: a heap larger than any GPU's memory.
    local size=64m run="$mode" sync=auto dabort=1
    case "$run" in *@control) run="${run%@control}" sync=control ;; esac
    case "$run" in *@noabort) run="${run%@noabort}" dabort=0 ;; esac
    [ "$mode" = heap_too_big ] && size=1t run=deadlock
    case "$launcher" in
    ishmrun) out="$(ISHMEM_DEVICE_SYNC=$sync ISHMEM_SYMMETRIC_SIZE=$size ISHMEM_DEADLOCK_TIMEOUT=2 ISHMEM_DEADLOCK_DEVICE_ABORT=$dabort timeout 60 "$bin/ishmrun" -n 2 \
        "$build/failures" "$run" 2>&1)" ;;
    mpirun) out="$(ISHMEM_DEVICE_SYNC=$sync ISHMEM_SYMMETRIC_SIZE=$size ISHMEM_DEADLOCK_TIMEOUT=2 ISHMEM_DEADLOCK_DEVICE_ABORT=$dabort timeout 60 mpirun \
        --allow-run-as-root --oversubscribe -x LD_LIBRARY_PATH -x ISHMEM_DEVICE_SYNC -x ISHMEM_SYMMETRIC_SIZE -x ISHMEM_DEADLOCK_TIMEOUT \
        -x ISHMEM_DEADLOCK_DEVICE_ABORT -x CUDA_VISIBLE_DEVICES \
        -n 2 "$build/failures" "$run" 2>&1)" ;;
    esac
    rc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
    local ok=1
    if [ "$want" = 0 ]; then [ $rc = 0 ] || ok=0; else { [ $rc != 0 ] && [ $rc != 124 ]; } || ok=0; fi
    echo "$out" | grep -qF -- "$text" || ok=0
    if [ -n "$not" ] && echo "$out" | grep -qF -- "$not"; then ok=0; fi
    [ $ms -lt 10000 ] || ok=0
    sleep 0.5
    [ "$(ls /dev/shm | sort)" = "$before" ] || { echo "  left in /dev/shm: $(comm -13 <(echo "$before") <(ls /dev/shm | sort))"; ok=0; }
    if [ $ok = 1 ]; then
        printf 'ok:   %-8s %-13s exit %3s in %5d ms: %s\n' "$launcher" "$mode" "$rc" "$ms" \
            "$(echo "$out" | grep -F -- "$text" | head -1 | cut -c1-160)"
    else
        failed=1
        printf 'FAIL: %-8s %-13s exit %3s in %5d ms (want exit %s, "%s")\n' "$launcher" "$mode" "$rc" "$ms" "$want" "$text"
        echo "$out" | sed 's/^/    /' | head -40
    fi
}
launchers=ishmrun
command -v mpirun >/dev/null && launchers="ishmrun mpirun"
for l in $launchers; do
    check "$l" lost nonzero "without calling shmem_finalize"
    check "$l" trap_barrier nonzero "the CUDA context of GPU"
    check "$l" trap_idle nonzero "the CUDA context of GPU"
    check "$l" bad_address nonzero "CUDA_ERROR_ILLEGAL_ADDRESS"
    check "$l" deadlock nonzero "deadlock: every PE has waited in the library"
    check "$l" kernel_busy 0 "kernel_busy ok" "deadlock"
    check "$l" kernel_deadlock nonzero "PE 0 runs outside the library; its kernels wait in ishmem_long_wait_until(ivar"
    check "$l" kernel_deadlock nonzero "PE 1 runs outside the library; its kernels wait in ishmem_signal_wait_until(sig_addr"
    check "$l" kernel_barrier_deadlock nonzero "PE 0 runs outside the library; its kernels wait in a device team sync or collective of the world team"
    check "$l" kernel_barrier_deadlock nonzero "PE 1 runs outside the library; its kernels wait in ishmem_long_wait_until(ivar"
    check "$l" coll_mismatch_ll nonzero "this PE called broadcast of 8 bytes from team PE 0; PE 0 called an fcollect"
    check "$l" coll_mismatch_signal nonzero "PE 0: ishmem device collective: the members of the world team made different collective calls in kernels"
    check "$l" coll_mismatch_reduce4 nonzero "this PE called sum reduction of 7 elements of 64-bit integer"
    # Kernels that wait in the library's own syncs for each other, or for a
    # PE whose device runs nothing: the job ends without
    # ISHMEM_DEADLOCK_DEVICE_ABORT.
    check "$l" coll_mismatch_mixed@noabort nonzero "nothing can release them"
    check "$l" host_device_barrier@noabort nonzero "nothing can release them"
    check "$l" host_device_barrier@control 0 "host_device_barrier ok"
    # The same through the control segment: every member's call in the host's report.
    check "$l" coll_mismatch_ll@control nonzero "PE 1: broadcast of 8 bytes from team PE 0"
    check "$l" coll_mismatch_signal@control nonzero "PE 1: broadcast of 65536 bytes from team PE 1"
    check "$l" heap_too_big nonzero "it does not fit: the GPU has"
    # Two PEs on one GPU without MPS: one warning with the fix.
    if [ "${CUDA_VISIBLE_DEVICES#*,}" = "$CUDA_VISIBLE_DEVICES" ]; then
        check "$l" kernel_busy 0 "2 PEs share GPU 0" "deadlock"
    fi
done
[ $failed = 0 ] && echo "failures: all cases ok" || { echo "failures: FAILED"; exit 1; }
