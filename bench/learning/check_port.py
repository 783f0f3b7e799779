#!/usr/bin/python3
"""Replays gmi's env trajectories (gmi.tool.env_trajectories' JSON) with the Python port (tasks.py, numpy) and
fails on the first step whose observation, reward or termination differs. Each step starts from the port's own
previous state, so a wrong equation shows within a step or two. Tolerance: |a - b| <= 1e-4 (1 + |b|) for
observations and rewards (sin/cos/exp/sqrt of numpy's float32 against glibc's differ by an ulp or so, and a
few dozen steps can amplify that); proxy tables within 1e-6 (1 + |b|) (numpy's float32 log/cos in the Box-Muller
normals against glibc's), and the Riccati optimum to 1e-6 relative.
Usage: check_port.py <trajectories.json>
"""
import json, os, sys

try:
    import numpy as np
except ImportError:
    sys.exit("check_port: numpy: got none, need python3-numpy (scripts/install-deps installs it)")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tasks  # noqa: E402


def close(a, b, tol):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return bool(np.all(np.abs(a - b) <= tol * (1.0 + np.abs(b)))), float(np.max(np.abs(a - b), initial=0.0))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: check_port.py <trajectories.json>")
    data = json.load(open(sys.argv[1]))
    missing = [n for n in tasks.NAMES if n not in data]
    extra = [n for n in data if n not in tasks.NAMES]
    if missing or extra:
        sys.exit(f"check_port: tasks: gmi has {sorted(data)}, the port {tasks.NAMES}; missing {missing}, extra {extra}")
    failures = []
    for name in tasks.NAMES:
        d = data[name]
        task = tasks.make(name)
        if "table" in d:
            ok, err = close(task.table, d["table"], 1e-6)
            if not ok:
                failures.append(f"{name}: model table differs by up to {err:.3g}")
                continue
            opt = task.optimum
            if abs(opt - d["optimum"]) > 1e-6 * abs(d["optimum"]):
                failures.append(f"{name}: optimum got {opt:.9g}, need {d['optimum']:.9g}")
        state = task.from_words(np.asarray(d["state_words"], dtype=np.uint32))
        if state.shape != (task.state_dim,):
            failures.append(f"{name}: state words: got {state.shape[0]}, need {task.state_dim}")
            continue
        worst = 0.0
        for t, a in enumerate(d["actions"]):
            obs = task.observe(np, state)
            ok, err = close(obs, d["obs"][t], 1e-4)
            worst = max(worst, err)
            if not ok:
                failures.append(f"{name}: step {t}: observation {np.asarray(obs).tolist()}, gmi {d['obs'][t]}")
                break
            state, reward, term = task.step(np, state, np.asarray(a, dtype=np.float32))
            ok, err = close(reward, d["rewards"][t], 1e-4)
            if not ok:
                failures.append(f"{name}: step {t}: reward {float(reward):.9g}, gmi {d['rewards'][t]:.9g}")
                break
            if bool(term) != d["terminated"][t]:
                failures.append(f"{name}: step {t}: terminated {bool(term)}, gmi {d['terminated'][t]}")
                break
        print(f"check_port: {name}: {len(d['actions'])} steps, largest observation difference {worst:.2g}")
    if failures:
        print("\n".join("check_port: FAIL " + f for f in failures))
        sys.exit(1)
    print(f"check_port: {len(tasks.NAMES)} tasks match")


if __name__ == "__main__":
    main()
