#!/usr/bin/env bash
# On a GPU machine, from the repository root: builds and runs the physics tasks' GPU work (issue 35) in one call
# of under 9 minutes on a 16-core H100/H200 (about 4 of them building):
#   1. gmi.test.physics_tasks (host) and gmi.test.physics_tasks_gpu (ant_v4, humanoid_v4, anymal: device against host
#      over their first 10 env steps);
#   2. gmi.bench.physics_tasks: env steps per second (physics + observation + reward + auto-reset) of each task
#      at 4096, 16384 and 65536 envs through gmi::env's driver (state word-major, scratch in local memory);
#   3. physics only, the same three models in the tasks' layout (batch_local.cuh: gmi.bench.physics_tasks
#      --physics-only) and, where pugixml's packages were carried (bench/physics/carry_pugixml.sh ->
#      .carry/debs), in the element-major batch.cuh path (gmi.bench.physics), each task's substeps per launch;
#   4. PPO on ant_v4 (gmi.example.ant_v4_ppo, 4096 envs, 20 M env steps or 110 s) with --metrics, and its return curve.
# Result lines (JSON) go to $OUT/physics_tasks.jsonl, logs to $OUT/*.log. Usage: bench/physics/tasks_device.sh
set -uo pipefail
name=physics_tasks
source "$(dirname "$0")/device_common.sh"

configure_build -DGMI_BUILD_ALL_TASK_EXAMPLES=ON
targets=(gmi.test.physics_tasks gmi.test.physics_tasks_gpu gmi.bench.physics_tasks gmi.example.ant_v4_ppo)
grep -E "^pugixml_DIR:PATH=" "$build/CMakeCache.txt" | grep -vq NOTFOUND && targets+=(gmi.bench.physics)
build_targets 300

echo "== tests"
timeout 120 "$build/tests/envs/gmi.test.physics_tasks" > "$out/test_physics_tasks.log" 2>&1; rc=$?
tail -3 "$out/test_physics_tasks.log"; [ $rc -eq 0 ] || status=1
timeout 180 "$build/tests/envs_gpu/gmi.test.physics_tasks_gpu" -s > "$out/test_physics_tasks_gpu.log" 2>&1; rc=$?
grep -E "MESSAGE|worst|ERROR|SKIPPED" -A1 "$out/test_physics_tasks_gpu.log" | grep -v "^--$" | head -20
tail -3 "$out/test_physics_tasks_gpu.log"; [ $rc -eq 0 ] || status=1

echo "== env-step throughput through gmi::env (steps/s)"
timeout 150 "$build/bench/physics/gmi.bench.physics_tasks" --run-id "$run_id" --git "$git_rev" --out "$lines" \
  --envs 4096 16384 65536 --steps 10 --reps 3 --warmup 2 > "$out/bench_physics_tasks.log" 2>&1 || status=1
python3 - "$lines" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    j = json.loads(l)
    if j.get("physics_only") is False:
        print(f'{j["task"]:>9} {j["num_envs"]:>6} envs: {j["median"]/1e6:8.3f} M env steps/s (min {j["min"]/1e6:.3f}, max {j["max"]/1e6:.3f})')
PY

echo "== physics only, the same models in two layouts (steps_per_s counts physics steps; shown per env step)"
# batch_local.cuh (the tasks' layout: local scratch) and, where pugixml was carried, batch.cuh (element-major
# global arrays), each with the task's substeps per launch and the same fixed controls.
timeout 90 "$build/bench/physics/gmi.bench.physics_tasks" --physics-only --run-id "$run_id" --git "$git_rev" \
  --out "$lines" --envs 4096 16384 65536 --steps 4 --warmup 1 --reps 3 > "$out/bench_physics_local.log" 2>&1 || status=1
if [ -x "$build/bench/physics/gmi.bench.physics" ]; then
  for spec in "ant_v4:5" "humanoid_v4:5" "anymal:4"; do
    timeout 90 "$build/bench/physics/gmi.bench.physics" --run-id "$run_id" --git "$git_rev" --out "$lines" \
      --model-dir include/gmi/physics/builtin --models "${spec%%:*}" --substeps "${spec##*:}" --steps 4 --warmup 1 \
      --reps 3 --envs 4096 16384 65536 >> "$out/bench_physics_batch.log" 2>&1 || status=1
  done
else
  echo "(no pugixml carried: batch.cuh is not measured; run bench/physics/carry_pugixml.sh first)"
fi
python3 - "$lines" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    j = json.loads(l)
    if j.get("physics_only") is True:
        s = j["steps_per_rep"] // 4
        print(f'{j["task"]:>9} {j["num_envs"]:>6} envs, {j["layout"]}: {j["median"]/s/1e6:8.3f} M env-equivalent steps/s ({s} physics steps each)')
PY

echo "== PPO on ant_v4: 4096 envs, 20 M env steps or 110 s"
timeout 150 "$build/examples/task_ppo/gmi.example.ant_v4_ppo" --device gpu --num-envs 4096 --max-env-steps 20000000 \
  --max-seconds 110 --log-interval 10 --metrics "$out/ant_v4_ppo_metrics.jsonl" > "$out/ant_v4_ppo.log" 2>&1 || status=1
tail -5 "$out/ant_v4_ppo.log"
python3 - "$out/ant_v4_ppo_metrics.jsonl" <<'PY'
import json, sys
try:
    rows = [json.loads(l) for l in open(sys.argv[1])]
except OSError:
    sys.exit("no metrics file")
rows = [j for j in rows if j.get("curve")]
if not rows:
    sys.exit("no curve in the metrics")
j = rows[-1]
c = j["curve"]
step = max(1, len(c) // 25)
print("return curve (env steps, mean episode return), every %d-th of %d points:" % (step, len(c)))
for p in c[::step] + ([c[-1]] if (len(c) - 1) % step else []):
    print(f"  {p[0]:>12.0f} {p[1]:10.2f}")
print("final mean return", j.get("mean_return"), "train samples/s", j.get("train_samples_per_s"))
PY
exit $status
