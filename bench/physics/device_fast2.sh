#!/usr/bin/env bash
# On ONE GPU of a GPU machine (CUDA_VISIBLE_DEVICES=N beside another script on a 2-GPU machine), from the repository
# root, cold, in about 7 minutes with the build (-j16): the thread path's cuts (issue 35, physfast2) checked and
# measured against the c74e00d lines:
#   1. registers and stack of the physics kernels (cuobjdump -res-usage of the bench);
#   2. gmi.test.physics_tasks (host: the path rule at the measured points), gmi.test.physics_gpu and
#      gmi.test.physics_tasks_gpu (every layout against the host and against thread per env);
#   3. gmi.bench.physics_tasks --driver-paths: env steps per second through env_batch for ant_v4, humanoid_v4 and anymal at
#      4096, 16384 and 65536 environments, thread per env and the warp path's default layout (16 lanes, rows in
#      global slots), medians of 3;
#   4. unless MIN_BLOCKS=off: a second bench built beside the first with the thread kernel's launch bound at
#      MIN_BLOCKS (default 3) blocks of 256 per SM (GMI_PHYSICS_THREAD_MIN_BLOCKS: fewer registers, more warps),
#      thread per env only, keyed threads@mbN.
# Result lines (JSON) go to $OUT/physics_fast2.jsonl, logs to $OUT/*.log, and a table to stdout: each path's rate,
# the rule's pick, the fastest, and the same case in BEFORE (default the c74e00d lines committed under
# bench/results/physics) with after/before.
# Usage: CUDA_VISIBLE_DEVICES=0 bench/physics/device_fast2.sh   (BUILD: default /tmp/build-fast2; JOBS: default 16;
#        MIN_BLOCKS; BEFORE=files)
set -uo pipefail
name=physics_fast2
# Its own build folder (another script may build in /tmp/build beside it) and 16 jobs unless told.
BUILD=${BUILD:-/tmp/build-fast2}
JOBS=${JOBS:-16}
source "$(dirname "$0")/device_common.sh"
start_all=$(date +%s)

configure_build
targets=(gmi.test.physics_tasks gmi.test.physics_gpu gmi.test.physics_tasks_gpu gmi.bench.physics_tasks)
mb=${MIN_BLOCKS:-3}
if [ "$mb" != off ]; then
  mbbuild=$build-mb$mb
  ( cmake --preset gpu -B "$mbbuild" -DGMI_BUILD_BENCHMARKS=ON \
      -DCMAKE_CUDA_FLAGS="-DGMI_PHYSICS_THREAD_MIN_BLOCKS=$mb" &&
    timeout 270 cmake --build "$mbbuild" -j"${JOBS:-$(nproc)}" --target gmi.bench.physics_tasks ) \
    > "$out/build_mb.log" 2>&1 &
  mb_pid=$!
fi
build_targets 270

echo "== registers and stack of the physics kernels (bench binary)"
print_resources "$build/bench/physics/gmi.bench.physics_tasks"
echo "   (c74e00d: physics_thread_step_kernel ant_v4 95/22064, humanoid_v4 128/37040, anymal 125/16800;"
echo "    local_step_envs ant_v4 72/21952, humanoid_v4 90/36848, anymal 72/16592)"

echo "== tests"
timeout 40 "$build/tests/envs/gmi.test.physics_tasks" > "$out/test_physics_tasks.log" 2>&1 ||
  { status=1; tail -20 "$out/test_physics_tasks.log"; }
tail -2 "$out/test_physics_tasks.log"
timeout 40 "$build/tests/physics/gmi.test.physics_gpu" > "$out/test_physics_gpu.log" 2>&1 ||
  { status=1; tail -20 "$out/test_physics_gpu.log"; }
