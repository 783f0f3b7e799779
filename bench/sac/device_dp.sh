#!/usr/bin/env bash
# Data-parallel SAC learners on one GPU, through gmi::run (examples/pendulum_sac, the off-policy layout): Pendulum with
# 1 GMI; with 4 MPS GMIs (--partition mps --gmis-per-gpu 4: each GMI its own environments and replay table,
# gradients averaged over the GMIs) once with the sums on the device (the default, --gradient-allreduce
# hierarchical: no stream wait in an update) and once through the host (cpu_staged: two stream waits an update); and
# with split roles on 4 MPS GMIs (GMI 0 learns on its device table, GMIs 1..3 act). The same envs per GMI and the
# same wall-clock budget. From the repository root with OUT set. Writes
#   $OUT/sac_dp_curves.jsonl: learning-curve points, one per progress line of a run (bench/sac/result_lines.py):
#     {"bench":"learning_curve","case":"pendulum_1gmi"|"pendulum_4mps"|"pendulum_4mps_hostsum"|"pendulum_split_4mps",
#      "impl":"gmi","algo":"sac","gmis":1|4,"allreduce":"none"|"hierarchical"|"cpu_staged","roles":"learners"|"split",
#      "env_steps":..,"wall_s":..,"mean_return":..,"device":..,"git":..,"run_id":..}
#   $OUT/sac_dp.jsonl: per run {"bench":"sac_dp","case":..,"impl":"gmi","algo":"sac","gmis":..,"metric":..,
#     "median":..,"min":..,"max":..} for env_steps_per_s and updates_per_s (the group's env steps and one learner's
#     updates per second over the run), final_return, eval_return (the deterministic policy, 16 fresh episodes),
#     env_steps and wall_s (one run each: median = min = max)
# and two ratio lines, metric updates_per_s_device_over_host_sum and env_steps_per_s_device_over_host_sum
# (pendulum_4mps over pendulum_4mps_hostsum: the device allreduce against the host sum), and the runs' logs, metrics files and the CTest log (tests.log: tests/sac_gpu with the device-sum
# and split-roles cases, the example's GPU cases with two_mps_gmis_identical_weights and two_gmis_threads_learn
# among them, tests/replay_gpu with the moved-shard and placement cases) under $OUT/sac_dp/.
# About 4 min build + 2.5 min of tests + 4 x 20 s of runs (plus MPS start-up) on 16 cores.
# Arguments (optional): seconds per run (default 20), envs per GMI (default 16).
set -euo pipefail
out=${OUT:?set OUT to the folder for results}
seconds=${1:-20}
envs=${2:-16}
[[ "$seconds" =~ ^[0-9]+$ && "$seconds" -ge 5 && "$seconds" -le 200 ]] || { echo "device_dp: seconds: got $seconds, need an integer in 5..200" >&2; exit 2; }
[[ "$envs" =~ ^[0-9]+$ && "$envs" -ge 1 && "$envs" -le 65536 ]] || { echo "device_dp: envs per GMI: got $envs, need an integer in 1..65536" >&2; exit 2; }
build=${BUILD:-/tmp/build}
logs="$out/sac_dp"
mkdir -p "$logs"
export NCCL_NVLS_ENABLE=0
cmake --preset gpu -B "$build" -DGMI_BUILD_BENCHMARKS=ON -DGMI_HEADER_CHECK_NVCC=OFF > "$logs/configure.log" 2>&1
cmake --build "$build" -j16 --target gmi.example.pendulum_sac gmi.test.sac_gpu gmi.test.sac gmi.test.replay_gpu gmi.test.replay > "$logs/build.log" 2>&1 ||
  { tail -30 "$logs/build.log"; exit 1; }
