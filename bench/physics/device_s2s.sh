#!/usr/bin/env bash
# Sim-to-sim on a GPU machine (issue 35 item 6): each physics task's example (gmi.example.<task>_ppo: gmi::run's
# default PPO, 64-64 network) trains on the GPU with NUM_ENVS environments (default 16384) for TRAIN_S seconds of
# training (default 40), the tasks concurrently as separate processes, and saves its checkpoint (--checkpoint);
# then gmi.tool.sim2sim (tests/physics/sim2sim_tool.cpp) evaluates each policy on CPU, EPISODES deterministic
# episodes (default 32) on gmi::physics (host) and on MuJoCo (Debian's libmujoco from .carry/debs, double) with the
# same MJCF file, start states, observation and reward code, the tasks in parallel over the machine's cores.
# Target: return on MuJoCo / return on gmi >= 0.9 for every task.
# Tasks: TASKS (default "ant_v4 humanoid_v4 anymal ant humanoid"). The whole script stays within BUDGET_S
# (default 330 s, the build included: ~230 s cold at -j16); every step has a timeout cut to the time left, and the
# training is cut below TRAIN_S when the build leaves less (the lines' "train_seconds" says how long it trained);
# a task whose example did not build in time is dropped with a line that says so (exit 1).
# Environment: OUT (results), BUILD (default /tmp/build: the gpu preset with GMI_BUILD_ALL_TASK_EXAMPLES=ON and
# MuJoCo and pugixml unpacked from .carry/debs), JOBS (default 16: the build's jobs and the evaluation's threads in
# all), CUDA_VISIBLE_DEVICES (the caller's GPU), S2S_SPREAD=1 (CUDA_VISIBLE_DEVICES unset on a multi-GPU machine: task k
# trains alone on GPU k mod the GPUs).
# Output under $OUT:
#   s2s.jsonl          one line per task: the tool's {"bench":"sim2sim","task":..,"episodes":N,"return_gmi":..,
#                      "return_mujoco":..,"ratio":..,"len_gmi":..,"len_mujoco":..,"git":..,"device":"host",...}
#                      with "trained_on" (the GPU), "train_seconds", "train_end" (the example's last line) and run_id
#   s2s-summary.txt    a line per task: the ratio against 0.9
#   <task>-train.log, <task>-s2s.log, build.log, configure.log
# Usage: bench/physics/device_s2s.sh (from the repository root).
set -uo pipefail
name=s2s
start_s=$(date +%s)
source "$(dirname "$0")/device_common.sh"
source bench/actors/unpack_mujoco.sh

budget_s=${BUDGET_S:-330}
train_s=${TRAIN_S:-40}
num_envs=${NUM_ENVS:-16384}
episodes=${EPISODES:-32}
export JOBS=${JOBS:-16}
read -r -a tasks <<< "${TASKS:-ant_v4 humanoid_v4 anymal ant humanoid}"
for v in "$budget_s" "$train_s" "$num_envs" "$episodes" "$JOBS"; do
  [[ "$v" =~ ^[1-9][0-9]*$ ]] || { echo "device_s2s.sh: got '$v' for BUDGET_S, TRAIN_S, NUM_ENVS, EPISODES or JOBS, need a positive integer"; exit 2; }
done
(( ${#tasks[@]} > 0 )) || { echo "device_s2s.sh: got no task in TASKS, need some of ant_v4 humanoid_v4 anymal ant humanoid"; exit 2; }
targets=(gmi.tool.sim2sim)
for t in "${tasks[@]}"; do
  case "$t" in
    ant_v4|humanoid_v4|anymal|ant|humanoid) targets+=("gmi.example.${t}_ppo") ;;
    isaac_*) echo "device_s2s.sh: task '$t' is now called '${t#isaac_}' (the Gymnasium-style one is '${t#isaac_}_v4')"; exit 2 ;;
    *) echo "device_s2s.sh: got task '$t' in TASKS, need some of ant_v4 humanoid_v4 anymal ant humanoid"; exit 2 ;;
  esac
