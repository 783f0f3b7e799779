# shellcheck shell=bash
# The build and runs of bench/sac/device_ant_v4.sh, device_sacfast.sh, device_humanoid_v4.sh and device_pendulum.sh,
# sourced after bench/physics/device_common.sh (build, out, JOBS, git_rev, run_id):
# - start_task_build SECONDS TAG [TASK] configures $build (all task examples), builds gmi.example.TASK_ppo and
#   gmi.example.TASK_sac (TASK: ant_v4, the default, humanoid_v4 or pendulum; sets task) in one ninja call in the background
#   (each one translation unit, so -j16 runs two compilers) and returns once ninja has logged TASK_ppo as built (a line of
#   .ninja_log newer than this call) or the build ended, so PPO can start while TASK_sac may still compile; it sets
#   device and common (the result lines' device, git and run_id);
# - task_build_done waits for the whole build once (exits 1 with its errors, TAG naming the script, when it failed);
# - task_run LABEL BINARY SECONDS GRACE [flags] is one training run (--device gpu, seed $seed or 1, its metrics in
#   $logs/LABEL.jsonl every $log_interval or 2 s, a timeout of SECONDS + GRACE) with its "gmi:" lines on stdout; a
#   failure sets status=1 with a line.
start_task_build() {
  build_seconds=$1
  build_tag=$2
  task=${3:-ant_v4}
  [[ "$task" == ant_v4 || "$task" == humanoid_v4 || "$task" == pendulum ]] ||
    { echo "$build_tag: task: got $task, need ant_v4, humanoid_v4 or pendulum" >&2; exit 2; }
  configure_build -DGMI_BUILD_ALL_TASK_EXAMPLES=ON -DGMI_HEADER_CHECK_NVCC=OFF
  build_start=$(date +%s)
  log_lines=$( (wc -l < "$build/.ninja_log") 2>/dev/null || echo 0)
  timeout "$build_seconds" cmake --build "$build" -j"$JOBS" --target "gmi.example.${task}_ppo" \
    "gmi.example.${task}_sac" > "$out/build.log" 2>&1 &
  build_pid=$!
  built=0
  while kill -0 "$build_pid" 2>/dev/null && ! ppo_logged; do sleep 2; done
  kill -0 "$build_pid" 2>/dev/null || task_build_done  # the build ended (up to date, or failed)
  echo "${task}_ppo ready after $(( $(date +%s) - build_start )) s"
  device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
  common=$(printf '{"device":"%s","git":"%s","run_id":"%s"}' "$device" "$git_rev" "$run_id")
}
ppo_logged() {  # whether this call's ninja logged TASK_ppo's link as done (.ninja_log: start, end, mtime, output, hash)
  tail -n +$((log_lines + 1)) "$build/.ninja_log" 2>/dev/null |
    awk -F'\t' -v o="examples/task_ppo/gmi.example.${task}_ppo" '$4 == o { found = 1 } END { exit !found }'
}
task_build_done() {
  ((built)) && return 0
  wait "$build_pid" ||
    { grep -E "error|Error" "$out/build.log" | head -20; echo "$build_tag: build failed or timed out" >&2; exit 1; }
  built=1
  echo "built in $(( $(date +%s) - build_start )) s: gmi.example.${task}_ppo gmi.example.${task}_sac"
}
task_run() {
  local label=$1 bin=$2 secs=$3 grace=$4
  shift 4
  echo "== $label: $secs s of training ($(( deadline_s - $(date +%s) )) s left of the time limit) $*"
  timeout $((secs + grace)) "$build/examples/$bin" --device gpu --seed "${seed:-1}" --max-seconds "$secs" \
    --target-return nan --log-interval "${log_interval:-2}" --quiet --metrics "$logs/$label.jsonl" "$@" \
    > "$logs/$label.log" 2>&1 ||
    { echo "$build_tag: $label: exit $? ($(tail -1 "$logs/$label.log"))" >&2; status=1; }
  grep -h "^gmi: " "$logs/$label.log" | sed "s/^/$label: /" | head -8
}
