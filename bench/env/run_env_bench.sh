#!/usr/bin/env bash
# Runs gmi.bench.env and the PyTorch anchor's Cartpole env-step side by side, with one run id, appending to
# bench/results/<date>-<device>.jsonl. Usage: bench/env/run_env_bench.sh <build-dir> [anchor.py]
set -euo pipefail
build=${1:?build directory}
anchor=${2:-shared/anchors/torch_isaacgym_style.py}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr ' ' '-')
git=${GMI_GIT_REVISION:-$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)}
run_id="$(date -u +%Y-%m-%dT%H:%M:%SZ)-${device}-${git}"
mkdir -p "$root/bench/results"
out="$root/bench/results/$(date -u +%Y-%m-%d)-${device}.jsonl"
"$build/bench/env/gmi.bench.env" --run-id "$run_id" --git "$git" --out "$out"
python3 "$here/anchor_env_step.py" "$anchor" --num-envs 512 2048 8192 --run-id "$run_id" --git "$git" --out "$out"
