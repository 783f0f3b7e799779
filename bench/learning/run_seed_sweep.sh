#!/usr/bin/env bash
# Learning over seeds: Cartpole PPO through gmi::run for seeds 1..N, one GMI with every environment beside k
# synchronized GMIs that share them, under each learning-rate schedule. Every run stops when solved (mean return
# >= 450 over >= 32 episodes) or at the step limit, and appends its end line (with the curve of mean return over
# env steps and the PPO settings) to <results.jsonl>; bench/plot turns the lines into docs/results.md's
# "Learning over seeds" table.
# `scopes` lists whose minibatch a group's is (--minibatch-scope: group, split over its GMIs; gmi, each GMI's own,
# rl_games' rule), one group per scope; `baseline`, where set, adds one GMI with that many envs (the paper's one
# process with N envs).
# Usage: run_seed_sweep.sh <build-dir> <results.jsonl> [seeds=5] [k=8] [envs=4096 in total] [partition=mps]
#        [schedules="constant adaptive"] [steps=20000000] [scopes=group] [baseline=]
set -uo pipefail
build=${1:?build directory}
out=${2:?results file}
seeds=${3:-5}
k=${4:-8}
total=${5:-4096}
partition=${6:-mps}
schedules=${7:-constant adaptive}
steps=${8:-20000000}
scopes=${9:-group}
baseline=${10:-}
export NCCL_NVLS_ENABLE=0
ppo="$build/examples/cartpole_ppo/gmi.example.cartpole_ppo"
[ -x "$ppo" ] || { echo "run_seed_sweep: no $ppo (build gmi.example.cartpole_ppo)" >&2; exit 2; }
(( total % k == 0 )) || { echo "run_seed_sweep: envs $total, need a multiple of k = $k" >&2; exit 2; }
for sc in $scopes; do
  case "$sc" in group|gmi) ;; *) echo "run_seed_sweep: scopes: got $sc, need group or gmi" >&2; exit 2 ;; esac
done
[ -z "$baseline" ] || [[ "$baseline" =~ ^[1-9][0-9]*$ ]] || { echo "run_seed_sweep: baseline: got $baseline, need a positive env count" >&2; exit 2; }
shapes=("1 $total none group")
for sc in $scopes; do shapes+=("$k $((total / k)) $partition $sc"); done
[ -n "$baseline" ] && shapes+=("1 $baseline none group")
for schedule in $schedules; do
  for seed in $(seq "$seeds"); do
    for shape in "${shapes[@]}"; do
      read -r gmis envs part sc <<< "$shape"
      timeout 300 "$ppo" --seed "$seed" --lr-schedule "$schedule" --gmis-per-gpu "$gmis" --num-envs "$envs" \
        --partition "$part" --minibatch-scope "$sc" --target-return 450 --max-env-steps "$steps" --log-interval 100 \
        --metrics "$out" 2>&1 | grep -E "^gmi: (step|solved|time)" | sed "s|^|$schedule seed $seed $gmis x $envs $part $sc: |"
    done
  done
done
