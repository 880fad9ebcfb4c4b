#!/usr/bin/env bash
# The README's test command: the whole test suite on a fresh Debian 12
# machine (what CI runs). Stages, each timed; a failed stage is reported
# and the later ones still run (unless they need what it made); the run
# ends with a table of the stages and the ten slowest test runs, and exits
# non-zero when any stage failed. tests/README.md says what each leg of the
# multi-PE suite covers and why.
set -uo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
target="${CARGO_TARGET_DIR:-$root/target}"
logs="$target/ci"
rm -rf "$logs" && mkdir -p "$logs"
export TEST_RESULTS="$logs/runs.tsv"
: >"$TEST_RESULTS"
start=$SECONDS
names=() times=() results=()
failed=0

# stage NAME CMD...: runs CMD, prints its duration, records the result.
stage() {
    local name="$1" t0=$SECONDS rc
    shift
    echo "== $name"
    "$@"
    rc=$?
    names+=("$name") times+=($((SECONDS - t0)))
    if [ $rc = 0 ]; then
        results+=(ok)
        echo "== $name: ok ($((SECONDS - t0)) s)"
    else
        results+=("FAILED (exit $rc)")
        failed=1
        echo "== $name: FAILED (exit $rc, $((SECONDS - t0)) s)"
    fi
    return $rc
}

summary() {
    echo
    echo "== summary ($(((SECONDS - start) / 60)) min $(((SECONDS - start) % 60)) s)"
    printf '  %-52s %7s  %s\n' stage seconds result
    local i
    for i in "${!names[@]}"; do
        printf '  %-52s %7s  %s\n' "${names[$i]}" "${times[$i]}" "${results[$i]}"
    done
    local runs
    runs=$(wc -l <"$TEST_RESULTS")
    echo "  slowest of the $runs test runs (seconds, limit, share of the limit, leg, run):"
    sort -t$'\t' -k2,2 -rn "$TEST_RESULTS" | head -n 10 |
        awk -F'\t' '{ printf "    %7.1f %5d %4.0f%%  %-22s %s%s\n", $2, $3, 100 * $2 / $3, $4, $5, ($1 == "ran" ? "" : "  " $1) }'
    local over
    over=$(awk -F'\t' '$2 > $3 / 4' "$TEST_RESULTS" | wc -l)
    echo "  runs above a quarter of their limit: $over"
    local ok=0 r
    for r in "${results[@]}"; do [ "$r" = ok ] && ok=$((ok + 1)); done
    echo "run-all: $ok passed, $((${#results[@]} - ok)) failed"
}
trap summary EXIT
die() { echo "run-all: $*; later stages need it, stopping"; exit 1; }

# 1. What the machine needs (apt packages, venvs, nvcc); its last lines
# name the tools.
stage "provision (apt, PyPI venvs, nvcc)" bash -c "tests/provision.sh > '$logs/provision.log' 2>&1 || { tail -30 '$logs/provision.log'; exit 1; }" \
    || die "provisioning failed"
eval "$(tail -n 5 "$logs/provision.log")"
export TEST_ZE_DRIVER_DIR="$zedrv"

# 2. The rules checked by machine: formatting, lints (clippy with warnings
# as errors, the workspace lints of Cargo.toml), the runtime's layering,
# the generated files (ishmem-gen, level-zero-sys's bindings, the CUDA
# host-AMO PTX).
rules() {
    cargo fmt --all -- --check &&
        cargo clippy -q --workspace --all-targets -- -D warnings &&
        cargo test -q -p ishmem-runtime --test layers &&
        cargo run -q -p ishmem-gen -- --check &&
        level-zero-sys/gen.sh --check &&
        NVCC="$nvcc" device-lib/cuda/gen-host-amo.sh --check
}
stage "rules: fmt, clippy, layers, generated files" rules

# 3. The workspace, debug profile (what the tests run), and the MPI proxy
# plugin once per MPI family.
stage "build: workspace (debug) and MPI proxy plugins" \
    bash -c "cargo build -q --workspace --all-targets && proxy-oshmpi/build-plugins.sh >/dev/null" \
    || die "the build failed"

# 4. The CUDA device library (sm_90), the other architectures' check and
# the GPU tests, compiled in the background at the lowest priority while
# the host tests run; stage 9 waits for it. No GPU here: tests/cuda/run.sh
# runs them on a GPU machine. This build checks that everything compiles
# and links, so the device code is compiled for compile time
# (CUDA_FAST_COMPILE=max: about 4 min instead of over 30 on 2 cores); the
# library that is measured or shipped is built without it.
cuda_out="$target/cuda-test"
cuda_t0=$SECONDS
(
    build_rc=0
    nice -n 19 env NVCC="$nvcc" CUDA_ARCHS=90 CUDA_FAST_COMPILE=max TEST_LIBDIR="$target/debug" tests/cuda/build.sh "$cuda_out" \
        >"$logs/cuda-build.log" 2>&1 || build_rc=$?
    echo "$build_rc $((SECONDS - cuda_t0))" >"$logs/cuda-build.done"
) &
cuda_pid=$!
# The release build the SDK stage installs (library, launcher, the MPI
# proxy plugins), made in the background the same way: cargo's release
# profile has its own lock, so the test legs' debug builds do not wait for
# it, and install.sh then finds everything built.
(
    build_rc=0
    nice -n 19 bash -c 'cargo build --release -q -p ishmem-capi -p ishmrun && proxy-oshmpi/build-plugins.sh --release "$1"' \
        _ "$target/release-plugins" >"$logs/release-build.log" 2>&1 || build_rc=$?
    echo "$build_rc" >"$logs/release-build.done"
) &
release_pid=$!

