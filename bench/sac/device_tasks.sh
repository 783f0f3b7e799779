#!/usr/bin/env bash
# SAC on the physics tasks, on a GPU machine from the repository root (OUT set), in one call of under 9 minutes on a
# cold 16-core H100/H200 (about 4 of them building; every step after the build is skipped, with a line saying so,
# once it would end past 8 min 40 s):
#   1. the bare update (gmi.bench.sac_update): updates/s of rl::sac_device_trainer::update at batch 256 and 4096,
#      Ant's sizes, networks 256x256, launched and graph-replayed, no environment steps between updates;
#   2. the GPU tests of this work: sac_gpu.graph_update_matches_launches (the captured update against launches, and
#      a second launched run, bit for bit; both timed) and sac_gpu.device_gradients_match_host (the batched device
#      gradients against the host's at hidden 32 and 256); replay_gpu.global_prioritized_over_device_shards and
#      replay_gpu.concurrent_writers_none_lost_or_torn; then gmi.bench.replay --cases global: one global prioritized
#      draw of 8192 over 4 device shards of 2.5 M items (whole call and kernels);
#   3. Ant (gmi.example.ant_v4_sac, networks 256x256, --num-envs ENVS a GMI, batch 256, 1 update per env step, the
#      update launched: the settings before gmi::run's GPU defaults, pinned by flags) for SECONDS of
#      wall clock: 1 GMI, then 4 MPS learners (--partition mps --gmis-per-gpu 4, gradients averaged on the device);
#   4. the captured update against launches on Ant: 3 runs each of GRAPH_SECONDS, with and without --sac-cuda-graph,
#      medians of updates/s and env steps/s, and their ratio;
#   5. Humanoid (gmi.example.humanoid_v4_sac), 1 GMI for 15 s: the task runs under SAC (a smoke run, no claim);
#   6. a table of updates/s and env steps/s of every run above.
# Writes $OUT/sac_tasks.jsonl:
#   {"bench":"sac_update","case":"ant_b256"|"ant_b4096","impl":"launches"|"graph","metric":"updates_per_s"|
#    "samples_per_s","median","min","max","batch",...} (median of 5 reps of 500 updates);
#   {"bench":"sac_tasks","case":"ant_1gmi"|"ant_4mps"|"humanoid_1gmi","impl":"gmi","algo":"sac","gmis":..,
#    "metric":"env_steps_per_s"|"updates_per_s"|"final_return"|"eval_return"|"env_steps"|"wall_s","median":..,...}
#   (one run each: median = min = max), learning-curve points {"bench":"learning_curve",...,"env_steps","wall_s",
#   "mean_return"} to $OUT/sac_tasks_curves.jsonl, and for step 4
#   {"bench":"sac_graph","case":"ant_v4","impl":"graph"|"launches","metric":"updates_per_s"|"env_steps_per_s",
#    "median","min","max","reps":3} plus impl "graph_over_launches" (ratio of the medians), and the replay bench's
#   {"bench":"replay","case":"global_prioritized_draw_10M","impl":"gmi","metric":"us_call"|"us_kernels",...};
# every line with device, git and run_id. Logs and metrics files under $OUT/sac_tasks/.
# Arguments (optional): SECONDS per training run (default 30), ENVS per GMI (default 64), GRAPH_SECONDS (default 6).
# At most 270 s of build, about 30 s of micro-bench, 40 s of tests and the replay bench, 2 x (SECONDS + ~10 s),
# 6 x (GRAPH_SECONDS + ~4 s) and 20 s of humanoid_v4: about 8 minutes with the defaults.
set -uo pipefail
start_s=$(date +%s)
deadline_s=$((start_s + 520))  # 8 min 40 s: what is left of 9 minutes for the last lines
seconds=${1:-30}
envs=${2:-64}
graph_seconds=${3:-6}
[[ "$seconds" =~ ^[0-9]+$ && "$seconds" -ge 10 && "$seconds" -le 150 ]] ||
  { echo "device_tasks: seconds: got $seconds, need an integer in 10..150" >&2; exit 2; }
[[ "$envs" =~ ^[0-9]+$ && "$envs" -ge 1 && "$envs" -le 16384 ]] ||
  { echo "device_tasks: envs per GMI: got $envs, need an integer in 1..16384" >&2; exit 2; }
[[ "$graph_seconds" =~ ^[0-9]+$ && "$graph_seconds" -ge 5 && "$graph_seconds" -le 40 ]] ||
  { echo "device_tasks: graph seconds: got $graph_seconds, need an integer in 5..40" >&2; exit 2; }
name=sac_tasks
source "$(dirname "$0")/../physics/device_common.sh"
logs="$out/sac_tasks"
mkdir -p "$logs"
export NCCL_NVLS_ENABLE=0

