#!/usr/bin/env bash
# Issue 39 on Humanoid: SAC's learning curve beside PPO's at equal env steps and seconds, on ONE GPU
# (CUDA_VISIBLE_DEVICES may pick it; another script may share the machine's cores), from the repository root (OUT
# set), within TOTAL_SECONDS (default 360: 6 minutes) of a cold machine including the build:
#   1. builds gmi.example.humanoid_v4_ppo and gmi.example.humanoid_v4_sac only (-j$JOBS, default 16) in $BUILD (default
#      /tmp/build-sac2); PPO starts once humanoid_v4_ppo is built, while humanoid_v4_sac may still compile
#      (bench/sac/task_build.sh);
#   2. PPO as a user runs it (gmi.example.humanoid_v4_ppo --device gpu, its defaults) for PPO_SECONDS (default 60);
#   3. SAC with gmi::run's GPU defaults (gmi.example.humanoid_v4_sac --device gpu: rl::sac_gpu_scale, networks 256x256,
#      docs/training.md) for what is left of TOTAL_SECONDS (a line says how much; under 20 s it is skipped);
#   4. a summary (bench/sac/curve_summary.py): a table of both runs (env steps, seconds, env steps/s, updates/s,
#      final mean return, deterministic eval), PPO's final mean return and the env steps (and seconds) at which
#      SAC's training mean return first reached it (else SAC's best and where), PPO's env steps over SAC's.
# Writes $OUT/sac.jsonl: {"bench":"sac_ant_curve","case":"humanoid_v4","impl":"gmi","algo":"ppo"|"sac","config":"ppo"|
# "defaults","env_steps","wall_s","mean_return",...} per metrics line (every 2 s; eval_return on the last);
# {"bench":"sac_ant","case":"humanoid_v4","metric":"final_return"|"eval_return"|"env_steps"|"wall_s"|
# "env_steps_per_s"|"updates_per_s","median","min","max",...} per run (one run: median = min = max);
# {"bench":"sac_ant","case":"humanoid_v4","metric":"env_steps_to_ppo_final","median" (null when not reached),
# "wall_s_to_ppo_final","ppo_final_return","ppo_env_steps","ppo_wall_s","sac_best_return","sac_env_steps_at_best",
# "ppo_over_sac_env_steps",...}; every line with device, git, run_id. (The bench names are device_sacfast.sh's, so
# bench/plot draws the case beside Ant's: copy the lines into bench/results/sac-ant/.) The summary also goes to
# $OUT/sac-summary.txt; logs and metrics under $OUT/sac/.
# Arguments (optional): TOTAL_SECONDS (240..1200, default 360), PPO_SECONDS (10..200, default 60). pugixml: carry
# .carry/debs (bench/physics/carry_pugixml.sh run here first); device_common.sh unpacks it.
set -uo pipefail
start_s=$(date +%s)
total_seconds=${1:-360}
ppo_seconds=${2:-60}
source "$(dirname "$0")/script_start.sh"
need_int device_humanoid_v4 "total seconds" "$total_seconds" 240 1200
need_int device_humanoid_v4 "PPO seconds" "$ppo_seconds" 10 200
deadline_s=$((start_s + total_seconds))
sac_script_start /tmp/build-sac2

# The build may take what the time limit leaves PPO and a 20 s SAC run, their starts and evaluations.
start_task_build $((total_seconds - ppo_seconds - 110)) device_humanoid_v4 humanoid_v4
echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-unset}; device: $device"

task_run ppo task_ppo/gmi.example.humanoid_v4_ppo "$ppo_seconds" 60
kill -0 "$build_pid" 2>/dev/null && echo "== waiting for humanoid_v4_sac's build"
task_build_done
# SAC gets what is left: its start and its evaluation (8 episodes) take some seconds besides.
secs=$((deadline_s - $(date +%s) - 40))
if ((secs >= 20)); then
  echo "device_humanoid_v4: SAC gets ${secs} s (what is left of ${total_seconds} s)"
  task_run defaults pendulum_sac/gmi.example.humanoid_v4_sac "$secs" 35 --sac-eval-episodes 8
else
  echo "device_humanoid_v4: SAC skipped: ${secs} s left" >&2
  status=1
fi

python3 "$root/bench/sac/curve_summary.py" "$logs" "$lines" "$common" defaults humanoid_v4 device_humanoid_v4 2>&1 |
  tee "$out/sac-summary.txt" || status=1
echo "== result lines: $lines ($(( $(date +%s) - start_s )) s in all; copy into bench/results/sac-ant/)"
exit "$status"
