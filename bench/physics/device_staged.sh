#!/usr/bin/env bash
# On ONE GPU of a GPU machine (CUDA_VISIBLE_DEVICES=N set by the caller), from the repository root, cold, in about
# 4 to 5 minutes with the build (-j16; every step has a timeout, the whole stays under 6): the staged step (issue 35;
# a kernel per stage with the arrays between stages in global memory, element-major: rl/physics_staged.hpp,
# rl/physics_staged_step.cuh) checked and measured against the thread path (one kernel, a thread per environment,
# the arrays in local memory) in the same run:
#   1. registers and stack of the staged kernels (begin, stages 0-4 plain and with a shared slice, end) beside
#      physics_thread_step_kernel (cuobjdump -res-usage of the bench);
#   2. gmi.test.physics_tasks (host: rl.physics_staged.* the host twin bit-identical to the one-call step, also with
#      the stages' shared slices; physics.stage_shared.* every stage with a slice bit-identical to the plain stage);
#   3. gmi.bench.physics_tasks (env_batch: physics + observation + reward + auto-reset, random actions) of ant_v4,
#      humanoid_v4 and anymal at 16384 and 65536 environments with --physics-step threads, then staged (blocks of 64)
#      without shared slices, with auto slices (-1: the most that keeps every environment resident, 452 floats a
#      thread at 16384 and 110 at 65536 on an H200) and with slices of 63 floats; medians of 3;
#   4. gmi.test.physics_tasks_gpu's staged cases (envs_gpu.physics_tasks.staged_path_follows_the_thread_path: within
#      1e-3 of the plain thread kernel and of the host, one env step at a time from the host's states;
#      envs_gpu.physics_tasks.staged_shared_slices_follow_the_staged_path: the stages' shared slices,
#      physics/stage_shared.hpp, within 1e-3 of the staged path without and of the host, bit-identical values
#      counted) and gmi.test.physics_gpu (batch.cuh against the host, the step's stages functions of step.hpp); each
#      cut to the time left.
# Result lines (JSON) go to $OUT/physics.jsonl, logs to $OUT/staged-*.log, and a summary to stdout and
# $OUT/physics-summary.txt: each rate against issue 35's targets (ant_v4 15 M, humanoid_v4 5 M env steps/s) and the staged
# path against the thread path of this run (staged/thread) and each slice against the staged path without.
# Usage: CUDA_VISIBLE_DEVICES=0 OUT=/path bench/physics/device_staged.sh   (BUILD: default /tmp/build-physics2; JOBS:
#        default 16; BUDGET_S: default 350)
set -uo pipefail
name=physics
BUILD=${BUILD:-/tmp/build-physics2}
JOBS=${JOBS:-16}
# shellcheck source=bench/physics/device_common.sh
source "$(dirname "$0")/device_common.sh"
start_all=$(date +%s)
summary=$out/physics-summary.txt
left() { echo $(( ${BUDGET_S:-350} - ($(date +%s) - start_all) )); }  # BUDGET_S: the whole script's seconds
# A timeout of at most $1 seconds, cut to the time left (at least 10).
cap() { local l; l=$(left); echo $(( l > $1 ? $1 : (l > 10 ? l : 10) )); }

configure_build
targets=(gmi.test.physics_tasks gmi.test.physics_gpu gmi.test.physics_tasks_gpu gmi.bench.physics_tasks)
build_targets 240
bench=$build/bench/physics/gmi.bench.physics_tasks

echo "== registers and stack: the staged kernels (stage 0 positions, 1 collision, 2 forces and rows, 3 solve, 4 integration; shared: with a slice) and the thread kernel"
print_resources "$bench"

echo "== host tests ($(left) s left)"
timeout "$(cap 40)" "$build/tests/envs/gmi.test.physics_tasks" > "$out/staged-test_tasks.log" 2>&1 ||
  { status=1; grep -E "ERROR|FAILED" "$out/staged-test_tasks.log" | head -10; }
tail -2 "$out/staged-test_tasks.log"
timeout "$(cap 20)" "$build/tests/envs/gmi.test.physics_tasks" -s -tc='rl.physics_staged*,physics.stage_shared*' 2>&1 |
  grep -E "staged steps bit-identical|stages compared" | sed 's/^.*MESSAGE: //'

