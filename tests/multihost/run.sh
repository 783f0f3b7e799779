#!/usr/bin/env bash
# multihost.<case>: gmi.multihost.ppo on two simulated hosts (mpirun -np 2 on this machine, each process a host).
#   identical_weights: 2 hosts x 2 GMIs end with the weights of 1 host x 4 GMIs, bit for bit; the control (no
#                      cross-host sum) must not.
#   killed_host:       host 1 SIGKILLs itself; host 0 must end within 10 s of the kill with one line naming host 1
#                      and its GMIs.
#   hung_host:         the same with SIGSTOP (a hung host, which mpirun does not notice).
#   failed_gmi:        GMI 3 (host 1) throws; host 0 must end with one line naming host 1 and GMI 3's error.
#   checkpoint_resume: 2 hosts x 2 GMIs save after 2 iterations (a file a GMI, a manifest a host, the job's
#                      manifest) and resume to 4: the weights of 4 iterations straight, bit for bit.
#   restart_failed_gmi: --restart-on-failure 2, a checkpoint every 2 iterations: GMI 3 (host 1) throws at iteration
#                      5; both hosts restart from iteration 4 and end with the weights of 1 host x 4 GMIs without a
#                      failure, bit for bit. With --restart-on-failure 1 and the GMI failing again after the
#                      restart, the job gives up with one line a host. Nothing is left behind.
#   lost_host_rerun:   the same, but host 1's launcher is killed at iteration 5: host 0 ends within 10 s with one
#                      line naming host 1 and its GMIs, the job manifest lists whole files; the same command run
#                      again resumes from it (iteration 4) and ends with the weights without a failure.
# Exits 77 (skipped) without MPI in the build or mpirun on PATH.
source "$(dirname "$0")/common.sh"
# Nothing left behind by a job whose hosts have the ids $1.0, $1.1: no process of it, no shared memory of those
# hosts, no temp file of an atomic write in $dir.
left_behind() {
  local ids=$1
  sleep 0.5
  pgrep -f -- "--host-id $ids" > /dev/null && fail "processes of the job are still running: $(pgrep -af -- "--host-id $ids")"
  ls /dev/shm 2> /dev/null | grep -q -- "-h$ids\." && fail "shared memory left: $(ls /dev/shm | grep -- "-h$ids\.")"
  ls "$dir" | grep -q '\.tmp\.' && fail "temp files left in $dir: $(ls "$dir" | grep '\.tmp\.')"
  return 0
}
# mpirun -np 2 with host ids $ids.0 and $ids.1 (so this test's shared memory is told from other jobs'), each host
# the same flags.
two_hosts() {
  timeout 120 mpirun "${flags[@]}" "${launcher[@]}" -np 1 "$bin" --host-id "$ids.0" "$@" : -np 1 "$bin" --host-id "$ids.1" "$@"
}

case "$case_name" in
identical_weights)
  common=(--iterations 3 --envs 32 --seed 100 --heartbeat-timeout-ms 20000)  # no false loss on a loaded CI machine
  "$bin" --gmis-per-host 4 "${common[@]}" --weights "$dir/one.bin" > "$dir/one.out" 2>&1 || { cat "$dir/one.out"; fail "one host x 4 GMIs"; }
  timeout 180 mpirun "${flags[@]}" -np 2 "$bin" --gmis-per-host 2 "${common[@]}" --weights "$dir/two.bin" > "$dir/two.out" 2>&1 \
    || { cat "$dir/two.out"; fail "2 hosts x 2 GMIs under mpirun"; }
  timeout 180 mpirun "${flags[@]}" -np 2 "$bin" --gmis-per-host 2 "${common[@]}" --no-cross-host-gradients --weights "$dir/control.bin" \
    > "$dir/control.out" 2>&1 || { cat "$dir/control.out"; fail "the control run"; }
  cat "$dir/one.out" "$dir/two.out"
  [ "$(grep -c '"hosts": 2' "$dir/two.out")" -eq 2 ] || fail "need one line with \"hosts\": 2 from each of the 2 hosts"
  grep -q '"host_id": "[^"]*\.0"' "$dir/two.out" && grep -q '"host_id": "[^"]*\.1"' "$dir/two.out" \
    || fail "the simulated hosts must have the ids <hostname>.0 and <hostname>.1"
  [ -s "$dir/one.bin" ] || fail "no weights from one host"
  cmp -s "$dir/one.bin" "$dir/two.bin" || fail "2 hosts x 2 GMIs ended with other weights than 1 host x 4 GMIs"
  cmp -s "$dir/one.bin" "$dir/control.bin" && fail "the control (gradients not summed across hosts) matched too: the check can not fail"
  echo "identical: $(wc -c < "$dir/one.bin") bytes of weights; the control differs"
  ;;
