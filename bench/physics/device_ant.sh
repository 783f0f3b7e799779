#!/usr/bin/env bash
# On ONE GPU of a GPU machine (CUDA_VISIBLE_DEVICES=N set by the caller), from the repository root, cold, in about 5
# minutes with the build (-j16; every step has a timeout, the whole stays under 6; the steps:
# bench/physics/isaac_task_device.sh): ant (issue 35's ant: Isaac Gym's observation and reward, an env step of
# 1/60 s in 2 physics steps; include/gmi/envs/ant.hpp) on the GPU:
#   1. gmi.test.physics_tasks_gpu's ant cases (envs_gpu.physics_tasks.*<gmi::envs::ant>: host and device
#      step by step, the warp layouts against the thread layout, shared slices, the staged path, the rule, the env
#      driver's warp path against its thread path);
#   2. gmi.bench.physics_tasks: env steps/s of ant and ant_v4 (physics + observation + reward + auto-reset, random
#      actions, the default path) at 16384 and 65536 environments, medians of 3; each line carries the task's
#      control_dt, physics_dt and physics_substeps;
#   3. PPO on ant as a user runs it (gmi.example.ant_ppo: gmi::run's default PPO, NUM_ENVS environments,
#      default 16384, seed 1, --max-seconds 60 or the time left): the return curve's first and last points.
# Result lines (JSON) go to $OUT/ant.jsonl (bench "physics" lines of gmi.bench.physics_tasks; one
# {"bench":"physics_learning","task":"ant",...,"first":[env steps, mean return],"last":[...],"curve":[...]}),
# logs to $OUT/ant-*.log, and a summary (bench/physics/task_summary.py) to stdout and $OUT/ant-summary.txt:
# each rate against issue 35's 15 M env steps/s and against ant_v4's at the same count in this run (also in simulated
# seconds per second).
# Usage: CUDA_VISIBLE_DEVICES=0 OUT=/path bench/physics/device_ant.sh   (BUILD: default /tmp/build-phys9; JOBS:
#        default 16; BUDGET_S: default 340; NUM_ENVS: default 16384)
set -uo pipefail
name=ant ref=ant_v4 target=15e6
BUILD=${BUILD:-/tmp/build-phys9}
budget=340 build_cap=230 test_cap=90 test_keep=120 bench_cap=60 bench_keep=80 bench_steps=40 ppo_max=60 ppo_keep=30
ppo_extra=()
# shellcheck source=bench/physics/isaac_task_device.sh
source "$(dirname "$0")/isaac_task_device.sh"
