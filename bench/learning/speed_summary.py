#!/usr/bin/env python3
"""Issue 34's wall-clock target, both ways (bench/learning/device_speed.sh): from a learning-suite run with
SUITE_CONCURRENT=1 (result lines, and the runs' metrics files in its SUITE_WORK folder), per task:
  - gmi's seeds one after another (impl gmi) and all at once on the one GPU (impl gmi_concurrent): env steps a second
    a run and of all seeds together, milliseconds an iteration (warm: from the first statistics round on, the end
    lines' warm_samples_per_s) and the first iteration's seconds (the first progress line's), the wall-clock all
    seeds took;
  - "sooner" both ways: the better reference's seconds to reach its target (its final median less 5% of its
    magnitude) over gmi's, with gmi's clock covering one run (sequential) or all seeds (concurrent), the reference's
    covering its seeds x 2 configurations in one vmapped program;
  - the clock's resolution: the first curve point and "sooner" from the end lines' wall_curve (a point at every
    statistics round) and, as before this change, from the progress lines (one a --log-interval).
Probe runs (device_speed.sh's per-iteration probe: metrics files named <task>-<label>.jsonl in a folder) add one
line each: milliseconds an iteration, the first iteration's seconds, env steps a second.
Usage: speed_summary.py <suite lines.jsonl> <SUITE_WORK folder> [<probe folder>]
Prints a summary; appends "bench": "learning_speed" lines (one a task and mode, one a probe run) to the lines file.
"""
import glob, json, os, statistics, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gmi_lines import step_median  # noqa: E402


def lines_of(path):
    try:
        return [json.loads(l) for l in open(path) if l.strip()]
    except (OSError, ValueError):
        return []


def first_reach(curve, target):
    for t, v in curve or []:
        if v is not None and v >= target:
            return t
    return None


def ratio(tr, tg):
    if tr is None:
        return None, "-"
    if not tg:
        return None, "never"
    return tr / tg, f"{tr / tg:.1f}x"


def ms_per_iteration(end):
    """Warm milliseconds an iteration of one run's end line (None when it ended before its first round)."""
    warm = end.get("warm_samples_per_s")
    horizon = (end.get("ppo") or {}).get("horizon")
    if not warm or not horizon:
        return None
    return end["num_envs"] * horizon / warm * 1e3


def runs(work, impl, task):
    """The end line and progress lines of each run (sequential seeds, or a concurrent run's members)."""
    pat = f"{impl}-{task}.gmi*.jsonl" if impl == "gmi_concurrent" else f"{impl}-{task}-*.jsonl"
    out = []
    for f in sorted(glob.glob(os.path.join(work, pat))):
        ls = lines_of(f)
        end = [l for l in ls if l.get("event") == "end"]
        if end:
            out.append((end[-1], [l for l in ls if "event" not in l]))
    return out


def med(values):
    v = [x for x in values if x is not None]
    return statistics.median(v) if v else None


def fmt(x, spec=".2f", unit=""):
    return "-" if x is None else f"{x:{spec}}{unit}"


