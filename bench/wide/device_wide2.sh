#!/usr/bin/env bash
# Issue 37, PPO training without the backward's separate bias-sum passes: the dz pass below each layer (dz = dX *
# Act'(y)) also forms the first stage of the bias gradient's column sums (network_config::fuse_dz_sums, default
# on; nn/detail/lt_column_sums.cuh), so a chunked weight gradient (bf16's default) reads no dz again, and a bf16
# cuBLASLt backward stores no fp32 dz (its products read the bf16 copy); the same bits. On ONE GPU of a shared
# machine (CUDA_VISIBLE_DEVICES=<i>), cold, within 6 minutes including the build (each step's limit cut to what is
# left of BUDGET_S, default 345 s). From the repository root: builds gmi.bench.wide, gmi.test.nn_gpu and
# gmi.test.ppo_gpu only (-j16, into ${BUILD:-/tmp/build-wide2}); runs the JAX training reference first (its own
# limit), then the GPU tests of the change (nn_gpu.lt.dz_pass_sums_match_host: the fused kernel against its host
# twin and the column-sum kernel; nn_gpu.lt.fused_dz_sums_same_bits: the backward fused and not, the same bits;
# nn_gpu.lt.paper|split: against the host; ppo_gpu.wholenet_training), then gmi.bench.wide: one minibatch's
# forward + backward alone (case backward, 8192 rows) and PPO training at 4096 envs in tf32 and bf16, each with
# --fuse-dz-sums 1 (after) and 0 (before, the same build), kernels auto, and serving at 4096 envs; then the JAX
# serving reference. Medians of 3, one run id. Writes $OUT/wide2.jsonl, $OUT/wide2-summary.txt (each case against
# JAX and 2x, fused against before, bf16 against tf32 for both), $OUT/wide2-tests.log and $OUT/wide2-build.log.
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

timeout "$(left 45 75)" ctest --test-dir "$build" \
  -R '^nn_gpu\.lt\.(dz_pass|fused_dz|paper|split)|^ppo_gpu\.wholenet_training' \
  --output-on-failure --timeout 40 -V > "$out/wide2-tests.log" 2>&1
tests_rc=$?
grep -E "tests passed|Failed|\*\*\*|SKIPPED" "$out/wide2-tests.log" | sed 's/^[0-9]*: //' | sort | uniq -c | head -30

timeout "$(left 80 20)" "$build/bench/wide/gmi.bench.wide" --cases peak,backward,training,serving --kernels auto \
  --precisions tf32,bf16 --training-precisions tf32,bf16 --envs 4096 --fuse-dz-sums 1,0 --reps 3 \
  --seconds 0.1 --out "$lines" --run-id "$run_id" --git "$rev" | cut -c1-240
wide_reference "$(left 40 3)" --cases serving --reps 3 --seconds 0.1 --precisions tf32,bf16 --envs 4096

python3 bench/wide/summarize.py "$lines" "$device" > "$out/wide2-summary.txt"
cat "$out/wide2-summary.txt"
echo "whole script: $(( $(date +%s) - start_s )) s of ${budget_s}; tests exit code: $tests_rc"
exit $tests_rc