tail -2 "$out/test_physics_gpu.log"
timeout 110 "$build/tests/envs_gpu/gmi.test.physics_tasks_gpu" -s > "$out/test_physics_tasks_gpu.log" 2>&1; rc=$?
grep -E "lanes per env|local_batch:" "$out/test_physics_tasks_gpu.log" | sed 's/^.*MESSAGE: //' | head -30
grep -E "ERROR|FAILED" "$out/test_physics_tasks_gpu.log" | head -10
tail -3 "$out/test_physics_tasks_gpu.log"; [ $rc -eq 0 ] || status=1

echo "== env steps per second through env_batch: thread per env and the warp path (16 lanes, rows global)"
timeout 100 "$build/bench/physics/gmi.bench.physics_tasks" --driver-paths --tile-lanes 16 --solver-rows global \
  --run-id "$run_id" --git "$git_rev" --out "$lines" --envs 4096 16384 65536 --steps 8 --warmup 2 --reps 3 \
  > "$out/bench_driver.log" 2>&1 || { status=1; tail -5 "$out/bench_driver.log"; }
if [ "$mb" != off ]; then
  if wait "$mb_pid"; then
    echo "== thread per env with the launch bound at $mb blocks per SM"
    timeout 60 "$mbbuild/bench/physics/gmi.bench.physics_tasks" --physics-step threads --run-id "$run_id-mb$mb" \
      --git "$git_rev" --out "$out/physics_fast2_mb.jsonl" --envs 4096 16384 65536 --steps 8 --warmup 2 --reps 3 \
      > "$out/bench_mb.log" 2>&1 || { status=1; tail -5 "$out/bench_mb.log"; }
    print_resources "$mbbuild/bench/physics/gmi.bench.physics_tasks" | grep physics_thread_step_kernel
    sed 's/^{/{"mb_build":true,/' "$out/physics_fast2_mb.jsonl" >> "$lines"
  else
    echo "the launch-bound build failed or ran out of time:"; grep -E "error" "$out/build_mb.log" | head -5
  fi
fi
before_files=${BEFORE:-bench/results/physics/2026-11-28-NVIDIA-H200-c74e00d-subwarp.jsonl}
# shellcheck disable=SC2086
python3 - "$lines" $before_files <<'PY'
import json, sys
def key_of(j):
    if j["path"] == "thread_per_env":
        return f'threads@mb{j.get("thread_min_blocks")}' if j.get("mb_build") else "threads"
    return f'{j.get("lanes")}/{j.get("solver_rows")}'
before = {}
for path in sys.argv[2:]:
    try:
        for l in open(path):
            j = json.loads(l)
            if not j.get("physics_only") and not j.get("cap_build"):
                before[(j["task"], j["num_envs"], key_of(j))] = j["median"]
    except OSError:
        print(f"no before lines in {path}")
try:
    rows = [json.loads(l) for l in open(sys.argv[1])]
except OSError:
    sys.exit(print(f"no result lines in {sys.argv[1]}"))
print(f"-- env steps/s (median of 3) against c74e00d ('bef'; {len(before)} cases)")
by = {}
for j in rows:
    by.setdefault((j["task"], j["num_envs"]), {})[key_of(j)] = j
for (task, n), runs in sorted(by.items()):
    chosen = runs.get("16/global", next(iter(runs.values()))).get("chosen")
    print(f"{task:>9} {n:>6} envs; the rule picks {chosen}")
    for key, j in runs.items():
        m = j["median"]
        b = before.get((task, n, key.split("@")[0]))
        r = f"bef {b / 1e6:6.3f} M, {m / b:5.2f}x" if b else "bef -"
        print(f"    {key:>14}: {m / 1e6:7.3f} M (min {j['min'] / 1e6:.3f}, max {j['max'] / 1e6:.3f})  {r}")
    best = max(runs, key=lambda k: runs[k]["median"])
    print(f"    fastest: {best}")
PY
echo "== result lines: $lines ($(( $(date +%s) - start_all )) s in all, status $status)"
exit $status
