#!/usr/bin/env bash
# Issue 39 on Pendulum: SAC's learning curves beside PPO's at equal env steps and seconds, on ONE GPU
# (CUDA_VISIBLE_DEVICES may pick it; another script may share the machine's cores), from the repository root (OUT
# set), within TOTAL_SECONDS (default 240: 4 minutes) of a cold machine including the build:
#   1. builds gmi.example.pendulum_ppo and gmi.example.pendulum_sac only (-j$JOBS, default 16) in $BUILD (default
#      /tmp/build-sac4); PPO starts once pendulum_ppo is built, while pendulum_sac may still compile
#      (bench/sac/task_build.sh);
#   2. PPO as a user runs it (gmi.example.pendulum_ppo --device gpu, its defaults: 512 envs) for ENV_STEPS env steps
#      (default 3 M, where PPO's suite curves at 1fe94ce..c74e00d are solved, about -170), seeds 1..SEEDS (default 3),
#      metrics every 0.05 s (a run takes about a second);
#   3. SAC with gmi::run's GPU defaults (gmi.example.pendulum_sac --device gpu: rl::sac_gpu_scale, 1024 envs, batch
#      4096, networks 64x64) for the same ENV_STEPS, seeds 1..SEEDS one after another, metrics every second, each cut
#      to what is left of TOTAL_SECONDS (a line says so; a seed under 20 s is skipped with a line: from a cold build
#      4 minutes may leave time for one or two; 600 runs all);
#   4. a summary (bench/sac/curve_summary.py): a row a run (env steps, seconds, env steps/s, updates/s, final mean
#      return, deterministic eval), each algorithm's final mean return over its seeds (median, min, max), PPO's median
#      final return and the env steps and seconds at which PPO first reached it, and the env steps (and seconds) at
#      which SAC's training mean return first reached it (median over the seeds that did; else SAC's best and where),
#      PPO's env steps over SAC's.
# Writes $OUT/sac.jsonl: device_humanoid_v4.sh's lines with "case":"pendulum" and "seed" on the curve points
# ({"bench":"sac_ant_curve","case":"pendulum","algo":"ppo"|"sac","config":"ppo"|"defaults","seed",...} per metrics
# line; {"bench":"sac_ant","metric":...,"median","min","max","seeds","per_seed"} per algorithm and metric over its
# seeds; {"bench":"sac_ant","metric":"env_steps_to_ppo_final","median","min","max","wall_s_to_ppo_final",
# "ppo_final_return","ppo_env_steps_to_final","ppo_wall_s_to_final","seeds","reached",...}); every line with device,
# git, run_id. Copy the lines into bench/results/sac-ant/ for bench/plot's Pendulum row. The summary also goes to
# $OUT/sac-summary.txt; logs and metrics under $OUT/sac/.
# Arguments (optional): TOTAL_SECONDS (180..1200, default 240), ENV_STEPS (500000..20000000, default 3000000), SEEDS
# (1..5, default 3).
set -uo pipefail
start_s=$(date +%s)
total_seconds=${1:-240}
env_steps=${2:-3000000}
seeds=${3:-3}
source "$(dirname "$0")/script_start.sh"
need_int device_pendulum "total seconds" "$total_seconds" 180 1200
need_int device_pendulum "env steps" "$env_steps" 500000 20000000
need_int device_pendulum seeds "$seeds" 1 5
deadline_s=$((start_s + total_seconds))
sac_script_start /tmp/build-sac4

# The build may take what the time limit leaves one SAC run of 20 s with its start and evaluation (35 s) and the
# configure step (some seconds).
start_task_build $((total_seconds - 60)) device_pendulum pendulum
echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-unset}; device: $device; $env_steps env steps a run"

# PPO's seeds: about a second of training each (capped at 60 s), beside SAC's build.
log_interval=0.05
for seed in $(seq 1 "$seeds"); do
  task_run "ppo.seed$seed" task_ppo/gmi.example.pendulum_ppo 60 30 --max-env-steps "$env_steps"
done
kill -0 "$build_pid" 2>/dev/null && echo "== waiting for pendulum_sac's build"
task_build_done
# SAC's seeds one after another, each cut to what is left (its start and its 8 evaluation episodes take some
# seconds besides).
log_interval=1
for seed in $(seq 1 "$seeds"); do
  secs=$((deadline_s - $(date +%s) - 35))
  if ((secs < 20)); then
    echo "device_pendulum: SAC seed $seed skipped: ${secs} s left" >&2
    continue
  fi
  echo "device_pendulum: SAC seed $seed gets up to ${secs} s (the step limit $env_steps may end it sooner)"
  task_run "defaults.seed$seed" pendulum_sac/gmi.example.pendulum_sac "$secs" 35 --sac-eval-episodes 8 \
    --max-env-steps "$env_steps"
done

python3 "$root/bench/sac/curve_summary.py" "$logs" "$lines" "$common" defaults pendulum device_pendulum 2>&1 |
  tee "$out/sac-summary.txt" || status=1
echo "== result lines: $lines ($(( $(date +%s) - start_s )) s in all; copy into bench/results/sac-ant/)"
exit "$status"
