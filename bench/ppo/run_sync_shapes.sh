#!/usr/bin/env bash
# Synchronous PPO on one GPU: how the group's shape (GMIs x envs per GMI, the MPS share of each GMI) changes
# training throughput when every step is synchronized. One run each, 30 M env steps, Cartpole through gmi::run;
# prints each run's end line (bench/results/gpu-tests/2026-11-21-h200-sync-shapes-c0add40.log, in git at 9a10041, holds one output).
# Usage: run_sync_shapes.sh <build-dir>
set -uo pipefail
build=${1:?build directory}
export NCCL_NVLS_ENABLE=0
ppo="$build/examples/cartpole_ppo/gmi.example.cartpole_ppo"
[ -x "$ppo" ] || { echo "run_sync_shapes: no $ppo (build gmi.example.cartpole_ppo)" >&2; exit 2; }
for shape in "8 512 mps 100" "8 512 mps 50" "8 512 mps 25" "4 1024 mps 0" "4 1024 mps 100" "2 2048 mps 0" \
             "2 2048 mps 100" "8 512 green_context 0"; do
  read -r g e p pct <<< "$shape"
  extra=""
  [ "$pct" != 0 ] && extra="--mps-percentage $pct"
  echo "== $g GMIs x $e envs, $p $extra"
  timeout 60 "$ppo" --gmis-per-gpu "$g" --num-envs "$e" --partition "$p" $extra --target-return nan \
    --max-env-steps 30000000 --log-interval 100 2>&1 | grep -E "^gmi: (step|solved|time|the update)|rror"
done
