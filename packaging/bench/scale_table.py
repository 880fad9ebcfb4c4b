#!/usr/bin/env python3
"""Table for scale.sh: per figure and PE count, the median over runs of each
run's median (the largest per-PE time per call), for ishmem-rs and OSHMEM,
and the ratio OSHMEM / ishmem-rs (>1: ishmem-rs faster). Also writes
ishmem-scale.csv and oshmem-scale.csv (those medians, in the benchmark's
CSV format) for `ishmem-perf plot-scale`.
Usage: scale_table.py DIR [A B NAME_A NAME_B]
  DIR holds ishmem-N-R.csv and oshmem-N-R.csv (or A-N-R.csv and B-N-R.csv,
  compared the same way: e.g. a build against the one before it)."""
import csv
import glob
import os
import statistics
import sys


def load(d, label):
    runs = {}
    for path in glob.glob(os.path.join(d, f"{label}-*-*.csv")):
        with open(path) as f:
            for row in csv.DictReader(f):
                key = (row["figure"], int(row["bytes"]), int(row["pes"]))
                runs.setdefault(key, []).append(float(row["median"]))
    return {k: statistics.median(v) for k, v in runs.items()}


def main():
    d = sys.argv[1]
    pre_a, pre_b, name_a, name_b = (sys.argv[2:6] + ["ishmem", "oshmem", "ishmem-rs", "OSHMEM"][len(sys.argv[2:6]):])[:4]
    ours, osh = load(d, pre_a), load(d, pre_b)
    keys = sorted(set(ours) | set(osh), key=lambda k: (k[0], k[1], k[2]))
    pes = sorted({k[2] for k in keys})
    figs = []
    for k in keys:
        if (k[0], k[1]) not in figs:
            figs.append((k[0], k[1]))
    print(f"Largest per-PE time per call (us), {name_a} / {name_b}, and the ratio "
          f"{name_b} / {name_a} (>1: {name_a} faster)\n")
    print("| figure | bytes | " + " | ".join(f"{n} PEs" for n in pes) + " |")
    print("|---|---|" + "---|" * len(pes))
    worst = None
    for fig, b in figs:
        cells = []
        for n in pes:
            a, o = ours.get((fig, b, n)), osh.get((fig, b, n))
            if a is None or o is None:
                cells.append("n/a")
                continue
            r = o / a
            worst = r if worst is None or r < worst else worst
            cells.append(f"{a:.3g} / {o:.3g} ({r:.2f}x)")
        print(f"| {fig.removesuffix('_max')} | {b} | " + " | ".join(cells) + " |")
    if worst is not None:
        print(f"\nlowest ratio: {worst:.2f}")
    for label, data in ((pre_a, ours), (pre_b, osh)):
        with open(os.path.join(d, f"{label}-scale.csv"), "w") as f:
            f.write("figure,bytes,pes,best,median,unit\n")
            for (fig, b, n), v in sorted(data.items()):
                f.write(f"{fig},{b},{n},{v:.4f},{v:.4f},us\n")


main()
