#!/usr/bin/env python3
"""A reference PPO in JAX, written independently of gmi's code (PureJaxRL style: the whole training jitted, runs
vmapped, loops in lax.scan), on the tasks of bench/learning/tasks.py.

Two configurations, run side by side in one compiled program (seeds x configurations vmapped):
  plain       no normalizers; constant lr 3e-4 (the issue-34 baseline)
  normalized  running mean/std of observations (clipped to +-5) and of returns, the value head predicting
              normalized returns (rl_games' normalize_input + normalize_value); statistics over every sample seen,
              the returns' taken in before the update that uses them, the observations' after it
Both: shared-body actor-critic (ELU hidden layers, one linear head for mean and value, state-independent log-std
starting at 0; a task with discrete actions (task.num_actions) gets a categorical head instead: one logit per
action and the value, actions drawn from the softmax, no log-std and no bounds loss), horizon 16, minibatch 8192, 8 epochs, clip 0.2, gamma 0.99, GAE lambda 0.95, Adam (3e-4, eps 1e-8),
global grad-norm clip 1.0, value coefficient 0.5, rl_games' bounds loss 1e-4, advantages normalized over the
rollout, a time-limit truncation bootstrapped with gamma V(final observation).

Writes result lines (bench-spec.md format) for impl "reference" and "reference_normalized": the median, min and
max over seeds of the mean return of the episodes finished in the last logging chunk, curves of the seeds' median
against env steps and against wall-clock seconds (compilation excluded, reported as compile_s); the final policy's
deterministic evaluation (metric eval_return: the mean over EVAL_EPISODES fresh episodes acting with the mean action
or the largest logit, as gmi's end line); and for the LQ proxies the optimum gap of that evaluation (metric
optimum_gap: mean cost / optimal cost) and of the training episodes (train_optimum_gap).
Usage: reference_ppo.py --task point_reach --env-steps 1e7 --out results.jsonl [--seeds 5] [--num-envs N]
       reference_ppo.py --spec cartpole:3e6:512:32-32 --spec point_reach:2e7:4096:64-64 ... (bench/learning/run_suite.sh)
"""
import argparse, concurrent.futures, json, math, os, sys, time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tasks as task_module  # noqa: E402

try:
    import jax
    import jax.numpy as jnp
except ImportError:
    sys.exit("reference_ppo: jax: got none, need jax (pip install jax; jax[cuda] on a GPU machine)")

tree_map = jax.tree_util.tree_map
CONFIGS = ("plain", "normalized")
EVAL_EPISODES = 256  # gmi's rl::default_eval_episodes: the final policy's deterministic evaluation


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--task", default="", help="one task (with --env-steps, --num-envs, --hidden)")
    p.add_argument("--env-steps", type=float, default=0, help="env steps per run (rounded up to whole chunks)")
    p.add_argument("--num-envs", type=int, default=0, help="0: the task's gmi default")
    p.add_argument("--hidden", default="64,64")
    p.add_argument("--spec", action="append", default=[],
                   help="task:env_steps:num_envs:hidden (hidden as 64-64), repeatable: several tasks in one process, "
                        "compiled in parallel threads first, then trained one after another")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--configs", default="plain,normalized")
    p.add_argument("--horizon", type=int, default=16)
    p.add_argument("--minibatch", type=int, default=8192)
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--chunks", type=int, default=40, help="logging chunks per run (curve points)")
    p.add_argument("--compile-threads", type=int, default=8)
    p.add_argument("--wait-for", default="", help="train only once this file exists (compilation goes first)")
    p.add_argument("--stop-after", type=float, default=0,
                   help="seconds since start after which no further task starts training (0: none)")
    p.add_argument("--out", default="")
    p.add_argument("--run-id", default="")
    p.add_argument("--device", default="")
    p.add_argument("--git", default="")
    a = p.parse_args(argv)

    def hidden(text, flag):
        try:
            h = tuple(int(x) for x in text.replace("-", ",").split(","))
            assert h and all(x > 0 for x in h)
            return h
        except (ValueError, AssertionError):
            p.error(f"{flag}: got {text}, need positive widths (64,64 or 64-64)")

    specs = []
    if a.task:
        specs.append((a.task, a.env_steps, a.num_envs, hidden(a.hidden, "--hidden")))
    for item in a.spec:
        f = item.split(":")
        if len(f) != 4:
            p.error(f"--spec: got {item}, need task:env_steps:num_envs:hidden")
        try:
            specs.append((f[0], float(f[1]), int(f[2]), hidden(f[3], "--spec hidden")))
        except ValueError:
            p.error(f"--spec: got {item}, need numbers for env_steps and num_envs")
    if not specs:
        p.error("--task or --spec: got neither, need at least one task")
    for name, steps, envs, _ in specs:
        if name not in task_module.NAMES:
            p.error(f"task: got {name}, need one of {', '.join(task_module.NAMES)}")
        if not steps >= 1:
            p.error(f"env steps of {name}: got {steps:g}, need >= 1")
        if envs < 0:
            p.error(f"num_envs of {name}: got {envs}, need >= 1 (0: the task's default)")
    a.specs = specs
    if a.seeds < 1:
        p.error(f"--seeds: got {a.seeds}, need >= 1")
    if a.chunks < 1:
        p.error(f"--chunks: got {a.chunks}, need >= 1")
    bad = [c for c in a.configs.split(",") if c not in CONFIGS]
    if bad:
        p.error(f"--configs: got {bad[0]}, need plain and/or normalized")
    return a


