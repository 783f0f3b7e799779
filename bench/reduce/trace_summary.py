#!/usr/bin/env python3
"""Lines up the "[trace]" lines of gmi.bench.reduce peer trace=1 (one traced call per GMI, the GPU clock in ns):
per configuration and GPU, microseconds from the first block's start on that GPU to each point, the latest over the
GPU's GMIs (launch skew: the last GMI's first block). Reads stdin, prints a table."""
import re
import sys

rows = {}
for line in sys.stdin:
    m = re.match(r"\[trace\] n=(\d+) m=(\d+) bytes=(\d+) gpu=(\d+) r=(\d+) start=(\d+),(\d+) ready=(\d+) "
                 r"phases=(\d+),(\d+) done=(\d+),(\d+) end=(\d+)", line)
    if not m:
        continue
    n, mm, b, gpu, r, s0, s1, ready, p0, p1, d0, d1, end = map(int, m.groups())
    rows.setdefault((n, mm, b, gpu), []).append((s0, s1, ready, p0, p1, d0, d1, end))

print("%-3s %-3s %10s %-4s %8s %8s %8s %8s %8s %8s  (us from the GPU's first block)" %
      ("n", "m", "bytes", "gpu", "launch", "ready", "ph_first", "ph_last", "done", "end"))
for (n, mm, b, gpu), g in sorted(rows.items()):
    t0 = min(x[0] for x in g)
    us = lambda v: (v - t0) / 1e3
    print("%-3d %-3d %10d %-4d %8.1f %8.1f %8.1f %8.1f %8.1f %8.1f" % (
        n, mm, b, gpu, us(max(x[0] for x in g)), us(max(x[2] for x in g)), us(min(x[3] for x in g)),
        us(max(x[4] for x in g)), us(max(x[6] for x in g)), us(max(x[7] for x in g))))
