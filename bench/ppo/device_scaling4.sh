#!/usr/bin/env bash
# GPU machine with 4 GPUs, from the repository root: weak scaling of synchronous Cartpole PPO for both shapes of
# issue 41 on 1 and 4 GPUs side by side in one call, 1 GMI x 4096 envs a GPU (one process a GPU) and 8 MPS GMIs x
# 512 envs a GPU, fused update, each GMI's minibatch its own (bench/ppo/run_weak_scaling.sh). Builds only the
# example (-j16), then prints per shape: samples/s at 1 and 4 GPUs (medians), the weak scaling, and the time shares
# the end lines carry: comm_share (a GMI's device in the gradient sums' waits: the within-GPU and cross-GPU wait of
# the fused step kernels), comm_share_max (the slowest GMI) and host_sync_share (the group's stop decisions).
# Result lines land in $OUT/scaling4/weak.jsonl. About 3-4 min of build, 4 min of runs with the defaults.
# Usage: bench/ppo/device_scaling4.sh [gpus=4] [seconds=4] [reps=2]
set -euo pipefail
OUT=${OUT:-/tmp/out}
gpus=${1:-4}
seconds=${2:-4}
reps=${3:-2}
[[ "$gpus" =~ ^[0-9]+$ ]] && [ "$gpus" -ge 2 ] || { echo "device_scaling4: gpus: got $gpus, need an integer >= 2"; exit 2; }
[[ "$seconds" =~ ^[0-9]+([.][0-9]+)?$ ]] && [[ ! "$seconds" =~ ^0+([.]0+)?$ ]] ||
  { echo "device_scaling4: seconds: got $seconds, need a positive number"; exit 2; }
[[ "$reps" =~ ^[1-9][0-9]*$ ]] || { echo "device_scaling4: reps: got $reps, need a positive integer"; exit 2; }
dir="$OUT/scaling4"
mkdir -p "$dir"
have=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
[ "$have" -ge "$gpus" ] || { echo "device_scaling4: got $have GPUs, need $gpus"; exit 77; }
export GMI_GIT_REVISION=${GMI_GIT_REVISION:-$(cat .carry/git-rev 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)}
[ -f /tmp/build/CMakeCache.txt ] || cmake --preset gpu -B /tmp/build -DGMI_BUILD_BENCHMARKS=ON > "$dir/configure.log" 2>&1 ||
  { tail -30 "$dir/configure.log"; exit 1; }
time cmake --build /tmp/build -j16 --target gmi.example.cartpole_ppo > "$dir/build.log" 2>&1 || { tail -40 "$dir/build.log"; exit 1; }
device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "device: $gpus x $device, revision $GMI_GIT_REVISION"
bench/ppo/run_weak_scaling.sh /tmp/build "$dir/weak.jsonl" "$gpus" "1 4096 none;8 512 mps" "$seconds" "$reps" fused |
  tee "$dir/runs.log" | grep -E "rror|DIFFER|communication" || true
python3 - "$dir/weak.jsonl" "$gpus" <<'PY'
import json, statistics, sys
path, n = sys.argv[1], int(sys.argv[2])
ends = [json.loads(l) for l in open(path) if l.strip()]
ends = [e for e in ends if e.get("event") == "end" and e.get("train_samples_per_s")]
def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else float("nan")
print(f"{'shape':<24} {'1 GPU':>10} {str(n) + ' GPUs':>10} {'weak':>7}  comm share 1/n  slowest 1/n  host sync 1/n  weights")
for g, e, p in ((1, 4096, "none"), (8, 512, "mps")):
    def sel(k):
        return [x for x in ends if x.get("gpus") == k and x.get("gmis_per_gpu") == g and x.get("num_envs") == e
                and "weights_identical" in x]  # the synced group's end line (the 'alone' run has none)
    one, many = sel(1), sel(n)
    r1, rn = med([x["train_samples_per_s"] for x in one]), med([x["train_samples_per_s"] for x in many])
    share = lambda rows, k: med([x.get(k) for x in rows])
    same = all(x.get("weights_identical", True) for x in one + many)
    print(f"{f'{g} x {e} {p}':<24} {r1:>10.4g} {rn:>10.4g} {rn / (n * r1) if r1 == r1 and r1 else float('nan'):>7.1%}  "
          f"{share(one, 'comm_share'):.3f}/{share(many, 'comm_share'):.3f}    "
          f"{share(one, 'comm_share_max'):.3f}/{share(many, 'comm_share_max'):.3f}  "
          f"{share(one, 'host_sync_share'):.3f}/{share(many, 'host_sync_share'):.3f}   "
          f"{'identical' if same else 'DIFFER'} ({len(one)}+{len(many)} runs)")
PY