configure_build -DGMI_HEADER_CHECK_NVCC=OFF
targets=(gmi.bench.sac_update gmi.example.ant_v4_sac gmi.example.humanoid_v4_sac gmi.test.sac_gpu gmi.test.replay_gpu
         gmi.bench.replay)
build_targets 270
common=$(printf '{"device":"%s","git":"%s","run_id":"%s"}' "$device" "$git_rev" "$run_id")
# fits SECONDS: whether SECONDS more end before the deadline; else a line saying what is skipped.
fits() {
  local left=$((deadline_s - $(date +%s)))
  [[ $1 -le $left ]] && return 0
  echo "device_tasks: skipped (needs ${1} s, ${left} s left of the 9 minutes): $2"
  return 1
}

echo "== the bare update: Ant's sizes, 256x256 networks, batch 256 and 4096, launched and as one CUDA graph"
if fits 60 "the bare-update micro-bench"; then
  timeout 90 "$build/bench/sac/gmi.bench.sac_update" --batches 256,4096 --updates 500 --reps 5 --run-id "$run_id" \
    --device "$device" --git "$git_rev" --out "$lines" > "$logs/bench_sac_update.log" 2>&1 ||
    { echo "device_tasks: gmi.bench.sac_update: exit $? ($(tail -1 "$logs/bench_sac_update.log"))" >&2; status=1; }
  python3 - "$logs/bench_sac_update.log" <<'PY' || true
import json, sys
for raw in open(sys.argv[1]):
    if not raw.startswith("{"):
        continue
    d = json.loads(raw)
    if d["metric"] == "updates_per_s":
        print(f"bare update, batch {d['batch']:>5}, {d['impl']:>8}: {d['median']:10.0f} updates/s "
              f"(min {d['min']:.0f}, max {d['max']:.0f}; {d['median'] * d['batch'] / 1e6:.2f} M samples/s)")
PY
fi

echo "== GPU tests: the captured update, the batched gradients, the global sample over device shards"
timeout 150 "$build/tests/sac_gpu/gmi.test.sac_gpu" \
  -tc='sac_gpu.graph_update_matches_launches,sac_gpu.device_gradients_match_host' -s \
  > "$logs/test_sac_gpu_graph.log" 2>&1 || status=1
grep -E "sac_gpu graph update|sac_gpu agreement|SKIPPED|ERROR" "$logs/test_sac_gpu_graph.log" | head -6
tail -2 "$logs/test_sac_gpu_graph.log"
timeout 60 "$build/tests/replay_gpu/gmi.test.replay_gpu" -tc='replay_gpu.global*,replay_gpu.concurrent*' -s \
  > "$logs/test_replay_gpu_global.log" 2>&1 || status=1
grep -E "global chi-square|items, .* missing|SKIPPED|ERROR" "$logs/test_replay_gpu_global.log" | head -5
tail -2 "$logs/test_replay_gpu_global.log"
timeout 90 "$build/bench/replay/gmi.bench.replay" --cases global --reps 20 --run-id "$run_id" --device "$device" \
  --git "$git_rev" --out "$lines" > "$logs/bench_replay_global.log" 2>&1 || status=1
grep -o '"metric": "[a-z_]*", "median": [0-9.e+-]*' "$logs/bench_replay_global.log" | sed 's/^/global draw of 8192 from 10 M: /'

# One training run: case, binary, seconds, extra flags; its metrics file is $logs/<case>.jsonl.
train() {
  local case=$1 bin=$2 secs=$3
  shift 3
  rm -f "$logs/$case.jsonl"
  fits $((secs + 15)) "$case" || { skipped+=("$case"); return 1; }
  # The settings of this script's committed lines (sac_config's host defaults; not gmi::run's GPU ones).
  timeout $((secs + 150)) "$build/examples/pendulum_sac/$bin" --device gpu --seed 1 --num-envs "$envs" \
    --sac-batch 256 --sac-updates-per-step 1 --sac-warmup-steps 1000 --sac-replay-capacity 1000000 --max-env-steps 1e9 --max-seconds "$secs" --target-return nan --log-interval 2 --quiet \
    --metrics "$logs/$case.jsonl" "$@" > "$logs/$case.log" 2>&1 ||
    { echo "device_tasks: $case: exit $? ($(tail -1 "$logs/$case.log"))" >&2; status=1; }
  grep -h "^gmi: .* after\|deterministic policy\|SAC learners\|gradients summed\|CUDA graph" "$logs/$case.log" |
    sed "s/^/$case: /" || true
}
skipped=()
summary() {  # case gmis: the run's result lines
  [[ " ${skipped[*]} " == *" $1 "* ]] && return 0
  python3 bench/sac/result_lines.py "$logs/$1.jsonl" "$out/sac_tasks_curves.jsonl" "$lines" sac_tasks \
    "{\"case\":\"$1\",\"impl\":\"gmi\",\"algo\":\"sac\",\"gmis\":$2,\"envs_per_gmi\":$envs}" "$common" \
    env_steps_per_s updates_per_s final_return=mean_return eval_return env_steps wall_s ||
    { echo "device_tasks: $1: no result lines" >&2; status=1; }
}

