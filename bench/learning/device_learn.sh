#!/usr/bin/env bash
# Issue 34, helper learn: on ONE GPU (CUDA_VISIBLE_DEVICES picks it; another script may share the machine's cores), a
# cold machine, under 6 minutes with the build: gmi's defaults (impl "gmi": in-phase starts, constant lr) against the
# candidate change of defaults (docs/learning.md "Out-of-phase starts with a KL-capped lr"): out-of-phase starts with
# the kl_capped lr (impl "gmi_random_kl": --random-episode-start true --lr-schedule kl_capped --kl-target 0.008), and
# the JAX reference PPO (plain and normalized) at the suite's env steps and env counts, 2 seeds, on the three tasks that
# missed the reference in phase (quadcopter, point_reach, spring_chain), the franka proxy, cartpole and the anymal
# proxy (in that order: what does not fit the budget is skipped from the end).
# From the repository root; writes under $OUT: learn.jsonl (the suite's result lines; bench/plot reads them from
# bench/results/learning-suite/), learn-summary.txt (one line a task and impl: meets or NOT met the better reference,
# the proxies' optimum gap against 1.10, the wall-clock terms of "sooner") and run.log.
# Environment: LEARN_TASKS (default below, in order of priority: run_suite.sh skips what does not fit the budget),
#   SEEDS (2), LEARN_VARIANTS ("label|flags;..." gmi configurations beside the defaults, default the candidate;
#   "random|--random-episode-start true" adds the c74e00d run's random starts), SUITE_JOBS (build jobs, default 16),
#   BUILD (/tmp/build-learn), SUITE_BUDGET_S (290: no training starts after this many seconds, the build included),
#   SUITE_REFERENCE_S (60 of them kept for the reference), PYTHON (python3 with jax).
# Its own build folder, so a script on the other GPU building in /tmp/build does not race this one.
export BUILD=${BUILD:-/tmp/build-learn}
# shellcheck source=bench/learning/device_prelude.sh
source "$(dirname "$0")/device_prelude.sh"
t0=$(date +%s)
export SUITE_TASKS=${LEARN_TASKS:-"quadcopter point_reach spring_chain franka_cabinet_proxy cartpole anymal_proxy"}
export GMI_VARIANTS=${LEARN_VARIANTS:-"random_kl|--random-episode-start true --lr-schedule kl_capped --kl-target 0.008"}
export SUITE_JOBS=${SUITE_JOBS:-16}
export SUITE_BUDGET_S=${SUITE_BUDGET_S:-290} SUITE_REFERENCE_S=${SUITE_REFERENCE_S:-60}
seeds=${SEEDS:-2}
[[ "$seeds" =~ ^[1-9][0-9]*$ ]] || { echo "device_learn: SEEDS: got $seeds, need a positive integer"; exit 2; }
[[ "$SUITE_BUDGET_S" =~ ^[1-9][0-9]*$ ]] ||
  { echo "device_learn: SUITE_BUDGET_S: got $SUITE_BUDGET_S, need a positive integer"; exit 2; }
echo "device_learn: gmi (defaults) vs ${GMI_VARIANTS} vs the reference on: $SUITE_TASKS; $seeds seeds;" \
  "GPU ${CUDA_VISIBLE_DEVICES:-all visible}; $SUITE_JOBS build jobs; git $GMI_GIT_REVISION"
rm -f "$out/learn.jsonl"
# run_suite.sh stops starting work at SUITE_BUDGET_S; the timeout is the backstop (the reference's last task and its
# evaluation finish within it).
timeout $(( SUITE_BUDGET_S + 45 )) bash bench/learning/run_suite.sh part1 "$out/learn.jsonl" "$seeds"
status=$?
[ $status -eq 124 ] && echo "device_learn: run_suite.sh passed $(( SUITE_BUDGET_S + 45 )) s and was stopped"
if [ -s "$out/learn.jsonl" ]; then
  timeout 30 python3 bench/learning/learn_summary.py "$out/learn.jsonl" | tee "$out/learn-summary.txt" || status=1
else
  echo "device_learn: no result lines in $out/learn.jsonl" | tee "$out/learn-summary.txt"
  status=1
fi
echo "device_learn: exit $status after $(( $(date +%s) - t0 )) s; lines in $out/learn.jsonl, summary in $out/learn-summary.txt"
exit $status
