#!/usr/bin/env bash
# Issue 34 on host threads: gmi.tool.host_ppo on point_reach (and any other host task) with the defaults and the
# candidate fixes (linear lr, obs clip 10), a few seeds each, at a small env count; prints each run's last line.
# Usage: host_candidates.sh <build-dir> [tasks="point_reach"] [seeds=2] [env-steps=1e6]
set -uo pipefail
tool=${1:?usage: host_candidates.sh <build-dir> [tasks] [seeds] [env-steps]}/tests/ppo/gmi.tool.host_ppo
tasks=${2:-point_reach}
seeds=${3:-2}
steps=${4:-1e6}
[ -x "$tool" ] || { echo "host_candidates: got no $tool, need: cmake --build <build-dir> --target gmi.tool.host_ppo" >&2; exit 2; }
[[ "$seeds" =~ ^[1-9][0-9]*$ ]] || { echo "host_candidates: seeds: got $seeds, need a positive integer" >&2; exit 2; }
variants=("default|" "lin|--lr-schedule linear" "clip10|--obs-clip 10")
for t in $tasks; do
  for v in "${variants[@]}"; do
    for s in $(seq "$seeds"); do
      # shellcheck disable=SC2086  # flags are words
      line=$(timeout 600 "$tool" "$t" --num-envs 256 --minibatch 1024 --env-steps "$steps" --seed "$s" --reports 10 ${v#*|} 2>&1 | tail -1)
      echo "host_candidates: $t ${v%%|*} seed $s: $line"
    done
  done
done
