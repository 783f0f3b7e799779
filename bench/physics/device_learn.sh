#!/usr/bin/env bash
# PPO on the physics tasks, as a user runs it: gmi.example.ant_v4_ppo and gmi.example.humanoid_v4_ppo (gmi::run with
# gmi's default PPO: horizon 16, minibatch 8192, 8 epochs, lr 3e-4, 64-64 network) on one GPU, SEEDS seeds each
# (default 3, from FIRST_SEED, default 1) of the tasks in TASKS (default "ant_v4 humanoid_v4"), a fixed env-step budget
# per run (ANT_STEPS, default 30 M; HUMANOID_STEPS, default 20 M) with NUM_ENVS environments (default 16384). Runs
# alternate between the tasks (ant_v4 seed 1, humanoid_v4 seed 1, ant_v4 seed 2, ...) and share the time left after the
# build until LEARN_BUDGET_S (default 500 s from the script's start): a run that reaches its share before its
# budget stops there (gmi::run's time limit) and its lines say how far it got ("env_steps"). For the full budgets
# of every seed, split the tasks over calls (TASKS=ant_v4, then TASKS=humanoid_v4: a warm machine keeps $BUILD).
# Output under $OUT:
#   metrics/<task>-seed<k>.jsonl   gmi::run's metrics lines (--metrics, a progress line every 2 s and the end line)
#   physics_learn.jsonl            result lines, one per run: {"bench":"physics_learning","task":..,"impl":"gmi",
#                                  "seed":..,"metric":"mean_return","final":..,"final_length":..,"env_steps":..,
#                                  "wall_s":..,"eval_return":..,"eval_length":.. (the end line's deterministic
#                                  evaluation),"curve":[[env steps, mean return]..],"wall_curve":[[seconds, mean
#                                  return]..],"length_curve":[[env steps, mean episode length]..],..};
#                                  and one per task over seeds ("metric":"final_mean_return", median, min, max)
#   build.log, configure.log, <task>-seed<k>.log
# bench/plot draws a panel per task (return against env steps and against seconds) from these lines once they
# are under bench/results/physics-learning/. Usage: bench/physics/device_learn.sh (from the repository root).
set -uo pipefail
name=physics_learn
start_s=$(date +%s)
source "$(dirname "$0")/device_common.sh"

seeds=${SEEDS:-3}
first_seed=${FIRST_SEED:-1}
num_envs=${NUM_ENVS:-16384}
budget_s=${LEARN_BUDGET_S:-500}
read -r -a tasks <<< "${TASKS:-ant_v4 humanoid_v4}"
declare -A steps=([ant_v4]=${ANT_STEPS:-30000000} [humanoid_v4]=${HUMANOID_STEPS:-20000000})
for v in "$seeds" "$first_seed" "$num_envs" "$budget_s" "${steps[ant_v4]}" "${steps[humanoid_v4]}"; do
  [[ "$v" =~ ^[1-9][0-9]*$ ]] || { echo "device_learn.sh: got '$v' for SEEDS, FIRST_SEED, NUM_ENVS, LEARN_BUDGET_S, ANT_STEPS or HUMANOID_STEPS, need a positive integer"; exit 2; }
