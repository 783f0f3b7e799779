#!/usr/bin/env bash
# Issue 38's two CPU-actor targets on ONE GPU (CUDA_VISIBLE_DEVICES set by the caller) and 16 cores, cold, within 6
# minutes including the build, from the repository root with .carry/debs carried (MuJoCo's .debs:
# bench/actors/carry_mujoco.sh) and optionally .carry/mujoco-deepmind (bench/actors/carry_mujoco_deepmind.sh):
#   1. builds gmi.bench.actors_rate, gmi.bench.actors_train and gmi.test.actors_gpu in $BUILD (default
#      /tmp/build-actors, -j$JOBS, default 16);
#   2. the per-core rate (gmi.bench.actors_rate, Ant of include/gmi/physics/builtin/ant_v4.xml, 128 envs a core, at 1
#      and 14 threads): bare mj_step loop, gmi's sim, the CPU actors with stealing (gmi.cpu_actors, the default now)
#      and without (gmi.cpu_actors_static, the loop before), their busy fractions, one thread's env step taken apart
#      (us_per_env_step_profile: mj_step and its stages against gmi's task code) and one reset each way;
#   3. CPU-actor PPO on Ant at 14 actor cores (gmi.bench.actors_train, GPU policy and update): env steps/s and busy
#      fraction per phase, "collect" (stealing) against "collect_static" (without) in the same process;
#   4. the GPU tests of actors (gmi.test.actors_gpu, ctest -R '^actors_gpu\.'; seconds on an H200);
#   5. 2 and 3 again with DeepMind's build of MuJoCo 2.2.2 first on LD_LIBRARY_PATH when it was carried.
# Every step has a timeout cut to what is left of BUDGET_S (default 345 s from the start); a step that cannot fit
# prints "skipped". Lines (device, git, run_id added): $OUT/actors.jsonl; summary: stdout and $OUT/actors-summary.txt;
# logs: $OUT/actors/. Cores: GMI_RATE_CPUS (a taskset list, default 0-14: 14 actor threads and the driver).
set -uo pipefail
start_s=$(date +%s)
budget_s=${BUDGET_S:-345}
source "$(dirname "$0")/device_actors_common.sh"
cpus=${GMI_RATE_CPUS:-0-14}
targets=(gmi.bench.actors_rate gmi.bench.actors_train gmi.test.actors_gpu)
build_targets 240
echo "cores: $cpus of $(nproc --all); host CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-);" \
  "$(lscpu | grep -E '^(Thread|Core|Socket)\(s\)|^NUMA node\(s\)' | tr -s ' ' | tr '\n' ';')"

bench_dir=$build/bench/actors
measure() {  # $1: debian | deepmind
  step "rate_$1" 90 taskset -c "$cpus" "$bench_dir/gmi.bench.actors_rate" "$logs/rate_$1.jsonl" "$model" 0.5 128 1 14
  GMI_ACTORS_TRAIN_ANT_ONLY=1 step "train_$1" 80 taskset -c "$cpus" "$bench_dir/gmi.bench.actors_train" \
    "$logs/train_$1.jsonl" "$model" 0.7 14
}
measure debian
step gpu_tests 150 ctest --test-dir "$build" -R '^actors_gpu\.' --output-on-failure --timeout 140
# ctest's lines "N/M Test #N: NAME ....   Passed   1.23 sec": the tests that passed, failed, and those not reached.
gpu_log=$logs/gpu_tests.log
touch "$gpu_log"
gpu_tests="$(grep -c ' Passed ' "$gpu_log" 2>/dev/null) passed,"
gpu_tests+=" $(grep -cE '\*\*\*(Failed|Timeout|Exception)' "$gpu_log" 2>/dev/null) failed"
gpu_tests+=" of $(grep -c 'TEST_CASE' tests/actors_gpu/actors_gpu_test.cpp) ($gpu_log)"
if [ -f .carry/mujoco-deepmind/libmujoco.so.2.2.2 ]; then
  LD_LIBRARY_PATH="$PWD/.carry/mujoco-deepmind:$LD_LIBRARY_PATH" measure deepmind
