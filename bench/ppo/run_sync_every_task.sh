#!/usr/bin/env bash
# Synchronous PPO on one GPU for each of the paper's nine tasks, the paper's way and the strict way:
#   base   one GMI with the paper's env count N (partition none): one process per GPU, the Isaac Gym + rl_games
#          baseline the paper compares with;
#   k x N  k MPS GMIs with N envs each, synchronized every minibatch (for each k in `ks`);
#   1 x kN one GMI holding as many envs as the largest k's group (the same total).
# Every run trains for `seconds` (--max-seconds) from seed 1 with the task's defaults (minibatch 8192, horizon 16,
# 8 epochs), `reps` times, the configurations alternating; each appends its end line to <results.jsonl>
# (train_samples_per_s is the compared number; bench/plot makes the tables in docs/results.md). `gradients` runs
# each configuration once per way of forming the minibatch gradient (--ppo-gradient: warps, tiles, threads;
# "default" leaves it unset; a way a task's network does not fit is skipped for that task by the binary's refusal).
# `scopes` says whose the minibatch of a k x N group is (--minibatch-scope): "group" (split over its GMIs; an
# iteration makes as many Adam steps as the same total on one GMI) and/or "gmi" (each GMI's, rl_games' multi-GPU
# rule the paper trained with; a step averages k x 8192 samples). With "gmi", one more configuration runs: one GMI
# with the largest group's envs and minibatch (1 x kN, minibatch kmax x 8192), the same steps on one GMI.
# Usage: run_sync_every_task.sh <build-dir> <results.jsonl> [ks="4 8"] [seconds=3] [reps=2] [tasks=all nine]
#        [gradients=default] [scopes=group]
set -uo pipefail
build=${1:?build directory}
out=${2:?results file}
ks=${3:-4 8}
seconds=${4:-3}
reps=${5:-2}
tasks=${6:-cartpole ball_balance quadcopter ingenuity ant_proxy anymal_proxy humanoid_proxy franka_cabinet_proxy shadow_hand_proxy}
gradients=${7:-default}
scopes=${8:-group}
export NCCL_NVLS_ENABLE=0
source "$(dirname "$0")/paper_tasks.sh"  # paper_n, binary, check_tasks
check_tasks run_sync_every_task $tasks
kmax=0
for k in $ks; do
  [[ "$k" =~ ^[1-9][0-9]*$ ]] || { echo "run_sync_every_task: k: got $k, need a positive integer" >&2; exit 2; }
  [ "$k" -gt "$kmax" ] && kmax=$k
done
for g in $gradients; do
  case "$g" in default|warps|tiles|threads) ;; *) echo "run_sync_every_task: gradients: got $g, need default, warps, tiles or threads" >&2; exit 2 ;; esac
done
for sc in $scopes; do
  case "$sc" in group|gmi) ;; *) echo "run_sync_every_task: scopes: got $sc, need group or gmi" >&2; exit 2 ;; esac
done
minibatch=8192  # gmi::rl::ppo_config's default, which every task's example keeps
for t in $tasks; do
  n=${paper_n[$t]}
  bin=$(binary "$t")
  # GMIs, envs per GMI, partition, extra flags ("-": none)
  configs=("1 $n none -")
  for k in $ks; do
    for sc in $scopes; do configs+=("$k $n mps --minibatch-scope=$sc"); done
  done
  configs+=("1 $((kmax * n)) none -")
  [[ " $scopes " == *" gmi "* ]] && configs+=("1 $((kmax * n)) none --minibatch=$((kmax * minibatch))")
  for rep in $(seq "$reps"); do
    for c in "${configs[@]}"; do
      read -r g e p extra <<< "$c"
      flags=()
      [ "$extra" != - ] && flags=("$extra")
      for way in $gradients; do
        way_flags=()
        [ "$way" != default ] && way_flags=(--ppo-gradient "$way")
        timeout $((${seconds%.*} + 120)) "$bin" --gmis-per-gpu "$g" --num-envs "$e" --partition "$p" --target-return nan \
          --max-env-steps 1e15 --max-seconds "$seconds" --log-interval 100 --metrics "$out" "${flags[@]}" "${way_flags[@]}" 2>&1 |
          grep -E "^gmi: (step|time|solved|diverged)|rror|--ppo-gradient" | sed "s|^|$t rep $rep $g x $e $p $way ${extra}: |"
      done
    done
  done
done
