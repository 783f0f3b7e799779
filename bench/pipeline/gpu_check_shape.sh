#!/usr/bin/env bash
# GPU check of issue 36's last changes (branch shape), one call on one H100/H200, under 9 minutes:
#   1. builds this revision's GPU tests and Cartpole examples (cmake --preset gpu, -j16, only those targets);
#   2. runs the GPU tests the changes touch: MPS clients checking their SM share from GMI_IDENTITY (partition_gpu),
#      the gradient paths asked by rl::request_gradient_path (ppo_gpu.gradient_paths...), serving through
#      rl::policy_server and the PPO/restart/plan cases of the Cartpole examples (GMI_CHOSEN with its "restart"
#      part, --inbox-memory, --ppo-gradient);
#   3. with BASE_SRC (a source tree of the baseline revision, e.g. `git archive 0f0a894 | tar -x -C shared/base`
#      beside this checkout) and BASE_REV, builds its Cartpole examples too and runs bench/pipeline/compare_revisions.sh
#      (serving 512/4096 envs, training 512 envs; REPS each, default 3), the throughput comparison of issue 36.
# Writes under $OUT: gpu-tests.log, result lines compare-revisions.jsonl (when BASE_SRC is set) and summary.txt.
#   OUT=/tmp/out [BASE_SRC=shared/base BASE_REV=0f0a894] [REPS=3] bench/pipeline/gpu_check_shape.sh
# Other checks reuse it with CHECK_NAME, CHECK_TARGETS (the targets to build), CHECK_TESTS (the ctest regex) and
# CHECK_TEST_SECONDS (the tests' time budget); COLOCATED_ARGS reaches compare_revisions.sh.
set -uo pipefail
name=${CHECK_NAME:-gpu_check_shape}
targets=${CHECK_TARGETS:-gmi.test.partition_gpu gmi.test.ppo_gpu gmi.test.runtime gmi.example.cartpole_ppo gmi.example.cartpole_serving}
tests=${CHECK_TESTS:-'^(partition_gpu\.mps|ppo_gpu\.(gradient_paths|solves_cartpole)|runtime\.|example\.cartpole_serving\.gpu|example\.cartpole_ppo\.(gpu\.(mps_4|graph_mps_4|cpu_staged_mps_4|automatic_mps_4|none_processes_1|checkpoint|restart|kill_without_restart|update_fused_40)|bad_gradient_path))'}
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:?set OUT to a folder for the results}
mkdir -p "$out"
cd "$root"
if ! nvidia-smi > /dev/null 2>&1; then
  echo "$name: SKIPPED: no NVIDIA GPU here" | tee "$out/summary.txt"
  exit 77
fi
rev=${GMI_GIT_REVISION:-$(cat .carry/git-rev 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)}
export GMI_GIT_REVISION=$rev
start=$(date +%s)
cmake --preset gpu -B /tmp/build -DGMI_BUILD_BENCHMARKS=OFF > "$out/configure.log" 2>&1 || { tail -20 "$out/configure.log"; exit 1; }
# shellcheck disable=SC2086  # the targets are words
cmake --build /tmp/build -j16 --target $targets > "$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
echo "$name: built $rev in $(( $(date +%s) - start )) s" | tee "$out/summary.txt"
# The tests: MPS client checks, gradient paths, runtime (segments and rings on comm's), the Cartpole examples'
# serving, PPO, restart and inbox cases on one GPU.
ctest --test-dir /tmp/build --output-on-failure --timeout 300 \
  --stop-time "$(date -d "+${CHECK_TEST_SECONDS:-240} seconds" +%H:%M:%S)" -R "$tests" > "$out/gpu-tests.log" 2>&1
grep -E 'tests passed|tests failed|\(Failed\)|Skipped' "$out/gpu-tests.log" | tail -15 | tee -a "$out/summary.txt"
if [ -n "${BASE_SRC:-}" ]; then
  base_rev=${BASE_REV:?set BASE_REV to the baseline revision with BASE_SRC}
  cmake -S "$BASE_SRC" --preset gpu -B /tmp/build-base -DGMI_BUILD_BENCHMARKS=OFF -DGMI_BUILD_TESTS=OFF > "$out/configure-base.log" 2>&1 &&
    cmake --build /tmp/build-base -j16 --target gmi.example.cartpole_ppo gmi.example.cartpole_serving > "$out/build-base.log" 2>&1 ||
    { echo "$name: baseline build failed (build-base.log)" | tee -a "$out/summary.txt"; exit 1; }
  bench/pipeline/compare_revisions.sh /tmp/build /tmp/build-base "$base_rev" "${REPS:-3}" \
    > "$out/compare-revisions.jsonl" 2> "$out/compare-revisions.txt"
  cat "$out/compare-revisions.txt" | tee -a "$out/summary.txt"
else
  echo "$name: no BASE_SRC: throughput comparison not run" | tee -a "$out/summary.txt"
fi
echo "$name: done in $(( $(date +%s) - start )) s" | tee -a "$out/summary.txt"
