#!/usr/bin/env bash
# Issue 39, global sampling over data-parallel SAC learners (rl/sac_global.hpp, replay/group_sample.hpp;
# docs/replay.md "Global sampling over learners"), on ONE GPU (CUDA_VISIBLE_DEVICES may pick it), from the
# repository root (OUT set), within TOTAL_SECONDS (default 300) of a cold machine including the build:
#   1. builds gmi.test.sac_gpu and gmi.example.pendulum_sac only (-j$JOBS, default 16) in $BUILD (default
#      /tmp/build-sac6);
#   2. GPU tests: sac_gpu.global_sampling_two_learners (2 learners on the GPU with tables of up to 100000 and 2000
#      transitions: the draws against the tables' shares by chi-square, the weights the same bits, Pendulum learned),
#      sac_gpu.global_sampling_weighting_matches_lone_learner (all draws on learner 0: a lone learner's bits) and the
#      existing data-parallel cases (sac_gpu.data_parallel_weights_equal, sac_gpu.device_sum_*);
#   3. Pendulum through gmi::run with 2 MPS learners (--partition mps --gmis-per-gpu 2, 16 envs each, batch 256, one
#      update per env step, gradients summed on the device), RUN_SECONDS (default 15) each, cut to the time left:
#        pendulum_2mps         each learner samples its own table (the reference),
#        pendulum_2mps_global  --sac-global-sampling (each update one sample of 2 x 256 over both tables);
#   4. a summary: env steps/s, updates/s and the deterministic evaluation of each case, global against the
#      reference, learner 0's share of the draws against its tables' share.
# Writes $OUT/sac6.jsonl: {"bench":"sac_global","case":"gpu_tests"|"pendulum_2mps"|"pendulum_2mps_global",
# "impl":"gmi","algo":"sac","metric":..,"median":..,"reps":1,"device","git","run_id"} (gpu_tests: metric "passed",
# 1 or 0, per test case; the runs: env_steps_per_s, updates_per_s, mean_return, eval_return, env_steps, and for the
# global case drawn_share_learner0 and expected_share_learner0); logs and metrics under $OUT/sac6/; the summary also
# in $OUT/sac6-summary.txt.
# Arguments (optional): TOTAL_SECONDS (180..600, default 300), RUN_SECONDS (5..120, default 15).
set -uo pipefail
start_s=$(date +%s)
name=sac6
export BUILD=${BUILD:-/tmp/build-sac6}
# shellcheck source=bench/physics/device_common.sh
source "$(dirname "$0")/../physics/device_common.sh"
# shellcheck source=bench/sac/script_start.sh
source "$root/bench/sac/script_start.sh"  # need_int
total_seconds=${1:-300} && need_int device_global "total seconds" "$total_seconds" 180 600
run_seconds=${2:-15} && need_int device_global "run seconds" "$run_seconds" 5 120
deadline_s=$((start_s + total_seconds))
left() { echo $((deadline_s - $(date +%s))); }
logs="$out/sac6"
mkdir -p "$logs"
rm -f "$lines" "$logs"/*.jsonl
export NCCL_NVLS_ENABLE=0

configure_build -DGMI_HEADER_CHECK_NVCC=OFF
targets=(gmi.test.sac_gpu gmi.example.pendulum_sac)
export JOBS=${JOBS:-16}
build_targets $(( $(left) - 120 ))
common=$(printf '{"device":"%s","git":"%s","run_id":"%s"}' "$device" "$git_rev" "$run_id")

# One GPU test case within its share of the time left; a result line for it.
run_test() {
  local tc=$1 secs=$2 passed=0
  local log="$logs/${tc//\*/all}.log"
  local room=$(( $(left) - 70 ))
  ((room < secs)) && secs=$room
  if ((secs < 10)); then
    echo "device_global: $tc skipped: $(left) s left" >&2
    status=1
    return
  fi
  echo "== $tc (at most $secs s; $(left) s left)"
  if timeout "$secs" "$build/tests/sac_gpu/gmi.test.sac_gpu" -tc="$tc" > "$log" 2>&1; then
    passed=1
  else
    echo "device_global: $tc: exit $? ($log)" >&2
    status=1
  fi
  grep -E "^sac_gpu|test cases|ERROR|SKIPPED" "$log" | head -8
  printf '{"bench":"sac_global","case":"gpu_tests","test":"%s","impl":"gmi","algo":"sac","metric":"passed","median":%d,"reps":1,"device":"%s","git":"%s","run_id":"%s"}\n' \
    "$tc" "$passed" "$device" "$git_rev" "$run_id" >> "$lines"
}
run_test sac_gpu.global_sampling_two_learners 90
run_test sac_gpu.global_sampling_weighting_matches_lone_learner 60
run_test sac_gpu.data_parallel_weights_equal 30
run_test "sac_gpu.device_sum_*" 40

