#!/usr/bin/env bash
# Issue 34, helper learn10: on ONE GPU (CUDA_VISIBLE_DEVICES picks it; another script's GPU work may run beside it),
# a cold machine, one call of about LEARN_BUDGET_S seconds with the build: gmi's defaults (impl "gmi") against
# --value-coef 2 alone (gmi_vc2) and the candidate (docs/learning.md "spring_chain's late decline (helper learn10)"),
# 3 seeds each at the suite's env steps and env counts, a task's runs all at once (SUITE_PARALLEL_RUNS=1), and the JAX
# reference PPO (plain and normalized) beside them while the budget lasts:
#   gmi_vc2       --value-coef 2
#   gmi_vc2cv05   --value-coef 2 --clip-value true --value-clip 0.5   (rl_games' clipped value loss, 2.5x its range)
# (the other candidate built, --advantage-window 16, adds 3 runs a task: LEARN_VARIANTS="...;vc2aw16|--value-coef 2
# --advantage-window 16"). Beside the suite, ppo_gpu.advantage_window.matches_host (its own small binary).
# Usage (repository root, OUT set): bash bench/learning/device_learn10.sh
# Writes under $OUT: learn10.jsonl (run_suite.sh's result lines), learn10-summary.txt (learn_summary.py: a line a task
# and impl, median (min to max) against the better reference less 5%, "meets" or "NOT met", "vs gmi", the proxies'
# evaluation gap against 1.10 and against the defaults'; then a line a task and impl with the seed-median curve's
# best point and its last: the late decline; first the GPU test's verdict), learn10-gpu-test.txt, configure.log,
# build.log, run.log.
# Environment: LEARN_TASKS (default below: the tasks where --value-coef 2 lost or that must not lose, spring_chain
#   first; run_suite.sh skips what does not fit from the end), LEARN_VARIANTS ("label|flags;..." replace the two
#   above), SEEDS (3), BUILD (/tmp/build, configured with -DGMI_BUILD_ALL_TASK_EXAMPLES=ON), SUITE_JOBS (16),
#   LEARN_PREBUILT=1 (skip the configure and the build: $BUILD was built beforehand, e.g. for several instances on
#   a multi-GPU machine, one a GPU), LEARN_BUDGET_S (330: no gmi task starts after LEARN_BUDGET_S - SUITE_REFERENCE_S seconds from the script's start,
#   the build included), SUITE_REFERENCE_S (20), PYTHON (python3 with jax), LEARN_REFERENCE_FROM (result lines of an
#   earlier run, e.g. device_learn9.sh's learn9.jsonl: its reference lines stand in for a task whose reference did
#   not fit this run's budget; the summary names the run_id it used).
export BUILD=${BUILD:-/tmp/build}
# shellcheck source=bench/learning/device_prelude.sh
source "$(dirname "$0")/device_prelude.sh"
t0=$(date +%s)
tasks=${LEARN_TASKS:-"spring_chain point_reach pendulum cartpole quadcopter franka_cabinet_proxy"}
variants=${LEARN_VARIANTS:-"vc2|--value-coef 2;vc2cv05|--value-coef 2 --clip-value true --value-clip 0.5"}
seeds=${SEEDS:-3}
budget=${LEARN_BUDGET_S:-330}
jobs=${SUITE_JOBS:-16}
refs=${SUITE_REFERENCE_S:-20}
for v in seeds budget jobs refs; do
  if ! [[ "${!v}" =~ ^[1-9][0-9]*$ ]]; then echo "device_learn10: $v: got ${!v}, need a positive integer"; exit 2; fi
done
echo "device_learn10: gmi (defaults) vs $variants vs the reference on: $tasks; $seeds seeds;" \
  "GPU ${CUDA_VISIBLE_DEVICES:-all visible}; $jobs build jobs; git $GMI_GIT_REVISION"
rm -f "$out/learn10.jsonl" "$out/learn10-summary.txt" "$out/learn10-gpu-test.txt"

# One configure and one build: the tasks' examples and the GPU test of --advantage-window.
targets=(gmi.test.ppo_gpu_advwin)
for t in $tasks; do targets+=("gmi.example.${t}_ppo"); done
# ninja -k 0: a failing test target does not stop the examples (run_suite.sh names any example that is missing).
if [ "${LEARN_PREBUILT:-0}" = 1 ]; then
  echo "device_learn10: LEARN_PREBUILT=1: $BUILD_DIR is used as built (several instances share it, one a GPU)"
