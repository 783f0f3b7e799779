# Runs the PyTorch anchor (shared/anchors/torch_isaacgym_style.py, unmodified, imported) for the same figures as
# gmi.bench.ppo and prints bench-spec result lines with impl "torch_anchor" under the given run id.
#   serving:  anchor.serve() for Cartpole at 512/4096/16384, ShadowHand-size and Ant-size MLPs at 4096/16384;
#   training: anchor.train() samples/s for Cartpole at 512/4096;
#   solve:    anchor.train() run from scratch for S seconds, S in --solve-seconds; the first S whose final recent
#             return is >= 450 brackets its time to solve (the anchor has no early stop, so this is an upper bound).
# Usage: python3 anchor_ppo.py <anchor.py> --run-id ID --git REV [--out FILE] [--what serving training solve]
import argparse, importlib.util, json, statistics, time

import torch

p = argparse.ArgumentParser()
p.add_argument("anchor")
p.add_argument("--run-id", required=True)
p.add_argument("--git", default="unknown")
p.add_argument("--out")
p.add_argument("--reps", type=int, default=3)
p.add_argument("--seconds", type=float, default=2.0)
p.add_argument("--solve-seconds", type=float, nargs="+", default=[15, 30, 60])
p.add_argument("--what", nargs="+", default=["serving", "training", "solve"])
a = p.parse_args()

spec = importlib.util.spec_from_file_location("anchor", a.anchor)
anchor = importlib.util.module_from_spec(spec)
spec.loader.exec_module(anchor)
dev = torch.device("cuda")


def args_for(mode, env, n, seconds):
    return argparse.Namespace(mode=mode, env=env, num_envs=n, seconds=seconds, horizon=16, minibatch=8192, epochs=8)


def emit(bench, task, n, metric, values, **extra):
    values = sorted(values)
    line = {"run_id": a.run_id, "bench": bench, "task": task, "impl": "torch_anchor", "num_envs": n,
            "gmis_per_gpu": 1, "partition": "none", "gpus": 1, "device": torch.cuda.get_device_name(0),
            "metric": metric, "median": statistics.median(values), "min": values[0], "max": values[-1],
            "reps": len(values), "git": a.git, "torch": torch.__version__}
    line.update(extra)
    print(json.dumps(line), flush=True)
    if a.out:
        with open(a.out, "a") as f:
            f.write(json.dumps(line) + "\n")


if "serving" in a.what:
    for env, task, sizes in [("cartpole", "cartpole", [512, 4096, 16384]),
                             ("shadowhand", "shadow_hand_mlp_on_anchor_proxy", [4096, 16384]),
                             ("ant", "ant_mlp_on_anchor_proxy", [4096, 16384])]:
        for n in sizes:
            rates = [anchor.serve(args_for("serve", env, n, a.seconds), dev) for _ in range(a.reps)]
            emit("serving", task, n, "steps_per_s", rates)

if "training" in a.what:
    for n in [512, 4096]:
        rates = [anchor.train(args_for("train", "cartpole", n, a.seconds * 2), dev)[0] for _ in range(a.reps)]
        emit("training", "cartpole", n, "samples_per_s", rates, horizon=16, minibatch=8192, epochs=8)

if "solve" in a.what:
    bracket = None
    tried = []
    for s in a.solve_seconds:
        t0 = time.perf_counter()
        sps, ret = anchor.train(args_for("train", "cartpole", 512, s), dev)
        tried.append({"seconds": s, "recent_return": ret, "wall_s": time.perf_counter() - t0})
        if ret >= 450:
            bracket = s
            break
    value = bracket if bracket is not None else float("inf")
    emit("solve", "cartpole", 512, "seconds_to_solve", [value], settings="anchor (constant lr 3e-4)",
         target_return=450, solved_runs=int(bracket is not None), bracket=tried,
         note="upper bound: training seconds of the first from-scratch run whose final recent return was >= 450")
