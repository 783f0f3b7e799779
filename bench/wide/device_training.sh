#!/usr/bin/env bash
# Issue 37, PPO training with wide networks, on one GPU machine from the repository root (< 9 min on 16 cores, ~4 of
# them the builds): builds gmi.bench.wide and the tests of the training path (nn_gpu: the cuBLASLt layers and the
# bias-gradient column sums; ppo_gpu: the gradient paths against the host trainer; rl_gpu: the batched collection
# against the per-thread one), runs those GPU tests, then
# `gmi.bench.wide --cases peak,training` and the JAX reference's training cases under one run id. With BASE_SRC (a
# second source tree, e.g. the base revision unpacked by `git archive e05ae6d | tar -x -C /tmp/base`) or BASE_REV (a
# revision of this checkout's git history, unpacked the same way), its gmi.bench.wide is built beside this one and its
# training lines go to the same file with "impl":"gmi_base", so the speedup is measured side by side.
# Writes $OUT/training.jsonl, $OUT/training-tests.log, $OUT/training-build.log, $OUT/training-summary.txt.
# Usage: OUT=/some/dir [BASE_SRC=/tmp/base | BASE_REV=e05ae6d] bench/wide/device_training.sh
set -uo pipefail
OUT=${OUT:?set OUT to the folder for result lines}
mkdir -p "$OUT"
BUILD=${BUILD:-/tmp/build}
BASE_BUILD=${BASE_BUILD:-/tmp/build-base}
rev=${GMI_GIT_REVISION:-$(cat .carry/git-rev 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)}
run_id="$(date -u +%Y-%m-%dT%H:%M:%SZ)-training-$rev"
device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
lines="$OUT/training.jsonl"
log="$OUT/training-build.log"
export NCCL_NVLS_ENABLE=0

base_src=${BASE_SRC:-}
if [ -z "$base_src" ] && [ -n "${BASE_REV:-}" ]; then
  base_src=/tmp/gmi-base-src
  rm -rf "$base_src" && mkdir -p "$base_src"
  git archive "$BASE_REV" | tar -x -C "$base_src" || { echo "BASE_REV $BASE_REV: got no tree (need a git checkout)"; exit 1; }
fi
base_rev=${BASE_REV:-$(cat "$base_src/.carry/git-rev" 2>/dev/null || echo base)}

# The base tree's bench builds beside ours at a lower priority (ours first; the base's finishes during the tests).
if [ -n "$base_src" ]; then
  ( cd "$base_src" && cmake --preset gpu -B "$BASE_BUILD" -DGMI_BUILD_BENCHMARKS=ON -DGMI_BUILD_TESTS=OFF &&
    timeout 420 nice -n 15 cmake --build "$BASE_BUILD" -j16 --target gmi.bench.wide ) > "$OUT/training-build-base.log" 2>&1 &
  base_pid=$!
fi
cmake --preset gpu -B "$BUILD" -DGMI_BUILD_BENCHMARKS=ON > "$log" 2>&1 || { tail -30 "$log"; exit 1; }
timeout 270 cmake --build "$BUILD" -j16 --target gmi.bench.wide gmi.test.nn_gpu gmi.test.ppo_gpu gmi.test.rl_gpu >> "$log" 2>&1 ||
  { grep -B2 -A8 "error" "$log" | head -60; exit 1; }
timeout 120 ctest --test-dir "$BUILD" -R '^nn_gpu\.lt\.|^ppo_gpu\.(gradient_paths|one_iteration|graph_replay)|^rl_gpu\.batched' \
  --output-on-failure --timeout 100 -V > "$OUT/training-tests.log" 2>&1
tests_rc=$?
grep -E "tests passed|Failed|\*\*\*|SKIPPED|column-sum kernels" "$OUT/training-tests.log" | sort | uniq -c | head -40

timeout 60 "$BUILD/bench/wide/gmi.bench.wide" --cases peak,training --reps 5 --seconds 0.2 --out "$lines" \
  --run-id "$run_id" --git "$rev" | cut -c1-220
base_ok=0
if [ -n "$base_src" ]; then
  wait "$base_pid" && base_ok=1 || { echo "base build failed:"; grep -B2 -A8 "error" "$OUT/training-build-base.log" | head -30; }
fi
if [ "$base_ok" = 1 ]; then
  timeout 45 "$BASE_BUILD/bench/wide/gmi.bench.wide" --cases training --reps 5 --seconds 0.2 --out "$OUT/base.jsonl" \
    --run-id "$run_id" --git "$base_rev" | cut -c1-220
  python3 -c '
import json, sys
with open(sys.argv[2], "a") as out:
    for l in open(sys.argv[1]):
        if l.strip():
            d = json.loads(l); d["impl"] = "gmi_base"; out.write(json.dumps(d) + "\n")' "$OUT/base.jsonl" "$lines"
fi
PYTHONUNBUFFERED=1 timeout 100 python3 bench/wide/jax_reference.py --cases training --reps 5 --seconds 0.2 \
  --out "$lines" --run-id "$run_id" --git "$rev" --precisions tf32,bf16 | cut -c1-200

python3 bench/wide/summarize.py "$lines" "$device" > "$OUT/training-summary.txt"
cat "$OUT/training-summary.txt"
echo "tests exit code: $tests_rc"
exit $tests_rc
