#!/usr/bin/env bash
# Runs gmi.bench.gmi_serving (every task on 1/2/4/8 GMIs under none, green_context and mps) and the PyTorch
# anchor's serving beside it with one run id, appending to bench/results/<date>-<device>.jsonl.
# Usage: bench/gmi_serving/run_gmi_serving_bench.sh <build-dir> <anchor.py> [extra gmi.bench.gmi_serving flags]
# A run split over several calls (e.g. --tasks subsets) shares GMI_RUN_ID; GMI_SKIP_ANCHOR=1 leaves the anchor out.
set -euo pipefail
build=${1:?build directory}
anchor=${2:?path to torch_isaacgym_style.py}
shift 2
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr ' ' '-')
git=${GMI_GIT_REVISION:-$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)}
run_id=${GMI_RUN_ID:-"$(date -u +%Y-%m-%dT%H:%M:%SZ)-${device}-${git}"}
echo "run id: $run_id"
mkdir -p "$root/bench/results"
out="$root/bench/results/$(date -u +%Y-%m-%d)-${device}.jsonl"
[ -n "${GMI_SKIP_ANCHOR:-}" ] || python3 "$here/anchor_serving.py" "$anchor" --run-id "$run_id" --git "$git" --out "$out"
"$build/bench/gmi_serving/gmi.bench.gmi_serving" --run-id "$run_id" --out "$out" "$@"
