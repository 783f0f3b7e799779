#!/usr/bin/env bash
# multihost.<case>: gmi::run's restart loop across hosts (pipeline/host_attempts.hpp) on two simulated hosts, no
# GPU needed (gmi.multihost.host_attempts_probe: one Cartpole host trainer a host in each attempt's process).
#   attempts_restart: host 1's attempt SIGKILLs itself at iteration 5 (a checkpoint every 2); both launchers restart
#                     from iteration 4 (one line each), the restarted attempt resumes within 10 s of the kill, and the
#                     job ends with exit 0 and the weights of the same job without the kill, bit for bit.
#   attempts_limit:   the kill fires in every attempt, 1 restart allowed: both hosts end with exit 1 and one line
#                     that says the limit was reached.
# Exits 77 (skipped) without MPI in the build or mpirun on PATH.
source "$(dirname "$0")/common.sh"
run() {  # $1: output prefix; the rest: flags for both hosts
  local out=$1; shift
  timeout 150 mpirun "${flags[@]}" -np 2 "$bin" --iterations 8 --heartbeat-timeout-ms 5000 "$@" > "$dir/$out.out" 2> "$dir/$out.err"
  local rc=$?
  cat "$dir/$out.out" "$dir/$out.err"
  return $rc
}
fnv() { sed -n 's/.*"weights_fnv": "\([0-9a-f]*\)".*"same_on_every_host": true.*/\1/p' "$dir/$1.out" | head -1; }

case "$case_name" in
attempts_restart)
  run straight || fail "the straight run exited $?"
  straight=$(fnv straight)
  [ -n "$straight" ] || fail "the straight run printed no weights line with the same weights on both hosts"
  run restarted --restart-on-failure 2 --checkpoint "$dir/ck" --checkpoint-every 2 --kill-host 1 --kill-at 5 \
    --kill-file "$dir/killed"
  rc=$?
  [ "$rc" -eq 0 ] || fail "the job with a killed attempt exited $rc, need 0 after a restart"
  [ -s "$dir/killed" ] || fail "host 1's attempt did not kill itself (no $dir/killed)"
  for h in 0 1; do
    [ "$(grep -c "gmi: host $h '[^']*': restart 1 of 2 from checkpoint $dir/ck at iteration 4 (the last one every host completed)" "$dir/restarted.err")" -eq 1 ] \
      || fail "host $h must print one restart line from iteration 4"
  done
  grep "gmi: host 0 '[^']*': restart 1 of 2" "$dir/restarted.err" | grep -q "host 1 '[^']*' (GMI 1) asked for a restart: .*signal 9" \
    || fail "host 0's restart line must name host 1, its GMI and the kill"
  restarted=$(fnv restarted)
  [ "$restarted" = "$straight" ] || fail "weights after the restart ${restarted:-none}, need the straight run's $straight"
  resumed=$(sed -n "s/.*host 1 '[^']*': attempt 2 resumed from iteration 4 (at \([0-9.]*\)).*/\1/p" "$dir/restarted.err")
  [ -n "$resumed" ] || fail "host 1's second attempt did not resume from iteration 4"
  awk -v k="$(cat "$dir/killed")" -v r="$resumed" \
    'BEGIN { s = r - k; printf "host 1 resumed %.2f s after its attempt was killed\n", s; exit !(s >= 0 && s <= 10) }' \
    || fail "the restarted attempt did not resume within 10 s of the kill"
  [ "$(grep -c "gmi: host [01] '[^']*': finished after 1 restart across hosts ([0-9.]* s from failures" "$dir/restarted.out")" -eq 2 ] \
    || fail "each host must end with one line: finished after 1 restart, with the time the restart took"
  pgrep -f "$dir/ck" > /dev/null && fail "a process of the job is left: $(pgrep -af "$dir/ck")"
  echo "restarted from iteration 4 on both hosts; weights $restarted, the straight run's"
  ;;
attempts_limit)
  run limit --restart-on-failure 1 --checkpoint "$dir/ck" --checkpoint-every 2 --kill-host 1 --kill-at 5 \
    --kill-every-attempt
  rc=$?
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "mpirun exited $rc, need a failure within the timeout"
  for h in 0 1; do
    [ "$(grep -c "gmi: host $h '[^']*': .*(after 1 restart, the limit)" "$dir/limit.err")" -eq 1 ] \
      || fail "host $h must end with one line that says the limit was reached"
  done
  ! grep -q '"weights_fnv"' "$dir/limit.out" || fail "a job past its restarts must not report weights"
  sleep 1
  pgrep -f "$dir/ck" > /dev/null && fail "a process of the job is left: $(pgrep -af "$dir/ck")"
  echo "both hosts ended at the limit with one line each"
  ;;
*) fail "unknown case $case_name" ;;
esac
