#!/usr/bin/env bash
# Issue 34, helper learn5: on ONE GPU (CUDA_VISIBLE_DEVICES picks it; another script may share the machine's cores), a
# cold machine, under 6 minutes with the build: gmi's defaults (impl "gmi") against the candidate changes of defaults
# (docs/learning.md "Candidates of learn5"), 3 seeds each at the suite's env steps and env counts, and the JAX
# reference PPO (plain and normalized) if it fits:
#   gmi_ent      --entropy-coef 0.01 --entropy-schedule linear   (the candidate: a bonus decaying to 0 over the run)
#   gmi_rand_ent --random-episode-start true + the same bonus     (out-of-phase starts on top: what they add on the
#                                                                   terminating tasks and cost on the proxies)
# on the tasks that missed the reference (quadcopter, point_reach, spring_chain), the proxies above 1.10x of the
# optimum (franka_cabinet_proxy, anymal_proxy), cartpole and pendulum, in that order: run_suite.sh skips from the end
# what does not fit the budget. A task's runs (3 configurations x 3 seeds) train at once (SUITE_PARALLEL_RUNS=1): returns per
# env step are as in sequence; each run's wall-clock shares the GPU, so the summary's "sooner" terms do not apply.
# bench/learning/device_learn.sh with these defaults. From the repository root; writes under $OUT: learn.jsonl (the suite's result lines, impl gmi / gmi_<label> /
# reference / reference_normalized under one run_id: bench/plot's variant table reads them from
# bench/results/learning-suite/), learn-summary.txt (a task a block: the better reference, then each gmi
# configuration's median (min to max), meets or NOT met, the proxies' optimum gap against 1.10, and the change of each
# candidate against the defaults of this run) and run.log.
# Environment: LEARN_TASKS (default above), SEEDS (3), LEARN_VARIANTS ("label|flags;..." beside the defaults, default
#   the two above), SUITE_JOBS (build jobs, default 16), BUILD (/tmp/build-learn5), SUITE_BUDGET_S (300: no training
#   starts after this many seconds, the build included), SUITE_REFERENCE_S (60 of them kept for the reference),
#   REFERENCE=0 (gmi only), PYTHON (python3 with jax).
set -uo pipefail
export BUILD=${BUILD:-/tmp/build-learn5} SEEDS=${SEEDS:-3} SUITE_PARALLEL_RUNS=1 SUITE_BUDGET_S=${SUITE_BUDGET_S:-300}
export LEARN_TASKS=${LEARN_TASKS:-"quadcopter point_reach spring_chain franka_cabinet_proxy anymal_proxy cartpole pendulum"}
export LEARN_VARIANTS=${LEARN_VARIANTS:-"ent|--entropy-coef 0.01 --entropy-schedule linear;rand_ent|--random-episode-start true --entropy-coef 0.01 --entropy-schedule linear"}
exec bash "$(dirname "$0")/device_learn.sh"
