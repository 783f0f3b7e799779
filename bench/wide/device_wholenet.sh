#!/usr/bin/env bash
# Issue 37, the whole-network kernel (nn/wholenet.cuh, network_config::kernels wholenet), on one GPU machine from
# the repository root (< 9 min on 16 cores, up to 4 of them the build): builds gmi.bench.wide and its GPU tests
# (gmi.test.nn_gpu, gmi.test.ppo_gpu) only, runs the kernel's tests (nn_gpu.wholenet.*: the three paper networks
# and odd ones against the host forward in TF32 and bf16, graph replays, the fit rule and its refusals;
# ppo_gpu.wholenet_*: serving and PPO training with it against cuBLASLt, a captured serving window against eager
# steps), then gmi.bench.wide serving (4096 and 16384 envs) and PPO training (4096 envs) of the three networks
# with --kernels cublaslt,wholenet in tf32 and bf16 and the JAX reference, medians of 3, under one run id. Writes
# $OUT/wholenet.jsonl (result lines), $OUT/wholenet-summary.txt (each case against JAX, wholenet against
# cublaslt), $OUT/wholenet-tests.log and $OUT/wholenet-build.log.
# Usage: OUT=/some/dir bench/wide/device_wholenet.sh
set -uo pipefail
name=wholenet
source "$(dirname "$0")/device_common.sh"

wide_build 230 gmi.bench.wide gmi.test.nn_gpu gmi.test.ppo_gpu
timeout 80 ctest --test-dir "$build" -R '^nn_gpu\.wholenet\.|^ppo_gpu\.wholenet_' --output-on-failure --timeout 70 \
  -V > "$out/wholenet-tests.log" 2>&1
tests_rc=$?
grep -E "tests passed|Failed|\*\*\*|SKIPPED|relative error|differ by|per-block limit" "$out/wholenet-tests.log" |
  sed 's/^[0-9]*: //' | sort | uniq -c | head -70

timeout 120 "$build/bench/wide/gmi.bench.wide" --cases peak,serving,training --kernels cublaslt,wholenet \
  --precisions tf32,bf16 --training-precisions tf32,bf16 --envs 4096,16384 --reps 3 --seconds 0.1 --out "$lines" \
  --run-id "$run_id" --git "$rev" | cut -c1-240
wide_reference 90 --reps 3 --seconds 0.1 --precisions tf32,bf16

python3 bench/wide/summarize.py "$lines" "$device" > "$out/wholenet-summary.txt"
cat "$out/wholenet-summary.txt"
echo "tests exit code: $tests_rc"
exit $tests_rc
