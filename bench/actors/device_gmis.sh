#!/usr/bin/env bash
# GPU machine (16 cores, 1 or 2 GPUs), from the repository root, with .carry carried (.carry/debs: MuJoCo from
# bench/actors/carry_mujoco.sh, pugixml from bench/physics/carry_pugixml.sh): GMIs of CPU actors on GPUs.
# Builds only the actor tests, the on_cpu example and the two actor benches it runs (-j16), then, while time is
# left (BUDGET_S, default 500 s from the start; a step whose time limit would pass it writes a "skipped" line):
#   1. the GPU tests of actors (ctest actors_gpu.*: incl. MuJoCo Ant resumed from a checkpoint with the GPU trainer,
#      weights and MuJoCo state bit for bit) and the host MuJoCo tests (actors.mujoco.*: the same resume on host and
#      the mutated checkpoint sections refused);
#   2. Cartpole PPO on CPU actors, GMIs as one synchronous group on GPU 0: 2 and 4 GMIs as MPS processes; actor
#      cores per GMI = cores / GMIs - 1 (one driver core each), 64 envs a core; until mean return 450 or 3 M env
#      steps: training samples/s, weights identical;
#   3. --restart-on-failure: GMI 1 of 2 SIGKILLs itself after iteration 8 (GMI_TEST_KILL_AT), the group resumes
#      from the checkpoint of iteration 5 (the actors' environments restored): seconds from the failure to the next
#      attempt's first iteration, iterations lost, weights identical at the end;
#   4. --population of 2 CPU-actor GMIs on GPU 0: members solved;
#   5. gmi.bench.actors_train (Cartpole at 1, 3, 7, 14 actor cores: CPU-actor training, GPU-simulation training,
#      the placement line), gmi.bench.actors_place (the same for ant_v4, humanoid_v4 and anymal: MuJoCo on the actors,
#      gmi::physics on the GPU; built beside the rest, skipped when its build is not done in time; each task while
#      time is left) and gmi.bench.actors_check_threshold:
#      does threshold 1 pick the side that trained faster, per task;
#   6. while time is left: step 2 with 2 GMIs as threads (the baseline), 2 MPS GMIs on each of 2 GPUs, step 3 as MPS;
#   7. the other host tests of actors (actors.*, plan.placement.*, plan.ratio.*, example.cartpole_on_cpu.*).
# Result lines: $OUT/actors_gmis.jsonl; logs packed into $OUT/actors_gmis_logs.tgz (few files come back).
set -uo pipefail
name=actors_gmis
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/../physics" && pwd)/device_common.sh"
source bench/actors/unpack_mujoco.sh
t0=$(date +%s)
budget=${BUDGET_S:-500}
logs=$out/actors_gmis
mkdir -p "$logs"
left() { echo $((budget - ($(date +%s) - t0))); }
device=unknown

# One result line: case, metric, value (a JSON number or null), then extra JSON fields (without braces).
emit() {
  local extra=${4:+,$4}
  echo "{\"bench\":\"cpu_actors_gmis\",\"case\":\"$1\",\"impl\":\"gmi.actors.on_cpu\",\"metric\":\"$2\",\"median\":$3,\"min\":$3,\"max\":$3$extra,\"device\":\"$device\",\"git\":\"$git_rev\",\"run_id\":\"$run_id\"}" |
    tee -a "$lines"
}
# Runs step $1 only when $2 seconds are left; otherwise a skipped line.
fits() {
  if (($(left) < $2)); then
    emit "$1" skipped null "\"reason\":\"$(left) s of the script's budget left, the step needs $2\""
    return 1
  fi
}
finish() {
  [ -n "$ant_v4_pid" ] && kill -- -"$ant_v4_pid" 2>/dev/null
  (cd "$out" && tar czf actors_gmis_logs.tgz actors_gmis && rm -rf actors_gmis)
  echo "result lines: $(wc -l < "$lines") in $lines; logs in $out/actors_gmis_logs.tgz; $(( $(date +%s) - t0 )) s"
  exit "$status"
}

