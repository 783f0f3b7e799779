#!/usr/bin/env bash
# Split roles' transports on ONE GPU (CUDA_VISIBLE_DEVICES may pick it), from the repository root (OUT set), within
# 6 minutes of a cold machine including the build:
#   1. builds gmi.example.pendulum_sac, gmi.test.sac_gpu and gmi.test.split_actor_worker (-j$JOBS, default 16) in
#      $BUILD (default /tmp/build-sac7);
#   2. the GPU tests of the device transport (sac_gpu.split_transport_*: the same learner weights bit for bit over
#      both transports; a lost actor process named within the timeout), sac_gpu.split_roles_on_gpu and
#      example.pendulum_sac.gpu.split_roles_actor_killed (gmi::run, 4 MPS GMIs, actor GMI 2 SIGKILLed by the test hook
#      GMI_TEST_KILL_AT halfway through round 5: an error naming GMI 2): $OUT/split7/tests.log (the example's other
#      split-roles GPU cases are left to a full GPU test run: the runs below cover gmi::run with both transports);
#   3. Pendulum SAC with split roles, 1 learner + 3 actor GMIs (gmi::run's GPU defaults, --num-envs ENVS a GMI;
#      SPLIT_FLAGS in the environment adds flags, e.g. SPLIT_FLAGS="--sac-updates-per-vector-step 4"),
#      --split-transport host against device, REPS runs of SECONDS each, alternating host and device, with the GMIs
#      as MPS processes and then as threads of one process; runs that no longer fit the 6 minutes are skipped with a
#      line (the MPS runs come first).
# Writes $OUT/split7.jsonl:
#   {"bench":"replay","case":"split_transport","impl":"gmi","algo":"sac","task":"pendulum","launch":"mps"|"threads",
#    "transport":"host"|"device","metric":"env_steps_per_s"|"updates_per_s"|"eval_return"|"mean_return",
#    "median","min","max","reps",...} (env steps/s: the transitions the learner received over the run's wall clock;
#   updates/s: the learner's gradient steps per second; eval_return: the deterministic policy, 8 fresh episodes);
#   {"bench":"replay","case":"split_transport",...,"transport":"device_over_host","metric":
#    "env_steps_per_s_ratio"|"updates_per_s_ratio","median",...} (device's median over host's, same run);
# every line with device, git, run_id, gmis 4, num_envs, flags (SPLIT_FLAGS). $OUT/split7-summary.txt (and stdout): the tests' outcome,
# a table of the medians, the ratios. Logs and metrics files under $OUT/split7/.
# Time: the build (three CUDA translation units) and the tests take most of the 6 minutes; the runs get what is left
# (a run starts only when SECONDS + 20 s remain), so with the defaults expect the MPS reps and few or no thread reps.
# Arguments (optional): SECONDS per run (5..60, default 10), REPS (1..5, default 3), ENVS per GMI (default 1024).
set -uo pipefail
start_s=$(date +%s)
deadline_s=$((start_s + 350))  # 6 minutes, less a margin for the summary
seconds=${1:-10}
reps=${2:-3}
envs=${3:-1024}
[[ "$seconds" =~ ^[0-9]+$ && "$seconds" -ge 5 && "$seconds" -le 60 ]] ||
  { echo "device_split7: seconds: got $seconds, need an integer in 5..60" >&2; exit 2; }
[[ "$reps" =~ ^[0-9]+$ && "$reps" -ge 1 && "$reps" -le 5 ]] ||
  { echo "device_split7: reps: got $reps, need an integer in 1..5" >&2; exit 2; }
[[ "$envs" =~ ^[0-9]+$ && "$envs" -ge 1 && "$envs" -le 65536 ]] ||
  { echo "device_split7: envs: got $envs, need an integer in 1..65536" >&2; exit 2; }
