#!/usr/bin/env bash
# On ONE GPU of a GPU machine (CUDA_VISIBLE_DEVICES=N set by the caller), from the repository root, cold, in about 5
# minutes with the build (-j16; every step has a timeout, the whole stays under 6): isaac_ant (issue 35's ant: Isaac
# Gym's observation and reward, an env step of 1/60 s in 2 physics steps; include/gmi/envs/isaac_ant.hpp) on the GPU:
#   1. gmi.test.physics_tasks_gpu's isaac_ant cases (envs_gpu.physics_tasks.*<gmi::envs::isaac_ant>: host and device
#      step by step, the warp layouts against the thread layout, shared slices, the staged path, the rule, the env
#      driver's warp path against its thread path);
#   2. gmi.bench.physics_tasks: env steps/s of isaac_ant and ant (physics + observation + reward + auto-reset, random
#      actions, the default path) at 16384 and 65536 environments, medians of 3; each line carries the task's
#      control_dt, physics_dt and physics_substeps;
#   3. PPO on isaac_ant as a user runs it (gmi.example.isaac_ant_ppo: gmi::run's default PPO, NUM_ENVS environments,
#      default 16384, seed 1, --max-seconds 60 or the time left): the return curve's first and last points.
# Result lines (JSON) go to $OUT/isaac_ant.jsonl (bench "physics" lines of gmi.bench.physics_tasks; one
# {"bench":"physics_learning","task":"isaac_ant",...,"first":[env steps, mean return],"last":[...],"curve":[...]}),
# logs to $OUT/isaac_ant-*.log, and a summary to stdout and $OUT/isaac_ant-summary.txt: each rate against issue 35's
# 15 M env steps/s and against ant's at the same count in this run (also in simulated seconds per second).
# Usage: CUDA_VISIBLE_DEVICES=0 OUT=/path bench/physics/device_isaac_ant.sh   (BUILD: default /tmp/build-phys9; JOBS:
#        default 16; BUDGET_S: default 340; NUM_ENVS: default 16384)
set -uo pipefail
name=isaac_ant
BUILD=${BUILD:-/tmp/build-phys9}
JOBS=${JOBS:-16}
# shellcheck source=bench/physics/device_common.sh
source "$(dirname "$0")/device_common.sh"
start_all=$(date +%s)
summary=$out/isaac_ant-summary.txt
num_envs=${NUM_ENVS:-16384}
[[ "$num_envs" =~ ^[1-9][0-9]*$ ]] || { echo "device_isaac_ant.sh: NUM_ENVS: got '$num_envs', need a positive integer"; exit 2; }
left() { echo $(( ${BUDGET_S:-340} - ($(date +%s) - start_all) )); }  # BUDGET_S: the whole script's seconds
# A timeout of at most $1 seconds that leaves $2 seconds (default 0) for the later steps (at least 15).
cap() { local l; l=$(( $(left) - ${2:-0} )); echo $(( l > $1 ? $1 : (l > 15 ? l : 15) )); }

configure_build -DGMI_BUILD_ALL_TASK_EXAMPLES=ON
targets=(gmi.test.physics_tasks_gpu gmi.bench.physics_tasks gmi.example.isaac_ant_ppo)
build_targets 230
bench=$build/bench/physics/gmi.bench.physics_tasks

echo "== gmi.test.physics_tasks_gpu, the isaac_ant cases ($(left) s left)"
# At most 90 s, keeping 120 s for the bench and PPO.
timeout "$(cap 90 120)" "$build/tests/envs_gpu/gmi.test.physics_tasks_gpu" -s -tc='*isaac_ant*' \
  > "$out/isaac_ant-test_gpu.log" 2>&1 || { status=1; echo "gmi.test.physics_tasks_gpu (isaac_ant) failed or ran out of time"; }
grep -E "MESSAGE" "$out/isaac_ant-test_gpu.log" | sed 's/^.*MESSAGE: //' | head -30
grep -E "ERROR|FAILED" "$out/isaac_ant-test_gpu.log" | head -10
tail -3 "$out/isaac_ant-test_gpu.log"

echo "== bench: isaac_ant and ant at 16384 and 65536 environments, default path ($(left) s left)"
# At most 60 s, keeping 80 s for PPO.
timeout "$(cap 60 80)" "$bench" --tasks isaac_ant,ant --envs 16384 65536 --steps 40 --warmup 5 --reps 3 \
  --run-id "$run_id" --git "$git_rev" --out "$lines" > "$out/isaac_ant-bench.log" 2>&1 ||
  { status=1; echo "bench failed or ran out of time:"; tail -5 "$out/isaac_ant-bench.log"; }

