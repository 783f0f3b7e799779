#!/usr/bin/env bash
# The split layout (1 trainer + k-1 serving GMIs, asynchronous, V-trace) beside the colocated layout (k GMIs of
# synchronous PPO) on one GPU, same partition, same envs per GMI, a fixed number of env steps, `reps` times each,
# alternating; every run appends its end line to <results.jsonl> (train_samples_per_s is the compared number).
# `graphs` runs the split layout once per --learner-graph value (on: the trainer replays its update as one CUDA
# graph; off: kernel by kernel). With one_process=yes each round also runs the paper's baseline, one process of
# `envs` environments (partition none, one GMI), whose samples/s the asynchronous target (>= 1.65x) divides by.
# Usage: run_split_vs_colocated.sh <build-dir> <results.jsonl> [partitions="green_context mps"] [k=4] [envs=256]
#        [steps=10000000] [reps=3] [graphs=on] [one_process=no]
set -uo pipefail
build=${1:?build directory}
out=${2:?results file}
partitions=${3:-green_context mps}
k=${4:-4}
envs=${5:-256}
steps=${6:-10000000}
reps=${7:-3}
graphs=${8:-on}
one_process=${9:-no}
refuse() { echo "run_split_vs_colocated: $1" >&2; exit 2; }
[[ "$k" =~ ^[0-9]+$ ]] && ((k >= 2)) || refuse "k: got $k, need an integer >= 2 (1 trainer + serving GMIs)"
[[ "$envs" =~ ^[0-9]+$ ]] && ((envs >= 1)) || refuse "envs: got $envs, need a positive integer"
[[ "$reps" =~ ^[0-9]+$ ]] && ((reps >= 1)) || refuse "reps: got $reps, need a positive integer"
for g in $graphs; do [[ "$g" == on || "$g" == off ]] || refuse "graphs: got $g, need on and/or off"; done
[[ "$one_process" == yes || "$one_process" == no ]] || refuse "one_process: got $one_process, need yes or no"
export NCCL_NVLS_ENABLE=0
appo="$build/examples/cartpole_appo/gmi.example.cartpole_appo"
ppo="$build/examples/cartpole_ppo/gmi.example.cartpole_ppo"
run() {  # <label> <binary> <args...>
  local label=$1 bin=$2
  shift 2
  timeout 300 "$bin" "$@" --num-envs "$envs" --target-return nan --max-env-steps "$steps" --log-interval 100 \
    --metrics "$out" 2>&1 | grep -E "^gmi: (step|solved|time|GPU util)" | sed "s|^|$label: |"
}
for p in $partitions; do
  for rep in $(seq "$reps"); do
    for g in $graphs; do
      run "$p rep $rep split (learner graph $g)" "$appo" --partition "$p" --gmis-per-gpu "$k" --learner-graph "$g"
    done
    run "$p rep $rep colocated" "$ppo" --partition "$p" --gmis-per-gpu "$k"
    if [[ "$one_process" == yes ]]; then
      run "rep $rep one process" "$ppo" --partition none --gmis-per-gpu 1
    fi
  done
done
