#!/usr/bin/env bash
# PPO training throughput with the PyTorch anchor's networks (Isaac Gym's sizes: Ant 256-128-64, Humanoid
# 200-400-100, ShadowHand 512-512-512-256), one GMI beside the anchor (shared/anchors/torch_isaacgym_style.py
# --mode train) at the paper's env count, same horizon (16), minibatch (8192) and epochs (8), `seconds` each,
# `reps` times alternating. Both append JSON lines to <results.jsonl> (gmi: gmi::run's end line; the anchor: its
# output with task and impl added). The tasks' env steps differ: gmi's *_proxy are dense LQ systems, the anchor's
# an elementwise proxy, so the update dominates both. bench/plot makes the table in docs/results.md.
# Usage: run_isaac_nets_vs_anchor.sh <build-dir> <anchor.py> <results.jsonl> [seconds=4] [reps=2]
set -uo pipefail
build=${1:?build directory}
anchor=${2:?path to torch_isaacgym_style.py}
out=${3:?results file}
seconds=${4:-4}
reps=${5:-2}
export NCCL_NVLS_ENABLE=0
git=${GMI_GIT_REVISION:-unknown}
for pair in "ant_proxy ant 1024" "humanoid_proxy humanoid 4096" "shadow_hand_proxy shadowhand 4096"; do
  read -r task anchor_env n <<< "$pair"
  bin="$build/examples/task_ppo/gmi.example.${task}_isaac_net_ppo"
  [ -x "$bin" ] || { echo "run_isaac_nets_vs_anchor: no $bin (build with -DGMI_BUILD_ALL_TASK_EXAMPLES=ON)" >&2; exit 2; }
  for rep in $(seq "$reps"); do
    timeout $((seconds + 120)) "$bin" --num-envs "$n" --target-return nan --max-env-steps 1e15 --max-seconds "$seconds" \
      --log-interval 100 --metrics "$out" 2>&1 | grep -E "^gmi: (time|step)|rror" | sed "s|^|$task rep $rep gmi: |"
    line=$(timeout $((seconds + 120)) python3 "$anchor" --mode train --env "$anchor_env" --num-envs "$n" --seconds "$seconds")
    echo "$task rep $rep anchor: $line"
    python3 -c 'import json,sys; r=json.loads(sys.argv[1]); r.update(task=sys.argv[2], impl="anchor", event="end", git=sys.argv[3], num_envs=int(sys.argv[4])); print(json.dumps(r))' \
      "$line" "$task" "$git" "$n" >> "$out"
  done
done
