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
OUT=${OUT:?set OUT to the folder for result lines}
mkdir -p "$OUT"
BUILD=${BUILD:-/tmp/build}
rev=${GMI_GIT_REVISION:-$(cat .carry/git-rev 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)}
run_id="$(date -u +%Y-%m-%dT%H:%M:%SZ)-fused-$rev"
device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
lines="$OUT/fused.jsonl"
log="$OUT/fused-build.log"
export NCCL_NVLS_ENABLE=0

cmake --preset gpu -B "$BUILD" -DGMI_BUILD_BENCHMARKS=ON > "$log" 2>&1 || { tail -30 "$log"; exit 1; }
timeout 270 cmake --build "$BUILD" -j16 --target gmi.bench.wide gmi.test.nn_gpu gmi.test.ppo_gpu >> "$log" 2>&1 ||
  { grep -B2 -A8 "error" "$log" | head -60; exit 1; }
timeout 140 ctest --test-dir "$BUILD" -R '^nn_gpu\.(mma|lt)\.|^ppo_gpu\.(mma_kernels|gradient_paths)' \
  --output-on-failure --timeout 120 -V > "$OUT/fused-tests.log" 2>&1
tests_rc=$?
grep -E "tests passed|Failed|\*\*\*|SKIPPED|relative diff|adam n|PPO Ant|mma (tf32|bf16) epi 1 (2048|301)" "$OUT/fused-tests.log" |
  sort | uniq -c | head -60

timeout 170 "$BUILD/bench/wide/gmi.bench.wide" --cases peak,layer_gemm,adam,serving,training --kernels cublaslt,mma \
  --precisions tf32,bf16 --training-precisions tf32,bf16 --envs 4096,16384 --reps 5 --seconds 0.15 --out "$lines" \
  --run-id "$run_id" --git "$rev" | cut -c1-240
PYTHONUNBUFFERED=1 timeout 150 python3 bench/wide/jax_reference.py --reps 5 --seconds 0.15 --out "$lines" \
  --run-id "$run_id" --git "$rev" --precisions tf32,bf16 | cut -c1-200

python3 bench/wide/summarize.py "$lines" "$device" > "$OUT/fused-summary.txt"
cat "$OUT/fused-summary.txt"
echo "tests exit code: $tests_rc"
exit $tests_rc
