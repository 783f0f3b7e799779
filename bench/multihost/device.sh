#!/usr/bin/env bash
# GPU machine with 2 or 4 GPUs (run from the repository root): synchronous PPO (Cartpole, one trainer a GPU,
# NCCL allreduces) on
#   one host with all the GPUs (NCCL's default transports),
#   one host with all the GPUs, NCCL on sockets (NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1),
#   two simulated hosts, each a process with half the GPUs, NCCL on sockets (the network between hosts),
# each a result line (bench multihost, metric env_steps_per_s, "hosts": 1 or 2) in $OUT/multihost/ppo.jsonl.
# The hosts are started with torchrun-style variables (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
# MASTER_ADDR, MASTER_PORT), so no MPI is needed there. About 3 min of build, 1 of runs.
set -euo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/multihost"
export GMI_GIT_REVISION=${GMI_GIT_REVISION:-$(cat .carry/git-rev 2>/dev/null || git rev-parse --short HEAD)}
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
if [ "$gpus" -lt 2 ]; then echo "SKIPPED: bench/multihost/device.sh needs 2 or 4 GPUs, found $gpus"; exit 77; fi
[ "$gpus" -gt 4 ] && gpus=4
half=$((gpus / 2))
cmake --preset gpu -B /tmp/build -DGMI_BUILD_BENCHMARKS=ON > "$OUT/multihost/configure.log" 2>&1
time cmake --build /tmp/build -j16 --target gmi.bench.multihost_ppo > "$OUT/multihost/build.log" 2>&1 \
  || { tail -40 "$OUT/multihost/build.log"; exit 1; }
bin=/tmp/build/bench/multihost/gmi.bench.multihost_ppo
lines="$OUT/multihost/ppo.jsonl"
args=(--envs 8192 --iterations 30 --warmup 5 --out "$lines")
export NCCL_NVLS_ENABLE=0
sockets=(NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=lo)
nvidia-smi --query-gpu=index,name --format=csv,noheader

echo "== one host, $gpus GPUs, NCCL default"
CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((gpus - 1))) timeout 240 "$bin" "${args[@]}" --transport default
echo "== one host, $gpus GPUs, NCCL on sockets"
CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((gpus - 1))) env "${sockets[@]}" timeout 240 "$bin" "${args[@]}" --transport sockets
echo "== two simulated hosts x $half GPUs, NCCL on sockets"
rdv=$(mktemp -d /tmp/gmi-rdv.XXXXXX)
pids=()
for r in 0 1; do
  CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((gpus - 1))) env "${sockets[@]}" RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 \
    MASTER_ADDR=127.0.0.1 MASTER_PORT=29533 TORCHELASTIC_RUN_ID="gmi-$$" \
    timeout 240 "$bin" "${args[@]}" --transport sockets --rendezvous "$rdv" > "$OUT/multihost/host$r.log" 2>&1 &
  pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
cat "$OUT/multihost/host0.log" "$OUT/multihost/host1.log"
rm -rf "$rdv"
[ "$rc" -eq 0 ] || { echo "the two-host run failed"; exit 1; }
python3 - "$lines" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
one = [r for r in rows if r["hosts"] == 1 and r["transport"] == "default"][-1]
two = [r for r in rows if r["hosts"] == 2][-1]
print(f"two hosts / one host: {two['median'] / one['median']:.3f} (target >= 0.90); "
      f"one host {one['median']:.4g}, two hosts {two['median']:.4g} env steps/s")
PY
echo "result lines: $(wc -l < "$lines") in $lines"
