#!/usr/bin/env bash
# How the split layout learns, by learner setting: on one GPU, 1 trainer + k-1 serving MPS GMIs (the task's colocated
# pipeline with --split-roles, --minibatch-scope gmi) train each task for `seconds` from several seeds with
#   --clip-against        behaviour | learner   (PPO's ratio over the acting policy, or the learner's)
#   --normalize-advantages before_rho | after_rho (V-trace's advantages normalized before or after rho weights them)
# Each run appends its end line (mean return at the end) to <results.jsonl>; its progress lines go to stdout as one
# line of returns, one every --log-interval (0.5 s). bench/plot makes the table in docs/results.md from
# bench/results/split-learning/.
# Usage: run_split_learning_sweep.sh <build-dir> <results.jsonl> [k=8] [seconds=5] [seeds="1 2 3"]
#        [tasks="cartpole ball_balance quadcopter"]
set -uo pipefail
build=${1:?build directory}
out=${2:?results file}
k=${3:-8}
seconds=${4:-5}
seeds=${5:-1 2 3}
tasks=${6:-cartpole ball_balance quadcopter}
refuse() { echo "run_split_learning_sweep: $1" >&2; exit 2; }
[[ "$k" =~ ^[0-9]+$ ]] && ((k >= 2)) || refuse "k: got $k, need an integer >= 2 (1 trainer + serving GMIs)"
[[ "$seconds" =~ ^[0-9]+([.][0-9]+)?$ ]] && [[ ! "$seconds" =~ ^0+([.]0+)?$ ]] || refuse "seconds: got $seconds, need a positive number"
for s in $seeds; do [[ "$s" =~ ^[0-9]+$ ]] || refuse "seeds: got $s, need non-negative integers"; done
export NCCL_NVLS_ENABLE=0
source "$(dirname "$0")/paper_tasks.sh"  # paper_n, binary, check_tasks
check_tasks run_split_learning_sweep $tasks
for t in $tasks; do
  for seed in $seeds; do
    for clip in behaviour learner; do
      for norm in before_rho after_rho; do
        printf '%s seed %s clip %s normalized %s: ' "$t" "$seed" "$clip" "$norm"
        timeout $((${seconds%.*} + 150)) "$(binary "$t")" --gmis-per-gpu "$k" --num-envs "${paper_n[$t]}" --partition mps \
          --split-roles --minibatch-scope gmi --seed "$seed" --clip-against "$clip" --normalize-advantages "$norm" \
          --target-return nan --max-env-steps 1e15 --max-seconds "$seconds" --log-interval 0.5 --metrics "$out" 2>&1 |
          grep -E "^update|^gmi: (time|diverged|solved)|rror" | sed -E 's/^update .* return ([^ ]*) .*/\1/' | tr '\n' ' '
        echo
      done
    done
  done
done
