#!/usr/bin/env python3
"""Summary of bench/actors/device_actors5.sh against every target of issue 38. Joins the run's lines in LOGS
(rate_<build>_<round>.jsonl, train_<build>_<default|per_env|cartpole>.jsonl, threshold_<build>_1.jsonl) into OUT with
device, git, run_id, mujoco_build, round and step added; reads tests.log and restart_mps.log; reads the committed
ratio sweep's choice lines and the MuJoCo tasks' placement lines (bench/results/actors/) for the targets this run
does not measure again.
  actors5_summary.py OUT DEVICE GIT RUN_ID LOGS"""
import glob, json, os, re, statistics, sys

out, device, git, run_id, logs = sys.argv[1:]
committed_ratio = "bench/results/actors/2026-11-28-NVIDIA-H200-a22f379-multi.jsonl"
committed_place = "bench/results/actors/2026-11-28-NVIDIA-H200-c74e00d-place.jsonl"


def read(path):
    if not os.path.exists(path):
        return []
    return [json.loads(l) for l in open(path) if l.strip().startswith("{")]


def verdict(ok):
    return "MET" if ok else "not met"


rows = []
for p in sorted(glob.glob(os.path.join(logs, "*.jsonl"))):
    m = re.match(r"(rate|train|threshold)_(debian|deepmind)_(\w+)\.jsonl", os.path.basename(p))
    if not m:
        continue
    kind, lib, tail = m.groups()
    for d in read(p):
        d.update({"device": device, "git": git, "run_id": run_id, "mujoco_build": lib, "step": kind,
                  "round": int(tail) if kind == "rate" else 1})
        rows.append(d)
with open(out, "w") as f:
    for d in rows:
        f.write(json.dumps(d) + "\n")

print(f"== actors5 at {git} on {device} (run {run_id}), quiet host; MuJoCo Ant (gmi::envs::ant_v4's definition) with "
      "predefined pairs, mujoco::sim's default layout (per_thread)")
print("-- target 1: MuJoCo Ant >= 20000 env steps/s per core (per CPU second of the stepping threads; medians of the "
      "bench's reps, then of the rounds)")
best = {}
for lib in ("debian", "deepmind"):
    rate = {}
    for d in rows:
        if d["mujoco_build"] == lib and d.get("metric") == "steps_per_s_per_core":
            rate.setdefault((d["impl"], d["threads"], d.get("data_layout", "?")), []).append(d["steps_per_cpu_s"])
    for (impl, threads, layout), v in sorted(rate.items()):
        med = statistics.median(v)
        if impl != "bare_mj_step":
            best[lib] = max(best.get(lib, 0), med)
        print(f"  {lib:8s} {impl:22s} threads {threads} ({layout:10s}): {med:7.0f} (rounds {len(v)}: "
              f"{', '.join(f'{x:.0f}' for x in v)}) [{verdict(med >= 20000)}]")
    fnv = {d.get("trajectory_fnv") for d in rows if d["mujoco_build"] == lib and d.get("impl") == "gmi.reset_data"}
    if fnv:
        print(f"  {lib:8s} trajectory_fnv the same in every round: {'yes' if len(fnv) == 1 else 'NO'} {sorted(fnv)}")
for lib, b in best.items():
    print(f"  best gmi rate on {lib}: {b:.0f} [{verdict(b >= 20000)}]")

print("-- target 2: CPU-actor PPO on Ant uses >= 90% of the cores' stepping rate (collect / stepping; busy fraction)")
for lib in ("debian", "deepmind"):
    train = {}
    for d in rows:
        if d["mujoco_build"] == lib and d.get("bench") == "cpu_actors_ppo" and d.get("task") == "ant_v4":
            train[(d["phase"], d.get("data_layout", "?"))] = d
    for layout in ("per_thread", "per_env"):
        step = train.get(("stepping", layout))
        for phase in ("stepping", "collect", "train"):
            d = train.get((phase, layout))
            if not d:
                continue
            frac = d["median"] / step["median"] if step else float("nan")
            tail = "" if phase == "stepping" else f", {frac:.3f} of stepping [{verdict(frac >= 0.9)}]"
            print(f"  {lib:8s} ant_v4 8 cores {layout:10s} {phase:8s}: {d['median']:8.0f} env steps/s, busy "
                  f"{d['busy_fraction']:.3f} [{verdict(d['busy_fraction'] >= 0.9)}]{tail}")
    a, b = train.get(("stepping", "per_env")), train.get(("stepping", "per_thread"))
    if a and b:
        print(f"  {lib:8s} stepping per_thread / per_env: x{b['median'] / a['median']:.3f}")

print("-- target 3: the planner's ratio within 5% of the best point of its sweep (committed sweep, not run again)")
for d in read(committed_ratio):
    if d.get("bench") == "cpu_gpu_ratio_choice":
        print(f"  {committed_ratio} ({d.get('git')}): goal {d['goal']}: {d['gmis_per_gpu']} GMI(s) x "
              f"{d['cores_per_gmi']} cores x {d['envs_per_core']} envs a core, {d['fraction_of_best']:.3f} of the "
              f"best of {d['points']} points [{verdict(d['fraction_of_best'] >= 0.95)}]")

print("-- target 4: the placement metric picks the faster of CPU and GPU simulation for every task (threshold 1)")
place = [d for d in rows if d.get("bench") == "placement_threshold"]
place += [d for d in read(committed_place) if d.get("bench") == "placement_threshold"]
for d in place:
    src = "this run" if d.get("run_id") == run_id else f"{committed_place} ({d.get('git')})"
    print(f"  {d['task']:9s}: {d['right']} of {d['points']} points decided right at T={d['threshold']} (consistent "
          f"range ({d['consistent_low']:.2f}, {d['consistent_high']:.2f}]; {src}) [{verdict(d['right'] == d['points'])}]")
for d in rows:
    if d.get("bench") == "placement_threshold_point" and d.get("run_id") == run_id:
        print(f"    {d['task']} {d.get('actor_cores')} cores: gpu/cpu rule ratio {d.get('ratio') or float('nan'):.2f}, "
              f"chosen {d.get('chosen')}, right {d.get('right')}")

print("-- tests and the MPS restart")
tests = os.path.join(logs, "tests.log")
if os.path.exists(tests):
    text = open(tests).read()
    passed = len(re.findall(r" Passed ", text))
    failed = len(re.findall(r"\*\*\*Failed|Not Run|\*\*\*Timeout|\(Timeout\)", text))
    print(f"  actors_gpu.* and actors.mujoco.*: {passed} passed, {failed} failed")
    for t in re.findall(r"Test +#\d+: (\S+) \.+\*+\w+", text):
        print(f"    FAILED: {t}")
else:
    print("  tests: not run")
restart = os.path.join(logs, "restart_mps.log")
if os.path.exists(restart):
    text = open(restart).read()
    fin = "finished after 1 restart" in text
    same = "identical on every GMI" in text
    secs = re.findall(r"([0-9.]+) s from failure to the next attempt", text)
    lost = re.findall(r"lost ([0-9]+) iterations", text)
    print(f"  restart of 2 MPS GMIs (GMI 1 killed after iteration 8): finished after 1 restart: {fin}; weights "
          f"identical: {same}; {secs[-1] if secs else '?'} s to the next attempt's first iteration; "
          f"{lost[-1] if lost else '?'} iterations lost [{verdict(fin and same)}]")
else:
    print("  MPS restart: not run")
print(f"result lines: {len(rows)} in {out}")
