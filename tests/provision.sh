#!/usr/bin/env bash
# Installs what the test suite needs on a Debian 12 machine, and nothing
# else; tests/run-all.sh runs it as its first stage. Safe to run again: it
# installs only what is missing.
#
# From Debian: Lmod, CMake, pkg-config, C++ and Fortran compilers, fonts
# for the charts, Open MPI and MPICH (the MPI proxy plugin builds against
# both ABI families; the mpi crate's bindings need libclang), ip(8) for
# the two-host test, bindgen and the Level Zero headers (level-zero-sys's
# check), clang-14, llvm-spirv-14 and SPIR-V tools (the device library),
# the OpenCL headers and ICD loader. Unpacked beside the build, not
# installed: Environment Modules (Debian's lmod and environment-modules
# packages conflict) and Intel's Level Zero GPU driver (for the no-GPU
# check). From PyPI into venvs beside the build: Intel's CPU OpenCL runtime
# and a CUDA 13.0 nvcc.
#
# Prints the paths later stages use as shell assignments (tools=,
# modulecmd=, oclvenv=, zedrv=, nvcc=) on its last lines.
set -euo pipefail
cd "$(dirname "$0")/.."
. packaging/setup-debian.sh
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
command -v mpicc.mpich >/dev/null || need="$need mpich libmpich-dev"
ls /usr/lib/llvm-*/lib/libclang.so* >/dev/null 2>&1 || need="$need libclang-dev"
command -v ip >/dev/null || need="$need iproute2"
command -v setpriv >/dev/null || need="$need util-linux"
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
    # shellcheck disable=SC2086
    [ -z "$need" ] || DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq $need >/dev/null
    if [ -z "$modulecmd" ]; then
        mkdir -p "$tools" && rm -rf "$tools/em" "$tools"/environment-modules_*.deb
        (cd "$tools" && apt-get download -qq environment-modules 2>/dev/null && dpkg -x environment-modules_*.deb em)
        modulecmd="$(ls "$tools"/em/usr/lib/*/modulecmd.tcl | head -n1)"
    fi
fi
# Intel's CPU OpenCL runtime (consumes SPIR-V) for the device tests.
oclvenv="$tools/oclvenv"
if [ ! -f "$oclvenv/lib/libintelocl.so" ]; then
    python3 -m venv "$oclvenv"
    "$oclvenv/bin/pip" install -q intel-opencl-rt intel-cmplr-lib-rt
fi
# A Level Zero GPU driver on a machine without a GPU, for the ze device's
# no-GPU check (multi_pe.rs, error_ze_fail_fast): Debian's intel-opencl-icd
# (which contains libze_intel_gpu.so.1) and libigdgmm12, unpacked.
zedrv="$tools/zedrv"
if [ ! -f "$zedrv/usr/lib/x86_64-linux-gnu/libze_intel_gpu.so.1" ]; then
    rm -rf "$zedrv" && mkdir -p "$zedrv/debs"
    (cd "$zedrv/debs" && apt-get download -qq intel-opencl-icd libigdgmm12 2>/dev/null \
        && for d in *.deb; do dpkg -x "$d" "$zedrv"; done)
fi
# A CUDA 13.0 nvcc (PyPI) for the CUDA device library; no GPU needed.
nvcc="$(tests/cuda/nvcc.sh)"
echo "tools=$tools"
echo "modulecmd=$modulecmd"
echo "oclvenv=$oclvenv"
echo "zedrv=$zedrv/usr/lib/x86_64-linux-gnu"
echo "nvcc=$nvcc"
