#!/usr/bin/env bash
# Issue 37, PPO training with the backward's input-gradient chain as one kernel (network_config::backward
# wholenet, nn/wholenet_backward.cuh: per 32-row tile dz stays on chip from layer to layer, dX = dz W by mma.sync,
# dz = dX * Act'(y) in registers; the weight gradients stay cuBLASLt) against today's default (backward auto: a
# cuBLASLt dX product and a dz pass per layer). On ONE GPU of a shared machine (CUDA_VISIBLE_DEVICES=<i>), cold,
# within 6 minutes including the build (each step's limit cut to what is left of BUDGET_S, default 345 s). From the
# repository root: builds gmi.bench.wide, gmi.test.nn_gpu and gmi.test.ppo_gpu only (-j16, into
# ${BUILD:-/tmp/build-wide10}); runs the JAX training reference first (its own limit), then the GPU tests
# (nn_gpu.lt.wholenet_backward_matches_host: the new backward against the host in double and against cuBLASLt's;
# nn_gpu.lt.paper_nets_match_host and nn_gpu.wholenet.*: the forward kernel it shares code with;
# ppo_gpu.wholenet_backward_matches_cublaslt and ppo_gpu.wholenet_training: PPO on the Ant network), then
# gmi.bench.wide: one minibatch's forward + backward alone (case backward, 8192 rows) and PPO training at 4096 envs
# in tf32 and bf16, each with --network-backward auto (today) and wholenet in the same build, kernels auto. Medians
# of 3, one run id. Writes $OUT/wide10.jsonl, $OUT/wide10-summary.txt (each training case against JAX and 2x,
# wholenet against auto per case), $OUT/wide10-tests.log and $OUT/wide10-build.log.
# Usage: OUT=/some/dir CUDA_VISIBLE_DEVICES=0 bench/wide/device_wide10.sh
set -uo pipefail
name=wide10
export BUILD=${BUILD:-/tmp/build-wide10}
start_s=$(date +%s)
budget_s=${BUDGET_S:-345}
source "$(dirname "$0")/device_common.sh"

wide_build "$(left 215 110)" gmi.bench.wide gmi.test.nn_gpu gmi.test.ppo_gpu
wide_slowest 6

# The JAX training reference first, in its own limit.
wide_reference "$(left 60 80)" --cases training --reps 3 --seconds 0.1

timeout "$(left 50 60)" ctest --test-dir "$build" \
  -R '^nn_gpu\.lt\.(wholenet_backward|paper)|^nn_gpu\.wholenet\.|^ppo_gpu\.wholenet_(backward|training)' \
  --output-on-failure --timeout 45 -V > "$out/wide10-tests.log" 2>&1
tests_rc=$?
grep -E "tests passed|Failed|\*\*\*|SKIPPED|wholenet vs cublaslt" "$out/wide10-tests.log" | sed 's/^[0-9]*: //' |
  sort | uniq -c | head -40

timeout "$(left 85 5)" "$build/bench/wide/gmi.bench.wide" --cases peak,backward,training --kernels auto \
  --training-precisions tf32,bf16 --network-backward auto,wholenet --reps 3 --seconds 0.1 \
  --out "$lines" --run-id "$run_id" --git "$rev" | cut -c1-240

python3 bench/wide/summarize.py "$lines" "$device" > "$out/wide10-summary.txt"
cat "$out/wide10-summary.txt"
echo "whole script: $(( $(date +%s) - start_s )) s of ${budget_s}; tests exit code: $tests_rc"
exit $tests_rc
