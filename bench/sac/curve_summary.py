#!/usr/bin/env python3
"""The result lines and summary of bench/sac/device_sacfast.sh and device_humanoid.sh: PPO's run (label ppo) and SAC's
runs (LABELS) from their metrics files LOGS/LABEL.jsonl, appended to DEST as JSON lines, a table and a comparison
per SAC run on stdout.

usage: curve_summary.py LOGS DEST COMMON LABELS CASE TAG [BEFORE]
  COMMON: the JSON object every line gets (device, git, run_id); LABELS: SAC's runs, space separated; CASE: the task
  (ant, humanoid); TAG: the calling script, in messages; BEFORE: "ENV_STEPS_PER_S,UPDATES_PER_S,NAME" of a
  reference the SAC rates are compared with (device_sacfast.sh: 794e70c's on Ant), or "-" for none.
Lines: {"bench":"sac_ant_curve","case",...,"config","env_steps","wall_s","mean_return"} per metrics line,
{"bench":"sac_ant","case",...,"metric":...,"median","min","max"} per run and metric (one run: median = min = max),
{"bench":"sac_ant","metric":"env_steps_to_ppo_final",...} per SAC run. Exits 1 without PPO's return."""
import json, os, sys

if len(sys.argv) not in (7, 8):
    sys.exit(f"curve_summary.py: got {len(sys.argv) - 1} arguments, need LOGS DEST COMMON LABELS CASE TAG [BEFORE]")
logs, dest, common, labels = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4].split()
case, tag_name = sys.argv[5], sys.argv[6]
before_arg = sys.argv[7] if len(sys.argv) == 8 else "-"
BEFORE = None
if before_arg != "-":
    parts = before_arg.split(",")
    try:
        BEFORE = {"env_steps_per_s": float(parts[0]), "updates_per_s": float(parts[1]), "name": parts[2]}
    except (ValueError, IndexError):
        sys.exit(f"curve_summary.py: BEFORE: got {before_arg}, need ENV_STEPS_PER_S,UPDATES_PER_S,NAME or -")
TARGET_RATIO = 5 if case == "ant" else None  # issue 39's Ant target: SAC at PPO's final return with 5x fewer steps
def load(label):
    path = f"{logs}/{label}.jsonl"
    if not os.path.exists(path):
        return None
    ls = [json.loads(l) for l in open(path) if l.strip()]
    prog = [l for l in ls if l.get("event") != "end" and "env_steps" in l]
    end = next((l for l in ls if l.get("event") == "end"), None)
    last = end or (prog[-1] if prog else None)
    if last is None:
        return None
    pts = [(p["env_steps"], p["wall_s"], p["mean_return"]) for p in prog if p.get("mean_return") is not None]
    if end and end.get("mean_return") is not None:
        pts.append((end["env_steps"], end["wall_s"], end["mean_return"]))
    steps, wall, upd = last.get("env_steps"), last.get("wall_s"), last.get("updates")
    return {"pts": pts, "end": end, "envs": last.get("num_envs"), "sac": last.get("sac"),
            "path": last.get("env_step_path"),
            "final_return": last.get("mean_return"), "eval_return": (end or {}).get("eval_return"),
            "env_steps": steps, "wall_s": wall, "env_steps_per_s": steps / wall if steps and wall else None,
            "updates_per_s": upd / wall if upd and wall else None}
out = open(dest, "a")
def put(d):
    out.write(json.dumps({**d, **common}) + "\n")
runs = {label: load(label) for label in ["ppo"] + labels}
for label, r in runs.items():
    if r is None:
        print(f"{tag_name}: {label}: no metrics", file=sys.stderr)
        continue
    algo = "ppo" if label == "ppo" else "sac"
    tag = {"case": case, "impl": "gmi", "algo": algo, "config": label, "num_envs": r["envs"]}
    if r["sac"]:
        tag["sac"] = r["sac"]
    if r["path"]:
        tag["env_step_path"] = r["path"]
    for i, (s, w, m) in enumerate(r["pts"]):
        d = {"bench": "sac_ant_curve", **tag, "env_steps": s, "wall_s": w, "mean_return": m}
        if i == len(r["pts"]) - 1 and r["end"] is not None:
            d["eval_return"] = r["eval_return"]
        put(d)
    for k in ("final_return", "eval_return", "env_steps", "wall_s", "env_steps_per_s", "updates_per_s"):
        if r[k] is not None:
            put({"bench": "sac_ant", **tag, "metric": k, "median": r[k], "min": r[k], "max": r[k]})
