#!/usr/bin/env bash
# Installs ishmem-rs into a relocatable prefix:
#   packaging/install.sh --prefix DIR [--libdir NAME] [--debug] [--cuda-device-lib FILE]
#                        [--opencl-device-lib DIR]
#   DESTDIR=/stage packaging/install.sh --prefix /opt/ishmem   (staged install)
# bin/ (ishmrun, ishmem-info, the oshcc/oshc++/oshfort wrappers, oshrun),
# <libdir>/ (libishmem.so.X.Y.Z + soname links, libishmem.a, pkgconfig/,
# cmake/ishmem/), include/, share/modulefiles/ (lmod/ and tcl/), share/man/,
# share/doc/ishmem/; <libdir>/ishmem/ holds the device library and the MPI
# proxy plugins when their toolchains are here. --libdir names the library
# directory under the prefix (default lib; one component, such as lib64).
# Binaries and shared libraries are stripped unless --debug is given.
# --cuda-device-lib installs a libishmem_device.a built before (by
# device-lib/cuda/build.sh) instead of building one with nvcc;
# --opencl-device-lib installs the ishmem_device.spv and .bc that
# device-lib/build.sh wrote into DIR instead of building them.
# Prints each step, then a summary of what was built and what was skipped.
set -euo pipefail
prefix=""
libdir="lib"
strip_bins=1
cuda_lib=""
ocl_lib=""
usage="usage: install.sh --prefix DIR [--libdir NAME] [--debug] [--cuda-device-lib FILE] [--opencl-device-lib DIR] (DESTDIR in the environment stages the install)"
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) prefix="${2:?--prefix needs a directory}"; shift 2 ;;
        --prefix=*) prefix="${1#--prefix=}"; shift ;;
        --libdir) libdir="${2:?--libdir needs a name}"; shift 2 ;;
        --libdir=*) libdir="${1#--libdir=}"; shift ;;
        --debug) strip_bins=""; shift ;;
        --cuda-device-lib) cuda_lib="${2:?--cuda-device-lib needs a file}"; shift 2 ;;
        --cuda-device-lib=*) cuda_lib="${1#--cuda-device-lib=}"; shift ;;
        --opencl-device-lib) ocl_lib="${2:?--opencl-device-lib needs a directory}"; shift 2 ;;
        --opencl-device-lib=*) ocl_lib="${1#--opencl-device-lib=}"; shift ;;
        -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
        *) echo "install.sh: unknown argument $1 ($usage)" >&2; exit 2 ;;
    esac
