#!/usr/bin/env bash
# Issue 34 on host threads: out-of-phase episode starts (--random-start, ppo_config::random_episode_start) against
# the old in-phase starts and the candidate fixes, with gmi.tool.host_ppo at a small env count, a few seeds each,
# JOBS runs at once (one thread each). Prints each run's last line: the training return of the last window and the
# deterministic evaluation (and, for the proxies, both over the Riccati optimum).
# Usage: host_phase.sh <build-dir> [tasks="franka_cabinet_proxy anymal_proxy point_reach"] [seeds=2] [env-steps=5e5]
# Environment: JOBS (default 2), PHASE_VARIANTS="label|flags;..." (default: the list below).
set -uo pipefail
tool=${1:?usage: host_phase.sh <build-dir> [tasks] [seeds] [env-steps]}/tests/ppo/gmi.tool.host_ppo
tasks=${2:-"franka_cabinet_proxy anymal_proxy point_reach"}
seeds=${3:-2}
steps=${4:-5e5}
jobs=${JOBS:-2}
[ -x "$tool" ] || { echo "host_phase: got no $tool, need: cmake --build <build-dir> --target gmi.tool.host_ppo" >&2; exit 2; }
[[ "$seeds" =~ ^[1-9][0-9]*$ ]] || { echo "host_phase: seeds: got $seeds, need a positive integer" >&2; exit 2; }
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { echo "host_phase: JOBS: got $jobs, need a positive integer" >&2; exit 2; }
IFS=';' read -r -a variants <<< "${PHASE_VARIANTS:-inphase|--random-start 0;random|--random-start 1;random_lin|--random-start 1 --lr-schedule linear;random_floor|--random-start 1 --log-std-min -2.3}"
for t in $tasks; do
  for v in "${variants[@]}"; do
    for s in $(seq "$seeds"); do printf '%s\t%s\t%s\t%s\n' "$t" "${v%%|*}" "$s" "${v#*|}"; done
  done
done | xargs -P "$jobs" -L 1 -d '\n' bash -c '
  IFS=$'"'"'\t'"'"' read -r t label s flags <<< "$0"
  # shellcheck disable=SC2086  # flags are words
  line=$(timeout 900 "'"$tool"'" "$t" --num-envs 256 --minibatch 1024 --env-steps "'"$steps"'" --seed "$s" --threads 1 \
         --reports 10 $flags 2>&1 | tail -1)
  echo "host_phase: $t $label seed $s: $line"'
