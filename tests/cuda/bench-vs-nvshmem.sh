#!/usr/bin/env bash
# ishmem-rs against NVSHMEM, side by side in one run: tests/cuda/bench_vs.cu
# built twice (against each library), run one after the other on the same
# GPUs with the same PE count, then a table of both and their ratio
# (a benchmark, not a test).
#
#   tests/cuda/bench-vs-nvshmem.sh DIR [PES]
#
# DIR holds libishmem.so and ishmrun, and libishmem_device.a (or an already
# built bench_vs); the NVSHMEM build and the CSVs are written there.
# PES (default 2) PEs, one per GPU while there are enough GPUs, else
# sharing them under MPS (CUDA_MPS_*). NVSHMEM: NVSHMEM_HOME, else the
# nvidia/nvshmem of python3's site-packages (PyTorch's wheel); it is
# started by mpirun (Open MPI), its unique id passed by MPI. Extra DIRs
# with their own bench_vs (EXTRA_DIRS="a b") run as further columns, as an
# earlier build of ishmem-rs. Needs a CUDA 13 nvcc (NVCC, default nvcc).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
dir="$(cd "${1:?usage: bench-vs-nvshmem.sh DIR [PES]}" && pwd)"
pes="${2:-2}"
nvcc="${NVCC:-nvcc}"
cudalib="$(dirname "$(command -v "$nvcc")")/../lib64"
[ -d "$cudalib" ] || cudalib="$(dirname "$(command -v "$nvcc")")/../lib"
nv="${NVSHMEM_HOME:-$(python3 -c 'import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], "nvshmem"))' 2>/dev/null || true)}"
[ -f "$nv/include/nvshmem.h" ] || { echo "bench-vs-nvshmem: no NVSHMEM (set NVSHMEM_HOME)" >&2; exit 1; }
[ -e "$dir/libishmem.so.0" ] || ln -sf libishmem.so "$dir/libishmem.so.0"
flags=(-rdc=true -arch=sm_90 -std=c++17 -O2)
if [ ! -x "$dir/bench_vs" ]; then
    # ishmem-rs with link-time optimization: its routines inlined into the
    # kernels, as NVSHMEM's are (its device API is mostly inline headers).
    "$nvcc" "${flags[@]}" -dlto "$root/tests/cuda/bench_vs.cu" -I "$root/bindings/c/include" -L "$dir" -lishmem_device \
        -L "$dir" -lishmem -L "$cudalib" -Xlinker "-rpath=\$ORIGIN" -o "$dir/bench_vs"
fi
if [ ! -x "$dir/bench_vs_nvshmem" ]; then
    host="$(basename "$(ls "$nv"/lib/libnvshmem_host.so* | head -n1)")"
    "$nvcc" "${flags[@]}" -ccbin mpicxx -DBENCH_NVSHMEM "$root/tests/cuda/bench_vs.cu" -I "$nv/include" \
        -L "$nv/lib" -lnvshmem_device -l:"$host" -L "$cudalib" \
        -Xlinker -rpath="$nv/lib" -o "$dir/bench_vs_nvshmem"
fi

ngpu="$(nvidia-smi -L | grep -c '^GPU')"
mps=""
if [ "$ngpu" -lt "$pes" ]; then
    mps="$(mktemp -d)"
    export CUDA_MPS_PIPE_DIRECTORY="$mps/pipe" CUDA_MPS_LOG_DIRECTORY="$mps/log"
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    nvidia-cuda-mps-control -d
fi
stop_mps() { if [ -n "$mps" ]; then echo quit | nvidia-cuda-mps-control 2>/dev/null || true; rm -rf "$mps"; fi; }
trap stop_mps EXIT

export ISHMEM_SYMMETRIC_SIZE=1g NVSHMEM_SYMMETRIC_SIZE=1g
"$dir/ishmrun" -n "$pes" -t 600 "$dir/bench_vs" > "$dir/vs-ishmem.csv"
LD_LIBRARY_PATH="$nv/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    mpirun --allow-run-as-root --oversubscribe -n "$pes" -x LD_LIBRARY_PATH -x NVSHMEM_SYMMETRIC_SIZE \
    "$dir/bench_vs_nvshmem" > "$dir/vs-nvshmem.csv"
cols=("$dir/vs-ishmem.csv" "$dir/vs-nvshmem.csv")
for extra in ${EXTRA_DIRS:-}; do
    "$dir/ishmrun" -n "$pes" -t 600 "$extra/bench_vs" > "$extra/vs-ishmem.csv"
    cols+=("$extra/vs-ishmem.csv")
done
ISHMEM_DEVICE_RING_ALL=1 "$dir/ishmrun" -n "$pes" -t 600 "$dir/bench_vs" ring > "$dir/vs-ring.csv"
stop_mps
mps=""

python3 - "${cols[@]}" <<'EOF'
import csv, os, sys
def load(p):
    rows = {}
    with open(p) as f:
        head = [l for l in f if l.startswith("#")]
    with open(p) as f:
        for r in csv.DictReader(l for l in f if not l.startswith("#")):
            rows[(r["figure"], r["scope"], r["bytes"])] = (float(r["value"]), r["unit"])
    name = head[0][2:].strip() if head else "?"
    return f"{name} ({os.path.basename(os.path.dirname(os.path.abspath(p)))})", rows
cols = [load(p) for p in sys.argv[1:]]
print("| figure | scope | bytes | " + " | ".join(c[0] for c in cols) + " | ishmem-rs advantage |")
print("|---" * (len(cols) + 4) + "|")
for key, (v, unit) in cols[0][1].items():
    other = cols[1][1].get(key)
    vals = [c[1].get(key) for c in cols]
    cells = [f"{x[0]:.4g} {x[1]}" if x else "-" for x in vals]
    adv = "-"
    if other and other[0] > 0 and v > 0:
        # higher is better for rates, lower for times
        adv = f"{(v / other[0]) if unit.endswith('/s') else (other[0] / v):.2f}x"
    print(f"| {key[0]} | {key[1]} | {key[2]} | " + " | ".join(cells) + f" | {adv} |")
EOF
echo
cat "$dir/vs-ring.csv"
