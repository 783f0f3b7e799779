#!/usr/bin/env python3
"""The summary of a physics task's device script (device_ant.sh, device_humanoid.sh).

Usage: task_summary.py LINES RUN_ID METRICS GIT DEVICE TASK REFERENCE TARGET [COUNTS]

From the bench "physics" lines of run RUN_ID in LINES (gmi.bench.physics_tasks), prints each of TASK's rates at the
environment counts COUNTS (comma-separated, default 16384,65536) against TARGET env steps/s and against REFERENCE's
rate at the same count in the same run; from the PPO metrics file METRICS (gmi::run's --metrics), the return curve's
first and last points and the deterministic evaluation, and appends a {"bench":"physics_learning",...} line to
LINES. Prints to stdout (the caller tees it into the summary file).
"""
import json
import os
import sys


def main(argv):
    if len(argv) not in (9, 10):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    dest, run_id, metrics, git, device, task, ref, target = argv[1:9]
    target = float(target)
    counts = [int(c) for c in (argv[9] if len(argv) == 10 else "16384,65536").split(",")]
    rows = []
    if os.path.exists(dest):
        rows = [json.loads(l) for l in open(dest) if l.strip()]
    rates = {(r["task"], r["num_envs"]): r for r in rows
             if r.get("bench") == "physics" and r.get("run_id") == run_id and r.get("metric") == "steps_per_s"}
    print(f"{task} on {device}, run {run_id} (env steps/s: physics + observation + reward + auto-reset, median of "
          f"the reps; target {target / 1e6:g} M)")
    for n in counts:
        i, a = rates.get((task, n)), rates.get((ref, n))
        if not i:
            print(f"  {n:>6} envs: no {task} line")
            continue
        m, dt = i["median"], i.get("control_dt", 0)
        line = (f"  {n:>6} envs: {task} {m / 1e6:.2f} M/s ({m / target:.2f}x the target) on {i.get('path')}, "
                f"env step {dt:.4f} s = {i.get('physics_substeps')} x {i.get('physics_dt', 0):.5f} s, "
                f"{m * dt / 1e3:.0f} k simulated s/s")
        if a:
            am, adt = a["median"], a.get("control_dt", 0)
            line += (f"; {ref} {am / 1e6:.2f} M/s ({am / target:.2f}x the target, env step {adt:.3f} s, "
                     f"{am * adt / 1e3:.0f} k simulated s/s): {task}/{ref} {m / am:.2f}x")
        else:
            line += f"; no {ref} line"
        print(line)
    ls = []
    if os.path.exists(metrics):
        ls = [json.loads(l) for l in open(metrics) if l.strip()]
    prog = [l for l in ls if l.get("event") != "end" and l.get("mean_return") is not None and "env_steps" in l]
    end = [l for l in ls if l.get("event") == "end"]
    curve = [[l["env_steps"], l["mean_return"]] for l in prog]
    if end and end[-1].get("curve"):
        curve = [[x, y] for x, y in end[-1]["curve"] if y is not None]
    if not curve:
        print(f"  PPO {task}: no return curve (see the PPO log)")
        return 0
    last = end[-1] if end else prog[-1]
    print(f"  PPO {task}: mean return {curve[0][1]:.1f} at {curve[0][0] / 1e6:.2f} M env steps -> {curve[-1][1]:.1f} "
          f"at {curve[-1][0] / 1e6:.2f} M ({last.get('wall_s', 0):.0f} s; episodes of {last.get('mean_length')} "
          f"steps; deterministic evaluation {last.get('eval_return')})")
    with open(dest, "a") as f:
        f.write(json.dumps({"bench": "physics_learning", "task": task, "impl": "gmi", "seed": 1,
                            "metric": "mean_return", "first": curve[0], "last": curve[-1], "curve": curve,
                            "env_steps": last.get("env_steps"), "wall_s": last.get("wall_s"),
                            "num_envs": last.get("num_envs"), "final_length": last.get("mean_length"),
                            "eval_return": last.get("eval_return"), "ended": bool(end), "device": device,
                            "git": git, "run_id": run_id}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