done
(( ${#tasks[@]} > 0 )) || { echo "device_learn.sh: got no task in TASKS, need ant_v4, humanoid_v4 or both"; exit 2; }
targets=()
for t in "${tasks[@]}"; do
  [[ "$t" == ant_v4 || "$t" == humanoid_v4 ]] || { echo "device_learn.sh: got task '$t' in TASKS, need ant_v4 or humanoid_v4"; exit 2; }
  targets+=("gmi.example.${t}_ppo")
done

configure_build -DGMI_BUILD_ALL_TASK_EXAMPLES=ON
build_targets 330

mkdir -p "$out/metrics"
runs=()
for ((s = first_seed; s < first_seed + seeds; ++s)); do
  for t in "${tasks[@]}"; do runs+=("$t:$s"); done
done
left_runs=${#runs[@]}
for r in "${runs[@]}"; do
  task=${r%%:*}
  seed=${r##*:}
  now=$(date +%s)
  share=$(( (start_s + budget_s - now) / left_runs ))
  left_runs=$((left_runs - 1))
  if (( share < 20 )); then
    echo "== $task seed $seed: skipped, ${share} s left for it"
    status=1
    continue
  fi
  # --max-seconds counts training; the start (GPU context, trainer set-up) and the final evaluation come besides.
  train_s=$((share - 20))
  echo "== $task seed $seed: ${steps[$task]} env steps or ${train_s} s of training, $num_envs envs"
  metrics=$out/metrics/$task-seed$seed.jsonl
  timeout $((share + 20)) "$build/examples/task_ppo/gmi.example.${task}_ppo" --device gpu --num-envs "$num_envs" \
    --seed "$seed" --max-env-steps "${steps[$task]}" --max-seconds "$train_s" --log-interval 2 \
    --metrics "$metrics" > "$out/$task-seed$seed.log" 2>&1 || { status=1; tail -5 "$out/$task-seed$seed.log"; }
  grep -E "^gmi: .*(step limit|time limit|solved|stopped)" "$out/$task-seed$seed.log" | tail -2
done

python3 - "$out/metrics" "$lines" "$run_id" "$git_rev" "$device" <<'PY' || status=1
import glob, json, os, statistics, sys
folder, dest, run_id, git, device = sys.argv[1:]
rows, finals = [], {}
for f in sorted(glob.glob(os.path.join(folder, "*.jsonl"))):
    ls = [json.loads(l) for l in open(f) if l.strip()]
    prog = [l for l in ls if l.get("event") != "end" and "env_steps" in l]
    end = [l for l in ls if l.get("event") == "end"]
    if not prog:
        print(f"{f}: no metrics lines", file=sys.stderr)
        continue
    last = end[-1] if end else prog[-1]
    task, seed = last["task"], last.get("seed")
    curve = [[l["env_steps"], l["mean_return"]] for l in prog if l.get("mean_return") is not None]
    if end and end[-1].get("curve"):  # the end line's curve has a point per iteration
        curve = [[x, y] for x, y in end[-1]["curve"] if y is not None]
    wall = [[l["wall_s"], l["mean_return"]] for l in prog if l.get("mean_return") is not None]
    lengths = [[l["env_steps"], l["mean_length"]] for l in prog if l.get("mean_length") is not None]
    final = last.get("mean_return")
    rows.append({"bench": "physics_learning", "task": task, "impl": "gmi", "seed": seed, "metric": "mean_return",
                 "final": final, "env_steps": last.get("env_steps"), "wall_s": last.get("wall_s"),
                 "num_envs": last.get("num_envs"), "network": last.get("network"), "ended": bool(end),
                 "final_length": last.get("mean_length"), "eval_return": last.get("eval_return"),
                 "eval_length": last.get("eval_length"), "curve": curve, "wall_curve": wall,
                 "length_curve": lengths, "device": device, "git": git, "run_id": run_id})
    if final is not None:
        finals.setdefault(task, []).append(final)
    print(f"{task:>9} seed {seed}: mean return {final} (episodes of {last.get('mean_length')} steps) after "
          f"{last.get('env_steps', 0) / 1e6:.1f} M env steps, {last.get('wall_s', 0):.0f} s; deterministic "
          f"evaluation {last.get('eval_return')} ({last.get('eval_length')} steps)")
for task, v in sorted(finals.items()):
    rows.append({"bench": "physics_learning", "task": task, "impl": "gmi", "metric": "final_mean_return",
                 "median": statistics.median(v), "min": min(v), "max": max(v), "seeds": len(v),
                 "device": device, "git": git, "run_id": run_id})
    print(f"{task:>9}: final mean return median {statistics.median(v):.1f} (min {min(v):.1f}, max {max(v):.1f}) "
          f"over {len(v)} seeds")
with open(dest, "a") as f:
    for r in rows:
        f.write(json.dumps(r) + "\n")
PY
echo "lines: $lines (copy into bench/results/physics-learning/ and run bench/plot); $(( $(date +%s) - start_s )) s in all"
exit $status
