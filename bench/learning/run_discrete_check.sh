#!/usr/bin/env bash
# The discrete-action path on a GPU machine (issue 34, categorical agent): builds the PPO GPU tests and the
# cartpole_discrete example, runs every ppo_gpu test (the Gaussian paths after the policy-interface change, and
# ppo_gpu.discrete.matches_host: the categorical trainer's warp, tile and thread gradient paths against the host),
# the example's host smoke test, then the learning suite on cartpole_discrete alone (gmi's default PPO and the JAX
# reference with its categorical head, 5 seeds each, 5 M env steps). Writes under $OUT (default ./out):
# ctest.log, ctest.jsonl (one line per test: bench "tests", metric "passed"), learning-discrete.jsonl (the suite's
# result lines) and suite.log. Run from the repository root; about 4 minutes of building with 16 cores.
set -uo pipefail
out=${OUT:-$PWD/out}
build=${BUILD:-/tmp/build}
mkdir -p "$out"
git=${GMI_GIT_REVISION:-$(cat .carry/git-rev 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)}
device=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
run_id="$(date -u +%Y-%m-%dT%H:%M:%SZ)-discrete-$(head -c 3 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export NCCL_NVLS_ENABLE=0

cmake --preset gpu -B "$build" -DGMI_BUILD_BENCHMARKS=ON -DGMI_BUILD_ALL_TASK_EXAMPLES=ON > "$out/configure.log" 2>&1 ||
  { tail -20 "$out/configure.log"; exit 1; }
timeout 330 cmake --build "$build" -j16 --target gmi.test.ppo_gpu gmi.example.cartpole_discrete_ppo \
  > "$out/build.log" 2>&1 || { grep -m5 -B2 -A8 "error" "$out/build.log"; tail -5 "$out/build.log"; exit 1; }

ctest --test-dir "$build" -R "^ppo_gpu\.|^example\.cartpole_discrete_ppo\.smoke" --output-on-failure \
  --stop-time "$(date -d '+200 seconds' +%H:%M:%S)" > "$out/ctest.log" 2>&1
status=$?
grep -E "Test +#[0-9]+: " "$out/ctest.log" | sed -E 's/.*Test +#[0-9]+: ([^ ]+) .*(Passed|Failed|Not Run|Timeout|\*\*\*[A-Za-z]+).*/\1 \2/' |
  while read -r name result; do
    passed=$([ "$result" = Passed ] && echo 1 || echo 0)
    printf '{"bench":"tests","case":"%s","impl":"gmi","metric":"passed","median":%s,"min":%s,"max":%s,"device":"%s","git":"%s","run_id":"%s"}\n' \
      "$name" "$passed" "$passed" "$passed" "$device" "$git" "$run_id"
  done > "$out/ctest.jsonl"
grep -E "tests passed|categorical PPO|Failed|FAILED" "$out/ctest.log" | head -20

SUITE_TASKS=cartpole_discrete SUITE_BUDGET_S=${SUITE_BUDGET_S:-150} GMI_GIT_REVISION=$git \
  bench/learning/run_suite.sh "$build" "$out/learning-discrete.jsonl" 5 > "$out/suite.log" 2>&1 || status=1
grep -E "^run_suite: |^reference_ppo:" "$out/suite.log" | tail -12
exit $status
