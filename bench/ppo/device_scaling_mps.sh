#!/usr/bin/env bash
# GPU machine with GPUS GPUs (2 or 4), from the repository root: issue 41's two shapes of synchronous Cartpole PPO
# (fused update, each GMI's minibatch its own) on 1 and GPUS GPUs, and for 8 MPS GMIs x 512 envs a GPU the two
# places where the GPUs' sums meet, side by side in the same call: `host` (--inbox-memory host: pinned host
# inboxes and a relay a GPU, the path before the probe) and `automatic` (the peer inboxes reached through CUDA IPC
# over NVLink where the probe succeeds, docs/scaling.md). Steps:
#   1. builds gmi.example.cartpole_ppo and gmi.test.comm_multigpu$GPUS (-j16);
#   2. the multi-GPU test of GMIs that see only their own GPU (probe, fallback, refusal);
#   3. the same 8 MPS x 512 training for 20 iterations with host, automatic, host inboxes: the weights'
#      FNV-1a must be the same (the sums add the same floats in the same order on both paths);
#   4. `reps` repetitions, the GPU counts and paths alternating, of `seconds` each;
# then the medians. Result lines (bench training, metric weak_scaling / train_samples_per_s / weights_match) go to
# $OUT/scaling_mps/results.jsonl, every run's end line to $OUT/scaling_mps/runs-<inbox-memory>.jsonl. About 3-4 min of build and
# 4 min of runs with the defaults.
# Usage: bench/ppo/device_scaling_mps.sh [gpus=2] [seconds=4] [reps=3]
set -uo pipefail
OUT=${OUT:-/tmp/out}
gpus=${1:-2}
seconds=${2:-4}
reps=${3:-3}
[[ "$gpus" =~ ^[0-9]+$ ]] && [ "$gpus" -ge 2 ] || { echo "device_scaling_mps: gpus: got $gpus, need an integer >= 2"; exit 2; }
[[ "$seconds" =~ ^[0-9]+([.][0-9]+)?$ ]] && [[ ! "$seconds" =~ ^0+([.]0+)?$ ]] ||
  { echo "device_scaling_mps: seconds: got $seconds, need a positive number"; exit 2; }
[[ "$reps" =~ ^[1-9][0-9]*$ ]] || { echo "device_scaling_mps: reps: got $reps, need a positive integer"; exit 2; }
dir="$OUT/scaling_mps"
mkdir -p "$dir"
have=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
[ "$have" -ge "$gpus" ] || { echo "device_scaling_mps: got $have GPUs, need $gpus"; exit 77; }
export NCCL_NVLS_ENABLE=0
export GMI_GIT_REVISION=${GMI_GIT_REVISION:-$(cat .carry/git-rev 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)}
build=${BUILD:-/tmp/build}
targets=(gmi.example.cartpole_ppo)
[ "$gpus" = 2 ] || [ "$gpus" = 4 ] && targets+=("gmi.test.comm_multigpu$gpus")
[ -f "$build/CMakeCache.txt" ] || cmake --preset gpu -B "$build" > "$dir/configure.log" 2>&1 ||
  { tail -30 "$dir/configure.log"; exit 1; }
start=$(date +%s)
timeout 300 cmake --build "$build" -j16 --target "${targets[@]}" > "$dir/build.log" 2>&1 ||
  { grep -E "error|Error" "$dir/build.log" | head -20; echo "device_scaling_mps: build failed or timed out"; exit 1; }
device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
run_id="scaling-mps-$(date -u +%Y%m%dT%H%M%SZ)"
echo "built in $(( $(date +%s) - start )) s; device: $gpus x $device, revision $GMI_GIT_REVISION, run $run_id"
bin="$build/examples/cartpole_ppo/gmi.example.cartpole_ppo"
status=0

