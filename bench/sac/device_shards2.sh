#!/usr/bin/env bash
# Global prioritized sampling over the device shards of 2 GPUs (replay/multi_gpu_shards.cuh, docs/replay.md), on a
# machine with 2 GPUs (CUDA_VISIBLE_DEVICES may pick them; at least 2 must be visible), from the repository root (OUT
# set), within TOTAL_SECONDS (default 300: 5 minutes) of a cold machine including the build:
#   1. builds gmi.test.replay, gmi.test.replay_gpu and gmi.bench.replay only (-j$JOBS, default the machine's cores) in
#      $BUILD (default /tmp/build-sac3);
#   2. runs the replay tests: tests/replay (host, the twin's cases replay.gpu_groups.*) and tests/replay_gpu (among
#      them replay_gpu.multi_gpu_prioritized_over_two_gpus: the two GPUs' draws against the host twin bit for bit,
#      the shares and item frequencies by chi-square; it prints a skip line with fewer than 2 GPUs, which this script
#      counts as a failure);
#   3. gmi.bench.replay --cases global2: the draw of 8192 over 4 shards of 2.5 M items on one GPU (the reference,
#      global_prioritized_draw_10M: us_call, us_kernels), then over 2 shards of 2.5 M on each of 2 GPUs
#      (global_prioritized_draw_10M_2gpu: us_call, the whole call with both GPUs' streams waited for; gpu0_share, GPU
#      0's share of the draws), 20 reps each (medians, min, max);
#   4. a summary: the tests' result, the two-GPU call against the one-GPU call and against issue 39's 50 us target
#      for one table, GPU 0's share against its total's share (the priorities make GPU 0's total 3/10 of the sum:
#      shards 1, 2 against 3, 4 times the same mean priority).
# Writes $OUT/shards2.jsonl (the bench's lines with device, git, run_id), $OUT/shards2-summary.txt; logs under
# $OUT/shards2/.
# Arguments (optional): TOTAL_SECONDS (120..1200, default 300).
set -uo pipefail
start_s=$(date +%s)
total_seconds=${1:-300}
[[ "$total_seconds" =~ ^[0-9]+$ && "$total_seconds" -ge 120 && "$total_seconds" -le 1200 ]] ||
  { echo "device_shards2: total seconds: got $total_seconds, need an integer in 120..1200" >&2; exit 2; }
deadline_s=$((start_s + total_seconds))
name=shards2
export BUILD=${BUILD:-/tmp/build-sac3}
source "$(dirname "$0")/../physics/device_common.sh"
logs="$out/shards2"
mkdir -p "$logs"
rm -f "$lines"
left() { echo $((deadline_s - $(date +%s))); }

gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-unset}; GPUs visible: $gpus"
((gpus >= 2)) || echo "device_shards2: needs 2 GPUs, sees $gpus: the two-GPU test skips and the bench refuses" >&2

configure_build -DGMI_HEADER_CHECK_NVCC=OFF
targets=(gmi.test.replay gmi.test.replay_gpu gmi.bench.replay)
build_targets $(( $(left) - 60 ))

echo "== tests ($(left) s left)"
timeout 60 "$build/tests/replay/gmi.test.replay" > "$logs/replay_test.log" 2>&1 ||
  { echo "device_shards2: tests/replay failed ($logs/replay_test.log)" >&2; status=1; }
tail -n 2 "$logs/replay_test.log"
timeout $(( $(left) - 40 > 120 ? 120 : $(left) - 40 )) "$build/tests/replay_gpu/gmi.test.replay_gpu" \
  > "$logs/replay_gpu_test.log" 2>&1
rc=$?
((rc == 0)) || { echo "device_shards2: tests/replay_gpu: exit $rc ($logs/replay_gpu_test.log)" >&2; status=1; }
grep -E "two-GPU chi-square|GPU 0's share|multi_gpu.*skipped|test cases|assertions" "$logs/replay_gpu_test.log" |
  tee "$out/shards2-tests.txt"
grep -q "multi_gpu_prioritized_over_two_gpus skipped" "$logs/replay_gpu_test.log" &&
  { echo "device_shards2: the two-GPU test skipped" >&2; status=1; }

echo "== bench ($(left) s left)"
device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
timeout $(( $(left) - 5 > 10 ? $(left) - 5 : 10 )) "$build/bench/replay/gmi.bench.replay" --cases global2 \
  --reps 20 --run-id "$run_id" --device "$device" --git "$git_rev" --out "$lines" > "$logs/bench.log" 2>&1 ||
  { echo "device_shards2: gmi.bench.replay: exit $? ($(tail -1 "$logs/bench.log"))" >&2; status=1; }

python3 - "$lines" <<'EOF' 2>&1 | tee "$out/shards2-summary.txt" || status=1
import json, os, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()] if os.path.exists(sys.argv[1]) else []
val = {(r["case"], r["metric"]): r for r in rows}
one = val.get(("global_prioritized_draw_10M", "us_call"))
kern = val.get(("global_prioritized_draw_10M", "us_kernels"))
two = val.get(("global_prioritized_draw_10M_2gpu", "us_call"))
share = val.get(("global_prioritized_draw_10M_2gpu", "gpu0_share"))
if not two:
    sys.exit("device_shards2: no two-GPU line (see shards2/bench.log)")
print(f"8192 draws over 10 M items on 2 GPUs (4 shards, peer access {two.get('peer_access')}): "
      f"{two['median']:.1f} us the call (min {two['min']:.1f}, max {two['max']:.1f}); issue 39's 50 us (one table): "
      f"{'within' if two['median'] <= 50 else 'above'}")
if one:
    k = f"{kern['median']:.1f}" if kern else "-"
    print(f"one GPU, the same 4 shards: {one['median']:.1f} us the call, {k} us the kernels; "
          f"two GPUs over one: {two['median'] / one['median']:.2f}x")
if share:
    print(f"GPU 0's share of the draws: median {share['median']:.4f} (min {share['min']:.4f}, max "
          f"{share['max']:.4f}) against its total's share, about 0.3 (shards 1, 2 of 1..4 times one mean priority)")
EOF
echo "== result lines: $lines ($(( $(date +%s) - start_s )) s in all)"
exit "$status"
