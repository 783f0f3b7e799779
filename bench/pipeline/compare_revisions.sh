#!/usr/bin/env bash
# The same Cartpole runs through gmi::run at two revisions, alternated in one call: serving (one GMI, 512 and 4096
# envs, --serve-seconds 2) and PPO training (512 envs, a fixed 20 M env steps, warm samples/s), REPS times each.
# Writes one result line per (workload, revision) with the median, min and max under one run id: impl "gmi" for
# this revision, "gmi_baseline" for the other. With COLOCATED_ARGS (e.g. "--partition mps --gmis-per-gpu 4") also
# synchronous PPO over GMIs (512 envs each, 2e7 env steps, the group's samples/s of its end line). Usage:
#   [COLOCATED_ARGS=...] bench/pipeline/compare_revisions.sh <this build> <baseline build> <baseline revision> [reps] > lines.jsonl
set -euo pipefail
new=${1:?build of this revision}
old=${2:?build of the baseline revision}
old_rev=${3:?baseline revision}
reps=${4:-5}
root=$(cd "$(dirname "$0")/../.." && pwd)
export NCCL_NVLS_ENABLE=0
device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
# The device checkout may not know the revision: GMI_GIT_REVISION or .carry/git-rev (scripts/carry-rev) first.
rev=${GMI_GIT_REVISION:-$(cat "$root/.carry/git-rev" 2>/dev/null || git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)}
run_id="$(date -u +%Y-%m-%dT%H:%M:%SZ)-pipeline-${rev}-vs-${old_rev}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for ((r = 0; r < reps; r++)); do
  for side in new old; do
    build=${!side}
    for envs in 512 4096; do
      "$build/examples/cartpole_serving/gmi.example.cartpole_serving" --partition none --num-envs "$envs" \
        --serve-seconds 2 --quiet --metrics "$tmp/serve-$side-$envs.jsonl" > /dev/null
    done
    "$build/examples/cartpole_ppo/gmi.example.cartpole_ppo" --num-envs 512 --max-env-steps 2e7 --target-return nan \
      --quiet --metrics "$tmp/train-$side.jsonl" > /dev/null
    if [ -n "${COLOCATED_ARGS:-}" ]; then
      # shellcheck disable=SC2086  # the arguments are words
      "$build/examples/cartpole_ppo/gmi.example.cartpole_ppo" $COLOCATED_ARGS --num-envs 512 --max-env-steps 2e7 \
        --target-return nan --quiet --metrics "$tmp/colocated-$side.jsonl" > /dev/null
    fi
  done
done
python3 - "$tmp" "$run_id" "$device" "$rev" "$old_rev" "$reps" "${COLOCATED_ARGS:-}" <<'PY'
import json, statistics, sys, pathlib
tmp, run_id, device, rev, old_rev, reps, colocated = sys.argv[1:]
def lines(p):
    return [json.loads(l) for l in pathlib.Path(p).read_text().splitlines() if l.strip()]
out = []
for side, impl, git in (("new", "gmi", rev), ("old", "gmi_baseline", old_rev)):
    for envs in (512, 4096):
        v = [l["serve_steps_per_s"] for l in lines(f"{tmp}/serve-{side}-{envs}.jsonl") if l.get("event") == "serving"]
        out.append({"bench": "serving", "task": "cartpole", "num_envs": envs, "metric": "steps_per_s", "values": v,
                    "impl": impl, "git": git})
    v = [l["warm_samples_per_s"] for l in lines(f"{tmp}/train-{side}.jsonl") if l.get("event") == "end"]
    out.append({"bench": "training", "task": "cartpole", "num_envs": 512, "metric": "samples_per_s", "values": v,
                "impl": impl, "git": git})
    if colocated:
        v = [l["train_samples_per_s"] for l in lines(f"{tmp}/colocated-{side}.jsonl") if l.get("event") == "end"]
        out.append({"bench": "training_colocated", "task": "cartpole", "num_envs": 512, "metric": "samples_per_s",
                    "values": v, "impl": impl, "git": git, "args": colocated})
for o in out:
    v = o.pop("values")
    o.update({"run_id": run_id, "device": device, "gmis_per_gpu": 1, "gpus": 1, "partition": "none",
              "median": statistics.median(v), "min": min(v), "max": max(v), "reps": len(v)})
    if o["bench"] == "training_colocated":
        o.pop("gmis_per_gpu"), o.pop("partition")
    print(json.dumps(o))
half = len(out) // 2
for a, b in zip(out[:half], out[half:]):
    print(f"# {a['bench']} {a['num_envs']}: {a['median'] / b['median']:.3f}x the baseline", file=sys.stderr)
PY