device=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
[ -n "$device" ] || { echo "device_dp: got no GPU (nvidia-smi), need one" >&2; exit 2; }
# The SAC tests first: the device tests (the device learners' bitwise checks, device sums against host sums, split
# roles among them), the example's GPU cases, the host data-parallel and split-roles tests (the host learning cases
# ran on CI), and the replay tests of shard placement (a moved shard samples the same items; the rule on the host).
ctest --test-dir "$build" \
  -R '^(sac_gpu[.]|example[.]pendulum_sac[.]gpu[.]|sac[.]data_parallel|sac[.]split_roles|replay_gpu[.]|replay[.]placement)' \
  --output-on-failure --timeout 240 \
  > "$logs/tests.log" 2>&1 || true
grep -E "tests passed|Failed|Passed|\*\*\*" "$logs/tests.log" | tail -n 30
git=${GMI_GIT_REVISION:-$(cat .carry/git-rev 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)}
run_id="$(date -u +%Y-%m-%dT%H:%M:%SZ)-$(tr 'A-Z ' 'a-z-' <<< "$device" | grep -oE 'h100|h200' | head -1)-sacdp"
bin="$build/examples/pendulum_sac/gmi.example.pendulum_sac"
# case | gmis | allreduce | roles | flags
runs="pendulum_1gmi|1|none|learners|
pendulum_4mps|4|hierarchical|learners|--partition mps --gmis-per-gpu 4 --gradient-allreduce hierarchical
pendulum_4mps_hostsum|4|cpu_staged|learners|--partition mps --gmis-per-gpu 4 --gradient-allreduce cpu_staged
pendulum_split_4mps|4|none|split|--partition mps --gmis-per-gpu 4 --split-roles"
while IFS='|' read -r case gmis allreduce roles flags; do
  rm -f "$logs/$case.jsonl"
  # shellcheck disable=SC2086  # flags are words
  timeout $((seconds + 120)) "$bin" --device gpu --seed 1 --num-envs "$envs" $flags --max-env-steps 1e9 \
    --max-seconds "$seconds" --target-return nan --log-interval 1 --quiet --metrics "$logs/$case.jsonl" \
    > "$logs/$case.log" 2>&1 || echo "device_dp: $case: exit $? ($(tail -1 "$logs/$case.log"))" >&2
  grep -h "^gmi: .* after\|deterministic policy\|SAC learners\|gradients summed\|split roles" "$logs/$case.log" |
    sed "s/^/$case: /" || true
done <<< "$runs"
common=$(printf '{"device":"%s","git":"%s","run_id":"%s"}' "$device" "$git" "$run_id")
while IFS='|' read -r case gmis allreduce roles flags; do
  python3 bench/sac/result_lines.py "$logs/$case.jsonl" "$out/sac_dp_curves.jsonl" "$out/sac_dp.jsonl" sac_dp \
    "{\"case\":\"$case\",\"impl\":\"gmi\",\"algo\":\"sac\",\"gmis\":$gmis,\"allreduce\":\"$allreduce\",\"roles\":\"$roles\"}" \
    "$common" env_steps_per_s updates_per_s final_return=mean_return eval_return env_steps wall_s ||
    echo "device_dp: $case: no result lines" >&2
done <<< "$runs"
# The device allreduce against the host sum, as ratios of the two MPS runs (one line each).
python3 - "$out/sac_dp.jsonl" "$common" <<'PY' || echo "device_dp: no ratio lines" >&2
import json, sys
path, common = sys.argv[1], json.loads(sys.argv[2])
runs = {}
for raw in open(path):
    d = json.loads(raw)
    if d.get("run_id") == common["run_id"]:
        runs[(d["case"], d["metric"])] = d["median"]
with open(path, "a") as out:
    for metric in ("updates_per_s", "env_steps_per_s"):
        dev, host = runs.get(("pendulum_4mps", metric)), runs.get(("pendulum_4mps_hostsum", metric))
        if not dev or not host:
            continue
        v = dev / host
        out.write(json.dumps({"bench": "sac_dp", "case": "pendulum_4mps", "impl": "gmi", "algo": "sac",
                              "metric": metric + "_device_over_host_sum", "median": v, "min": v, "max": v,
                              **common}) + "\n")
        print(f"device allreduce / host sum, {metric}: {v:.3g}")
PY
