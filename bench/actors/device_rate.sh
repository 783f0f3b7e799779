#!/usr/bin/env bash
# GPU machine, ONE GPU (CUDA_VISIBLE_DEVICES; may run beside another script on a 2-GPU host), cold, from the
# repository root with .carry/debs carried (MuJoCo's .debs: bench/actors/carry_mujoco.sh). Stays on the cores of
# GMI_RATE_CPUS (a taskset list, default 0-14: 14 actor cores and the driver; give the other script other cores) and
# builds in its own folder (GMI_RATE_BUILD, default /tmp/build-actorsrate). Builds gmi.bench.actors_rate and
# gmi.bench.actors_train, then:
#   1. gmi.bench.actors_rate at 1 and 14 threads on the Ant model gmi uses (include/gmi/physics/builtin/ant.xml,
#      frame_skip 5, 128 envs a core): a bare mj_step loop (mj_resetData resets), gmi's sim alone, gmi's CPU actors
#      (double-buffered hand-off); env steps/s per core on the wall clock and per CPU second, ratio to bare, the
#      actors' busy fraction;
#   2. gmi.bench.actors_train at 1 and 14 actor cores: PPO on CPU actors with the GPU trainer, Cartpole and MuJoCo Ant
#      (phases stepping / collect / train, fraction_of_stepping and busy_fraction per phase: the issue's ">= 90%").
# Result lines: $OUT/actors_rate.jsonl; logs in $OUT/actors_rate/. About 2-3 min of build, 2 of runs.
set -uo pipefail
out=${OUT:-/tmp/out}
logs=$out/actors_rate
mkdir -p "$logs"
lines=$out/actors_rate.jsonl
: > "$lines"
cpus=${GMI_RATE_CPUS:-0-14}
build=${GMI_RATE_BUILD:-/tmp/build-actorsrate}
export GMI_GIT_REVISION=${GMI_GIT_REVISION:-$(cat .carry/git-rev 2>/dev/null || git rev-parse --short HEAD)}
t0=$(date +%s)
source bench/actors/unpack_mujoco.sh
cmake --preset gpu -B "$build" -DGMI_BUILD_BENCHMARKS=ON > "$logs/configure.log" 2>&1 \
  || { tail -20 "$logs/configure.log"; exit 1; }
grep -q "^GMI_MUJOCO_LIBRARY:.*mujoco" "$build/CMakeCache.txt" \
  || { echo "MuJoCo not found by CMake (see $logs/configure.log)"; exit 2; }
cmake --build "$build" -j"${GMI_RATE_JOBS:-16}" --target gmi.bench.actors_rate gmi.bench.actors_train \
  > "$logs/build.log" 2>&1 || { tail -30 "$logs/build.log"; exit 1; }
echo "built in $(( $(date +%s) - t0 )) s; GPU: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1);" \
  "cores: $cpus of $(nproc --all); host CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
status=0
model=include/gmi/physics/builtin/ant.xml
timeout 150 taskset -c "$cpus" "$build/bench/actors/gmi.bench.actors_rate" "$lines" "$model" 1 128 1 14 \
  > "$logs/rate.log" 2>&1 || { echo "actors_rate: exit $?"; tail -3 "$logs/rate.log"; status=1; }
python3 - "$lines" <<'EOF'
import json, sys
for l in open(sys.argv[1]):
    d = json.loads(l)
    print(f"{d['impl']:15s} threads {d['threads']:2d}: {d['median']:8.0f} steps/s per core (wall), "
          f"{d['steps_per_cpu_s']:8.0f} per CPU s, ratio to bare {d['ratio_to_bare']:.3f}, "
          f"episode length {d['mean_episode_length']:.0f}" + (f", busy {d['busy_fraction']:.3f}" if 'busy_fraction' in d else ""))
EOF
timeout 200 taskset -c "$cpus" "$build/bench/actors/gmi.bench.actors_train" "$logs/train.jsonl" "$model" 1 1 14 \
  > "$logs/train.log" 2>&1 || { echo "actors_train: exit $?"; tail -3 "$logs/train.log"; status=1; }
cat "$logs/train.jsonl" >> "$lines" 2>/dev/null
python3 - "$logs/train.jsonl" <<'EOF'
import json, sys
try:
    rows = [json.loads(l) for l in open(sys.argv[1])]
except FileNotFoundError:
    rows = []
for d in rows:
    if d.get("bench") == "cpu_actors_ppo" and "busy_fraction" in d:
        print(f"PPO {d['task']:8s} cores {d['actor_cores']:2d} {d['phase']:8s}: {d['median']:9.0f} env steps/s, "
              f"{d['median'] / d['actor_cores']:7.0f} per core, of stepping {d['fraction_of_stepping']:.3f}, "
              f"busy {d['busy_fraction']:.3f}")
EOF
echo "result lines: $(wc -l < "$lines") in $lines; $(( $(date +%s) - t0 )) s"
exit "$status"
