#!/usr/bin/env bash
# The MPI proxy against the MPI it runs on, side by side in one run: the
# point-to-point figures of shmem_bench.c built against ishmem-rs and run
# with every peer remote (ISHMEM_ENABLE_SHM=0: every operation through the
# MPI proxy plugin), and the same figures in raw MPI-3 RMA
# (mpi_rma_bench.c: MPI_Win_allocate, and MPI_Win_create over malloc'd
# memory as the proxy exposes its heap), alternated round by round under
# the same launcher with the same PE count. With --oshmpi PREFIX (an
# OSHMPI build against the same MPI; never committed, see
# tests/mpi/build-oshmpi.sh) a column for OSHMPI too. Prints a table of
# medians and the ratios the MPI-proxy issue asks for (ours against raw
# MPI: > 1 means ours is faster).
#
#   packaging/bench/proxy.sh [--mpi openmpi|mpich] [--pes N] [--rounds N]
#                            [--quick] [--out DIR] [--oshmpi PREFIX] [--debug]
#                            [--multihost] [--device cpu|opaque|cuda]
#                            [--rma window|message]
#
# --multihost runs every program across the two network-namespace hosts of
# tests/mpi/multihost.sh (root; TCP between them, PES/2 PEs on each host,
# node-local sharing on within a host) instead of on this one.
#
# --device puts ishmem-rs's heaps on that device (default cpu): opaque
# (memory the host cannot touch, as GPU heaps, which the proxy serves
# through the device) or cuda; shmem_bench then never touches the heap.
#
# --rma sets ishmem-rs's ISHMEM_PROXY_RMA (default window): message serves
# puts and gets to host heaps on request, as for device heaps.
#
# --debug uses the debug build already there (CI's smoke run: no extra
# builds; its figures mean nothing).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
mpi=mpich pes=2 rounds=3 quick="" out="" oshmpi="" profile=release multihost="" device=cpu rma=window
while [ $# -gt 0 ]; do
    case "$1" in
        --mpi) mpi="$2"; shift 2 ;;
        --pes) pes="$2"; shift 2 ;;
        --rounds) rounds="$2"; shift 2 ;;
        --quick) quick="--quick"; shift ;;
        --out) out="$2"; shift 2 ;;
        --oshmpi) oshmpi="$2"; shift 2 ;;
        --debug) profile=debug; shift ;;
        --multihost) multihost=1; shift ;;
        --device) device="$2"; shift 2 ;;
        --rma) rma="$2"; shift 2 ;;
        *) echo "proxy.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
case "$mpi" in
    openmpi) mpicc=mpicc.openmpi; launch=(mpirun.openmpi --allow-run-as-root --oversubscribe -n "$pes" -x ISHMEM_ENABLE_SHM=0 -x ISHMEM_DEVICE="$device" -x ISHMEM_PROXY_RMA="$rma") ;;
    mpich) mpicc=mpicc.mpich; launch=(mpiexec.mpich -n "$pes" -genv ISHMEM_ENABLE_SHM 0 -genv ISHMEM_DEVICE "$device" -genv ISHMEM_PROXY_RMA "$rma") ;;
    *) echo "proxy.sh: --mpi openmpi or mpich" >&2; exit 2 ;;
esac
where="one host, ISHMEM_ENABLE_SHM=0"
if [ -n "$multihost" ]; then
    [ $((pes % 2)) = 0 ] || { echo "proxy.sh: --multihost needs an even --pes" >&2; exit 2; }
    launch=(env MULTIHOST_MPI="$mpi" MULTIHOST_DEVICE="$device" MULTIHOST_RMA="$rma" "$root/tests/mpi/multihost.sh" $((pes / 2)) --)
    # Open MPI's waits poll without pause, which on a small VM starves the
    # kernel's packet processing between the namespaces (a 4 ms tick per
    # message); MPICH's did not need this.
    [ "$mpi" = mpich ] || launch+=(--mca mpi_yield_when_idle 1)
    where="two hosts over TCP, $((pes / 2)) PEs each"
fi
command -v "$mpicc" >/dev/null || { echo "proxy.sh: $mpicc not found (tests/provision.sh installs both MPIs)" >&2; exit 2; }
out="${out:-${CARGO_TARGET_DIR:-$root/target}/bench-proxy-$mpi}"
mkdir -p "$out"
cd "$root"
rel="${CARGO_TARGET_DIR:-$root/target}/$profile"
if [ $profile = release ]; then
    cargo build -q --release -p ishmem-capi -p ishmrun
    bash proxy-oshmpi/build-plugins.sh --release >/dev/null
