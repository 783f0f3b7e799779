#!/usr/bin/env bash
# Kernel-by-kernel times of single-GMI Cartpole PPO under Nsight Compute (ncu: clocks at base, caches flushed
# between kernels, so the times are longer than in a run; the shares are what to read). Profiles `count` launches
# after skipping `skip` (past start-up), graph nodes one by one, and prints bench/ppo/summarize_ncu.py's table;
# then the scheduler, warp-state, occupancy and instruction sections of one launch of the warp gradient kernel
# (out-dir/ncu-gradient-<envs>-<minibatch>.txt).
# Usage: profile_update_kernels.sh <build-dir> <out-dir> [envs=4096] [minibatch=8192] [skip=3000] [count=400]
set -uo pipefail
build=${1:?build directory}
out=${2:?output directory}
envs=${3:-4096}
minibatch=${4:-8192}
skip=${5:-3000}
count=${6:-400}
export NCCL_NVLS_ENABLE=0
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
[ -x "$ncu" ] || { echo "profile_update_kernels: no ncu (looked on PATH and in /usr/local/cuda/bin)" >&2; exit 2; }
mkdir -p "$out"
csv="$out/ncu-${envs}-${minibatch}.csv"
timeout 300 "$ncu" --graph-profiling node \
  --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread \
  --launch-skip "$skip" --launch-count "$count" --csv \
  "$build/examples/cartpole_ppo/gmi.example.cartpole_ppo" --gmis-per-gpu 1 --num-envs "$envs" --minibatch "$minibatch" \
  --partition none --target-return nan --max-env-steps 3000000 --log-interval 100 > "$csv" 2> "$out/ncu-${envs}-${minibatch}.err" ||
  { echo "profile_update_kernels: ncu failed (see $out/ncu-${envs}-${minibatch}.err)" >&2; exit 1; }
python3 "$(dirname "$0")/summarize_ncu.py" "$csv"
detail="$out/ncu-gradient-${envs}-${minibatch}.txt"
timeout 300 "$ncu" --graph-profiling node -k regex:ppo_warp_gradient --launch-skip 200 --launch-count 1 \
  --section SpeedOfLight --section SchedulerStats --section WarpStateStats --section Occupancy \
  --section LaunchStats --section InstructionStats --section MemoryWorkloadAnalysis --section SourceCounters \
  "$build/examples/cartpole_ppo/gmi.example.cartpole_ppo" --gmis-per-gpu 1 --num-envs "$envs" --minibatch "$minibatch" \
  --partition none --target-return nan --max-env-steps 3000000 --log-interval 100 > "$detail" 2>&1 ||
  { echo "profile_update_kernels: ncu (gradient kernel sections) failed (see $detail)" >&2; exit 1; }
grep -E "Duration|Issued Warp Per Scheduler|Active Warps Per Scheduler|Executed Instructions  |Registers Per Thread" "$detail"
