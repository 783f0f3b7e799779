#!/usr/bin/env bash
# Issue 37, the default layer kernels (network_config::kernels auto, rl/wide_rule.hpp's rule) and the serving step
# with the linear proxy's pre-step and U B_sub^T inside the whole-network kernel, on one GPU machine from the
# repository root (< 9 min on 16-32 cores, up to 4 of them the build): builds gmi.bench.wide, gmi.test.ppo_gpu and gmi.test.rl_gpu
# only; runs ppo_gpu.wholenet_* (wholenet against cuBLASLt in serving, now with rewards and next observations, and
# in PPO training; the default reaching both tiers) and rl_gpu.batched_* (the batched step's pre-step kernel);
# then gmi.bench.wide serving (4096 and 16384 envs) and PPO training (4096 envs) of the three networks with
# --kernels auto,cublaslt in tf32 and bf16 and the JAX reference, medians of 3, under one run id. Writes
# $OUT/default.jsonl (result lines, kernels_chosen says what auto took), $OUT/default-summary.txt (each case
# against JAX, auto against cublaslt), $OUT/default-tests.log and $OUT/default-build.log.
# Usage: OUT=/some/dir bench/wide/device_default.sh
set -uo pipefail
name=default
source "$(dirname "$0")/device_common.sh"

wide_build 240 gmi.bench.wide gmi.test.ppo_gpu gmi.test.rl_gpu
timeout 80 ctest --test-dir "$build" -R '^ppo_gpu\.wholenet_|^rl_gpu\.batched_' --output-on-failure --timeout 70 \
  -V > "$out/default-tests.log" 2>&1
tests_rc=$?
grep -E "tests passed|Failed|\*\*\*|SKIPPED|differ by" "$out/default-tests.log" | sed 's/^[0-9]*: //' | sort |
  uniq -c | head -60

timeout 130 "$build/bench/wide/gmi.bench.wide" --cases peak,serving,training --kernels auto,cublaslt \
  --precisions tf32,bf16 --training-precisions tf32,bf16 --envs 4096,16384 --reps 3 --seconds 0.1 --out "$lines" \
  --run-id "$run_id" --git "$rev" | cut -c1-240
wide_reference 80 --reps 3 --seconds 0.1 --precisions tf32,bf16

python3 bench/wide/summarize.py "$lines" "$device" > "$out/default-summary.txt"
cat "$out/default-summary.txt"
echo "tests exit code: $tests_rc"
exit $tests_rc
