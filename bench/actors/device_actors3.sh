#!/usr/bin/env bash
# Issue 38's per-core rate of MuJoCo Ant, before and after this script's change: mujoco::sim and the CPU actors with
# one mjData per stepping thread and each environment's state rows apart (data_layout::per_thread,
# actors/mujoco_thread_data.hpp; the same steps bit for bit: test actors.mujoco.per_thread_data_steps_as_per_env)
# against one mjData per environment (data_layout::per_env, the code before), both on the Ant with predefined pairs
# (the best of device_actors2.sh). On ONE GPU's host (CUDA_VISIBLE_DEVICES set by the caller; no GPU work here),
# cold, within 5 minutes including the build, from the repository root with .carry/debs carried (MuJoCo's .debs:
# bench/actors/carry_mujoco.sh) and optionally .carry/mujoco-deepmind (carry_mujoco_deepmind.sh):
#   1. builds gmi.bench.actors_rate in $BUILD (default /tmp/build-actors3, -j$JOBS, default 16);
#   2. for each MuJoCo build (Debian's; DeepMind's when carried), in turn "per_env" then "per_thread":
#      gmi.bench.actors_rate on pairs:per_env:include/gmi/physics/builtin/ant_v4.xml (per_thread: pairs:per_thread:...), 128
#      envs a core, at 1 and 8 threads (bare mj_step loop, gmi's sim, the CPU actors with and without stealing; the
#      profile and resets, with trajectory_fnv); round 2 of everything where 95 s are left (a round of 4 runs
#      takes about 80 s; said so when left out);
#   3. the summary: each impl's steps_per_cpu_s (median over the bench's reps, then the median of the rounds),
#      per_env against per_thread of the same build, impl and thread count, and each against 20000 env steps per CPU
#      second (bare_mj_step has one mjData per environment in both: its ratio shows the noise of the run).
# Every step has a timeout cut to what is left of BUDGET_S (default 290 s from the start). Lines (device, git, run_id,
# mujoco_build, round added; data_layout in each): $OUT/actors.jsonl; summary: stdout and $OUT/actors-summary.txt;
# logs: $OUT/actors/. Cores: GMI_RATE_CPUS (taskset list, default 0-8: 8 stepping threads and the actors' driver).
set -uo pipefail
start_s=$(date +%s)
budget_s=${BUDGET_S:-290}
export BUILD=${BUILD:-/tmp/build-actors3}
source "$(dirname "$0")/device_actors_common.sh"
cpus=${GMI_RATE_CPUS:-0-8}
targets=(gmi.bench.actors_rate)
build_targets 170
mujoco_builds
bench=$build/bench/actors/gmi.bench.actors_rate
rate_rounds 95 50 per_env "pairs:per_env:$model" per_thread "pairs:per_thread:$model"
python3 bench/actors/rate_summary.py "$lines" "$device" "$git_rev" "$run_id" "$logs" per_env per_thread actors3 | tee "$out/actors-summary.txt"
echo "total $(( $(date +%s) - start_s )) s (budget $budget_s s)"
exit "$status"
