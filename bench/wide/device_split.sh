#!/usr/bin/env bash
# Issue 37 on ONE GPU of a shared machine (CUDA_VISIBLE_DEVICES=<i>, beside another script; 32 cores shared), cold,
# within 7 minutes including the build: what device_default.sh measures, with gmi.bench.wide split into one
# translation unit per case family (bench/wide/wide_bench.hpp) so that it builds in parallel. From the repository
# root: builds gmi.bench.wide, gmi.test.ppo_gpu and gmi.test.rl_gpu only (-j${JOBS:-16}, into ${BUILD:-/tmp/build-widesplit}
# so that a script beside it keeps its own build folder) and prints the build time; runs ppo_gpu.wholenet_* and
# rl_gpu.batched_*; then gmi.bench.wide serving (4096 and 16384 envs) and PPO training (4096 envs) of the three
# networks with --kernels auto,cublaslt in tf32 and bf16 and the JAX reference, medians of 3, under one run id.
# Each step's limit is cut to what is left of the 7 minutes (BUDGET_S, default 415 s). Writes $OUT/split.jsonl
# (result lines; kernels_chosen says what auto took), $OUT/split-summary.txt (each case against JAX, auto against
# cublaslt), $OUT/split-tests.log and $OUT/split-build.log (with each object's compile seconds).
# Usage: OUT=/some/dir CUDA_VISIBLE_DEVICES=0 bench/wide/device_split.sh
set -uo pipefail
name=split
export BUILD=${BUILD:-/tmp/build-widesplit}
start_s=$(date +%s)
budget_s=${BUDGET_S:-415}
source "$(dirname "$0")/device_common.sh"

wide_build "$(left 230 170)" gmi.bench.wide gmi.test.ppo_gpu gmi.test.rl_gpu
# The slowest objects of the build (ninja's log: end - start in ms, per output).
wide_slowest 8

timeout "$(left 60 110)" ctest --test-dir "$build" -R '^ppo_gpu\.wholenet_|^rl_gpu\.batched_' --output-on-failure \
  --timeout 50 -V > "$out/split-tests.log" 2>&1
tests_rc=$?
grep -E "tests passed|Failed|\*\*\*|SKIPPED|differ by" "$out/split-tests.log" | sed 's/^[0-9]*: //' | sort |
  uniq -c | head -60

timeout "$(left 100 55)" "$build/bench/wide/gmi.bench.wide" --cases peak,serving,training --kernels auto,cublaslt \
  --precisions tf32,bf16 --training-precisions tf32,bf16 --envs 4096,16384 --reps 3 --seconds 0.1 --out "$lines" \
  --run-id "$run_id" --git "$rev" | cut -c1-240
wide_reference "$(left 80 5)" --reps 3 --seconds 0.1 --precisions tf32,bf16

python3 bench/wide/summarize.py "$lines" "$device" > "$out/split-summary.txt"
cat "$out/split-summary.txt"
echo "whole script: $(( $(date +%s) - start_s )) s of ${budget_s}; tests exit code: $tests_rc"
exit $tests_rc
