#!/usr/bin/env bash
# Builds OSHMPI (pmodels/oshmpi: OpenSHMEM over MPI-3 RMA, the design the
# MPI proxy follows) from a source tree you provide, against one of this
# machine's MPIs, for the side-by-side benchmark
# (packaging/bench/proxy.sh --oshmpi PREFIX). Its sources are never part of
# this repository: SRC_DIR is a checkout (with its src/openpa submodule
# filled in) or an unpacked snapshot; it is copied, not modified.
#
#   tests/mpi/build-oshmpi.sh SRC_DIR PREFIX [mpich|openmpi]
#
# Configured as OSHMPI's README suggests for a fast build (its default
# active-message and RMA modes, the ones it documents as matching
# OpenSHMEM's atomicity rules). Needs autoconf, automake, libtool and the
# MPI's compiler wrappers (mpicc.mpich / mpicc.openmpi, Debian's names).
set -euo pipefail
src="${1:?usage: build-oshmpi.sh SRC_DIR PREFIX [mpich|openmpi]}"
prefix="${2:?usage: build-oshmpi.sh SRC_DIR PREFIX [mpich|openmpi]}"
mpi="${3:-mpich}"
prefix="$(realpath -m "$prefix")"
[ -f "$src/configure.ac" ] && [ -f "$src/src/openpa/configure.ac" ] ||
    { echo "build-oshmpi: $src is not an OSHMPI tree with src/openpa filled in" >&2; exit 2; }
command -v "mpicc.$mpi" >/dev/null || { echo "build-oshmpi: mpicc.$mpi not found" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -a "$src/." "$work/"
cd "$work"
./autogen.sh > autogen.log 2>&1 || { tail -20 autogen.log >&2; exit 1; }
./configure --prefix="$prefix" CC="mpicc.$mpi" CXX="mpicxx.$mpi" \
    --enable-fast > configure.log 2>&1 || { tail -30 configure.log >&2; exit 1; }
make -j"$(nproc)" > make.log 2>&1 || { tail -30 make.log >&2; exit 1; }
make install > install.log 2>&1 || { tail -20 install.log >&2; exit 1; }
echo "build-oshmpi: installed into $prefix (against $mpi)"
