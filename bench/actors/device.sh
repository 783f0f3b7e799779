#!/usr/bin/env bash
# GPU machine (run from the repository root, with .carry/debs from bench/actors/carry_mujoco.sh carried):
# unpacks MuJoCo into /tmp/gmi-mujoco, builds the actor tests and benches, runs the host tests, MuJoCo Ant steps/s
# per core at 1, 2, 8 and 14 threads, the CPU/GPU ratio sweep (GMIs per GPU x actor cores per GMI x envs per
# core -> steps/s and steps per joule), the GPU tests of PPO on CPU actors (tests/actors_gpu: matches the host
# trainer, no stream wait per step, learns Cartpole, MuJoCo Ant trains) and PPO on CPU actors with the GPU trainer
# at 1, 4 and 14 actor cores (stepping / collect / train rates, GPU simulation beside it, the placement choice).
# Result lines go to $OUT/actors/. About 4 min of build, 4 of runs (the ratio sweep at 2 s a point).
set -euo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/actors"
source bench/actors/configure_mujoco.sh "$OUT/actors"
time cmake --build /tmp/build -j16 --target gmi.test.actors gmi.test.actors_mujoco gmi.bench.actors_steps gmi.bench.actors_ratio gmi.bench.actors_choose_ratio gmi.test.plan \
  gmi.test.actors_gpu gmi.bench.actors_train gmi.example.cartpole_on_cpu \
  > "$OUT/actors/build.log" 2>&1 || { tail -40 "$OUT/actors/build.log"; exit 1; }
ctest --test-dir /tmp/build -R '^(actors|plan\.placement|plan\.ratio)' --output-on-failure --timeout 300 2>&1 | tee "$OUT/actors/ctest.log" | tail -5
device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "device: $device; host CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
model=tests/physics/models/ant_floor.xml
/tmp/build/bench/actors/gmi.bench.actors_steps "$model" "$OUT/actors/steps.jsonl" 1 2 8 14
/tmp/build/bench/actors/gmi.bench.actors_ratio "$model" "$OUT/actors/ratio.jsonl" 2
GMI_GIT_REVISION="${GMI_GIT_REVISION:-$(cat .carry/git-rev 2>/dev/null)}" /tmp/build/bench/actors/gmi.bench.actors_choose_ratio "$OUT/actors/ratio.jsonl" "$OUT/actors/ratio_choice.jsonl"
/tmp/build/bench/actors/gmi.bench.actors_train "$OUT/actors/train.jsonl" "$model" 0.5 1 4 14
# The pipeline with actors::on_cpu<cartpole> (15 actor cores, policy and update on the GPU) until solved.
/tmp/build/examples/cartpole_on_cpu/gmi.example.cartpole_on_cpu --max-env-steps 5e6 --metrics "$OUT/actors/on_cpu_train.jsonl" \
  2>&1 | tail -4
echo "result lines: $(cat "$OUT"/actors/*.jsonl | wc -l) in $OUT/actors"
