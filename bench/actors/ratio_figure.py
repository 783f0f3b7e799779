#!/usr/bin/env python3
"""The CPU/GPU ratio sweep as a figure (SVG, no plotting library needed): gmi.bench.actors_ratio's cpu_gpu_ratio
lines, env steps/s and env steps per joule against the actor cores a GPU feeds (GMIs per GPU x cores per GMI), one
colour per GMIs-per-GPU count, filled marks for the smaller envs-per-core count and open ones for the larger; the
points choose_ratio picked (cpu_gpu_ratio_choice lines) ringed.
  ratio_figure.py SWEEP.jsonl OUT.svg [title]"""
import json, sys

sweep, out = sys.argv[1], sys.argv[2]
title = sys.argv[3] if len(sys.argv) > 3 else sweep
points, chosen = {}, {}
for line in open(sweep):
    if not line.strip().startswith("{"):
        continue
    d = json.loads(line)
    key = (d.get("gmis_per_gpu"), d.get("cores_per_gmi"), d.get("envs_per_core"))
    if d.get("bench") == "cpu_gpu_ratio" and d.get("metric") in ("steps_per_s", "steps_per_joule"):
        points.setdefault(d["metric"], {})[key] = d["median"]
    elif d.get("bench") == "cpu_gpu_ratio_choice":
        chosen[d["goal"]] = key
if not points.get("steps_per_s"):
    sys.exit(f"{sweep}: got no cpu_gpu_ratio lines, need gmi.bench.actors_ratio's output")

colours = {1: "#1f77b4", 2: "#d62728", 4: "#2ca02c", 8: "#9467bd"}
envs_counts = sorted({k[2] for k in points["steps_per_s"]})
W, H, M = 420, 300, 55  # a panel's size and margin
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{2 * W + 20}" height="{H + 70}" font-family="sans-serif" '
       'font-size="11">', f'<text x="{W + 10}" y="16" text-anchor="middle" font-size="13">{title}</text>']
for panel, (metric, label) in enumerate((("steps_per_s", "env steps/s"), ("steps_per_joule", "env steps per joule"))):
    data = points.get(metric, {})
    if not data:
        continue
    x0 = panel * (W + 20)
    xmax = max(g * c for g, c, _ in data) * 1.1
    ymax = max(data.values()) * 1.1
    px = lambda v: x0 + M + (W - M - 10) * v / xmax
    py = lambda v: 30 + (H - M) * (1 - v / ymax)
    svg.append(f'<line x1="{px(0)}" y1="{py(0)}" x2="{px(xmax)}" y2="{py(0)}" stroke="black"/>')
    svg.append(f'<line x1="{px(0)}" y1="{py(0)}" x2="{px(0)}" y2="{py(ymax)}" stroke="black"/>')
    for i in range(5):
        v = ymax / 1.1 * i / 4
        svg.append(f'<text x="{px(0) - 4}" y="{py(v) + 4}" text-anchor="end">{v / 1000:.0f} K</text>'
                   if metric == "steps_per_s" else
                   f'<text x="{px(0) - 4}" y="{py(v) + 4}" text-anchor="end">{v:.0f}</text>')
        xv = xmax / 1.1 * i / 4
        svg.append(f'<text x="{px(xv)}" y="{py(0) + 15}" text-anchor="middle">{xv:.1f}</text>')
    svg.append(f'<text x="{px(xmax / 2)}" y="{py(0) + 32}" text-anchor="middle">actor cores per GPU '
               '(GMIs x cores per GMI)</text>')
    svg.append(f'<text x="{x0 + 12}" y="{py(ymax / 2)}" transform="rotate(-90 {x0 + 12} {py(ymax / 2)})" '
               f'text-anchor="middle">{label}</text>')
    goal = chosen.get(metric)
    for (g, c, e), v in sorted(data.items()):
        fill = colours.get(g, "gray") if e == envs_counts[0] else "white"
        svg.append(f'<circle cx="{px(g * c):.1f}" cy="{py(v):.1f}" r="4" fill="{fill}" stroke="{colours.get(g, "gray")}" '
                   f'stroke-width="1.5"><title>{g} GMI(s) x {c} cores x {e} envs a core: {v:.0f}</title></circle>')
        if goal == (g, c, e):
            svg.append(f'<circle cx="{px(g * c):.1f}" cy="{py(v):.1f}" r="9" fill="none" stroke="black"/>')
legend = [f"{g} GMI(s) a GPU" for g in sorted({k[0] for k in points["steps_per_s"]})]
for i, g in enumerate(sorted({k[0] for k in points["steps_per_s"]})):
    svg.append(f'<circle cx="{70 + 130 * i}" cy="{H + 52}" r="4" fill="{colours.get(g, "gray")}"/>'
               f'<text x="{78 + 130 * i}" y="{H + 56}">{legend[i]}</text>')
svg.append(f'<text x="{70 + 130 * len(legend)}" y="{H + 56}">filled: {envs_counts[0]} envs a core, open: '
           f'{envs_counts[-1]}; ringed: choose_ratio\'s pick</text>')
svg.append("</svg>")
open(out, "w").write("\n".join(svg) + "\n")
print(f"{out}: {len(points['steps_per_s'])} points of {sweep}")
