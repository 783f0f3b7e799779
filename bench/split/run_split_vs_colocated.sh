#!/usr/bin/env bash
# The split layout (1 trainer + k-1 serving GMIs, asynchronous, V-trace) beside the colocated layout (k GMIs of
# synchronous PPO) on one GPU, same partition, same envs per GMI, a fixed number of env steps, `reps` times each,
# alternating; every run appends its end line to <results.jsonl> (train_samples_per_s is the compared number).
# Usage: run_split_vs_colocated.sh <build-dir> <results.jsonl> [partitions="green_context mps"] [k=4] [envs=256]
#        [steps=10000000] [reps=3]
set -uo pipefail
build=${1:?build directory}
out=${2:?results file}
partitions=${3:-green_context mps}
k=${4:-4}
envs=${5:-256}
steps=${6:-10000000}
reps=${7:-3}
export NCCL_NVLS_ENABLE=0
appo="$build/examples/cartpole_appo/gmi.example.cartpole_appo"
ppo="$build/examples/cartpole_ppo/gmi.example.cartpole_ppo"
for p in $partitions; do
  for rep in $(seq "$reps"); do
    for bin in "$appo" "$ppo"; do
      timeout 300 "$bin" --partition "$p" --gmis-per-gpu "$k" --num-envs "$envs" --target-return nan \
        --max-env-steps "$steps" --log-interval 100 --metrics "$out" 2>&1 | grep -E "^gmi: (step|solved|time)" |
        sed "s|^|$p rep $rep $(basename "$bin"): |"
    done
  done
done