# 0. Build only what runs here.
configure_build
mujoco=1
grep -q "^GMI_MUJOCO_LIBRARY:.*mujoco" "$build/CMakeCache.txt" || { mujoco=0; echo "MuJoCo not found by CMake: its tests skip"; }
targets=(gmi.test.actors gmi.test.actors_gpu gmi.example.cartpole_on_cpu gmi.bench.actors_train
         gmi.bench.actors_check_threshold)
((mujoco)) && targets+=(gmi.test.actors_mujoco)
# The placement bench of the MuJoCo tasks (gmi::physics on the GPU: a long compile) builds beside everything else, niced, in a build
# folder of its own; step 5 waits for it while time is left and goes without it otherwise.
ant_v4_build=${build}-ant
ant_v4_pid=
if ((mujoco)); then
  setsid bash -c "cmake --preset gpu -B '$ant_v4_build' -DGMI_BUILD_BENCHMARKS=ON > '$logs/configure_ant_v4.log' 2>&1 &&
    nice -n 10 cmake --build '$ant_v4_build' -j8 --target gmi.bench.actors_place > '$logs/build_ant_v4.log' 2>&1;
    echo \$? > '$logs/build_ant_v4.rc'" &
  ant_v4_pid=$!
fi
build_targets 300
cores=$(nproc)
gpus=$(nvidia-smi -L | wc -l)
echo "host: $cores cores, $gpus GPU(s), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
example=$build/examples/cartpole_on_cpu/gmi.example.cartpole_on_cpu
have_mps=0
command -v nvidia-cuda-mps-control >/dev/null && have_mps=1

# 1. GPU tests of actors, and the host MuJoCo tests (the resume and the mutated sections).
if fits gpu_tests 150; then
  timeout 150 ctest --test-dir "$build" -R '^(actors_gpu\.|actors\.mujoco\.)' --output-on-failure --timeout 150 \
    > "$logs/ctest_gpu_mujoco.log" 2>&1
  tail -4 "$logs/ctest_gpu_mujoco.log"
  passed=$(grep -c " Passed " "$logs/ctest_gpu_mujoco.log")
  failed=$(grep -cE "\*\*\*Failed|Not Run|Timeout" "$logs/ctest_gpu_mujoco.log")
  emit actor_tests_gpu_and_mujoco tests_passed "$passed" "\"failed\":$failed"
  for t in actors_gpu.ppo.mujoco_ant_v4_resume_is_exact actors.mujoco.resume_continues_the_same_trajectories; do
    ok=$(grep -cE " $t \.+ +Passed" "$logs/ctest_gpu_mujoco.log")
    ((mujoco)) || ok=null
    emit "mujoco_resume_${t%%.*}" weights_and_env_state_identical "$ok" "\"test\":\"$t\""
  done
  ((failed > 0)) && status=1
fi

