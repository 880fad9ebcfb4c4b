#!/usr/bin/env bash
# The README's main job: install the SDK into a prefix (target/ishmem), then,
# using only that prefix, compile an OpenSHMEM program with pkg-config and
# run it on 4 PEs with the installed launcher (CPU default; no MPI, no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
. packaging/setup-debian.sh
command -v pkg-config >/dev/null || {
    sudo_=""; [ "$(id -u)" = 0 ] || sudo_=sudo
    $sudo_ apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq pkg-config
}
prefix="${MAIN_JOB_PREFIX:-$PWD/target/ishmem}"
packaging/install.sh --prefix "$prefix"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig" LD_LIBRARY_PATH="$prefix/lib"
cc -std=c11 -O2 packaging/examples/hello_ring.c $(pkg-config --cflags --libs ishmem) -o "$prefix/hello_ring"
"$prefix/bin/ishmrun" -n 4 "$prefix/hello_ring"