def main(argv):
    if len(argv) < 2:
        print("usage: speed_summary.py <suite lines.jsonl> <SUITE_WORK folder> [<probe folder>]")
        return 2
    path, work = argv[0], argv[1]
    probe = argv[2] if len(argv) > 2 else ""
    rows = [r for r in lines_of(path) if r.get("bench") == "learning" and r.get("metric") == "mean_return"]
    if not rows:
        print(f"speed_summary: got no learning-suite lines in {path}, need run_suite.sh's output")
        return 1
    ret = {(r["task"], r["impl"]): r for r in rows}
    tasks = list(dict.fromkeys(r["task"] for r in rows))
    out, text = [], []
    for t in tasks:
        refs = [ret[(t, i)] for i in ("reference", "reference_normalized")
                if (t, i) in ret and ret[(t, i)].get("median") is not None]
        best = max(refs, key=lambda r: r["median"]) if refs else None
        target = best["median"] - 0.05 * abs(best["median"]) if best else None
        tr = first_reach(best.get("wall_curve"), target) if best else None
        if best:
            runs_ref = best.get("seeds", 1) * 2
            text.append(f"speed: {t}: reference {best['impl']} {best['median']:.4g}, target {target:.4g}, reached at "
                        f"{fmt(tr)} s; {best['env_steps'] / best['wall_s'] / 1e6:.2f} M env steps/s a run, "
                        f"{best['env_steps'] * runs_ref / best['wall_s'] / 1e6:.1f} M/s its {runs_ref} runs together, "
                        f"{best['wall_s']:.2f} s")
        for impl, mode in (("gmi", "sequential"), ("gmi_concurrent", "concurrent")):
            g = ret.get((t, impl))
            rs = runs(work, impl, t)
            if not g or not rs:
                text.append(f"speed: {t}: gmi {mode}: no runs with end lines (see {work}/{impl}-{t}*.log)")
                continue
            ends = [e for e, _ in rs]
            rate_run = med([e["env_steps"] / e["wall_s"] for e in ends if e.get("wall_s")])
            walls = [e["wall_s"] for e in ends if e.get("wall_s")]
            wall_all = (max(walls) if mode == "concurrent" else sum(walls)) if walls else None
            rate_all = sum(e["env_steps"] for e in ends) / wall_all if wall_all else None
            ms_it = med([ms_per_iteration(e) for e in ends])
            # The first iteration (eager, with lazy module loading) ends at the first progress line's wall_s.
            first_it = med([next((l["wall_s"] for l in p if l.get("iteration") == 1), None) for _, p in rs])
            # The clock's resolution: the end lines' wall_curve against the progress lines' (one a log interval).
            fine = g.get("wall_curve") or []
            coarse = step_median([[[l["wall_s"], l["mean_return"]] for l in p if l.get("mean_return") is not None]
                                  for _, p in rs])
            s_fine, s_fine_text = ratio(tr, first_reach(fine, target)) if target is not None else (None, "-")
            s_coarse, s_coarse_text = ratio(tr, first_reach(coarse, target)) if target is not None else (None, "-")
            line = {"bench": "learning_speed", "task": t, "impl": impl, "mode": mode, "seeds": len(ends),
                    "num_envs": ends[0].get("num_envs"), "env_steps": g["env_steps"],
                    "env_steps_per_s_run": rate_run, "env_steps_per_s_all": rate_all, "wall_s_all": wall_all,
                    "ms_per_iteration": ms_it, "first_iteration_s": first_it, "first_point_s": fine[0][0] if fine else None,
                    "first_point_s_log_lines": coarse[0][0] if coarse else None,
                    "sooner": s_fine, "sooner_log_lines": s_coarse, "reference_impl": best["impl"] if best else None,
                    "reference_runs": best.get("seeds", 1) * 2 if best else None,
                    "reference_wall_s": best.get("wall_s") if best else None, "mean_return": g.get("median"),
                    "run_id": g["run_id"], "device": g["device"], "git": g["git"]}
            seq = ret.get((t, "gmi"))
            if mode == "concurrent" and seq and seq.get("per_seed") and g.get("per_seed"):
                # The same seeds and settings: where the GPU's kernels are deterministic, the same final returns.
                line["same_returns_as_sequential"] = seq["per_seed"] == g["per_seed"]
            out.append(line)
            same = line.get("same_returns_as_sequential")
            text.append(("" if same is None else
                         f"speed: {t}: concurrent seeds' final returns {'equal' if same else 'DIFFER from'} the "
                         f"sequential runs' ({g['per_seed']} against {seq['per_seed']})\n")
                        + f"speed: {t}: gmi {mode} ({len(ends)} seeds{' at once' if mode == 'concurrent' else ''}): "
                        f"{fmt(rate_run and rate_run / 1e6)} M env steps/s a run, {fmt(rate_all and rate_all / 1e6)} "
                        f"M/s all seeds, {fmt(wall_all)} s all seeds; {fmt(ms_it)} ms an iteration, the first "
                        f"{fmt(first_it, '.3f')} s; first point "
                        f"{fmt(line['first_point_s'])} s (log lines {fmt(line['first_point_s_log_lines'])} s); "
                        f"sooner {s_fine_text} (log lines {s_coarse_text}; target 20x); return "
                        f"{fmt(g.get('median'), '.4g')}")
    for f in sorted(glob.glob(os.path.join(probe, "*.jsonl"))) if probe else []:
        ls = lines_of(f)
        end = [l for l in ls if l.get("event") == "end"]
        if not end:
            text.append(f"speed: probe {os.path.basename(f)}: no end line (the run failed or timed out)")
            continue
        e = end[-1]
        first = next((l for l in ls if "event" not in l), None)
        label = os.path.basename(f)[:-len(".jsonl")]
        line = {"bench": "learning_iteration", "probe": label, "task": e["task"], "num_envs": e.get("num_envs"),
                "collection": e.get("collection"), "minibatch_gradient": e.get("minibatch_gradient"),
                "ms_per_iteration": ms_per_iteration(e), "iterations": e.get("iteration"),
                "first_iteration_s": first["wall_s"] if first and first.get("iteration") == 1 else None,
                "env_steps_per_s": e["env_steps"] / e["wall_s"] if e.get("wall_s") else None,
                "mean_return": e.get("mean_return"), "run_id": e.get("run_id"), "device": e.get("device"),
                "git": e.get("git")}
        out.append(line)
        text.append(f"speed: probe {label}: {fmt(line['ms_per_iteration'], '.3f')} ms an iteration (warm), first "
                    f"iteration {fmt(line['first_iteration_s'], '.3f')} s, "
                    f"{fmt(line['env_steps_per_s'] and line['env_steps_per_s'] / 1e6)} M env steps/s, collection "
                    f"{line['collection']}, gradient {line['minibatch_gradient']}, return {fmt(e.get('mean_return'), '.4g')}")
    print("\n".join(text))
    with open(path, "a") as f:
        for line in out:
            f.write(json.dumps(line) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
