#!/usr/bin/env bash
# Issue 39 (the batched SAC update threw `cuBLASLt status 13` at batch 4096), on a GPU machine from the repository
# root ($OUT set), under 9 minutes on a cold 16-core H100/H200 (at most 270 s building):
#   1. the mechanism alone (gmi.bench.sac_bias_probe K OFFSET, one process a case): an Ant critic's BGRADB weight-
#      gradient products at k = 256 .. 8192 with the gradient at float offset 0, 75265 (where the trainer put critic
#      2's before the fix: 4-byte aligned bias gradients) and 75328 (where it puts it now), called without
#      lt_gemm's bias-alignment check: the heuristic's algorithm (id, tile, split-K) and "ok" or the fault;
#   2. gmi.bench.sac_update --batches 1024,2048,4096,8192 --impls launches with GMI_TRACE=1: every launched
#      update waits after each stage, so a fault left names its stage ("sac_device_trainer update, stage ...");
#   3. gmi.bench.sac_update --batches 256,1024,2048,4096,8192 --updates 300 --reps 3, launched and graph-replayed:
#      the result lines;
#   4. the GPU tests touched: nn_gpu.lt.gradients_at_odd_offset (a critic's gradients written at offset 75265 at
#      n 256 and 4096 match the host's, bias gradients by the column sums), nn_gpu.lt.paper_nets_match_host,
#      sac_gpu.graph_update_matches_launches and sac_gpu.device_gradients_match_host.
# Writes $OUT/sac_4096.jsonl: {"bench":"sac_bias_probe","k","offset","in","out","bias_align","d_align","algo_id",
# "tile","splitk","result"} and {"bench":"sac_update","case":"ant_b<batch>","impl":"launches"|"graph","metric":
# "updates_per_s"|"samples_per_s","median","min","max","batch",...}, each with device, git and run_id; logs under
# $OUT/sac_4096/ (5 files: probe.err, traced.log, bench.log, test_nn_gpu.log, test_sac_gpu.log; with configure.log,
# build.log and the lines, 8 files to bring back). Exit 0 when every step passed.
set -uo pipefail
start_s=$(date +%s)
deadline_s=$((start_s + 520))
name=sac_4096
source "$(dirname "$0")/../physics/device_common.sh"
logs="$out/sac_4096"
mkdir -p "$logs"

configure_build -DGMI_HEADER_CHECK_NVCC=OFF
targets=(gmi.bench.sac_update gmi.bench.sac_bias_probe gmi.test.sac_gpu gmi.test.nn_gpu)
build_targets 270
fits() {
  local left=$((deadline_s - $(date +%s)))
  [[ $1 -le $left ]] && return 0
  echo "device_4096: skipped (needs ${1} s, ${left} s left of the 9 minutes): $2"
  status=1
  return 1
}
tag() {  # stdin JSON lines -> the same with device, git and run_id, appended to $lines and printed
  python3 -c '
import json, sys
extra = {"device": sys.argv[1], "git": sys.argv[2], "run_id": sys.argv[3]}
with open(sys.argv[4], "a") as out:
    for raw in sys.stdin:
        if raw.startswith("{"):
            d = json.loads(raw)
            d.update(extra)
            out.write(json.dumps(d) + "\n")
            print(json.dumps(d))
' "$device" "$git_rev" "$run_id" "$lines"
}

echo "== 1. BGRADB products of an Ant critic's backward, gradient at a float offset, no bias-alignment check"
if fits 60 "the bias probe"; then
  for k in 256 1024 2048 4096 8192; do
    for off in 0 75265 75328; do
      timeout 20 "$build/bench/sac/gmi.bench.sac_bias_probe" "$k" "$off" 2>> "$logs/probe.err" |
        tag > /dev/null || echo "probe k $k offset $off: exit $? ($(tail -1 "$logs/probe.err"))"
    done
  done
  python3 - "$lines" <<'PY' || true
import json, sys
for raw in open(sys.argv[1]):
    d = json.loads(raw)
    if d["bench"] == "sac_bias_probe":
        print(f"k {d['k']:5} offset {d['offset']:6} layer {d['in']:3}x{d['out']:<3} bias aligned {d['bias_align']:3} B, "
              f"algo {d['algo_id']:3} tile {d['tile']:3} splitk {d['splitk']:3}: {d['result']}")
PY
fi

echo "== 2. the update with GMI_TRACE=1 (a wait after each stage), launched, batches 1024..8192"
if fits 150 "the traced update"; then
  GMI_TRACE=1 timeout 150 "$build/bench/sac/gmi.bench.sac_update" --batches 1024,2048,4096,8192 --impls launches \
    --updates 50 --reps 1 > "$logs/traced.log" 2>&1 || { echo "traced update: exit $?"; status=1; }
  grep -E "sac_update|stage|status|error" "$logs/traced.log" | cut -c1-300 | head -12
fi

echo "== 3. the bare update at batches 256..8192, launched and as a CUDA graph"
if fits 200 "the bare-update bench"; then
  timeout 200 "$build/bench/sac/gmi.bench.sac_update" --batches 256,1024,2048,4096,8192 --updates 300 --reps 3 \
    --run-id "$run_id" --device "$device" --git "$git_rev" --out "$lines" > "$logs/bench.log" 2>&1 ||
    { echo "bench: exit $? ($(tail -1 "$logs/bench.log"))"; status=1; }
  python3 - "$logs/bench.log" <<'PY' || true
import json, sys
for raw in open(sys.argv[1]):
    if raw.startswith("{"):
        d = json.loads(raw)
        if d["metric"] == "updates_per_s":
            print(f"batch {d['batch']:>5} {d['impl']:>8}: {d['median']:9.0f} updates/s, "
                  f"{d['median'] * d['batch'] / 1e6:6.2f} M samples/s (min {d['min']:.0f}, max {d['max']:.0f})")
PY
fi

echo "== 4. GPU tests"
if fits 90 "nn_gpu lt tests"; then
  timeout 90 "$build/tests/nn_gpu/gmi.test.nn_gpu" -tc='nn_gpu.lt.gradients_at_odd_offset,nn_gpu.lt.paper_nets_match_host' \
    -s > "$logs/test_nn_gpu.log" 2>&1 || status=1
  grep -E "critic 35-256|ERROR|SKIPPED" "$logs/test_nn_gpu.log" | head -8
  tail -2 "$logs/test_nn_gpu.log"
fi
if fits 150 "sac_gpu tests"; then
  timeout 150 "$build/tests/sac_gpu/gmi.test.sac_gpu" \
    -tc='sac_gpu.graph_update_matches_launches,sac_gpu.device_gradients_match_host' -s \
    > "$logs/test_sac_gpu.log" 2>&1 || status=1
  grep -E "sac_gpu graph update|sac_gpu agreement|SKIPPED|ERROR" "$logs/test_sac_gpu.log" | head -6
  tail -2 "$logs/test_sac_gpu.log"
fi
echo "== result lines: $lines ($(( $(date +%s) - start_s )) s in all, status $status)"
exit $status
