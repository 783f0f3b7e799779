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
import sys

from result_lines import fnv, gpu_test_line, phase_lines, ratios, read, result_line, stamped, variant_medians

folder, out_lines, device, driver, git, run_id = sys.argv[1:7]
gph = int(sys.argv[7]) if len(sys.argv) > 7 else 2  # GPUs a simulated host
common = {"device": device, "gpus": 2 * gph, "driver": driver, "git": git, "run_id": run_id}
shapes = {  # variant: (case, hosts, what)
    "one_host": ("cartpole_ppo_colocated", 1, "nccl default"),
    "allgather": ("cartpole_ppo_colocated", 2, "old path: --cross-host-sum allgather; nccl sockets (lo) between hosts"),
    "two_level": ("cartpole_ppo_colocated", 2, "new path: --cross-host-sum two_level (the host's GPUs, then GPU k of "
                  "each host); nccl sockets (lo) between hosts"),
    "direct": ("cartpole_ppo_colocated", 2, "--cross-host-sum direct (every leader's row straight to every leader, "
               "one group of sends and receives); nccl sockets (lo) between hosts"),
    "ant_one_host": ("ant_ppo_colocated", 1, "nccl default; gmi's GPU physics"),
    "ant_two_level": ("ant_ppo_colocated", 2, "--cross-host-sum two_level; nccl sockets (lo) between hosts; gmi's GPU "
                      "physics"),
    "ant_allgather": ("ant_ppo_colocated", 2, "--cross-host-sum allgather (two_level failed its bit check); nccl "
                      "sockets (lo) between hosts; gmi's GPU physics"),
}
lines, med, texts, ok = variant_medians(common, read(os.path.join(folder, "train.jsonl")), shapes, 2 * gph,
                                       quiet=("ant_allgather", "direct"))
for t in texts:
    print(t)
measured, missing = ratios(med, (("one_host", ("allgather", "two_level", "direct")),
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
for v in ("two_level", "direct"):
    if "allgather" in med and v in med:
        print(f"{v} over the old path (allgather), same run: {med[v]['median'] / med['allgather']['median']:.3f}x")
lines_, texts = phase_lines(common, folder, gph)
lines += lines_
for t in texts:
    print(t)
# The bit check: 2 hosts x 2 GPUs x 2 GMIs, 40 iterations, the old and the new cross-host sum.
a = fnv(stamped(os.path.join(folder, "bits_allgather.log")))
b = fnv(stamped(os.path.join(folder, "bits_two_level.log")))
same = bool(a) and a == b
lines.append(result_line(common, "cartpole_ppo_two_level_bits", "two_level_weights_equal_allgather",
                         [1.0 if same else 0.0], hosts=2, gpus_per_host=gph, gmis_per_gpu=2, allgather=a, two_level=b))
print(f"bits: 40 iterations, 2 hosts x {gph} GPU(s) x 2 GMIs: allgather {a or 'none'}, two_level {b or 'none'}: "
      f"{'identical' if same else 'DIFFER (or a run did not end)'}")
ok = ok and same
d = fnv(stamped(os.path.join(folder, "bits_direct.log")))
same_d = bool(a) and a == d
lines.append(result_line(common, "cartpole_ppo_direct_bits", "direct_weights_equal_allgather",
                         [1.0 if same_d else 0.0], hosts=2, gpus_per_host=gph, gmis_per_gpu=2, allgather=a, direct=d))
print(f"bits: direct {d or 'none'}: {'identical to allgather' if same_d else 'DIFFER (or the run did not end)'}")
ok = ok and same_d
line, passed = gpu_test_line(common, folder, 2 * gph)
lines.append(line)
print(f"gmi.test.multihost_gpu: {'passed' if passed else 'FAILED (multihost_gpu_test.log)'}")
ok = ok and passed
with open(out_lines, "a") as f:
    for d in lines:
        f.write(json.dumps(d) + "\n")
print(f"{len(lines)} result lines in {out_lines}")
sys.exit(0 if ok else 1)
