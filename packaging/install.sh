#!/usr/bin/env bash
# Installs ishmem-rs into a relocatable prefix:
#   packaging/install.sh --prefix DIR
# bin/ (ishmrun, ishmem-info, the oshcc/oshc++/oshfort wrappers, oshrun), lib/ (libishmem.so.X.Y.Z + soname links,
# libishmem.a, pkgconfig/, cmake/ishmem/), include/, share/modulefiles/
# (lmod/ and tcl/), share/doc/ishmem/; lib/ishmem/ holds the device library
# and the MPI proxy plugins when their toolchains are here.
set -euo pipefail
prefix=""
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) prefix="${2:?--prefix needs a directory}"; shift 2 ;;
        --prefix=*) prefix="${1#--prefix=}"; shift ;;
        -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
        *) echo "install.sh: unknown argument $1 (usage: install.sh --prefix DIR)" >&2; exit 2 ;;
    esac
done
[ -n "$prefix" ] || { echo "install.sh: --prefix DIR is required" >&2; exit 2; }
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
. packaging/setup-debian.sh
cargo build --release -q -p ishmem-capi -p ishmrun
target="${CARGO_TARGET_DIR:-$root/target}/release"
version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)"
major="${version%%.*}"
minor="$(echo "$version" | cut -d. -f2)"
# What a static link of the Rust archive needs (rustc --print native-static-libs).
native_libs="-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc"
native_libs_cmake="$(echo "$native_libs" | sed 's/-l//g; s/ /;/g')"

mkdir -p "$prefix"
prefix="$(cd "$prefix" && pwd)"
install -d "$prefix/bin" "$prefix/lib/pkgconfig" "$prefix/lib/cmake/ishmem" "$prefix/include" \
    "$prefix/share/modulefiles/lmod/ishmem" "$prefix/share/modulefiles/tcl/ishmem" "$prefix/share/doc/ishmem"
