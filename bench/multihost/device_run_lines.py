#!/usr/bin/env python3
"""bench/multihost/device_run.sh's result lines from its end lines and logs (usage: DIR DEVICE DRIVER GIT GPH).

Writes DIR/device_run.jsonl and prints one line a measure; exits 1 when a check failed (weights differ, the restart
did not end with the straight run's weights, the killed host was not named within 10 s)."""
import json
import os
import re
import statistics
import sys
import time

from result_lines import fnv, ms_per_iteration, ratios, read, result_line, stamped

folder, device, driver, git, gph = sys.argv[1:6]
gph = int(gph)
total = 2 * gph
run_id = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-multihost"
lines, ok = [], True


def line(case, metric, values, **extra):
    d = result_line({"device": device, "gpus": total, "driver": driver, "git": git, "run_id": run_id}, case, metric,
                    values, **extra)
    lines.append(d)
    return d


rows = read(os.path.join(folder, "train.jsonl"))
shapes = {  # variant: (case, hosts, what differs)
    "one_host": ("cartpole_ppo_colocated", 1, "nccl default"),
    "allreduce": ("cartpole_ppo_colocated", 2, "--cross-host-sum allreduce; nccl sockets (lo) between hosts"),
    "allgather": ("cartpole_ppo_colocated", 2, "--cross-host-sum allgather; nccl sockets (lo) between hosts"),
    "all_sockets": ("cartpole_ppo_colocated", 2, "--cross-host-sum allreduce; NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1: "
                    "every path on sockets, within a host too"),
    "proto_ll": ("cartpole_ppo_colocated", 2, "NCCL_PROTO=LL on the faster cross-host sum of part 1"),
    "one_host_mb32k": ("cartpole_ppo_colocated_mb32k", 1, "nccl default; 32768 envs, --minibatch 32768"),
    "two_hosts_mb32k": ("cartpole_ppo_colocated_mb32k", 2, "the faster cross-host sum of part 1; 32768 envs, --minibatch 32768"),
}
med = {}
for variant, (case, hosts, what) in shapes.items():
    rs = [r for r in rows if r.get("variant") == variant]
    if not rs:
        continue
    if not all(r["weights_identical"] for r in rs):
        print(f"{variant}: weights differ between GMIs")
        ok = False
    d = line(case, "train_samples_per_s", [r["train_samples_per_s"] for r in rs], hosts=hosts,
             gpus_per_host=total // hosts, gmis_per_gpu=1, num_envs=rs[0]["num_envs"], variant=variant,
             cross_host_sum=rs[0].get("cross_host_sum"), update=rs[0].get("synced_update"), what=what,
             ms_per_iteration=statistics.median(ms_per_iteration(r) for r in rs))
    med[variant] = d
    print(f"{variant:16s} {hosts} host(s) x {total // hosts} GPUs: {d['median'] / 1e6:8.2f} M samples/s (median of "
          f"{len(rs)}, {d['ms_per_iteration']:.2f} ms an iteration, update {d['update']}) [{what}]")
measured, missing = ratios(med, (("one_host", ("allreduce", "allgather", "all_sockets", "proto_ll")),
                                  ("one_host_mb32k", ("two_hosts_mb32k",))))
if "one_host" in missing:
    print("no one-host end line")
    ok = False
for v, ratio in measured:
    line(med[v]["case"], "two_hosts_over_one_host", [ratio], target=0.90, variant=v, hosts=2, gpus_per_host=gph,
         num_envs=med[v]["num_envs"], cross_host_sum=med[v]["cross_host_sum"])
    print(f"two hosts / one host, {v}: {ratio:.3f} (target >= 0.90)")
