#!/usr/bin/env bash
# Two synced trainings that must end with the same bits: same_weights.sh [--min-gpus N] <command> [args...] runs the
# command with --synced-update fused (the group's sums and rollout statistics inside the trainers' kernels) and with
# --synced-update graph (allreduce calls between kernels, statistics gathered on the host); each run is checked by
# gpu_run.sh (exit 0, identical weights on every GMI, nothing left behind), and both must report the same FNV-1a
# of the weights. Skips visibly (exit 77) where gpu_run.sh does.
set -uo pipefail
here=$(dirname "$0")
min=()
if [ "${1:-}" = "--min-gpus" ]; then min=(--min-gpus "$2"); shift 2; fi
declare -A fnv
for update in fused graph; do
  out=$("$here/gpu_run.sh" "${min[@]}" 0 "update ${update}.*weights identical on every GMI" "$@" --synced-update "$update")
  rc=$?
  echo "$out"
  [ "$rc" = 77 ] && exit 77
  if [ "$rc" != 0 ]; then echo "same_weights: the ${update} run failed"; exit 1; fi
  fnv[$update]=$(grep -oE "FNV-1a [0-9a-f]+" <<<"$out" | tail -1)
done
if [ -z "${fnv[fused]}" ] || [ "${fnv[fused]}" != "${fnv[graph]}" ]; then
  echo "same_weights: fused ended with '${fnv[fused]}', graph with '${fnv[graph]}'; need the same weights"
  exit 1
fi
echo "same_weights: fused and graph both ended with ${fnv[fused]}"
