#!/usr/bin/env bash
# multihost.<case>: runtime::gpu_hosts (gmi::run's GPU layout across hosts) on two simulated hosts, no GPU needed.
#   gpu_hosts_sums:          2 hosts x (2 GPUs x 2 GMIs): global numbering, host 0's NCCL id on both hosts, every
#                            sum right and the same bits on every GMI of every host, NCCL_HOSTID = each host's id.
#   gpu_hosts_shapes_differ: host 1 runs 1 GPU where host 0 runs 2: refused in one line naming host 1.
#   gpu_hosts_killed_host:   host 1 SIGKILLs itself; host 0 ends within 10 s with one line naming host 1 and its GMIs.
#   gpu_hosts_late_gather:   host 0 reaches the final gather 2.5 s late (as gmi::run's final evaluation makes it)
#                            with sums bounded at 1 s: a gather given 20 s ends on both hosts; one given the sums'
#                            1 s fails on host 1 with a timeout line.
#   example_refused:         gmi::run (the cartpole_ppo example) under mpirun -np 2 with what does not span hosts
#                            (--device host, MPS GMIs, --population; --restart-on-failure without --checkpoint):
#                            one line a host, exit 2.
# Exits 77 (skipped) without MPI in the build or mpirun on PATH.
source "$(dirname "$0")/common.sh"

case "$case_name" in
gpu_hosts_sums)
  timeout 120 mpirun "${flags[@]}" -np 2 "$bin" --gpus 2 --gmis-per-gpu 2 --rounds 50 --heartbeat-timeout-ms 20000 \
    > "$dir/out" 2> "$dir/err"
  rc=$?
  cat "$dir/out" "$dir/err"
  [ "$rc" -eq 0 ] || fail "mpirun exited $rc"
  python3 - "$dir/out" <<'PY' || fail "the hosts' lines are not what 2 hosts x 4 GMIs give"
import json, sys
rows = sorted((json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")), key=lambda r: r["host"])
assert [r["host"] for r in rows] == [0, 1], rows
for r in rows:
    h = r["host"]
    assert r["hosts"] == 2 and r["global_world"] == 8 and r["global_gpus"] == 4, r
    assert r["first_rank"] == 4 * h and r["first_global_gpu"] == 2 * h, r
    assert r["host_id"].endswith(f".{h}"), r
    assert r["leaders_id"] == "from " + rows[0]["host_id"], r   # host 0's id on both hosts
    assert r["same_on_every_host"] is True, r
    assert r["nccl_host"] == r["host_id"], r   # simulated hosts: NCCL_HOSTID defaults to gmi's host id
assert rows[0]["sums_check"] == rows[1]["sums_check"], rows
for r in rows:  # GMI 0's phases: every sum counted, none negative, in MPI plus waiting = in the sums <= its wall time
    p = r["phases"]
    assert p["sums"] == 50, p
    assert all(p[k] >= 0 for k in ("sum_seconds", "mpi_seconds", "wait_seconds", "wall_seconds")), p
    assert abs(p["mpi_seconds"] + p["wait_seconds"] - p["sum_seconds"]) <= 1e-9 + 1e-9 * p["sum_seconds"], p
    assert 0 < p["sum_seconds"] <= p["wall_seconds"], p
print("2 hosts: global ranks and GPUs, host 0's id on both, the same sums on all 8 GMIs; GMI 0's phases:",
      [r["phases"] for r in rows])
PY
  ;;
gpu_hosts_shapes_differ)
  timeout 120 mpirun "${flags[@]}" -np 1 "$bin" --gpus 2 : -np 1 "$bin" --gpus 1 > "$dir/out" 2>&1
  rc=$?
  cat "$dir/out"
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "mpirun exited $rc, need a refusal"
  grep -q "host 0 '[^']*': GPUs x GMIs of host 1 ([^)]*): got .1 x 2., need 2 x 2 like host 0" "$dir/out" \
    || fail "host 0 must refuse host 1's shape in one line"
  ;;
gpu_hosts_killed_host)
  # --enable-recovery: mpirun leaves host 0 running when host 1 dies, so gmi's own detection is what is tested.
  timeout 120 mpirun "${flags[@]}" --enable-recovery -np 2 "$bin" --gpus 1 --gmis-per-gpu 2 --rounds 1000000 \
    --kill-host 1 --kill-at 20 --kill-file "$dir/killed" --heartbeat-timeout-ms 3000 > "$dir/out" 2>&1
  rc=$?
  cat "$dir/out"
  [ "$rc" -ne 124 ] || fail "the job did not end within 120 s of its start"
  [ -s "$dir/killed" ] || fail "host 1 did not kill itself (no $dir/killed)"
  [ "$(grep -c "gmi: host 0 " "$dir/out")" -eq 1 ] || fail "host 0 must print exactly one error line"
  line=$(grep "gmi: host 0 " "$dir/out")
  echo "$line" | grep -q "host 1 '[^']*' (GMIs 2-3) lost: no heartbeat" || fail "the line must name host 1, its GMIs 2-3 and the cause: $line"
  detected_within_10s "$line" "$dir/killed" "SIGKILL"
  ;;