for r in read(os.path.join(folder, "phases.jsonl")):  # host 0's GMI 0 in its training loop, --comm-clock on
    c = r.get("cross_host")
    if not c:
        print("phases: no cross_host in the end line")
        continue
    it = max(1, r["iteration"])
    for k in ("sum_seconds", "mpi_seconds", "wait_seconds", "allreduce_seconds", "wall_seconds"):
        if k in c:
            line("cartpole_ppo_colocated_phases", "cross_host_" + k.replace("_seconds", "_s"), [c[k]], hosts=2,
                 gpus_per_host=gph, num_envs=r["num_envs"], iterations=r["iteration"], sums=c["sums"],
                 per_iteration_ms=1e3 * c[k] / it, comm_clock="on", cross_host_sum=r.get("cross_host_sum"))
    print(f"phases ({r.get('cross_host_sum')}): {r['iteration']} iterations, {1e3 * c['wall_seconds'] / it:.2f} ms each: "
          f"cross-host sums {1e3 * c['sum_seconds'] / it:.3f} ms an iteration (MPI {1e3 * c['mpi_seconds'] / it:.3f}), "
          f"gradient sums {1e3 * c.get('allreduce_seconds', float('nan')) / it:.3f} ms an iteration (device spans)")


test_log = os.path.join(folder, "multihost_gpu_test.log")
passed = os.path.exists(test_log) and "gmi.test.multihost_gpu: exit 0" in open(test_log).read()
line("gathered_sum", "multihost_gpu_test_passed", [1.0 if passed else 0.0], what="gmi.test.multihost_gpu on GPUs 0 and 1")
print(f"gmi.test.multihost_gpu: {'passed' if passed else 'FAILED (multihost_gpu_test.log)'}")
ok = ok and passed
straight, restart = stamped(os.path.join(folder, "straight.log")), stamped(os.path.join(folder, "restart.log"))
a, b = fnv(straight), fnv(restart)
if not a:
    print(f"2 hosts x {gph} GPUs x 2 GMIs: no step limit after 40 iterations with identical weights")
    ok = False
killed = next((t for t, x in restart if "killed by the test hook" in x), None)
restarted = [x for _, x in restart if re.search(r"gmi: host [01] 'sim[01]': restart 1 of 2 from checkpoint .* at iteration 30", x)]
resumed = next((t for t, x in restart if killed and t > killed and x.startswith("gmi: resumed from")), None)
print(f"straight {a or 'none'}, killed after 33 and restarted {b or 'none'}; restart lines: {len(restarted)}")
for x in restarted:
    print("  " + x)
if killed is None or resumed is None or len(restarted) != 2:
    print("restart: no kill, no resumed line after it, or not one restart line from iteration 30 a host (restart.log)")
    ok = False
else:
    line("restart_on_failure", "kill_restart_recovery_s", [resumed - killed], hosts=2, gpus_per_host=gph, gmis_per_gpu=2,
         what="host 1's attempt killed after iteration 33 to the restarted attempts' 'resumed from' line (both "
              "launchers restart from iteration 30)")
    print(f"restart: resumed {resumed - killed:.2f} s after the kill")
same = bool(a) and a == b
line("restart_on_failure", "restart_weights_equal_straight", [1.0 if same else 0.0], hosts=2, gpus_per_host=gph,
     straight=a, restarted=b)
ok = ok and same
killed_host = stamped(os.path.join(folder, "killed_host.log"))
k = next((t for t, x in killed_host if "killed by the test hook" in x), None)
lost = next(((t, x) for t, x in killed_host if re.search(r"host 0 'sim0': host 1 'sim1' \(GMIs? [0-9-]+\) ", x)), None)
if k is None or lost is None:
    print("killed host: no kill line or no line from host 0 naming host 1 (killed_host.log)")
    ok = False
else:
    s = lost[0] - k
    line("killed_host", "lost_host_detection_s", [s], target=10.0, hosts=2, gpus_per_host=gph, line=lost[1])
    print(f"killed host: host 0 named host 1 {s:.2f} s after the kill (target <= 10 s)")
    ok = ok and s <= 10
with open(os.path.join(folder, "device_run.jsonl"), "a") as f:
    for d in lines:
        f.write(json.dumps(d) + "\n")
print(f"{len(lines)} result lines in {folder}/device_run.jsonl")
sys.exit(0 if ok else 1)
