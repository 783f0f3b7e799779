#!/usr/bin/env python3
"""The result lines and summary of bench/sac/device_sacfast.sh and device_humanoid_v4.sh: PPO's run (label ppo) and SAC's
runs (LABELS) from their metrics files LOGS/LABEL.jsonl, appended to DEST as JSON lines, a table and a comparison
per SAC run on stdout.

usage: curve_summary.py LOGS DEST COMMON LABELS CASE TAG [BEFORE]
  COMMON: the JSON object every line gets (device, git, run_id); LABELS: SAC's runs, space separated; CASE: the task
  (ant_v4, humanoid_v4); TAG: the calling script, in messages; BEFORE: "ENV_STEPS_PER_S,UPDATES_PER_S,NAME" of a
  reference the SAC rates are compared with (device_sacfast.sh: 794e70c's on Ant), or "-" for none.
A label's runs: LOGS/LABEL.jsonl, or one a seed LOGS/LABEL.seedN.jsonl (bench/sac/device_pendulum.sh).
Lines: {"bench":"sac_ant_curve","case",...,"config","env_steps","wall_s","mean_return"} per metrics line ("seed" with
seeds), {"bench":"sac_ant","case",...,"metric":...,"median","min","max"} per label and metric (over its seeds; one
run: median = min = max), {"bench":"sac_ant","metric":"env_steps_to_ppo_final",...} per SAC label: the target is the
median of PPO's final returns, each SAC seed's first env steps at or above it (median, min, max over the seeds that
reached it; "reached": how many of "seeds"), and PPO's own first reach ("ppo_env_steps_to_final", its seconds
"ppo_wall_s_to_final"). Exits 1 without PPO's return."""
import glob, json, os, re, statistics, sys

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
TARGET_RATIO = 5 if case == "ant_v4" else None  # issue 39's Ant target: SAC at PPO's final return with 5x fewer steps
def load(path):
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
def seeded(label):  # [(seed or None, run)] of a label: its one file, else a file a seed
    one = f"{logs}/{label}.jsonl"
    if os.path.exists(one):
        return [(None, r) for r in [load(one)] if r]
    found = []
    for path in glob.glob(f"{logs}/{glob.escape(label)}.seed*.jsonl"):
        m = re.search(r"\.seed(\d+)\.jsonl$", path)
        r = load(path) if m else None
        if r:
            found.append((int(m.group(1)), r))
    return sorted(found, key=lambda x: x[0])
runs = {label: seeded(label) for label in ["ppo"] + labels}
for label, rs in runs.items():
    if not rs:
        print(f"{tag_name}: {label}: no metrics", file=sys.stderr)
        continue
    algo = "ppo" if label == "ppo" else "sac"
    r0 = rs[0][1]
    tag = {"case": case, "impl": "gmi", "algo": algo, "config": label, "num_envs": r0["envs"]}
    if r0["sac"]:
        tag["sac"] = r0["sac"]
    if r0["path"]:
        tag["env_step_path"] = r0["path"]
    for seed, r in rs:
        for i, (s, w, m) in enumerate(r["pts"]):
            d = {"bench": "sac_ant_curve", **tag, "env_steps": s, "wall_s": w, "mean_return": m}
            if seed is not None:
                d["seed"] = seed
            if i == len(r["pts"]) - 1 and r["end"] is not None:
                d["eval_return"] = r["eval_return"]
            put(d)
    for k in ("final_return", "eval_return", "env_steps", "wall_s", "env_steps_per_s", "updates_per_s"):
        vs = [r[k] for _, r in rs if r[k] is not None]
        if vs:
            d = {"bench": "sac_ant", **tag, "metric": k, "median": statistics.median(vs), "min": min(vs),
                 "max": max(vs)}
            if rs[0][0] is not None:
                d.update(seeds=len(vs), per_seed=vs)
            put(d)
f = lambda v, spec: format(v, spec) if isinstance(v, (int, float)) else "-"
print(f"{'run':11} {'envs':>5} {'env steps':>10} {'seconds':>8} {'env steps/s':>12} {'updates/s':>10} "
      f"{'final return':>13} {'eval return':>12} {'env step path':>14}")
for label, rs in runs.items():
    for seed, r in rs:
        name = label if seed is None else f"{label} s{seed}"
        print(f"{name:11} {f(r['envs'], '>5')} {f(r['env_steps'], '>10.4g')} {f(r['wall_s'], '>8.1f')} "
                  f"{f(r['env_steps_per_s'], '>12.4g')} {f(r['updates_per_s'], '>10.4g')} "
                  f"{f(r['final_return'], '>13.1f')} {f(r['eval_return'], '>12.1f')} {r['path'] or '-':>14}")
med = lambda vs: statistics.median(vs) if vs else None
for label, rs in runs.items():  # with seeds: each label's final mean return over them
    finals = [r["final_return"] for seed, r in rs if seed is not None and r["final_return"] is not None]
    if len(finals) > 1:
        print(f"{label}: final mean return {statistics.median(finals):.1f} (median of {len(finals)} seeds, "
              f"{min(finals):.1f} to {max(finals):.1f})")
