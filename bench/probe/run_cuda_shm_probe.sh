#!/usr/bin/env bash
# Which CUDA calls leave the driver's /dev/shm/cuda.shm.* file behind (docs/runtime.md): builds
# ipc_event_probe.cu for sm_90 and runs each mode in its own process, counting the files before and after.
# Usage: run_cuda_shm_probe.sh [build-dir=/tmp/gmi-cuda-shm-probe]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-/tmp/gmi-cuda-shm-probe}
mkdir -p "$out"
nvcc -O2 -arch=sm_90 -o "$out/ipc_event_probe" "$here/ipc_event_probe.cu"
n() { find /dev/shm -maxdepth 1 -name 'cuda.shm.*' | wc -l; }
for m in create_only mem_handle keep destroy reset child_opens child_opens_destroys; do
  before=$(n); res=$("$out/ipc_event_probe" "$m" 2>&1 || true); after=$(n)
  echo "$m: ${res:+$res | }cuda.shm files $before -> $after"
done
