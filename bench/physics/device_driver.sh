#!/usr/bin/env bash
# On a GPU machine, from the repository root: the env driver's two device paths for the physics tasks (env_batch
# over exec::cuda, what PPO training and serving step: a thread per environment, or a warp per environment through
# rl/physics_env_step.cuh), in one call of under 9 minutes on a 16-core H100/H200 (about 4 of them building):
#   1. gmi.test.physics_tasks (host): the path rule, its overrides and the tasks' split step;
#   2. gmi.test.physics_tasks_gpu: envs_gpu.physics_tasks.env_driver_warp_path_follows_thread_path (ant_v4, humanoid_v4,
#      anymal: the warp-driven env batch against the thread-driven one, one env step at a time from the same
#      states) and the rest of the suite (host against device, batch_warp.cuh against batch_local.cuh);
#   3. gmi.bench.physics_tasks --driver-paths: env steps per second (physics + observation + reward + auto-reset,
#      random actions) through env_batch with each path, ant_v4, humanoid_v4 and anymal at 4096 and 16384 environments;
#      every line carries the path that ran ("path") and the one the rule picks ("chosen").
# pugixml is not needed (the tasks' models are compiled in); where bench/physics/carry_pugixml.sh carried its
# packages (.carry/debs) they are unpacked as tasks_device.sh does, so one build folder serves all three scripts.
#   4. only with TRAIN=1 (about 3 more minutes: one more large translation unit, two short runs): PPO on the ant_v4
#      (gmi.example.ant_v4_ppo, 4096 envs, 2 M env steps) by default (batched collection, the env step with a warp per
#      env where the rule picks it) and with --collection threads (the fused thread-per-env collection); its
#      "env-step", "serving" and "train samples/s" lines.
# Result lines (JSON) go to $OUT/physics_driver_paths.jsonl, logs to $OUT/*.log, a summary to stdout.
# Usage: bench/physics/device_driver.sh   or   TRAIN=1 bench/physics/device_driver.sh
set -uo pipefail
name=physics_driver_paths
source "$(dirname "$0")/device_common.sh"

train=${TRAIN:-0}
extra=()
[ "$train" = 1 ] && extra=(-DGMI_BUILD_ALL_TASK_EXAMPLES=ON)
configure_build "${extra[@]}"
targets=(gmi.test.physics_tasks gmi.test.physics_tasks_gpu gmi.bench.physics_tasks)
[ "$train" = 1 ] && targets+=(gmi.example.ant_v4_ppo)
build_targets 360

echo "== tests"
timeout 60 "$build/tests/envs/gmi.test.physics_tasks" -tc='envs.step_path.*' > "$out/test_physics_tasks_step_path.log" 2>&1 ||
  { status=1; tail -20 "$out/test_physics_tasks_step_path.log"; }
tail -2 "$out/test_physics_tasks_step_path.log"
timeout 150 "$build/tests/envs_gpu/gmi.test.physics_tasks_gpu" -s > "$out/test_physics_tasks_gpu.log" 2>&1; rc=$?
grep -E "env driver|warp per env|local_batch:|worst" "$out/test_physics_tasks_gpu.log" | head -24
tail -3 "$out/test_physics_tasks_gpu.log"; [ $rc -eq 0 ] || status=1

echo "== env steps per second through env_batch, thread per env against warp per env"
timeout 150 "$build/bench/physics/gmi.bench.physics_tasks" --driver-paths --run-id "$run_id" --git "$git_rev" \
  --out "$lines" --envs 4096 16384 --steps 20 --warmup 3 --reps 3 \
  > "$out/bench_physics_driver_paths.log" 2>&1 || { status=1; tail -5 "$out/bench_physics_driver_paths.log"; }
python3 - "$lines" <<'PY'
import json, sys
try:
    rows = [json.loads(l) for l in open(sys.argv[1])]
except OSError:
    sys.exit("no result lines")
rate = {}
for j in rows:
    print(f'{j["task"]:>9} {j["num_envs"]:>6} envs {j["path"]:>15}: {j["median"]/1e6:8.3f} M env steps/s '
          f'(min {j["min"]/1e6:.3f}, max {j["max"]/1e6:.3f}); the rule picks {j["chosen"]}')
    rate[(j["task"], j["num_envs"], j["path"])] = (j["median"], j["chosen"])
for (task, n, path), (v, chosen) in sorted(rate.items()):
    if path == "warp_per_env" and (task, n, "thread_per_env") in rate:
        t = rate[(task, n, "thread_per_env")][0]
        faster = "warp_per_env" if v > t else "thread_per_env"
        print(f'{task:>9} {n:>6} envs: warp / thread = {v / t:.2f}; faster {faster}, chosen {chosen}'
              f'{"" if faster == chosen else "  <- the rule picked the slower path"}')
PY

if [ "$train" = 1 ]; then
  echo "== PPO on the ant_v4, 4096 envs: default collection (batched, env step by the rule) and --collection threads"
  for how in default threads; do
    args=(--num-envs 4096 --max-env-steps 2000000 --log-interval 0 --metrics "$out/ant_v4_ppo_$how.jsonl")
    [ "$how" = threads ] && args+=(--collection threads)
    timeout 120 "$build/examples/task_ppo/gmi.example.ant_v4_ppo" "${args[@]}" > "$out/ant_v4_ppo_$how.log" 2>&1 ||
      { status=1; tail -5 "$out/ant_v4_ppo_$how.log"; }
    echo "-- $how"; grep -E "^gmi: (env-step|step limit)|^iter" "$out/ant_v4_ppo_$how.log" | tail -3
  done
fi
exit $status
