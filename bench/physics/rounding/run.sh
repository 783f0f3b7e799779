#!/usr/bin/env bash
# Rounding sensitivity of the physics tasks on the host (no GPU): builds free_run and one_step twice with g++,
# plainly (no FMA, as the host tests build) and with FMA contraction (-mfma -ffp-contract=fast, as nvcc
# contracts device code), and compares the builds and 1-ulp perturbations with the statistic of
# tests/envs_gpu/physics_tasks_gpu_test.cpp. Usage: bench/physics/rounding/run.sh [workdir]  (from the repo root)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
w=${1:-/tmp/gmi-rounding}
mkdir -p "$w"
inc=(-I"$root/tests" -I"$root/include")
[ -d /usr/local/cuda/targets/x86_64-linux/include ] && inc+=(-isystem /usr/local/cuda/targets/x86_64-linux/include)
for tool in free_run one_step; do
  g++ -O3 -DNDEBUG -std=gnu++20 "${inc[@]}" "$here/$tool.cpp" -o "$w/${tool}_plain" -lpthread
  g++ -O3 -DNDEBUG -std=gnu++20 -mfma -ffp-contract=fast "${inc[@]}" "$here/$tool.cpp" -o "$w/${tool}_fma" -lpthread
done
# One env step at a time over 100 steps of task $1: the FMA build, 1 ulp on qvel and the same build against plain.
one_step_report() {
  "$w/one_step_plain" record "$1" 100 0 "$w/$1.tf"
  echo "== $1 one step at a time over 100 steps: FMA build / 1-ulp qvel / the same build, against plain:"
  "$w/one_step_fma" replay "$1" 100 0 "$w/$1.tf"
  "$w/one_step_plain" replay "$1" 100 1 "$w/$1.tf"
  "$w/one_step_plain" replay "$1" 100 0 "$w/$1.tf"
}
declare -A dim=([ant_v4]=27 [humanoid_v4]=45 [anymal]=48)
for t in ant_v4 humanoid_v4 anymal; do
  for steps in 10 20; do
    "$w/free_run_plain" $t 1e-6 100 0 $steps "$w/$t.$steps.plain" 2>/dev/null
    "$w/free_run_fma" $t 1e-6 100 0 $steps "$w/$t.$steps.fma" 2>/dev/null
    "$w/free_run_plain" $t 1e-6 100 1 $steps "$w/$t.$steps.nudge" 2>/dev/null
    echo "== $t free-running $steps steps, FMA build against plain:"
    python3 "$here/compare.py" "$w/$t.$steps.plain" "$w/$t.$steps.fma" ${dim[$t]} $steps v
    echo "== $t free-running $steps steps, reset qpos and qvel +1 ulp against plain:"
    python3 "$here/compare.py" "$w/$t.$steps.plain" "$w/$t.$steps.nudge" ${dim[$t]} $steps v
  done
  for tol in "1e-8 1000" "0 2000"; do
    set -- $tol
    "$w/free_run_plain" $t $1 $2 0 10 "$w/$t.tight.plain" 2>/dev/null
    "$w/free_run_fma" $t $1 $2 0 10 "$w/$t.tight.fma" 2>/dev/null
    echo "== $t free-running 10 steps, solver tolerance $1 ($2 sweeps at most), FMA build against plain:"
    python3 "$here/compare.py" "$w/$t.tight.plain" "$w/$t.tight.fma" ${dim[$t]} 10
  done
  one_step_report $t
done
# ant and humanoid (no free_run build): one step at a time only.
for t in ant humanoid; do
  one_step_report $t
done
