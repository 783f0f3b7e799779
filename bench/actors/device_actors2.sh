#!/usr/bin/env bash
# Issue 38's per-core rate of MuJoCo Ant, before and after the change of this script's commit: the Ant's contacts
# as predefined pairs with MuJoCo's broadphase off and njmax bounded (actors/mujoco_pairs.hpp; the same contacts,
# the steps equal bit for bit: test actors.mujoco.pairs_step_as_dynamic_collision), against MuJoCo's dynamic
# collision and default njmax (the model as gmi loaded it before). On ONE GPU's host (CUDA_VISIBLE_DEVICES set by the caller; no GPU work here) and its 16
# cores, cold, within 6 minutes including the build, from the repository root with .carry/debs carried (MuJoCo's
# .debs: bench/actors/carry_mujoco.sh) and optionally .carry/mujoco-deepmind (carry_mujoco_deepmind.sh):
#   1. builds gmi.bench.actors_rate in $BUILD (default /tmp/build-actors, -j$JOBS, default 16);
#   2. for each MuJoCo build (Debian's; DeepMind's when carried), twice in turn "dynamic" then "pairs":
#      gmi.bench.actors_rate on include/gmi/physics/builtin/ant_v4.xml (and pairs:ant_v4.xml), 128 envs a core, at 1 and 8
#      threads (bare mj_step loop, gmi's sim, the CPU actors with and without stealing; one env step taken apart;
#      the resets, with trajectory_fnv: both collisions must give the same hash);
#   3. the summary: each steps_per_cpu_s (median over the bench's reps, then the median of the rounds) against
#      20000 env steps per CPU second and "pairs" against "dynamic" of the same build, impl and thread count.
# Every step has a timeout cut to what is left of BUDGET_S (default 330 s from the start); round 2 of a build runs
# only where 130 s are left (said so when not; not a failure). Lines (device, git, run_id, mujoco_build, round
# added): $OUT/actors.jsonl; summary: stdout and $OUT/actors-summary.txt; logs: $OUT/actors/. Cores: GMI_RATE_CPUS
# (taskset list, default 0-8: 8 stepping threads and the CPU actors' driver thread).
set -uo pipefail
start_s=$(date +%s)
budget_s=${BUDGET_S:-330}
source "$(dirname "$0")/device_actors_common.sh"
cpus=${GMI_RATE_CPUS:-0-8}
targets=(gmi.bench.actors_rate)
build_targets 200
mujoco_builds
bench=$build/bench/actors/gmi.bench.actors_rate
rate_rounds 130 60 dynamic "$model" pairs "pairs:$model"
python3 bench/actors/rate_summary.py "$lines" "$device" "$git_rev" "$run_id" "$logs" dynamic pairs actors2 | tee "$out/actors-summary.txt"
echo "total $(( $(date +%s) - start_s )) s (budget $budget_s s)"
exit "$status"