# ---- network: shared body, head [mean (A) or logits (N) | value], log-std (continuous only) ----
def init_params(key, sizes, act_dim, discrete=False):
    """torch.nn.Linear's U(-1/sqrt(fan_in), 1/sqrt(fan_in)); the head's mean (or logit) rows scaled by 0.01."""
    params = {"w": [], "b": []}
    for i in range(len(sizes) - 1):
        key, kw, kb = jax.random.split(key, 3)
        bound = 1.0 / math.sqrt(sizes[i])
        w = jax.random.uniform(kw, (sizes[i], sizes[i + 1]), minval=-bound, maxval=bound)
        b = jax.random.uniform(kb, (sizes[i + 1],), minval=-bound, maxval=bound)
        if i == len(sizes) - 2:
            scale = jnp.concatenate([jnp.full((act_dim,), 0.01), jnp.ones((1,))])
            w, b = w * scale, b * scale
        params["w"].append(w)
        params["b"].append(b)
    if not discrete:
        params["log_std"] = jnp.zeros((act_dim,))
    return params


def forward(params, x):
    n = len(params["w"])
    for i in range(n - 1):
        x = jax.nn.elu(x @ params["w"][i] + params["b"][i])
    y = x @ params["w"][n - 1] + params["b"][n - 1]
    return y[..., :-1], y[..., -1]


def log_prob(mu, log_std, a):
    z = (a - mu) * jnp.exp(-log_std)
    return jnp.sum(-0.5 * z * z - log_std - 0.5 * math.log(2 * math.pi), axis=-1)


def categorical_log_prob(logits, a):
    """log softmax(logits)[index]; the action holds the index as a float in a[..., 0]."""
    idx = a[..., 0].astype(jnp.int32)
    return jnp.take_along_axis(jax.nn.log_softmax(logits, axis=-1), idx[..., None], axis=-1)[..., 0]


def policy_log_prob(params, out, a, discrete):
    return categorical_log_prob(out, a) if discrete else log_prob(out, params["log_std"], a)


def policy_sample(params, out, key, discrete):
    """An action (discrete: the index as a float, shape [..., 1]) and its log-probability."""
    if discrete:
        idx = jax.random.categorical(key, out, axis=-1)
        act = idx[..., None].astype(jnp.float32)
    else:
        act = out + jnp.exp(params["log_std"]) * jax.random.normal(key, out.shape)
    return act, policy_log_prob(params, out, act, discrete)


