#!/usr/bin/env bash
# Issue 37, the batched path, on one GPU machine from the repository root (< 9 min on 16 cores: ~4 of them the
# build): builds gmi.bench.wide and the tests of the batched rollout, runs the GPU tests (batched vs
# thread-per-env collection, the server's graph replay, the PPO gradient paths against the host trainer with the
# wide networks now collecting batched) and the host rule tests, then gmi.bench.wide and the JAX reference beside
# it under one run id. Writes $OUT/batched.jsonl (result lines), $OUT/batched-tests.log, $OUT/batched-build.log,
# $OUT/batched-summary.txt (gmi against JAX per case, achieved TFLOP/s against the measured peak, the rule's
# threshold cases). Usage: OUT=/some/dir bench/wide/device_batched.sh
set -uo pipefail
OUT=${OUT:?set OUT to the folder for result lines}
mkdir -p "$OUT"
BUILD=${BUILD:-/tmp/build}
rev=${GMI_GIT_REVISION:-$(cat .carry/git-rev 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)}
run_id="$(date -u +%Y-%m-%dT%H:%M:%SZ)-batched-$rev"
device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
lines="$OUT/batched.jsonl"
export NCCL_NVLS_ENABLE=0

cmake --preset gpu -B "$BUILD" -DGMI_BUILD_BENCHMARKS=ON > "$OUT/batched-build.log" 2>&1 || { tail -30 "$OUT/batched-build.log"; exit 1; }
timeout 260 cmake --build "$BUILD" -j16 --target gmi.bench.wide gmi.test.rl_gpu gmi.test.ppo_gpu gmi.test.rl \
  >> "$OUT/batched-build.log" 2>&1 || { grep -B2 -A8 "error" "$OUT/batched-build.log" | head -60; exit 1; }

timeout 150 ctest --test-dir "$BUILD" -R '^rl_gpu\.batched|^ppo_gpu\.(gradient_paths|one_iteration|graph_replay)|^rl\.wide_rule' \
  --output-on-failure --timeout 120 > "$OUT/batched-tests.log" 2>&1
tests_rc=$?
grep -E "tests passed|Failed|\*\*\*|SKIPPED" "$OUT/batched-tests.log" | head -40

timeout 140 "$BUILD/bench/wide/gmi.bench.wide" --reps 5 --seconds 0.2 --out "$lines" --run-id "$run_id" --git "$rev" \
  | cut -c1-220
PYTHONUNBUFFERED=1 timeout 170 python3 bench/wide/jax_reference.py --reps 5 --seconds 0.2 --out "$lines" \
  --run-id "$run_id" --git "$rev" --precisions tf32,bf16 | cut -c1-200

python3 bench/wide/summarize.py "$lines" "$device" > "$OUT/batched-summary.txt"
cat "$OUT/batched-summary.txt"
echo "tests exit code: $tests_rc"
exit $tests_rc
