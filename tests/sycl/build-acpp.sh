#!/usr/bin/env bash
# Build the Khronos SPIRV-LLVM-Translator (patched as AdaptiveCpp expects) and
# AdaptiveCpp (SSCP "generic" target + OpenCL backend) against Debian 12's LLVM 16,
# fully offline, from already-checked-out source trees.
#
# usage: build-acpp.sh PREFIX ACPP_SRC TRANSLATOR_SRC SPIRV_HEADERS_SRC OCL_HEADERS_SRC CLHPP_SRC
#
#   PREFIX             install prefix (AdaptiveCpp goes to PREFIX, the translator to
#                      PREFIX/lib/hipSYCL/ext/llvm-spirv, where acpp looks for it)
#   ACPP_SRC           AdaptiveCpp source tree (tested: develop @ 49544a48)
#   TRANSLATOR_SRC     SPIRV-LLVM-Translator, branch llvm_release_160 (tested: 4be9ad45)
#                      AdaptiveCpp's llvm-spirv.patch is applied here if not yet applied.
#   SPIRV_HEADERS_SRC  SPIRV-Headers at the commit in TRANSLATOR_SRC/spirv-headers-tag.conf
#   OCL_HEADERS_SRC    OpenCL-Headers at the commit pinned in ACPP_SRC/src/runtime/CMakeLists.txt
#   CLHPP_SRC          OpenCL-CLHPP at the commit pinned in ACPP_SRC/src/runtime/CMakeLists.txt
#
# Environment (optional):
#   BUILD_ROOT   build directories (default: $(dirname PREFIX)/build)
#   LOG_DIR      build logs (default: $(dirname PREFIX)/logs)
#   JOBS         parallel jobs (default: 2)
#   ACPP_SUFFIX  version suffix shown by acpp --version (default: derived from ACPP_SRC's
#                git metadata if any, else from ACPP_SRC.commit next to the tree, else empty)
set -euo pipefail

if [ "$#" -ne 6 ]; then
  sed -n '6,16p' "$0" >&2
  exit 2
fi

abspath() { (cd "$1" && pwd -P); }
mkdir -p "$1"
prefix=$(abspath "$1")
acpp_src=$(abspath "$2")
spv_src=$(abspath "$3")
spvhdr_src=$(abspath "$4")
oclhdr_src=$(abspath "$5")
clhpp_src=$(abspath "$6")

top=$(dirname "$prefix")
build_root=${BUILD_ROOT:-$top/build}
log_dir=${LOG_DIR:-$top/logs}
jobs=${JOBS:-2}
llvm_dir=/usr/lib/llvm-16/lib/cmake/llvm
cc=/usr/bin/clang-16
cxx=/usr/bin/clang++-16
mkdir -p "$build_root" "$log_dir"

step() { echo "[$(date +%H:%M:%S)] $*"; }

# --- 1. Debian packages (installed only if missing) -------------------------------
wanted_pkgs="clang-16 llvm-16-dev libclang-16-dev libomp-16-dev libboost-context-dev
  libboost-fiber-dev ninja-build cmake patch ocl-icd-opencl-dev"
missing_pkgs=""
for p in $wanted_pkgs; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing_pkgs="$missing_pkgs $p"
  fi
done
if [ -n "$missing_pkgs" ]; then
  step "apt-get install:$missing_pkgs"
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y $missing_pkgs
fi

# --- 2. Sanity checks on the sources ------------------------------------------------
for f in "$acpp_src/CMakeLists.txt" "$spv_src/CMakeLists.txt" \
         "$spvhdr_src/include/spirv/unified1/spirv.hpp" "$oclhdr_src/CL/cl.h" \
         "$clhpp_src/include/CL/opencl.hpp"; do
  [ -e "$f" ] || { echo "missing $f" >&2; exit 1; }
done
if [ -e "$oclhdr_src/CL/opencl.hpp" ]; then
  echo "$oclhdr_src/CL/opencl.hpp exists: OCL_HEADERS_SRC must hold only the C headers" >&2
  exit 1
fi

# --- 3. Patch the translator as AdaptiveCpp's CMake would --------------------------
# (src/compiler/llvm-to-backend/CMakeLists.txt runs this patch on the fetched tree)
spv_patch=$acpp_src/src/compiler/llvm-to-backend/spirv/llvm-spirv.patch
spv_internal=$spv_src/lib/SPIRV/SPIRVInternal.h
if grep -A1 'enum SPIRAddressSpace' "$spv_internal" | grep -q 'SPIRAS_Generic'; then
  step "translator already patched"
else
  step "patching translator"
  patch -N -p0 -c --fuzz=4 --ignore-whitespace -i "$spv_patch" "$spv_internal"
  rm -f "$spv_internal.orig"
fi