done
left() { echo $(( start_s + budget_s - $(date +%s) )); }
summary=$out/s2s-summary.txt
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }

configure_build -DGMI_BUILD_ALL_TASK_EXAMPLES=ON
cmake --build "$build" --target help 2>/dev/null | grep -q "gmi.tool.sim2sim" ||
  { say "device_s2s.sh: gmi.tool.sim2sim is not a target of $build (MuJoCo or pugixml not found: configure.log)"; exit 1; }
# Keep 70 s after the build: at least 15 s of training, 20 s for the examples' start and save, 35 s to evaluate.
eval_reserve_s=35
start_reserve_s=20
build_s=$(( $(left) - 15 - start_reserve_s - eval_reserve_s ))
(( build_s >= 30 )) || { say "device_s2s.sh: ${build_s} s left for the build, need >= 30"; exit 1; }
# One build of every target (each example is one nvcc compile, so they build side by side); where it fails or
# times out, the tasks whose example was linked by this build go on and the rest are dropped.
build_started=$(date +%s)
build_ok=1
sleep 1  # a binary linked by this build is newer than the mark
touch /tmp/gmi-s2s-build-mark
timeout "$build_s" cmake --build "$build" -j"$JOBS" --target "${targets[@]}" > "$out/build.log" 2>&1 ||
  { build_ok=0; status=1; grep -E "error|Error" "$out/build.log" | head -10; echo "build failed or timed out after $(( $(date +%s) - build_started )) s"; }
echo "build: $(( $(date +%s) - build_started )) s for ${targets[*]}"
up_to_date() { [[ -x "$1" ]] && { (( build_ok )) || [[ "$1" -nt /tmp/gmi-s2s-build-mark ]]; }; }
tool=$build/tests/physics/gmi.tool.sim2sim
up_to_date "$tool" || { say "device_s2s.sh: gmi.tool.sim2sim did not build (build.log)"; exit 1; }
built=()
for t in "${tasks[@]}"; do
  if up_to_date "$build/examples/task_ppo/gmi.example.${t}_ppo"; then built+=("$t"); else say "$t: its example did not build in time (build.log)"; fi
