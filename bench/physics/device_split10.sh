#!/usr/bin/env bash
# On ONE GPU of a GPU machine (CUDA_VISIBLE_DEVICES=N set by the caller), from the repository root, cold, within 6
# minutes with the build: the physics tasks' per-task files (tests/envs_gpu/physics_tasks_runs_<task>.cu and
# bench/physics/tasks_bench_<task>.cu, one task a translation unit) build in parallel and run as before.
#   1. builds gmi.test.physics_tasks_gpu, gmi.test.envs_gpu and gmi.bench.physics_tasks (-j${JOBS:-16}, into
#      ${BUILD:-/tmp/build-split10}) and prints the build's seconds and its slowest objects (ninja's log);
#   2. runs every case of gmi.test.physics_tasks_gpu (envs_gpu.physics_tasks.*);
#   3. gmi.bench.physics_tasks: env steps/s of the five tasks at 16384 environments (the default path, medians of 3),
#      so that each task's instantiation is seen to run;
#   4. every case of gmi.test.envs_gpu (its gpu_runs.cu now shares tests/envs_gpu/device_run.cuh with the physics
#      runs), in the time left.
# Writes $OUT/split10.jsonl (one {"bench":"build",...} line with the build's seconds and the slowest object, then the
# bench's result lines), $OUT/split10-*.log, and a summary to stdout and $OUT/split10-summary.txt: the build against
# the device scripts' build cap (240 s at -j16), the tests' counts, a rate for each task.
# Usage: CUDA_VISIBLE_DEVICES=0 OUT=/path bench/physics/device_split10.sh   (BUILD, JOBS: default 16; BUDGET_S: 340)
set -uo pipefail
name=split10
export BUILD=${BUILD:-/tmp/build-split10}
JOBS=${JOBS:-16}
# shellcheck source=bench/physics/device_common.sh
source "$(dirname "$0")/device_common.sh"
start_all=$(date +%s)
summary=$out/$name-summary.txt
left() { echo $(( ${BUDGET_S:-340} - ($(date +%s) - start_all) )); }
# A timeout of at most $1 seconds that leaves $2 seconds for the later steps (at least 15).
cap() { local l; l=$(( $(left) - $2 )); echo $(( l > $1 ? $1 : (l > 15 ? l : 15) )); }

# shellcheck disable=SC2119  # the gpu preset and benchmarks, no further cmake arguments
configure_build
targets=(gmi.test.physics_tasks_gpu gmi.test.envs_gpu gmi.bench.physics_tasks)
build_start=$(date +%s)
build_targets 240
build_s=$(( $(date +%s) - build_start ))
# The slowest objects (ninja's log: start and end in ms, output), the slowest first.
awk -F'\t' 'NR > 1 && $4 ~ /\.o$/ { printf "%.1f %s\n", ($2 - $1) / 1000, $4 }' "$build/.ninja_log" | sort -rn |
  head -8 > "$out/$name-slowest.txt"
slowest=$(head -1 "$out/$name-slowest.txt")
slowest=${slowest:-0 none}
printf '{"bench":"build","metric":"seconds","value":%s,"jobs":%s,"slowest_object_s":%s,"slowest_object":"%s",' \
  "$build_s" "${JOBS:-$(nproc)}" "${slowest%% *}" "${slowest#* }" > "$lines"
printf '"targets":"%s","device":"%s","git":"%s","run_id":"%s"}\n' "${targets[*]}" "$device" "$git_rev" "$run_id" \
  >> "$lines"

# Runs every case of tests/envs_gpu/gmi.test.$1 within $2 seconds, leaving $3; its log: $out/$name-$1.log; sets
# tests_line to doctest's summary line; a failure or a timeout sets status 1.
run_tests() {
  echo "== gmi.test.$1, every case ($(left) s left)"
  timeout "$(cap "$2" "$3")" "$build/tests/envs_gpu/gmi.test.$1" > "$out/$name-$1.log" 2>&1 ||
    { status=1; echo "gmi.test.$1 failed or ran out of time"; }
  grep -E "ERROR|FAILED" "$out/$name-$1.log" | head -10
  tests_line=$(grep -E "^\[doctest\] test cases:" "$out/$name-$1.log" | tail -1)
  echo "$tests_line"
}

run_tests physics_tasks_gpu 150 75
physics_tests=$tests_line

echo "== bench: the five tasks at 16384 environments ($(left) s left)"
timeout "$(cap 60 30)" "$build/bench/physics/gmi.bench.physics_tasks" \
  --tasks ant_v4,humanoid_v4,anymal,ant,humanoid --envs 16384 --steps 20 --warmup 5 --reps 3 \
  --run-id "$run_id" --git "$git_rev" --out "$lines" > "$out/$name-bench.log" 2>&1 ||
  { status=1; echo "bench failed or ran out of time:"; tail -5 "$out/$name-bench.log"; }

run_tests envs_gpu 60 0
envs_tests=$tests_line

{
  echo "split10 on $device at $git_rev (run $run_id)"
  echo "build: $build_s s at -j${JOBS:-$(nproc)} for ${targets[*]} (the device scripts' cap: 240 s); slowest objects:"
  sed 's/^/  /' "$out/$name-slowest.txt"
  echo "gmi.test.physics_tasks_gpu: ${physics_tests:-no summary line (see $name-physics_tasks_gpu.log)}"
  echo "gmi.test.envs_gpu: ${envs_tests:-no summary line (see $name-envs_gpu.log)}"
  echo "bench, env steps/s at 16384 (median of 3):"
  python3 - "$lines" <<'PY' 2>/dev/null || echo "  (no bench lines)"
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r.get("bench") == "physics":
        task, rate, path = r["task"], r["median"] / 1e6, r.get("path", "?")
        print(f"  {task:>15}: {rate:.2f} M ({path})")
PY
  echo "status: $status (0: every step ran and passed)"
} | tee "$summary"
exit "$status"
