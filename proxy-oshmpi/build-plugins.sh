#!/usr/bin/env bash
# Builds the MPI proxy plugin once per MPI ABI family installed:
#   libishmem_proxy_oshmpi-openmpi.so  (Open MPI)
#   libishmem_proxy_oshmpi-mpich.so    (MPICH and its ABI family: Intel MPI,
#                                       MVAPICH, Cray MPICH)
# into OUTDIR (default: <target>/<profile>/ishmem, where the library looks
# beside itself). Each family builds in its own target directory because the
# mpi crate binds to one MPI at build time.
#
#   proxy-oshmpi/build-plugins.sh [--release] [OUTDIR]
#
# Compilers: MPICC_OPENMPI / MPICC_MPICH, else mpicc.openmpi / mpicc.mpich
# (Debian's names), else a plain mpicc of the right family.
set -euo pipefail
cd "$(dirname "$0")/.."
profile=debug
flag=""
if [ "${1:-}" = "--release" ]; then profile=release; flag=--release; shift; fi
target="${CARGO_TARGET_DIR:-$PWD/target}"
out="${1:-$target/$profile/ishmem}"
mkdir -p "$out"

family_of() { # prints openmpi or mpich for an MPI compiler wrapper
    if "$1" -showme:version >/dev/null 2>&1; then echo openmpi; else echo mpich; fi
}

built=""
for flavor in openmpi mpich; do
    var="MPICC_$(echo $flavor | tr a-z A-Z)"
    cc="${!var:-}"
    [ -n "$cc" ] || cc="$(command -v mpicc.$flavor || true)"
    if [ -z "$cc" ] && command -v mpicc >/dev/null && [ "$(family_of mpicc)" = "$flavor" ]; then
        cc="$(command -v mpicc)"
    fi
    if [ -z "$cc" ]; then
        echo "build-plugins: no $flavor compiler wrapper found; skipping libishmem_proxy_oshmpi-$flavor.so" >&2
        continue
    fi
    MPICC="$cc" CARGO_TARGET_DIR="$target/proxy-$flavor" cargo build -q $flag -p ishmem-proxy-oshmpi
    cp "$target/proxy-$flavor/$profile/libishmem_proxy_oshmpi.so" "$out/libishmem_proxy_oshmpi-$flavor.so"
    built="$built $flavor"
done
[ -n "$built" ] || { echo "build-plugins: no MPI found (install libopenmpi-dev or libmpich-dev)" >&2; exit 1; }
echo "build-plugins: built$built into $out"
