#!/usr/bin/env bash
# Issue 34's wall-clock target ("gets there at least 20x sooner"), helper speed5: on ONE GPU (CUDA_VISIBLE_DEVICES
# picks it; 16 cores), a cold machine, under 6 minutes with the build. From the repository root:
#   1. the learning suite (run_suite.sh, SUITE_CONCURRENT=1) on pendulum, ant_proxy, point_reach and quadcopter, 3
#      seeds: gmi's seeds one after another (impl gmi, as the suite runs them) and all at once on the GPU (impl
#      gmi_concurrent: --population --gmis-per-gpu 3, each member its own seed, metrics file and curves), then the
#      JAX reference (plain and normalized, seeds x 2 configurations in one vmapped program);
#   2. if time is left, a per-iteration probe: ant_proxy (1024 envs) and pendulum (512 envs), one seed, with the
#      defaults, with --collection batched, and ant_proxy with CUDA_MODULE_LOADING=EAGER (the first iteration's
#      module loading before the clock), with --log-interval 0.01 (100 synchronous loss reads a second) and with
#      each of --ppo-gradient warps and tiles (one of them the default): milliseconds an iteration and the first
#      iteration's seconds.
# Prints, per task and mode (speed_summary.py): env steps/s a run and of all seeds together, ms an iteration, the
# first curve point from the end lines' wall_curve and from the progress lines (one a --log-interval, before), and
# "sooner" both ways (target 20x); then learn_summary.py's verdicts.
# The GPU test example.cartpole_ppo.gpu.population_member_lines (each member's own end line, seed and wall_curve)
# runs between 1 and 2. Writes under $OUT: speed.jsonl (the suite's result lines, then "learning_speed" and
# "learning_iteration" lines), speed-summary.txt, learn-summary.txt, work/ (every run's metrics files and logs),
# probe/, gpu-test.log, run.log.
# Environment: SPEED_TASKS (default above, in order of priority), SEEDS (3), BUILD (/tmp/build-speed5), SUITE_JOBS
#   (16), SPEED_BUDGET_S (330: no run starts after this many seconds since the script began), PYTHON (python3 with
#   jax).
export BUILD=${BUILD:-/tmp/build-speed5}
# shellcheck source=bench/learning/device_prelude.sh
source "$(dirname "$0")/device_prelude.sh"
t0=$(date +%s)
seeds=${SEEDS:-3}
budget=${SPEED_BUDGET_S:-330}
[[ "$seeds" =~ ^[1-9][0-9]*$ ]] || { echo "device_speed: SEEDS: got $seeds, need a positive integer"; exit 2; }
[[ "$budget" =~ ^[1-9][0-9]*$ ]] || { echo "device_speed: SPEED_BUDGET_S: got $budget, need a positive integer"; exit 2; }
export SUITE_TASKS=${SPEED_TASKS:-"pendulum ant_proxy point_reach quadcopter"}
export SUITE_JOBS=${SUITE_JOBS:-16} SUITE_CONCURRENT=1 SUITE_WORK="$out/work"
unset GMI_VARIANTS
echo "device_speed: gmi's seeds one after another and at once vs the reference on: $SUITE_TASKS; $seeds seeds;" \
  "GPU ${CUDA_VISIBLE_DEVICES:-all visible}; git $GMI_GIT_REVISION"
rm -rf "$out/speed.jsonl" "$out/work" "$out/probe"
mkdir -p "$out/work" "$out/probe"
# The suite's examples and cartpole's (for the GPU test of the members' metrics files) in one parallel build;
# run_suite.sh's own build step then finds them built.
targets=(gmi.example.cartpole_ppo)
for t in $SUITE_TASKS; do targets+=("gmi.example.${t}_ppo"); done
(timeout 240 cmake --preset gpu -B "$BUILD_DIR" -DGMI_BUILD_ALL_TASK_EXAMPLES=ON > "$out/configure.log" 2>&1 &&
  timeout 240 cmake --build "$BUILD_DIR" -j"$SUITE_JOBS" --target "${targets[@]}" > "$out/build.log" 2>&1) ||
  { echo "device_speed: the build failed:"; tail -30 "$out/configure.log" "$out/build.log"; exit 1; }
