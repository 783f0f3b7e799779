#!/usr/bin/env bash
# The split layout over seeds (issue 34: "the split layout solves Cartpole in 10 of 10 seeds"): Cartpole APPO
# (gmi.example.cartpole_appo: one trainer GMI, k-1 serving GMIs under MPS, V-trace) for seeds 1..N, each stopping
# when solved (mean return >= 450 over >= 32 episodes) or at the step limit. Appends every run's end line to
# <results.jsonl> and prints one line per seed and the count solved.
# Usage: run_split_seeds.sh <build-dir> <results.jsonl> [seeds=10] [k=8] [envs per GMI=512] [steps=20000000]
set -uo pipefail
build=${1:?build directory}
out=${2:?results file}
seeds=${3:-10}
k=${4:-8}
envs=${5:-512}
steps=${6:-20000000}
bin="$build/examples/cartpole_appo/gmi.example.cartpole_appo"
[ -x "$bin" ] || { echo "run_split_seeds: no $bin (build gmi.example.cartpole_appo)" >&2; exit 2; }
[[ "$seeds" =~ ^[1-9][0-9]*$ ]] || { echo "run_split_seeds: seeds: got $seeds, need a positive integer" >&2; exit 2; }
export NCCL_NVLS_ENABLE=0
solved=0
for seed in $(seq "$seeds"); do
  line=$(timeout 300 "$bin" --seed "$seed" --partition mps --gmis-per-gpu "$k" --num-envs "$envs" --target-return 450 \
           --max-env-steps "$steps" --log-interval 100 --metrics "$out" 2>&1 | grep -E "^gmi: (step|solved|time|training)" | tail -1)
  echo "split seed $seed: ${line:-no end line}"
  [[ "$line" == "gmi: solved"* ]] && solved=$((solved + 1))
done
echo "split: solved $solved of $seeds seeds"