# 2. GMIs that see only their GPU: the probe finds the peer inboxes; a failed probe falls back or refuses.
if [ -x "$build/tests/comm_multigpu/gmi.test.comm_multigpu$gpus" ]; then
  echo "== $(( $(date +%s) - start )) s: test: row exchange across GPUs where each GMI sees one GPU"
  if timeout 240 "$build/tests/comm_multigpu/gmi.test.comm_multigpu$gpus" -tc="*each_sees_one*" > "$dir/test.log" 2>&1; then
    echo "passed: $(grep -E 'test cases' "$dir/test.log" | tail -1)"
  else
    echo "FAILED (tail of $dir/test.log):"; tail -25 "$dir/test.log"; status=1
  fi
fi

common=(--gmis-per-gpu 8 --num-envs 512 --partition mps --minibatch-scope gmi --synced-update fused --seed 1
        --target-return nan --log-interval 100)
# 3. Same steps, same seed: the weights of host and peer inboxes (and host again: the run repeats itself).
steps=$((20 * 8 * 512 * 16 * gpus))
echo "== $(( $(date +%s) - start )) s: identical weights: 8 MPS x 512 on $gpus GPUs, $steps env steps, inboxes host / automatic / host"
hashes=()
for inbox in host automatic host; do
  line=$(timeout 240 "$bin" --gpus "$gpus" "${common[@]}" --inbox-memory "$inbox" --max-env-steps "$steps" \
           --max-seconds 200 --metrics "$dir/identity.jsonl" 2>&1 | tee -a "$dir/identity.log" | grep -E "FNV-1a" | tail -1)
  h=$(sed -n 's/.*FNV-1a \([0-9a-f]*\).*/\1/p' <<< "$line")
  echo "  $inbox: ${h:-no hash} ($line)" | cut -c1-220
  hashes+=("${h:-none}")
done
python3 - "$dir" "$GMI_GIT_REVISION" "$run_id" "$device" "$gpus" "${hashes[@]}" <<'PY' || status=1
import json, sys
d, git, run, device, n, h1, h2, h3 = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), *sys.argv[6:9]
same = h1 == h2 == h3 and h1 != "none"
print("  weights:", "identical on both paths" if same else
      ("the host runs differ from each other (not reproducible here)" if h1 != h3 else "DIFFER between host and peer inboxes"))
with open(f"{d}/results.jsonl", "a") as f:
    f.write(json.dumps({"bench": "training", "case": "8 x 512 mps", "impl": "host vs automatic inboxes",
                        "metric": "weights_match", "gpus": n, "gmis_per_gpu": 8, "num_envs": 512,
                        "median": 1 if same else 0, "min": 1 if same else 0, "max": 1 if same else 0,
                        "hashes": [h1, h2, h3], "device": device, "git": git, "run_id": run}) + "\n")
sys.exit(0 if same else 1)
PY

# 4. The timed runs: "shape|GPUs|inbox" in an order that alternates GPU counts and paths.
echo "== $(( $(date +%s) - start )) s: $reps repetitions of $seconds s: 1 x 4096 none and 8 x 512 mps on 1 and $gpus GPUs"
for rep in $(seq "$reps"); do
  for run in "1|1|automatic" "8|1|automatic" "1|$gpus|automatic" "8|$gpus|host" "8|$gpus|automatic"; do
    IFS='|' read -r g n inbox <<< "$run"
    if [ "$g" = 1 ]; then args=(--gmis-per-gpu 1 --num-envs 4096 --partition none --launch processes
                                --minibatch-scope gmi --synced-update fused --seed 1 --target-return nan --log-interval 100)
    else args=("${common[@]}"); fi
    timeout $((${seconds%.*} + 120)) "$bin" --gpus "$n" "${args[@]}" --inbox-memory "$inbox" --max-env-steps 1e15 \
      --max-seconds "$seconds" --metrics "$dir/runs-$inbox.jsonl" > "$dir/run.log" 2>&1
    rc=$?
    summary=$(grep -E "^gmi: .*samples/s over" "$dir/run.log" | tail -1 | cut -c1-160)
    echo "  rep $rep: $g GMI(s) a GPU on $n GPU(s), inboxes $inbox: ${summary:-exit $rc, see below}"
    [ -n "$summary" ] || { tail -5 "$dir/run.log"; status=1; }
    cat "$dir/run.log" >> "$dir/runs.log"
  done
