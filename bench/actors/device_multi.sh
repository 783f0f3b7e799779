#!/usr/bin/env bash
# GPU machine, from the repository root, with .carry/debs carried (bench/actors/carry_mujoco.sh here first):
# several GMIs of CPU actors. Unpacks MuJoCo into /tmp/gmi-mujoco (dpkg -x, never into /), builds only the actor
# tests, the ratio bench and the on_cpu example, then
#   1. the actor tests, host and GPU (ctest: actors.* incl. actors.gmis.* and actors_gpu.*, plan.placement.*,
#      plan.ratio.*, example.cartpole_on_cpu.*: the host restart),
#   2. the CPU/GPU ratio sweep on MuJoCo Ant over 1, 2 and 4 GMIs x 1, 3, 7, 14 actor cores per GMI x 64 and 256
#      envs per core (each GMI's cores and driver core disjoint): steps/s and steps/J lines,
#   3. the choice from that sweep (gmi.bench.actors_choose_ratio).
# Training with several CPU-actor GMIs (threads and MPS), restarts and populations on GPUs: device_gmis.sh.
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

echo "result lines: $(cat "$dir"/*.jsonl | wc -l) in $dir"
