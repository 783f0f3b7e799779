#!/usr/bin/env bash
# Split roles' actors on another GPU than the learner's writing their rounds straight into its device memory over
# peer access (pipeline/split_paths.hpp, split_channels.hpp; docs/replay.md), on a machine with 2 GPUs
# (CUDA_VISIBLE_DEVICES may pick them; at least 2 must be visible), from the repository root (OUT set), within
# TOTAL_SECONDS (default 540, 9 minutes: the tests a process each) of a cold 32+ core machine, build included:
#   1. builds gmi.test.sac_multigpu and gmi.bench.replay_peer (-j$JOBS, default the machine's cores) in $BUILD (default
#      /tmp/build-replay-peer), then gmi.example.pendulum_sac in the background while 2 and 3 run;
#   2. the GPU tests (tests/sac_multigpu, label multigpu), each test case in its own process (a crash in one hides
#      none of the others; a failed case's last 40 lines are printed, and a crashed one is run once more with
#      GMI_TRACE=1, whose stage lines and per-stage stream waits say where it was): sac_multigpu.split_host_path_runs
#      and sac_multigpu.split_auto_path_runs (each path alone, actor 1 on GPU 1 and actor 2 on GPU 0),
#      sac_multigpu.split_peer_items_match_host (the learner's table, every column's words, trajectory ids, steps,
#      links, and its weights the same bits as through host messages) and sac_multigpu.split_peer_learns_as_host (one
#      actor on GPU 1 with 16 environments, 12000 env steps: the deterministic return within 25 of the host run's,
#      both >= -400) and sac_multigpu.peer_option_gates_another_gpu (comm's peer flag: refused without it, the
#      weights read with it); a skip line (fewer than 2 GPUs) counts as a failure here;
#   3. gmi.bench.replay_peer: rounds of 64 steps x 64 environments (obs 108, act 21, reward, done) from an actor on
#      GPU 1 into a learner's table on GPU 0, gmi_peer (peer copies into the learner's channel slots) against gmi_host
#      (host messages), 5 reps of 200 rounds after 20 warm-up rounds (medians, min, max; items_match: the table
#      holds the rounds' bits);
#   4. with the time left (each run is skipped with a line when it no longer fits or the example did not build in
#      time: TOTAL_SECONDS 600 leaves room for it on a cold machine): gmi::run's pipeline, Pendulum SAC
#      with split roles over 2 GPUs x 2 GMIs (learner GMI 0 and actor 1 on GPU 0, actors 2 and 3 on GPU 1), as
#      threads, as processes (CUDA IPC with peer access) and with --split-transport host: the start lines name each
#      actor's path, the run ends with its deterministic return;
#   5. a summary on stdout and in $OUT/peer-summary.txt: the tests' outcome, rounds/s peer against host, the runs' paths
#      and returns.
# Writes $OUT/peer.jsonl ({"bench":"replay","case":"peer_insert","impl":"gmi_peer"|"gmi_host","metric":"rounds_per_s",
# "median",..., "gbytes_per_s","items_match","device","git","run_id"}); logs under $OUT/peer/.
# Arguments (optional): TOTAL_SECONDS (120..1200, default 540).
set -uo pipefail
start_s=$(date +%s)
total_seconds=${1:-540}
[[ "$total_seconds" =~ ^[0-9]+$ && "$total_seconds" -ge 120 && "$total_seconds" -le 1200 ]] ||
  { echo "device_peer: total seconds: got $total_seconds, need an integer in 120..1200" >&2; exit 2; }
deadline_s=$((start_s + total_seconds))
name=peer
export BUILD=${BUILD:-/tmp/build-replay-peer}
source "$(dirname "$0")/../physics/device_common.sh"
logs="$out/peer"
mkdir -p "$logs"
rm -f "$lines"
left() { echo $((deadline_s - $(date +%s))); }

gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-unset}; GPUs visible: $gpus"
nvidia-smi topo -m > "$logs/topo.txt" 2>&1 && head -4 "$logs/topo.txt"
((gpus >= 2)) || echo "device_peer: needs 2 GPUs, sees $gpus: the tests skip and the bench refuses" >&2

configure_build -DGMI_HEADER_CHECK_NVCC=OFF
targets=(gmi.test.sac_multigpu gmi.bench.replay_peer)
build_targets $(( $(left) - 90 ))
# The example is one large CUDA translation unit (one core): it builds while the tests and the bench run.
timeout $(( $(left) - 40 > 10 ? $(left) - 40 : 10 )) cmake --build "$build" -j"${JOBS:-$(nproc)}" \
  --target gmi.example.pendulum_sac > "$out/build-example.log" 2>&1 &
example_build=$!