else
  echo "no .carry/mujoco-deepmind/libmujoco.so.2.2.2: DeepMind's build not measured (bench/actors/carry_mujoco_deepmind.sh)"
fi
python3 - "$lines" "$device" "$git_rev" "$run_id" "$gpu_tests" "$logs"/rate_debian.jsonl "$logs"/train_debian.jsonl \
  "$logs"/rate_deepmind.jsonl "$logs"/train_deepmind.jsonl <<'PY' | tee "$out/actors-summary.txt"
import json, os, sys
out, device, git, run_id, gpu_tests, *paths = sys.argv[1:]
rows = []
for p in paths:
    if os.path.exists(p):
        for l in open(p):
            if l.strip():
                d = json.loads(l)
                d.update({"device": device, "git": git, "run_id": run_id,
                          "mujoco_build": "deepmind" if "deepmind" in os.path.basename(p) else "debian"})
                rows.append(d)
with open(out, "w") as f:
    for d in rows:
        f.write(json.dumps(d) + "\n")
print(f"== actors at {git} on {device} (run {run_id}); targets: 20000 env steps/s per core, busy fraction >= 0.90")
order = ["mj_position", "mj_position.kinematics", "mj_position.inertia", "mj_position.collision",
         "mj_position.make_constraint", "mj_position.project_constraint", "mj_velocity", "mj_actuation",
         "mj_acceleration", "mj_constraint_solver", "mj_step_rest"]
def ok(x, target):
    return "MET" if x >= target else "not met"
for lib in ("debian", "deepmind"):
    mine = [d for d in rows if d["mujoco_build"] == lib]
    if not mine:
        continue
    print(f"-- MuJoCo build: {lib} ({mine[0].get('mujoco_library', '?')})")
    for d in mine:
        if d.get("metric") == "steps_per_s_per_core":
            busy = f", busy {d['busy_fraction']:.3f}, stolen {d['stolen_fraction']:.3f}" if "busy_fraction" in d else ""
            print(f"  {d['impl']:22s} threads {d['threads']:2d}: {d['median']:7.0f} env steps/s per core (wall), "
                  f"{d['steps_per_cpu_s']:7.0f} per CPU s [{ok(d['steps_per_cpu_s'], 20000)} vs 20000], "
                  f"x{d['ratio_to_bare']:.3f} of bare, episode {d['mean_episode_length']:.0f}{busy}")
        elif d.get("metric") == "us_per_env_step_profile":
            p = d["us_parts"]
            print(f"  one env step {d['median']:.1f} us: mj_step {p['mj_step']:.1f} ({100 * d['share_mj_step']:.1f}%), "
                  f"gmi task code {p['task_code']:.1f} ({100 * d['share_task_code']:.1f}%); in mj_step: " +
                  ", ".join(f"{k.replace('mj_', '')} {p[k]:.1f}" for k in order if k in p) +
                  f"; contacts {d['contacts_per_substep']:.2f}, solver iterations {d['solver_iterations_per_substep']:.2f} a substep")
        elif d.get("metric") == "us_per_reset":
            print(f"  reset {d['impl']:15s} {d['median']:.1f} us")
        elif d.get("bench") == "cpu_actors_ppo" and "busy_fraction" in d:
            print(f"  PPO {d['task']} {d['actor_cores']:2d} cores {d['phase']:14s}: {d['median']:8.0f} env steps/s "
                  f"({d['median'] / d['actor_cores']:6.0f} a core), busy {d['busy_fraction']:.3f}"
                  + (f" [{ok(d['busy_fraction'], 0.90)} vs 0.90]" if d["phase"].startswith("collect") else ""))
    coll = {d["phase"]: d for d in mine if d.get("bench") == "cpu_actors_ppo"}
    if "collect" in coll and "collect_static" in coll:
        a, b = coll["collect"], coll["collect_static"]
        print(f"  => PPO collect busy {a['busy_fraction']:.3f} with stealing against {b['busy_fraction']:.3f} without; "
              f"env steps/s x{a['median'] / b['median']:.3f}")
print(f"GPU tests of actors: {gpu_tests}")
print(f"result lines: {len(rows)} in {out}")
PY
echo "total $(( $(date +%s) - start_s )) s (budget $budget_s s)"
exit "$status"
