#!/usr/bin/env bash
# GPU check of issue 36's one training loop (branch oneloop), one call on one H100/H200, under 9 minutes:
# bench/pipeline/gpu_check_shape.sh with this change's targets and tests:
#   - builds the runtime and pipeline tests, the Cartpole PPO, APPO (split) and serving examples;
#   - runs the runtime tests (the context's allreduce now comm::ip_allreduce), the pipeline tests, and the
#     examples' cases that go through pipeline/train_loop.hpp: one GMI (utilization, checkpoint), colocated groups
#     over threads and processes (mps_4, none_threads_4, graph, eager with host statistics, CPU-staged, diverged,
#     checkpoint/resume/restart and the kill hook), population members, and the split layout's stop reasons;
#   - with BASE_SRC and BASE_REV, the throughput comparison of compare_revisions.sh: serving 512/4096 envs,
#     one-GMI training, and colocated training over 4 MPS GMIs (COLOCATED_ARGS), REPS each (default 3).
# Writes under $OUT: gpu-tests.log, compare-revisions.jsonl (with BASE_SRC) and summary.txt.
#   git archive <base> | tar -x -C shared/base      # the baseline tree, beside this checkout
#   OUT=/tmp/out BASE_SRC=shared/base BASE_REV=<base> bench/pipeline/gpu_check_oneloop.sh
# What it should show: "100% tests passed" (or only skips), and every "x the baseline" line at 0.98 or above.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export CHECK_NAME=gpu_check_oneloop
export CHECK_TARGETS="gmi.test.runtime gmi.test.pipeline gmi.example.cartpole_ppo gmi.example.cartpole_appo gmi.example.cartpole_serving"
export CHECK_TESTS='^(runtime\.|pipeline\.|example\.cartpole_serving\.gpu|example\.cartpole_ppo\.(smoke|diverged_stops|diverged_saves_nothing|gpu\.(one_process_utilization|none_threads_4|mps_4|graph_mps_4|eager_mps_4|cpu_staged_mps_4|cpu_staged_green_context_4|none_processes_1|diverged_mps_4|checkpoint_save_4|checkpoint_resume_is_exact|restart_processes_kill_rank2|kill_without_restart|sweep_4_green_context|sweep_one_member_diverges|updates_end_alike))|example\.cartpole_appo\.gpu\.(diverged|learner_graph_off))'
export CHECK_TEST_SECONDS=${CHECK_TEST_SECONDS:-150}
export COLOCATED_ARGS=${COLOCATED_ARGS:---partition mps --gmis-per-gpu 4}
exec "$here/gpu_check_shape.sh"