# --- 4. Build + install the translator ---------------------------------------------
# The build directory is placed where AdaptiveCpp's FetchContent expects the
# translator's binary dir (FETCHCONTENT_BASE_DIR/llvmspirvtranslator-build), with the
# same configure options AdaptiveCpp passes, so AdaptiveCpp reuses it instead of
# building a second copy.
deps_dir=$build_root/deps
spv_build=$deps_dir/llvmspirvtranslator-build
spv_prefix=$prefix/lib/hipSYCL/ext/llvm-spirv
mkdir -p "$deps_dir"

t0=$(date +%s)
step "configuring translator (log: $log_dir/translator-configure.log)"
nice -n 10 cmake -G Ninja -S "$spv_src" -B "$spv_build" \
  -DCMAKE_C_COMPILER=$cc -DCMAKE_CXX_COMPILER=$cxx \
  -DLLVM_SPIRV_BUILD_EXTERNAL=ON -DLLVM_DIR=$llvm_dir \
  -DCMAKE_INSTALL_PREFIX="$spv_prefix" -DCMAKE_BUILD_TYPE=Release \
  -DLLVM_EXTERNAL_SPIRV_HEADERS_SOURCE_DIR="$spvhdr_src" \
  -DLLVM_SPIRV_INCLUDE_TESTS=OFF \
  > "$log_dir/translator-configure.log" 2>&1
step "building translator (log: $log_dir/translator-build.log)"
nice -n 10 cmake --build "$spv_build" -j"$jobs" > "$log_dir/translator-build.log" 2>&1
nice -n 10 cmake --install "$spv_build" > "$log_dir/translator-install.log" 2>&1
mkdir -p "$prefix/bin"
ln -sfn ../lib/hipSYCL/ext/llvm-spirv/bin/llvm-spirv "$prefix/bin/llvm-spirv"
step "translator done in $(( $(date +%s) - t0 ))s: $("$spv_prefix/bin/llvm-spirv" --version | tr '\n' ' ')"

# --- 5. Configure, build and install AdaptiveCpp -----------------------------------
suffix=${ACPP_SUFFIX:-}
if [ -z "$suffix" ]; then
  if git -C "$acpp_src" rev-parse --show-toplevel 2>/dev/null | grep -qx "$acpp_src"; then
    suffix=""   # a real git checkout: AdaptiveCpp's CMake derives the suffix itself
  elif [ -f "$acpp_src.commit" ]; then
    suffix="+git.$(head -c 8 "$acpp_src.commit")"
  fi
fi
suffix_opt=()
[ -n "$suffix" ] && suffix_opt=(-DACPP_VERSION_SUFFIX="$suffix")

acpp_build=$build_root/acpp
t0=$(date +%s)
step "configuring AdaptiveCpp (log: $log_dir/acpp-configure.log)"
# WITH_* options select AdaptiveCpp's "custom-deprecated" feature profile; putting that
# profile name in the cache keeps the choice if CMake re-runs itself later.
nice -n 10 cmake -G Ninja -S "$acpp_src" -B "$acpp_build" \
  -DCMAKE_C_COMPILER=$cc -DCMAKE_CXX_COMPILER=$cxx \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix" \
  -DLLVM_DIR=$llvm_dir -DCLANG_EXECUTABLE_PATH=$cxx \
  -DWITH_SSCP_COMPILER=ON -DWITH_OPENCL_BACKEND=ON -DWITH_LEVEL_ZERO_BACKEND=OFF \
  -DWITH_ROCM_BACKEND=OFF -DWITH_CUDA_BACKEND=OFF -DWITH_STDPAR_COMPILER=OFF \
  -DWITH_ACCELERATED_CPU=OFF -DACPP_COMPILER_FEATURE_PROFILE=custom-deprecated \
  -DFETCHCONTENT_FULLY_DISCONNECTED=ON \
  -DFETCHCONTENT_BASE_DIR="$deps_dir" \
  -DFETCHCONTENT_SOURCE_DIR_LLVMSPIRVTRANSLATOR="$spv_src" \
  -DFETCHCONTENT_SOURCE_DIR_OCL-HEADERS="$oclhdr_src" \
  -DFETCHCONTENT_SOURCE_DIR_OCL-CXX-HEADERS="$clhpp_src" \
  "${suffix_opt[@]}" \
  > "$log_dir/acpp-configure.log" 2>&1
# AdaptiveCpp re-runs "patch -N" on the (already patched) translator; it only leaves a
# reject file behind.
rm -f "$spv_internal.rej" "$spv_internal.orig"

step "building AdaptiveCpp (log: $log_dir/acpp-build.log)"
nice -n 10 cmake --build "$acpp_build" -j"$jobs" > "$log_dir/acpp-build.log" 2>&1
nice -n 10 cmake --install "$acpp_build" > "$log_dir/acpp-install.log" 2>&1
step "AdaptiveCpp done in $(( $(date +%s) - t0 ))s"
"$prefix/bin/acpp" --version
