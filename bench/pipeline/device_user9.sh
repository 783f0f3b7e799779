#!/usr/bin/env bash
# user9's changes on ONE GPU of a shared machine (CUDA_VISIBLE_DEVICES=<i> set by the caller, 16 cores), cold, within
# 5 minutes including the builds. From the repository root:
#   1. builds gmi.example.grid_walk (five discrete actions) into ${BUILD:-/tmp/build-user9} (gpu preset) and, as a
#      user's own project against that build tree, bench/pipeline/user9_tasks (heater: observations in the hundreds,
#      positive dense rewards; balance: a failure ends the episode, plus a time limit), -j${JOBS:-16};
#   2. trains each of the three on the GPU with the defaults for 30 s and compares the last training return and the
#      deterministic evaluation with the hand-written controller each program prints first (host threads reached
#      -3.1 / 164.5 / 292.5 against -3.08 / 186.1 / 297.3 in 120 s, 0.9-1.1 M env steps);
#   3. builds gmi.test.ppo_gpu (in the background from the start) and runs ppo_gpu.discrete.matches_host (now also
#      five actions: GPU against host on the warps, tiles and threads gradient paths).
# Writes $OUT/user9.jsonl (one line per program, one for the test) and $OUT/user9-summary.txt.
# Usage: OUT=/some/dir CUDA_VISIBLE_DEVICES=0 bench/pipeline/device_user9.sh
set -uo pipefail
out=${OUT:?set OUT to the folder for the results}
build=${BUILD:-/tmp/build-user9}
jobs=${JOBS:-16}
seconds=${SECONDS_EACH:-30}
mkdir -p "$out"
start_s=$(date +%s)
budget_s=${BUDGET_S:-290}
left() { local l=$((budget_s - ($(date +%s) - start_s))); [ "$l" -lt 1 ] && l=1; [ "$l" -lt "$1" ] && echo "$l" || echo "$1"; }
rev=${GMI_GIT_REVISION:-$(cat .carry/git-rev 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)}
run_id="$(date -u +%Y-%m-%dT%H:%M:%SZ)-user9-$rev"
device=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
summary="$out/user9-summary.txt"
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }
tasks_build="$build/user9_tasks"

b0=$(date +%s)
{ timeout "$(left 60)" cmake --preset gpu -B "$build" -DGMI_BUILD_BENCHMARKS=OFF &&
  timeout "$(left 60)" cmake -S bench/pipeline/user9_tasks -B "$tasks_build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES=90 -Dgmi_DIR="$build"; } > "$out/user9-build.log" 2>&1
configure_rc=$?
# One ninja for the example and the test binary (nine translation units), in the background; the two user
# programs (their own build folder) in the foreground. The programs train once the example is linked, while the
# test binary may still be building.
timeout "$(left 230)" cmake --build "$build" -j"$jobs" --target gmi.example.grid_walk gmi.test.ppo_gpu \
  >> "$out/user9-build.log" 2>&1 &
build_pid=$!
timeout "$(left 200)" cmake --build "$tasks_build" -j4 > "$out/user9-tasks-build.log" 2>&1
tasks_rc=$?
example="$build/examples/grid_walk/gmi.example.grid_walk"
# ninja logs a target once its command finished (the linker done with the file)
linked() { grep -qP '\texamples/grid_walk/gmi[.]example[.]grid_walk\t' "$build/.ninja_log" 2>/dev/null; }
while ! linked && kill -0 "$build_pid" 2>/dev/null; do sleep 2; done
ex_rc=$(linked && [ -x "$example" ] && echo 0 || echo 1)
say "build: configure exit $configure_rc, example exit $ex_rc, user programs exit $tasks_rc in $(( $(date +%s) - b0 )) s"

# name|binary: each prints "<name> ... <controller return> ..." first, then trains.
all_ok=true
for entry in "grid_walk|$example" "heater|$tasks_build/heater" \
             "balance|$tasks_build/balance"; do
  name=${entry%%|*}
  exe=${entry#*|}
  log="$out/user9-$name.log"
  if [ ! -x "$exe" ]; then
    say "$name: not built"
    all_ok=false
    continue
  fi
  t=$(left $((seconds + 45)))
  timeout "$t" "$exe" --device gpu --max-seconds "$seconds" --log-interval 5 --metrics "$out/user9-$name-metrics.jsonl" \
    > "$log" 2>&1
  rc=$?
  # controller: grid_walk prints "a greedy walker returns X", the others "hand-written controller X"
  ctl=$(grep -oE '(greedy walker returns|hand-written controller) -?[0-9.]+' "$log" | head -1 | grep -oE -- '-?[0-9.]+$')
  end=$(grep -E '^gmi: (solved|step limit|time limit) after' "$log" | tail -1)
  steps=$(echo "$end" | grep -oE 'after [0-9.]+[kMG]? env steps' | grep -oE '[0-9.]+[kMG]?')
  ret=$(echo "$end" | grep -oE 'mean return -?[0-9.]+' | grep -oE -- '-?[0-9.]+$')
  ev=$(grep -oE 'deterministic evaluation: mean return -?[0-9.]+' "$log" | grep -oE -- '-?[0-9.]+$')
  # within 10% of the controller's magnitude (both ways: learning past it is fine)
  good=$(awk -v c="${ctl:-nan}" -v e="${ev:-nan}" 'BEGIN { m = c < 0 ? -c : c; print (e + 0 >= c - 0.1 * m) ? "true" : "false" }')
  [ -z "$ev" ] && good=false
  [ "$good" = true ] && [ "$rc" = 0 ] || all_ok=false
  say "$name on the GPU, ${seconds} s: exit $rc, ${steps:-?} env steps, training return ${ret:-?}, deterministic ${ev:-?}, hand-written controller ${ctl:-?} (within 10%: $good)"
  printf '{"bench":"user9_task","task":"%s","run_id":"%s","git":"%s","device":"%s","seconds":%s,"exit":%s,"env_steps":"%s","train_return":%s,"eval_return":%s,"controller_return":%s,"within_10pct":%s}\n' \
    "$name" "$run_id" "$rev" "$device" "$seconds" "$rc" "${steps:-}" "${ret:-null}" "${ev:-null}" "${ctl:-null}" "$good" \
    >> "$out/user9.jsonl"
done

# The GPU twin of the five-action test (the host twin is ppo.discrete.categorical_ppo_learns_a_five_action_walk).
wait "$build_pid"
test_build_rc=$?
test_rc=-1
if [ -x "$build/tests/ppo_gpu/gmi.test.ppo_gpu" ] && [ "$(left 200)" -gt 20 ]; then
  timeout "$(left 200)" ctest --test-dir "$build" -R '^ppo_gpu\.discrete\.matches_host$' --output-on-failure \
    > "$out/user9-test.log" 2>&1
  test_rc=$?
  say "ppo_gpu.discrete.matches_host (2 and 5 actions): exit $test_rc ($(grep -E 'tests passed|tests failed' "$out/user9-test.log" | head -1))"
else
  say "ppo_gpu.discrete.matches_host: not run (test build exit $test_build_rc, $(left 200) s left; log user9-test-build.log)"
fi
printf '{"bench":"user9_test","test":"ppo_gpu.discrete.matches_host","run_id":"%s","git":"%s","device":"%s","exit":%s}\n' \
  "$run_id" "$rev" "$device" "$test_rc" >> "$out/user9.jsonl"
[ "$test_rc" = 0 ] || all_ok=false
say "ok: $all_ok; whole script $(( $(date +%s) - start_s )) s of $budget_s"
[ "$all_ok" = true ]
