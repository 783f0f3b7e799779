#!/usr/bin/env python3
"""Summary of bench/actors/device_actors2.sh and device_actors3.sh: gmi.bench.actors_rate's lines of two variants
(BEFORE and AFTER: the logs $LOGS/rate_<build>_<variant>_<round>.jsonl) on each MuJoCo build, joined into OUT (with
device, git, run_id, mujoco_build, round and variant added); prints each impl's steps_per_cpu_s (median over the
bench's reps, then the median of the rounds) for both variants against 20000 env steps per CPU second, round 1's
profiles, and whether every run of a build stepped the same 2000-step trajectory (trajectory_fnv).
  rate_summary.py OUT DEVICE GIT RUN_ID LOGS BEFORE AFTER TITLE"""
import glob, json, os, re, statistics, sys

out, device, git, run_id, logs, before, after, title = sys.argv[1:]
rows = []
for p in sorted(glob.glob(os.path.join(logs, "rate_*_*_*.jsonl"))):
    m = re.match(rf"rate_(\w+?)_({before}|{after})_(\d)\.jsonl", os.path.basename(p))
    if not m:
        continue
    lib, variant, rnd = m.groups()
    for l in open(p):
        if l.strip():
            d = json.loads(l)
            d.update({"device": device, "git": git, "run_id": run_id, "mujoco_build": lib, "round": int(rnd),
                      "variant": variant})
            rows.append(d)
with open(out, "w") as f:
    for d in rows:
        f.write(json.dumps(d) + "\n")
print(f"== {title} at {git} on {device} (run {run_id}): MuJoCo Ant per-core rate, {before} (before) against {after} "
      "(after); target 20000 env steps per CPU second")
best = 0
for lib in ("debian", "deepmind"):
    mine = [d for d in rows if d["mujoco_build"] == lib]
    if not mine:
        continue
    print(f"-- MuJoCo build: {lib} ({mine[0].get('mujoco_library', '?')})")
    rate = {}
    for d in mine:
        if d.get("metric") == "steps_per_s_per_core":
            rate.setdefault((d["impl"], d["threads"], d["variant"]), []).append(d["steps_per_cpu_s"])
    for (impl, threads, _) in sorted(k for k in rate if k[2] == before):
        a = statistics.median(rate[(impl, threads, before)])
        b = statistics.median(rate.get((impl, threads, after), [0]))
        if impl != "bare_mj_step" or before == "dynamic":
            best = max(best, b)
        met = "MET" if b >= 20000 else "not met"
        # bare_mj_step has one mjData an environment whatever the layout: its ratio there is the run's noise
        note = " (bare loop: per_env in both)" if impl == "bare_mj_step" and before == "per_env" else ""
        print(f"  {impl:22s} threads {threads}: {before} {a:7.0f}, {after} {b:7.0f} env steps per CPU s "
              f"(x{b / a if a else 0:.3f}; rounds {len(rate[(impl, threads, before)])}) [{after} {met} vs 20000]{note}")
    for d in mine:
        if d.get("metric") == "us_per_env_step_profile" and d["round"] == 1:
            p = d["us_parts"]
            stages = ", ".join(f"{k.replace('mj_', '')} {v:.1f}" for k, v in p.items()
                               if k not in ("total", "task_code"))
            print(f"  profile ({d['variant']}, {d['collision']}, {d.get('data_layout', 'per_env')}): "
                  f"{d['median']:.1f} us an env step; {stages}; contacts {d['contacts_per_substep']:.2f} a substep")
    fnv = {d.get("trajectory_fnv") for d in mine if d.get("impl") == "gmi.reset_data"}
    same = "no reset lines (a run failed?)" if not fnv else ("yes" if len(fnv) == 1 else "NO")
    print(f"  trajectory_fnv (2000 steps) the same in every run of this build: {same} {sorted(fnv)}")
print(f"best {after} rate: {best:.0f} env steps per CPU s: 20000 {'MET' if best >= 20000 else 'not met'}")
print(f"result lines: {len(rows)} in {out}")
