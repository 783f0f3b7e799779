#!/usr/bin/env bash
# Weak scaling of synchronous Cartpole PPO: the same GMIs on every GPU, 1 GPU against `gpus` GPUs, each GMI's
# minibatch its own (--minibatch-scope gmi, rl_games' multi-GPU rule, so a GPU's work per step stays the same as
# GPUs are added). Each shape "GMIs envs partition" runs on 1 GPU and on each count in `gpus`, `reps` times, the
# counts alternating, for `seconds` (--max-seconds) from seed 1; every end line goes to <results.jsonl> and bench/plot
# makes the table (weak scaling = samples/s on n GPUs / (n x samples/s on 1 GPU), medians). A one-GMI shape also
# runs alone (one GMI, no group: what one GPU does without the synced path), a second baseline.
# `updates` runs every synced configuration once per --synced-update (fused: the default; graph: NCCL between the
# steps), each its own row.
# Usage: run_weak_scaling.sh <build-dir> <results.jsonl> [gpus="2"] [shapes="1 4096 none;8 512 mps"] [seconds=4] [reps=3]
#        [updates=fused]
set -uo pipefail
build=${1:?build directory}
out=${2:?results file}
gpus=${3:-2}
IFS=';' read -r -a shapes <<< "${4:-1 4096 none;8 512 mps}"
seconds=${5:-4}
reps=${6:-3}
updates=${7:-fused}
export NCCL_NVLS_ENABLE=0
bin="$build/examples/cartpole_ppo/gmi.example.cartpole_ppo"
for s in "${shapes[@]}"; do
  read -r g e p <<< "$s"
  [[ "$g" =~ ^[1-9][0-9]*$ && "$e" =~ ^[1-9][0-9]*$ ]] && [[ "$p" =~ ^(none|mps|green_context)$ ]] ||
    { echo "run_weak_scaling: shape: got '$s', need \"GMIs envs partition\" (partition none, mps or green_context)" >&2; exit 2; }
done
for u in $updates; do
  case "$u" in fused|graph|eager) ;; *) echo "run_weak_scaling: updates: got $u, need fused, graph or eager" >&2; exit 2 ;; esac
done
# the arguments first, then this machine
have=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
for n in $gpus; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "run_weak_scaling: gpus: got $n, need a positive integer" >&2; exit 2; }
  [ "$n" -le "$have" ] || { echo "run_weak_scaling: gpus: got $n, need at most $have (this machine's GPUs)" >&2; exit 2; }
done
[ -x "$bin" ] || { echo "run_weak_scaling: no $bin (build gmi.example.cartpole_ppo)" >&2; exit 2; }
for rep in $(seq "$reps"); do
  for s in "${shapes[@]}"; do
    read -r g e p <<< "$s"
    launch=()
    [ "$p" = none ] && launch=(--launch processes)  # one process a GPU, as the GPUs' GMIs are then
    if [ "$g" = 1 ]; then  # one GMI alone, no group at all: the single-GPU run without the synced path's cost
      timeout $((${seconds%.*} + 120)) "$bin" --gpus 1 --gmis-per-gpu 1 --num-envs "$e" --partition none --target-return nan \
        --max-env-steps 1e15 --max-seconds "$seconds" --log-interval 100 --metrics "$out" 2>&1 |
        grep -E "^gmi: (time|step|solved|diverged)|rror" | sed "s|^|rep $rep alone 1 x $e: |"
    fi
    for u in $updates; do
      for n in 1 $gpus; do
        timeout $((${seconds%.*} + 120)) "$bin" --gpus "$n" --gmis-per-gpu "$g" --num-envs "$e" --partition "$p" "${launch[@]}" \
          --minibatch-scope gmi --synced-update "$u" --target-return nan --max-env-steps 1e15 --max-seconds "$seconds" \
          --log-interval 100 --metrics "$out" 2>&1 | grep -E "^gmi: (time|step|solved|diverged|communication)|rror" |
          sed "s|^|rep $rep $n GPU(s) x $g x $e $p $u: |"
      done
    done
  done
done
