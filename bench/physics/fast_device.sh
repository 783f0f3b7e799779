#!/usr/bin/env bash
# On a GPU machine, from the repository root: the warp-per-environment physics path (batch_warp.cuh) against the
# thread-per-environment one (batch_local.cuh), in one call of under 9 minutes on a 16-core H100/H200 (about 4
# of them building):
#   1. gmi.test.physics_tasks_gpu: envs_gpu.physics_tasks.warp_per_env_follows_thread_per_env (ant, humanoid,
#      anymal: warp per env against the host stages and against thread per env, qpos and qvel) and the rest of
#      the suite;
#   2. gmi.bench.physics_tasks --compare-paths: physics-only env steps per second (an env step = the task's
#      substeps) of both paths for ant, humanoid and anymal at 4096, 16384 and 65536 envs, warp per env at 4
#      and the most warps per block that fit the shared memory.
# pugixml is not needed (the tasks' models are compiled in); where bench/physics/carry_pugixml.sh carried its
# packages (.carry/debs) they are unpacked as tasks_device.sh does, so one build folder serves both scripts.
# Result lines (JSON) go to $OUT/physics_paths.jsonl, logs to $OUT/*.log. Usage: bench/physics/fast_device.sh
set -uo pipefail
name=physics_paths
source "$(dirname "$0")/device_common.sh"

echo "== configure and build ($build)"
cmake --preset gpu -B "$build" -DGMI_BUILD_BENCHMARKS=ON > "$out/configure.log" 2>&1 ||
  { tail -20 "$out/configure.log"; exit 1; }
targets=(gmi.test.physics_tasks_gpu gmi.bench.physics_tasks)
start=$(date +%s)
timeout 300 cmake --build "$build" -j16 --target "${targets[@]}" > "$out/build.log" 2>&1 ||
  { grep -E "error|Error" "$out/build.log" | head -20; echo "build failed or timed out"; exit 1; }
echo "built in $(( $(date +%s) - start )) s: ${targets[*]}"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader

echo "== tests"
timeout 120 "$build/tests/envs_gpu/gmi.test.physics_tasks_gpu" -s > "$out/test_physics_tasks_gpu.log" 2>&1; rc=$?
grep -E "warp per env|local_batch:|worst" "$out/test_physics_tasks_gpu.log" | head -20
tail -3 "$out/test_physics_tasks_gpu.log"; [ $rc -eq 0 ] || status=1

echo "== physics-only env steps per second, thread per env against warp per env"
timeout 180 "$build/bench/physics/gmi.bench.physics_tasks" --compare-paths --run-id "$run_id" --git "$git_rev" \
  --out "$lines" --envs 4096 16384 65536 --warps-per-block 0 4 --steps 10 --warmup 2 --reps 3 \
  > "$out/bench_physics_paths.log" 2>&1 || { status=1; tail -5 "$out/bench_physics_paths.log"; }
python3 - "$lines" <<'PY'
import json, sys
try:
    rows = [json.loads(l) for l in open(sys.argv[1])]
except OSError:
    sys.exit("no result lines")
best = {}
for j in rows:
    w = j.get("warps_per_block", "")
    print(f'{j["task"]:>9} {j["num_envs"]:>6} envs {j["path"]:>15} {str(w):>2}: {j["median"]/1e6:8.3f} M env steps/s '
          f'(min {j["min"]/1e6:.3f}, max {j["max"]/1e6:.3f})')
    k = (j["task"], j["num_envs"], j["path"])
    best[k] = max(best.get(k, 0), j["median"])
for (task, n, path), v in sorted(best.items()):
    if path == "warp_per_env" and (task, n, "thread_per_env") in best:
        print(f'{task:>9} {n:>6} envs: warp per env / thread per env = {v / best[(task, n, "thread_per_env")]:.2f}')
PY
exit $status
