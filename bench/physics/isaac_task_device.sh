# shellcheck shell=bash disable=SC2154  # the variables come from the script that sources this file
# The steps of an Isaac Gym task's device script (device_ant.sh, device_humanoid.sh), sourced after the
# script sets: name (the task), ref (the task its rates are set beside), target (issue 35's env steps/s), budget (the
# default of BUDGET_S: the whole script's seconds), build_cap, test_cap and test_keep, bench_cap and bench_keep (a
# step's timeout and the seconds it leaves for the later steps), bench_steps, ppo_max and ppo_keep (training seconds
# at most, and the seconds kept for PPO's start and final evaluation), ppo_extra (an array of further PPO flags).
# On ONE GPU (CUDA_VISIBLE_DEVICES set by the caller), from a cold machine with the build:
#   1. gmi.test.physics_tasks_gpu's cases of the task (envs_gpu.physics_tasks.*<gmi::envs::$name>);
#   2. gmi.bench.physics_tasks: env steps/s of $name and $ref (the default path, random actions) at 16384 and 65536
#      environments, medians of 3, each line with the task's control_dt, physics_dt and physics_substeps;
#   3. PPO on $name as a user runs it (gmi.example.${name}_ppo, NUM_ENVS environments (default 16384), seed 1,
#      --max-seconds ppo_max or the time left): the return curve and the deterministic evaluation.
# Lines to $OUT/$name.jsonl, logs to $OUT/$name-*.log, the summary (bench/physics/task_summary.py) to stdout and
# $OUT/$name-summary.txt; exits 1 when a step failed or ran out of time.
JOBS=${JOBS:-16}
# shellcheck source=bench/physics/device_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/device_common.sh"
start_all=$(date +%s)
summary=$out/$name-summary.txt
num_envs=${NUM_ENVS:-16384}
[[ "$num_envs" =~ ^[1-9][0-9]*$ ]] || { echo "device_$name.sh: NUM_ENVS: got '$num_envs', need a positive integer"; exit 2; }
left() { echo $(( ${BUDGET_S:-$budget} - ($(date +%s) - start_all) )); }
# A timeout of at most $1 seconds that leaves $2 seconds (default 0) for the later steps (at least 15).
cap() { local l; l=$(( $(left) - ${2:-0} )); echo $(( l > $1 ? $1 : (l > 15 ? l : 15) )); }

configure_build -DGMI_BUILD_ALL_TASK_EXAMPLES=ON
targets=(gmi.test.physics_tasks_gpu gmi.bench.physics_tasks "gmi.example.${name}_ppo")
build_targets "$build_cap"
bench=$build/bench/physics/gmi.bench.physics_tasks

echo "== gmi.test.physics_tasks_gpu, the $name cases ($(left) s left)"
timeout "$(cap "$test_cap" "$test_keep")" "$build/tests/envs_gpu/gmi.test.physics_tasks_gpu" -s -tc="*<gmi::envs::$name>*" \
  > "$out/$name-test_gpu.log" 2>&1 || { status=1; echo "gmi.test.physics_tasks_gpu ($name) failed or ran out of time"; }
grep -E "MESSAGE" "$out/$name-test_gpu.log" | sed 's/^.*MESSAGE: //' | head -30
grep -E "ERROR|FAILED" "$out/$name-test_gpu.log" | head -10
tail -3 "$out/$name-test_gpu.log"

echo "== bench: $name and $ref at 16384 and 65536 environments, default path ($(left) s left)"
timeout "$(cap "$bench_cap" "$bench_keep")" "$bench" --tasks "$name,$ref" --envs 16384 65536 --steps "$bench_steps" \
  --warmup 5 --reps 3 --run-id "$run_id" --git "$git_rev" --out "$lines" > "$out/$name-bench.log" 2>&1 ||
  { status=1; echo "bench failed or ran out of time:"; tail -5 "$out/$name-bench.log"; }

# PPO: --max-seconds counts training; the start and the final evaluation come besides (ppo_keep seconds).
train_s=$(( $(left) - ppo_keep ))
(( train_s > ppo_max )) && train_s=$ppo_max
metrics=$out/$name-ppo-metrics.jsonl
if (( train_s >= 10 )); then
  echo "== PPO: gmi.example.${name}_ppo, $num_envs envs, ${train_s} s of training ($(left) s left)"
  timeout $((train_s + ppo_keep)) "$build/examples/task_ppo/gmi.example.${name}_ppo" --device gpu \
    --num-envs "$num_envs" --seed 1 --max-seconds "$train_s" "${ppo_extra[@]}" --log-interval 2 \
    --metrics "$metrics" > "$out/$name-ppo.log" 2>&1 || { status=1; tail -5 "$out/$name-ppo.log"; }
  grep -E "^gmi: .*(step limit|time limit|solved|stopped)" "$out/$name-ppo.log" | tail -2
else
  status=1
  echo "== PPO skipped: ${train_s} s left for training"
fi

python3 bench/physics/task_summary.py "$lines" "$run_id" "$metrics" "$git_rev" "${device:-unknown}" "$name" "$ref" \
  "$target" > "$summary" || status=1
cat "$summary"
echo "lines: $lines; $(( $(date +%s) - start_all )) s in all"
exit $status
