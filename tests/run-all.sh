#!/usr/bin/env bash
# The README's test command: the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
. packaging/setup-debian.sh

# First, before anything is installed: the rules checked by machine.
# Formatting, lints (clippy with warnings as errors, the workspace lints of
# Cargo.toml: `unsafe_op_in_unsafe_fn`, SAFETY comments, `# Safety` docs),
# the runtime's layering rules (runtime/tests/layers.rs), and the generated
# files. The MPI proxy plugin links MPI, so it is linted after the installs.
echo "== rules: cargo fmt --check, clippy -D warnings, layers, ishmem-gen --check"
cargo fmt --all -- --check
cargo clippy -q --workspace --all-targets --exclude ishmem-proxy-oshmpi -- -D warnings
cargo test -q -p ishmem-runtime --test layers
cargo run -q -p ishmem-gen -- --check

# Test prerequisites: Lmod, CMake, pkg-config, C++ and Fortran compilers, and
# Environment Modules unpacked beside the build (Debian's lmod and
# environment-modules packages conflict, so the Tcl one is not installed).
tools="${CARGO_TARGET_DIR:-$PWD/target}/test-tools"
need=""
[ -f /usr/share/lmod/lmod/init/bash ] || need="$need lmod"
command -v cmake >/dev/null || need="$need cmake"
command -v pkg-config >/dev/null || need="$need pkg-config"
command -v c++ >/dev/null || need="$need g++"
command -v tclsh >/dev/null || need="$need tcl"
command -v gfortran >/dev/null || need="$need gfortran"
[ -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || need="$need fonts-dejavu-core"
command -v oshcc >/dev/null || need="$need libopenmpi-dev openmpi-bin"
# The MPI proxy plugin builds against both MPI ABI families (the mpi crate's
# bindings need libclang); the multi-host test needs ip(8).
command -v mpicc.mpich >/dev/null || need="$need mpich libmpich-dev"
ls /usr/lib/llvm-*/lib/libclang.so* >/dev/null 2>&1 || need="$need libclang-dev"
command -v ip >/dev/null || need="$need iproute2"
# level-zero-sys/gen.sh --check: Debian's bindgen and Level Zero headers.
command -v bindgen >/dev/null || need="$need bindgen"
[ -f /usr/include/level_zero/ze_api.h ] || need="$need libze-dev"
for tool in clang-14 llvm-spirv-14 llvm-link-14 spirv-val; do
    command -v $tool >/dev/null || need="$need clang-14 llvm-14 llvm-spirv-14 spirv-tools"
done
[ -f /usr/include/CL/cl.h ] && [ -e /usr/lib/x86_64-linux-gnu/libOpenCL.so ] || need="$need ocl-icd-opencl-dev opencl-c-headers"
modulecmd="$(ls "$tools"/em/usr/lib/*/modulecmd.tcl 2>/dev/null | head -n1 || true)"
if [ -n "$need" ] || [ -z "$modulecmd" ]; then
    sudo_=""; [ "$(id -u)" = 0 ] || sudo_=sudo
    $sudo_ apt-get update -qq
    [ -z "$need" ] || DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq $need >/dev/null
    if [ -z "$modulecmd" ]; then
        mkdir -p "$tools" && rm -rf "$tools/em" "$tools"/environment-modules_*.deb
        (cd "$tools" && apt-get download -qq environment-modules && dpkg -x environment-modules_*.deb em)
        modulecmd="$(ls "$tools"/em/usr/lib/*/modulecmd.tcl | head -n1)"
    fi
fi

# The Level Zero bindings are what gen.sh makes from Debian's headers.
level-zero-sys/gen.sh --check
# Intel's CPU OpenCL runtime (consumes SPIR-V) for the device tests, from
# PyPI into a venv beside the build.
oclvenv="$tools/oclvenv"
if [ ! -f "$oclvenv/lib/libintelocl.so" ]; then
    python3 -m venv "$oclvenv"
    "$oclvenv/bin/pip" install -q intel-opencl-rt intel-cmplr-lib-rt
fi

# A Level Zero GPU driver on a machine without a GPU, for the ze device's
# no-GPU check (multi_pe.rs, error_ze_fail_fast): Debian's intel-opencl-icd
# (which contains libze_intel_gpu.so.1) and libigdgmm12, unpacked, not
# installed.
zedrv="$tools/zedrv"
if [ ! -f "$zedrv/usr/lib/x86_64-linux-gnu/libze_intel_gpu.so.1" ]; then
    rm -rf "$zedrv" && mkdir -p "$zedrv/debs"
    (cd "$zedrv/debs" && apt-get download -qq intel-opencl-icd libigdgmm12 \
        && for d in *.deb; do dpkg -x "$d" "$zedrv"; done)
fi
export TEST_ZE_DRIVER_DIR="$zedrv/usr/lib/x86_64-linux-gnu"

cargo clippy -q -p ishmem-proxy-oshmpi -- -D warnings
cargo build --workspace --all-targets
# The MPI proxy plugin, once per MPI family, beside the debug libishmem.
proxy-oshmpi/build-plugins.sh >/dev/null
cargo test --workspace
# The multi-PE suite again under real MPI launchers: Open MPI and MPICH,
# with node-local sharing (peers on one node by load/store, the MPI proxy
# idle) and without it (every peer remote: RMA, AMOs, signals, collectives,
# locks and teams through the MPI proxy).
for launcher in openmpi mpich; do
    for shm in 1 0; do
        echo "== multi-PE suite under $launcher, ISHMEM_ENABLE_SHM=$shm"
        TEST_LAUNCHER=$launcher ISHMEM_ENABLE_SHM=$shm cargo test -q -p ishmem-tests --test multi_pe
    done
done
# The multi-PE suite through the OpenSHMEM proxy: Open MPI's OSHMEM,
# loaded at run time (ISHMEM_RUNTIME=OPENSHMEM) and started by oshrun;
# every peer is reached through it.
echo "== multi-PE suite under oshrun, through Open MPI's OSHMEM"
TEST_LAUNCHER=oshmem cargo test -q -p ishmem-tests --test multi_pe
# The same through Sandia OpenSHMEM when an SOS build is here (its sources
# are not in this repository: tests/sos/build-sos.sh SRC_DIR PREFIX builds
# one into target/sos, or ISHMEM_TEST_SOS names a prefix), over libfabric's
# tcp provider (tcp;ofi_rxm), started by MPICH's Hydra.
sos="${ISHMEM_TEST_SOS:-${CARGO_TARGET_DIR:-$PWD/target}/sos}"
if [ -f "$sos/lib/libsma.so" ]; then
    echo "== multi-PE suite under mpiexec.hydra, through Sandia OpenSHMEM ($sos)"
    # One test at a time: side by side, SOS jobs over tcp disturbed each other.
    TEST_LAUNCHER=sos TEST_SOS_PREFIX="$sos" cargo test -q -p ishmem-tests --test multi_pe -- --test-threads=1
else
    echo "sos: skipped (no SOS build at $sos; tests/sos/build-sos.sh SRC_DIR $sos makes one)"
fi
# Two hosts (network + UTS namespaces joined by a veth pair), Open MPI over
# TCP between them. Needs root.
if [ "$(id -u)" = 0 ]; then
    tests/mpi/multihost.sh 2
    echo "multihost: 1 passed, 0 failed"
else
    echo "multihost: skipped (needs root for network namespaces)"
fi
# The installable SDK: prefix install, relocation, Lmod and Tcl modules,
# pkg-config and CMake, shared and static, ishmem-info, release tarball.
target="${CARGO_TARGET_DIR:-$PWD/target}"
nvcc="$(tests/cuda/nvcc.sh)"
NVCC="$nvcc" ISHMEM_TCL_MODULECMD="$modulecmd" ISHMEM_TEST_OPENCL_VENV="$oclvenv" tests/sdk/test-sdk.sh
echo "sdk: 1 passed, 0 failed"
# Device-initiated operations from OpenCL C kernels on the CPU device.
TEST_DEVICE_MPI=1 ISHMEM_TEST_OPENCL_VENV="$oclvenv" tests/device/test-device.sh
echo "device: 1 passed, 0 failed"
# The Level Zero device's test program, compiled against Debian's Level
# Zero headers and loader, over the same SPIR-V. No Intel GPU here: not run
# (tests/ze/run.sh runs it on a machine with one; docs/device.md).
ISHMEM_LIBDIR="$target/debug" tests/ze/run.sh --build-only "$target/ze-test"
# The CUDA device library and the GPU tests (tests/cuda), compiled with a
# CUDA 13.0 nvcc from PyPI; the checked-in host-AMO PTX must be what that
# compiler makes. No GPU here: they are not run (tests/cuda/run.sh runs them
# on a machine with NVIDIA GPUs; docs/device.md).
NVCC="$nvcc" device-lib/cuda/gen-host-amo.sh --check
# One architecture here: the SDK test above builds the installed library
# for every default one.
ISHMEM_CUDA_ARCHS=90 NVCC="$nvcc" ISHMEM_LIBDIR="$target/debug" tests/cuda/build.sh "$target/cuda-test" >/dev/null
echo "cuda: device library, GPU tests and benchmark built; NOT run (no GPU on this machine: tests/cuda/run.sh on a GPU machine)"
# The host C/C++ suite on heaps the program cannot load from or store to,
# as GPU heaps are (the opaque test device): what tests/cuda/host-suite.sh
# runs with ISHMEM_DEVICE=cuda on a GPU machine.
o="$(ISHMEM_DEVICE=opaque ISHMEM_LIBDIR="$target/debug" ISHMEM_BINDIR="$target/debug" \
    tests/cuda/host-suite.sh "$target/opaque-host-suite" "1 2 4" 2>&1)" || { echo "$o"; exit 1; }
tail -n 1 <<<"$o"
# Benchmarks, smoke mode (they must run; no timing is asserted): ishmem-perf
# on 2 PEs, its charts, and the side-by-side C benchmark against Open MPI's
# OSHMEM.
rm -f "$target/perf-smoke.csv"
"$target/debug/ishmrun" -n 2 -t 300 "$target/debug/ishmem-perf" run --quick --csv "$target/perf-smoke.csv" > /dev/null
"$target/debug/ishmem-perf" plot --input "$target/perf-smoke.csv" --out "$target/perf-smoke-plots" > /dev/null
packaging/bench/compare.sh --quick --rounds 1 --out "$target/bench-smoke" > /dev/null
# The many-PE set (issue #19): back-to-back collectives, largest per-PE
# time, through the Rust crate and side by side with OSHMEM; its charts.
rm -f "$target/perf-coll-smoke.csv"
"$target/debug/ishmrun" -n 3 -t 300 "$target/debug/ishmem-perf" run --coll --quick --csv "$target/perf-coll-smoke.csv" > /dev/null
packaging/bench/scale.sh --quick --pes "2 3" --rounds 1 --out "$target/scale-smoke" > /dev/null
"$target/debug/ishmem-perf" plot-scale --input ishmem-rs="$target/scale-smoke/ishmem-scale.csv" \
    --input oshmem="$target/scale-smoke/oshmem-scale.csv" --out "$target/scale-smoke-plots" > /dev/null
echo "benchmark smoke: 1 passed, 0 failed"
