#!/usr/bin/env python3
"""What bounds PPO's optimum gap on the LQ proxies, from the tasks' own matrices (bench/learning/tasks.py), no
training: per proxy the Riccati optimum; the gap of the gamma = 0.99 optimal controller (the discount PPO uses);
the observations' standard deviation over 1000-step episodes under the optimal controller (what a running
observation normalizer converges to) and the share of initial-state components beyond 5 of it (clamped by a
normalizer's clip of 5); the gaps of the zero policy and of the optimal controller fed states clamped to
+-c (a policy whose inputs saturate); and the training-return gap that Gaussian exploration noise of std sigma
adds by itself (sigma^2 (trace R + trace B'PB) per step); the share of the optimal first actions beyond +-1.1 and
the gap of the optimal controller with its actions clamped there (where the bounds loss holds PPO's means).
Usage: lq_analysis.py [task ...] (default franka_cabinet_proxy anymal_proxy ant_proxy); needs numpy.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tasks  # noqa: E402


def dare(a, b, q, r, gamma=1.0, tol=1e-12):
    p = np.diag(q)
    for _ in range(20000):
        pa, pb = p @ a, p @ b
        k = np.linalg.solve(np.diag(r) / gamma + b.T @ pb, b.T @ pa)
        nxt = np.diag(q) + gamma * (a.T @ pa - (a.T @ pb) @ k)
        done = np.max(np.abs(nxt - p)) <= tol * np.max(np.abs(nxt))
        p = nxt
        if done:
            break
    return p, k


def main():
    names = sys.argv[1:] or ["franka_cabinet_proxy", "anymal_proxy", "ant_proxy"]
    for name in names:
        t = tasks.make(name)
        a, b, q, r = t._model
        n, m = b.shape
        p, k = dare(a, b, q, r)
        opt = np.trace(p)
        _, kg = dare(a, b, q, r, gamma=0.99)
        x0 = np.random.default_rng(0).standard_normal((4000, n))

        def gap(policy, steps=300):  # mean cost from x0 over the optimum (the tail after 300 steps is below 1e-30)
            x, c = x0.copy(), np.zeros(len(x0))
            for _ in range(steps):
                u = policy(x)
                c += (x * x) @ q + (u * u) @ r
                x = x @ a.T + u @ b.T
            return c.mean() / opt

        acl = a - b @ k
        s, mpow = np.zeros((n, n)), np.eye(n)
        for _ in range(1000):
            s += mpow @ mpow.T
            mpow = acl @ mpow
        std = np.sqrt(np.diag(s) / 1000 + 1e-5)
        beyond = float(np.mean(np.abs(x0) > 5 * std))
        noise = np.trace(np.diag(r)) + np.trace(b.T @ p @ b)
        bounded = gap(lambda x: np.clip(-x @ k.T, -1.1, 1.1))  # the bounds loss pulls means inside +-1.1
        beyond_bound = float(np.mean(np.abs(x0 @ k.T) > 1.1))
        clipped = " ".join(f"{c}: {gap(lambda x, c=c: -np.clip(x, -c, c) @ k.T):.3f}" for c in (0.2, 0.5, 1.0, 2.0))
        print(f"{name}: n {n}, m {m}, optimum {-opt:.3f}; gamma 0.99 controller gap {gap(lambda x: -x @ kg.T):.4f}; "
              f"obs std under the optimum {np.median(std):.4f} (median over components); x0 components beyond "
              f"5 std {beyond:.3f}; gap of the zero policy {gap(lambda x: np.zeros((len(x), m))):.3f}; of the "
              f"optimal controller on states clamped to +-c, {clipped}; training-return gap from exploration "
              f"noise alone, sigma 0.1 {1 + 1000 * 0.01 * noise / opt:.2f}, sigma 0.03 {1 + 1000 * 9e-4 * noise / opt:.2f}; "
              f"first optimal actions beyond +-1.1 {beyond_bound:.3f}, the optimal controller's actions clamped to "
              f"+-1.1 {bounded:.3f}",
              flush=True)


if __name__ == "__main__":
    main()