killed_host|hung_host)
  if [ "$case_name" = killed_host ]; then
    # --enable-recovery: mpirun leaves the survivor running (by default it kills the job itself when a process
    # dies), so gmi's own detection is what is tested.
    signal=KILL launcher=(--enable-recovery)
  else
    # A stopped process is alive to mpirun: only gmi's heartbeat finds it; host 0's exit then ends the job.
    signal=STOP launcher=()
  fi
  timeout 120 mpirun "${flags[@]}" "${launcher[@]}" -np 2 "$bin" --gmis-per-host 2 --iterations 100000 \
    --kill-host 1 --kill-signal "$signal" --kill-at 2 --kill-file "$dir/w.killed" --heartbeat-timeout-ms 3000 --weights "$dir/w" > "$dir/out" 2>&1
  rc=$?
  cat "$dir/out"
  [ "$rc" -ne 124 ] || fail "the job did not end within 120 s of its start"
  [ -s "$dir/w.killed" ] || fail "host 1 did not stop or kill itself (no $dir/w.killed)"
  line=$(grep "gmi: host 0 " "$dir/out") || fail "host 0 printed no error line"
  [ "$(grep -c "gmi: host 0 " "$dir/out")" -eq 1 ] || fail "host 0 printed more than one error line"
  echo "$line" | grep -q "host 1 '[^']*' (GMIs 2-3) lost: no heartbeat" || fail "the line must name host 1, its GMIs 2-3 and the cause: $line"
  detected_within_10s "$line" "$dir/w.killed" "SIG$signal"
  ;;
failed_gmi)
  timeout 120 mpirun "${flags[@]}" --enable-recovery -np 2 "$bin" --gmis-per-host 2 --iterations 100000 \
    --throw-host 1 --kill-at 2 --heartbeat-timeout-ms 20000 > "$dir/out" 2>&1
  rc=$?
  cat "$dir/out"
  [ "$rc" -ne 124 ] || fail "the job did not end within 120 s of its start"
  [ "$(grep -c "gmi: host 0 " "$dir/out")" -eq 1 ] || fail "host 0 must print exactly one error line"
  grep "gmi: host 0 " "$dir/out" | grep -q "host 1 '[^']*' (GMIs 2-3) reported: GMI 3 (host 1 '[^']*', host, slice 1) threw: failed on purpose" \
    || fail "host 0's line must name host 1 and GMI 3's failure"
  grep "gmi: host 1 " "$dir/out" | grep -q "GMI 3 (host 1 '[^']*', host, slice 1) threw: failed on purpose" \
    || fail "host 1's line must name GMI 3"
  ;;
checkpoint_resume)
  common=(--gmis-per-host 2 --envs 32 --seed 100 --heartbeat-timeout-ms 20000)
  run() { timeout 180 mpirun "${flags[@]}" -np 2 "$bin" "${common[@]}" "$@" >> "$dir/out" 2>&1 || { cat "$dir/out"; fail "mpirun $*"; }; }
  run --iterations 4 --weights "$dir/straight.bin"
  run --iterations 2 --checkpoint "$dir/ck"
  for f in ck ck.host0 ck.host1 ck.iter2.gmi0 ck.iter2.gmi1 ck.iter2.gmi2 ck.iter2.gmi3; do
    [ -s "$dir/$f" ] || fail "no $f after the checkpoint"
  done
  python3 - "$dir" <<'PY' || fail "the manifests do not list the files"