echo "== Ant: 1 GMI against 4 MPS learners, $seconds s each, $envs envs a GMI"
train ant_1gmi gmi.example.ant_v4_sac "$seconds" --sac-eval-episodes 4 --no-sac-cuda-graph
summary ant_1gmi 1
train ant_4mps gmi.example.ant_v4_sac "$seconds" --sac-eval-episodes 4 --partition mps --gmis-per-gpu 4 \
  --gradient-allreduce hierarchical
summary ant_4mps 4

echo "== Ant: the update as a captured CUDA graph against launches, 3 runs of $graph_seconds s each"
graph_runs=0
for rep in 1 2 3; do
  train "ant_graph_$rep" gmi.example.ant_v4_sac "$graph_seconds" --sac-eval-episodes 0 --sac-cuda-graph &&
    train "ant_launches_$rep" gmi.example.ant_v4_sac "$graph_seconds" --sac-eval-episodes 0 --no-sac-cuda-graph && graph_runs=$rep
done
[[ $graph_runs -eq 3 ]] && python3 - "$logs" "$lines" "$common" <<'PY' || { echo "device_tasks: no graph lines" >&2; status=1; }
import json, statistics, sys
logs, path, common = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
def end(case):
    for raw in open(f"{logs}/{case}.jsonl"):
        d = json.loads(raw)
        if d.get("event") == "end":
            return d
    raise SystemExit(f"{case}: no end line")
med = {}
with open(path, "a") as out:
    for impl, stem in (("graph", "ant_graph"), ("launches", "ant_launches")):
        runs = [end(f"{stem}_{r}") for r in (1, 2, 3)]
        if impl == "graph":
            print("graph runs: updates replayed", [r.get("graph_updates") for r in runs], "of", [r["updates"] for r in runs])
        for metric in ("updates_per_s", "env_steps_per_s"):
            v = [r[metric] for r in runs]
            med[(impl, metric)] = statistics.median(v)
            out.write(json.dumps({"bench": "sac_graph", "case": "ant_v4", "impl": impl, "algo": "sac", "metric": metric,
                                  "median": statistics.median(v), "min": min(v), "max": max(v), "reps": 3,
                                  **common}) + "\n")
            print(f"ant_v4 {impl}: {metric} median {statistics.median(v):.1f} (min {min(v):.1f}, max {max(v):.1f})")
    for metric in ("updates_per_s", "env_steps_per_s"):
        r = med[("graph", metric)] / med[("launches", metric)]
        out.write(json.dumps({"bench": "sac_graph", "case": "ant_v4", "impl": "graph_over_launches", "algo": "sac",
                              "metric": metric, "median": r, "min": r, "max": r, **common}) + "\n")
        print(f"ant_v4 graph / launches, {metric}: {r:.3g}")
PY

echo "== Humanoid: 1 GMI for 15 s (smoke run)"
train humanoid_1gmi gmi.example.humanoid_v4_sac 15 --sac-eval-episodes 2 --no-sac-cuda-graph
summary humanoid_1gmi 1

echo "== updates/s and env steps/s (1 update per env step in the training runs)"
python3 - "$lines" "$logs" <<'PY' || true
import glob, json, os, sys
rows = {}
for raw in open(sys.argv[1]):
    d = json.loads(raw)
    if d["bench"] == "sac_update" and d["metric"] == "updates_per_s":
        rows[f"bare update b{d['batch']} {d['impl']}"] = (d["median"], None)
for path in sorted(glob.glob(os.path.join(sys.argv[2], "*.jsonl"))):
    end = None
    for raw in open(path):
        d = json.loads(raw)
        if d.get("event") == "end":
            end = d
    if end:
        rows[os.path.basename(path)[:-6]] = (end.get("updates_per_s"), end.get("env_steps_per_s"))
print("(training runs: updates/s of one learner, env steps/s of all GMIs together; bare update: no env steps)")
print(f"{'run':32} {'updates/s':>12} {'env steps/s':>12}")
for k, (u, e) in rows.items():
    fmt = lambda v: f"{v:12.0f}" if isinstance(v, (int, float)) else f"{'-':>12}"
    print(f"{k:32} {fmt(u)} {fmt(e)}")
PY
echo "== result lines: $lines ($(( $(date +%s) - start_s )) s in all)"
exit $status
