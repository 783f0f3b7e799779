#!/usr/bin/env bash
# The learning suite over the GPUs of one machine (issue 34): one build of every task's example and the GPU test of
# --advantage-window into $BUILD (-j$JOBS), then one bench/learning/device_learn10.sh instance a GPU
# (CUDA_VISIBLE_DEVICES=k, LEARN_PREBUILT=1), each with its own group of tasks, gmi's defaults beside
# LEARN_VARIANTS, SEEDS seeds, the JAX reference beside them; the whole call stays within CALL_S seconds of its start
# (the build included): what is not done by then is stopped and the summaries are printed as they stand.
# This is how the learn11 run of docs/learning.md ("The default value loss") was made on 4 x H200.
# Usage (repository root, OUT set): bash bench/learning/device_learn_gpus.sh "TASKS GPU 0" "TASKS GPU 1" ...
#   e.g. bash bench/learning/device_learn_gpus.sh "shadow_hand_proxy cartpole_discrete" "humanoid_proxy anymal_proxy" \
#          "ant_proxy ball_balance ingenuity" "sparse_reach long_track"
# Environment: LEARN_VARIANTS (device_learn10.sh's "label|flags;..."; default the new defaults' old twin:
#   "old_vloss|--value-coef 0.5 --clip-value false --value-clip 0.2"), SEEDS (3), BUILD (/tmp/build), JOBS (the
#   machine's cores), BUILD_S (300), CALL_S (585). Output: $OUT/l<k>/ (device_learn10.sh's learn10.jsonl,
#   learn10-summary.txt, learn10-gpu-test.txt, run.log) for GPU k, $OUT/build.log, $OUT/configure.log.
set -uo pipefail
t0=$(date +%s)
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=${OUT:?OUT: the folder for results}
mkdir -p "$out"
(( $# >= 1 )) || { echo "device_learn_gpus: got no task groups, need one quoted list of tasks a GPU" >&2; exit 2; }
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
(( $# <= gpus )) || { echo "device_learn_gpus: got $# task groups, this machine has $gpus GPUs" >&2; exit 2; }
build=${BUILD:-/tmp/build}
jobs=${JOBS:-$(nproc)}
call_s=${CALL_S:-585}
for v in jobs call_s; do
  [[ "${!v}" =~ ^[1-9][0-9]*$ ]] || { echo "device_learn_gpus: $v: got ${!v}, need a positive integer" >&2; exit 2; }
done
export NCCL_NVLS_ENABLE=0 GMI_GIT_REVISION=${GMI_GIT_REVISION:-$(cat .carry/git-rev 2>/dev/null || git rev-parse --short HEAD)}
if ls .carry/debs/libpugixml*.deb > /dev/null 2>&1; then  # the physics tasks' examples need pugixml
  mkdir -p /tmp/gmi-sysroot
  for f in .carry/debs/libpugixml*.deb; do dpkg -x "$f" /tmp/gmi-sysroot; done
  export CMAKE_PREFIX_PATH=/tmp/gmi-sysroot/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
  export LD_LIBRARY_PATH=/tmp/gmi-sysroot/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
targets=(gmi.test.ppo_gpu_advwin)
for group in "$@"; do for t in $group; do targets+=("gmi.example.${t}_ppo"); done; done
timeout 120 cmake --preset gpu -B "$build" -DGMI_BUILD_ALL_TASK_EXAMPLES=ON > "$out/configure.log" 2>&1 ||
  { tail -20 "$out/configure.log"; echo "device_learn_gpus: the configure failed"; exit 1; }
timeout "${BUILD_S:-300}" cmake --build "$build" -j"$jobs" --target "${targets[@]}" -- -k 0 > "$out/build.log" 2>&1 ||
  { echo "device_learn_gpus: the build failed or timed out (what was built is used):"; grep -m5 -E 'error|FAILED' "$out/build.log"; }
echo "device_learn_gpus: built after $(( $(date +%s) - t0 )) s; git $GMI_GIT_REVISION"
left=$(( call_s - ($(date +%s) - t0) ))
(( left > 90 )) || { echo "device_learn_gpus: $left s left after the build, need > 90"; exit 1; }
k=0
for group in "$@"; do
  mkdir -p "$out/l$k"
  CUDA_VISIBLE_DEVICES=$k OUT="$out/l$k" BUILD="$build" LEARN_PREBUILT=1 LEARN_TASKS="$group" \
    LEARN_VARIANTS="${LEARN_VARIANTS:-old_vloss|--value-coef 0.5 --clip-value false --value-clip 0.2}" \
    LEARN_BUDGET_S=$(( left - 45 )) SUITE_JOBS=16 SUITE_WORK="/tmp/gmi-learn-gpu$k" \
    bash bench/learning/device_learn10.sh > "$out/l$k/stdout.txt" 2>&1 &
  k=$((k + 1))
  sleep 2
done
while [ -n "$(jobs -rp)" ] && (( $(date +%s) - t0 < call_s )); do sleep 2; done
status=0
if [ -n "$(jobs -rp)" ]; then
  echo "device_learn_gpus: still running at $(( $(date +%s) - t0 )) s (CALL_S $call_s): stopped"
  kill $(jobs -rp) 2> /dev/null
  status=1
fi
for ((i = 0; i < k; i++)); do echo "== GPU $i"; tail -n 40 "$out/l$i/learn10-summary.txt" 2> /dev/null || { echo "no summary"; status=1; }; done
exit $status