gpu_hosts_late_gather)
  late=(--gpus 1 --gmis-per-gpu 1 --rounds 5 --timeout-ms 1000 --late-ms 2500 --heartbeat-timeout-ms 20000)
  timeout 120 mpirun "${flags[@]}" -np 2 "$bin" "${late[@]}" --gather-timeout-ms 20000 > "$dir/out" 2> "$dir/err"
  rc=$?
  cat "$dir/out" "$dir/err"
  [ "$rc" -eq 0 ] || fail "with a 20 s bound on the final gather: mpirun exited $rc"
  [ "$(grep -c '"same_on_every_host":true' "$dir/out")" -eq 2 ] || fail "both hosts must print their line"
  timeout 120 mpirun "${flags[@]}" -np 2 "$bin" "${late[@]}" > "$dir/out2" 2>&1
  rc=$?
  cat "$dir/out2"
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "with the sums' 1 s bound: mpirun exited $rc, need host 1's timeout"
  grep -q "gmi: host 1 '[^']*': .*timed out after 1000 ms" "$dir/out2" || fail "host 1 must name its timeout"
  ;;
example_refused)
  # Each case: the flags, then the line both hosts must print (exit 2, before any GPU is touched).
  while IFS='|' read -r args want; do
    read -ra argv <<< "$args"
    timeout 120 mpirun "${flags[@]}" -np 2 "$bin" "${argv[@]}" --num-envs 64 --max-env-steps 4096 < /dev/null > "$dir/out" 2>&1
    rc=$?
    cat "$dir/out"
    [ "$rc" -eq 2 ] || fail "$args: mpirun exited $rc, need 2 (a refused option)"
    [ "$(grep -c -e "$want" "$dir/out")" -eq 2 ] || fail "$args: each host must print one line matching: $want"
  done <<'CASES'
--device host|--device across 2 hosts (openmpi): got .host threads., need gpu
--device gpu --partition mps|--partition/--launch across 2 hosts (openmpi): got .mps/auto., need GMIs as threads
--device gpu --restart-on-failure|--restart-on-failure without --checkpoint: got 3, need --checkpoint PATH as well
--device gpu --restart-on-failure 64 --checkpoint /tmp/never.ckpt|--restart-on-failure across 2 hosts (openmpi): got .64., need at most 63
--device gpu --population|--population across 2 hosts (openmpi): got .on., need one synchronous training
CASES
  ;;
*) echo "gpu_hosts.sh: got case '$case_name', need gpu_hosts_sums, gpu_hosts_shapes_differ, gpu_hosts_killed_host or example_refused"; exit 2 ;;
esac