ppo = [r for _, r in runs.get("ppo", []) if r["final_return"] is not None]
if not ppo:
    print(f"{tag_name}: no PPO return: no comparison", file=sys.stderr)
    sys.exit(1)
target = med([r["final_return"] for r in ppo])
ppo_steps, ppo_wall = med([r["env_steps"] for r in ppo]), med([r["wall_s"] for r in ppo if r["wall_s"] is not None])
# PPO's own first reach of its (median) final return, per seed: the curve beside SAC's.
ppo_reach = [next(((s, w) for s, w, m in r["pts"] if m >= target), None) for r in ppo]
ppo_first = med([p[0] for p in ppo_reach if p])
ppo_first_wall = med([p[1] for p in ppo_reach if p])
seeds_note = f" (median of {len(ppo)} seeds)" if len(ppo) > 1 else ""
print(f"target: PPO's final mean return {target:.1f}{seeds_note} after {ppo_steps:.4g} env steps "
      f"({f(ppo_wall, '.1f')} s)"
      + (f"; PPO first reached it at {ppo_first:.4g} env steps ({f(ppo_first_wall, '.1f')} s)" if ppo_first else "")
      + (f"; the issue wants SAC there within {ppo_steps / TARGET_RATIO:.4g} env steps ({TARGET_RATIO}x fewer)"
         if TARGET_RATIO else ""))
for label in labels:
    rs = [r for _, r in runs.get(label, []) if r["pts"]]
    if not rs:
        continue
    reaches = [p for p in (next(((s, w) for s, w, m in r["pts"] if m >= target), None) for r in rs) if p]
    best = max((p for r in rs for p in r["pts"]), key=lambda p: p[2])
    steps_to = sorted(p[0] for p in reaches)
    reach = (med(steps_to), med([p[1] for p in reaches])) if reaches else None
    ratio = ppo_steps / reach[0] if reach else None
    r = {k: med([x[k] for x in rs if x[k] is not None]) for k in ("env_steps", "env_steps_per_s", "updates_per_s",
                                                                  "eval_return")}
    d = {"bench": "sac_ant", "case": case, "impl": "gmi", "algo": "sac", "config": label, "num_envs": rs[0]["envs"],
         "metric": "env_steps_to_ppo_final", "median": reach[0] if reach else None,
         "min": steps_to[0] if reach else None, "max": steps_to[-1] if reach else None,
         "wall_s_to_ppo_final": reach[1] if reach else None, "ppo_final_return": target, "ppo_env_steps": ppo_steps,
         "ppo_wall_s": ppo_wall, "ppo_env_steps_to_final": ppo_first, "ppo_wall_s_to_final": ppo_first_wall,
         "sac_best_return": best[2], "sac_env_steps_at_best": best[0], "ppo_over_sac_env_steps": ratio,
         "ppo_first_over_sac_env_steps": ppo_first / reach[0] if reach and ppo_first else None,
         "target_ratio": TARGET_RATIO}
    if len(rs) > 1 or len(ppo) > 1:
        d.update(seeds=len(rs), reached=len(reaches), ppo_seeds=len(ppo))
    put(d)
    rate = f"{f(r['env_steps_per_s'], '.4g')} env steps/s, {f(r['updates_per_s'], '.4g')} updates/s"
    if BEFORE and r["env_steps_per_s"] and r["updates_per_s"]:
        rate = (f"{f(r['env_steps_per_s'], '.4g')} env steps/s ({r['env_steps_per_s'] / BEFORE['env_steps_per_s']:.2f}x "
                f"{BEFORE['name']}'s), {f(r['updates_per_s'], '.4g')} updates/s "
                f"({r['updates_per_s'] / BEFORE['updates_per_s']:.2f}x)")
    if reach:
        verdict = f" ({'meets' if ratio >= TARGET_RATIO else 'misses'} {TARGET_RATIO}x)" if TARGET_RATIO else ""
        many = f" (median of the {len(reaches)} of {len(rs)} seeds that did)" if len(rs) > 1 else ""
        first = (f", {ppo_first / reach[0]:.3g}x against PPO's first reach ({f(ppo_first_wall, '.1f')} s)"
                 if ppo_first else "")
        print(f"{label}: reached {target:.1f} at {reach[0]:.4g} env steps ({reach[1]:.0f} s){many}: {ratio:.3g}x fewer "
              f"than PPO{first}{verdict}; {rate}")
    else:
        mark = f" (the {TARGET_RATIO}x mark is {ppo_steps / TARGET_RATIO:.4g})" if TARGET_RATIO else ""
        print(f"{label}: did not reach {target:.1f} in {f(r['env_steps'], '.4g')} env steps: best {best[2]:.1f} at "
              f"{best[0]:.4g}{mark}; eval {f(r['eval_return'], '.1f')}; {rate}")
