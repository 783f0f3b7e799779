#!/usr/bin/env bash
# Where a synced minibatch step's time goes (synchronous Cartpole PPO over MPS GMIs, --synced-update fused): builds
# gmi.example.cartpole_ppo from a copy of this revision instrumented by step_timing_patch.py (%globaltimer stamps in
# the gradient and step kernels), runs each shape, and prints GMI 0's and GMI 1's mean phase times. The phases:
# the last step kernel's end to the gradient kernel's start (launch gap; the iteration's collection is spread over
# its steps), gradient kernel start to step kernel start, the wait for the peers' releases, this GMI's row sum, the
# post and the wait for every peer's row, the group's mean and Adam. The stamps cost a little: compare shapes, not
# revisions. Usage: time_synced_steps.sh <work-dir> ["GMIs envs minibatch" ...] (default "8 512 8192")
set -euo pipefail
work=${1:?work directory (the instrumented copy is built there)}
shift
shapes=("$@")
[ ${#shapes[@]} -gt 0 ] || shapes=("8 512 8192")
root=$(cd "$(dirname "$0")/../.." && pwd)
export NCCL_NVLS_ENABLE=0
rm -rf "$work/tree"
mkdir -p "$work/tree"
# The sources as they are (a GPU machine's copy may carry a .git whose HEAD is not the working tree).
tar -C "$root" --exclude=./build --exclude=./.carry --exclude=./.git -cf - include cmake CMakeLists.txt CMakePresets.json \
  examples tests bench | tar -x -C "$work/tree"
python3 "$root/bench/ppo/step_timing_patch.py" "$work/tree"
cmake -S "$work/tree" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DGMI_BUILD_TESTS=OFF -DGMI_BUILD_BENCHMARKS=OFF > "$work/configure.log" 2>&1 ||
  { echo "time_synced_steps: configure failed (see $work/configure.log)" >&2; exit 1; }
cmake --build "$work/build" -j"$(nproc)" --target gmi.example.cartpole_ppo > "$work/build.log" 2>&1 ||
  { echo "time_synced_steps: build failed (see $work/build.log)" >&2; exit 1; }
bin="$work/build/examples/cartpole_ppo/gmi.example.cartpole_ppo"
for shape in "${shapes[@]}"; do
  read -r g e mb <<< "$shape"
  echo "== synced $g GMIs x $e envs, mps, group minibatch $mb, fused"
  timeout 120 "$bin" --gmis-per-gpu "$g" --num-envs "$e" --partition mps --minibatch "$mb" --synced-update fused \
    --target-return nan --max-env-steps 30000000 --log-interval 100 2>&1 |
    grep -E "^gmi: (step|time)|rror|step timing, GMI [01]\]" | tail -3
done
