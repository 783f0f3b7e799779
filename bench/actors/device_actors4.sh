#!/usr/bin/env bash
# Issue 38's per-core rate of MuJoCo Ant at this commit (actors4), and gmi.bench.actors_train now loading the Ant
# with predefined pairs (its new default) against the dynamic collision it used before, in the same run. On ONE GPU's
# host (CUDA_VISIBLE_DEVICES set by the caller), cold, within 5 minutes including the build, from the repository
# root with .carry/debs (bench/actors/carry_mujoco.sh) and optionally .carry/mujoco-deepmind (carry_mujoco_deepmind.sh):
#   1. builds gmi.bench.actors_rate and gmi.bench.actors_train in $BUILD (default /tmp/build-actors4, -j$JOBS, 16);
#   2. for each MuJoCo build (Debian's; DeepMind's when carried): gmi.bench.actors_rate on pairs:ant_v4.xml (the Ant
#      as gmi loads it by default), 128 envs a core, 1 and 8 threads (bare mj_step loop, gmi's sim, the CPU actors
#      with and without stealing, one env step taken apart, the resets with the 2000-step trajectory_fnv); then
#      CPU-actor PPO on the Ant at 8 actor cores (gmi.bench.actors_train, GPU policy and update) with the pairs model
#      and with "dynamic:" (the former load), on Debian's build (DeepMind's where 110 s are left); then a second
#      round of the rate on each build where 60 s are left (said so when not; not a failure);
#   3. the summary: each steps_per_cpu_s (median of the bench's reps, then of the rounds) against 20000 env steps
#      per CPU second (CPU time of the stepping threads), the profile, whether the
#      trajectory hashes agree across builds and rounds, and actors_train's rates pairs against dynamic.
# Every step has a timeout cut to what is left of BUDGET_S (default 290 s). Lines (device, git, run_id,
# mujoco_build, round added): $OUT/actors.jsonl; summary: stdout and $OUT/actors-summary.txt; logs: $OUT/actors/.
# Cores: GMI_RATE_CPUS (taskset list, default 0-8: 8 stepping threads and a driver thread); lscpu's topology is
# printed so a reader can see whether two of those CPUs share a physical core.
set -uo pipefail
start_s=$(date +%s)
budget_s=${BUDGET_S:-290}
export BUILD=${BUILD:-/tmp/build-actors4}
source "$(dirname "$0")/device_actors_common.sh"
cpus=${GMI_RATE_CPUS:-0-8}
targets=(gmi.bench.actors_rate gmi.bench.actors_train)
build_targets 180
echo "cores: $cpus of $(nproc --all); host CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-);" \
  "$(lscpu | grep -E '^(Thread|Core|Socket)\(s\)|^NUMA node\(s\)' | tr -s ' ' | tr '\n' ';')"
lscpu -e=CPU,CORE,SOCKET,NODE > "$logs/topology.txt" 2>&1 || true

bench_dir=$build/bench/actors
builds=(debian)
if [ -f .carry/mujoco-deepmind/libmujoco.so.2.2.2 ]; then
  builds+=(deepmind)
else
  echo "no .carry/mujoco-deepmind/libmujoco.so.2.2.2: DeepMind's build not measured (bench/actors/carry_mujoco_deepmind.sh)"
fi
libpath() { if [ "$1" = deepmind ]; then echo "$PWD/.carry/mujoco-deepmind:$LD_LIBRARY_PATH"; else echo "$LD_LIBRARY_PATH"; fi; }
rate() {  # $1: build, $2: round
  LD_LIBRARY_PATH=$(libpath "$1") step "rate_$1_$2" 50 taskset -c "$cpus" "$bench_dir/gmi.bench.actors_rate" \
    "$logs/rate_$1_$2.jsonl" "pairs:$model" 0.4 128 1 8
}
train() {  # $1: build, $2: pairs | dynamic
  local arg=$model
  [ "$2" = dynamic ] && arg=dynamic:$model
  GMI_ACTORS_TRAIN_ANT_ONLY=1 LD_LIBRARY_PATH=$(libpath "$1") step "train_$1_$2" 45 \
    taskset -c "$cpus" "$bench_dir/gmi.bench.actors_train" "$logs/train_$1_$2.jsonl" "$arg" 0.4 8
}
# The rate on every build first, then actors_train (Debian's; DeepMind's where 110 s are left), then a second
# round of the rate where 60 s are left for it: a budget cut loses repeats, not a build.
for lib in "${builds[@]}"; do rate "$lib" 1; done
for lib in "${builds[@]}"; do
  if [ "$lib" = deepmind ] && (($(left) < 110)); then echo "actors_train on $lib: left out ($(left) s left)"; continue; fi
  train "$lib" pairs
  train "$lib" dynamic
