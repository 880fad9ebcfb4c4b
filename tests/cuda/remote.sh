#!/usr/bin/env bash
# GPU heaps with every peer remote (ISHMEM_ENABLE_SHM=0): every operation
# on another PE goes through the MPI proxy's served regions, as between
# nodes. Under Open MPI's mpirun, 2 PEs, one GPU each when there are two
# (else sharing GPU 0: start MPS first), with --bind-to none (a GPU PE's
# ring and proxy threads need cores of their own: docs/cluster.md).
#
#   tests/cuda/remote.sh [BUILD_DIR] [OUT_DIR]
#
# Runs the host C/C++ suite on CUDA heaps (tests/cuda/host-suite.sh), the
# GPU tests at full size (test_cuda, every section), the ring's storm and
# mixed tests, then the benchmarks (remote_bench, ring_bench). Needs
# libishmem.so and ishmrun (TEST_LIBDIR, TEST_BINDIR; default
# target/release) with the Open MPI proxy plugin in ishmem/ beside the
# library, and BUILD_DIR from tests/cuda/build.sh. REMOTE_MCA holds the
# mpirun options that pick Open MPI's transports (default: --mca pml ob1
# --mca osc pt2pt, what the GPU machines' Open MPI 4.1.6 can run).
# REMOTE_ONE_GPU=1 puts both PEs on GPU 0 (start the MPS daemon first:
# nvidia-cuda-mps-control -d). REMOTE_PARTS picks parts (default "host gpu
# ring bench"), REMOTE_STEP_LIMIT the seconds a GPU test may take (300).
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/target/cuda-test}"
out="${2:-$root/target/cuda-remote}"
lib="${TEST_LIBDIR:-$root/target/release}"
bin="${TEST_BINDIR:-$root/target/release}"
mkdir -p "$out"
[ -e "$lib/libishmem.so.0" ] || ln -sf libishmem.so "$lib/libishmem.so.0"
export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
read -r -a mca <<<"${REMOTE_MCA:---mca pml ob1 --mca osc pt2pt}"
# The same settings for the host suite's mpirun, as OMPI_MCA_* variables.
for ((i = 0; i + 2 < ${#mca[@]} + 1; i += 3)); do
    [ "${mca[i]}" = --mca ] && export "OMPI_MCA_${mca[i + 1]}=${mca[i + 2]}"
done
mpirun="$(command -v mpirun.openmpi || command -v mpirun)"
launch=("$mpirun" -n 2 --bind-to none "${mca[@]}" -x LD_LIBRARY_PATH -x ISHMEM_ENABLE_SHM=0 -x ISHMEM_DEVICE=cuda)
if [ -n "${REMOTE_ONE_GPU:-}" ]; then
    export CUDA_VISIBLE_DEVICES=0 # inherited by the PEs mpirun starts on this node
    # test_cuda's collective launch splits the GPU between the PEs on it
    # (with every peer remote its node team is the PE alone).
    export TEST_PES_PER_GPU=2
    launch+=(-x TEST_PES_PER_GPU)
fi
failed=0
step() { # label, seconds, command...
    local label="$1" limit="$2" t0=$SECONDS
    shift 2
    local log="$out/$(echo "$label" | tr ' /' '__').log"
    if timeout -s KILL "$limit" "$@" >"$log" 2>&1; then
        echo "ok: $label ($((SECONDS - t0)) s)"
    else
        echo "FAIL: $label (exit $?, $((SECONDS - t0)) s; $log):"
        tail -n 20 "$log"
        failed=$((failed + 1))
    fi
}
parts=" ${REMOTE_PARTS:-host gpu ring bench} "
[[ $parts == *" host "* ]] && step "host suite on CUDA heaps, every peer remote" 900 \
    env TEST_LIBDIR="$lib" TEST_BINDIR="$bin" TEST_LAUNCHER=openmpi MPIRUN="$mpirun" ISHMEM_DEVICE=cuda \
    ISHMEM_ENABLE_SHM=0 "$root/tests/cuda/host-suite.sh" "$out/suite" 2
[[ $parts == *" gpu "* ]] && for mode in rma amo pingpong fence barrier mixed coll stream; do
    step "test_cuda $mode" "${REMOTE_STEP_LIMIT:-300}" bash -c '"$@" | tee /dev/stderr | grep "cuda '$mode' ok on 2 PEs" >/dev/null' _ \
        "${launch[@]}" "$build/test_cuda" "$mode"
done
[[ $parts == *" ring "* ]] && for args in "storm 8 256 100" "mixed 8 256 4" "full 64 1024 4 20"; do
    step "ring_test $args" "${REMOTE_STEP_LIMIT:-300}" "${launch[@]}" "$build/ring_test" $args
done
# Benchmarks: their tables, not pass or fail.
[[ $parts == *" bench "* ]] && for b in remote_bench ring_bench; do
    [ -x "$build/$b" ] || continue
    echo "== $b"
    timeout -s KILL 300 "${launch[@]}" "$build/$b" 2>&1 | tee "$out/$b.csv" | grep -v '^\s*$'
done
echo "remote: $failed failed"
[ "$failed" = 0 ]