import json, os, sys
d = sys.argv[1]
job = json.load(open(os.path.join(d, "ck")))
assert job["hosts"] == 2 and job["iteration"] == 2, job
assert [f["rank"] for f in job["files"]] == [0, 1, 2, 3] and [f["host"] for f in job["files"]] == [0, 0, 1, 1]
for f in job["files"]:
    assert os.path.getsize(os.path.join(d, f["file"])) == f["bytes"], f
for h in (0, 1):
    mine = json.load(open(os.path.join(d, f"ck.host{h}")))
    assert [f["rank"] for f in mine["files"]] == [2 * h, 2 * h + 1], mine
PY
  run --iterations 4 --resume "$dir/ck" --weights "$dir/resumed.bin"
  cat "$dir/out"
  cmp -s "$dir/straight.bin" "$dir/resumed.bin" || fail "resumed at iteration 2 and ended with other weights than 4 straight"
  cp "$dir/ck.iter2.gmi3" "$dir/saved" && printf 'x' | dd of="$dir/ck.iter2.gmi3" bs=1 seek=100 conv=notrunc 2>/dev/null
  timeout 180 mpirun "${flags[@]}" -np 2 "$bin" "${common[@]}" --iterations 4 --resume "$dir/ck" > "$dir/damaged.out" 2>&1 \
    && fail "a damaged file was resumed from"
  grep -q "ck.iter2.gmi3" "$dir/damaged.out" || { cat "$dir/damaged.out"; fail "the refusal must name the damaged file"; }
  echo "resumed: bit for bit; a damaged file refused"
  ;;
restart_failed_gmi)
  ids=rs$$ launcher=()
  common=(--gmis-per-host 2 --iterations 8 --envs 32 --seed 100 --heartbeat-timeout-ms 20000)
  "$bin" --gmis-per-host 4 --iterations 8 --envs 32 --seed 100 --weights "$dir/one.bin" > "$dir/one.out" 2>&1 \
    || { cat "$dir/one.out"; fail "one host x 4 GMIs"; }
  two_hosts "${common[@]}" --checkpoint "$dir/ck" --checkpoint-every 2 --restart-on-failure 2 --throw-host 1 --kill-at 5 \
    --weights "$dir/two.bin" > "$dir/out" 2>&1
  rc=$?
  cat "$dir/out"
  [ "$rc" -eq 0 ] || fail "mpirun exited $rc, need 0 (the job restarts and finishes)"
  for h in 0 1; do
    [ "$(grep -c "^gmi: host $h " "$dir/out")" -eq 1 ] || fail "host $h must print exactly one restart line"
    grep "^gmi: host $h " "$dir/out" | grep -q "restart 1 of 2 from checkpoint $dir/ck at iteration 4 (the last one every host completed): .*GMI 3 (host 1 '$ids.1', host, slice 1) threw: failed on purpose" \
      || fail "host $h's line must say restart 1 of 2 from iteration 4 and name GMI 3 of host 1"
  done
  grep "^gmi: host 0 " "$dir/out" | grep -q "host 1 '$ids.1' (GMIs 2-3) asked for a restart" || fail "host 0 must name host 1 as the host that asked"
  [ "$(grep -c '"restarts": 1' "$dir/out")" -eq 2 ] || fail "both hosts' end lines must say \"restarts\": 1"
  cmp -s "$dir/one.bin" "$dir/two.bin" || fail "restarted at iteration 4: other weights than 1 host x 4 GMIs without a failure"
  echo "restarted from iteration 4: the weights of a run without the failure, bit for bit"
  left_behind "$ids"
  # The limit: the GMI fails again after the restart; --restart-on-failure 1 gives up with one line a host.
  rm -f "$dir"/ck*
  two_hosts "${common[@]}" --checkpoint "$dir/ck" --checkpoint-every 2 --restart-on-failure 1 --throw-host 1 --kill-at 5 \
    --throw-attempts 2 > "$dir/limit.out" 2>&1
  rc=$?
  cat "$dir/limit.out"
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "mpirun exited $rc, need a failure after the one restart allowed"
  grep "^gmi: host 1 " "$dir/limit.out" | grep -q "GMI 3 (host 1 '$ids.1', host, slice 1) threw: failed on purpose (after 1 restart, the limit)" \
    || fail "host 1 must end with GMI 3's failure and the limit"
  grep "^gmi: host 0 " "$dir/limit.out" | grep -q "host 1 '$ids.1' (GMIs 2-3) reported: GMI 3 .* (after 1 restart, the limit)" \
    || fail "host 0 must end with host 1's report"
  left_behind "$ids"
  ;;
