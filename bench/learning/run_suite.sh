#!/usr/bin/env bash
# The learning suite (issue 34): every task, gmi's default PPO x <seeds> and the JAX reference PPO (plain and
# normalized, bench/learning/reference_ppo.py) x <seeds> at equal env steps, in one call on one GPU. Appends the
# result lines of both implementations under one run_id to <results.jsonl> as each task finishes (bench-spec.md
# format, with curves against env steps and wall-clock); bench/plot draws them into docs/learning.md.
#
# Order: the reference compiles its programs on the CPU (parallel threads) while gmi's runs use the GPU one after
# another; the reference then trains alone, so neither's wall-clock is measured beside the other's GPU work.
#
# Usage: run_suite.sh <build-dir> <results.jsonl> [seeds=5] [scale=1]
#   scale multiplies every task's env steps (0.1 for a quick look).
#        run_suite.sh part1|part2 [results.jsonl] [seeds=5]
#   one of two halves of the suite for one device call of under 9 minutes each, from the repository root: builds
#   the half's example binaries (cmake --preset gpu -B ${BUILD_DIR:-/tmp/build}, -j${SUITE_JOBS:-$(nproc)}), then runs its tasks
#   as above; results to ${OUT:-bench/results/learning-suite}/<date>-<device>-<git>-<part>.jsonl by default.
#   part1: cartpole pendulum ball_balance quadcopter ingenuity ant_proxy anymal_proxy humanoid_proxy
#   franka_cabinet_proxy; part2: shadow_hand_proxy (the costliest gmi runs) point_reach sparse_reach long_track
#   spring_chain cartpole_discrete.
# Environment: SUITE_TASKS="cartpole point_reach ..." (a subset, default all), PYTHON (a python with jax; default
#   python3), GMI_DEVICE (gmi's --device, default auto), GMI_VARIANTS="label|flags;label|flags" (more gmi
#   configurations beside the defaults, each written as impl "gmi_<label>" with its flags as "settings"; one with
#   --gmis-per-gpu K gives each of its K GMIs the task's envs / K; docs/learning.md "Candidates for the next GPU
#   call" lists the issue-34 variants as ready command lines; the word candidates stands for the script's list of
#   them),
#   SUITE_JOBS (build jobs for part1/part2, and twice the reference's compile threads; default nproc: set it when
#   another script shares the machine's cores), SUITE_NUM_ENVS (one env count for every task instead of the table's, for a quick check on a small machine),
#   SUITE_PARALLEL_RUNS=1 (a task's runs, every configuration and seed, train at once on the GPU: per-sample returns
#   as before, wall-clock shared, so its "sooner" terms are not gmi's alone), REFERENCE=0 (gmi only), SUITE_BUDGET_S (default 500: no gmi or reference task starts training after this
#   many seconds since the script started, the build of part1/part2 included, so a 9-minute device call returns
#   what is done), SUITE_REFERENCE_S (default 100: of that budget, the seconds kept for the reference's training
#   after gmi's runs: no gmi task starts after SUITE_BUDGET_S - SUITE_REFERENCE_S), SUITE_CONCURRENT (0: gmi's
#   seeds one after another, as before; 1: also impl "gmi_concurrent", the task's seeds trained at once on the one
#   GPU as a population, --population --gmis-per-gpu <seeds>: member r has seed 1 + r, the task's env count, its
#   own metrics file and curves, so its clock covers all seeds as the reference's vmapped program does; only: the
#   concurrent run alone), SUITE_WORK (the folder for the runs' metrics files and logs; default a new one under
#   /tmp).
# Needs the targets gmi.example.cartpole_ppo and gmi.example.<task>_ppo for every other task (configure with
#   -DGMI_BUILD_ALL_TASK_EXAMPLES=ON).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
t_script=$(date +%s.%N)
part=
case "${1:-}" in
  part1) part=part1; SUITE_TASKS=${SUITE_TASKS:-"cartpole pendulum ball_balance quadcopter ingenuity ant_proxy anymal_proxy humanoid_proxy franka_cabinet_proxy"} ;;
  part2) part=part2; SUITE_TASKS=${SUITE_TASKS:-"shadow_hand_proxy point_reach sparse_reach long_track spring_chain cartpole_discrete"} ;;
