#!/usr/bin/env bash
# Issue 38's per-core rate of MuJoCo Ant, before and after the change of this script's commit: the Ant's contacts
# as predefined pairs with MuJoCo's broadphase off and njmax bounded (actors/mujoco_pairs.hpp; the same contacts,
# the steps equal bit for bit: test actors.mujoco.pairs_step_as_dynamic_collision), against MuJoCo's dynamic
# collision and default njmax (the model as gmi loaded it before). On ONE GPU's host (CUDA_VISIBLE_DEVICES set by the caller; no GPU work here) and its 16
# cores, cold, within 6 minutes including the build, from the repository root with .carry/debs carried (MuJoCo's
# .debs: bench/actors/carry_mujoco.sh) and optionally .carry/mujoco-deepmind (carry_mujoco_deepmind.sh):
#   1. builds gmi.bench.actors_rate in $BUILD (default /tmp/build-actors, -j$JOBS, default 16);
#   2. for each MuJoCo build (Debian's; DeepMind's when carried), twice in turn "dynamic" then "pairs":
#      gmi.bench.actors_rate on include/gmi/physics/builtin/ant.xml (and pairs:ant.xml), 128 envs a core, at 1 and 8
#      threads (bare mj_step loop, gmi's sim, the CPU actors with and without stealing; one env step taken apart;
#      the resets, with trajectory_fnv: both collisions must give the same hash);
#   3. the summary: each steps_per_cpu_s (median over the bench's reps, then the median of the rounds) against
#      20000 env steps per CPU second and "pairs" against "dynamic" of the same build, impl and thread count.
# Every step has a timeout cut to what is left of BUDGET_S (default 330 s from the start); round 2 of a build runs
# only where 130 s are left (said so when not; not a failure). Lines (device, git, run_id, mujoco_build, round
# added): $OUT/actors.jsonl; summary: stdout and $OUT/actors-summary.txt; logs: $OUT/actors/. Cores: GMI_RATE_CPUS
# (taskset list, default 0-8: 8 stepping threads and the CPU actors' driver thread).
set -uo pipefail
start_s=$(date +%s)
budget_s=${BUDGET_S:-330}
source "$(dirname "$0")/device_actors_common.sh"
cpus=${GMI_RATE_CPUS:-0-8}
targets=(gmi.bench.actors_rate)
build_targets 200
echo "cores: $cpus of $(nproc --all); host CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"

bench=$build/bench/actors/gmi.bench.actors_rate
builds=(debian)
if [ -f .carry/mujoco-deepmind/libmujoco.so.2.2.2 ]; then
  builds+=(deepmind)
else
  echo "no .carry/mujoco-deepmind/libmujoco.so.2.2.2: DeepMind's build not measured (bench/actors/carry_mujoco_deepmind.sh)"
fi
deepmind_path="$PWD/.carry/mujoco-deepmind:$LD_LIBRARY_PATH"
# Round 1 of every build first, then round 2 (so a budget cut loses repeats, not a build).
for round in 1 2; do
  for lib in "${builds[@]}"; do
    if ((round == 2 && $(left) < 130)); then echo "round 2 of $lib: left out ($(left) s of the budget left)"; continue; fi
    for coll in dynamic pairs; do
      arg=$model
      [ "$coll" = pairs ] && arg=pairs:$model
      path=$LD_LIBRARY_PATH
      [ "$lib" = deepmind ] && path=$deepmind_path
      LD_LIBRARY_PATH=$path step "rate_${lib}_${coll}_$round" 60 taskset -c "$cpus" "$bench" \
        "$logs/rate_${lib}_${coll}_$round.jsonl" "$arg" 0.5 128 1 8
    done
  done
done
python3 - "$lines" "$device" "$git_rev" "$run_id" "$logs" <<'PY' | tee "$out/actors-summary.txt"
import glob, json, os, re, statistics, sys
out, device, git, run_id, logs = sys.argv[1:]
rows = []
for p in sorted(glob.glob(os.path.join(logs, "rate_*_*_*.jsonl"))):
    lib, coll, rnd = re.match(r"rate_(\w+?)_(dynamic|pairs)_(\d)\.jsonl", os.path.basename(p)).groups()
    for l in open(p):
        if l.strip():
            d = json.loads(l)
            d.update({"device": device, "git": git, "run_id": run_id, "mujoco_build": lib, "round": int(rnd)})
            rows.append(d)
with open(out, "w") as f:
    for d in rows:
        f.write(json.dumps(d) + "\n")
print(f"== actors2 at {git} on {device} (run {run_id}): MuJoCo Ant per-core rate, dynamic collision against "
      "predefined pairs; target 20000 env steps per CPU second")
for lib in ("debian", "deepmind"):
    mine = [d for d in rows if d["mujoco_build"] == lib]
    if not mine:
        continue
    print(f"-- MuJoCo build: {lib} ({mine[0].get('mujoco_library', '?')})")
    rate = {}
    for d in mine:
        if d.get("metric") == "steps_per_s_per_core":
            rate.setdefault((d["impl"], d["threads"], d["collision"]), []).append(d["steps_per_cpu_s"])
    for (impl, threads, coll) in sorted(k for k in rate if k[2] == "dynamic"):
        a = statistics.median(rate[(impl, threads, "dynamic")])
        b = statistics.median(rate.get((impl, threads, "predefined_pairs"), [0]))
        met = "MET" if b >= 20000 else "not met"
        print(f"  {impl:22s} threads {threads}: dynamic {a:7.0f}, pairs {b:7.0f} env steps per CPU s "
              f"(x{b / a if a else 0:.3f}; rounds {len(rate[(impl, threads, 'dynamic')])}) [pairs {met} vs 20000]")
    for d in mine:
        if d.get("metric") == "us_per_env_step_profile" and d["round"] == 1:
            p = d["us_parts"]
            stages = ", ".join(f"{k.replace('mj_', '')} {v:.1f}" for k, v in p.items() if k not in ("total", "task_code"))
            print(f"  profile {d['collision']:16s}: {d['median']:.1f} us an env step; {stages}; "
                  f"contacts {d['contacts_per_substep']:.2f} a substep")
    fnv = {(d["collision"], d["round"]): d.get("trajectory_fnv") for d in mine if d.get("impl") == "gmi.reset_data"}
    same = len(set(fnv.values())) == 1
    print(f"  trajectory_fnv (2000 steps) equal for both collisions: {'yes' if same else 'NO'} {sorted(set(fnv.values()))}")
print(f"result lines: {len(rows)} in {out}")
PY
echo "total $(( $(date +%s) - start_s )) s (budget $budget_s s)"
exit "$status"