name=split7
export BUILD=${BUILD:-/tmp/build-sac7}
# shellcheck source=bench/physics/device_common.sh
source "$(dirname "$0")/../physics/device_common.sh"
logs="$out/split7"
summary="$out/split7-summary.txt"
mkdir -p "$logs"
rm -f "$lines" "$summary" "$logs"/*.jsonl
export JOBS=${JOBS:-16}
export NCCL_NVLS_ENABLE=0
say() { echo "$*" | tee -a "$summary"; }

configure_build -DGMI_HEADER_CHECK_NVCC=OFF -DGMI_GPU_TEST_BINARIES=ON
targets=(gmi.example.pendulum_sac gmi.test.sac_gpu gmi.test.split_actor_worker)
build_targets 220
common=$(printf '{"device":"%s","git":"%s","run_id":"%s"}' "$device" "$git_rev" "$run_id")
say "device_split7: $device, git $git_rev, run $run_id; built after $(( $(date +%s) - start_s )) s"

# 2. The GPU tests (bounded by what is left, at most 100 s).
left=$((deadline_s - $(date +%s) - 60))
((left > 100)) && left=100
if ((left >= 20)); then
  timeout "$left" ctest --test-dir "$build" \
    -R '^(sac_gpu[.](split_transport|split_roles_on_gpu)|example[.]pendulum_sac[.]gpu[.]split_roles_actor_killed)' \
    --output-on-failure --timeout "$left" > "$logs/tests.log" 2>&1 || status=1
  grep -E "tests passed|tests failed|Failed|\(Timeout\)|\*\*\*|lost actor|split transport:" "$logs/tests.log" |
    tail -n 20 | tee -a "$summary"
else
  say "device_split7: GPU tests skipped: ${left} s left"
  status=1
fi

# 3. The runs: host and device alternating, MPS processes first, then threads.
bin="$build/examples/pendulum_sac/gmi.example.pendulum_sac"
read -r -a extra <<< "${SPLIT_FLAGS:-}"
for launch in mps threads; do
  part=(--partition mps)
  [[ $launch == threads ]] && part=(--partition none --launch threads)
  for ((r = 1; r <= reps; r++)); do
    for transport in host device; do
      if (($(date +%s) + seconds + 20 > deadline_s)); then
        say "device_split7: $launch $transport rep $r skipped: $(( deadline_s - $(date +%s) )) s left"
        continue
      fi
      label="${launch}_${transport}_$r"
      timeout $((seconds + 60)) "$bin" --device gpu --seed 1 --num-envs "$envs" "${part[@]}" --gmis-per-gpu 4 \
        --split-roles --split-transport "$transport" --max-env-steps 1e9 --max-seconds "$seconds" \
        --target-return nan --log-interval 2 --sac-eval-episodes 8 --quiet --metrics "$logs/$label.jsonl" \
        "${extra[@]}" > "$logs/$label.log" 2>&1 ||
        { echo "device_split7: $label: exit $? ($(tail -1 "$logs/$label.log"))" | tee -a "$summary" >&2; status=1; }
      grep -h "split roles\|deterministic policy" "$logs/$label.log" | head -2 | sed "s/^/$label: /"
    done
  done
done

python3 - "$logs" "$lines" "$common" "$envs" "${SPLIT_FLAGS:-}" <<'PY' | tee -a "$summary" || status=1
import glob, json, os, statistics, sys
logs, dest, common, envs, flags = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
runs = {}
for path in sorted(glob.glob(f"{logs}/*_*_*.jsonl")):
    launch, transport, _ = os.path.basename(path)[:-6].split("_")
    end = next((l for l in map(json.loads, filter(str.strip, open(path))) if l.get("event") == "end"), None)
    if end is None or not end.get("wall_s"):
        print(f"device_split7: {path}: no end line", file=sys.stderr)
        continue
    m = {"env_steps_per_s": end["env_steps"] / end["wall_s"], "updates_per_s": end.get("updates", 0) / end["wall_s"],
         "eval_return": end.get("eval_return"), "mean_return": end.get("mean_return")}
    runs.setdefault((launch, transport), []).append(m)
out = open(dest, "a")
tag = {"bench": "replay", "case": "split_transport", "impl": "gmi", "algo": "sac", "task": "pendulum", "gmis": 4,
       "num_envs": envs, "flags": flags}
med = {}
print(f"{'launch':8} {'transport':9} {'reps':>4} {'env steps/s':>12} {'updates/s':>10} {'eval return':>12}")
for (launch, transport), ms in sorted(runs.items()):
    for metric in ("env_steps_per_s", "updates_per_s", "eval_return", "mean_return"):
        vs = [m[metric] for m in ms if m[metric] is not None]
        if not vs:
            continue
        med[(launch, transport, metric)] = statistics.median(vs)
        out.write(json.dumps({**tag, "launch": launch, "transport": transport, "metric": metric,
                              "median": statistics.median(vs), "min": min(vs), "max": max(vs), "reps": len(vs),
                              **common}) + "\n")
    g = lambda k: med.get((launch, transport, k))
    f = lambda v, spec: format(v, spec) if v is not None else "-"
    print(f"{launch:8} {transport:9} {len(ms):>4} {f(g('env_steps_per_s'), '>12.0f')} {f(g('updates_per_s'), '>10.0f')} "
          f"{f(g('eval_return'), '>12.1f')}")
for launch in ("mps", "threads"):
    for metric in ("env_steps_per_s", "updates_per_s"):
        d, h = med.get((launch, "device", metric)), med.get((launch, "host", metric))
        if not d or not h:
            continue
        v = d / h
        out.write(json.dumps({**tag, "launch": launch, "transport": "device_over_host", "metric": metric + "_ratio",
                              "median": v, "min": v, "max": v, **common}) + "\n")
        print(f"{launch}: device over host, {metric}: {v:.3f} (target > 1: the device transport no slower)")
if not runs:
    sys.exit(1)
PY
say "== result lines: $lines ($(( $(date +%s) - start_s )) s in all)"
exit "$status"
