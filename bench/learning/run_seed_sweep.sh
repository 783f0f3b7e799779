#!/usr/bin/env bash
# Learning over seeds: Cartpole PPO through gmi::run for seeds 1..N, one GMI with every environment beside k
# synchronized GMIs that share them, under each learning-rate schedule. Every run stops when solved (mean return
# >= 450 over >= 32 episodes) or at the step limit, and appends its end line (with the curve of mean return over
# env steps and the PPO settings) to <results.jsonl>; bench/plot turns the lines into docs/results.md's
# "Learning over seeds" table.
# Usage: run_seed_sweep.sh <build-dir> <results.jsonl> [seeds=5] [k=8] [envs=4096 in total] [partition=mps]
#        [schedules="constant adaptive"] [steps=20000000]
set -uo pipefail
build=${1:?build directory}
out=${2:?results file}
seeds=${3:-5}
k=${4:-8}
total=${5:-4096}
partition=${6:-mps}
schedules=${7:-constant adaptive}
steps=${8:-20000000}
export NCCL_NVLS_ENABLE=0
ppo="$build/examples/cartpole_ppo/gmi.example.cartpole_ppo"
[ -x "$ppo" ] || { echo "run_seed_sweep: no $ppo (build gmi.example.cartpole_ppo)" >&2; exit 2; }
(( total % k == 0 )) || { echo "run_seed_sweep: envs $total, need a multiple of k = $k" >&2; exit 2; }
for schedule in $schedules; do
  for seed in $(seq "$seeds"); do
    for shape in "1 $total none" "$k $((total / k)) $partition"; do
      read -r gmis envs part <<< "$shape"
      timeout 300 "$ppo" --seed "$seed" --lr-schedule "$schedule" --gmis-per-gpu "$gmis" --num-envs "$envs" \
        --partition "$part" --target-return 450 --max-env-steps "$steps" --log-interval 100 --metrics "$out" 2>&1 |
        grep -E "^gmi: (step|solved|time)" | sed "s|^|$schedule seed $seed $gmis x $envs $part: |"
    done
  done
done