done
[ -n "$prefix" ] || { echo "install.sh: --prefix DIR is required ($usage)" >&2; exit 2; }
case "$libdir" in
    ""|*/*|.|..) echo "install.sh: --libdir must be one directory name under the prefix (lib, lib64), not '$libdir'" >&2; exit 2 ;;
esac
# A relative prefix is relative to where install.sh was started.
case "$prefix" in /*) ;; *) prefix="$PWD/$prefix" ;; esac
if [ -n "$cuda_lib" ]; then
    case "$cuda_lib" in /*) ;; *) cuda_lib="$PWD/$cuda_lib" ;; esac
    [ -f "$cuda_lib" ] || { echo "install.sh: --cuda-device-lib $cuda_lib: no such file" >&2; exit 2; }
fi
if [ -n "$ocl_lib" ]; then
    case "$ocl_lib" in /*) ;; *) ocl_lib="$PWD/$ocl_lib" ;; esac
    for f in ishmem_device.spv ishmem_device.bc; do
        [ -f "$ocl_lib/$f" ] || { echo "install.sh: --opencl-device-lib $ocl_lib: no $f there (device-lib/build.sh DIR writes both)" >&2; exit 2; }
    done
fi
destdir="${DESTDIR:-}"
step() { echo "install.sh: $*"; }
built=()
skipped=()
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
step "setting up the build tools (packaging/setup-debian.sh)"
. packaging/setup-debian.sh
step "building the library and tools (cargo build --release; minutes on a first build)"
cargo build --release -q -p ishmem-capi -p ishmrun
target="${CARGO_TARGET_DIR:-$root/target}/release"
version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)"
major="${version%%.*}"
minor="$(echo "$version" | cut -d. -f2)"
# What a static link of the Rust archive needs (rustc --print native-static-libs).
native_libs="-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc"
native_libs_cmake="$(echo "$native_libs" | sed 's/-l//g; s/ /;/g')"

# $prefix is where the files will live (written into module files); $dest
# is where they are written now ($DESTDIR$prefix).
prefix="$(realpath -m "$prefix")"
dest="$destdir$prefix"
L="$dest/$libdir"
step "installing into ${destdir:+$destdir (DESTDIR) + }$prefix, libraries in $libdir/"
install -d "$dest/bin" "$L/pkgconfig" "$L/cmake/ishmem" "$dest/include" \
    "$dest/share/modulefiles/lmod/ishmem" "$dest/share/modulefiles/tcl/ishmem" "$dest/share/doc/ishmem"
install -m 755 "$target/ishmrun" "$target/ishmem-info" "$dest/bin/"
install -m 755 "$target/libishmem.so" "$L/libishmem.so.$version"
ln -sf "libishmem.so.$version" "$L/libishmem.so.$major"
ln -sf "libishmem.so.$major" "$L/libishmem.so"
install -m 644 "$target/libishmem.a" "$L/"
built+=("C/C++ library: $libdir/libishmem.so.$version, $libdir/libishmem.a; bin/ishmrun, bin/ishmem-info")
# The profiling interface (OpenSHMEM 1.5 §10): in the static library the
# shmem_ names are weak, so a program's own shmem_ wrappers replace them and
# reach the library through the pshmem_ names (in the shared library, the
# program's definitions take precedence anyway).
objcopy --wildcard --weaken-symbol='shmem_*' "$L/libishmem.a"
cp -R bindings/c/include/. "$dest/include/"
subst() {
    sed -e "s|@VERSION@|$version|g" -e "s|@MAJOR@|$major|g" -e "s|@MINOR@|$minor|g" -e "s|@PREFIX@|$prefix|g" -e "s|@LIBDIR@|$libdir|g" \
        -e "s|@NATIVE_LIBS@|$native_libs|g" -e "s|@NATIVE_LIBS_CMAKE@|$native_libs_cmake|g" "$1" > "$2"
}
t=packaging/templates
subst $t/ishmem.pc.in "$L/pkgconfig/ishmem.pc"
subst $t/ishmem-static.pc.in "$L/pkgconfig/ishmem-static.pc"
subst $t/ishmemConfig.cmake.in "$L/cmake/ishmem/ishmemConfig.cmake"
subst $t/ishmemConfigVersion.cmake.in "$L/cmake/ishmem/ishmemConfigVersion.cmake"
# Intel SHMEM's package name: find_package(ISHMEM), ISHMEM::ISHMEM.
subst $t/ISHMEMConfig.cmake.in "$L/cmake/ishmem/ISHMEMConfig.cmake"
subst $t/ishmemConfigVersion.cmake.in "$L/cmake/ishmem/ISHMEMConfigVersion.cmake"
subst $t/ishmem.lua.in "$dest/share/modulefiles/lmod/ishmem/$version.lua"
subst $t/ishmem.tcl.in "$dest/share/modulefiles/tcl/ishmem/$version"
# Compiler wrappers and the launcher alias SOS and Open MPI users type.
wrapper() { # name, language, env var, default compiler, compile flags, libraries
    subst $t/oshcc.in "$dest/bin/$1.tmp"
    sed -e "s|@NAME@|$1|g" -e "s|@LANGUAGE@|$2|g" -e "s|@ENVVAR@|$3|g" -e "s|@DEFAULT@|$4|g" \
        -e "s|@CFLAGS@|$5|g" -e "s|@LIBS@|$6|g" "$dest/bin/$1.tmp" > "$dest/bin/$1"
    rm "$dest/bin/$1.tmp"
    chmod 755 "$dest/bin/$1"
}
wrapper oshcc C ISHMEM_CC cc '-I$prefix/include' '-lishmem'
wrapper oshc++ C++ ISHMEM_CXX c++ '-I$prefix/include' '-lishmem'
ln -sf oshc++ "$dest/bin/oshcxx"
wrapper oshfort Fortran ISHMEM_FC gfortran '-I$prefix/include/fortran' '-lishmem_fortran -lishmem'
ln -sf ishmrun "$dest/bin/oshrun"
# Fortran: the generated module sources and the classic include file
# shmem.fh (whose routines are in libishmem itself) always; compiled modules
# and the wrapper library when gfortran is here (.mod files are
# compiler-specific).
install -d "$dest/include/fortran"
cp bindings/fortran/shmem.f90 bindings/fortran/ishmem.f90 bindings/fortran/shmem.fh bindings/fortran/shmem_decls.fh "$dest/include/fortran/"
cp bindings/fortran/shmem.fh bindings/fortran/shmem_decls.fh "$dest/include/"
if command -v gfortran >/dev/null 2>&1; then
    step "building the Fortran modules (gfortran)"
    fbuild="$(mktemp -d)"
    (cd "$fbuild" && gfortran -O2 -fPIC -c "$root/bindings/fortran/shmem.f90" "$root/bindings/fortran/ishmem.f90" \
        && ar rcs libishmem_fortran.a shmem.o ishmem.o)
    install -m 644 "$fbuild"/*.mod "$dest/include/fortran/"
    install -m 644 "$fbuild/libishmem_fortran.a" "$L/"
    rm -rf "$fbuild"
    subst $t/ishmem-fortran.pc.in "$L/pkgconfig/ishmem-fortran.pc"
    built+=("Fortran modules shmem, ishmem (gfortran) and $libdir/libishmem_fortran.a")
else
    skipped+=("Fortran modules: gfortran not found (apt-get install gfortran); the module sources are in include/fortran")
fi
# Manual pages: ishmrun(1), ishmem-info(1), oshcc(1) and the generated
# section 3 pages; every other routine name is a link to its family's page.
step "installing the manual pages"
install -d "$dest/share/man/man1" "$dest/share/man/man3"
install -m 644 docs/man/man1/*.1 "$dest/share/man/man1/"
ln -sf ishmrun.1 "$dest/share/man/man1/oshrun.1"
for w in oshc++ oshcxx oshfort; do ln -sf oshcc.1 "$dest/share/man/man1/$w.1"; done
install -m 644 docs/man/man3/*.3 "$dest/share/man/man3/"
(cd "$dest/share/man/man3" && grep -v '^#' "$root/docs/man/links" | while read -r name page; do
    ln -sf "$page.3" "$name.3"
done)
built+=("manual pages in share/man: ishmrun(1), ishmem-info(1), oshcc(1), ishmem(3) and one for every routine")
# Device library (when clang-14 and llvm-spirv-14 are here): the SPIR-V and
# bitcode where the runtime looks (<libdir>/ishmem/), the OpenCL C
# declaration header (SYCL's, ishmem/ishmem_sycl.h, came with the C
# headers), and the shim that links it into a SYCL runtime's programs.
install -m 644 device-lib/include/ishmem_device.h "$dest/include/"
if [ -n "$ocl_lib" ]; then
    step "installing the OpenCL device library of $ocl_lib (built before)"
    install -d "$L/ishmem"
    install -m 644 "$ocl_lib/ishmem_device.spv" "$ocl_lib/ishmem_device.bc" "$L/ishmem/"
    built+=("OpenCL device library: $libdir/ishmem/ishmem_device.spv (from $ocl_lib)")
elif command -v clang-14 >/dev/null 2>&1 && command -v llvm-spirv-14 >/dev/null 2>&1; then
    step "building the OpenCL device library (clang-14, llvm-spirv-14)"
    install -d "$L/ishmem"
    device-lib/build.sh "$L/ishmem" >/dev/null
    built+=("OpenCL device library: $libdir/ishmem/ishmem_device.spv")
else
    skipped+=("OpenCL device library: clang-14 or llvm-spirv-14 not found (apt-get install clang-14 llvm-spirv-14)")
fi
# The SYCL shim (needs the OpenCL headers and loader, not clang).
if cc -std=c11 -O2 -fPIC -shared bindings/c/sycl/ishmem_sycl_cl.c -I bindings/c/include -L "$L" -lishmem \
    -lOpenCL -ldl -lpthread -Wl,-rpath,'$ORIGIN' -o "$L/libishmem_sycl_cl.so" 2>/dev/null; then
    built+=("SYCL shim (links the device library into a SYCL runtime's OpenCL programs): $libdir/libishmem_sycl_cl.so")
else
    skipped+=("SYCL shim: OpenCL headers or loader not found (apt-get install ocl-icd-opencl-dev)")
fi
# The CUDA device library (when a CUDA 13 nvcc is here: NVCC, or nvcc on
# PATH): libishmem_device.a for CUDA programs linked with -rdc=true, and its
# pkg-config file for nvcc.
nvcc="${NVCC:-$(command -v nvcc || true)}"
if [ -n "$cuda_lib" ]; then
    step "installing the CUDA device library $cuda_lib (built before)"
    install -m 644 "$cuda_lib" "$L/libishmem_device.a"
    subst $t/ishmem-cuda.pc.in "$L/pkgconfig/ishmem-cuda.pc"
    built+=("CUDA device library: $libdir/libishmem_device.a (from $cuda_lib)")
elif [ -n "$nvcc" ]; then
    step "building the CUDA device library ($nvcc)"
    NVCC="$nvcc" device-lib/cuda/build.sh "$L" >/dev/null
    subst $t/ishmem-cuda.pc.in "$L/pkgconfig/ishmem-cuda.pc"
    built+=("CUDA device library: $libdir/libishmem_device.a")
else
    skipped+=("CUDA device library: nvcc not found (set NVCC to a CUDA 13 nvcc)")
fi
# MPI proxy plugins (PEs on other nodes, through MPI-3 RMA), one per MPI ABI
# family whose compiler wrapper is here, into <libdir>/ishmem/ where the
# library looks. Building them needs libclang (the mpi crate's bindings).
have_mpi=""
for cc in mpicc.openmpi mpicc.mpich mpicc; do command -v $cc >/dev/null 2>&1 && have_mpi=1; done
if [ -z "$have_mpi" ]; then
    skipped+=("MPI proxy: no MPI compiler wrapper found (PEs run on one node only; apt-get install libopenmpi-dev or libmpich-dev)")
elif ! ls /usr/lib/llvm-*/lib/libclang.so* /usr/lib/x86_64-linux-gnu/libclang*.so* >/dev/null 2>&1 && [ -z "${LIBCLANG_PATH:-}" ]; then
    skipped+=("MPI proxy: libclang not found (apt-get install libclang-dev)")
