#!/usr/bin/env bash
# Issue 39, sharded replay placed by access in a SAC run (rl/sac_shards.cuh, docs/replay.md "Sharded replay in a
# SAC run"), on ONE GPU (CUDA_VISIBLE_DEVICES may pick it), from the repository root (OUT set), within TOTAL_SECONDS
# (default 540: 9 minutes) of a cold machine including the build:
#   1. builds gmi.test.sac_gpu, gmi.test.replay_gpu, gmi.example.pendulum_sac and gmi.example.ant_v4_sac only (-j$JOBS,
#      default 16) in $BUILD (default /tmp/build-sac5);
#   2. GPU tests: sac_gpu.sharded_replay_placed_learns_pendulum (3 shards, a budget of one shard: the move, the
#      draws against the items' shares by chi-square, Pendulum learned) beside sac_gpu.learns_pendulum (one table,
#      the reference), and replay_gpu's placement and global-draw tests;
#   3. two GPUs (where 2 are visible): replay_gpu.multi_gpu_prioritized_over_two_gpus; with one GPU a line says it
#      is skipped;
#   4. SAC through gmi::run with the GPU defaults (rl::sac_gpu_scale: 1024 envs, batch 4096, 4 M transitions), on
#      Pendulum for PEND_SECONDS (default 15) and on Ant for ANT_SECONDS (default 25) each, one run a case (no
#      repetitions: the 9 minutes hold one), each cut to the time left:
#        one_table      the replay as one device table (the reference; the update as a CUDA graph),
#        shards4        4 shards of 256 environments, sampled as one table (the update launched),
#        shards4_placed the same with a placement step every 50 vector steps under a budget of 2.5 shards' columns
#                       (every shard starts in pinned host memory; the first decided step brings 2 into device
#                       memory);
#   5. a summary: each case's env steps/s, updates/s, training mean return and deterministic evaluation against
#      one_table's, and where each shard ended and its share of the draws.
# Writes $OUT/sac.jsonl: {"bench":"sac_place","case":"pendulum"|"ant_v4","config":..,"metric":"env_steps_per_s"|
# "updates_per_s"|"mean_return"|"eval_return"|"env_steps","median" (one run),"reps":1,"replay" (the end line's
# shards: memory, drawn, drawn_share; placement steps, moves),device,git,run_id}; logs and metrics under $OUT/sac/;
# the summary also in $OUT/sac-summary.txt.
# Arguments (optional): TOTAL_SECONDS (240..1200, default 540), PEND_SECONDS (5..120, default 15), ANT_SECONDS
# (5..200, default 25). pugixml: carry .carry/debs (bench/physics/carry_pugixml.sh, `carry: [".carry"]`).
set -uo pipefail
start_s=$(date +%s)
# shellcheck source=bench/sac/script_start.sh
source "$(dirname "$0")/script_start.sh"
total_seconds=${1:-540} && need_int device_place "total seconds" "$total_seconds" 240 1200
pend_seconds=${2:-15} && need_int device_place "Pendulum seconds" "$pend_seconds" 5 120
ant_v4_seconds=${3:-25} && need_int device_place "Ant seconds" "$ant_v4_seconds" 5 200
deadline_s=$((start_s + total_seconds))
left() { echo $((deadline_s - $(date +%s))); }
sac_script_start /tmp/build-sac5  # name sac: lines is $out/sac.jsonl

gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-unset}; GPUs visible: $gpus"
configure_build -DGMI_BUILD_ALL_TASK_EXAMPLES=ON -DGMI_HEADER_CHECK_NVCC=OFF
targets=(gmi.test.sac_gpu gmi.test.replay_gpu gmi.example.pendulum_sac gmi.example.ant_v4_sac)
build_targets $(( $(left) - 150 ))
common=$(printf '{"device":"%s","git":"%s","run_id":"%s"}' "$device" "$git_rev" "$run_id")

echo "== GPU tests ($(left) s left)"
timeout 150 "$build/tests/sac_gpu/gmi.test.sac_gpu" \
  -tc="sac_gpu.sharded_replay_placed_learns_pendulum,sac_gpu.learns_pendulum" > "$logs/sac_gpu_test.log" 2>&1 ||
  { echo "device_place: sac_gpu tests: exit $? ($logs/sac_gpu_test.log)" >&2; status=1; }
grep -E "sharded pendulum: (shard|random)|pendulum envs [0-9]+: random|test cases|assertions|ERROR" \
  "$logs/sac_gpu_test.log" | head -20
timeout 90 "$build/tests/replay_gpu/gmi.test.replay_gpu" -tc="replay_gpu.moved_shard*,replay_gpu.placement*,replay_gpu.global*" \
  > "$logs/replay_gpu_test.log" 2>&1 ||
  { echo "device_place: replay_gpu tests: exit $? ($logs/replay_gpu_test.log)" >&2; status=1; }
grep -E "test cases|assertions" "$logs/replay_gpu_test.log"
if ((gpus >= 2)); then
  echo "== two GPUs: replay_gpu.multi_gpu_prioritized_over_two_gpus"
  timeout 90 "$build/tests/replay_gpu/gmi.test.replay_gpu" -tc="replay_gpu.multi_gpu*" > "$logs/replay_gpu2.log" 2>&1 ||
    { echo "device_place: two-GPU test: exit $? ($logs/replay_gpu2.log)" >&2; status=1; }
  grep -E "chi-square|share|skipped|test cases|assertions" "$logs/replay_gpu2.log" | head -8
