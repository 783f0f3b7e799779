#!/usr/bin/env python3
"""Turns gmi's per-seed metrics files of a learning-suite run into result lines (bench-spec.md format): for each
task and gmi configuration, the median, min and max over seeds of the final mean return (the end line's), of the
final policy's deterministic evaluation (metric eval_return, the end line's eval_return), and for the LQ proxies the
optimum gap (mean cost / optimal cost) of that evaluation (optimum_gap; reference_ppo.py computes it the same way)
and of the training episodes (train_optimum_gap); curves of the seeds' median return against env
steps (the end lines' curves) and against wall-clock seconds (the end lines' wall_curve: a point at every
statistics round, when the mean reached the host; the progress lines, one a --log-interval, where an older
revision's end line has none), each seed's curve read as a step function and the median taken where every seed has
a value. --concurrent N: the files are the members of one run that trained N seeds at once (run_suite.sh's
SUITE_CONCURRENT); the lines say so ("concurrent") and give the wall-clock all seeds took ("wall_s_all": the longest
member's for N > 1, the sum of the runs' for seeds run one after another).
Usage: gmi_lines.py --run-id ID --device NAME --git REV [--impl gmi] [--concurrent 1] [--runs-at-once 1] <metrics files of one task and impl>...
Lines go to stdout; a file without an end line is reported on stderr and counts as a failed seed.
"""
import argparse, json, math, statistics, sys


def step_median(curves):
    """Median over seeds of step-function curves [[x, y], ...], at every x of any seed where all have a value."""
    xs = sorted({x for c in curves for x, _ in c})
    out = []
    for x in xs:
        vals = []
        for c in curves:
            ys = [y for cx, y in c if cx <= x and y is not None]
            if ys:
                vals.append(ys[-1])
        if len(vals) == len(curves):
            out.append([x, statistics.median(vals)])
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--run-id", required=True)
    p.add_argument("--device", required=True)
    p.add_argument("--git", required=True)
    p.add_argument("--impl", default="gmi")
    p.add_argument("--settings", default="", help="the flags this gmi configuration adds to the defaults")
    p.add_argument("--concurrent", type=int, default=1, help="seeds trained at once (1: one after another)")
    p.add_argument("--runs-at-once", type=int, default=1,
                   help="gmi runs sharing the GPU at the time (run_suite.sh's SUITE_PARALLEL_RUNS: every configuration and "
                        "seed of the task); above 1 the lines say so and their wall-clock is not one run's")
    p.add_argument("files", nargs="+")
    a = p.parse_args()
    if a.runs_at_once < 1:
        p.error(f"--runs-at-once: got {a.runs_at_once}, need >= 1")
    if a.concurrent < 1:
        p.error(f"--concurrent: got {a.concurrent}, need >= 1")
    finals, evals, curves, walls, steps, optimum, task, info, wall_s = [], [], [], [], [], None, None, {}, []
    for f in a.files:
        try:
            lines = [json.loads(l) for l in open(f) if l.strip()]
        except OSError:
            lines = []
        end = [l for l in lines if l.get("event") == "end"]
        if not end:
            print(f"gmi_lines: {f}: got no end line, need one (the run failed or timed out)", file=sys.stderr)
            finals.append(None)
            evals.append(None)
            continue
        e = end[-1]
        task = e["task"]
        optimum = e.get("optimal_mean_return", optimum)
        info = {k: e.get(k) for k in ("num_envs", "network", "ppo")}
        finals.append(e.get("mean_return"))
        evals.append(e.get("eval_return"))
        steps.append(e["env_steps"])
        wall_s.append(e.get("wall_s"))
        curves.append(e.get("curve", []))
        walls.append(e["wall_curve"] if e.get("wall_curve") else
                     [[l["wall_s"], l["mean_return"]] for l in lines
                      if "event" not in l and l.get("mean_return") is not None])
    if task is None:
        sys.exit("gmi_lines: no file had an end line")
    ok = [x for x in finals if x is not None and math.isfinite(x)]
    base = {"bench": "learning", "task": task, "impl": a.impl, "algo": "ppo", "seeds": len(a.files),
            "env_steps": statistics.median(steps), "run_id": a.run_id, "device": a.device, "git": a.git,
            "settings": a.settings, "wall_s": statistics.median([w for w in wall_s if w is not None]) if any(w is not None for w in wall_s) else None,
            "concurrent": a.concurrent, **info}
    if a.runs_at_once > 1:
        base["runs_at_once"] = a.runs_at_once
    done = [w for w in wall_s if w is not None]
    if done:
        base["wall_s_all"] = max(done) if a.concurrent > 1 else sum(done)
    stats = lambda v: {"median": statistics.median(v), "min": min(v), "max": max(v)} if v else \
        {"median": None, "min": None, "max": None}
    print(json.dumps(dict(base, metric="mean_return", **stats(ok), per_seed=finals, curve=step_median(curves),
                          wall_curve=step_median(walls))))
    finite = lambda v: [x for x in v if x is not None and math.isfinite(x)]
    if any(x is not None for x in evals):
        print(json.dumps(dict(base, metric="eval_return", **stats(finite(evals)), per_seed=evals)))
    if optimum is not None:
        for metric, values in (("optimum_gap", evals), ("train_optimum_gap", finals)):
            gaps = [x / optimum if x is not None else None for x in values]
            if all(g is None for g in gaps):
                continue  # an end line without eval_return (an older revision): no evaluation gap
            print(json.dumps(dict(base, metric=metric, **stats(finite(gaps)), per_seed=gaps, optimum=optimum)))


if __name__ == "__main__":
    main()