install -m 755 "$target/ishmrun" "$target/ishmem-info" "$prefix/bin/"
install -m 755 "$target/libishmem.so" "$prefix/lib/libishmem.so.$version"
ln -sf "libishmem.so.$version" "$prefix/lib/libishmem.so.$major"
ln -sf "libishmem.so.$major" "$prefix/lib/libishmem.so"
install -m 644 "$target/libishmem.a" "$prefix/lib/"
# The profiling interface (OpenSHMEM 1.5 §10): in the static library the
# shmem_ names are weak, so a program's own shmem_ wrappers replace them and
# reach the library through the pshmem_ names (in the shared library, the
# program's definitions take precedence anyway).
objcopy --wildcard --weaken-symbol='shmem_*' "$prefix/lib/libishmem.a"
cp -R bindings/c/include/. "$prefix/include/"
subst() {
    sed -e "s|@VERSION@|$version|g" -e "s|@MAJOR@|$major|g" -e "s|@MINOR@|$minor|g" -e "s|@PREFIX@|$prefix|g" \
        -e "s|@NATIVE_LIBS@|$native_libs|g" -e "s|@NATIVE_LIBS_CMAKE@|$native_libs_cmake|g" "$1" > "$2"
}
t=packaging/templates
subst $t/ishmem.pc.in "$prefix/lib/pkgconfig/ishmem.pc"
subst $t/ishmem-static.pc.in "$prefix/lib/pkgconfig/ishmem-static.pc"
subst $t/ishmemConfig.cmake.in "$prefix/lib/cmake/ishmem/ishmemConfig.cmake"
subst $t/ishmemConfigVersion.cmake.in "$prefix/lib/cmake/ishmem/ishmemConfigVersion.cmake"
subst $t/ishmem.lua.in "$prefix/share/modulefiles/lmod/ishmem/$version.lua"
subst $t/ishmem.tcl.in "$prefix/share/modulefiles/tcl/ishmem/$version"
# Compiler wrappers and the launcher alias SOS and Open MPI users type.
wrapper() { # name, language, env var, default compiler, compile flags, libraries
    subst $t/oshcc.in "$prefix/bin/$1.tmp"
    sed -e "s|@NAME@|$1|g" -e "s|@LANGUAGE@|$2|g" -e "s|@ENVVAR@|$3|g" -e "s|@DEFAULT@|$4|g" \
        -e "s|@CFLAGS@|$5|g" -e "s|@LIBS@|$6|g" "$prefix/bin/$1.tmp" > "$prefix/bin/$1"
    rm "$prefix/bin/$1.tmp"
    chmod 755 "$prefix/bin/$1"
}
wrapper oshcc C ISHMEM_CC cc '-I$prefix/include' '-lishmem'
wrapper oshc++ C++ ISHMEM_CXX c++ '-I$prefix/include' '-lishmem'
ln -sf oshc++ "$prefix/bin/oshcxx"
wrapper oshfort Fortran ISHMEM_FC gfortran '-I$prefix/include/fortran' '-lishmem_fortran -lishmem'
ln -sf ishmrun "$prefix/bin/oshrun"
# Fortran: the generated module sources always; compiled modules and the
# wrapper library when gfortran is here (.mod files are compiler-specific).
install -d "$prefix/include/fortran"
cp bindings/fortran/shmem.f90 bindings/fortran/ishmem.f90 "$prefix/include/fortran/"
if command -v gfortran >/dev/null 2>&1; then
    fbuild="$(mktemp -d)"
    (cd "$fbuild" && gfortran -O2 -fPIC -c "$root/bindings/fortran/shmem.f90" "$root/bindings/fortran/ishmem.f90" \
        && ar rcs libishmem_fortran.a shmem.o ishmem.o)
    install -m 644 "$fbuild"/*.mod "$prefix/include/fortran/"
    install -m 644 "$fbuild/libishmem_fortran.a" "$prefix/lib/"
    rm -rf "$fbuild"
    subst $t/ishmem-fortran.pc.in "$prefix/lib/pkgconfig/ishmem-fortran.pc"
else
    echo "install.sh: gfortran not found: Fortran module sources installed, not compiled" >&2
fi
# Device library (when clang-14 and llvm-spirv-14 are here): the SPIR-V and
# bitcode where the runtime looks (<libdir>/ishmem/), the OpenCL C and SYCL
# declaration headers.
install -m 644 device-lib/include/ishmem_device.h device-lib/include/ishmem_sycl.h "$prefix/include/"
if command -v clang-14 >/dev/null 2>&1 && command -v llvm-spirv-14 >/dev/null 2>&1; then
    install -d "$prefix/lib/ishmem"
    device-lib/build.sh "$prefix/lib/ishmem" >/dev/null
else
    echo "install.sh: clang-14/llvm-spirv-14 not found: device library not built" >&2
fi
# The CUDA device library (when a CUDA 13 nvcc is here: NVCC, or nvcc on
# PATH): libishmem_device.a for CUDA programs linked with -rdc=true, and its
# pkg-config file for nvcc.
nvcc="${NVCC:-$(command -v nvcc || true)}"
if [ -n "$nvcc" ]; then
    NVCC="$nvcc" device-lib/cuda/build.sh "$prefix/lib" >/dev/null
    subst $t/ishmem-cuda.pc.in "$prefix/lib/pkgconfig/ishmem-cuda.pc"
else
    echo "install.sh: nvcc not found: CUDA device library not built (set NVCC to a CUDA 13 nvcc)" >&2
fi
# MPI proxy plugins (PEs on other nodes, through MPI-3 RMA), one per MPI ABI
# family whose compiler wrapper is here, into <libdir>/ishmem/ where the
# library looks. Building them needs libclang (the mpi crate's bindings).
have_mpi=""
for cc in mpicc.openmpi mpicc.mpich mpicc; do command -v $cc >/dev/null 2>&1 && have_mpi=1; done
if [ -z "$have_mpi" ]; then
    echo "install.sh: no MPI compiler wrapper found: MPI proxy not built (PEs run on one node only)" >&2
elif ! ls /usr/lib/llvm-*/lib/libclang.so* /usr/lib/x86_64-linux-gnu/libclang*.so* >/dev/null 2>&1 && [ -z "${LIBCLANG_PATH:-}" ]; then
    echo "install.sh: libclang not found (apt-get install libclang-dev): MPI proxy not built" >&2
else
    install -d "$prefix/lib/ishmem"
    proxy-oshmpi/build-plugins.sh --release "$prefix/lib/ishmem" >/dev/null
fi
cp README.md LICENSE "$prefix/share/doc/ishmem/"
cp -R docs/. "$prefix/share/doc/ishmem/"
cp -R packaging/examples "$prefix/share/doc/ishmem/"
echo "installed ishmem-rs $version into $prefix"
