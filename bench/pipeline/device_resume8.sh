#!/usr/bin/env bash
# GPU check of branch resume8 (--max-env-steps counts env steps since training began, a resumed checkpoint's
# included, in every layout; a run resumed at or past it ends at once, exit 0), on ONE GPU of a shared machine
# (CUDA_VISIBLE_DEVICES set by the caller), cold, within 6 minutes including the build, from the repository root:
#   1. builds gmi.example.cartpole_ppo only (cmake --preset gpu) in $BUILD (default /tmp/build-resume8, -j$JOBS, 16);
#   2. runs its GPU checkpoint cases (examples/cartpole_ppo/CMakeLists.txt): 4 GMIs save at 20 and 40, resume to 60
#      and equal 60 straight bit for bit; resumed with the limit the checkpoint is at (655360), nothing to train
#      (checkpoint_resume_at_limit_4: the one line, exit 0, iteration 40, identical weights); one GMI of 1024 envs
#      saved at 20 and resumed with --max-env-steps 655360 ends at iteration 40, 655.4k env steps (checkpoint_*_1);
#      the green-context restart case (an attempt resumes from iteration 5 and counts on from there);
#   3. one JSON line a test (device, git, run_id, test, result, seconds) in $OUT/resume8.jsonl and a summary on
#      stdout and in $OUT/resume8-summary.txt (each test against "Passed", the target).
# Logs: $OUT/resume8-configure.log, $OUT/resume8-build.log, $OUT/resume8-tests.log.
#   OUT=/some/dir bench/pipeline/device_resume8.sh
set -uo pipefail
start_s=$(date +%s)
budget_s=${BUDGET_S:-340}
out=${OUT:?set OUT to a folder for the results}
build=${BUILD:-/tmp/build-resume8}
jobs=${JOBS:-16}
mkdir -p "$out"
cd "$(dirname "$0")/../.." || exit 1
lines="$out/resume8.jsonl"
summary="$out/resume8-summary.txt"
: > "$lines"
left() { echo $(( budget_s - ($(date +%s) - start_s) )); }
if ! nvidia-smi > /dev/null 2>&1; then
  echo "resume8: SKIPPED: no NVIDIA GPU here" | tee "$summary"
  exit 77
fi
rev=${GMI_GIT_REVISION:-$(cat .carry/git-rev 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)}
export GMI_GIT_REVISION=$rev
device=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
run_id="resume8-$(date -u +%Y%m%dT%H%M%SZ)-$$"

timeout 60 cmake --preset gpu -B "$build" -DGMI_BUILD_BENCHMARKS=OFF > "$out/resume8-configure.log" 2>&1 ||
  { tail -20 "$out/resume8-configure.log"; echo "resume8: configure failed" | tee "$summary"; exit 1; }
timeout 260 cmake --build "$build" -j"$jobs" --target gmi.example.cartpole_ppo > "$out/resume8-build.log" 2>&1 ||
  { tail -40 "$out/resume8-build.log"; echo "resume8: build failed or timed out" | tee "$summary"; exit 1; }
echo "resume8: built $rev in $(( $(date +%s) - start_s )) s on $device" | tee "$summary"

tests='^example\.cartpole_ppo\.gpu\.(checkpoint_|restart_green_context_kill_rank2$)'
t=$(left)
if [ "$t" -lt 30 ]; then
  echo "resume8: only $t s left after the build: tests not run" | tee -a "$summary"
  exit 1
fi
timeout "$t" ctest --test-dir "$build" -R "$tests" --output-on-failure --timeout 120 > "$out/resume8-tests.log" 2>&1
tests_rc=$?

# "  3/10 Test #281: example.cartpole_ppo.gpu.checkpoint_save_4 ....   Passed    5.12 sec" -> one line a test
python3 - "$out/resume8-tests.log" "$lines" "$device" "$rev" "$run_id" <<'EOF' | tee -a "$summary"
import json, re, sys
log, lines, device, git, run_id = sys.argv[1:]
pat = re.compile(r"Test +#\d+: (\S+) \.*\**\s*(Passed|Failed|\*\*\*Failed|Skipped|\*\*\*Skipped|\*\*\*Timeout|Not Run)?.*?([0-9.]+) sec")
seen = 0
with open(log) as f, open(lines, "a") as o:
    for text in f:
        m = pat.search(text)
        if not m:
            continue
        name, result, seconds = m.group(1), (m.group(2) or "Failed").strip("*"), float(m.group(3))
        seen += 1
        o.write(json.dumps({"device": device, "git": git, "run_id": run_id, "test": name, "result": result,
                            "seconds": seconds}) + "\n")
        print(f"{name}: {result} in {seconds:.1f} s (target: Passed){'' if result == 'Passed' else '  <-- look here'}")
print(f"{seen} tests reported (target: 9: checkpoint_save_4, checkpoint_resume_4, checkpoint_straight_60, "
      "checkpoint_resume_at_limit_4, checkpoint_save_1, checkpoint_resume_1, checkpoint_other_gmi_count_refused, "
      "checkpoint_resume_is_exact, restart_green_context_kill_rank2)")
EOF
grep -E 'tests passed|tests failed' "$out/resume8-tests.log" | tail -1 | tee -a "$summary"
echo "resume8: ctest exit code $tests_rc; total $(( $(date +%s) - start_s )) s (budget $budget_s s)" | tee -a "$summary"
exit "$tests_rc"
