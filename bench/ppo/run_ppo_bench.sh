#!/usr/bin/env bash
# Runs gmi.bench.ppo and the PyTorch anchor side by side under one run id, appending to
# bench/results/<date>-<device>.jsonl. Usage: bench/ppo/run_ppo_bench.sh <build-dir> <anchor.py> [gmi --what] [anchor --what...]
set -euo pipefail
build=${1:?build directory}
anchor=${2:?path to torch_isaacgym_style.py}
what=${3:-all}
shift 3 2>/dev/null || shift $#
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
export NCCL_NVLS_ENABLE=0
device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr ' ' '-')
git=${GMI_GIT_REVISION:-$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)}
run_id="$(date -u +%Y-%m-%dT%H:%M:%SZ)-${device}-${git}"
mkdir -p "$root/bench/results"
out="$root/bench/results/$(date -u +%Y-%m-%d)-${device}.jsonl"
"$build/bench/ppo/gmi.bench.ppo" --what "$what" --run-id "$run_id" --out "$out"
python3 "$here/anchor_ppo.py" "$anchor" --run-id "$run_id" --git "$git" --out "$out" ${@:+--what "$@"}
