#!/usr/bin/env bash
# Side-by-side comparison: the same C benchmark (shmem_bench.c, standard
# OpenSHMEM calls only) built against ishmem-rs and against Open MPI's
# OSHMEM (Debian's oshcc/oshrun, UCX shared memory), run on the same machine
# in alternating order; prints per-figure ratios. With OSHMEM present, a
# third column: the ishmem-rs build run under oshrun through the OpenSHMEM
# proxy (ISHMEM_RUNTIME=OPENSHMEM: every operation on another PE through
# OSHMEM), which shows what the proxy costs over OSHMEM itself.
# With --sos PREFIX (a Sandia OpenSHMEM build, tests/sos/build-sos.sh), two
# more columns over libfabric's tcp;ofi_rxm under MPICH's Hydra: the
# benchmark built against SOS, and the ishmem-rs build through the proxy
# on that SOS.
#   packaging/bench/compare.sh [--rounds N] [--pes N] [--quick] [--out DIR] [--sos PREFIX]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
rounds=3; pes=2; quick=""; out="$root/target/bench"; sos=""
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds="$2"; shift 2 ;;
        --pes) pes="$2"; shift 2 ;;
        --quick) quick="--quick"; shift ;;
        --out) out="$2"; shift 2 ;;
        --sos) sos="$2"; shift 2 ;;
        *) echo "compare.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
mkdir -p "$out"
cd "$root"
cargo build -q --release -p ishmem-capi -p ishmrun
rel="${CARGO_TARGET_DIR:-$root/target}/release"
ln -sf libishmem.so "$rel/libishmem.so.0"
cc -O2 -std=c11 packaging/bench/shmem_bench.c -I bindings/c/include -L "$rel" -lishmem -Wl,-rpath,"$rel" -o "$out/bench_ishmem"
have_osh=0
if command -v oshcc >/dev/null && command -v oshrun >/dev/null; then
    oshcc -O2 -std=c11 packaging/bench/shmem_bench.c -o "$out/bench_oshmem" && have_osh=1
else
    echo "compare.sh: oshcc/oshrun not found (apt-get install libopenmpi-dev openmpi-bin): ishmem-rs only" >&2
fi
run_ours() { "$rel/ishmrun" -n "$pes" -t 300 "$out/bench_ishmem" $quick > "$1"; }
# Open MPI 4.1.4's OSHMEM crashes in shmem_finalize after the results are
# printed (UCX spml); the results are complete, so its exit status is not
# checked, only that every figure line arrived.
run_osh() {
    local ok=1
    timeout 120 oshrun --allow-run-as-root --oversubscribe -np "$pes" --mca spml ucx \
        -x UCX_TLS=shm,self -x UCX_HANDLE_ERRORS=none "$out/bench_oshmem" $quick < /dev/null > "$1" 2>"$1.err" || true
    grep -q "^sum_reduce,65536," "$1" || ok=0
    if [ $ok = 0 ]; then
        echo "compare.sh: the OSHMEM run did not complete:" >&2
        tail -5 "$1.err" >&2
        rm -f "$1"
        # --quick (CI smoke) reports it; a measurement run stops.
        [ -n "$quick" ] || exit 1
    fi
}
run_proxy() {
    timeout 300 oshrun --allow-run-as-root --oversubscribe -np "$pes" --mca spml ucx \
        --mca opal_common_ucx_opal_mem_hooks 0 -x UCX_TLS=shm,self -x UCX_HANDLE_ERRORS=none \
        -x ISHMEM_RUNTIME=OPENSHMEM "$out/bench_ishmem" $quick < /dev/null > "$1" 2>"$1.err" \
        || { echo "compare.sh: the run through the OpenSHMEM proxy failed:" >&2; tail -5 "$1.err" >&2; exit 1; }
}
if [ -n "$sos" ]; then
    [ -f "$sos/lib/libsma.so" ] || { echo "compare.sh: --sos $sos has no lib/libsma.so" >&2; exit 2; }
    "$sos/bin/oshcc" -O2 -std=c11 packaging/bench/shmem_bench.c -o "$out/bench_sos"
fi
sos_env=(env SHMEM_OFI_PROVIDER="tcp;ofi_rxm" FI_PROVIDER=tcp)
run_sos() {
    "${sos_env[@]}" timeout 300 mpiexec.hydra -n "$pes" "$out/bench_sos" $quick < /dev/null > "$1" 2>"$1.err" \
        || { echo "compare.sh: the SOS run failed:" >&2; tail -5 "$1.err" >&2; exit 1; }
}
run_sosproxy() {
    "${sos_env[@]}" ISHMEM_RUNTIME=OPENSHMEM ISHMEM_SHMEM_LIB_NAME="$sos/lib/libsma.so" timeout 300 \
        mpiexec.hydra -n "$pes" "$out/bench_ishmem" $quick < /dev/null > "$1" 2>"$1.err" \
        || { echo "compare.sh: the run through the proxy on SOS failed:" >&2; tail -5 "$1.err" >&2; exit 1; }
}
rm -f "$out"/ishmem-*.csv "$out"/oshmem-*.csv "$out"/proxy-*.csv "$out"/sos-*.csv "$out"/sosproxy-*.csv
for r in $(seq 1 "$rounds"); do
    if [ $have_osh = 0 ]; then
        run_ours "$out/ishmem-$r.csv"
    elif [ $((r % 2)) = 1 ]; then
        run_ours "$out/ishmem-$r.csv"; run_osh "$out/oshmem-$r.csv"; run_proxy "$out/proxy-$r.csv"
    else
        run_proxy "$out/proxy-$r.csv"; run_osh "$out/oshmem-$r.csv"; run_ours "$out/ishmem-$r.csv"
    fi
    if [ -n "$sos" ]; then
        if [ $((r % 2)) = 1 ]; then
            run_sos "$out/sos-$r.csv"; run_sosproxy "$out/sosproxy-$r.csv"
        else
            run_sosproxy "$out/sosproxy-$r.csv"; run_sos "$out/sos-$r.csv"
        fi
    fi
done
python3 packaging/bench/ratios.py "$out" | tee "$out/ratios.md"
