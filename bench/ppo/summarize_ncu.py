#!/usr/bin/env python3
"""Per-kernel summary of an `ncu --csv` run (profile_update_kernels.sh): launches, median duration, share of the
profiled time, grid, block and registers, largest share first."""
import collections
import csv
import sys


def main(path):
    rows = [r for r in csv.reader(open(path)) if len(r) > 10]
    if not rows:
        sys.exit(f"summarize_ncu: {path}: no ncu rows")
    head = rows[0]
    i_name, i_metric, i_value, i_id = (head.index(k) for k in ("Kernel Name", "Metric Name", "Metric Value", "ID"))
    launches = collections.defaultdict(dict)
    for r in rows[1:]:
        launches[(r[i_id], r[i_name][:60])][r[i_metric]] = r[i_value]
    kernels = collections.defaultdict(list)
    for (_, name), m in launches.items():
        ns = float(m.get("gpu__time_duration.sum", "0").replace(",", ""))
        kernels[name].append((ns, m.get("launch__grid_size"), m.get("launch__block_size"),
                              m.get("launch__registers_per_thread")))
    total = sum(sum(x[0] for x in v) for v in kernels.values())
    print(f"{'kernel':60s} {'launches':>8s} {'median ns':>10s} {'share %':>8s}  grid block regs")
    for name, v in sorted(kernels.items(), key=lambda kv: -sum(x[0] for x in kv[1])):
        ts = sorted(x[0] for x in v)
        print(f"{name:60s} {len(v):8d} {ts[len(ts) // 2]:10.0f} {100 * sum(ts) / total:8.1f}  {v[0][1]} {v[0][2]} {v[0][3]}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: summarize_ncu.py <ncu.csv>")
    main(sys.argv[1])