# 5. Unit tests, then the multi-PE suite (tests/programs.list and
# tests/tests/multi_pe.rs) in its legs: see tests/README.md for which legs
# run the whole list and which the lines tagged core.
stage "unit tests" cargo test -q --workspace --exclude ishmem-tests
stage "ishmem-tests: harness unit tests" cargo test -q -p ishmem-tests --lib
leg() { # label, env...
    local label="$1"
    shift
    stage "suite: $label" env "$@" cargo test -q -p ishmem-tests --test programs --test multi_pe
}
leg "ishmrun, cpu device (whole list)" TEST_LAUNCHER=ishmrun
leg "ishmrun, opaque device (heaps like GPU memory)" TEST_LAUNCHER=ishmrun ISHMEM_DEVICE=opaque
leg "Open MPI, all peers remote (whole list)" TEST_LAUNCHER=openmpi ISHMEM_ENABLE_SHM=0
leg "Open MPI, node-local sharing (core)" TEST_LAUNCHER=openmpi ISHMEM_ENABLE_SHM=1 TEST_TIER=core
leg "MPICH, all peers remote (whole list, 2 PEs)" TEST_LAUNCHER=mpich ISHMEM_ENABLE_SHM=0 TEST_MAX_PES=2
leg "MPICH, node-local sharing (core)" TEST_LAUNCHER=mpich ISHMEM_ENABLE_SHM=1 TEST_TIER=core
# Heaps the host cannot touch (the opaque device, as GPU heaps) with every
# peer remote: the MPI proxy serves them through the device.
# At 2 PEs: the served path is the same at any PE count, and 3-4 PEs on
# 2 cores add only time (the cpu legs above cover them).
leg "Open MPI, opaque device, all peers remote (whole list, 2 PEs)" \
    TEST_LAUNCHER=openmpi ISHMEM_ENABLE_SHM=0 ISHMEM_DEVICE=opaque TEST_MAX_PES=2
leg "MPICH, opaque device, all peers remote (core, 2 PEs)" \
    TEST_LAUNCHER=mpich ISHMEM_ENABLE_SHM=0 ISHMEM_DEVICE=opaque TEST_TIER=core TEST_MAX_PES=2
# Host heaps served the same way on request (ISHMEM_PROXY_RMA=message): the
# programs only (the launcher checks of multi_pe.rs do not depend on it), at
# 2 PEs like the opaque legs (every served operation waits for its target
# to be scheduled: at 4 PEs on 2 cores beside the CUDA build, rma_types ran
# 53-68 s of its 120 s limit).
stage "suite: Open MPI, RMA by message, all peers remote (core, 2 PEs)" env TEST_LAUNCHER=openmpi \
    ISHMEM_ENABLE_SHM=0 ISHMEM_PROXY_RMA=message TEST_TIER=core TEST_MAX_PES=2 \
    cargo test -q -p ishmem-tests --test programs
# At 2-3 PEs: at 4 on 2 cores it adds only time (the Open MPI leg above
# runs 4 PEs through the MPI proxy).
leg "oshrun through Open MPI's OSHMEM (whole list, 2-3 PEs)" TEST_LAUNCHER=oshmem TEST_MAX_PES=3
# The same through Sandia OpenSHMEM when an SOS build is here (its sources
# are not in this repository: tests/sos/build-sos.sh SRC_DIR PREFIX builds
# one into target/sos, or TEST_SOS names a prefix), over libfabric's tcp
# provider (tcp;ofi_rxm), started by MPICH's Hydra, one test at a time
# (side by side, SOS jobs over tcp disturbed each other).
sos="${TEST_SOS:-$target/sos}"
if [ -f "$sos/lib/libsma.so" ]; then
    stage "suite: mpiexec.hydra through Sandia OpenSHMEM ($sos)" env TEST_LAUNCHER=sos TEST_SOS_PREFIX="$sos" \
        cargo test -q -p ishmem-tests --test programs --test multi_pe -- --test-threads=1
else
    echo "sos: skipped (no SOS build at $sos; tests/sos/build-sos.sh SRC_DIR $sos makes one)"
fi
# Two hosts (network + UTS namespaces joined by a veth pair), Open MPI over
# TCP between them. Needs root.
if [ "$(id -u)" = 0 ]; then
    stage "multihost: 2 hosts over TCP (network namespaces)" tests/mpi/multihost.sh 2
    stage "multihost: 2 hosts over TCP, opaque heaps" env MULTIHOST_DEVICE=opaque tests/mpi/multihost.sh 2
