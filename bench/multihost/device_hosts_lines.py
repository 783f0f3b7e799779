#!/usr/bin/env python3
"""bench/multihost/device_hosts.sh's result lines and summary (usage: DIR LINES DEVICE DRIVER GIT RUN_ID [GPUS_A_HOST, default 2]).

DIR holds train.jsonl (the runs' end lines, each tagged with its variant), phases.jsonl, the bit check's logs
(bits_allgather.log, bits_two_level.log) and multihost_gpu_test.log. Appends the result lines to LINES and prints the
summary: each variant's samples/s, two hosts over one host against the target 0.90 (Cartpole: the old path,
--cross-host-sum allgather, and the new one, two_level; Ant: two_level), the bit check and the GPU test. Exits 1 when
a check failed (weights differ between GMIs, two_level's weights differ from the allgather's, the GPU test failed, a
one-host run is missing)."""
import json
import os
import statistics
import sys

from result_lines import fnv, ms_per_iteration, ratios, read, result_line, stamped

folder, out_lines, device, driver, git, run_id = sys.argv[1:7]
gph = int(sys.argv[7]) if len(sys.argv) > 7 else 2  # GPUs a simulated host
common = {"device": device, "gpus": 2 * gph, "driver": driver, "git": git, "run_id": run_id}
lines, ok = [], True
shapes = {  # variant: (case, hosts, what)
    "one_host": ("cartpole_ppo_colocated", 1, "nccl default"),
    "allgather": ("cartpole_ppo_colocated", 2, "old path: --cross-host-sum allgather; nccl sockets (lo) between hosts"),
    "two_level": ("cartpole_ppo_colocated", 2, "new path: --cross-host-sum two_level (the host's GPUs, then GPU k of "
                  "each host); nccl sockets (lo) between hosts"),
    "ant_one_host": ("ant_ppo_colocated", 1, "nccl default; gmi's GPU physics"),
    "ant_two_level": ("ant_ppo_colocated", 2, "--cross-host-sum two_level; nccl sockets (lo) between hosts; gmi's GPU "
                      "physics"),
    "ant_allgather": ("ant_ppo_colocated", 2, "--cross-host-sum allgather (two_level failed its bit check); nccl "
                      "sockets (lo) between hosts; gmi's GPU physics"),
}
rows = read(os.path.join(folder, "train.jsonl"))
med = {}
for variant, (case, hosts, what) in shapes.items():
    rs = [r for r in rows if r.get("variant") == variant]
    if not rs:
        if variant != "ant_allgather":
            print(f"{variant:14s} no end line")
        continue
    if not all(r.get("weights_identical") for r in rs):
        print(f"{variant}: weights differ between GMIs")
        ok = False
    d = result_line(common, case, "train_samples_per_s", [r["train_samples_per_s"] for r in rs], hosts=hosts,
                    gpus_per_host=2 * gph // hosts, gmis_per_gpu=1, num_envs=rs[0]["num_envs"], variant=variant,
                    cross_host_sum=rs[0].get("cross_host_sum"), update=rs[0].get("synced_update"), what=what,
                    ms_per_iteration=statistics.median(ms_per_iteration(r) or 0 for r in rs))
    lines.append(d)
    med[variant] = d
    print(f"{variant:14s} {hosts} host(s) x {2 * gph // hosts} GPU(s): {d['median'] / 1e6:8.2f} M samples/s (median of "
          f"{len(rs)}, {d['ms_per_iteration']:.2f} ms an iteration) [{what}]")
measured, missing = ratios(med, (("one_host", ("allgather", "two_level")),
                                  ("ant_one_host", ("ant_two_level", "ant_allgather"))))
for base in missing:
    print(f"no {base} end line: no ratio")
    ok = False
for v, ratio in measured:
    lines.append(result_line(common, med[v]["case"], "two_hosts_over_one_host", [ratio], target=0.90, variant=v,
                             hosts=2, gpus_per_host=gph, num_envs=med[v]["num_envs"],
                             cross_host_sum=med[v]["cross_host_sum"]))
    print(f"two hosts / one host, {med[v]['case']}, {v}: {ratio:.3f} "
          f"(target >= 0.90: {'met' if ratio >= 0.90 else 'NOT met'})")
if "allgather" in med and "two_level" in med:
    gain = med["two_level"]["median"] / med["allgather"]["median"]
    print(f"two_level over the old path (allgather), same run: {gain:.3f}x")
# host 0's GMI 0 in its training loop, --comm-clock on (the end line: the one with train_samples_per_s)
for r in [r for r in read(os.path.join(folder, "phases.jsonl")) if "train_samples_per_s" in r]:
    c = r.get("cross_host")
    if not c:
        print("phases: no cross_host in the end line")
        continue
    it = max(1, r["iteration"])
    for k in ("sum_seconds", "mpi_seconds", "allreduce_seconds", "wall_seconds"):
        if k in c:
            lines.append(result_line(common, "cartpole_ppo_colocated_phases", "cross_host_" + k.replace("_seconds", "_s"),
                                     [c[k]], hosts=2, gpus_per_host=gph, iterations=r["iteration"],
                                     per_iteration_ms=1e3 * c[k] / it, comm_clock="on",
                                     cross_host_sum=r.get("cross_host_sum")))
    print(f"phases ({r.get('cross_host_sum')}): {r['iteration']} iterations, {1e3 * c['wall_seconds'] / it:.2f} ms each: "
          f"cross-host sums of statistics {1e3 * c['sum_seconds'] / it:.3f} ms an iteration, gradient sums "
          f"{1e3 * c.get('allreduce_seconds', float('nan')) / it:.3f} ms an iteration (device spans)")
# The bit check: 2 hosts x 2 GPUs x 2 GMIs, 40 iterations, the old and the new cross-host sum.
a = fnv(stamped(os.path.join(folder, "bits_allgather.log")))
b = fnv(stamped(os.path.join(folder, "bits_two_level.log")))
same = bool(a) and a == b
lines.append(result_line(common, "cartpole_ppo_two_level_bits", "two_level_weights_equal_allgather",
                         [1.0 if same else 0.0], hosts=2, gpus_per_host=gph, gmis_per_gpu=2, allgather=a, two_level=b))
print(f"bits: 40 iterations, 2 hosts x {gph} GPU(s) x 2 GMIs: allgather {a or 'none'}, two_level {b or 'none'}: "
      f"{'identical' if same else 'DIFFER (or a run did not end)'}")
ok = ok and same
test_log = os.path.join(folder, "multihost_gpu_test.log")
passed = os.path.exists(test_log) and "gmi.test.multihost_gpu: exit 0" in open(test_log).read()
lines.append(result_line(common, "gathered_sum", "multihost_gpu_test_passed", [1.0 if passed else 0.0],
                         what=f"gmi.test.multihost_gpu on GPUs 0-{2 * gph - 1}"))
print(f"gmi.test.multihost_gpu: {'passed' if passed else 'FAILED (multihost_gpu_test.log)'}")
ok = ok and passed
with open(out_lines, "a") as f:
    for d in lines:
        f.write(json.dumps(d) + "\n")
print(f"{len(lines)} result lines in {out_lines}")
sys.exit(0 if ok else 1)