fi
[ -f "$rel/ishmem/libishmem_proxy_oshmpi-$mpi.so" ] || { echo "proxy.sh: no $mpi plugin in $rel/ishmem" >&2; exit 2; }
ln -sf libishmem.so "$rel/libishmem.so.0"
cc -O2 -std=c11 packaging/bench/shmem_bench.c -I bindings/c/include -L "$rel" -lishmem -Wl,-rpath,"$rel" -o "$out/bench_ishmem"
"$mpicc" -O2 -std=c11 packaging/bench/mpi_rma_bench.c -o "$out/bench_mpi"
if [ -n "$oshmpi" ]; then
    [ -x "$oshmpi/bin/oshcc" ] || { echo "proxy.sh: --oshmpi $oshmpi has no bin/oshcc" >&2; exit 2; }
    "$oshmpi/bin/oshcc" -O2 -std=c11 packaging/bench/shmem_bench.c -o "$out/bench_oshmpi" -Wl,-rpath,"$oshmpi/lib"
fi
run() { # csv, program, args...
    local csv="$1"; shift
    timeout 300 "${launch[@]}" "$@" $quick < /dev/null > "$csv" 2> "$csv.err" \
        || { echo "proxy.sh: $* failed:" >&2; tail -5 "$csv.err" >&2; exit 1; }
}
rm -f "$out"/*.csv "$out"/*.err
for r in $(seq 1 "$rounds"); do
    ours_args=()
    [ "$device" = cpu ] || ours_args=(--device)
    run "$out/ours-$r.csv" "$out/bench_ishmem" "${ours_args[@]}"
    run "$out/allocate-$r.csv" "$out/bench_mpi" --allocate
    run "$out/create-$r.csv" "$out/bench_mpi" --create
    [ -z "$oshmpi" ] || run "$out/oshmpi-$r.csv" "$out/bench_oshmpi"
done
BENCH_DEVICE="$device" BENCH_RMA="$rma" python3 - "$out" "$mpi" "$pes" "$where" <<'EOF'
import csv, glob, os, statistics, sys
out, mpi, pes, where = sys.argv[1:5]
def load(prefix):
    runs = {}
    for path in sorted(glob.glob(os.path.join(out, f"{prefix}-*.csv"))):
        for row in csv.DictReader(open(path)):
            runs.setdefault((row["figure"], int(row["bytes"])), []).append((float(row["median"]), row["unit"]))
    return {k: (statistics.median(v for v, _ in vals), vals[0][1]) for k, vals in runs.items()}
cols = [("ishmem-rs (proxy)", load("ours")), ("MPI_Win_allocate", load("allocate")),
        ("MPI_Win_create", load("create"))]
osh = load("oshmpi")
if osh:
    cols.append(("OSHMPI", osh))
def adv(a, b, unit):  # > 1: a faster
    if a is None or b is None or a <= 0 or b <= 0:
        return None
    return a / b if unit == "MB/s" else b / a
fmt = lambda x: "n/a" if x is None else (f"{x:.3g}" if x < 1000 else f"{x:.0f}")
head = ["figure", "bytes"] + [c[0] for c in cols] + ["unit", "vs allocate", "vs create"] + (["vs OSHMPI"] if osh else [])
print(f"MPI proxy vs raw MPI RMA: {mpi}, {pes} PEs, {where}, ishmem-rs heaps on the {os.environ.get('BENCH_DEVICE', 'cpu')} device, RMA by {os.environ.get('BENCH_RMA', 'window')}, medians of rounds\n")
print("| " + " | ".join(head) + " |")
print("|" + "---|" * len(head))
for key in cols[1][1]:
    vals = [c[1].get(key, (None, None))[0] for c in cols]
    unit = cols[1][1][key][1]
    ours = vals[0]
    row = [key[0], str(key[1])] + [fmt(v) for v in vals] + [unit]
    row += [fmt(adv(ours, vals[1], unit)), fmt(adv(ours, vals[2], unit))]
    if osh:
        row.append(fmt(adv(ours, vals[3], unit)))
    print("| " + " | ".join(row) + " |")
print("\n'vs' columns: how many times faster ishmem-rs is (times: theirs/ours; bandwidths: ours/theirs).")
EOF