# 2. A synchronous group of CPU-actor GMIs: case, GMIs a GPU, GPUs, timeout, flags...
run_group() {
  local case=$1 per_gpu=$2 ngpus=$3 lim=$4
  shift 4
  local gmis=$((per_gpu * ngpus))
  local per=$((cores / gmis - 1)) rc=0
  local envs=$((per * 64))
  timeout "$lim" "$example" --gpus "$ngpus" --gmis-per-gpu "$per_gpu" --actor-cores-per-gmi "$per" \
    --num-envs "$envs" --max-env-steps 3e6 --target-return 450 --metrics "$logs/$case.metrics.jsonl" "$@" \
    > "$logs/$case.log" 2>&1 || rc=$?
  python3 - "$logs/$case.metrics.jsonl" "$rc" "$gmis" "$per" "$envs" > "$logs/$case.fields" <<'PY'
import json, os, sys
path, rc, gmis, per, envs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
lines = [json.loads(l) for l in open(path)] if os.path.exists(path) else []
end = next((l for l in reversed(lines) if "weights_identical" in l), {})
rate = end.get("train_samples_per_s")
print(json.dumps(rate), json.dumps({"gmis": gmis, "actor_cores_per_gmi": per, "num_envs_per_gmi": envs,
      "reason": end.get("reason"), "mean_return": end.get("mean_return"), "iteration": end.get("iteration"),
      "weights_identical": end.get("weights_identical"), "exit_code": rc})[1:-1])
PY
  local value fields
  read -r value fields < "$logs/$case.fields"
  emit "$case" train_samples_per_s "$value" "$fields"
  echo "  $case: exit $rc; $(grep -E "identical on every GMI|DIFFER|got .*need" "$logs/$case.log" | tail -1)"
  ((rc != 0)) && status=1
}
if ((have_mps)); then
  fits cartpole_ppo_mps_2gmis 80 && run_group cartpole_ppo_mps_2gmis 2 1 80 --partition mps
  fits cartpole_ppo_mps_4gmis 80 && run_group cartpole_ppo_mps_4gmis 4 1 80 --partition mps
else
  emit cartpole_ppo_mps skipped null "\"reason\":\"no nvidia-cuda-mps-control on this machine\""
fi

# 3. A killed GMI restarted from its checkpoint: case, timeout, flags...
run_restart() {
  local case=$1 lim=$2
  shift 2
  local per=$((cores / 2 - 1)) rc=0
  local envs=$((per * 64))
  rm -rf "$logs/$case.ckpt"*
  GMI_TEST_KILL_AT=1:8 timeout "$lim" "$example" --gmis-per-gpu 2 --actor-cores-per-gmi "$per" --num-envs "$envs" \
    --target-return nan --max-env-steps $((2 * envs * 16 * 20)) --checkpoint "$logs/$case.ckpt" \
    --checkpoint-every 5 --restart-on-failure --log-interval 1 "$@" > "$logs/$case.log" 2>&1 || rc=$?
  local finished resume lost identical
  finished=$(grep -c "finished after 1 restart" "$logs/$case.log")
  resume=$(grep -oE "[0-9.]+ s from failure to the next attempt" "$logs/$case.log" | tail -1 | cut -d' ' -f1)
  lost=$(grep -oE "lost [0-9]+ iterations" "$logs/$case.log" | tail -1 | cut -d' ' -f2)
  identical=$(grep -c "identical on every GMI" "$logs/$case.log")
  emit "$case" seconds_failure_to_first_iteration "${resume:-null}" \
    "\"finished_after_restart\":$finished,\"iterations_lost\":${lost:-null},\"weights_identical\":$identical,\"killed\":\"GMI 1 after iteration 8\",\"checkpoint_every\":5,\"exit_code\":$rc"
  echo "  $case: exit $rc; $(grep -E "restart 1 of|finished after" "$logs/$case.log" | tr '\n' ' ')"
  ((rc != 0 || finished != 1)) && status=1
}
fits cartpole_restart_threads_kill_rank1 80 && run_restart cartpole_restart_threads_kill_rank1 80 --launch threads

# 4. A population of CPU-actor GMIs on GPU 0.
if fits cartpole_population_2gmis 75; then
  per=$((cores / 2 - 1))
  rc=0
  timeout 75 "$example" --population --gmis-per-gpu 2 --actor-cores-per-gmi "$per" --num-envs $((per * 64)) \
    --max-env-steps 3e6 --target-return 450 > "$logs/population.log" 2>&1 || rc=$?
  summary=$(grep "population of" "$logs/population.log" | tail -1)
  solved=$(echo "$summary" | grep -oE "[0-9]+ of [0-9]+ solved" | cut -d' ' -f1)
  emit cartpole_population_2gmis members_solved "${solved:-null}" "\"members\":2,\"actor_cores_per_gmi\":$per,\"exit_code\":$rc"
  echo "  population: exit $rc; $summary"
  ((rc != 0)) && status=1
