#!/usr/bin/env bash
# Many-PE comparison: the C benchmark's --coll set (shmem_bench.c: barrier,
# every active-set collective at 8 bytes and 64 KiB, contended fetch_add,
# ring puts; back-to-back calls, the largest per-PE time per call) built
# against ishmem-rs and against Open MPI's OSHMEM (oshcc/oshrun, UCX shared
# memory), run at each PE count in alternating order, PE i pinned to CPU i
# in both. Prints the table of medians and ratios (>1: ishmem-rs faster).
#   packaging/bench/scale.sh [--pes "2 4 8 16 32"] [--rounds N] [--out DIR]
#                            [--prebuilt DIR] [--quick]
# --prebuilt DIR: use DIR/ishmrun and DIR/bench_ishmem (built elsewhere, e.g.
# for a machine without Rust; see docs/performance.md) instead of building.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
pes_list="2 4 8 16 32"; rounds=3; out="$root/target/bench-scale"; prebuilt=""; quick=""
while [ $# -gt 0 ]; do
    case "$1" in
        --pes) pes_list="$2"; shift 2 ;;
        --rounds) rounds="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        --prebuilt) prebuilt="$2"; shift 2 ;;
        --quick) quick="--quick"; shift ;;
        *) echo "scale.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
mkdir -p "$out"
if [ -n "$prebuilt" ]; then
    run="$prebuilt/ishmrun"; ours="$prebuilt/bench_ishmem"
else
    cd "$root"
    cargo build -q --release -p ishmem-capi -p ishmrun
    rel="${CARGO_TARGET_DIR:-$root/target}/release"
    ln -sf libishmem.so "$rel/libishmem.so.0"
    cc -O2 -std=c11 packaging/bench/shmem_bench.c -I bindings/c/include -L "$rel" -lishmem \
        -Wl,-rpath,"$rel" -o "$out/bench_ishmem"
    run="$rel/ishmrun"; ours="$out/bench_ishmem"
fi
command -v oshcc >/dev/null && command -v oshrun >/dev/null \
    || { echo "scale.sh: oshcc/oshrun not found (Open MPI's OSHMEM)" >&2; exit 2; }
oshcc -O2 -std=c11 "$root/packaging/bench/shmem_bench.c" -o "$out/bench_oshmem"
rm -f "$out"/ishmem-*.csv "$out"/oshmem-*.csv
run_ours() { "$run" -n "$1" -t 300 "$ours" --coll --pin $quick > "$2"; }
# Open MPI 4.1.6's OSHMEM (Ubuntu 24.04, UCX spml) crashes in shmem_init
# (mca_memheap_modex_recv_all) in some runs: a run that printed nothing is
# started again, up to 5 times. It may also crash in shmem_finalize after
# printing, or in a figure: what it printed is kept (missing figures show as
# n/a) and the comparison goes on.
run_osh() {
    local try
    for try in 1 2 3 4 5; do
        timeout 300 oshrun --allow-run-as-root --oversubscribe --bind-to none -np "$1" --mca spml ucx \
            -x UCX_TLS=shm,self -x UCX_HANDLE_ERRORS=none "$out/bench_oshmem" --coll --pin $quick \
            < /dev/null > "$2" 2> "$2.err" || true
        grep -q '^figure,' "$2" && break
        echo "scale.sh: OSHMEM on $1 PEs failed to start (try $try)" >&2
    done
    if ! grep -q '^ring_put+quiet_max,65536,' "$2"; then
        echo "scale.sh: the OSHMEM run on $1 PEs ended after: $(tail -1 "$2" | cut -d, -f1-2)" \
            "($(grep -m1 -o 'signal [0-9]* ([A-Za-z ]*)' "$2.err" || echo 'no signal reported'))" >&2
    fi
}
for n in $pes_list; do
    for r in $(seq 1 "$rounds"); do
        if [ $((r % 2)) = 1 ]; then
            run_ours "$n" "$out/ishmem-$n-$r.csv"; run_osh "$n" "$out/oshmem-$n-$r.csv"
        else
            run_osh "$n" "$out/oshmem-$n-$r.csv"; run_ours "$n" "$out/ishmem-$n-$r.csv"
        fi
    done
done
python3 "$root/packaging/bench/scale_table.py" "$out" | tee "$out/scale.md"
