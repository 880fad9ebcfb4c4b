#!/usr/bin/env python3
"""Per-figure ratios from compare.sh's CSV files (ishmem-N.csv, oshmem-N.csv):
the median over rounds of each run's median. Ratio > 1 means ishmem-rs is
faster (for times: theirs/ours; for bandwidths: ours/theirs). Also writes
ratios.json and the ishmem-rs put/get bandwidth as a share of memcpy."""
import csv, glob, json, os, statistics, sys

out = sys.argv[1]

def load(prefix):
    runs = {}
    for path in sorted(glob.glob(os.path.join(out, f"{prefix}-*.csv"))):
        with open(path) as f:
            for row in csv.DictReader(f):
                key = (row["figure"], int(row["bytes"]), int(row["pes"]))
                runs.setdefault(key, []).append((float(row["median"]), row["unit"]))
    return {k: (statistics.median(v for v, _ in vals), vals[0][1]) for k, vals in runs.items()}

ours, theirs = load("ishmem"), load("oshmem")
rows = []
print("| figure | bytes | PEs | ishmem-rs | Open MPI OSHMEM | unit | ratio (>1: ishmem-rs faster) |")
print("|---|---|---|---|---|---|---|")
for key in ours:
    fig, b, pes = key
    v, unit = ours[key]
    t = theirs.get(key)
    ratio = None
    if t:
        ratio = (v / t[0]) if unit == "MB/s" else (t[0] / v if v > 0 else None)
    rows.append({"figure": fig, "bytes": b, "pes": pes, "ishmem": v, "oshmem": t[0] if t else None, "unit": unit, "ratio": ratio})
    fmt = (lambda x: f"{x:.1f}") if unit == "MB/s" else (lambda x: f"{x:.4f}")
    print(f"| {fig} | {b} | {pes} | {fmt(v)} | {fmt(t[0]) if t else 'n/a'} | {unit} | {f'{ratio:.2f}' if ratio else 'n/a'} |")
print()
print("| size | put / memcpy | get / memcpy |")
print("|---|---|---|")
for key, (v, unit) in ours.items():
    fig, b, pes = key
    if fig == "memcpy_bw":
        put = ours.get(("put_bw", b, pes), (0,))[0]
        get = ours.get(("get_bw", b, pes), (0,))[0]
        print(f"| {b} | {100 * put / v:.0f}% | {100 * get / v:.0f}% |")
with open(os.path.join(out, "ratios.json"), "w") as f:
    json.dump(rows, f, indent=1)