echo "device_speed: built ${targets[*]} after $(( $(date +%s) - t0 )) s"
# run_suite.sh counts its budget from its start; the reference keeps 45 s of it.
export SUITE_BUDGET_S=$(( budget - ($(date +%s) - t0) - 50 )) SUITE_REFERENCE_S=45
[ "$SUITE_BUDGET_S" -gt 60 ] || { echo "device_speed: ${SUITE_BUDGET_S} s left for the suite after the build, need > 60"; exit 1; }
timeout $(( SUITE_BUDGET_S + 45 )) bash bench/learning/run_suite.sh part1 "$out/speed.jsonl" "$seeds"
status=$?
[ $status -eq 124 ] && echo "device_speed: run_suite.sh passed $(( SUITE_BUDGET_S + 45 )) s and was stopped"

# The GPU test of the population members' own metrics files (examples/cartpole_ppo/CMakeLists.txt).
if [ $(( budget - ($(date +%s) - t0) )) -ge 30 ]; then
  timeout 60 ctest --test-dir "$BUILD_DIR" -R 'example[.]cartpole_ppo[.]gpu[.]population_member_lines' --output-on-failure \
    > "$out/gpu-test.log" 2>&1 || status=1
  grep -E "tests passed|tests failed|Failed|Passed" "$out/gpu-test.log" | sed 's/^/device_speed: gpu test: /'
else
  echo "device_speed: the GPU test population_member_lines skipped (budget spent)"
fi

# The per-iteration probe: one seed a configuration, each run cut at 15 s; skipped when the budget is spent.
probe_env=()  # NAME=value words the probe's binary runs with
probe_log=0.2  # its --log-interval
probe() {  # label task envs steps [flags...]
  local label=$1 task=$2 envs=$3 steps=$4
  shift 4
  local left=$(( budget - ($(date +%s) - t0) ))
  if [ "$left" -lt 20 ]; then
    echo "device_speed: probe $label skipped ($left s of the budget left)"
    return
  fi
  timeout 15 env "${probe_env[@]}" "$BUILD_DIR/examples/task_ppo/gmi.example.${task}_ppo" --seed 1 --num-envs "$envs" --max-env-steps "$steps" \
    --target-return nan --log-interval "$probe_log" --quiet --metrics "$out/probe/$task-$label.jsonl" "$@" \
    > "$out/probe/$task-$label.log" 2>&1 || echo "device_speed: probe $task $label: exit $? ($(tail -1 "$out/probe/$task-$label.log"))"
}
probe defaults ant_proxy 1024 3e6
probe batched ant_proxy 1024 3e6 --collection batched
probe_env=(CUDA_MODULE_LOADING=EAGER)
probe eager ant_proxy 1024 3e6
probe_env=()
probe_log=0.01  # 100 loss reads a second (each waits for the queued iterations): their cost on the warm rate
probe log10ms ant_proxy 1024 3e6
probe_log=0.2
probe warps ant_proxy 1024 3e6 --ppo-gradient warps
probe tiles ant_proxy 1024 3e6 --ppo-gradient tiles
probe batched pendulum 512 2e6 --collection batched
probe defaults pendulum 512 2e6

if [ -s "$out/speed.jsonl" ]; then
  timeout 30 python3 bench/learning/learn_summary.py "$out/speed.jsonl" > "$out/learn-summary.txt" || status=1
  timeout 30 python3 bench/learning/speed_summary.py "$out/speed.jsonl" "$out/work" "$out/probe" > "$out/speed-summary.txt" ||
    status=1
  cat "$out/learn-summary.txt" >> "$out/speed-summary.txt"
  cat "$out/speed-summary.txt"
else
  echo "device_speed: no result lines in $out/speed.jsonl" | tee "$out/speed-summary.txt"
  status=1
fi
echo "device_speed: exit $status after $(( $(date +%s) - t0 )) s; lines in $out/speed.jsonl, summary in" \
  "$out/speed-summary.txt"
exit $status