f = lambda v, spec: format(v, spec) if isinstance(v, (int, float)) else "-"
print(f"{'run':9} {'envs':>5} {'env steps':>10} {'seconds':>8} {'env steps/s':>12} {'updates/s':>10} "
      f"{'final return':>13} {'eval return':>12} {'env step path':>14}")
for label, r in runs.items():
    if r:
        print(f"{label:9} {f(r['envs'], '>5')} {f(r['env_steps'], '>10.4g')} {f(r['wall_s'], '>8.1f')} "
              f"{f(r['env_steps_per_s'], '>12.4g')} {f(r['updates_per_s'], '>10.4g')} {f(r['final_return'], '>13.1f')} "
              f"{f(r['eval_return'], '>12.1f')} {r['path'] or '-':>14}")
ppo = runs.get("ppo")
if not ppo or ppo["final_return"] is None:
    print(f"{tag_name}: no PPO return: no comparison", file=sys.stderr)
    sys.exit(1)
target, ppo_steps, ppo_wall = ppo["final_return"], ppo["env_steps"], ppo["wall_s"]
print(f"target: PPO's final mean return {target:.1f} after {ppo_steps:.4g} env steps ({f(ppo_wall, '.0f')} s)"
      + (f"; the issue wants SAC there within {ppo_steps / TARGET_RATIO:.4g} env steps ({TARGET_RATIO}x fewer)"
         if TARGET_RATIO else ""))
for label in labels:
    r = runs.get(label)
    if not r or not r["pts"]:
        continue
    reach = next(((s, w) for s, w, m in r["pts"] if m >= target), None)
    best = max(r["pts"], key=lambda p: p[2])
    ratio = ppo_steps / reach[0] if reach else None
    put({"bench": "sac_ant", "case": case, "impl": "gmi", "algo": "sac", "config": label, "num_envs": r["envs"],
         "metric": "env_steps_to_ppo_final", "median": reach[0] if reach else None,
         "min": reach[0] if reach else None, "max": reach[0] if reach else None,
         "wall_s_to_ppo_final": reach[1] if reach else None, "ppo_final_return": target, "ppo_env_steps": ppo_steps,
         "ppo_wall_s": ppo_wall, "sac_best_return": best[2], "sac_env_steps_at_best": best[0],
         "ppo_over_sac_env_steps": ratio, "target_ratio": TARGET_RATIO})
    rate = f"{f(r['env_steps_per_s'], '.4g')} env steps/s, {f(r['updates_per_s'], '.4g')} updates/s"
    if BEFORE and r["env_steps_per_s"] and r["updates_per_s"]:
        rate = (f"{f(r['env_steps_per_s'], '.4g')} env steps/s ({r['env_steps_per_s'] / BEFORE['env_steps_per_s']:.2f}x "
                f"{BEFORE['name']}'s), {f(r['updates_per_s'], '.4g')} updates/s "
                f"({r['updates_per_s'] / BEFORE['updates_per_s']:.2f}x)")
    if reach:
        verdict = f" ({'meets' if ratio >= TARGET_RATIO else 'misses'} {TARGET_RATIO}x)" if TARGET_RATIO else ""
        print(f"{label}: reached {target:.1f} at {reach[0]:.4g} env steps ({reach[1]:.0f} s): {ratio:.3g}x fewer than "
              f"PPO{verdict}; {rate}")
    else:
        mark = f" (the {TARGET_RATIO}x mark is {ppo_steps / TARGET_RATIO:.4g})" if TARGET_RATIO else ""
        print(f"{label}: did not reach {target:.1f} in {f(r['env_steps'], '.4g')} env steps: best {best[2]:.1f} at "
              f"{best[0]:.4g}{mark}; eval {f(r['eval_return'], '.1f')}; {rate}")
