#!/usr/bin/env bash
# Replay on a GPU machine, from the repository root: builds the replay GPU tests and bench, runs the tests
# (log under $OUT) and the bench, whose JSON lines go to $OUT/replay.jsonl. About 4 min build + 2 min run.
set -euo pipefail
out=${OUT:?set OUT to the folder for results}
build=${BUILD:-/tmp/build}
cmake --preset gpu -B "$build" -DGMI_BUILD_BENCHMARKS=ON -DGMI_HEADER_CHECK_NVCC=OFF > "$out/replay_configure.log" 2>&1
cmake --build "$build" -j16 --target gmi.test.replay gmi.test.replay_gpu gmi.bench.replay > "$out/replay_build.log" 2>&1
ctest --test-dir "$build" -R '^replay' --output-on-failure --timeout 300 > "$out/replay_tests.log" 2>&1 || true
tail -n 5 "$out/replay_tests.log"
device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr ' ' '-')
git=${GMI_GIT_REVISION:-$(cat .carry/git-rev 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)}
run_id="$(date -u +%Y-%m-%dT%H:%M:%SZ)-${device}-${git}-replay"
"$build/bench/replay/gmi.bench.replay" --run-id "$run_id" --device "$device" --git "$git" --out "$out/replay.jsonl" \
  --cpu-threads "$(nproc)"