else
    echo "multihost: skipped (needs root for network namespaces)"
fi

# 6. Device-initiated operations from OpenCL C kernels on the CPU device.
stage "device: OpenCL C kernels on the CPU device" \
    env TEST_DEVICE_MPI=1 TEST_OPENCL_VENV="$oclvenv" tests/device/test-device.sh

# 7. The Level Zero device's test program, compiled against Debian's Level
# Zero headers and loader, over the same SPIR-V. No Intel GPU here: not run
# (tests/ze/run.sh runs it on a machine with one; docs/device.md).
stage "ze: Level Zero device test built (no Intel GPU: not run)" \
    env TEST_LIBDIR="$target/debug" tests/ze/run.sh --build-only "$target/ze-test"

# 8. Benchmarks, smoke mode (they must run; no timing is asserted):
# ishmem-perf on 2 PEs, its charts, the side-by-side C benchmark against
# Open MPI's OSHMEM, the MPI proxy against raw MPI RMA under both MPIs
# (and OSHMPI when a build is here: tests/mpi/build-oshmpi.sh SRC_DIR
# "$target/oshmpi-mpich", or TEST_OSHMPI names a prefix), the many-PE set
# and its charts.
oshmpi="${TEST_OSHMPI:-$target/oshmpi-mpich}"
if [ -x "$oshmpi/bin/oshcc" ]; then
    echo "oshmpi: $oshmpi (in the proxy benchmark's smoke run)"
else
    echo "oshmpi: skipped in the proxy benchmark (no OSHMPI build at $oshmpi; tests/mpi/build-oshmpi.sh SRC_DIR $oshmpi makes one)"
    oshmpi=""
fi
bench() {
    rm -f "$target/perf-smoke.csv" "$target/perf-coll-smoke.csv"
    "$target/debug/ishmrun" -n 2 -t 300 "$target/debug/ishmem-perf" run --quick --csv "$target/perf-smoke.csv" >/dev/null &&
        "$target/debug/ishmem-perf" plot --input "$target/perf-smoke.csv" --out "$target/perf-smoke-plots" >/dev/null &&
        packaging/bench/compare.sh --quick --rounds 1 --out "$target/bench-smoke" >/dev/null &&
        packaging/bench/proxy.sh --debug --mpi mpich --quick --rounds 1 --out "$target/proxy-smoke-mpich" \
            ${oshmpi:+--oshmpi "$oshmpi"} >/dev/null &&
        packaging/bench/proxy.sh --debug --mpi openmpi --quick --rounds 1 --out "$target/proxy-smoke-openmpi" >/dev/null &&
        "$target/debug/ishmrun" -n 3 -t 300 "$target/debug/ishmem-perf" run --coll --quick \
            --csv "$target/perf-coll-smoke.csv" >/dev/null &&
        packaging/bench/scale.sh --quick --pes "2 3" --rounds 1 --out "$target/scale-smoke" >/dev/null &&
        "$target/debug/ishmem-perf" plot-scale --input ishmem-rs="$target/scale-smoke/ishmem-scale.csv" \
            --input oshmem="$target/scale-smoke/oshmem-scale.csv" --out "$target/scale-smoke-plots" >/dev/null
}
stage "benchmark smoke (no timing asserted)" bench

# 9. The CUDA build started in stage 4.
cuda_wait() {
    wait "$cuda_pid"
    read -r rc secs <"$logs/cuda-build.done" || { echo "the CUDA build left no result"; return 1; }
    echo "CUDA build: $secs s in the background at nice 19 (log: $logs/cuda-build.log)"
    [ "$rc" = 0 ] || { tail -30 "$logs/cuda-build.log"; return 1; }
    echo "cuda: device library (sm_90), architecture check, GPU tests and benchmark built; NOT run (no GPU on this machine: tests/cuda/run.sh on a GPU machine)"
}
stage "cuda: device library and GPU tests built (no GPU: not run)" cuda_wait

# 10. The installable SDK: release build (made in stage 4), prefix install
# (with the CUDA device library of stage 9), relocation, Lmod and Tcl
# modules, pkg-config and CMake, shared and static, ishmem-info, the MPI
# proxy from the prefix, the release tarball.
release_wait() {
    wait "$release_pid"
    [ "$(cat "$logs/release-build.done" 2>/dev/null)" = 0 ] || { tail -30 "$logs/release-build.log"; return 1; }
}
sdk() { release_wait && env "$@"; }
stage "sdk: install, modules, pkg-config, CMake, tarball" \
    sdk NVCC="$nvcc" TEST_CUDA_DEVICE_LIB="$cuda_out/libishmem_device.a" TEST_TCL_MODULECMD="$modulecmd" \
    TEST_OPENCL_VENV="$oclvenv" tests/sdk/test-sdk.sh

[ $failed = 0 ]
