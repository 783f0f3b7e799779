# Serving throughput of the PyTorch anchor (policy + sampling + env step, one process) for the tasks it has,
# at gmi's paper env counts, as bench-spec result lines with impl "torch_anchor" and the run id of the gmi run
# beside it. Usage: python3 anchor_serving.py <torch_isaacgym_style.py> --run-id ID [--out FILE]
import argparse, importlib.util, json, statistics, time, types

import torch

p = argparse.ArgumentParser()
p.add_argument("anchor")
p.add_argument("--seconds", type=float, default=1.0)
p.add_argument("--reps", type=int, default=3)
p.add_argument("--run-id", default=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
p.add_argument("--git", default="unknown")
p.add_argument("--out")
a = p.parse_args()

spec = importlib.util.spec_from_file_location("anchor", a.anchor)
anchor = importlib.util.module_from_spec(spec)
spec.loader.exec_module(anchor)
dev = torch.device("cuda")
device = torch.cuda.get_device_name(0)

# anchor env name -> (gmi task name, paper env count)
tasks = {"cartpole": ("cartpole", 512), "ant": ("ant_proxy", 1024), "humanoid": ("humanoid_proxy", 4096),
         "shadowhand": ("shadow_hand_proxy", 4096)}
for name, (task, n) in tasks.items():
    rates = [anchor.serve(types.SimpleNamespace(env=name, num_envs=n, seconds=a.seconds), dev) for _ in range(a.reps)]
    line = {"run_id": a.run_id, "bench": "serving", "task": task, "impl": "torch_anchor", "num_envs": n,
            "gmis_per_gpu": 1, "partition": "none", "gpus": 1, "device": device, "metric": "steps_per_s",
            "median": statistics.median(rates), "min": min(rates), "max": max(rates), "reps": a.reps,
            "git": a.git, "config": "single_instance_paper_envs", "anchor_env": name}
    print(json.dumps(line), flush=True)
    if a.out:
        with open(a.out, "a") as f:
            f.write(json.dumps(line) + "\n")
