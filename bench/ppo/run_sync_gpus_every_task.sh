#!/usr/bin/env bash
# Synchronous PPO on several GPUs for each of the paper's nine tasks, against the paper's baseline:
#   base   one process a GPU with the paper's env count N (partition none), its gradients through NCCL between the
#          steps (--synced-update graph): Isaac Gym + rl_games over NCCL;
#   k x N  k MPS GMIs a GPU with N envs each, every GMI of every GPU synchronized every minibatch (the default
#          update: fused, the GPUs' sums meeting in host memory).
# Both take each GMI's minibatch (8192) as its own (--minibatch-scope gmi: rl_games' multi-GPU rule, which the
# baseline follows, one process being one GMI). Every run trains for `seconds` (--max-seconds) from seed 1,
# `reps` times, the two alternating; each appends its end line to <results.jsonl> and bench/plot makes the table
# (k x N over base, medians).
# Usage: run_sync_gpus_every_task.sh <build-dir> <results.jsonl> [gpus=4] [k=8] [seconds=3] [reps=2] [tasks=all nine]
set -uo pipefail
build=${1:?build directory}
out=${2:?results file}
gpus=${3:-4}
k=${4:-8}
seconds=${5:-3}
reps=${6:-2}
tasks=${7:-cartpole ball_balance quadcopter ingenuity ant_proxy anymal_proxy humanoid_proxy franka_cabinet_proxy shadow_hand_proxy}
export NCCL_NVLS_ENABLE=0
source "$(dirname "$0")/paper_tasks.sh"  # paper_n, binary, check_task_*
[[ "$k" =~ ^[1-9][0-9]*$ ]] || { echo "run_sync_gpus_every_task: k: got $k, need a positive integer" >&2; exit 2; }
[[ "$seconds" =~ ^[0-9]+([.][0-9]+)?$ ]] && [[ ! "$seconds" =~ ^0+([.]0+)?$ ]] || { echo "run_sync_gpus_every_task: seconds: got $seconds, need a positive number" >&2; exit 2; }
[[ "$reps" =~ ^[1-9][0-9]*$ ]] || { echo "run_sync_gpus_every_task: reps: got $reps, need a positive integer" >&2; exit 2; }
check_task_names run_sync_gpus_every_task $tasks
[[ "$gpus" =~ ^[1-9][0-9]*$ ]] || { echo "run_sync_gpus_every_task: gpus: got $gpus, need a positive integer" >&2; exit 2; }
# the arguments first, then this machine
have=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ "$gpus" -le "$have" ] || { echo "run_sync_gpus_every_task: gpus: got $gpus, need at most $have (this machine's GPUs)" >&2; exit 2; }
check_task_binaries run_sync_gpus_every_task $tasks
for t in $tasks; do
  n=${paper_n[$t]}
  bin=$(binary "$t")
  for rep in $(seq "$reps"); do
    for c in "1 none --launch=processes --synced-update=graph" "$k mps --synced-update=fused"; do
      read -r g p f1 f2 <<< "$c"
      flags=("$f1")
      [ -n "${f2:-}" ] && flags+=("$f2")
      timeout $((${seconds%.*} + 180)) "$bin" --gpus "$gpus" --gmis-per-gpu "$g" --num-envs "$n" --partition "$p" \
        --minibatch-scope gmi --target-return nan --max-env-steps 1e15 --max-seconds "$seconds" --log-interval 100 \
        --metrics "$out" "${flags[@]}" 2>&1 |
        grep -E "^gmi: (step|time|solved|diverged)|rror" | sed "s|^|$t rep $rep $gpus GPUs x $g x $n $p: |"
    done
  done
done
