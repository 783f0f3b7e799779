# Env-step throughput of the PyTorch anchor's Cartpole (random actions, no policy), printed as a bench-spec
# result line with impl "torch_anchor", so it can run beside gmi.bench.env in one run (same --run-id).
# Usage: python3 anchor_env_step.py <path/to/torch_isaacgym_style.py> --num-envs 512 --run-id ID [--out FILE]
import argparse, importlib.util, json, subprocess, time

import torch

p = argparse.ArgumentParser()
p.add_argument("anchor")
p.add_argument("--num-envs", type=int, nargs="+", default=[512, 2048, 8192])
p.add_argument("--steps", type=int, default=200)
p.add_argument("--warmup", type=int, default=50)
p.add_argument("--reps", type=int, default=5)
p.add_argument("--run-id", default=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
p.add_argument("--git", default="unknown")
p.add_argument("--out")
a = p.parse_args()

spec = importlib.util.spec_from_file_location("anchor", a.anchor)
anchor = importlib.util.module_from_spec(spec)
spec.loader.exec_module(anchor)
dev = torch.device("cuda")

for n in a.num_envs:
    env = anchor.Cartpole(n, dev)
    for _ in range(a.warmup):
        env.step(torch.rand(n, 1, device=dev) * 2 - 1)
    torch.cuda.synchronize()
    rates = []
    for _ in range(a.reps):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(a.steps):
            env.step(torch.rand(n, 1, device=dev) * 2 - 1)  # random actions drawn on the device, as gmi does
        stop.record()
        stop.synchronize()
        rates.append(n * a.steps / (start.elapsed_time(stop) * 1e-3))
    rates.sort()
    line = {"run_id": a.run_id, "bench": "env", "task": "cartpole", "impl": "torch_anchor", "num_envs": n,
            "gmis_per_gpu": 1, "partition": "none", "gpus": 1, "device": torch.cuda.get_device_name(0),
            "metric": "steps_per_s", "median": rates[len(rates) // 2], "min": rates[0], "max": rates[-1],
            "reps": a.reps, "git": a.git, "steps_per_rep": a.steps, "torch": torch.__version__}
    print(json.dumps(line), flush=True)
    if a.out:
        with open(a.out, "a") as f:
            f.write(json.dumps(line) + "\n")
