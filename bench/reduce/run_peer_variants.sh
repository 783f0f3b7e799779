#!/usr/bin/env bash
# comm::peer_allreduce's block split and chunk size side by side, under MPS, each line beside a flat NCCL allreduce
# of the same bytes measured in the same invocation: for every GPU count in <gpu counts> (each <= the machine's),
# 16 MB with a shared result for every variant, then 1, 16 and 256 MB with both results for the defaults.
# Variants: producer_warps:chunk_floats pairs (16 warps = every warp runs both phases in turn), or "defaults" for
# none. Usage: run_peer_variants.sh <build-dir> <results.jsonl> [gpu counts, default "2 4"] [reps, default 7]
#              [variants, default "16:8192 8:8192 12:8192"]
set -euo pipefail
build=${1:?build directory}
out=${2:?results file}
counts=${3:-2 4}
reps=${4:-7}
variants=${5:-16:8192 8:8192 12:8192}
[ "$variants" = defaults ] && variants=""
here=$(dirname "$0")
have=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
for n in $counts; do
  if [ "$n" -gt "$have" ]; then echo "run_peer_variants: $n GPUs asked, this machine has $have" >&2; exit 2; fi
done
summary() {
  python3 -c 'import json, sys
for l in sys.stdin:
    if not l.startswith("{"): continue
    r = json.loads(l)
    if r["metric"] != "latency_s": continue
    print("%-24s n=%s m=%s %9s B warps=%s chunk=%s %8.1f us ratio %s" % (r["impl"], r.get("gpus_used"), r.get("gmis_per_gpu"),
          r["bytes"], r.get("producer_warps", "-"), r.get("chunk_floats", "-"), r["median"] * 1e6,
          "%.3f" % r["ratio_to_nccl_flat"] if "ratio_to_nccl_flat" in r else "-"))'
}
for n in $counts; do
  for variant in $variants; do
    bash "$here/run_reduce_under_mps.sh" "$build" "$out" peer n="$n" bytes=16777216 copy_back=0 reps="$reps" \
      producer_warps="${variant%%:*}" chunk_floats="${variant##*:}" 2>/dev/null | summary
  done
  bash "$here/run_reduce_under_mps.sh" "$build" "$out" peer n="$n" reps="$reps" 2>/dev/null | summary
done
