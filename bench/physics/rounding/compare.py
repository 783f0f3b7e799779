#!/usr/bin/env python3
"""Compares two free_run outputs with the GPU test's statistic |a - b| / (1 + |b|) (limit 1e-3).
Usage: compare.py a b obs_dim steps [v]   (v: per-step worst, and the failing entries by index, env, step)"""
import array
import sys
from collections import Counter
def load(p):
    a = array.array('f'); a.frombytes(open(p,'rb').read()); return a
a = load(sys.argv[1]); b = load(sys.argv[2]); od = int(sys.argv[3]); steps = int(sys.argv[4]); n = 64
eo = []  # (step, env, idx, err)
er = []
p = 0
for t in range(steps + 1):
    for e in range(n):
        for k in range(od):
            x, y = a[p], b[p]; p += 1
            err = abs(x - y) / (1 + abs(y)); eo.append((t, e, k, err, x, y))
    if t < steps:
        for e in range(n):
            x, y = a[p], b[p]; p += 1
            er.append((t + 1, e, abs(x - y) / (1 + abs(y)), x, y))
bo = [r for r in eo if not r[3] <= 1e-3]; br = [r for r in er if not r[2] <= 1e-3]
wo = max(r[3] for r in eo); wr = max(r[2] for r in er)
w0 = max(r[3] for r in eo if r[0] == 0)
print(f"obs bad {len(bo)} worst {wo:.3g}  rew bad {len(br)} worst {wr:.3g}  step0 worst {w0:.3g}")
if len(sys.argv) > 5:
    print(" per step worst obs:", " ".join(f"{max(r[3] for r in eo if r[0]==t):.1e}" for t in range(steps + 1)))
    if bo:
        print(" bad by obs index:", sorted(Counter(r[2] for r in bo).items()))
        print(" bad by env:", sorted(Counter(r[1] for r in bo).items()))
        print(" bad by step:", sorted(Counter(r[0] for r in bo).items()))