else
    step "building the MPI proxy plugins"
    install -d "$L/ishmem"
    proxy-oshmpi/build-plugins.sh --release "$L/ishmem" >/dev/null
    for f in "$L"/ishmem/libishmem_proxy_oshmpi-*.so; do
        [ -e "$f" ] && built+=("MPI proxy: $libdir/ishmem/$(basename "$f")")
    done
fi
cp README.md LICENSE "$dest/share/doc/ishmem/"
cp -R docs/. "$dest/share/doc/ishmem/"
cp -R packaging/examples "$dest/share/doc/ishmem/"
built+=("headers, pkg-config, CMake package (ishmem and ISHMEM), Lmod and Tcl modules, oshcc/oshc++/oshfort, oshrun, docs")
# Stripped by default (the symbols the dynamic linker needs stay; the
# static library keeps its symbols): --debug keeps everything.
if [ -n "$strip_bins" ]; then
    step "stripping the binaries and shared libraries (--debug keeps them whole)"
    strip --strip-unneeded "$dest/bin/ishmrun" "$dest/bin/ishmem-info" "$L/libishmem.so.$version"
    for f in "$L"/ishmem/*.so; do [ -e "$f" ] && strip --strip-unneeded "$f"; done
    strip --strip-debug "$L/libishmem.a"
else
    built+=("not stripped (--debug)")
fi
echo "installed ishmem-rs $version into ${destdir:+$destdir (DESTDIR) + }$prefix ($(du -sh "$dest" | cut -f1))"
echo "  built:"
for b in "${built[@]}"; do echo "    $b"; done
if [ ${#skipped[@]} -gt 0 ]; then
    echo "  skipped:"
    for b in "${skipped[@]}"; do echo "    $b"; done
fi
