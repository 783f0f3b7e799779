#!/usr/bin/env bash
# Issue 38 on one GPU's host, quiet (nothing else runs on the machine), cold, within 9 minutes including the build:
# what the issue has not run on a GPU machine at this commit, and a repeat of the per-core rate with the new default
# layout (mujoco::sim steps with one mjData per thread, data_layout::per_thread, unless asked for per_env) and the
# MuJoCo Ant now defined as gmi::envs::ant_v4. From the repository root with .carry/debs (bench/actors/carry_mujoco.sh)
# and optionally .carry/mujoco-deepmind (carry_mujoco_deepmind.sh):
#   1. builds gmi.bench.actors_rate, gmi.bench.actors_train, gmi.bench.actors_check_threshold, gmi.test.actors_gpu,
#      gmi.test.actors_mujoco, gmi.example.cartpole_on_cpu and gmi.example.ant_on_cpu in $BUILD (default
#      /tmp/build-actors5, -j$JOBS, 16);
#   2. in this order, each step cut to the time left and skipped (said so) when too little is left:
#      a. rate round 1 on each MuJoCo build: gmi.bench.actors_rate on pairs:ant_v4.xml in the default layout, 128 envs a
#         core, 1 and 8 threads (bare mj_step loop, gmi's sim, the CPU actors with and without stealing, the
#         profile, the resets with the 2000-step trajectory_fnv);
#      b. CPU-actor PPO on the Ant at 8 actor cores (gmi.bench.actors_train, GPU policy and update, pairs), the
#         default layout against "per_env:" (one mjData an environment, the layout before), Debian's build;
#      c. the GPU tests of actors, the host MuJoCo tests and examples/ant_on_cpu's, its GPU engine through gmi::run
#         among them (ctest -R '^(actors_gpu\.|actors\.mujoco\.|example\.ant_on_cpu\.)');
#      d. rate round 2 on each build; e. b on DeepMind's build; f. rate round 3 on each build;
#      g. gmi.bench.actors_train on Cartpole at 1 and 8 actor cores (CPU actors against GPU simulation and the
#         placement line at each), then gmi.bench.actors_check_threshold at threshold 1 on those lines;
#      h. --restart-on-failure of 2 CPU-actor GMIs as MPS processes, GMI 1 killed after iteration 8 (where
#         nvidia-cuda-mps-control exists; the threads case of device_gmis.sh, as processes);
#   3. the summary (bench/actors/actors5_summary.py) against every target of the issue: 20000 env steps per CPU
#      second per core (medians of the rounds), collect >= 0.90 of stepping and busy >= 0.90, the planner's ratio
#      within 5% of its sweep's best (the committed sweep's choice lines), the placement rule against the side that
#      trained faster (this run's Cartpole and the committed MuJoCo tasks' lines), and the tests.
# BUDGET_S (default 525 s from the start) bounds everything. Lines (device, git, run_id, mujoco_build, round, step
# added): $OUT/actors.jsonl; summary: stdout and $OUT/actors-summary.txt; logs: $OUT/actors/. Cores: GMI_RATE_CPUS
# (taskset list, default 0-8: 8 stepping threads and the actors' driver thread).
set -uo pipefail
start_s=$(date +%s)
budget_s=${BUDGET_S:-525}
export BUILD=${BUILD:-/tmp/build-actors5}
source "$(dirname "$0")/device_actors_common.sh"
cpus=${GMI_RATE_CPUS:-0-8}
targets=(gmi.bench.actors_rate gmi.bench.actors_train gmi.bench.actors_check_threshold gmi.test.actors_gpu
         gmi.test.actors_mujoco gmi.example.cartpole_on_cpu gmi.example.ant_on_cpu)
build_targets 270
mujoco_builds
lscpu -e=CPU,CORE,SOCKET,NODE > "$logs/topology.txt" 2>&1 || true
echo "load average before the runs: $(cut -d' ' -f1-3 /proc/loadavg) (quiet host: nothing else should run)"
bench_dir=$build/bench/actors
libpath() { if [ "$1" = deepmind ]; then echo "$deepmind_path"; else echo "$LD_LIBRARY_PATH"; fi; }
# skip_unless NAME SECONDS: true when SECONDS are left, else says what is left out.
skip_unless() { (($(left) >= $2)) || { echo "$1: left out ($(left) s of the budget left)"; return 1; }; }
rate_round() {  # $1: round
  local lib
  for lib in "${builds[@]}"; do
    skip_unless "rate round $1 on $lib" 30 || continue
    LD_LIBRARY_PATH=$(libpath "$lib") step "rate_${lib}_$1" 45 taskset -c "$cpus" "$bench_dir/gmi.bench.actors_rate" \
      "$logs/rate_${lib}_$1.jsonl" "pairs:$model" 0.5 128 1 8
  done
}
ant_v4_train() {  # $1: build; the default layout, then per_env
  local layout arg
  for layout in default per_env; do
    skip_unless "actors_train ant_v4 $layout on $1" 35 || continue
    arg=$model
    [ "$layout" = per_env ] && arg=per_env:$model
    GMI_ACTORS_TRAIN_ANT_ONLY=1 LD_LIBRARY_PATH=$(libpath "$1") step "train_$1_$layout" 50 \
      taskset -c "$cpus" "$bench_dir/gmi.bench.actors_train" "$logs/train_$1_$layout.jsonl" "$arg" 0.4 8
  done
}

rate_round 1
ant_v4_train debian
if skip_unless "GPU and MuJoCo tests" 40; then
  step tests 90 ctest --test-dir "$build" -R '^(actors_gpu\.|actors\.mujoco\.|example\.ant_on_cpu\.)' --output-on-failure --timeout 80
  tail -3 "$logs/tests.log"
fi
rate_round 2
for lib in "${builds[@]}"; do [ "$lib" = deepmind ] && ant_v4_train deepmind; done
rate_round 3
if skip_unless "actors_train cartpole and the threshold check" 30; then
  step train_cartpole 40 taskset -c "$cpus" "$bench_dir/gmi.bench.actors_train" "$logs/train_debian_cartpole.jsonl" - 0.4 1 8 &&
    step threshold 25 "$bench_dir/gmi.bench.actors_check_threshold" "$logs/train_debian_cartpole.jsonl" \
      "$logs/threshold_debian_1.jsonl" 1
fi
if ! command -v nvidia-cuda-mps-control > /dev/null; then
  echo "MPS restart: left out (no nvidia-cuda-mps-control on this machine)"
elif skip_unless "MPS restart" 40; then
  per=$(( $(nproc) / 2 - 1 ))
  envs=$((per * 64))
  rm -rf "$logs/restart.ckpt"*
  GMI_TEST_KILL_AT=1:8 step restart_mps 90 "$build/examples/cartpole_on_cpu/gmi.example.cartpole_on_cpu" \
    --gmis-per-gpu 2 --actor-cores-per-gmi "$per" --num-envs "$envs" --target-return nan \
    --max-env-steps $((2 * envs * 16 * 20)) --checkpoint "$logs/restart.ckpt" --checkpoint-every 5 \
    --restart-on-failure --log-interval 1 --partition mps
  grep -E "restart 1 of|finished after|identical on every GMI|lost [0-9]+ iterations|from failure" "$logs/restart_mps.log" | tail -5
fi
python3 bench/actors/actors5_summary.py "$lines" "$device" "$git_rev" "$run_id" "$logs" | tee "$out/actors-summary.txt"
echo "total $(( $(date +%s) - start_s )) s (budget $budget_s s)"
exit "$status"
