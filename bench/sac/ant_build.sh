# shellcheck shell=bash
# The build and runs of bench/sac/device_ant.sh and device_sacfast.sh, sourced after bench/physics/device_common.sh
# (build, out, JOBS, git_rev, run_id):
# - start_ant_build SECONDS TAG configures $build (all task examples), builds gmi.example.ant_ppo and
#   gmi.example.ant_sac in one ninja call in the background (each one translation unit, so -j16 runs two compilers)
#   and returns once ninja has logged ant_ppo as built (a line of .ninja_log newer than this call) or the build
#   ended, so PPO can start while ant_sac may still compile on a core or two; it sets device and common (the result
#   lines' device, git and run_id);
# - ant_build_done waits for the whole build once (exits 1 with its errors, TAG naming the script, when it failed);
# - ant_run LABEL BINARY SECONDS GRACE [flags] is one training run (--device gpu, seed 1, its metrics in
#   $logs/LABEL.jsonl every 2 s, a timeout of SECONDS + GRACE) with its "gmi:" lines on stdout; a failure sets
#   status=1 with a line.
start_ant_build() {
  build_seconds=$1
  build_tag=$2
  configure_build -DGMI_BUILD_ALL_TASK_EXAMPLES=ON -DGMI_HEADER_CHECK_NVCC=OFF
  build_start=$(date +%s)
  log_lines=$( (wc -l < "$build/.ninja_log") 2>/dev/null || echo 0)
  timeout "$build_seconds" cmake --build "$build" -j"$JOBS" --target gmi.example.ant_ppo gmi.example.ant_sac \
    > "$out/build.log" 2>&1 &
  build_pid=$!
  built=0
  while kill -0 "$build_pid" 2>/dev/null && ! ppo_logged; do sleep 2; done
  kill -0 "$build_pid" 2>/dev/null || ant_build_done  # the build ended (up to date, or failed)
  echo "ant_ppo ready after $(( $(date +%s) - build_start )) s"
  device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
  common=$(printf '{"device":"%s","git":"%s","run_id":"%s"}' "$device" "$git_rev" "$run_id")
}
ppo_logged() {  # whether this call's ninja logged ant_ppo's link as done (.ninja_log: start, end, mtime, output, hash)
  tail -n +$((log_lines + 1)) "$build/.ninja_log" 2>/dev/null |
    awk -F'\t' '$4 == "examples/task_ppo/gmi.example.ant_ppo" { found = 1 } END { exit !found }'
}
ant_build_done() {
  ((built)) && return 0
  wait "$build_pid" ||
    { grep -E "error|Error" "$out/build.log" | head -20; echo "$build_tag: build failed or timed out" >&2; exit 1; }
  built=1
  echo "built in $(( $(date +%s) - build_start )) s: gmi.example.ant_ppo gmi.example.ant_sac"
}
ant_run() {
  local label=$1 bin=$2 secs=$3 grace=$4
  shift 4
  echo "== $label: $secs s of training ($(( deadline_s - $(date +%s) )) s left of the time limit) $*"
  timeout $((secs + grace)) "$build/examples/$bin" --device gpu --seed 1 --max-seconds "$secs" \
    --target-return nan --log-interval 2 --quiet --metrics "$logs/$label.jsonl" "$@" > "$logs/$label.log" 2>&1 ||
    { echo "$build_tag: $label: exit $? ($(tail -1 "$logs/$label.log"))" >&2; status=1; }
  grep -h "^gmi: " "$logs/$label.log" | sed "s/^/$label: /" | head -8
}
