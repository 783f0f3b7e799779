#!/usr/bin/env bash
# SAC and PPO side by side on one GPU, both through gmi::run (SAC: examples/pendulum_sac, the off-policy layout;
# PPO: examples/task_ppo), on Pendulum and point_reach, from the repository root with OUT set. Writes
#   $OUT/sac_pipeline_curves.jsonl: learning-curve points, one line per progress line of a run:
#     {"bench":"learning_curve","case":<task>,"impl":"gmi","algo":"sac"|"ppo","env_steps":..,"wall_s":..,
#      "mean_return":..,"device":..,"git":..,"run_id":..}
#   $OUT/sac_pipeline.jsonl: per run {"bench":"learning","case":<task>,"impl":"gmi","algo":..,"metric":..,
#     "median":..,"min":..,"max":..} for final_return, env_steps, wall_s (one run each: median = min = max), and the
#     SAC run's eval_return (its deterministic policy on 16 fresh episodes).
# and the runs' logs and metrics files under $OUT/sac_pipeline/ (tests.log: the example's CTest cases, learns_on_gpu
# among them). About 4 min build + 1.5 min of tests + 3 min of runs on 16 cores.
# SAC runs with gmi::run's GPU defaults (rl::sac_gpu_scale: 1024 envs, batch 4096, 32 updates per vector step,
# 3-step returns).
# Arguments (optional): SAC env steps per task (default 3000000), PPO seconds per task (default 40).
set -euo pipefail
out=${OUT:?set OUT to the folder for results}
sac_steps=${1:-3000000}
ppo_seconds=${2:-40}
[[ "$sac_steps" =~ ^[0-9]+$ && "$sac_steps" -ge 1000 ]] || { echo "device_pipeline: sac steps: got $sac_steps, need an integer >= 1000" >&2; exit 2; }
[[ "$ppo_seconds" =~ ^[0-9]+$ && "$ppo_seconds" -ge 1 ]] || { echo "device_pipeline: ppo seconds: got $ppo_seconds, need a positive integer" >&2; exit 2; }
build=${BUILD:-/tmp/build}
logs="$out/sac_pipeline"
mkdir -p "$logs"
export NCCL_NVLS_ENABLE=0
cmake --preset gpu -B "$build" -DGMI_BUILD_BENCHMARKS=ON -DGMI_BUILD_ALL_TASK_EXAMPLES=ON -DGMI_HEADER_CHECK_NVCC=OFF \
  > "$logs/configure.log" 2>&1
cmake --build "$build" -j16 --target gmi.example.pendulum_sac gmi.example.point_reach_sac gmi.example.pendulum_ppo \
  gmi.example.point_reach_ppo > "$logs/build.log" 2>&1 || { tail -30 "$logs/build.log"; exit 1; }
# The example's CTest cases first (host learning, refusals, and learns_on_gpu: SAC through gmi::run on this GPU).
ctest --test-dir "$build" -R '^example[.]pendulum_sac' --output-on-failure --timeout 600 > "$logs/tests.log" 2>&1 || true
grep -E "tests passed|Failed|Passed|\*\*\*" "$logs/tests.log" | tail -n 12
device=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
[ -n "$device" ] || { echo "device_pipeline: got no GPU (nvidia-smi), need one" >&2; exit 2; }
git=${GMI_GIT_REVISION:-$(cat .carry/git-rev 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)}
run_id="$(date -u +%Y-%m-%dT%H:%M:%SZ)-$(tr 'A-Z ' 'a-z-' <<< "$device" | grep -oE 'h100|h200' | head -1)-sacpipe"
ex="$build/examples"
# task | SAC flags (none: the GPU defaults) | PPO env count and step limit (the learning suite's, bench/learning/run_suite.sh)
runs="pendulum||512 5000000
point_reach||4096 20000000"
while IFS='|' read -r task sac_flags ppo; do
  read -r ppo_envs ppo_steps <<< "$ppo"
  # shellcheck disable=SC2086  # flags are words
  timeout 200 "$ex/pendulum_sac/gmi.example.${task}_sac" --device gpu --seed 1 $sac_flags --max-env-steps "$sac_steps" \
    --max-seconds 60 --target-return nan --log-interval 0.5 --quiet --metrics "$logs/sac-$task.jsonl" \
    > "$logs/sac-$task.log" 2>&1 || echo "device_pipeline: sac $task: exit $? ($(tail -1 "$logs/sac-$task.log"))" >&2
  timeout 200 "$ex/task_ppo/gmi.example.${task}_ppo" --device gpu --seed 1 --num-envs "$ppo_envs" \
    --max-env-steps "$ppo_steps" --max-seconds "$ppo_seconds" --target-return nan --log-interval 0.5 --quiet \
    --metrics "$logs/ppo-$task.jsonl" > "$logs/ppo-$task.log" 2>&1 ||
    echo "device_pipeline: ppo $task: exit $? ($(tail -1 "$logs/ppo-$task.log"))" >&2
  grep -h "^gmi: .* after\|deterministic policy" "$logs/sac-$task.log" "$logs/ppo-$task.log" | sed "s/^/$task: /" || true
done <<< "$runs"
common=$(printf '{"device":"%s","git":"%s","run_id":"%s"}' "$device" "$git" "$run_id")
for algo in sac ppo; do
  metrics="final_return=mean_return env_steps wall_s"
  [ "$algo" = sac ] && metrics="$metrics eval_return"
  for task in pendulum point_reach; do
    # shellcheck disable=SC2086  # metrics are words
    python3 bench/sac/result_lines.py "$logs/$algo-$task.jsonl" "$out/sac_pipeline_curves.jsonl" \
      "$out/sac_pipeline.jsonl" learning "{\"case\":\"$task\",\"impl\":\"gmi\",\"algo\":\"$algo\"}" "$common" \
      $metrics || echo "device_pipeline: $algo $task: no result lines" >&2
  done
done