done
for lib in "${builds[@]}"; do
  if (($(left) < 60)); then echo "round 2 of the rate on $lib: left out ($(left) s left)"; continue; fi
  rate "$lib" 2
done
python3 - "$lines" "$device" "$git_rev" "$run_id" "$logs" <<'PY' | tee "$out/actors-summary.txt"
import glob, json, os, re, statistics, sys
out, device, git, run_id, logs = sys.argv[1:]
rows = []
for p in sorted(glob.glob(os.path.join(logs, "rate_*_*.jsonl")) + glob.glob(os.path.join(logs, "train_*_*.jsonl"))):
    kind, lib, tail = re.match(r"(rate|train)_(\w+?)_(\w+)\.jsonl", os.path.basename(p)).groups()
    for l in open(p):
        if l.strip():
            d = json.loads(l)
            d.update({"device": device, "git": git, "run_id": run_id, "mujoco_build": lib,
                      "round": int(tail) if kind == "rate" else 1})
            rows.append(d)
with open(out, "w") as f:
    for d in rows:
        f.write(json.dumps(d) + "\n")
print(f"== actors4 at {git} on {device} (run {run_id}): MuJoCo Ant with predefined pairs, env steps per CPU "
      "second against the target 20000")
fnv = set()
for lib in ("debian", "deepmind"):
    mine = [d for d in rows if d["mujoco_build"] == lib]
    if not mine:
        continue
    print(f"-- MuJoCo build: {lib} ({mine[0].get('mujoco_library', '?')})")
    rate = {}
    for d in mine:
        if d.get("bench") == "actors_rate" and d.get("metric") == "steps_per_s_per_core":
            rate.setdefault((d["impl"], d["threads"]), []).append(d["steps_per_cpu_s"])
    for (impl, threads) in sorted(rate):
        v = statistics.median(rate[(impl, threads)])
        print(f"  {impl:22s} threads {threads}: {v:7.0f} env steps per CPU s (rounds {len(rate[(impl, threads)])}: "
              f"{', '.join(f'{x:.0f}' for x in rate[(impl, threads)])}) [{'MET' if v >= 20000 else 'not met'} vs 20000]")
    for d in mine:
        if d.get("metric") == "us_per_env_step_profile" and d["round"] == 1:
            p = d["us_parts"]
            stages = ", ".join(f"{k.replace('mj_', '')} {v:.1f}" for k, v in p.items() if k != "total")
            print(f"  profile: {d['median']:.1f} us an env step (timers on); {stages}")
    fnv |= {d.get("trajectory_fnv") for d in mine if d.get("impl") == "gmi.reset_data"}
    train = {}
    for d in mine:
        if d.get("bench") == "cpu_actors_ppo" and d.get("task") == "ant_v4":
            train[(d["phase"], d.get("collision", "?"))] = d
    for phase in ("stepping", "collect", "train"):
        a, b = train.get((phase, "dynamic")), train.get((phase, "predefined_pairs"))
        if a and b:
            print(f"  actors_train ant_v4 8 cores {phase:8s}: dynamic {a['median']:7.0f}, pairs {b['median']:7.0f} env "
                  f"steps/s (x{b['median'] / a['median']:.3f}); busy {a['busy_fraction']:.3f} / {b['busy_fraction']:.3f}")
        elif a or b:
            print(f"  actors_train ant_v4 {phase}: only {'dynamic' if a else 'pairs'} measured")
print(f"trajectory_fnv (2000 steps) the same in every run and build: {'yes' if len(fnv) == 1 else 'NO'} {sorted(map(str, fnv))}")
print(f"result lines: {len(rows)} in {out}")
PY
echo "total $(( $(date +%s) - start_s )) s (budget $budget_s s)"
exit "$status"