esac
case "${SUITE_CONCURRENT:-0}" in 0|1|only) ;; *) echo "run_suite: SUITE_CONCURRENT: got $SUITE_CONCURRENT, need 0, 1 or only" >&2; exit 2 ;; esac
[[ "${SUITE_JOBS:-1}" =~ ^[1-9][0-9]*$ ]] || { echo "run_suite: SUITE_JOBS: got $SUITE_JOBS, need a positive integer" >&2; exit 2; }
if [ -n "$part" ]; then
  build=${BUILD_DIR:-/tmp/build}
  rev=${GMI_GIT_REVISION:-$(cat "$root/.carry/git-rev" 2>/dev/null || git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)}
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | tr ' ' '-')
  out=${2:-${OUT:-$root/bench/results/learning-suite}/$(date -u +%F)-${gpu:-host}-$rev-$part.jsonl}
  seeds=${3:-5}
  scale=1
  targets=()
  for t in $SUITE_TASKS; do targets+=("gmi.example.${t}_ppo"); done
  echo "run_suite: $part: building ${targets[*]} in $build"
  (cd "$root" && cmake --preset gpu -B "$build" -DGMI_BUILD_ALL_TASK_EXAMPLES=ON > "$build.configure.log" 2>&1 &&
    cmake --build "$build" -j"${SUITE_JOBS:-$(nproc)}" --target "${targets[@]}" > "$build.build.log" 2>&1) ||
    { echo "run_suite: $part: the build failed:" >&2; tail -30 "$build.configure.log" "$build.build.log" >&2; exit 1; }
  echo "run_suite: $part: built in $(awk -v a="$t_script" -v b="$(date +%s.%N)" 'BEGIN{printf "%.0f", b - a}') s"
else
  build=${1:?usage: run_suite.sh <build-dir> <results.jsonl> [seeds=5] [scale=1] or run_suite.sh part1|part2}
  out=${2:?results file}
  seeds=${3:-5}
  scale=${4:-1}
fi
python=${PYTHON:-python3}
gmi_device=${GMI_DEVICE:-auto}
[[ "$seeds" =~ ^[1-9][0-9]*$ ]] || { echo "run_suite: seeds: got $seeds, need a positive integer" >&2; exit 2; }
awk "BEGIN{exit !($scale > 0)}" 2>/dev/null || { echo "run_suite: scale: got $scale, need a number > 0" >&2; exit 2; }

# task  num_envs (gmi's default for the task)  env steps per run  hidden layers (gmi's example networks)
table="cartpole 512 3e6 32-32
pendulum 512 5e6 64-64
ball_balance 4096 2e7 64-64
quadcopter 8192 2e7 64-64
ingenuity 4096 2e7 64-64
ant_proxy 1024 1e7 64-64
anymal_proxy 4000 2e7 64-64
humanoid_proxy 4096 2e7 64-64
franka_cabinet_proxy 2048 2e7 64-64
shadow_hand_proxy 4096 1e7 64-64
point_reach 4096 2e7 64-64
sparse_reach 4096 1e7 64-64
long_track 4096 2e7 64-64
spring_chain 4096 2e7 64-64
cartpole_discrete 4096 5e6 64-64"
all=$(awk '{print $1}' <<< "$table" | tr '\n' ' ')
wanted=${SUITE_TASKS:-$all}
for t in $wanted; do
  grep -q "^$t " <<< "$table" || { echo "run_suite: SUITE_TASKS: got $t, need some of: $all" >&2; exit 2; }
