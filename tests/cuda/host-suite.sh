#!/usr/bin/env bash
# The host C/C++ test suite (tests/c, tests/cxx, the examples) with every
# PE's symmetric heap in GPU memory (ISHMEM_DEVICE=cuda): host RMA, AMOs,
# signals, waits, teams, collectives, locks and contexts on a GPU heap.
# PEs take GPU local_rank % visible GPUs, so on a one-GPU machine the PEs
# share it. With ISHMEM_DEVICE=opaque (any machine) the heaps are shared
# memory the programs cannot touch either: what CI runs.
#
#   tests/cuda/host-suite.sh [OUTDIR] [PE counts, default "2"]
#
# Needs a GPU, libishmem.so and ishmrun (ISHMEM_LIBDIR, ISHMEM_BINDIR;
# default target/release), cc and c++. Each program must exit 0 (and print
# its "ok" line where it has one) within HOST_SUITE_TIMEOUT seconds (120).
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:-$root/target/cuda-host-suite}"
counts="${2:-2}"
lib="${ISHMEM_LIBDIR:-$root/target/release}"
bin="${ISHMEM_BINDIR:-$root/target/release}"
unset ISHMEM_LIBDIR ISHMEM_BINDIR # the script's, not the library's
mkdir -p "$out"
[ -e "$lib/libishmem.so.0" ] || ln -sf libishmem.so "$lib/libishmem.so.0"
export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
inc="$root/bindings/c/include"
dev="${ISHMEM_DEVICE:-cuda}"
tmo="${HOST_SUITE_TIMEOUT:-120}" # seconds per program
failed=0
build() { # name, source, compiler, std
    "$3" -std="$4" -O2 -Wall -Wextra -Werror -pthread -I "$inc" -I "$root/tests/c" "$2" \
        -L "$lib" -lishmem -lm -o "$out/$1" || { echo "FAIL: build $1"; failed=1; return 1; }
}
run() { # name, expected output ("" = none), args...
    local name="$1" want="$2"; shift 2
    for n in $counts; do
        local t0=$SECONDS o rc
        o="$(ISHMEM_DEVICE=$dev "$bin/ishmrun" -n "$n" -t "$tmo" "$out/$name" "$@" 2>&1)"; rc=$?
        if [ $rc -ne 0 ] || { [ -n "$want" ] && ! grep -q "$want" <<<"$o"; }; then
            echo "$o" | tail -20
            echo "FAIL: $name $* on $n PEs (exit $rc)"; failed=1
        else
            echo "ok: $name $* on $n PEs ($((SECONDS - t0)) s)"
        fi
    done
}
for t in rma_types fence_order alloc amo signal wait_test coll threads_misc locks_globals ctx \
    conformance generics; do
    build "$t" "$root/tests/c/$t.c" cc c11 && run "$t" ""
done
build coll_small "$root/tests/c/coll_small.c" cc c11 && run coll_small "coll_small ok"
build deprecated "$root/tests/c/deprecated.c" cc c11 && run deprecated "deprecated ok"
build example_heat "$root/tests/c/example_heat.c" cc c11 && run example_heat "heat ok"
build profiling "$root/tests/c/profiling.c" cc c11 && run profiling "profiling ok"
build errors "$root/tests/c/errors.c" cc c11 && run errors "" ok
build hello_ring "$root/packaging/examples/hello_ring.c" cc c11 && run hello_ring "sum = "
build cxx_conformance "$root/tests/cxx/conformance.cpp" c++ c++17 && run cxx_conformance "C++ conformance ok"
build intel_style "$root/bindings/cxx/examples/intel_style.cpp" c++ c++17 && run intel_style "intel-style C++ ok"
# ISHMEM_DEVICE=cuda is honoured: with no GPU visible, init fails fast.
[ "$dev" = cuda ] && {
o="$(CUDA_VISIBLE_DEVICES= ISHMEM_DEVICE=cuda "$bin/ishmrun" -n 1 -t 60 "$out/errors" ok 2>&1)" &&
    { echo "$o" | tail; echo "FAIL: ISHMEM_DEVICE=cuda with no visible GPU started"; failed=1; }
echo "no visible GPU: $(grep -m1 ishmem <<<"$o")"
}
[ $failed = 0 ] && echo "host suite on $dev heaps: ok" || { echo "host suite on $dev heaps: FAILED"; exit 1; }
