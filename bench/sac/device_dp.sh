#!/usr/bin/env bash
# Data-parallel SAC learners on one GPU, through gmi::run (examples/pendulum_sac, the off-policy layout): Pendulum with
# 1 GMI and with 4 MPS GMIs (--partition mps --gmis-per-gpu 4: each GMI its own environments and replay table,
# gradients averaged over the GMIs), the same envs per GMI and the same wall-clock budget. From the repository root
# with OUT set. Writes
#   $OUT/sac_dp_curves.jsonl: learning-curve points, one per progress line of a run (bench/sac/result_lines.py):
#     {"bench":"learning_curve","case":"pendulum_1gmi"|"pendulum_4mps","impl":"gmi","algo":"sac","gmis":1|4,
#      "env_steps":..,"wall_s":..,"mean_return":..,"device":..,"git":..,"run_id":..}
#   $OUT/sac_dp.jsonl: per run {"bench":"sac_dp","case":..,"impl":"gmi","algo":"sac","gmis":..,"metric":..,
#     "median":..,"min":..,"max":..} for env_steps_per_s and updates_per_s (the group's env steps and one learner's
#     updates per second over the run), final_return, eval_return (the deterministic policy, 16 fresh episodes),
#     env_steps and wall_s (one run each: median = min = max)
# and the runs' logs, metrics files and the CTest log (tests.log: tests/sac_gpu, the example's GPU cases with
# two_mps_gmis_identical_weights and two_gmis_threads_learn among them) under $OUT/sac_dp/.
# About 4 min build + 1.5 min of tests + 2 x 45 s of runs on 16 cores.
# Arguments (optional): seconds per run (default 45), envs per GMI (default 16).
set -euo pipefail
out=${OUT:?set OUT to the folder for results}
seconds=${1:-45}
envs=${2:-16}
[[ "$seconds" =~ ^[0-9]+$ && "$seconds" -ge 5 && "$seconds" -le 200 ]] || { echo "device_dp: seconds: got $seconds, need an integer in 5..200" >&2; exit 2; }
[[ "$envs" =~ ^[0-9]+$ && "$envs" -ge 1 && "$envs" -le 65536 ]] || { echo "device_dp: envs per GMI: got $envs, need an integer in 1..65536" >&2; exit 2; }
build=${BUILD:-/tmp/build}
logs="$out/sac_dp"
mkdir -p "$logs"
export NCCL_NVLS_ENABLE=0
cmake --preset gpu -B "$build" -DGMI_BUILD_BENCHMARKS=ON -DGMI_HEADER_CHECK_NVCC=OFF > "$logs/configure.log" 2>&1
cmake --build "$build" -j16 --target gmi.example.pendulum_sac gmi.test.sac_gpu gmi.test.sac > "$logs/build.log" 2>&1 ||
  { tail -30 "$logs/build.log"; exit 1; }
device=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
[ -n "$device" ] || { echo "device_dp: got no GPU (nvidia-smi), need one" >&2; exit 2; }
# The SAC tests first: the device tests (the device learners' bitwise check among them), the example's GPU cases, the
# host data-parallel and split-roles tests (the host learning cases ran on CI).
ctest --test-dir "$build" -R '^(sac_gpu[.]|example[.]pendulum_sac[.]gpu[.]|sac[.]data_parallel|sac[.]split_roles)' \
  --output-on-failure --timeout 240 \
  > "$logs/tests.log" 2>&1 || true
grep -E "tests passed|Failed|Passed|\*\*\*" "$logs/tests.log" | tail -n 30
git=${GMI_GIT_REVISION:-$(cat .carry/git-rev 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)}
run_id="$(date -u +%Y-%m-%dT%H:%M:%SZ)-$(tr 'A-Z ' 'a-z-' <<< "$device" | grep -oE 'h100|h200' | head -1)-sacdp"
bin="$build/examples/pendulum_sac/gmi.example.pendulum_sac"
# case | flags
runs="pendulum_1gmi|
pendulum_4mps|--partition mps --gmis-per-gpu 4"
while IFS='|' read -r case flags; do
  rm -f "$logs/$case.jsonl"
  # shellcheck disable=SC2086  # flags are words
  timeout $((seconds + 120)) "$bin" --device gpu --seed 1 --num-envs "$envs" $flags --max-env-steps 1e9 \
    --max-seconds "$seconds" --target-return nan --log-interval 1 --quiet --metrics "$logs/$case.jsonl" \
    > "$logs/$case.log" 2>&1 || echo "device_dp: $case: exit $? ($(tail -1 "$logs/$case.log"))" >&2
  grep -h "^gmi: .* after\|deterministic policy\|SAC learners" "$logs/$case.log" | sed "s/^/$case: /" || true
done <<< "$runs"
common=$(printf '{"device":"%s","git":"%s","run_id":"%s"}' "$device" "$git" "$run_id")
for case in pendulum_1gmi pendulum_4mps; do
  gmis=1
  [ "$case" = pendulum_4mps ] && gmis=4
  python3 bench/sac/result_lines.py "$logs/$case.jsonl" "$out/sac_dp_curves.jsonl" "$out/sac_dp.jsonl" sac_dp \
    "{\"case\":\"$case\",\"impl\":\"gmi\",\"algo\":\"sac\",\"gmis\":$gmis}" "$common" env_steps_per_s \
    updates_per_s final_return=mean_return eval_return env_steps wall_s || echo "device_dp: $case: no result lines" >&2
done