# One run: CASE SECONDS [flags]; cut to what is left (MPS start-up, the evaluation and the end take some seconds).
run_case() {
  local case=$1 secs=$2
  shift 2
  local room=$(( ($(left) - 20) / runs_left - 25 ))
  ((room < secs)) && secs=$room
  if ((secs < 5)); then
    echo "device_global: $case skipped: $(left) s left" >&2
    status=1
    return
  fi
  echo "== $case: $secs s ($(left) s left) $*"
  timeout $((secs + 60)) "$build/examples/pendulum_sac/gmi.example.pendulum_sac" --device gpu --seed 1 \
    --partition mps --gmis-per-gpu 2 --num-envs 16 --sac-batch 256 --sac-updates-per-step 1 \
    --sac-warmup-steps 1024 --max-env-steps 1e9 --max-seconds "$secs" --target-return nan --log-interval 2 --quiet \
    --sac-eval-episodes 8 --metrics "$logs/$case.jsonl" "$@" > "$logs/$case.log" 2>&1 ||
    { echo "device_global: $case: exit $? ($(tail -1 "$logs/$case.log"))" >&2; status=1; }
  grep -h "^gmi: " "$logs/$case.log" | sed "s/^/$case: /" | head -8
}
runs_left=2
run_case pendulum_2mps "$run_seconds"
runs_left=1
run_case pendulum_2mps_global "$run_seconds" --sac-global-sampling

python3 - "$logs" "$lines" "$common" <<'PY' 2>&1 | tee "$out/sac6-summary.txt" || status=1
import json, sys
logs, dest, common = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
metrics = ("env_steps_per_s", "updates_per_s", "mean_return", "eval_return", "env_steps")
ok, ends = True, {}
with open(dest, "a") as out:
    for case in ("pendulum_2mps", "pendulum_2mps_global"):
        try:
            ls = [json.loads(l) for l in open(f"{logs}/{case}.jsonl") if l.strip()]
        except FileNotFoundError:
            print(f"device_global: {case}: no metrics file")
            ok = False
            continue
        end = next((l for l in ls if l.get("event") == "end"), None)
        if end is None:
            print(f"device_global: {case}: no end line")
            ok = False
            continue
        ends[case] = end
        values = {m: end.get(m) for m in metrics}
        g = end.get("global_sampling")
        if g:
            all_draws = g["updates"] * 2 * 256  # 2 learners x --sac-batch 256 an update
            values["drawn_share_learner0"] = g["drawn"] / all_draws if all_draws else None
            values["expected_share_learner0"] = g["expected"] / all_draws if all_draws else None
        for m, v in values.items():
            out.write(json.dumps(dict(common, bench="sac_global", case=case, impl="gmi", algo="sac", metric=m,
                                      median=v, reps=1)) + "\n")
tests = [json.loads(l) for l in open(dest) if '"gpu_tests"' in l]
print("== GPU tests: " + ", ".join(f"{t['test']} {'passed' if t['median'] else 'FAILED'}" for t in tests))
ok = ok and bool(tests) and all(t["median"] for t in tests)
ref = ends.get("pendulum_2mps")
print("== Pendulum, 2 MPS learners (one run a case; ratios against pendulum_2mps, each learner sampling its own table)")
for case, e in ends.items():
    def ratio(m):
        return f" ({e[m] / ref[m]:.2f}x)" if ref and ref.get(m) and e.get(m) is not None else ""
    print(f"{case:21s} env steps/s {e['env_steps_per_s']:9.0f}{ratio('env_steps_per_s')}  updates/s "
          f"{e['updates_per_s']:7.1f}{ratio('updates_per_s')}  env steps {e['env_steps']:.0f}  mean return "
          f"{e.get('mean_return')}  eval {e.get('eval_return')}")
    g = e.get("global_sampling")
    if g:
        all_draws = g["updates"] * 2 * 256
        print(f"{'':21s} learner 0 drew {g['drawn']:.0f} of {all_draws} ({g['drawn'] / all_draws:.4f}; its tables' "
              f"share {g['expected'] / all_draws:.4f}), no draws in {g['empty_updates']} of {g['updates']} updates")
if "pendulum_2mps_global" in ends and not ends["pendulum_2mps_global"].get("global_sampling"):
    print("device_global: pendulum_2mps_global: its end line has no global_sampling")
    ok = False
print("look for: every GPU test passed; pendulum_2mps_global's updates/s against pendulum_2mps (the cost of one "
      "host all-gather an update: under 1.2x slower counts as harmless), learner 0's share near its tables' (0.5: "
      "equal tables), both evaluations near each other (Pendulum learned: above -400 after enough env steps)")
sys.exit(0 if ok else 1)
PY
echo "== result lines: $lines ($(( $(date +%s) - start_s )) s in all)"
exit "$status"