lost_host_rerun)
  ids=lh$$ launcher=(--enable-recovery)  # mpirun leaves host 0 running when host 1 dies: gmi's detection is tested
  "$bin" --gmis-per-host 4 --iterations 8 --envs 32 --seed 100 --weights "$dir/one.bin" > "$dir/one.out" 2>&1 \
    || { cat "$dir/one.out"; fail "one host x 4 GMIs"; }
  # The default heartbeat timeout (5 s): the survivors' 10 s bound holds with it.
  job=(--gmis-per-host 2 --iterations 8 --envs 32 --seed 100 --checkpoint "$dir/ck"
       --checkpoint-every 2 --restart-on-failure 2 --kill-host 1 --kill-at 5 --kill-file "$dir/killed" --weights "$dir/two.bin")
  two_hosts "${job[@]}" > "$dir/out" 2>&1
  rc=$?
  cat "$dir/out"
  [ "$rc" -ne 124 ] || fail "the job did not end within 120 s of its start"
  [ -s "$dir/killed" ] || fail "host 1 did not kill itself"
  [ "$(grep -c "^gmi: host 0 " "$dir/out")" -eq 1 ] || fail "host 0 must print exactly one line"
  line=$(grep "^gmi: host 0 " "$dir/out")
  echo "$line" | grep -q "host 1 '$ids.1' (GMIs 2-3) lost: no heartbeat" || fail "the line must name host 1, its GMIs and the cause: $line"
  detected_within_10s "$line" "$dir/killed" "the kill"
  python3 - "$dir" <<'PY' || fail "the job manifest is not consistent"
import json, os, sys
d = sys.argv[1]
job = json.load(open(os.path.join(d, "ck")))
assert job["hosts"] == 2 and job["gmis_per_host"] == 2 and job["iteration"] == 4, job
assert [f["rank"] for f in job["files"]] == [0, 1, 2, 3], job
for f in job["files"]:
    assert os.path.getsize(os.path.join(d, f["file"])) == f["bytes"], f
print("job manifest: iteration 4, every file whole")
PY
  two_hosts "${job[@]}" > "$dir/rerun.out" 2>&1
  rc=$?
  cat "$dir/rerun.out"
  [ "$rc" -eq 0 ] || fail "the rerun exited $rc, need 0"
  for h in 0 1; do
    grep -q "^gmi: host $h '$ids.$h': resuming from checkpoint $dir/ck at iteration 4" "$dir/rerun.out" \
      || fail "host $h must say it resumes from iteration 4"
  done
  cmp -s "$dir/one.bin" "$dir/two.bin" || fail "killed at iteration 5 and rerun: other weights than without the kill"
  echo "rerun resumed from iteration 4: the weights of a run without the kill, bit for bit"
  left_behind "$ids"
  ;;
*) echo "run.sh: got case '$case_name', need identical_weights, killed_host, hung_host, failed_gmi, checkpoint_resume, restart_failed_gmi or lost_host_rerun"; exit 2 ;;
esac
