#!/usr/bin/env bash
# The asynchronous split layout on `gpus` GPUs for each of the paper's nine tasks, beside synchronous PPO:
#   split  per GPU 1 trainer + k-1 serving MPS GMIs with the paper's env count N each (--split-roles: the task's
#          colocated pipeline with its roles split; V-trace; the trainer's update replayed as one CUDA graph; with
#          several GPUs the trainers sum their gradients through NCCL inside each update);
#   k x N  k MPS GMIs a GPU of synchronous PPO;
#   base   one GMI a GPU with N envs (partition none): one process per GPU, the paper's baseline (with several
#          GPUs: processes, the gradients through NCCL between the steps, --synced-update graph).
# Every run trains for `seconds` (--max-seconds) from seed 1 with the task's defaults, `reps` times, alternating;
# each appends its end line to <results.jsonl> (train_samples_per_s is the compared number: the trainer's samples
# over its time for split; bench/plot makes the table in docs/results.md from bench/results/split/).
# `scopes` (--minibatch-scope) runs split and k x N once per scope: group (the trainer's minibatch is --minibatch;
# the group's, split over k GMIs) and/or gmi (each serving GMI's rollout, each GMI, brings its own --minibatch:
# rl_games' multi-GPU rule, the paper's); the baseline keeps one --minibatch.
# `slots` (--channel-slots) runs split once per count: the rollouts each serving GMI may have queued for the trainer;
# `clips` (--clip-against) once per choice: PPO's ratio over the acting policy (behaviour) or the learner's (learner).
# Usage: run_split_every_task.sh <build-dir> <results.jsonl> [k=8] [seconds=3] [reps=2] [tasks=all nine]
#        [scopes=group] [slots=4] [clips=behaviour] [gpus=1]
set -uo pipefail
build=${1:?build directory}
out=${2:?results file}
k=${3:-8}
seconds=${4:-3}
reps=${5:-2}
tasks=${6:-cartpole ball_balance quadcopter ingenuity ant_proxy anymal_proxy humanoid_proxy franka_cabinet_proxy shadow_hand_proxy}
scopes=${7:-group}
slot_counts=${8:-4}
clips=${9:-behaviour}
gpus=${10:-1}
refuse() { echo "run_split_every_task: $1" >&2; exit 2; }
[[ "$k" =~ ^[0-9]+$ ]] && ((k >= 2)) || refuse "k: got $k, need an integer >= 2 (1 trainer + serving GMIs)"
[[ "$seconds" =~ ^[0-9]+([.][0-9]+)?$ ]] && [[ ! "$seconds" =~ ^0+([.]0+)?$ ]] || refuse "seconds: got $seconds, need a positive number"
[[ "$reps" =~ ^[0-9]+$ ]] && ((reps >= 1)) || refuse "reps: got $reps, need a positive integer"
for sc in $scopes; do [[ "$sc" == group || "$sc" == gmi ]] || refuse "scopes: got $sc, need group and/or gmi"; done
for sl in $slot_counts; do
  [[ "$sl" =~ ^(1|2|4|8|16|32|64)$ ]] || refuse "slots: got $sl, need powers of two in 1..64"
done
for cl in $clips; do [[ "$cl" == behaviour || "$cl" == learner ]] || refuse "clips: got $cl, need behaviour and/or learner"; done
[[ "$gpus" =~ ^[1-9][0-9]*$ ]] || refuse "gpus: got $gpus, need a positive integer"
export NCCL_NVLS_ENABLE=0
source "$(dirname "$0")/paper_tasks.sh"  # paper_n, binary, check_tasks
check_task_names run_split_every_task $tasks
# the arguments first, then this machine
have=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ "$gpus" -le "$have" ] || refuse "gpus: got $gpus, need at most $have (this machine's GPUs)"
check_task_binaries run_split_every_task $tasks
base_flags=-
((gpus > 1)) && base_flags=--launch=processes,--synced-update=graph
for t in $tasks; do
  n=${paper_n[$t]}
  bin=$(binary "$t")
  for rep in $(seq "$reps"); do
    # label, GMIs, partition, extra flags (comma-separated; "-": none)
    configs=()
    for sc in $scopes; do
      for sl in $slot_counts; do
        for cl in $clips; do configs+=("split $k mps --split-roles,--minibatch-scope=$sc,--channel-slots=$sl,--clip-against=$cl"); done
      done
      configs+=("colocated $k mps --minibatch-scope=$sc")
    done
    configs+=("base 1 none $base_flags")
    for c in "${configs[@]}"; do
      read -r label g p extra <<< "$c"
      flags=()
      [ "$extra" != - ] && IFS=, read -r -a flags <<< "$extra"
      timeout $((${seconds%.*} + 150)) "$bin" --gpus "$gpus" --gmis-per-gpu "$g" --num-envs "$n" --partition "$p" --target-return nan \
        --max-env-steps 1e15 --max-seconds "$seconds" --log-interval 100 --metrics "$out" "${flags[@]}" 2>&1 |
        grep -E "^gmi: (step|time|solved|diverged|GPU util|weights)|rror| trainer [|]" | sed "s|^|$t rep $rep $gpus GPUs x $label $g x $n $extra: |"
    done
  done
done
