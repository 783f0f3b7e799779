#!/usr/bin/env bash
# How the split layout learns, by learner setting: on one GPU, 1 trainer + k-1 serving MPS GMIs (the task's colocated
# pipeline with --split-roles, --minibatch-scope gmi) train each task for `seconds` from several seeds, once per
# variant. A variant is a comma-separated set of flags ("-": the defaults); the default variants are the four of
#   --clip-against        behaviour | learner   (PPO's ratio over the acting policy, or the learner's)
#   --normalize-advantages before_rho | after_rho (V-trace's advantages normalized before or after rho weights them)
# and the variant "colocated" runs the synchronous layout (k GMIs, each GMI's minibatch) beside them as the reference.
# Each run appends its end line (mean return at the end) to <results.jsonl> and its whole output to <results>.log;
# its progress lines go to stdout as one line of returns, one every --log-interval (0.5 s). bench/plot makes the
# table in docs/results.md from bench/results/split-learning/.
# Usage: run_split_learning_sweep.sh <build-dir> <results.jsonl> [k=8] [seconds=5] [seeds="1 2 3"]
#        [tasks="cartpole ball_balance quadcopter"] [variants="v1;v2;..."]
set -uo pipefail
build=${1:?build directory}
out=${2:?results file}
k=${3:-8}
seconds=${4:-5}
seeds=${5:-1 2 3}
tasks=${6:-cartpole ball_balance quadcopter}
variants=${7:-"--clip-against=behaviour,--normalize-advantages=before_rho;--clip-against=behaviour,--normalize-advantages=after_rho;--clip-against=learner,--normalize-advantages=before_rho;--clip-against=learner,--normalize-advantages=after_rho"}
refuse() { echo "run_split_learning_sweep: $1" >&2; exit 2; }
[[ "$k" =~ ^[0-9]+$ ]] && ((k >= 2)) || refuse "k: got $k, need an integer >= 2 (1 trainer + serving GMIs)"
[[ "$seconds" =~ ^[0-9]+([.][0-9]+)?$ ]] && [[ ! "$seconds" =~ ^0+([.]0+)?$ ]] || refuse "seconds: got $seconds, need a positive number"
for s in $seeds; do [[ "$s" =~ ^[0-9]+$ ]] || refuse "seeds: got $s, need non-negative integers"; done
export NCCL_NVLS_ENABLE=0
source "$(dirname "$0")/paper_tasks.sh"  # paper_n, binary, check_tasks
check_tasks run_split_learning_sweep $tasks
IFS=';' read -r -a variant_list <<< "$variants"
for v in "${variant_list[@]}"; do
  [[ "$v" == - || "$v" == colocated || "$v" =~ ^--[a-z] ]] || refuse "variants: got '$v', need '-', 'colocated' or flags like --dual-clip=3,--lr=1e-4"
done
log="${out%.jsonl}.log"
for t in $tasks; do
  for seed in $seeds; do
    for v in "${variant_list[@]}"; do
      flags=(--split-roles)
      [ "$v" = colocated ] && flags=()
      [[ "$v" =~ ^--[a-z] ]] && { IFS=, read -r -a extra <<< "$v"; flags+=("${extra[@]}"); }
      printf '%s seed %s %s: ' "$t" "$seed" "$v" | tee -a "$log"
      echo >> "$log"
      timeout $((${seconds%.*} + 150)) "$(binary "$t")" --gmis-per-gpu "$k" --num-envs "${paper_n[$t]}" --partition mps \
        --minibatch-scope gmi --seed "$seed" "${flags[@]}" \
        --target-return nan --max-env-steps 1e15 --max-seconds "$seconds" --log-interval 0.5 --metrics "$out" 2>&1 | tee -a "$log" |
        grep -E "^(update|iter) |^gmi: (time|diverged|solved)|rror" | sed -E 's/^(update|iter) .*[|] return ([^ ]*) .*/\2/' |
        tr '\n' ' '
      echo
    done
  done
done