elif ! timeout 60 cmake --preset gpu -B "$BUILD_DIR" -DGMI_BUILD_ALL_TASK_EXAMPLES=ON > "$out/configure.log" 2>&1; then
  echo "device_learn10: the configure failed:"
  tail -30 "$out/configure.log"
  exit 1
fi
[ "${LEARN_PREBUILT:-0}" = 1 ] ||
  timeout 300 cmake --build "$BUILD_DIR" -j"$jobs" --target "${targets[@]}" -- -k 0 > "$out/build.log" 2>&1 ||
  { echo "device_learn10: the build failed (what was built is used):"; grep -m5 -E 'error|FAILED' "$out/build.log"; }
echo "device_learn10: built in $(( $(date +%s) - t0 )) s"
# The GPU test beside the suite (a few seconds of GPU work; it ends well before the suite does).
test_bin="$BUILD_DIR/tests/ppo_gpu/gmi.test.ppo_gpu_advwin"
if [ -x "$test_bin" ]; then
  timeout 150 "$test_bin" > "$out/learn10-gpu-test.txt" 2>&1 &
  test_pid=$!
else
  echo "device_learn10: $test_bin was not built" > "$out/learn10-gpu-test.txt"
  test_pid=
fi

# The suite in the time left: run_suite.sh counts its budget from its own start.
left=$(( budget - ($(date +%s) - t0) ))
status=0
if [ "$left" -le "$refs" ]; then
  echo "device_learn10: only $left s left of LEARN_BUDGET_S=$budget after the build: no suite run"
  status=1
else
  SUITE_TASKS=$tasks GMI_VARIANTS=$variants SUITE_PARALLEL_RUNS=1 SUITE_BUDGET_S=$left SUITE_REFERENCE_S=$refs \
    timeout $(( left + 60 )) bash bench/learning/run_suite.sh "$BUILD_DIR" "$out/learn10.jsonl" "$seeds"
  status=$?
  [ $status -eq 124 ] && echo "device_learn10: run_suite.sh passed $(( left + 60 )) s and was stopped"
fi
test_status=1
[ -n "$test_pid" ] && { wait "$test_pid"; test_status=$?; }
echo "device_learn10: ppo_gpu.advantage_window.matches_host: exit $test_status ($(grep -m1 -E 'test cases:|not built' \
  "$out/learn10-gpu-test.txt" || echo 'no doctest line'))"
if [ -s "$out/learn10.jsonl" ]; then
  inputs=("$out/learn10.jsonl")
  if [ -n "${LEARN_REFERENCE_FROM:-}" ]; then
    # Only the earlier run's reference lines, and only for tasks this run has none of.
    timeout 30 python3 - "$LEARN_REFERENCE_FROM" "$out/learn10.jsonl" > "$out/reference-from.jsonl" <<'EOF'
import json, sys
old = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
new = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
have = {r["task"] for r in new if r.get("impl", "").startswith("reference")}
tasks = {r["task"] for r in new}
for r in old:
    if r.get("impl", "").startswith("reference") and r["task"] in tasks and r["task"] not in have:
        sys.stderr.write(f"device_learn10: {r['task']}: {r['impl']} {r['metric']} from run {r['run_id']}\n")
        print(json.dumps(r))
EOF
    inputs+=("$out/reference-from.jsonl")
  fi
  {
    timeout 30 python3 bench/learning/learn_summary.py "${inputs[@]}" || status=1
    # The late decline (spring_chain's at the suite's scale): each impl's seed-median curve, its best point and its last.
    timeout 30 python3 - "$out/learn10.jsonl" <<'EOF' || status=1
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    c = [p for p in r.get("curve") or [] if p[1] is not None]
    if r.get("metric") != "mean_return" or not c:
        continue
    best = max(c, key=lambda p: p[1])
    last = c[-1]
    print(f"learn10: {r['task']}: {r['impl']}: curve best {best[1]:.5g} at {best[0] / 1e6:.1f} M env steps, last "
          f"{last[1]:.5g} at {last[0] / 1e6:.1f} M ({(last[1] - best[1]) / abs(best[1]):+.1%} from the best)")
EOF
  } | { echo "learn10: ppo_gpu.advantage_window.matches_host exit $test_status"; cat; } | tee "$out/learn10-summary.txt"
else
  echo "device_learn10: no result lines in $out/learn10.jsonl" | tee "$out/learn10-summary.txt"
  status=1
fi
[ "$test_status" = 0 ] || status=1
echo "device_learn10: exit $status after $(( $(date +%s) - t0 )) s; lines in $out/learn10.jsonl, summary in" \
  "$out/learn10-summary.txt"
exit $status