done

python3 - "$dir" "$GMI_GIT_REVISION" "$run_id" "$device" "$gpus" <<'PY' || status=1
import json, os, statistics, sys
d, git, run, device, n = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
def ends(asked):  # the end lines of the runs that asked for these inboxes
    p = f"{d}/runs-{asked}.jsonl"
    rows = [json.loads(l) for l in open(p) if l.strip()] if os.path.exists(p) else []
    return [e for e in rows if e.get("event") == "end" and e.get("train_samples_per_s")]
def used(e):  # where the sums met (gradient_allreduce names it when there is a level across GPUs)
    g = e.get("gradient_allreduce", "")
    return ("peer_to_peer" if "peer_to_peer" in g else "host" if "in host" in g else "no level across GPUs") + \
        (", probed" if "probed" in g else "")
out = open(f"{d}/results.jsonl", "a")
def write(**k):
    out.write(json.dumps({"bench": "training", **k, "device": device, "git": git, "run_id": run}) + "\n")
def sel(asked, g, e, k):
    return [x for x in ends(asked) if x.get("gmis_per_gpu") == g and x.get("num_envs") == e and x.get("gpus") == k]
share = lambda rs: statistics.median([x["comm_share"] for x in rs if "comm_share" in x] or [float("nan")])
print(f"{'shape':<16} {'--inbox-memory':<14} {'1 GPU':>9} {str(n) + ' GPUs':>9} {'weak':>7} {'per rep':>15} "
      f"{'comm 1/n':>12}  runs  where the sums met on {n} GPUs")
for g, e, part, paths in ((1, 4096, "none", ["automatic"]), (8, 512, "mps", ["host", "automatic"])):
    one_rows = sel("automatic", g, e, 1)
    one = [x["train_samples_per_s"] for x in one_rows]
    for asked in paths:
        many_rows = sel(asked, g, e, n)
        many = [x["train_samples_per_s"] for x in many_rows]
        if not one or not many:
            print(f"{f'{g} x {e} {part}':<16} {asked:<14} no runs ({len(one)} at 1 GPU, {len(many)} at {n})")
            continue
        m1, mn = statistics.median(one), statistics.median(many)
        ws = mn / (n * m1)
        per_rep = [b / (n * a) for a, b in zip(one, many)]
        where = sorted(set(used(x) for x in many_rows))
        impl = f"fused, --inbox-memory {asked}"
        print(f"{f'{g} x {e} {part}':<16} {asked:<14} {m1:>9.4g} {mn:>9.4g} {ws:>7.1%} "
              f"{min(per_rep):>7.1%}..{max(per_rep):<6.1%} {share(one_rows):.3f}/{share(many_rows):.3f}  "
              f"{len(one)}+{len(many)}  {'; '.join(where)}")
        for k, rs in ((1, one), (n, many)):
            write(case=f"{g} x {e} {part}", impl=impl, metric="train_samples_per_s", gpus=k, gmis_per_gpu=g,
                  num_envs=e, median=statistics.median(rs), min=min(rs), max=max(rs), runs=len(rs))
        write(case=f"{g} x {e} {part}", impl=impl, metric="weak_scaling", gpus=n, gmis_per_gpu=g, num_envs=e,
              median=ws, min=min(per_rep), max=max(per_rep), runs=len(many), inboxes="; ".join(where),
              comm_share_1=share(one_rows), comm_share_n=share(many_rows))
PY
echo "== done after $(( $(date +%s) - start )) s"
exit $status