done
binary() {
  if [ "$1" = cartpole ]; then echo "$build/examples/cartpole_ppo/gmi.example.cartpole_ppo"
  else echo "$build/examples/task_ppo/gmi.example.$1_ppo"; fi
}
missing=()
for t in $wanted; do [ -x "$(binary "$t")" ] || missing+=("$(basename "$(binary "$t")")"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "run_suite: missing ${missing[*]} in $build: need cmake -DGMI_BUILD_ALL_TASK_EXAMPLES=ON and those targets" >&2
  exit 2
fi
if [ "${REFERENCE:-1}" != 0 ] && ! "$python" -c "import jax" 2>/dev/null; then
  echo "run_suite: PYTHON=$python: got no jax, need a python with jax (or REFERENCE=0)" >&2
  exit 2
fi

export NCCL_NVLS_ENABLE=0 XLA_PYTHON_CLIENT_PREALLOCATE=false
# The device checkout may not know the revision: GMI_GIT_REVISION or .carry/git-rev (scripts/carry-rev) first.
git=${GMI_GIT_REVISION:-$(cat "$root/.carry/git-rev" 2>/dev/null || git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)}
device=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
[ -n "$device" ] || device="host ($(nproc) cores)"
short=$(tr 'A-Z ' 'a-z-' <<< "$device" | grep -oE 'h100|h200|a100|l40s|host' | head -1)
run_id="$(date -u +%Y-%m-%dT%H:%M:%SZ)-${short:-gpu}-$(head -c 3 /dev/urandom | od -An -tx1 | tr -d ' \n')"
work=${SUITE_WORK:-$(mktemp -d /tmp/gmi-learning-suite.XXXXXX)}
mkdir -p "$work"
mkdir -p "$(dirname "$out")"
echo "run_suite: run $run_id on $device, revision $git, $seeds seeds, scale $scale; work files in $work"
t_start=$t_script

specs=()
steps_of() { awk -v t="$1" -v k="$scale" '$1 == t {printf "%.0f", $3 * k}' <<< "$table"; }
for t in $wanted; do
  read -r _ envs _ hidden <<< "$(grep "^$t " <<< "$table")"
  envs=${SUITE_NUM_ENVS:-$envs}
  specs+=(--spec "$t:$(steps_of "$t"):$envs:$hidden")
done
refpid=
if [ "${REFERENCE:-1}" != 0 ]; then
  "$python" "$here/reference_ppo.py" "${specs[@]}" --seeds "$seeds" --wait-for "$work/gmi_done" \
    --out "$out" --run-id "$run_id" --device "$device" --git "$git" \
    --stop-after "$(awk -v b="${SUITE_BUDGET_S:-500}" -v a="$t_start" -v n="$(date +%s.%N)" 'BEGIN{r = b - (n - a); printf "%.0f", (r > 1 ? r : 1)}')" \
    --compile-threads "$(( ${SUITE_JOBS:-$(nproc)} > 4 ? ${SUITE_JOBS:-$(nproc)} / 2 : 2 ))" > "$work/reference.log" 2>&1 &
  refpid=$!
fi

# Issue 34's candidate changes of defaults (docs/learning.md, "Candidates for the next GPU call"): GMI_VARIANTS=
# candidates runs them all, GMI_VARIANTS="candidates;label|flags" them and more.
candidates="lin|--lr-schedule linear;clip10|--obs-clip 10;win0|--value-normalizer-window 0"
candidates+=";ent|--entropy-coef 0.01 --entropy-schedule linear;stdfloor|--log-std-min -2.3;stdcap|--log-std-max 0"
variants=()
[ "${SUITE_CONCURRENT:-0}" = only ] || variants+=("gmi|")
GMI_VARIANTS=${GMI_VARIANTS:-}
GMI_VARIANTS=${GMI_VARIANTS//candidates/$candidates}
IFS=';' read -ra extra <<< "${GMI_VARIANTS:-}"
for v in "${extra[@]}"; do [ -n "$v" ] && variants+=("gmi_$v"); done
# The seeds at once: one population run whose members are the seeds (gmi_lines.py reads its members' files).
[ "${SUITE_CONCURRENT:-0}" = 0 ] || variants+=("gmi_concurrent|--population --gmis-per-gpu $seeds")
elapsed() { awk -v a="$t_start" -v b="$(date +%s.%N)" 'BEGIN{printf "%.0f", b - a}'; }
for t in $wanted; do
  if [ "$(elapsed)" -gt $(( ${SUITE_BUDGET_S:-500} - ${SUITE_REFERENCE_S:-100} )) ]; then
    echo "run_suite: gmi $t: skipped, SUITE_BUDGET_S - SUITE_REFERENCE_S = $(( ${SUITE_BUDGET_S:-500} - ${SUITE_REFERENCE_S:-100} )) s passed" >&2
    continue
  fi
  read -r _ envs _ _ <<< "$(grep "^$t " <<< "$table")"
  envs=${SUITE_NUM_ENVS:-$envs}
  steps=$(steps_of "$t")
  # SUITE_PARALLEL_RUNS=1: every configuration's seeds of the task start at once on the GPU (returns per env step are
  # unchanged; each run's wall-clock then shares the GPU with the others'); else one run after another.
  pids=()
  for v in "${variants[@]}"; do
    impl=${v%%|*}
    flags=${v#*|}
    # A variant with --gmis-per-gpu K splits the task's envs over its K GMIs (the same total envs and env steps).
    gmis=$(sed -nE 's/.*--gmis-per-gpu[ =]([0-9]+).*/\1/p' <<< "$flags")
    run_envs=$(( envs / ${gmis:-1} ))
    if [ "$impl" = gmi_concurrent ]; then
      # One process trains every seed (member r: seed 1 + r) on the GPU at once; each member writes its own lines
      # to <metrics>.gmi<r>.jsonl.
      f="$work/$impl-$t.jsonl"
      # shellcheck disable=SC2086  # flags are words
      {
        timeout 240 "$(binary "$t")" --device "$gmi_device" --seed 1 --num-envs "$envs" --max-env-steps "$steps" \
          --target-return nan --log-interval 0.2 --quiet --metrics "$f" $flags > "$work/$impl-$t.log" 2>&1 ||
          echo "run_suite: $impl $t: exit $? ($(tail -1 "$work/$impl-$t.log"))" >&2
      } &
      pids+=($!)
      [ "${SUITE_PARALLEL_RUNS:-0}" = 1 ] || wait $!
      continue
    fi
    for seed in $(seq "$seeds"); do
      f="$work/$impl-$t-$seed.jsonl"
      # Every run goes to the step limit (no early stop when solved, as the reference), so returns compare at equal
      # env steps.
      # shellcheck disable=SC2086  # flags are words
      {
        timeout 120 "$(binary "$t")" --device "$gmi_device" --seed "$seed" --num-envs "$run_envs" --max-env-steps "$steps" \
          --target-return nan --log-interval 0.2 --quiet --metrics "$f" $flags > "$work/$impl-$t-$seed.log" 2>&1 ||
          echo "run_suite: $impl $t seed $seed: exit $? ($(tail -1 "$work/$impl-$t-$seed.log"))" >&2
      } &
      pids+=($!)
      [ "${SUITE_PARALLEL_RUNS:-0}" = 1 ] || wait $!
    done
  done
  wait "${pids[@]}"  # these runs only (the reference trains in the background)
  at_once=1
  [ "${SUITE_PARALLEL_RUNS:-0}" = 1 ] && at_once=${#pids[@]}
  for v in "${variants[@]}"; do
    impl=${v%%|*}
    flags=${v#*|}
    files=()
    if [ "$impl" = gmi_concurrent ]; then
      for r in $(seq 0 $(( seeds - 1 ))); do files+=("$work/$impl-$t.gmi$r.jsonl"); done
      concurrent=$seeds
    else
      for seed in $(seq "$seeds"); do files+=("$work/$impl-$t-$seed.jsonl"); done
      concurrent=1
    fi
    python3 "$here/gmi_lines.py" --run-id "$run_id" --device "$device" --git "$git" --impl "$impl" \
      --settings "$flags" --concurrent "$concurrent" --runs-at-once "$at_once" "${files[@]}" | tee -a "$out" >> "$work/gmi.jsonl"
    python3 -c "import json,sys
for l in open(sys.argv[1]):
    d = json.loads(l)
    if d['task'] == sys.argv[2] and d['impl'] == sys.argv[3]:
        print(f\"run_suite: {d['impl']} {d['task']}: {d['metric']} median {d['median']} (min {d['min']}, max {d['max']})\")" \
      "$work/gmi.jsonl" "$t" "$impl"
  done
done
touch "$work/gmi_done"
echo "run_suite: gmi done after $(elapsed) s"
status=0
if [ -n "$refpid" ]; then
  wait "$refpid" || { status=1; echo "run_suite: the reference failed:" >&2; tail -20 "$work/reference.log" >&2; }
  grep "^reference_ppo:" "$work/reference.log"
fi
echo "run_suite: done after $(elapsed) s; lines in $out"
exit $status