echo "== tests, a process each ($(left) s left)"
test_bin="$build/tests/sac_multigpu/gmi.test.sac_multigpu"
# doctest lists the names between its banner lines ("[doctest] ...", "=====").
mapfile -t cases < <("$test_bin" --list-test-cases 2>/dev/null | grep -vE '^\[doctest\]|^=+$|^$')
((${#cases[@]} > 0)) || { echo "device_peer: $test_bin listed no test cases" >&2; status=1; }
: > "$out/peer-tests.txt"
passed=0
for c in "${cases[@]}"; do
  log="$logs/test-$c.log"
  limit=$(( $(left) - 60 > 150 ? 150 : $(left) - 60 ))
  if ((limit < 20)); then
    echo "test $c: skipped, $(left) s left" | tee -a "$out/peer-tests.txt"; status=1; continue
  fi
  timeout "$limit" "$test_bin" --test-case="$c" > "$log" 2>&1
  rc=$?
  grep -q "SKIPPED" "$log" && { echo "device_peer: $c skipped (fewer than 2 GPUs)" >&2; rc=77; }
  # 124: out of time; above 128: killed by signal rc - 128 (139: SIGSEGV, 134: SIGABRT)
  echo "test $c: exit $rc" | tee -a "$out/peer-tests.txt"
  grep -E "^sac_multigpu|^  actor GMI" "$log" | sed 's/^/  /' | tee -a "$out/peer-tests.txt"
  if ((rc == 0)); then passed=$((passed + 1)); continue; fi
  status=1
  echo "device_peer: $c failed (exit $rc, $log); its last 40 lines:" >&2
  tail -n 40 "$log" | sed 's/^/  | /' >&2
  if ((rc > 128 && $(left) > 120)); then  # crashed: once more with the GMI stage trace
    GMI_TRACE=1 timeout $(( $(left) - 90 > 150 ? 150 : $(left) - 90 )) "$test_bin" --test-case="$c" \
      > "$logs/test-$c.trace.log" 2>&1
    echo "device_peer: $c again with GMI_TRACE=1: exit $? ($logs/test-$c.trace.log); its last 40 lines:" >&2
    tail -n 40 "$logs/test-$c.trace.log" | sed 's/^/  | /' >&2
  fi
done
echo "tests: ${passed} of ${#cases[@]} test cases passed, each in its own process" | tee -a "$out/peer-tests.txt"

echo "== bench ($(left) s left)"
timeout $(( $(left) - 30 > 60 ? 60 : ($(left) - 30 > 10 ? $(left) - 30 : 10) )) \
  "$build/bench/replay/gmi.bench.replay_peer" --envs 64 --rounds 200 --reps 5 --run-id "$run_id" \
  --device "$device" --git "$git_rev" --out "$lines" > "$logs/bench.log" 2>&1 ||
  { echo "device_peer: gmi.bench.replay_peer: exit $? ($(tail -1 "$logs/bench.log"))" >&2; status=1; }
head -1 "$logs/bench.log"

echo "== gmi::run over 2 GPUs ($(left) s left; waiting for the example's build)"
wait "$example_build"
example_rc=$?
((example_rc == 0)) || echo "device_peer: the example's build: exit $example_rc (124: out of time; $out/build-example.log)" >&2
bin="$build/examples/pendulum_sac/gmi.example.pendulum_sac"
common=(--device gpu --gpus 2 --gmis-per-gpu 2 --split-roles --num-envs 16 --sac-batch 256 --sac-updates-per-step 1
        --sac-warmup-steps 1024 --max-env-steps 8000 --log-interval 1)
for c in "threads|--partition none" "processes|--partition none --launch processes" \
         "host|--partition none --split-transport host"; do
  tag=${c%%|*}
  read -r -a extra <<< "${c#*|}"
  if ((example_rc != 0)); then echo "run $tag: skipped, the example did not build"; continue; fi
  if (( $(left) < 60 )); then echo "run $tag: skipped, $(left) s left"; continue; fi
  timeout 50 "$bin" "${common[@]}" "${extra[@]}" > "$logs/run-$tag.log" 2>&1
  rc=$?
  ((rc == 0)) || { echo "device_peer: run $tag: exit $rc ($logs/run-$tag.log)" >&2; status=1; }
  echo "run $tag (exit $rc):"
  grep -E "gmi: split roles: actor GMI|transport (device|host)|deterministic policy" "$logs/run-$tag.log" |
    sed 's/^/  /' | tee -a "$out/peer-runs.txt"
done

python3 - "$lines" "$out/peer-tests.txt" <<'EOF' 2>&1 | tee "$out/peer-summary.txt" || status=1
import json, os, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()] if os.path.exists(sys.argv[1]) else []
val = {r["impl"]: r for r in rows if r.get("case") == "peer_insert"}
tests = open(sys.argv[2]).read() if os.path.exists(sys.argv[2]) else ""
summary = next((l for l in tests.splitlines() if l.startswith("tests:")), None)
print(summary or "tests: no summary line (see peer/test-*.log)")
for l in tests.splitlines():
    if l.startswith("test ") and not l.endswith("exit 0"):
        print(l)
for l in tests.splitlines():
    if l.strip().startswith("sac_multigpu learning"):
        print(l.strip())
peer, host = val.get("gmi_peer"), val.get("gmi_host")
for r in (peer, host):
    if r:
        print(f"{r['impl']}: {r['median']:.0f} rounds/s (min {r['min']:.0f}, max {r['max']:.0f}; {r['gbytes_per_s']:.2f} GB/s; "
              f"rounds of {r['steps']} x {r['envs']}, {r['round_bytes'] / 1e6:.2f} MB; items_match {r['items_match']})")
if peer and host:
    print(f"peer over host: {peer['median'] / host['median']:.2f}x rounds/s")
if not (peer and host and peer["items_match"] and host["items_match"]):
    sys.exit("device_peer: a bench line is missing or its table does not hold the rounds' bits (see peer/bench.log)")
EOF
echo "== result lines: $lines ($(( $(date +%s) - start_s )) s in all)"
exit "$status"