# ---- running statistics (Chan et al.'s merge), every sample kept ----
def stats_init(dim):
    return {"count": jnp.zeros(()), "mean": jnp.zeros((dim,)), "m2": jnp.zeros((dim,))}


def stats_merge(st, x):
    x = x.reshape(-1, st["mean"].shape[0])
    nb = x.shape[0]
    mb = jnp.mean(x, axis=0)
    m2b = jnp.sum((x - mb) ** 2, axis=0)
    total = st["count"] + nb
    delta = mb - st["mean"]
    return {"count": total, "mean": st["mean"] + delta * nb / total,
            "m2": st["m2"] + m2b + delta * delta * st["count"] * nb / total}


def stats_std(st):
    var = jnp.where(st["count"] > 0, st["m2"] / jnp.maximum(st["count"], 1.0), 1.0)
    return jnp.sqrt(var + 1e-5), jnp.where(st["count"] > 0, st["mean"], 0.0)


def make_program(task, a, num_envs, hidden, iterations_per_chunk):
    H, E = a.horizon, num_envs
    total = H * E
    mb_count = max(1, total // a.minibatch)
    mb_size = total // mb_count
    gamma, lam, clip = 0.99, 0.95, 0.2
    discrete = task.num_actions is not None
    outputs = task.num_actions if discrete else task.act_dim  # the policy head: logits or means
    sizes = (task.obs_dim,) + hidden + (outputs + 1,)

    def draw_reset(key):
        ku, kz = jax.random.split(key)
        u = jax.random.uniform(ku, (E, max(task.n_uniform, 1)))
        z = jax.random.normal(kz, (E, max(task.n_normal, 1)))
        return task.reset(jnp, u, z)

    def policy_in(run, obs):
        std, mean = stats_std(run["obs_stats"])
        normed = jnp.clip((obs - mean) / std, -5.0, 5.0)
        return jnp.where(run["normalized"] > 0, normed, obs)

    def value_out(run, head):
        std, mean = stats_std(run["ret_stats"])
        return jnp.where(run["normalized"] > 0, head * std[0] + mean[0], head)

    def init(key, normalized):
        kp, kr, key = jax.random.split(key, 3)
        state = draw_reset(kr)
        params = init_params(kp, sizes, outputs, discrete)
        zeros = tree_map(jnp.zeros_like, params)
        return {"params": params, "m": zeros, "v": zeros, "step": jnp.zeros(()),
                "obs_stats": stats_init(task.obs_dim), "ret_stats": stats_init(1),
                "state": state, "obs": task.observe(jnp, state), "t": jnp.zeros((E,), jnp.int32),
                "ep_ret": jnp.zeros((E,)), "key": key, "normalized": jnp.asarray(normalized, jnp.float32)}

    def env_step(run, carry, _):
        state, obs, t, ep_ret, key, fin_sum, fin_count = carry
        key, ka, kr = jax.random.split(key, 3)
        params = run["params"]
        mu, vh = forward(params, policy_in(run, obs))
        value = value_out(run, vh)
        act, logp = policy_sample(params, mu, ka, discrete)
        nxt, reward, term = task.step(jnp, state, act)
        reward = reward.astype(jnp.float32)
        t = t + 1
        trunc = (t >= task.max_steps) & ~term
        done = term | trunc
        # The time limit is not a terminal state: bootstrap from the value of the observation it cut off.
        _, v_final = forward(params, policy_in(run, task.observe(jnp, nxt)))
        boot = reward + jnp.where(trunc, gamma * value_out(run, v_final), 0.0)
        ep_ret = ep_ret + reward
        fin_sum = fin_sum + jnp.sum(jnp.where(done, ep_ret, 0.0))
        fin_count = fin_count + jnp.sum(done)
        fresh = draw_reset(kr)
        state = jnp.where(done[:, None], fresh, nxt)
        ep_ret = jnp.where(done, 0.0, ep_ret)
        t = jnp.where(done, 0, t)
        new_obs = task.observe(jnp, state)
        out = (obs, act, logp, value, boot, done)
        return (state, new_obs, t, ep_ret, key, fin_sum, fin_count), out

    def loss_fn(params, run, batch):
        obs, act, old_logp, adv, target = batch
        mu, vh = forward(params, policy_in(run, obs))
        lp = policy_log_prob(params, mu, act, discrete)
        ratio = jnp.exp(lp - old_logp)
        pg = -jnp.mean(jnp.minimum(ratio * adv, jnp.clip(ratio, 1 - clip, 1 + clip) * adv))
        vl = jnp.mean((vh - target) ** 2)
        bounds = 0.0 if discrete else jnp.mean(jnp.sum(jax.nn.relu(mu - 1.1) ** 2 + jax.nn.relu(-1.1 - mu) ** 2,
                                                       axis=-1))
        kl = jnp.mean((ratio - 1.0) - jnp.log(ratio))
        return pg + 0.5 * vl + 1e-4 * bounds, kl

    def adam(run, grads):
        leaves = jax.tree_util.tree_leaves(grads)
        norm = jnp.sqrt(sum(jnp.sum(g * g) for g in leaves))
        grads = tree_map(lambda g: g * jnp.minimum(1.0, 1.0 / (norm + 1e-6)), grads)
        step = run["step"] + 1
        m = tree_map(lambda m, g: 0.9 * m + 0.1 * g, run["m"], grads)
        v = tree_map(lambda v, g: 0.999 * v + 0.001 * g * g, run["v"], grads)
        bc1, bc2 = 1 - 0.9 ** step, 1 - 0.999 ** step
        params = tree_map(lambda p, m, v: p - a.lr * (m / bc1) / (jnp.sqrt(v / bc2) + 1e-8), run["params"], m, v)
        return dict(run, params=params, m=m, v=v, step=step)

    def iteration(carry, _):
        run, fin_sum, fin_count = carry
        env0 = (run["state"], run["obs"], run["t"], run["ep_ret"], run["key"], fin_sum, fin_count)
        env1, (obs, act, logp, value, reward, done) = jax.lax.scan(lambda c, x: env_step(run, c, x), env0, None, H)
        state, last_obs, t, ep_ret, key, fin_sum, fin_count = env1
        _, last_vh = forward(run["params"], policy_in(run, last_obs))
        last_value = value_out(run, last_vh)

        def gae(next_, x):
            adv_next, v_next = next_
            r, v, d = x
            nonterm = 1.0 - d.astype(jnp.float32)
            delta = r + gamma * v_next * nonterm - v
            adv = delta + gamma * lam * nonterm * adv_next
            return (adv, v), adv

        _, adv = jax.lax.scan(gae, (jnp.zeros((E,)), last_value), (reward, value, done), reverse=True)
        returns = adv + value
        adv = (adv - jnp.mean(adv)) / (jnp.std(adv) + 1e-8)
        # rl_games' order: the return statistics take in this rollout's returns before they normalize its targets.
        run = dict(run, ret_stats=stats_merge(run["ret_stats"], returns))
        rstd, rmean = stats_std(run["ret_stats"])
        target = jnp.where(run["normalized"] > 0, (returns - rmean[0]) / rstd[0], returns)
        flat = tuple(x.reshape((total,) + x.shape[2:]) for x in (obs, act, logp, adv, target))

        def epoch(c, _):
            run, key = c
            key, kp = jax.random.split(key)
            perm = jax.random.permutation(kp, total)[: mb_count * mb_size].reshape(mb_count, mb_size)

            def minibatch(run, idx):
                batch = tuple(x[idx] for x in flat)
                (_, kl), grads = jax.value_and_grad(loss_fn, has_aux=True)(run["params"], run, batch)
                return adam(run, grads), kl

            run, kls = jax.lax.scan(minibatch, run, perm)
            return (run, key), jnp.mean(kls)

        (run, key), kls = jax.lax.scan(epoch, (run, key), None, a.epochs)
        run = dict(run, state=state, obs=last_obs, t=t, ep_ret=ep_ret, key=key,
                   obs_stats=stats_merge(run["obs_stats"], obs))
        return (run, fin_sum, fin_count), jnp.mean(kls)

    def chunk(run):
        (run, fin_sum, fin_count), kls = jax.lax.scan(iteration, (run, jnp.zeros(()), jnp.zeros(())), None,
                                                      iterations_per_chunk)
        return run, fin_sum, fin_count, jnp.mean(kls)

    def evaluate(run, key):
        """EVAL_EPISODES fresh episodes with the mode action (the mean, or the largest logit), each to its end."""
        ku, kz = jax.random.split(key)
        u = jax.random.uniform(ku, (EVAL_EPISODES, max(task.n_uniform, 1)))
        z = jax.random.normal(kz, (EVAL_EPISODES, max(task.n_normal, 1)))

        def step(c, _):
            state, alive, ret, length, t = c
            out, _ = forward(run["params"], policy_in(run, task.observe(jnp, state)))
            act = jnp.argmax(out, axis=-1)[..., None].astype(jnp.float32) if discrete else out
            nxt, reward, term = task.step(jnp, state, act)
            ret = ret + jnp.where(alive, reward.astype(jnp.float32), 0.0)
            length = length + alive.astype(jnp.float32)
            t = t + 1
            alive = alive & ~(term | (t >= task.max_steps))
            return (nxt, alive, ret, length, t), None

        c0 = (task.reset(jnp, u, z), jnp.ones((EVAL_EPISODES,), bool), jnp.zeros((EVAL_EPISODES,)),
              jnp.zeros((EVAL_EPISODES,)), jnp.zeros((), jnp.int32))
        (_, _, ret, length, _), _ = jax.lax.scan(step, c0, None, task.max_steps)
        return jnp.mean(ret), jnp.mean(length)

    return jax.jit(jax.vmap(init)), jax.jit(jax.vmap(chunk), donate_argnums=0), jax.jit(jax.vmap(evaluate))


def summary(values):
    v = [x for x in values if x is not None and math.isfinite(x)]
    if not v:
        return None, None, None
    return float(np.median(v)), float(min(v)), float(max(v))


class Job:
    """One task: its compiled program, then its training and result lines."""

    def __init__(self, a, spec):
        name, env_steps, num_envs, hidden = spec
        self.a, self.task, self.hidden = a, task_module.make(name), hidden
        self.num_envs = num_envs or self.task.num_envs
        self.configs = a.configs.split(",")
        self.per_iteration = a.horizon * self.num_envs
        iterations = max(1, math.ceil(env_steps / self.per_iteration))
        self.chunk = max(1, math.ceil(iterations / a.chunks))
        self.chunks = math.ceil(iterations / self.chunk)
        self.iterations = self.chunks * self.chunk
        self.runs = [(c, s) for c in self.configs for s in range(a.seeds)]

    def compile(self):
        t0 = time.perf_counter()
        init, step, evaluate = make_program(self.task, self.a, self.num_envs, self.hidden, self.chunk)
        keys = jnp.stack([jax.random.PRNGKey(1000 * s + 17) for _, s in self.runs])
        flags = jnp.asarray([1.0 if c == "normalized" else 0.0 for c, _ in self.runs])
        self.init = init.lower(keys, flags).compile()
        self.args = (keys, flags)
        shapes = jax.eval_shape(init, keys, flags)
        self.step = step.lower(shapes).compile()
        self.eval_keys = jnp.stack([jax.random.PRNGKey(1000 * s + 99991) for _, s in self.runs])
        self.evaluate = evaluate.lower(shapes, self.eval_keys).compile()
        self.compile_s = time.perf_counter() - t0
        return self

    def train(self):
        a, task, runs, configs = self.a, self.task, self.runs, self.configs
        start = time.perf_counter()
        state = self.init(*self.args)
        last = [None] * len(runs)
        curves = {c: [] for c in configs}
        walls = {c: [] for c in configs}
        for k in range(self.chunks):
            state, fin_sum, fin_count, _ = self.step(state)
            fin_sum, fin_count = np.asarray(fin_sum), np.asarray(fin_count)  # waits for the chunk
            wall = time.perf_counter() - start
            for i in range(len(runs)):
                if fin_count[i] > 0:
                    last[i] = float(fin_sum[i] / fin_count[i])
            steps = (k + 1) * self.chunk * self.per_iteration
            for c in configs:
                med, _, _ = summary([last[i] for i, (cc, _) in enumerate(runs) if cc == c])
                if med is not None:
                    curves[c].append([float(steps), med])
                    walls[c].append([wall, med])
        wall_s = time.perf_counter() - start
        # The final policies without exploration noise, after the clock stopped (as gmi's end line).
        ev_ret, ev_len = (np.asarray(x) for x in self.evaluate(state, self.eval_keys))
        evals = [float(x) if math.isfinite(float(x)) else None for x in ev_ret]
        lines = []
        env_steps = float(self.iterations * self.per_iteration)
        for c in configs:
            finals = [last[i] for i, (cc, _) in enumerate(runs) if cc == c]
            med, lo, hi = summary(finals)
            base = {"bench": "learning", "task": task.name,
                    "impl": "reference" if c == "plain" else "reference_normalized", "algo": "ppo",
                    "seeds": a.seeds, "env_steps": env_steps, "num_envs": self.num_envs,
                    "network": "-".join(map(str, (task.obs_dim,) + self.hidden +
                                            (task.num_actions or task.act_dim,))),
                    "run_id": a.run_id, "device": a.device, "git": a.git, "wall_s": wall_s,
                    "compile_s": self.compile_s, "iterations": self.iterations, "seeds_run_together": len(runs)}
            lines.append(dict(base, metric="mean_return", median=med, min=lo, max=hi, per_seed=finals,
                              curve=curves[c], wall_curve=walls[c]))
            ev = [evals[i] for i, (cc, _) in enumerate(runs) if cc == c]
            emed, elo, ehi = summary(ev)
            lines.append(dict(base, metric="eval_return", median=emed, min=elo, max=ehi, per_seed=ev,
                              eval_episodes=EVAL_EPISODES,
                              eval_length=float(np.mean([ev_len[i] for i, (cc, _) in enumerate(runs) if cc == c]))))
            if task.optimum is not None:
                # Cost over the optimum's: of the deterministic evaluation (the Riccati optimum is a deterministic
                # controller's), and of the training episodes (exploration noise included) as before.
                for metric, values in (("optimum_gap", ev), ("train_optimum_gap", finals)):
                    gaps = [f / task.optimum if f is not None else None for f in values]
                    gmed, glo, ghi = summary(gaps)
                    lines.append(dict(base, metric=metric, median=gmed, min=glo, max=ghi, per_seed=gaps,
                                      optimum=task.optimum))
            print(f"reference_ppo: {task.name} {c}: median return {med} (min {lo}, max {hi}) after {env_steps:.3g} "
                  f"env steps, {wall_s:.1f} s ({self.compile_s:.1f} s compiling before); deterministic "
                  f"evaluation {emed}", flush=True)
        return lines


def main(argv=None):
    a = parse(argv)
    jobs = [Job(a, spec) for spec in a.specs]
    t0 = time.perf_counter()
    # XLA compiles outside the GIL: the tasks' programs compile side by side.
    with concurrent.futures.ThreadPoolExecutor(max(1, a.compile_threads)) as pool:
        list(pool.map(Job.compile, jobs))
    print(f"reference_ppo: {len(jobs)} programs compiled in {time.perf_counter() - t0:.1f} s", flush=True)
    if a.wait_for:
        while not os.path.exists(a.wait_for):
            time.sleep(0.2)
    lines = []
    for job in jobs:
        if a.stop_after > 0 and time.perf_counter() - t0 > a.stop_after:
            print(f"reference_ppo: {job.task.name}: skipped, --stop-after {a.stop_after:g} s passed", flush=True)
            continue
        out = job.train()
        lines += out
        if a.out:
            with open(a.out, "a") as f:
                for line in out:
                    f.write(json.dumps(line) + "\n")
    return lines


if __name__ == "__main__":
    main()