echo "== bench: thread per env, then staged (slices none, auto, 63), ant_v4, humanoid_v4, anymal at 16384 and 65536 environments ($(left) s left)"
for path in threads staged; do
  extra=()
  [ "$path" = staged ] && extra=(--staged-shared-reals 0 -1 63)
  timeout "$(cap 100)" "$bench" --physics-step "$path" ${extra[@]+"${extra[@]}"} --tasks ant_v4,humanoid_v4,anymal --envs 16384 65536 \
    --steps 10 --warmup 2 --reps 3 --run-id "$run_id" --git "$git_rev" --out "$lines" \
    > "$out/staged-bench-$path.log" 2>&1 || { status=1; echo "bench ($path) failed or ran out of time:"; tail -5 "$out/staged-bench-$path.log"; }
done

echo "== gmi.test.physics_tasks_gpu, the staged cases ($(left) s left)"
timeout "$(cap 150)" "$build/tests/envs_gpu/gmi.test.physics_tasks_gpu" -s -tc='*staged*' \
  > "$out/staged-test_tasks_gpu.log" 2>&1 || { status=1; echo "gmi.test.physics_tasks_gpu (staged cases) failed or ran out of time"; }
grep -E "staged path" "$out/staged-test_tasks_gpu.log" | sed 's/^.*MESSAGE: //'
grep -E "ERROR|FAILED" "$out/staged-test_tasks_gpu.log" | head -10
tail -2 "$out/staged-test_tasks_gpu.log"

echo "== gmi.test.physics_gpu ($(left) s left)"
timeout "$(cap 60)" "$build/tests/physics/gmi.test.physics_gpu" > "$out/staged-test_gpu.log" 2>&1 ||
  { status=1; tail -20 "$out/staged-test_gpu.log"; }
tail -2 "$out/staged-test_gpu.log"

python3 - "$lines" "$run_id" > "$summary" <<'PY'
import json, sys
targets = {"ant_v4": 15e6, "humanoid_v4": 5e6}
try:
    rows = [json.loads(l) for l in open(sys.argv[1])]
except OSError:
    sys.exit(print(f"no result lines in {sys.argv[1]}"))
by = {}
for j in rows:
    if j.get("run_id") == sys.argv[2]:
        asked = j.get("staged_shared_reals", 0)
        key = (("staged" if asked == 0 else f"staged, slice {'auto' if asked < 0 else asked}")
               if j["path"] == "staged_per_env" else j["path"])
        by.setdefault((j["task"], j["num_envs"]), {})[key] = j
print("env steps/s through env_batch (physics + observation + reward + auto-reset), medians of 3: thread per env and")
print("staged (a kernel per stage, blocks of 64) without shared slices, with auto slices and slices of 63 floats;")
print("against issue 35's targets, staged/thread and slice/staged of this run (slice: floats a thread got, and placed")
print("by stages 0-3)")
for (task, n), runs in sorted(by.items()):
    thread = runs.get("thread_per_env", {}).get("median")
    staged = runs.get("staged", {}).get("median")
    for key in ("thread_per_env", "staged", "staged, slice auto", "staged, slice 63"):
        j = runs.get(key)
        if not j:
            print(f"{task:>9} {n:>6} {key:>18}: missing")
            continue
        m, t = j["median"], targets.get(task)
        vs_target = f"{m / t:5.2f} of the {t / 1e6:.0f} M target" if t else "(no target)"
        ratio = f"  staged/thread {m / thread:5.2f}x" if key != "thread_per_env" and thread else ""
        if key.startswith("staged, slice") and staged:
            ratio += (f"  slice/staged {m / staged:5.2f}x (slice {j.get('staged_slice_reals')}: "
                      f"{j.get('staged_slice_floats_per_stage', [])[:4]})")
        print(f"{task:>9} {n:>6} {key:>18}: {m / 1e6:7.3f} M (min {j['min'] / 1e6:.3f}, max {j['max'] / 1e6:.3f})  "
              f"{vs_target}{ratio}")
PY
cat "$summary"
echo "== result lines: $lines, summary: $summary ($(( $(date +%s) - start_all )) s in all, status $status)"
exit $status
