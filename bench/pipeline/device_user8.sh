#!/usr/bin/env bash
# user8's changes on ONE GPU of a shared machine (CUDA_VISIBLE_DEVICES=<i> set by the caller, 16 cores), cold, within
# 6 minutes including the build. From the repository root: builds gmi.example.quickstart and gmi.test.pipeline only
# (-j${JOBS:-16}, into ${BUILD:-/tmp/build-user8}); runs the quickstart on the GPU for 20 s with a progress line every
# 2 s and checks that each line's ETA is at most the time left of --max-seconds (it showed the time to 5e7 env steps
# before, e.g. "ETA 53:31" in a 120 s run) and that it exits 0; a bad --lr names the flag ("--lr: got -1", exit 2);
# then the host tests pipeline.train_loop.* and pipeline.cli.* (the divergence line that names a non-finite env
# reward, the flag names). Writes $OUT/user8.jsonl (one result line) and $OUT/user8-summary.txt.
# Usage: OUT=/some/dir CUDA_VISIBLE_DEVICES=0 bench/pipeline/device_user8.sh
set -uo pipefail
out=${OUT:?set OUT to the folder for the results}
build=${BUILD:-/tmp/build-user8}
jobs=${JOBS:-16}
mkdir -p "$out"
start_s=$(date +%s)
budget_s=${BUDGET_S:-350}
left() { local l=$((budget_s - ($(date +%s) - start_s))); [ "$l" -lt "$1" ] && echo "$l" || echo "$1"; }
rev=${GMI_GIT_REVISION:-$(cat .carry/git-rev 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)}
run_id="$(date -u +%Y-%m-%dT%H:%M:%SZ)-user8-$rev"
device=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
summary="$out/user8-summary.txt"
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }

b0=$(date +%s)
timeout "$(left 240)" cmake --preset gpu -B "$build" -DGMI_BUILD_BENCHMARKS=OFF > "$out/user8-build.log" 2>&1 &&
  timeout "$(left 240)" cmake --build "$build" -j"$jobs" --target gmi.example.quickstart gmi.test.pipeline \
    >> "$out/user8-build.log" 2>&1
build_rc=$?
say "build: exit $build_rc in $(( $(date +%s) - b0 )) s (log user8-build.log)"
exe="$build/examples/quickstart/gmi.example.quickstart"

quick_rc=-1
eta_bad=-1
lines=0
if [ -x "$exe" ]; then
  timeout "$(left 60)" "$exe" --device gpu --max-seconds 20 --log-interval 2 > "$out/user8-quickstart.log" 2>&1
  quick_rc=$?
  # Every progress line: elapsed (m:ss) and ETA (m:ss or h:mm:ss); ETA must be <= 20 s - elapsed + 1 (rounding).
  read -r lines eta_bad < <(awk -F' \\| ' '/^iter /{
      n++; el=$(NF-1); eta=$NF; sub(/^ETA /, "", eta);
      split(el, a, ":"); e=a[1]*60+a[2];
      k=split(eta, b, ":"); t=(k==3) ? b[1]*3600+b[2]*60+b[3] : b[1]*60+b[2];
      if (t > 20 - e + 1) bad++ }
      END { print n+0, bad+0 }' "$out/user8-quickstart.log")
  say "quickstart on the GPU, 20 s: exit $quick_rc, $lines progress lines, $eta_bad with an ETA past the time limit (want 0)"
  grep -E "^gmi: " "$out/user8-quickstart.log" | cut -c1-200 | tee -a "$summary"
  timeout 60 "$exe" --device gpu --lr -1 > "$out/user8-badlr.log" 2>&1
  bad_lr_rc=$?
  say "--lr -1: exit $bad_lr_rc (want 2): $(tail -n 1 "$out/user8-badlr.log")"
else
  bad_lr_rc=-1
  say "quickstart not built: see user8-build.log"
fi

timeout "$(left 90)" ctest --test-dir "$build" -R '^pipeline\.(train_loop|cli)\.' --output-on-failure \
  > "$out/user8-tests.log" 2>&1
tests_rc=$?
say "host tests pipeline.train_loop.* and pipeline.cli.*: exit $tests_rc ($(grep -E 'tests passed' "$out/user8-tests.log"))"

ok=false
[ "$build_rc" = 0 ] && [ "$quick_rc" = 0 ] && [ "$eta_bad" = 0 ] && [ "$lines" -gt 0 ] && [ "$bad_lr_rc" = 2 ] &&
  [ "$tests_rc" = 0 ] && ok=true
printf '{"bench":"user8_checks","run_id":"%s","git":"%s","device":"%s","build_rc":%s,"quickstart_rc":%s,"progress_lines":%s,"eta_past_limit":%s,"bad_lr_rc":%s,"tests_rc":%s,"ok":%s}\n' \
  "$run_id" "$rev" "$device" "$build_rc" "$quick_rc" "$lines" "$eta_bad" "$bad_lr_rc" "$tests_rc" "$ok" \
  >> "$out/user8.jsonl"
say "ok: $ok; whole script $(( $(date +%s) - start_s )) s of $budget_s"
[ "$ok" = true ]
