#!/usr/bin/env python3
"""bench/multihost/device_hosts.sh's result lines and summary (usage: DIR LINES DEVICE DRIVER GIT RUN_ID [GPUS_A_HOST, default 2]).

DIR holds train.jsonl (the runs' end lines, each tagged with its variant), phases.jsonl (the phases runs' end lines,
tagged with their variant and NCCL settings), tuned.txt (the sum and settings of the "tuned" variant), the bit check's
logs (bits_allgather.log, bits_two_level.log, bits_direct.log) and multihost_gpu_test.log. Appends the result lines
to LINES and prints the summary: each variant's samples/s, two hosts over one host against the target 0.90
(Cartpole: --cross-host-sum allgather, two_level, direct and tuned; Ant: two_level), the phases and microseconds a
gradient sum of each phases run, the bit check and the GPU test. Exits 1 when a check failed (weights differ between
GMIs, two_level's or direct's weights differ from the allgather's, the GPU test failed, Cartpole's one-host run is
missing)."""
import json
import os
import sys

from result_lines import fnv, gpu_test_line, phase_lines, ratios, read, result_line, stamped, variant_medians

folder, out_lines, device, driver, git, run_id = sys.argv[1:7]
gph = int(sys.argv[7]) if len(sys.argv) > 7 else 2  # GPUs a simulated host
tuned_txt = os.path.join(folder, "tuned.txt")
tuned = open(tuned_txt).read().strip() if os.path.exists(tuned_txt) else "tuned: not chosen"
common = {"device": device, "gpus": 2 * gph, "driver": driver, "git": git, "run_id": run_id}
shapes = {  # variant: (case, hosts, what)
    "one_host": ("cartpole_ppo_colocated", 1, "nccl default"),
    "allgather": ("cartpole_ppo_colocated", 2, "old path: --cross-host-sum allgather; nccl sockets (lo) between hosts"),
    "two_level": ("cartpole_ppo_colocated", 2, "new path: --cross-host-sum two_level (the host's GPUs, then GPU k of "
                  "each host); nccl sockets (lo) between hosts"),
    "direct": ("cartpole_ppo_colocated", 2, "--cross-host-sum direct (each leader's row to every leader, one group "
               "of sends and receives); nccl sockets (lo) between hosts"),
    "tuned": ("cartpole_ppo_colocated", 2, tuned + "; nccl sockets (lo) between hosts"),
    "ant_one_host": ("ant_ppo_colocated", 1, "nccl default; gmi's GPU physics"),
    "ant_two_level": ("ant_ppo_colocated", 2, "--cross-host-sum two_level; nccl sockets (lo) between hosts; gmi's GPU "
                      "physics"),
    "ant_allgather": ("ant_ppo_colocated", 2, "--cross-host-sum allgather (two_level failed its bit check); nccl "
                      "sockets (lo) between hosts; gmi's GPU physics"),
}
lines, med, texts, ok = variant_medians(common, read(os.path.join(folder, "train.jsonl")), shapes, 2 * gph,
                                       quiet=("ant_allgather", "tuned"))
for t in texts:
    print(t)
measured, missing = ratios(med, (("one_host", ("allgather", "two_level", "direct", "tuned")),
                                  ("ant_one_host", ("ant_two_level", "ant_allgather"))))
for base in missing:  # Ant is cut to the time left; a missing Cartpole one-host run is a failure
    print(f"no {base} end line: no ratio")
    ok = ok and base != "one_host"
for v, ratio in measured:
    lines.append(result_line(common, med[v]["case"], "two_hosts_over_one_host", [ratio], target=0.90, variant=v,
                             hosts=2, gpus_per_host=gph, num_envs=med[v]["num_envs"],
                             cross_host_sum=med[v]["cross_host_sum"]))
    print(f"two hosts / one host, {med[v]['case']}, {v}: {ratio:.3f} "
          f"(target >= 0.90: {'met' if ratio >= 0.90 else 'NOT met'})")
for v in ("two_level", "direct", "tuned"):
    if "allgather" in med and v in med:
        print(f"{v} over allgather, same run: {med[v]['median'] / med['allgather']['median']:.3f}x")
print(tuned)
lines_, texts = phase_lines(common, folder, gph)
lines += lines_
for t in texts:
    print(t)
# The bit check: 2 hosts x GPUS_A_HOST GPUs x 2 GMIs, 40 iterations, each cross-host sum against the allgather.
a = fnv(stamped(os.path.join(folder, "bits_allgather.log")))
for v in ("two_level", "direct"):
    b = fnv(stamped(os.path.join(folder, f"bits_{v}.log")))
    same = bool(a) and a == b
    lines.append(result_line(common, f"cartpole_ppo_{v}_bits", f"{v}_weights_equal_allgather", [1.0 if same else 0.0],
                             hosts=2, gpus_per_host=gph, gmis_per_gpu=2, allgather=a, **{v: b}))
    print(f"bits: 40 iterations, 2 hosts x {gph} GPU(s) x 2 GMIs: allgather {a or 'none'}, {v} {b or 'none'}: "
          f"{'identical' if same else 'DIFFER (or a run did not end)'}")
    ok = ok and same
line, passed = gpu_test_line(common, folder, 2 * gph)
lines.append(line)
print(f"gmi.test.multihost_gpu: {'passed' if passed else 'FAILED (multihost_gpu_test.log)'}")
ok = ok and passed
with open(out_lines, "a") as f:
    for d in lines:
        f.write(json.dumps(d) + "\n")
print(f"{len(lines)} result lines in {out_lines}")
sys.exit(0 if ok else 1)
