#!/usr/bin/env bash
# What --comm-clock costs: synchronous Cartpole PPO on one GPU with the communication clock on and off, alternating,
# `reps` times each, for `seconds` (--max-seconds) from seed 1; every end line goes to <results.jsonl> (each records
# comm_clock) and bench/plot makes the table (samples/s on / off, medians).
# Usage: run_comm_clock_cost.sh <build-dir> <results.jsonl> [shapes="8 512 mps fused;1 512 none graph"] [seconds=4] [reps=3]
#   a shape: "GMIs envs partition update"
set -uo pipefail
build=${1:?build directory}
out=${2:?results file}
IFS=';' read -r -a shapes <<< "${3:-8 512 mps fused;1 512 none graph}"
seconds=${4:-4}
reps=${5:-3}
export NCCL_NVLS_ENABLE=0
bin="$build/examples/cartpole_ppo/gmi.example.cartpole_ppo"
[ -x "$bin" ] || { echo "run_comm_clock_cost: no $bin (build gmi.example.cartpole_ppo)" >&2; exit 2; }
for s in "${shapes[@]}"; do
  read -r g e p u <<< "$s"
  [[ "$g" =~ ^[1-9][0-9]*$ && "$e" =~ ^[1-9][0-9]*$ ]] && [[ "$p" =~ ^(none|mps|green_context)$ ]] &&
    [[ "$u" =~ ^(fused|graph|eager)$ ]] ||
    { echo "run_comm_clock_cost: shape: got '$s', need \"GMIs envs partition update\" (partition none, mps or green_context; update fused, graph or eager)" >&2; exit 2; }
done
[[ "$seconds" =~ ^[0-9]+([.][0-9]+)?$ ]] && [[ ! "$seconds" =~ ^0+([.]0+)?$ ]] || { echo "run_comm_clock_cost: seconds: got $seconds, need a positive number" >&2; exit 2; }
[[ "$reps" =~ ^[1-9][0-9]*$ ]] || { echo "run_comm_clock_cost: reps: got $reps, need a positive integer" >&2; exit 2; }
for rep in $(seq "$reps"); do
  for s in "${shapes[@]}"; do
    read -r g e p u <<< "$s"
    launch=()
    [ "$p" = none ] && launch=(--launch processes)
    for clock in on off; do
      timeout $((${seconds%.*} + 120)) "$bin" --gpus 1 --gmis-per-gpu "$g" --num-envs "$e" --partition "$p" "${launch[@]}" \
        --minibatch-scope gmi --synced-update "$u" --comm-clock "$clock" --target-return nan --max-env-steps 1e15 \
        --max-seconds "$seconds" --log-interval 100 --metrics "$out" 2>&1 |
        grep -E "^gmi: (time|step|solved|diverged|communication)|rror" | sed "s|^|rep $rep $g x $e $p $u clock $clock: |"
    done
  done
done
