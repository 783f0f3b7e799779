#!/usr/bin/env bash
# Issue 37, the own fused layer kernels (nn/fused_gemm.cuh, network_config::kernels mma) and the one-kernel Adam,
# on one GPU machine from the repository root (< 9 min on 16 cores, ~4 of them the build): builds gmi.bench.wide
# and its GPU tests (gmi.test.nn_gpu, gmi.test.ppo_gpu), runs the tests of the layers (nn_gpu.mma.*: the products
# against a host product and Adam against the host Adam; nn_gpu.lt.*: the networks with mma against cuBLASLt and
# the host) and of PPO with them (ppo_gpu.mma_kernels_match_cublaslt, the gradient paths), then gmi.bench.wide
# (peak GEMM, the 8192x512x512 layer alone, Adam, serving and training of the three networks with --kernels
# cublaslt,mma in tf32 and bf16) and the JAX reference beside it under one run id. Writes $OUT/fused.jsonl, $OUT/fused-tests.log, $OUT/fused-build.log, $OUT/fused-summary.txt.
# Usage: OUT=/some/dir bench/wide/device_fused.sh
set -uo pipefail
name=fused
source "$(dirname "$0")/device_common.sh"

wide_build 270 gmi.bench.wide gmi.test.nn_gpu gmi.test.ppo_gpu
timeout 140 ctest --test-dir "$build" -R '^nn_gpu\.(mma|lt)\.|^ppo_gpu\.(mma_kernels|gradient_paths)' \
  --output-on-failure --timeout 120 -V > "$out/fused-tests.log" 2>&1
tests_rc=$?
grep -E "tests passed|Failed|\*\*\*|SKIPPED|relative diff|adam n|PPO Ant|mma (tf32|bf16) epi 1 (2048|301)" "$out/fused-tests.log" |
  sort | uniq -c | head -60

timeout 170 "$build/bench/wide/gmi.bench.wide" --cases peak,layer_gemm,adam,serving,training --kernels cublaslt,mma \
  --precisions tf32,bf16 --training-precisions tf32,bf16 --envs 4096,16384 --reps 5 --seconds 0.15 --out "$lines" \
  --run-id "$run_id" --git "$rev" | cut -c1-240
wide_reference 150 --reps 5 --seconds 0.15 --precisions tf32,bf16

python3 bench/wide/summarize.py "$lines" "$device" > "$out/fused-summary.txt"
cat "$out/fused-summary.txt"
echo "tests exit code: $tests_rc"
exit $tests_rc
