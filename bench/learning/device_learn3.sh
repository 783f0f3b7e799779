#!/usr/bin/env bash
# Issue 34, helper learn6: on ONE GPU (CUDA_VISIBLE_DEVICES picks it), a cold machine, under 6 minutes with the build:
# gmi's defaults (impl "gmi") against the candidate defaults of docs/learning.md "A symlog value head (helper
# learn6)": the value head predicting symlog(return) with out-of-phase episode starts (impl "gmi_symlog_random":
# --value-symlog true --random-episode-start true; LEARN_VARIANTS adds "symlog|--value-symlog true" to separate the
# two where time allows: each variant costs 3 runs a task), and the
# JAX reference PPO (plain and normalized) at the suite's env steps and env counts, 3 seeds, on the three tasks below
# the reference (quadcopter, point_reach, spring_chain), the franka and anymal proxies, cartpole and pendulum (in
# that order: run_suite.sh skips from the end what does not fit the budget).
# It is device_learn.sh (the build, run_suite.sh part mode, learn_summary.py) with these tasks, variants and seeds.
# From the repository root; writes under $OUT: learn.jsonl (the suite's result lines; bench/plot reads them from
# bench/results/learning-suite/ and its variant table picks up the gmi_* impls), learn-summary.txt (a line a task
# and impl: its median against the better reference less 5%, "meets" or "NOT met"; the proxies' optimum gap
# against 1.10) and run.log.
# Environment: LEARN_TASKS, LEARN_VARIANTS ("label|flags;..."), SEEDS (3), BUILD (/tmp/build-learn6),
#   SUITE_BUDGET_S (290), SUITE_REFERENCE_S (60), SUITE_JOBS (16), PYTHON (python3 with jax): as device_learn.sh.
set -uo pipefail
export BUILD=${BUILD:-/tmp/build-learn6}
export LEARN_TASKS=${LEARN_TASKS:-"quadcopter point_reach spring_chain franka_cabinet_proxy anymal_proxy cartpole pendulum"}
export LEARN_VARIANTS=${LEARN_VARIANTS:-"symlog_random|--value-symlog true --random-episode-start true"}
export SEEDS=${SEEDS:-3}
exec bash "$(dirname "$0")/device_learn.sh"
