#!/usr/bin/env bash
# GPU machine, ONE GPU (CUDA_VISIBLE_DEVICES; may run beside another script on a 2-GPU host), cold, from the
# repository root with .carry/debs carried (MuJoCo's .debs: bench/actors/carry_mujoco.sh). Stays on the cores of
# GMI_RATE_CPUS (a taskset list, default 0-14: 14 actor cores and the driver; give the other script other cores) and
# builds in its own folder (GMI_RATE_BUILD, default /tmp/build-actorsrate). Builds gmi.bench.actors_rate and
# gmi.bench.actors_train, then:
#   1. gmi.bench.actors_rate at 1 and 14 threads on the Ant model gmi uses (include/gmi/physics/builtin/ant_v4.xml,
#      frame_skip 5, 128 envs a core): a bare mj_step loop (mj_resetData resets), gmi's sim alone, gmi's CPU actors
#      (double-buffered hand-off); env steps/s per core on the wall clock and per CPU second, ratio to bare, the
#      actors' busy fraction; and one reset timed alone both ways;
#   2. gmi.bench.actors_train at 1 and 14 actor cores: PPO on CPU actors with the GPU trainer, Cartpole and MuJoCo Ant
#      (phases stepping / collect / train, fraction_of_stepping and busy_fraction per phase: the issue's ">= 90%");
#   3. when .carry/mujoco-deepmind was carried (bench/actors/carry_mujoco_deepmind.sh): 1 and the Ant of 2 again
#      with DeepMind's build of MuJoCo 2.2.2 (AVX) first on LD_LIBRARY_PATH ("mujoco_library" in every line).
# Result lines: $OUT/actors_rate.jsonl; logs in $OUT/actors_rate/. About 2-3 min of build, 3 of runs.
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
model=include/gmi/physics/builtin/ant_v4.xml
summary() {
python3 - "$@" <<'PYEOF'
import json, sys
for path in sys.argv[1:]:
    try:
        rows = [json.loads(l) for l in open(path)]
    except FileNotFoundError:
        continue
    for d in rows:
        lib = "deepmind" if "mujoco-deepmind" in d.get("mujoco_library", "") else "debian"
        if d.get("bench") == "actors_rate" and d["metric"] == "steps_per_s_per_core":
            print(f"{lib:8s} {d['impl']:15s} threads {d['threads']:2d}: {d['median']:8.0f} steps/s per core (wall), "
                  f"{d['steps_per_cpu_s']:8.0f} per CPU s, ratio to bare {d['ratio_to_bare']:.3f}, episode length "
                  f"{d['mean_episode_length']:.0f}" + (f", busy {d['busy_fraction']:.3f}" if "busy_fraction" in d else ""))
        elif d.get("bench") == "actors_rate":
            print(f"{lib:8s} {d['impl']:15s} {d['median']:.1f} us per reset")
        elif d.get("bench") == "cpu_actors_ppo" and "busy_fraction" in d:
            print(f"{lib:8s} PPO {d['task']:8s} cores {d['actor_cores']:2d} {d['phase']:8s}: {d['median']:9.0f} env steps/s, "
                  f"{d['median'] / d['actor_cores']:7.0f} per core, of stepping {d['fraction_of_stepping']:.3f}, "
                  f"busy {d['busy_fraction']:.3f}")
PYEOF
}
rate() {  # $1: log name; runs the stepping-rate bench at 1 and 14 threads
  timeout 150 taskset -c "$cpus" "$build/bench/actors/gmi.bench.actors_rate" "$logs/$1.jsonl" "$model" 1 128 1 14 \
    > "$logs/$1.log" 2>&1 || { echo "actors_rate ($1): exit $?"; tail -3 "$logs/$1.log"; status=1; }
}
train() {  # $1: log name, $2: 1 for the Ant alone; PPO on CPU actors at 1 and 14 actor cores
  GMI_ACTORS_TRAIN_ANT_ONLY=${2:-0} timeout 200 taskset -c "$cpus" "$build/bench/actors/gmi.bench.actors_train" "$logs/$1.jsonl" "$model" 1 1 14 \
    > "$logs/$1.log" 2>&1 || { echo "actors_train ($1): exit $?"; tail -3 "$logs/$1.log"; status=1; }
}
rate rate_debian
train train_debian
# DeepMind's build of the same MuJoCo (AVX), when carried (bench/actors/carry_mujoco_deepmind.sh): the same
# stepping-rate runs and the Ant's PPO with it first on LD_LIBRARY_PATH.
if [ -f .carry/mujoco-deepmind/libmujoco.so.2.2.2 ]; then
  export LD_LIBRARY_PATH="$PWD/.carry/mujoco-deepmind:$LD_LIBRARY_PATH"
  rate rate_deepmind
  train train_deepmind 1
else
  echo "no .carry/mujoco-deepmind/libmujoco.so.2.2.2: DeepMind's build not measured (bench/actors/carry_mujoco_deepmind.sh)"
fi
for f in rate_debian train_debian rate_deepmind train_deepmind; do cat "$logs/$f.jsonl" >> "$lines" 2>/dev/null; done
summary "$logs"/rate_debian.jsonl "$logs"/rate_deepmind.jsonl "$logs"/train_debian.jsonl "$logs"/train_deepmind.jsonl
echo "result lines: $(wc -l < "$lines") in $lines; $(( $(date +%s) - t0 )) s"
exit "$status"