else
  echo "device_place: two-GPU part skipped: $gpus GPU visible (replay_gpu.multi_gpu_prioritized_over_two_gpus needs 2)"
fi

# One run: CASE CONFIG BINARY SECONDS [flags]; cut to what is left (its start and evaluation take some seconds).
run_case() {
  local task=$1 config=$2 bin=$3 secs=$4
  shift 4
  local room=$(( $(left) - 30 ))
  ((room < secs)) && secs=$room
  if ((secs < 5)); then
    echo "device_place: $task $config skipped: $(left) s left" >&2
    status=1
    return
  fi
  echo "== $task $config: $secs s ($(left) s left) $*"
  timeout $((secs + 60)) "$build/examples/pendulum_sac/$bin" --device gpu --seed 1 --max-seconds "$secs" \
    --target-return nan --log-interval 2 --quiet --sac-eval-episodes 4 --metrics "$logs/$task.$config.jsonl" "$@" \
    > "$logs/$task.$config.log" 2>&1 ||
    { echo "device_place: $task $config: exit $? ($(tail -1 "$logs/$task.$config.log"))" >&2; status=1; }
  grep -h "^gmi: " "$logs/$task.$config.log" | sed "s/^/$task $config: /" | head -6
}
# A shard holds 4 M / 4 transitions of 2 obs + act + 2 floats: Pendulum 9 floats, Ant 64 (obs 27, act 8).
budget_mib() { python3 -c "print(round(2.5 * (1 << 22) / 4 * $1 * 4 / 2**20, 1))"; }
for task in pendulum ant_v4; do
  secs=$pend_seconds
  [[ $task == ant_v4 ]] && secs=$ant_v4_seconds
  floats=9
  [[ $task == ant_v4 ]] && floats=64
  run_case "$task" one_table "gmi.example.${task}_sac" "$secs"
  run_case "$task" shards4 "gmi.example.${task}_sac" "$secs" --sac-replay-shards 4
  run_case "$task" shards4_placed "gmi.example.${task}_sac" "$secs" --sac-replay-shards 4 --sac-placement-every 50 \
    --sac-replay-device-mib "$(budget_mib $floats)"
done

python3 - "$logs" "$lines" "$common" <<'PY' 2>&1 | tee "$out/sac-summary.txt" || status=1
import json, sys
logs, dest, common = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
configs = ("one_table", "shards4", "shards4_placed")
metrics = ("env_steps_per_s", "updates_per_s", "mean_return", "eval_return", "env_steps")
ok = True
with open(dest, "a") as out:
    for task in ("pendulum", "ant_v4"):
        ends = {}
        for c in configs:
            try:
                ls = [json.loads(l) for l in open(f"{logs}/{task}.{c}.jsonl") if l.strip()]
            except FileNotFoundError:
                print(f"device_place: {task} {c}: no metrics file")
                ok = False
                continue
            end = next((l for l in ls if l.get("event") == "end"), None)
            if end is None:
                print(f"device_place: {task} {c}: no end line")
                ok = False
                continue
            ends[c] = end
            for m in metrics:
                line = dict(common, bench="sac_place", case=task, impl="gmi", algo="sac", config=c, metric=m,
                            median=end.get(m), reps=1, num_envs=end.get("num_envs"))
                if "replay" in end:
                    line["replay"] = end["replay"]
                out.write(json.dumps(line) + "\n")
        ref = ends.get("one_table")
        print(f"== {task} (one run a case; ratios against one_table)")
        for c, e in ends.items():
            def ratio(m):
                return f" ({e[m] / ref[m]:.2f}x)" if ref and ref.get(m) and e.get(m) is not None else ""
            ev = e.get("eval_return")
            print(f"{c:15s} env steps/s {e['env_steps_per_s']:10.0f}{ratio('env_steps_per_s')}  updates/s "
                  f"{e['updates_per_s']:7.1f}{ratio('updates_per_s')}  env steps {e['env_steps']:.0f}  mean return "
                  f"{e.get('mean_return')}  eval {ev}")
            rp = e.get("replay")
            if rp:
                where = ", ".join(f"{s['shard']}: {s['memory']} {s['drawn_share']:.3f}" for s in rp["shards"])
                print(f"{'':15s} shards (memory, share of draws) {where}; placement steps {rp['placement_steps']} "
                      f"(decided {rp['decided_steps']}), moves {rp['moves']}, budget {rp['device_shards']} shards")
                if c == "shards4_placed":
                    dev = sum(s["memory"] == "device" for s in rp["shards"])
                    if rp["decided_steps"] > 0 and dev != 2:
                        print(f"device_place: {task} {c}: {dev} shards in device memory, the budget holds 2")
                        ok = False
print("look for: the GPU tests passing; shards4_placed with 2 shards in device memory and 2 in pinned host memory, "
      "each shard's share of the draws near 0.25; its env steps/s and updates/s against shards4 (the placement's "
      "cost: host-memory gathers) and shards4 against one_table (the launched update's and the global draw's cost)")
sys.exit(0 if ok else 1)
PY
echo "== result lines: $lines ($(( $(date +%s) - start_s )) s in all)"
exit "$status"