fi

# 5. The placement threshold against training: CPU actors vs GPU simulation, and the rule's choice at each point
# (Cartpole: gmi.bench.actors_train; ant_v4, humanoid_v4, anymal, MuJoCo on the actors against gmi::physics on the GPU:
# actors_place).
if fits placement_threshold 120; then
  timeout 120 "$build/bench/actors/gmi.bench.actors_train" "$logs/train.jsonl" - 0.3 1 3 7 14 > "$logs/train.log" 2>&1 ||
    { tail -3 "$logs/train.log"; status=1; }
  cat "$logs/train.jsonl" >> "$lines" 2>/dev/null
fi
if ((mujoco)); then
  waited=0
  while [ ! -f "$logs/build_ant_v4.rc" ] && ((waited < 60)); do sleep 5; waited=$((waited + 5)); done
  for task in ant_v4 humanoid_v4 anymal; do
    fits "placement_threshold_$task" 90 || continue
    if [ "$(cat "$logs/build_ant_v4.rc" 2>/dev/null)" = 0 ]; then
      timeout 80 "$ant_v4_build/bench/actors/gmi.bench.actors_place" "$logs/train.jsonl" "$task" 0.3 1 3 7 14 \
        > "$logs/place_$task.log" 2>&1 || { tail -3 "$logs/place_$task.log"; status=1; }
      grep "\"task\": *\"$task\"" "$logs/train.jsonl" >> "$lines"
    else
      emit "placement_threshold_$task" skipped null "\"reason\":\"gmi.bench.actors_place not built (waited $waited s; see build_ant_v4.log)\""
    fi
  done
fi
if [ -s "$logs/train.jsonl" ]; then
  "$build/bench/actors/gmi.bench.actors_check_threshold" "$logs/train.jsonl" "$logs/threshold.jsonl" 1 > /dev/null
  echo "  threshold 1 right at every point: exit $? (0 yes, 1 no, 2 no data)"
  cat "$logs/threshold.jsonl" 2>/dev/null | tee -a "$lines" | grep '"placement_threshold"'
fi

# 6. Lower priority, while time is left: the threads baseline of the MPS group, MPS over 2 GPUs, an MPS restart.
fits cartpole_ppo_threads_2gmis 80 && run_group cartpole_ppo_threads_2gmis 2 1 80 --launch threads
if ((have_mps)); then
  ((gpus >= 2)) && fits cartpole_ppo_mps_2gpus_x2gmis 80 && run_group cartpole_ppo_mps_2gpus_x2gmis 2 2 80 --partition mps
  fits cartpole_restart_mps_kill_rank1 80 && run_restart cartpole_restart_mps_kill_rank1 80 --partition mps
fi

# 7. The other host tests of actors.
if fits actor_tests_host 60; then
  timeout $(($(left) - 10)) ctest --test-dir "$build" -L cpu -R '^(actors\.|plan\.(placement|ratio)|example\.cartpole_on_cpu)' \
    -E '^actors\.mujoco\.' --output-on-failure --timeout 120 > "$logs/ctest_host.log" 2>&1
  tail -3 "$logs/ctest_host.log"
  emit actor_tests_host tests_passed "$(grep -c " Passed " "$logs/ctest_host.log")" \
    "\"failed\":$(grep -cE "\*\*\*Failed|Not Run|Timeout" "$logs/ctest_host.log")"
fi

# Every line gets the device, revision and run id.
python3 - "$lines" "$device" "$git_rev" "$run_id" <<'PY'
import json, sys
path, device, git, run_id = sys.argv[1:5]
rows = [json.loads(l) for l in open(path) if l.strip()]
with open(path, "w") as f:
    for r in rows:
        r.setdefault("device", device); r["git"] = r.get("git") or git; r.setdefault("run_id", run_id)
        f.write(json.dumps(r) + "\n")
PY
finish