done
(( ${#built[@]} > 0 )) || { say "device_s2s.sh: no example built"; exit 1; }
tasks=("${built[@]}")
device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "device: $device"

# Training: every task at once, each its own process; a run is done when its log says the checkpoint is written
# (gmi::run saves at the stop, then evaluates 256 episodes on the host, which this script does not wait for).
ckpts=/tmp/gmi-s2s-checkpoints
rm -rf "$ckpts" && mkdir -p "$ckpts"
t_train=$(( $(left) - eval_reserve_s ))  # wall-clock for the trainings, start and save included
(( t_train >= start_reserve_s + 5 )) || { say "device_s2s.sh: ${t_train} s left for training, need >= $((start_reserve_s + 5))"; exit 1; }
run_train_s=$(( train_s < t_train - start_reserve_s ? train_s : t_train - start_reserve_s ))
declare -A pid
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
k=0
for t in "${tasks[@]}"; do
  # S2S_SPREAD=1 with CUDA_VISIBLE_DEVICES unset: task k trains alone on GPU k mod the GPUs (a multi-GPU machine)
  [ "${S2S_SPREAD:-0}" = 1 ] && [ -z "${CUDA_VISIBLE_DEVICES:-}" ] && (( ngpu > 1 )) && export CUDA_VISIBLE_DEVICES=$(( k % ngpu ))
  k=$((k + 1))
  timeout "$t_train" "$build/examples/task_ppo/gmi.example.${t}_ppo" --device gpu --num-envs "$num_envs" --seed 1 \
    --max-env-steps 1000000000 --max-seconds "$run_train_s" --log-interval 10 --checkpoint "$ckpts/$t.gmi" \
    > "$out/$t-train.log" 2>&1 &
  pid[$t]=$!
  [ "${S2S_SPREAD:-0}" = 1 ] && (( ngpu > 1 )) && unset CUDA_VISIBLE_DEVICES
done
echo "== training ${tasks[*]} for ${run_train_s} s each, concurrently ($num_envs envs, wall limit ${t_train} s)"
deadline=$(( $(date +%s) + t_train ))
while (( $(date +%s) < deadline )); do
  done_all=1
  for t in "${tasks[@]}"; do
    grep -q "^gmi: checkpoint" "$out/$t-train.log" 2>/dev/null || { kill -0 "${pid[$t]}" 2>/dev/null && done_all=0; }
  done
  (( done_all )) && break
  sleep 1
done
for t in "${tasks[@]}"; do
  kill "${pid[$t]}" 2>/dev/null  # past its save: the end-of-run evaluation is not needed here
  wait "${pid[$t]}" 2>/dev/null
done

# Evaluation: every task at once on the CPU, the cores shared out.
threads=$(( JOBS / ${#tasks[@]} ))  # JOBS: the cores this script may use (16 of a shared machine)
(( threads >= 1 )) || threads=1
t_eval=$(( $(left) - 3 ))
(( t_eval >= 5 )) || t_eval=5
echo "== sim2sim: $episodes episodes per task, $threads threads each (limit ${t_eval} s)"
declare -A epid
for t in "${tasks[@]}"; do
  if [[ ! -s "$ckpts/$t.gmi" ]]; then
    say "$t: no checkpoint (training failed or ran out of time: $t-train.log)"
    tail -3 "$out/$t-train.log"
    status=1
    continue
  fi
  timeout "$t_eval" "$tool" --checkpoint "$ckpts/$t.gmi" --episodes "$episodes" \
    --threads "$threads" > "$out/$t-s2s.log" 2>&1 &
  epid[$t]=$!
done
for t in "${!epid[@]}"; do
  wait "${epid[$t]}" || { status=1; say "$t: gmi.tool.sim2sim failed or timed out: $(tail -1 "$out/$t-s2s.log")"; }
done

python3 - "$out" "$lines" "$run_id" "$device" "$run_train_s" "${tasks[@]}" <<'PY' | tee -a "$summary"
import json, os, sys
out, dest, run_id, device, train_s = sys.argv[1:6]
rows, below = [], []
for task in sys.argv[6:]:
    log = os.path.join(out, f"{task}-s2s.log")
    line = next((l for l in open(log) if l.startswith("{")), None) if os.path.exists(log) else None
    if line is None:
        continue
    r = json.loads(line)
    train = [l.strip() for l in open(os.path.join(out, f"{task}-train.log")) if l.startswith("gmi: ")]
    r.update({"trained_on": device, "train_seconds": float(train_s), "train_end": train[-1] if train else None,
              "run_id": run_id})
    rows.append(r)
    met = r["return_gmi"] > 0 and r["ratio"] >= 0.9  # a ratio of returns that are not positive measures nothing
    if not met:
        below.append(task)
    print(f"{task:>15}: return on MuJoCo {r['return_mujoco']:.1f} / on gmi {r['return_gmi']:.1f} = {r['ratio']:.3f} "
          f"(target >= 0.9: {'met' if met else 'NOT met'}); episode length {r['len_mujoco']:.0f} vs "
          f"{r['len_gmi']:.0f}, same end in {r['same_end']} of {r['episodes']}; first {r['compare_steps']} steps' "
          f"observations within {r['early_obs_diff']:.3g}")
with open(dest, "a") as f:
    for r in rows:
        f.write(json.dumps(r) + "\n")
print(f"{len(rows)} tasks evaluated, {len(rows) - len(below)} at or above 0.9" + (f" (below: {' '.join(below)})" if below else ""))
sys.exit(0 if rows else 1)
PY
(( PIPESTATUS[0] == 0 )) || status=1
rm -f /tmp/gmi-s2s-build-mark
echo "lines: $lines; $(( $(date +%s) - start_s )) s in all (budget ${budget_s} s)" | tee -a "$summary"
exit $status
