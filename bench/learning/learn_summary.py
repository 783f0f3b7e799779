#!/usr/bin/env python3
"""Issue 34's verdicts from learning-suite result lines (bench/learning/run_suite.sh): for every task and gmi
configuration (impl gmi, gmi_<label>), whether it meets the better reference (median mean return at least the better
of reference and reference_normalized, less 5% of its magnitude), for the LQ proxies whether the deterministic
evaluation is within 1.10x of the Riccati optimum, and the wall-clock terms of "sooner": each run's env steps a
second, the time of its first curve point, and the better reference's seconds to reach its target over gmi's, and for each variant
(impl gmi_<label>) its change against the defaults' median of the same lines ((variant - gmi) / |gmi|).
The reference trains all its seeds of both configurations in one vmapped program, so its clock covers
seeds x 2 runs at once; gmi's (impl gmi) covers one run (its seeds run one after another). impl gmi_concurrent
(run_suite.sh SUITE_CONCURRENT=1) trains gmi's seeds at once on the one GPU, so its "sooner" compares the
wall-clock of all of gmi's seeds with that of the reference's vmapped runs (like with like, the reference's
second configuration aside); each line gives env steps a second a run and of all its runs together.
Usage: learn_summary.py <result lines.jsonl>...   (one line a task and impl on stdout; exit 1 if none was read)
"""
import json, sys


def first_reach(curve, target):
    for t, v in curve or []:
        if v is not None and v >= target:
            return t
    return None


def main(paths):
    rows = []
    for p in paths:
        rows += [json.loads(l) for l in open(p) if l.strip()]
    rows = [r for r in rows if r.get("bench") == "learning" and "metric" in r]
    if not rows:
        print(f"learn_summary: got no learning-suite lines in {' '.join(paths)}, need run_suite.sh's output")
        return 1
    # The latest run a task and impl has.
    by = {}
    for r in rows:
        k = (r["task"], r["impl"], r["metric"])
        if r["run_id"] >= by.get(k, {}).get("run_id", ""):
            by[k] = r
    tasks = list(dict.fromkeys(r["task"] for r in rows))
    impls = sorted({r["impl"] for r in rows if r["impl"].startswith("gmi")}, key=lambda i: (i != "gmi", i))
    for t in tasks:
        refs = [by[(t, i, "mean_return")] for i in ("reference", "reference_normalized")
                if (t, i, "mean_return") in by and by[(t, i, "mean_return")].get("median") is not None]
        best = max(refs, key=lambda r: r["median"]) if refs else None
        target = best["median"] - 0.05 * abs(best["median"]) if best else None
        if best:
            runs = best.get("seeds", 1) * 2
            print(f"learn: {t}: better reference {best['impl']} {best['median']:.4g} (target {target:.4g}); "
                  f"{best['env_steps'] / best['wall_s'] / 1e6:.2f} M env steps/s over {runs} vmapped runs "
                  f"({best['env_steps'] / best['wall_s'] * runs / 1e6:.1f} M/s together), first point "
                  f"{(best.get('wall_curve') or [[float('nan')]])[0][0]:.2f} s")
        else:
            print(f"learn: {t}: no reference line (REFERENCE=0, or it did not fit the budget)")
        for i in impls:
            g = by.get((t, i, "mean_return"))
            if not g or g.get("median") is None:
                continue
            parts = [f"mean_return {g['median']:.4g} ({g['min']:.4g} to {g['max']:.4g})"]
            verdict = []
            if target is not None:
                ok = g["median"] >= target
                verdict.append("meets" if ok else "NOT met")
                tr, tg = first_reach(best.get("wall_curve"), target), first_reach(g.get("wall_curve"), target)
                sooner = f"{tr / tg:.1f}x" if tr is not None and tg else ("never" if tr is not None else "-")
                together = g.get("concurrent", 1)
                clock = (f"{together} seeds at once against the reference's {best.get('seeds', 1)} x 2 vmapped runs"
                         if together > 1 else "one run against the reference's vmapped runs")
                parts.append(f"sooner {sooner} ({clock}; target 20x)")
            base = by.get((t, "gmi", "mean_return"))
            if i != "gmi" and base and base.get("median"):
                # The change of defaults a variant would make, as docs/learning.md's variant table: positive = learned more.
                parts.append(f"vs gmi {(g['median'] - base['median']) / abs(base['median']):+.1%}")
            gap = by.get((t, i, "optimum_gap"))
            if gap and gap.get("median") is not None:
                parts.append(f"optimum_gap {gap['median']:.3f} ({gap['min']:.3f} to {gap['max']:.3f})")
                verdict.append("gap <= 1.10" if gap["median"] <= 1.10 else "gap > 1.10")
                base_gap = by.get((t, "gmi", "optimum_gap"))
                if i != "gmi" and base_gap and base_gap.get("median") is not None:
                    # A default changes only if no proxy's gap grows: the variant's against the same run's defaults.
                    worse = gap["median"] > base_gap["median"]
                    verdict.append(f"gap {'above' if worse else 'at or below'} gmi's {base_gap['median']:.3f}")
            if g.get("wall_s"):
                curve = g.get("wall_curve") or [[float("nan")]]
                together = ""
                if g.get("wall_s_all"):
                    together = (f" ({g['env_steps'] * g.get('seeds', 1) / g['wall_s_all'] / 1e6:.2f} M/s all "
                                f"{g.get('seeds', 1)} seeds together, {g['wall_s_all']:.2f} s)")
                parts.append(f"{g['env_steps'] / g['wall_s'] / 1e6:.2f} M env steps/s a run{together}, first point "
                             f"{curve[0][0]:.2f} s, {len(g.get('wall_curve') or [])} points")
            print(f"learn: {t}: {i}: {'; '.join(parts)}: {', '.join(verdict) or 'no verdict'}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: learn_summary.py <result lines.jsonl>...")
    sys.exit(main(sys.argv[1:]))
