#!/usr/bin/env bash
# Issue 37, bf16 training without the backward's conversion passes: the backward's weight gradients read the bf16
# layer inputs that the forward kept (network_config::keep_bf16_inputs, default on; the whole-network kernel of
# PPO's minibatch writes them too) instead of converting the fp32 activation record per layer. On ONE GPU of a
# shared machine (CUDA_VISIBLE_DEVICES=<i>), cold, within 6 minutes including the build (each step's limit cut to
# what is left of BUDGET_S, default 345 s). From the repository root: builds gmi.bench.wide, gmi.test.nn_gpu and
# gmi.test.ppo_gpu only (-j16, into ${BUILD:-/tmp/build-wide2}); runs the JAX training reference first (its own
# limit), then the GPU tests of the change (nn_gpu.lt.*: a backward on the kept inputs gives the converted path's
# bits; nn_gpu.wholenet.matches_host: the kernel's bf16 record gives the same gradients as converting its fp32
# record; ppo_gpu.wholenet_*: PPO with wholenet against cublaslt), then gmi.bench.wide: one minibatch's forward +
# backward alone (case backward, 8192 rows) and PPO training at 4096 envs in tf32 and bf16, bf16 with
# --keep-inputs16 1 (after) and 0 (before, the same build), kernels auto, and serving at 4096 envs; then the JAX
# serving reference. Medians of 3, one run id. Writes $OUT/wide2.jsonl, $OUT/wide2-summary.txt (each case against
# JAX and 2x, kept against converted, bf16 against tf32), $OUT/wide2-tests.log and $OUT/wide2-build.log.
# Usage: OUT=/some/dir CUDA_VISIBLE_DEVICES=0 bench/wide/device_wide2.sh
set -uo pipefail
name=wide2
export BUILD=${BUILD:-/tmp/build-wide2}
start_s=$(date +%s)
budget_s=${BUDGET_S:-345}
source "$(dirname "$0")/device_common.sh"

wide_build "$(left 215 120)" gmi.bench.wide gmi.test.nn_gpu gmi.test.ppo_gpu
wide_slowest 6

# The JAX training reference first, in its own limit (it once ran out of time behind serving).
wide_reference "$(left 60 70)" --cases training --reps 3 --seconds 0.1

timeout "$(left 45 55)" ctest --test-dir "$build" \
  -R '^nn_gpu\.lt\.(paper|odd|split)|^nn_gpu\.wholenet\.matches_host|^ppo_gpu\.wholenet_training' \
  --output-on-failure --timeout 40 -V > "$out/wide2-tests.log" 2>&1
tests_rc=$?
grep -E "tests passed|Failed|\*\*\*|SKIPPED" "$out/wide2-tests.log" | sed 's/^[0-9]*: //' | sort | uniq -c | head -30

timeout "$(left 60 20)" "$build/bench/wide/gmi.bench.wide" --cases peak,backward,training,serving --kernels auto \
  --precisions tf32,bf16 --training-precisions tf32,bf16 --envs 4096 --keep-inputs16 1,0 --reps 3 \
  --seconds 0.1 --out "$lines" --run-id "$run_id" --git "$rev" | cut -c1-240
wide_reference "$(left 40 3)" --cases serving --reps 3 --seconds 0.1 --precisions tf32,bf16 --envs 4096

python3 bench/wide/summarize.py "$lines" "$device" > "$out/wide2-summary.txt"
cat "$out/wide2-summary.txt"
echo "whole script: $(( $(date +%s) - start_s )) s of ${budget_s}; tests exit code: $tests_rc"
exit $tests_rc
