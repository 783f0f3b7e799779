#!/usr/bin/env bash
# On ONE GPU of a GPU machine (CUDA_VISIBLE_DEVICES=N set by the caller), from the repository root, cold, in about
# 4 minutes with the build (-j16; every step has a timeout, the whole stays under 6): the thread path with its hottest
# arrays in shared memory (issue 35; physics/thread_shared.hpp, rl/physics_thread_step.cuh) checked and measured
# against the plain thread path in the same run:
#   1. registers and stack of the physics kernels (cuobjdump -res-usage of the bench), the new
#      physics_thread_shared_kernel beside physics_thread_step_kernel;
#   2. gmi.test.physics_tasks (host: physics.thread_shared.* bit-identical steps for every slice),
#      gmi.test.physics_gpu and gmi.test.physics_tasks_gpu (envs_gpu.physics_tasks.thread_shared_slices_follow_the_plain_
#      thread_kernel among them);
#   3. gmi.bench.physics_tasks --driver-paths: env steps per second through env_batch (physics + observation + reward +
#      auto-reset, random actions) of ant_v4, humanoid_v4 and anymal at 16384 and 65536 environments, thread per env with
#      shared slices of $SLICES floats a thread (0: the plain kernel, the old path), the plain kernel again with its
#      carveout at the largest L1 (--thread-max-l1), then the warp path's default layout (16 lanes, rows in global
#      slots), medians of 3.
# Result lines (JSON) go to $OUT/physics.jsonl, logs to $OUT/physics-*.log, and a summary to stdout and
# $OUT/physics-summary.txt: each case's rate against the plain thread kernel of this run, against 794e70c's committed
# lines and against issue 35's targets (ant_v4 15 M, humanoid_v4 5 M env steps/s).
# Usage: CUDA_VISIBLE_DEVICES=0 OUT=/path bench/physics/device_physics.sh   (BUILD: default /tmp/build-physics; JOBS:
#        default 16; SLICES: default "0 31 63 111 151 255")
set -uo pipefail
name=physics
BUILD=${BUILD:-/tmp/build-physics}
JOBS=${JOBS:-16}
# shellcheck source=bench/physics/device_common.sh
source "$(dirname "$0")/device_common.sh"
start_all=$(date +%s)
read -r -a slices <<< "${SLICES:-0 31 63 111 151 255}"
summary=$out/physics-summary.txt
left() { echo $(( 340 - ($(date +%s) - start_all) )); }

configure_build
targets=(gmi.test.physics_tasks gmi.test.physics_gpu gmi.test.physics_tasks_gpu gmi.bench.physics_tasks)
build_targets 220

echo "== registers and stack of the physics kernels (bench binary)"
print_resources "$build/bench/physics/gmi.bench.physics_tasks"
echo "   (794e70c: physics_thread_step_kernel ant_v4 95/22064, humanoid_v4 128/37872, anymal 127/16800)"

echo "== bench: thread per env with shared slices ${slices[*]} (0: the plain kernel), the plain kernel with the largest L1, then the warp path (16 lanes, rows global)"
timeout "$(( $(left) > 150 ? 150 : ($(left) > 30 ? $(left) : 30) ))" "$build/bench/physics/gmi.bench.physics_tasks" --driver-paths \
  --thread-shared-reals "${slices[@]}" --thread-max-l1 --tile-lanes 16 --solver-rows global \
  --run-id "$run_id" --git "$git_rev" --out "$lines" --envs 16384 65536 --steps 8 --warmup 2 --reps 3 \
  > "$out/physics-bench.log" 2>&1 || { status=1; echo "bench failed or ran out of time:"; tail -5 "$out/physics-bench.log"; }

echo "== tests ($(left) s left)"
short() { local l; l=$(left); echo $(( l > 40 ? 40 : (l > 10 ? l : 10) )); }
timeout "$(short)" "$build/tests/envs/gmi.test.physics_tasks" > "$out/physics-test_tasks.log" 2>&1 ||
  { status=1; grep -E "ERROR|FAILED" "$out/physics-test_tasks.log" | head -10; }
tail -2 "$out/physics-test_tasks.log"
timeout "$(short)" "$build/tests/physics/gmi.test.physics_gpu" > "$out/physics-test_gpu.log" 2>&1 ||
  { status=1; tail -20 "$out/physics-test_gpu.log"; }
tail -2 "$out/physics-test_gpu.log"
t_gpu=$(( $(left) > 20 ? $(left) - 10 : 10 ))
timeout "$t_gpu" "$build/tests/envs_gpu/gmi.test.physics_tasks_gpu" -s > "$out/physics-test_tasks_gpu.log" 2>&1; rc=$?
grep -E "shared slice|lanes per env|local_batch:" "$out/physics-test_tasks_gpu.log" | sed 's/^.*MESSAGE: //' | head -40
grep -E "ERROR|FAILED" "$out/physics-test_tasks_gpu.log" | head -10
tail -3 "$out/physics-test_tasks_gpu.log"
[ $rc -eq 0 ] || { status=1; echo "gmi.test.physics_tasks_gpu: exit $rc (124: out of time)"; }

python3 - "$lines" bench/results/physics/2026-11-28-NVIDIA-H200-794e70c-fast2.jsonl > "$summary" <<'PY'
import json, sys
targets = {"ant_v4": 15e6, "humanoid_v4": 5e6}
before = {}
try:
    for l in open(sys.argv[2]):
        j = json.loads(l)
        before[(j["task"], j["num_envs"], j["path"])] = j["median"]
except OSError:
    print(f"no before lines in {sys.argv[2]}")
try:
    rows = [json.loads(l) for l in open(sys.argv[1])]
except OSError:
    sys.exit(print(f"no result lines in {sys.argv[1]}"))
print("env steps/s through env_batch, medians of 3: each case against the plain thread kernel of this run ('plain'),")
print("794e70c's line of the same path ('794e70c') and issue 35's target")
by = {}
for j in rows:
    if j["path"] != "thread_per_env":
        key = "warp 16/global"
    elif j.get("thread_max_l1"):
        key = "threads, slice 0, max L1"
    else:
        key = f"threads, slice {j.get('thread_shared_reals', 0)}"
    by.setdefault((j["task"], j["num_envs"]), {})[key] = j
for (task, n), runs in sorted(by.items()):
    plain = runs.get("threads, slice 0", {}).get("median")
    print(f"{task:>9} {n:>6} envs (the rule picks {next(iter(runs.values())).get('chosen')})")
    for key, j in runs.items():
        m = j["median"]
        b = before.get((task, n, j["path"]))
        vs_plain = f"{m / plain:5.2f}x plain" if plain else "plain -"
        vs_before = f"{m / b:5.2f}x 794e70c" if b else "794e70c -"
        t = targets.get(task)
        vs_target = f"{m / t:5.2f} of the target" if t else ""
        used = f" ({j['thread_shared_used']} floats used)" if j.get("thread_shared_reals") else ""
        print(f"    {key + used:>34}: {m / 1e6:7.3f} M (min {j['min'] / 1e6:.3f}, max {j['max'] / 1e6:.3f})  "
              f"{vs_plain}  {vs_before}  {vs_target}")
    best = max(runs, key=lambda k: runs[k]["median"])
    print(f"    fastest: {best}")
PY
cat "$summary"
echo "== result lines: $lines, summary: $summary ($(( $(date +%s) - start_all )) s in all, status $status)"
exit $status
