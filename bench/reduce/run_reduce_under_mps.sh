#!/usr/bin/env bash
# gmi.bench.reduce with every process an MPS client: GMIs that are processes on one GPU share it through MPS
# (as a GMI-DRL run does); without MPS their kernels time-slice and a member waits whole slices for its leader.
# Starts its own control daemon (own pipe and log directories), quits it on every exit path, and marks each
# result line with "mps": true. Usage: run_reduce_under_mps.sh <build-dir> <results.jsonl> [bench args...]
set -euo pipefail
build=${1:?build directory}
out=${2:?results file}
shift 2
dir=$(mktemp -d /tmp/gmi-reduce-mps-XXXXXX)
export CUDA_MPS_PIPE_DIRECTORY=$dir/pipe CUDA_MPS_LOG_DIRECTORY=$dir/log
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
nvidia-cuda-mps-control -d
trap 'echo quit | nvidia-cuda-mps-control >/dev/null 2>&1; sleep 1; rm -rf "$dir"' EXIT
"$build/bench/reduce/gmi.bench.reduce" "$@" |
  python3 -c 'import json, sys
for line in sys.stdin:
    if line.startswith("{"):
        r = json.loads(line); r["mps"] = True; line = json.dumps(r) + "\n"
    sys.stdout.write(line)' | tee -a "$out"
