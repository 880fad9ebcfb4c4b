#!/usr/bin/env bash
# Builds Sandia OpenSHMEM (SOS) for the loaded-OpenSHMEM proxy tests:
#   tests/sos/build-sos.sh SRC_DIR PREFIX
# SRC_DIR is an SOS source tree (github.com/Sandia-OpenSHMEM/SOS, v1.5.3 or
# later; a git checkout needs its modules/tests-sos submodule, a release
# tarball has configure already). Nothing of SOS is kept in this repository.
#
# Configuration, for Debian's libfabric (libfabric-dev: the sockets, tcp
# and net providers; no XPMEM, no GPU memory support) and MPICH's Hydra:
#   --enable-pmi-simple     SOS's PMI-1 client, which mpiexec.hydra serves
#   --enable-hard-polling   tcp (tcp;ofi_rxm) lacks the FI_RMA_EVENT that
#                           counter-based waiting needs
#   --enable-ofi-mr=basic   per-PE keys and addresses (rxm's preferred mode)
#   --with-oshrun-launcher=mpiexec.hydra   (mpiexec here is Open MPI's)
# Not used: --enable-ofi-hmem (requires FI_HMEM, which no provider here
# has: SOS then cannot start), --with-cma (needs identical addresses on
# every PE), --enable-remote-virtual-addressing (needs ASLR off).
# Needs: autoconf automake libtool (for a git checkout), libfabric-dev,
# mpich (mpiexec.hydra), a C and C++ compiler.
set -euo pipefail
src="${1:?usage: build-sos.sh SRC_DIR PREFIX}"
prefix="${2:?usage: build-sos.sh SRC_DIR PREFIX}"
case "$prefix" in /*) ;; *) prefix="$PWD/$prefix" ;; esac
[ -f "$src/configure.ac" ] || { echo "build-sos.sh: $src is not an SOS source tree (no configure.ac)" >&2; exit 2; }
pkg-config --exists libfabric || { echo "build-sos.sh: libfabric not found (apt-get install libfabric-dev)" >&2; exit 2; }
command -v mpiexec.hydra >/dev/null || { echo "build-sos.sh: mpiexec.hydra not found (apt-get install mpich)" >&2; exit 2; }
build="$(mktemp -d)"
trap 'rm -rf "$build"' EXIT
cp -R "$src/." "$build/"
cd "$build"
if [ ! -x configure ]; then
    [ -f modules/tests-sos/configure.ac ] || [ -f modules/tests-sos/Makefile.am ] \
        || { echo "build-sos.sh: $src/modules/tests-sos is empty (git submodule update --init)" >&2; exit 2; }
    echo "build-sos.sh: autogen"
    ./autogen.sh > autogen.log 2>&1 || { tail -20 autogen.log; exit 1; }
fi
echo "build-sos.sh: configure"
./configure --prefix="$prefix" --with-ofi=/usr --enable-pmi-simple --enable-hard-polling \
    --enable-ofi-mr=basic --with-oshrun-launcher=mpiexec.hydra --disable-fortran --without-hwloc \
    > configure.log 2>&1 || { tail -30 configure.log; exit 1; }
echo "build-sos.sh: make (minutes)"
make -j"$(nproc)" > make.log 2>&1 || { tail -30 make.log; exit 1; }
make install > install.log 2>&1 || { tail -30 install.log; exit 1; }
echo "build-sos.sh: installed SOS $(sed -n 's/^AC_INIT(\[[^]]*\], *\[\([^]]*\)\].*/\1/p' configure.ac) into $prefix (lib/libsma.so)"
