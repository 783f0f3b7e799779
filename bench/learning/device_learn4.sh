#!/usr/bin/env bash
# Issue 34, helper learn7: on ONE GPU (CUDA_VISIBLE_DEVICES picks it), a cold machine, one call of under 9.5 minutes
# with the build: gmi's defaults (impl "gmi") against the candidate defaults of docs/learning.md "Out-of-phase starts
# and the return normalizer's window (helper learn7)", 3 seeds each at the suite's env steps and env counts, a task's
# runs all at once on the GPU (SUITE_PARALLEL_RUNS=1: run_suite.sh writes "runs_at_once" in their lines), and the
# JAX reference PPO (plain and normalized) in the time left:
#   gmi_rand_w23  --random-episode-start true --value-normalizer-window 8388608   (the candidate)
#   gmi_rand_w22  --random-episode-start true --value-normalizer-window 4194304   (part a only: half the window)
#                 (out-of-phase starts with a return normalizer 4-8x longer than the default 2^20 samples, so that it
#                 spans 64-256 rollouts at the suite's env counts instead of 8-32: on host threads a window of 32
#                 rollouts under out-of-phase starts wrecked franka_cabinet_proxy, 128 did not)
# Usage: bash bench/learning/device_learn4.sh PART
#   PART a: cartpole pendulum quadcopter point_reach spring_chain franka_cabinet_proxy anymal_proxy (both candidates)
#   PART b: ball_balance ingenuity ant_proxy humanoid_proxy shadow_hand_proxy long_track sparse_reach
#           cartpole_discrete (gmi_rand_w23 only: 8 tasks x 3 configurations do not fit 9.5 minutes; the proxies
#           before the three tasks every configuration has solved, in case the budget skips from the end)
# It is device_learn.sh (the build, run_suite.sh, learn_summary.py) with these tasks, variants and budgets. From the
# repository root; writes under $OUT: learn.jsonl, learn-summary.txt (a line a task and impl: median (min to max)
# against the better reference less 5%, "meets" or "NOT met", the proxies' optimum gap of the deterministic
# evaluation against 1.10, and "vs gmi", each candidate's change against the same run's defaults) and run.log.
# Environment: LEARN_TASKS, LEARN_VARIANTS ("label|flags;..." replace the part's), SEEDS (3), BUILD
#   (/tmp/build-learn7), SUITE_BUDGET_S (470: no training starts after this many seconds, the build included),
#   SUITE_REFERENCE_S (60), SUITE_JOBS (16), PYTHON (python3 with jax): as device_learn.sh.
set -uo pipefail
part=${1:-}
rand="--random-episode-start true --value-normalizer-window"
case "$part" in
  a) tasks="cartpole pendulum quadcopter point_reach spring_chain franka_cabinet_proxy anymal_proxy"
     variants="rand_w23|$rand 8388608;rand_w22|$rand 4194304" ;;
  b) tasks="ball_balance ingenuity ant_proxy humanoid_proxy shadow_hand_proxy long_track sparse_reach cartpole_discrete"
     variants="rand_w23|$rand 8388608" ;;
  *) echo "device_learn4: PART: got '$part', need a or b"; exit 2 ;;
esac
export BUILD=${BUILD:-/tmp/build-learn7} SEEDS=${SEEDS:-3} SUITE_PARALLEL_RUNS=1
export SUITE_BUDGET_S=${SUITE_BUDGET_S:-470} SUITE_REFERENCE_S=${SUITE_REFERENCE_S:-60}
export LEARN_TASKS=${LEARN_TASKS:-$tasks} LEARN_VARIANTS=${LEARN_VARIANTS:-$variants}
exec bash "$(dirname "$0")/device_learn.sh"
