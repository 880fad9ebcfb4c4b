#!/usr/bin/env python3
"""Table for scale.sh: per figure and PE count, the median over runs of each
run's median (the largest per-PE time per call), for ishmem-rs and OSHMEM,
and the ratio OSHMEM / ishmem-rs (>1: ishmem-rs faster). Also writes
combined.csv (label,figure,bytes,pes,median) for charts.
Usage: scale_table.py DIR   (DIR holds ishmem-N-R.csv and oshmem-N-R.csv)"""
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
    ours, osh = load(d, "ishmem"), load(d, "oshmem")
    keys = sorted(set(ours) | set(osh), key=lambda k: (k[0], k[1], k[2]))
    pes = sorted({k[2] for k in keys})
    figs = []
    for k in keys:
        if (k[0], k[1]) not in figs:
            figs.append((k[0], k[1]))
    print("Largest per-PE time per call (us), ishmem-rs / OSHMEM, and the ratio "
          "OSHMEM / ishmem-rs (>1: ishmem-rs faster)\n")
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
    with open(os.path.join(d, "combined.csv"), "w") as f:
        f.write("figure,bytes,pes,best,median,unit\n")
        for label, data in (("ishmem-rs", ours), ("oshmem", osh)):
            for (fig, b, n), v in sorted(data.items()):
                f.write(f"{label}:{fig},{b},{n},{v:.4f},{v:.4f},us\n")


main()
