#!/usr/bin/env python3
"""Per-figure ratios from compare.sh's CSV files (ishmem-N.csv, oshmem-N.csv,
and proxy-N.csv: ishmem-rs through the OpenSHMEM proxy over OSHMEM; with
--sos, sos-N.csv and sosproxy-N.csv the same over Sandia OpenSHMEM): the
median over rounds of each run's median. Ratio > 1 means the first is
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

ours, theirs, proxy = load("ishmem"), load("oshmem"), load("proxy")

def ratio(a, b, unit):
    """a vs b, > 1 when a is faster; None when either is missing."""
    if a is None or b is None:
        return None
    return (a / b if b > 0 else None) if unit == "MB/s" else (b / a if a > 0 else None)

rows = []
print("| figure | bytes | PEs | ishmem-rs | Open MPI OSHMEM | unit | ratio (>1: ishmem-rs faster) "
      "| ishmem-rs through the OSHMEM proxy | ratio (>1: proxy faster than OSHMEM) |")
print("|---|---|---|---|---|---|---|---|---|")
for key in ours:
    fig, b, pes = key
    v, unit = ours[key]
    t = theirs.get(key, (None,))[0]
    x = proxy.get(key, (None,))[0]
    r, rx = ratio(v, t, unit), ratio(x, t, unit)
    rows.append({"figure": fig, "bytes": b, "pes": pes, "ishmem": v, "oshmem": t, "unit": unit, "ratio": r,
                 "proxy": x, "proxy_ratio": rx})
    fmt = (lambda x: "n/a" if x is None else f"{x:.1f}") if unit == "MB/s" else (lambda x: "n/a" if x is None else f"{x:.4f}")
    rf = lambda r: f"{r:.2f}" if r else "n/a"
    print(f"| {fig} | {b} | {pes} | {fmt(v)} | {fmt(t)} | {unit} | {rf(r)} | {fmt(x)} | {rf(rx)} |")
print()
print("| size | put / memcpy | get / memcpy |")
print("|---|---|---|")
for key, (v, unit) in ours.items():
    fig, b, pes = key
    if fig == "memcpy_bw":
        put = ours.get(("put_bw", b, pes), (0,))[0]
        get = ours.get(("get_bw", b, pes), (0,))[0]
        print(f"| {b} | {100 * put / v:.0f}% | {100 * get / v:.0f}% |")
sos, sosproxy = load("sos"), load("sosproxy")
if sos:
    print()
    print("| figure | bytes | PEs | Sandia OpenSHMEM | ishmem-rs through the SOS proxy | unit "
          "| ratio (>1: proxy faster than SOS) |")
    print("|---|---|---|---|---|---|---|")
    for key, (t, unit) in sos.items():
        fig, b, pes = key
        x = sosproxy.get(key, (None,))[0]
        r = ratio(x, t, unit)
        fmt = (lambda x: "n/a" if x is None else f"{x:.1f}") if unit == "MB/s" else (lambda x: "n/a" if x is None else f"{x:.4f}")
        print(f"| {fig} | {b} | {pes} | {fmt(t)} | {fmt(x)} | {unit} | {f'{r:.2f}' if r else 'n/a'} |")
        rows.append({"figure": fig, "bytes": b, "pes": pes, "sos": t, "unit": unit, "sos_proxy": x, "sos_proxy_ratio": r})
with open(os.path.join(out, "ratios.json"), "w") as f:
    json.dump(rows, f, indent=1)
