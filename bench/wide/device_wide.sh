#!/usr/bin/env bash
# Issue 37, the weight gradients as chunked products (network_config::weight_grad_chunks), on ONE GPU of a shared
# machine (CUDA_VISIBLE_DEVICES=<i>), cold, within 6 minutes including the build (each step's limit cut to what is
# left of BUDGET_S, default 345 s). From the repository root: builds gmi.bench.wide and gmi.test.nn_gpu only (-j16,
# into ${BUILD:-/tmp/build-wide}); runs nn_gpu.lt.split_weight_grads_match (chunked against one product and the
# host, fp32 / tf32 / bf16), nn_gpu.lt.paper_nets_match_host, odd_sizes_match_host and column_sum_matches_host
# (PPO with the chunks runs in the training cases below);
# then gmi.bench.wide serving (4096 and 16384 envs, kernels auto), PPO training (4096 envs) and one minibatch's
# forward + backward alone (case backward, 8192 rows) in tf32 and bf16 with --wgrad-chunks 1,16 (1: one product
# per layer, the previous default; 16: the chunked products, the new default at bf16), and the JAX reference
# (training first, then serving), medians of 3, under one run id. Writes $OUT/wide.jsonl, $OUT/wide-summary.txt (each case against JAX and 2x,
# chunks 16 against 1 per case, bf16 against tf32), $OUT/wide-tests.log and $OUT/wide-build.log.
# Usage: OUT=/some/dir CUDA_VISIBLE_DEVICES=0 bench/wide/device_wide.sh
set -uo pipefail
name=wide
export BUILD=${BUILD:-/tmp/build-wide}
start_s=$(date +%s)
budget_s=${BUDGET_S:-345}
source "$(dirname "$0")/device_common.sh"

wide_build "$(left 200 140)" gmi.bench.wide gmi.test.nn_gpu
wide_slowest 6

timeout "$(left 75 100)" ctest --test-dir "$build" \
  -R '^nn_gpu\.lt\.(split|paper|odd|column)' \
  --output-on-failure --timeout 55 -V > "$out/wide-tests.log" 2>&1
tests_rc=$?
grep -E "tests passed|Failed|\*\*\*|SKIPPED|split weight gradients" "$out/wide-tests.log" | sed 's/^[0-9]*: //' |
  sort | uniq -c | head -40

timeout "$(left 75 40)" "$build/bench/wide/gmi.bench.wide" --cases peak,backward,training,serving --kernels auto \
  --precisions tf32,bf16 --training-precisions tf32,bf16 --envs 4096,16384 --wgrad-chunks 1,16 --reps 3 \
  --seconds 0.1 --out "$lines" --run-id "$run_id" --git "$rev" | cut -c1-240
# The JAX reference: training first, in its own limit (it ran out of time behind serving at 1fe94ce), then serving.
wide_reference "$(left 100 40)" --cases training --reps 3 --seconds 0.1
wide_reference "$(left 75 5)" --cases serving --reps 3 --seconds 0.1 --precisions tf32,bf16

python3 bench/wide/summarize.py "$lines" "$device" > "$out/wide-summary.txt"
cat "$out/wide-summary.txt"
echo "whole script: $(( $(date +%s) - start_s )) s of ${budget_s}; tests exit code: $tests_rc"
exit $tests_rc
