#!/usr/bin/env bash
# GPU soak (not in CI; run by hand on a GPU machine): for SECONDS, jobs of
# 2..4 PEs on the machine's GPUs (several PEs per GPU when there are fewer
# GPUs), alternately clean runs of the GPU tests (tests/cuda/test_cuda:
# RMA, AMOs, ping-pong, fence, barrier, host and device mixed) and jobs
# with a fault injected into a random PE (tests/cuda/failures.cu: a PE
# exits without finalizing, a kernel traps before a barrier or while the
# host is idle, a kernel stores to a bad address, a deadlock of host waits,
# PE 0's barrier on the host against the others' in kernels), and reports:
#   jobs, faults, hangs (a faulted job not ended in 10 s, a clean one not
#   done in 300 s), leaks (files named *ishm* left in /dev/shm or /tmp, or
#   test processes left running), wrong results (a clean job that failed,
#   a faulted one that exited 0 or without its message).
#
#   tests/soak/gpu-soak.sh BUILD_DIR [SECONDS, default 600]
#
# BUILD_DIR holds test_cuda and failures (tests/cuda/build.sh,
# tests/cuda/failures.sh); libishmem.so and ishmrun come from TEST_LIBDIR
# and TEST_BINDIR (default target/release). Exit status 0 when hangs,
# leaks and wrong results are all zero.
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:?usage: gpu-soak.sh BUILD_DIR [SECONDS]}"
secs="${2:-600}"
lib="${TEST_LIBDIR:-$root/target/release}"
bin="${TEST_BINDIR:-$root/target/release}"
export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for p in test_cuda failures; do
    [ -x "$build/$p" ] || { echo "gpu-soak: no $build/$p"; exit 1; }
done
ngpu="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)"
[ "$ngpu" -ge 1 ] || { echo "gpu-soak: no GPU"; exit 1; }
leftovers() { { ls /dev/shm /tmp 2>/dev/null | grep "ishm"; pgrep -f "$build/(test_cuda|failures)"; } | sort | tr '\n' ' '; }
before="$(leftovers)"
jobs=0 faults=0 hangs=0 leaks=0 wrong=0
faultmodes=(lost trap_barrier trap_idle bad_address deadlock host_device_barrier)
cleanmodes=(rma amo pingpong fence barrier mixed)
declare -A want=([lost]="without calling shmem_finalize" [trap_barrier]="the CUDA context of GPU"
    [trap_idle]="the CUDA context of GPU" [bad_address]="CUDA_ERROR_ILLEGAL_ADDRESS"
    [deadlock]="deadlock: every PE has waited in the library" [host_device_barrier]="nothing can release them")
end=$((SECONDS + secs))
while [ $SECONDS -lt $end ]; do
    n=$((2 + RANDOM % 3))
    jobs=$((jobs + 1))
    t0=$SECONDS
    if [ $((jobs % 2)) = 0 ]; then
        mode="${faultmodes[RANDOM % ${#faultmodes[@]}]}"
        pe=$((RANDOM % n))
        faults=$((faults + 1))
        out="$(FAIL_PE=$pe ISHMEM_DEADLOCK_TIMEOUT=2 timeout 30 "$bin/ishmrun" -n $n "$build/failures" "$mode" 2>&1)"
        rc=$?
        label="fault $mode at PE $pe of $n"
        [ "$mode" = host_device_barrier ] && label="fault $mode (PE 0 on the host) of $n"
        if [ $rc = 124 ] || [ $((SECONDS - t0)) -ge 10 ]; then
            hangs=$((hangs + 1)); echo "HANG: $label ($((SECONDS - t0)) s)"; echo "$out" | tail -5
        elif [ $rc = 0 ] || ! echo "$out" | grep -qF "${want[$mode]}"; then
            wrong=$((wrong + 1)); echo "WRONG: $label: exit $rc"; echo "$out" | tail -8
        fi
    else
        mode="${cleanmodes[RANDOM % ${#cleanmodes[@]}]}"
        label="clean $mode on $n PEs"
        out="$(timeout 300 "$bin/ishmrun" -n $n "$build/test_cuda" "$mode" small 2>&1)"
        rc=$?
        if [ $rc = 124 ]; then
            hangs=$((hangs + 1)); echo "HANG: $label"; echo "$out" | tail -5
        elif [ $rc != 0 ] || ! echo "$out" | grep -q "cuda $mode ok on $n PEs"; then
            wrong=$((wrong + 1)); echo "WRONG: $label: exit $rc"; echo "$out" | tail -8
        fi
    fi
    sleep 0.3
    now="$(leftovers)"
    if [ "$now" != "$before" ]; then
        leaks=$((leaks + 1)); echo "LEAK after $label: $now"
        pkill -9 -f "$build/(test_cuda|failures)" 2>/dev/null
        before="$(leftovers)"
    fi
    echo "job $jobs: $label: exit $rc in $((SECONDS - t0)) s"
done
echo "gpu-soak: $jobs jobs in $secs s on $ngpu GPU(s), $faults with a fault: $hangs hangs, $leaks leaks, $wrong wrong results"
[ $hangs = 0 ] && [ $leaks = 0 ] && [ $wrong = 0 ]