# PPO: --max-seconds counts training; the start and the final evaluation come besides (30 s kept for them).
train_s=$(( $(left) - 30 ))
(( train_s > 60 )) && train_s=60
metrics=$out/isaac_ant-ppo-metrics.jsonl
if (( train_s >= 10 )); then
  echo "== PPO: gmi.example.isaac_ant_ppo, $num_envs envs, ${train_s} s of training ($(left) s left)"
  timeout $((train_s + 30)) "$build/examples/task_ppo/gmi.example.isaac_ant_ppo" --device gpu --num-envs "$num_envs" \
    --seed 1 --max-seconds "$train_s" --log-interval 2 --metrics "$metrics" > "$out/isaac_ant-ppo.log" 2>&1 ||
    { status=1; tail -5 "$out/isaac_ant-ppo.log"; }
  grep -E "^gmi: .*(step limit|time limit|solved|stopped)" "$out/isaac_ant-ppo.log" | tail -2
else
  status=1
  echo "== PPO skipped: ${train_s} s left for training"
fi

python3 - "$lines" "$run_id" "$metrics" "$git_rev" "${device:-unknown}" > "$summary" <<'PY'
import json, os, sys
dest, run_id, metrics, git, device = sys.argv[1:]
target = 15e6
rows = []
if os.path.exists(dest):
    rows = [json.loads(l) for l in open(dest) if l.strip()]
rates = {(r["task"], r["num_envs"]): r for r in rows
         if r.get("bench") == "physics" and r.get("run_id") == run_id and r.get("metric") == "steps_per_s"}
print(f"isaac_ant on {device}, run {run_id} (env steps/s: physics + observation + reward + auto-reset, median of 3)")
for n in (16384, 65536):
    i, a = rates.get(("isaac_ant", n)), rates.get(("ant", n))
    if not i:
        print(f"  {n:>6} envs: no isaac_ant line")
        continue
    m = i["median"]
    line = (f"  {n:>6} envs: isaac_ant {m / 1e6:.2f} M/s ({m / target:.2f}x issue 35's 15 M) on {i.get('path')}, "
            f"env step {i.get('control_dt', 0):.4f} s = {i.get('physics_substeps')} x {i.get('physics_dt', 0):.5f} s, "
            f"{m * i.get('control_dt', 0) / 1e3:.0f} k simulated s/s")
    if a:
        am = a["median"]
        line += (f"; ant {am / 1e6:.2f} M/s ({am / target:.2f}x 15 M, env step {a.get('control_dt', 0):.3f} s, "
                 f"{am * a.get('control_dt', 0) / 1e3:.0f} k simulated s/s): isaac_ant/ant {m / am:.2f}x")
    print(line)
ls = []
if os.path.exists(metrics):
    ls = [json.loads(l) for l in open(metrics) if l.strip()]
prog = [l for l in ls if l.get("event") != "end" and l.get("mean_return") is not None and "env_steps" in l]
end = [l for l in ls if l.get("event") == "end"]
curve = [[l["env_steps"], l["mean_return"]] for l in prog]
if end and end[-1].get("curve"):
    curve = [[x, y] for x, y in end[-1]["curve"] if y is not None]
if curve:
    last = end[-1] if end else prog[-1]
    print(f"  PPO isaac_ant: mean return {curve[0][1]:.1f} at {curve[0][0] / 1e6:.2f} M env steps -> {curve[-1][1]:.1f} "
          f"at {curve[-1][0] / 1e6:.2f} M ({last.get('wall_s', 0):.0f} s; episodes of {last.get('mean_length')} steps; "
          f"deterministic evaluation {last.get('eval_return')})")
    with open(dest, "a") as f:
        f.write(json.dumps({"bench": "physics_learning", "task": "isaac_ant", "impl": "gmi", "seed": 1,
                            "metric": "mean_return", "first": curve[0], "last": curve[-1], "curve": curve,
                            "env_steps": last.get("env_steps"), "wall_s": last.get("wall_s"),
                            "num_envs": last.get("num_envs"), "final_length": last.get("mean_length"),
                            "eval_return": last.get("eval_return"), "ended": bool(end), "device": device,
                            "git": git, "run_id": run_id}) + "\n")
else:
    print("  PPO isaac_ant: no return curve (see isaac_ant-ppo.log)")
PY
cat "$summary"
echo "lines: $lines; $(( $(date +%s) - start_all )) s in all"
exit $status
