#!/usr/bin/env bash
# GPU machine, from the repository root, with .carry/debs carried (bench/actors/carry_mujoco.sh here first):
# several GMIs of CPU actors. Unpacks MuJoCo into /tmp/gmi-mujoco (dpkg -x, never into /), builds only the actor
# tests, the ratio bench and the on_cpu example, then
#   1. the actor tests, host and GPU (ctest: actors.* incl. actors.gmis.* and actors_gpu.*, plan.placement.*,
#      plan.ratio.*, example.cartpole_on_cpu.*: the host restart),
#   2. the CPU/GPU ratio sweep on MuJoCo Ant over 1, 2 and 4 GMIs x 1, 3, 7, 14 actor cores per GMI x 64 and 256
#      envs per core (each GMI's cores and driver core disjoint): steps/s and steps/J lines,
#   3. the choice from that sweep (gmi.bench.actors_choose_ratio),
#   4. Cartpole PPO on CPU actors with 2 GMIs on the GPU (threads, then MPS processes where the MPS control
#      binary exists), 7 actor cores each, until solved or 3 M env steps: the group's end line,
#   5. the same group with --checkpoint and --restart-on-failure, GMI 1 killed after iteration 8 by the test hook:
#      restarted from the checkpoint at iteration 5 (the actors' environments restored), finished,
#   6. --population of 2 GMIs on the GPU, 7 actor cores each: the members side by side.
# Result lines land in $OUT/actors_multi/. About 3-4 min of build and 4 of runs.
set -euo pipefail
OUT=${OUT:-/tmp/out}
dir="$OUT/actors_multi"
mkdir -p "$dir"
source bench/actors/configure_mujoco.sh "$dir"
time cmake --build /tmp/build -j16 --target gmi.test.actors gmi.test.actors_mujoco gmi.test.actors_gpu \
  gmi.test.plan gmi.bench.actors_ratio gmi.bench.actors_choose_ratio gmi.example.cartpole_on_cpu \
  > "$dir/build.log" 2>&1 || { tail -40 "$dir/build.log"; exit 1; }
device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "device: $device; host CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-); $(nproc) cores"

# 1. The actor tests (host and GPU; GPU ones skip with 77 where there is no GPU).
ctest --test-dir /tmp/build -R '^(actors|plan\.(placement|ratio)|example\.cartpole_on_cpu)' --output-on-failure --timeout 300 2>&1 \
  | tee "$dir/ctest.log" | tail -6

# 2-3. The ratio sweep over 1, 2, 4 GMIs, then the planner's choice from it.
model=tests/physics/models/ant_floor.xml
timeout 240 /tmp/build/bench/actors/gmi.bench.actors_ratio "$model" "$dir/ratio.jsonl" 2 16 1,2,4 1,3,7,14 64,256 \
  > "$dir/ratio.log" 2>&1 || { tail -5 "$dir/ratio.log"; echo "ratio sweep failed"; }
grep -c '"steps_per_s"' "$dir/ratio.jsonl" | sed 's/^/ratio points (steps\/s): /'
/tmp/build/bench/actors/gmi.bench.actors_choose_ratio "$dir/ratio.jsonl" "$dir/ratio_choice.jsonl" || true

# 4. PPO on CPU actors with 2 GMIs on one GPU: disjoint actor cores, one synchronous group.
example=/tmp/build/examples/cartpole_on_cpu/gmi.example.cartpole_on_cpu
run_group() {  # name, extra flags...
  local name=$1; shift
  local rc=0
  timeout 150 "$example" --gmis-per-gpu 2 --actor-cores-per-gmi 7 --num-envs 448 --max-env-steps 3e6 \
    --target-return 450 --metrics "$dir/train_$name.metrics.jsonl" "$@" > "$dir/train_$name.log" 2>&1 || rc=$?
  # The run's end line (written by the colocated run) as a result line.
  python3 - "$dir/train_$name.metrics.jsonl" "$name" "$rc" "$device" >> "$dir/train.jsonl" <<'PY'
import json, os, sys
path, name, rc, device = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
lines = [json.loads(l) for l in open(path)] if os.path.exists(path) else []
end = next((l for l in reversed(lines) if "weights_identical" in l), {})
rate = end.get("train_samples_per_s")
print(json.dumps({"bench": "cpu_actors_gmis", "case": "cartpole_ppo_2gmis_" + name, "impl": "gmi.actors.on_cpu",
                  "metric": "train_samples_per_s", "median": rate, "min": rate, "max": rate, "gmis": 2,
                  "actor_cores_per_gmi": 7, "reason": end.get("reason"), "mean_return": end.get("mean_return"),
                  "weights_identical": end.get("weights_identical"), "exit_code": rc, "device": device,
                  "git": os.environ.get("GMI_GIT_REVISION"), "run_id": end.get("run_id", "device_multi")}))
PY
  echo "train $name: exit $rc; $(grep "identical on every GMI\|DIFFER\|got " "$dir/train_$name.log" | tail -1)"
}
run_group threads --launch threads || true
if command -v nvidia-cuda-mps-control >/dev/null; then run_group mps --partition mps || true; fi

# 5. Restarts with CPU actors on the GPU: GMI 1 SIGKILLs itself after iteration 8 (attempt 1 only).
rc=0
GMI_TEST_KILL_AT=1:8 timeout 90 "$example" --gmis-per-gpu 2 --actor-cores-per-gmi 7 --num-envs 448 \
  --target-return nan --max-env-steps $((2 * 448 * 16 * 20)) --checkpoint "$dir/restart.ckpt" --checkpoint-every 5 \
  --restart-on-failure --log-interval 1 > "$dir/restart.log" 2>&1 || rc=$?
finished=$(grep -c "finished after 1 restart" "$dir/restart.log" || true)
echo "restart: exit $rc; $(grep "restart 1 of\|finished after" "$dir/restart.log" | tr '\n' ' ')"
echo "{\"bench\":\"cpu_actors_gmis\",\"case\":\"cartpole_restart_2gmis_kill_rank1\",\"impl\":\"gmi.actors.on_cpu\",\"metric\":\"finished_after_restart\",\"median\":$finished,\"min\":$finished,\"max\":$finished,\"exit_code\":$rc,\"device\":\"$device\",\"git\":\"${GMI_GIT_REVISION:-$(cat .carry/git-rev 2>/dev/null || echo unknown)}\",\"run_id\":\"device_multi\"}" >> "$dir/train.jsonl"

# 6. A population of 2 GMIs with CPU actors on the GPU.
rc=0
timeout 90 "$example" --population --gmis-per-gpu 2 --actor-cores-per-gmi 7 --num-envs 448 --max-env-steps 3e6 \
  --target-return 450 --metrics "$dir/population.metrics.jsonl" > "$dir/population.log" 2>&1 || rc=$?
echo "population: exit $rc; $(grep "population of" "$dir/population.log" | tail -1)"
echo "result lines: $(cat "$dir"/*.jsonl | wc -l) in $dir"
