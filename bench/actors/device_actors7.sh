#!/usr/bin/env bash
# Issue 38, the placement threshold bounded on both sides: on one GPU's host, quiet (nothing else runs on it), cold,
# within 5 minutes including the build. From the repository root with .carry/debs (bench/actors/carry_mujoco.sh):
#   1. builds gmi.bench.actors_place and gmi.bench.actors_check_threshold (within 230 s) in $BUILD (default
#      /tmp/build-actors7, -j$JOBS, 16; MuJoCo from the carried .debs as device_place.sh);
#   2. gmi.bench.actors_place at 14 actor cores (taskset 0-14: 14 actors and the driver) for ant_v4, humanoid_v4 and anymal
#      at small batches: 2 envs per core and env group (batch 56), then 64 (batch 1792, the points measured so far),
#      then 8 (batch 224), each task at each size a step of at most 45 s (PPO on CPU actors stepping MuJoCo, PPO with
#      gmi::physics on the GPU at the same env count, the placement line), cut to the time left;
#   3. gmi.bench.actors_check_threshold at threshold 1 over those lines (points keyed by task, actor cores and batch).
# Prints, per point, the side that trained faster, the rule's choice and its ratio (gpu_sim / cpu_sim), and per task
# the consistent range (low, high] of thresholds that decide every point right. Goal: per task a point where CPU
# actors train faster (low > 0) and one where GPU simulation does (high finite), and 1 inside (low < 1 <= high).
# BUDGET_S (default 300 s from the start) bounds everything. Lines: $OUT/actors7.jsonl (the bench's and the
# check's); summary: stdout and $OUT/actors7-summary.txt; logs: $OUT/actors7/. Cores: GMI_PLACE_CPUS (default 0-14).
set -uo pipefail
start_s=$(date +%s)
budget_s=${BUDGET_S:-300}
name=actors7
export BUILD=${BUILD:-/tmp/build-actors7}
source "$(dirname "$0")/device_actors_common.sh"
cpus=${GMI_PLACE_CPUS:-0-14}
targets=(gmi.bench.actors_place gmi.bench.actors_check_threshold)
build_targets 230
echo "cores: $cpus of $(nproc --all); host CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
echo "load average before the runs: $(cut -d' ' -f1-3 /proc/loadavg) (quiet host: nothing else should run)"
bench_dir=$build/bench/actors
place=$logs/place.jsonl
: > "$place"
for envs in 2 64 8; do
  for task in ant_v4 humanoid_v4 anymal; do
    step "place_${task}_$envs" 45 taskset -c "$cpus" "$bench_dir/gmi.bench.actors_place" "$place" "$task:$envs" 0.3 14
  done
done
cat "$place" >> "$lines"
if [ -s "$place" ]; then
  "$bench_dir/gmi.bench.actors_check_threshold" "$place" "$logs/threshold.jsonl" 1 > "$logs/threshold.log" 2>&1
  echo "threshold 1 right at every point of every task: exit $? (0 yes, 1 no, 2 no data)"
  cat "$logs/threshold.jsonl" >> "$lines"
else
  echo "no placement points: see $logs/place_*.log"
  status=1
fi
python3 - "$logs/threshold.jsonl" "$device" "$git_rev" "$run_id" << 'PY' | tee "$out/actors7-summary.txt"
import json, os, sys
path, device, git, run_id = sys.argv[1:5]
lines = [json.loads(l) for l in open(path)] if os.path.exists(path) else []
print(f"actors7 on {device}, git {git}, run {run_id}: the placement rule at threshold 1 against the side that trained "
      "faster, 14 actor cores")
print(f"{'task':>9} {'envs/core/group':>15} {'batch':>6} {'CPU train':>10} {'GPU train':>10} {'faster':>6} "
      f"{'ratio':>7} {'chosen':>6} {'right':>5}")
for p in (l for l in lines if l.get("bench") == "placement_threshold_point"):
    per = p["batch"] // (2 * p["actor_cores"]) if p["batch"] else "?"
    print(f"{p['task']:>9} {per:>15} {p['batch']:>6} {p['cpu_train_steps_per_s'] / 1e3:>9.1f}K "
          f"{p['gpu_train_steps_per_s'] / 1e3:>9.1f}K {p['faster_training']:>6} {p['ratio']:>7.3f} {p['chosen']:>6} "
          f"{str(p['right']):>5}")
tasks = [l for l in lines if l.get("bench") == "placement_threshold"]
for t in tasks:
    low, high = t["consistent_low"], t["consistent_high"]
    both = low > 0 and high is not None
    inside = (low < 1 <= high) if high is not None else low < 1
    print(f"{t['task']}: {t['right']} of {t['points']} points right at 1; consistent range ({low:.3f}, "
          f"{'inf' if high is None else f'{high:.3f}'}]; bounded on both sides: {'yes' if both else 'no'}; "
          f"1 inside: {'yes' if inside else 'no'}; suggested {t['suggested']}")
if not tasks:
    print("no threshold lines (see the logs)")
PY
echo "result lines: $(wc -l < "$lines") in $lines; total $(( $(date +%s) - start_s )) s (budget $budget_s s)"
exit "$status"
