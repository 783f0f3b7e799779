#!/usr/bin/env bash
# On ONE GPU of a GPU machine (CUDA_VISIBLE_DEVICES=N set by the caller), from the repository root, cold, within 6
# minutes with the build (-j16; every step has a timeout; BUDGET_S, default 345, is the whole script's): humanoid
# (issue 35's humanoid: Isaac Gym's 21-dof Humanoid, obs 108, act 21, an env step of 1/60 s in 2 physics steps;
# include/gmi/envs/humanoid.hpp) on the GPU (the steps: bench/physics/isaac_task_device.sh):
#   1. gmi.test.physics_tasks_gpu's humanoid cases (envs_gpu.physics_tasks.*<gmi::envs::humanoid>: host and
#      device step by step, the warp layouts against the thread layout, shared slices, the staged path, the rule, the
#      env driver's warp path against its thread path), at most 60 s (the build: at most 240 s; each later step gets
#      less when the build took longer);
#   2. gmi.bench.physics_tasks: env steps/s of humanoid and humanoid_v4 (physics + observation + reward +
#      auto-reset, random actions, the default path) at 16384 and 65536 environments, medians of 3; each line carries
#      the task's control_dt, physics_dt and physics_substeps; at most 50 s;
#   3. PPO on humanoid as a user runs it (gmi.example.humanoid_ppo: gmi::run's default PPO, NUM_ENVS
#      environments, default 16384, seed 1, --max-seconds 90 or the time left, an env-step limit far beyond it): the
#      return curve's first and last points and the deterministic evaluation at the end.
# Result lines (JSON) go to $OUT/humanoid.jsonl (bench "physics" lines of gmi.bench.physics_tasks; one
# {"bench":"physics_learning","task":"humanoid",...,"first":[env steps, mean return],"last":[...],...}), logs
# to $OUT/humanoid-*.log, and a summary (bench/physics/task_summary.py) to stdout and
# $OUT/humanoid-summary.txt: each rate against issue 35's 5 M env steps/s and against humanoid_v4's at the same
# count in this run (also in simulated seconds per second: humanoid_v4's env step is 15 ms, humanoid's 16.7 ms).
# Usage: CUDA_VISIBLE_DEVICES=0 OUT=/path bench/physics/device_humanoid.sh   (BUILD: default
#        /tmp/build-phys10; JOBS: default 16; BUDGET_S: default 345; NUM_ENVS: default 16384)
set -uo pipefail
name=humanoid ref=humanoid_v4 target=5e6
BUILD=${BUILD:-/tmp/build-phys10}
budget=345 build_cap=240 test_cap=60 test_keep=110 bench_cap=50 bench_keep=60 bench_steps=30 ppo_max=90 ppo_keep=25
ppo_extra=(--max-env-steps 2000000000)
# shellcheck source=bench/physics/isaac_task_device.sh
source "$(dirname "$0")/isaac_task_device.sh"
