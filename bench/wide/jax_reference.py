# The jitted JAX reference of issue 37, run beside gmi.bench.wide: the same actor-critic MLPs (ELU body, mu rows
# and a value row, a state-independent log_std), the same linear proxy envs (sizes, substeps, cost, termination,
# auto-reset; seeded with numpy, so the matrices differ from gmi's but the work per step is the same), the same
# PPO settings (horizon 16, minibatch 8192, 8 epochs, clip 0.2, Adam 3e-4 with global-norm clip 1). Envs are
# vmapped, steps lax.scan'ned, everything under jit; matrix products in TF32 (or bf16 with fp32 accumulation).
# Usage: python3 jax_reference.py --run-id ID [--out FILE] [--precisions tf32,bf16] [--reps 5]
import argparse, json, statistics, time

import numpy as np
import jax
import jax.numpy as jnp

p = argparse.ArgumentParser()
p.add_argument("--run-id", default=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
p.add_argument("--git", default="unknown")
p.add_argument("--out")
p.add_argument("--reps", type=int, default=5)
p.add_argument("--seconds", type=float, default=0.3)
p.add_argument("--precisions", default="tf32,bf16")
p.add_argument("--envs", default="4096,16384")
p.add_argument("--training-envs", type=int, default=4096)
p.add_argument("--cases", default="serving,training")
a = p.parse_args()

jax.config.update("jax_default_matmul_precision", "tensorfloat32")
device = jax.devices()[0].device_kind

# name: (obs, act, substeps, hidden)
NETS = {"shadow_hand_mlp": (211, 20, 16, (512, 512, 512, 256)),
        "humanoid_mlp": (108, 21, 8, (200, 400, 100)),
        "ant_mlp": (60, 8, 8, (256, 128, 64))}
STATE_LIMIT, MAX_STEPS = 100.0, 1000


def proxy_model(n, m, substeps, seed=1):
    r = np.random.default_rng(seed)
    g = r.standard_normal((n, n))
    h = 0.5 / substeps
    a_sub = (1 - h) * np.eye(n) + 0.9 * h * g / (np.linalg.norm(g, 2) * 1.01)
    b_sub = h * r.standard_normal((n, m)) / np.sqrt(m)
    q = 0.5 + r.random(n)
    rr = 0.05 + 0.1 * r.random(m)
    return tuple(jnp.asarray(x, jnp.float32) for x in (a_sub, b_sub, q, rr))


def init_params(key, sizes, act):
    params = []
    for i, o in zip(sizes[:-1], sizes[1:]):
        key, k1, k2 = jax.random.split(key, 3)
        bound = 1.0 / np.sqrt(i)
        params.append((jax.random.uniform(k1, (i, o), jnp.float32, -bound, bound),
                       jax.random.uniform(k2, (o,), jnp.float32, -bound, bound)))
    return {"layers": params, "log_std": jnp.zeros((act,), jnp.float32)}


def make_fns(obs, act, substeps, bf16):
    a_sub, b_sub, q, r = proxy_model(obs, act, substeps)

    def dense(x, w):
        if bf16:
            return jnp.dot(x.astype(jnp.bfloat16), w.astype(jnp.bfloat16), preferred_element_type=jnp.float32)
        return x @ w

    def forward(params, x):  # one sample; vmapped by the callers
        h = x
        layers = params["layers"]
        for w, b in layers[:-1]:
            h = jax.nn.elu(dense(h, w) + b)
        w, b = layers[-1]
        y = dense(h, w) + b
        return y[:act], y[act]

    def env_step(x, steps, u, key):  # one env: cost, substeps, termination and reset
        cost = jnp.sum(q * x * x) + jnp.sum(r * u * u)
        def sub(s, _):
            return s @ a_sub.T + u @ b_sub.T, None
        x2, _ = jax.lax.scan(sub, x, None, length=substeps)
        steps = steps + 1
        done = jnp.any(jnp.abs(x2) > STATE_LIMIT) | (steps >= MAX_STEPS)
        fresh = jax.random.normal(key, (obs,))
        return jnp.where(done, fresh, x2), jnp.where(done, 0, steps), -cost, done

    def policy_step(params, mean, inv_std, x, steps, key):  # normalize, MLP, sample, env step
        k1, k2 = jax.random.split(key)
        mu, v = forward(params, (x - mean) * inv_std)
        std = jnp.exp(params["log_std"])
        u = mu + std * jax.random.normal(k1, mu.shape)
        logp = jnp.sum(-0.5 * ((u - mu) / std) ** 2 - params["log_std"] - 0.5 * jnp.log(2 * jnp.pi))
        x2, s2, rew, done = env_step(x, steps, u, k2)
        return x2, s2, u, logp, v, rew, done

    return forward, policy_step


def timed(fn, units):
    fn()  # compile
    t0 = time.perf_counter(); k = 1
    fn()
    while time.perf_counter() - t0 < 0.05 and k < 1 << 16:
        k *= 2; t0 = time.perf_counter()
        for _ in range(k): fn()
    per = (time.perf_counter() - t0) / k
    calls = max(1, int(a.seconds / max(per, 1e-9)))
    rates = []
    for _ in range(a.reps):
        t = time.perf_counter()
        for _ in range(calls): fn()
        rates.append(units * calls / (time.perf_counter() - t))
    return rates


def emit(rates, **fields):
    line = {"bench": "wide", "impl": "jax_reference", "metric": "steps_per_s", "median": statistics.median(rates),
            "min": min(rates), "max": max(rates), "reps": a.reps, "run_id": a.run_id, "git": a.git,
            "device": device, "gmis_per_gpu": 1, **fields}
    print(json.dumps(line), flush=True)
    if a.out:
        with open(a.out, "a") as f:
            f.write(json.dumps(line) + "\n")


def serving(name, n, precision, window=20):
    obs, act, substeps, hidden = NETS[name]
    forward, policy_step = make_fns(obs, act, substeps, precision == "bf16")
    params = init_params(jax.random.PRNGKey(0), (obs, *hidden, act + 1), act)
    mean, inv_std = jnp.zeros((obs,)), jnp.ones((obs,))
    vstep = jax.vmap(policy_step, in_axes=(None, None, None, 0, 0, 0))

    @jax.jit
    def run(carry):
        def body(c, _):
            x, steps, key = c
            key, sub = jax.random.split(key)
            x, steps, *_ = vstep(params, mean, inv_std, x, steps, jax.random.split(sub, n))
            return (x, steps, key), None
        return jax.lax.scan(body, carry, None, length=window)[0]

    state = [(jax.random.normal(jax.random.PRNGKey(1), (n, obs)), jnp.zeros((n,), jnp.int32), jax.random.PRNGKey(2))]
    def once():
        state[0] = run(state[0]); jax.block_until_ready(state[0])
    macs = sum(i * o for i, o in zip((obs, *hidden), (*hidden, act + 1)))
    rates = timed(once, n * window)
    emit(rates, case="serving", net=name, precision=precision, num_envs=n,
         tflops=2.0 * macs * statistics.median(rates) / 1e12)


def training(name, n, horizon=16, minibatch=8192, epochs=8, lr=3e-4, clip=0.2, gamma=0.99, lam=0.95):
    obs, act, substeps, hidden = NETS[name]
    forward, policy_step = make_fns(obs, act, substeps, False)
    vstep = jax.vmap(policy_step, in_axes=(None, None, None, 0, 0, 0))
    vforward = jax.vmap(forward, in_axes=(None, 0))
    total = horizon * n
    mb = min(minibatch, total)
    nmb = total // mb

    def loss_fn(params, o, u, logp_old, adv, ret):
        mu, v = vforward(params, o)
        std = jnp.exp(params["log_std"])
        logp = jnp.sum(-0.5 * ((u - mu) / std) ** 2 - params["log_std"] - 0.5 * jnp.log(2 * jnp.pi), axis=-1)
        ratio = jnp.exp(logp - logp_old)
        pl = -jnp.mean(jnp.minimum(ratio * adv, jnp.clip(ratio, 1 - clip, 1 + clip) * adv))
        return pl + 0.5 * jnp.mean((v - ret) ** 2)

    grad_fn = jax.grad(loss_fn)

    def adam(params, m, v, g, t):
        norm = jnp.sqrt(sum(jnp.sum(x * x) for x in jax.tree_util.tree_leaves(g)))
        g = jax.tree_util.tree_map(lambda x: x * jnp.minimum(1.0, 1.0 / (norm + 1e-6)), g)
        m = jax.tree_util.tree_map(lambda a_, b_: 0.9 * a_ + 0.1 * b_, m, g)
        v = jax.tree_util.tree_map(lambda a_, b_: 0.999 * a_ + 0.001 * b_ * b_, v, g)
        c1, c2 = 1 - 0.9 ** t, 1 - 0.999 ** t
        params = jax.tree_util.tree_map(lambda p_, m_, v_: p_ - lr * (m_ / c1) / (jnp.sqrt(v_ / c2) + 1e-8), params, m, v)
        return params, m, v

    @jax.jit
    def iterate(s):
        params, m, v, t, x, steps, mean, var, count, key = s
        inv_std = 1.0 / jnp.sqrt(var + 1e-8)
        def collect(c, _):
            x, steps, key = c
            key, sub = jax.random.split(key)
            o = (x - mean) * inv_std
            x2, s2, u, logp, val, rew, done = vstep(params, mean, inv_std, x, steps, jax.random.split(sub, n))
            return (x2, s2, key), (o, u, logp, val, rew, done, x)
        (x, steps, key), (o, u, logp, val, rew, done, raw) = jax.lax.scan(collect, (x, steps, key), None, length=horizon)
        _, last_v = vforward(params, (x - mean) * inv_std)
        def gae(c, tr):
            adv_next, v_next = c
            rw, d, vv = tr
            delta = rw + gamma * v_next * (1 - d) - vv
            adv = delta + gamma * lam * (1 - d) * adv_next
            return (adv, vv), adv
        _, adv = jax.lax.scan(gae, (jnp.zeros(n), last_v), (rew, done.astype(jnp.float32), val), reverse=True)
        ret = adv + val
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        flat = [z.reshape(total, *z.shape[2:]) for z in (o, u, logp, adv, ret)]
        def epoch(c, k):
            params, m, v, t = c
            perm = jax.random.permutation(k, total)
            def step(c2, idx):
                params, m, v, t = c2
                g = grad_fn(params, *[z[idx] for z in flat])
                params, m, v = adam(params, m, v, g, t + 1)
                return (params, m, v, t + 1), None
            c, _ = jax.lax.scan(step, (params, m, v, t), perm[: nmb * mb].reshape(nmb, mb))
            return c, None
        key, ek = jax.random.split(key)
        (params, m, v, t), _ = jax.lax.scan(epoch, (params, m, v, t), jax.random.split(ek, epochs))
        # observation statistics take in the rollout (parallel merge of mean/var)
        r2 = raw.reshape(total, obs)
        bm, bv, bc = r2.mean(0), r2.var(0), float(total)
        tot = count + bc
        d = bm - mean
        mean = mean + d * bc / tot
        var = (var * count + bv * bc + d * d * count * bc / tot) / tot
        return params, m, v, t, x, steps, mean, var, tot, key

    params = init_params(jax.random.PRNGKey(0), (obs, *hidden, act + 1), act)
    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    state = [(params, zeros, zeros, 0, jax.random.normal(jax.random.PRNGKey(1), (n, obs)), jnp.zeros((n,), jnp.int32),
              jnp.zeros(obs), jnp.ones(obs), 1e-4, jax.random.PRNGKey(3))]
    def once():
        state[0] = iterate(state[0]); jax.block_until_ready(state[0])
    macs = sum(i * o for i, o in zip((obs, *hidden), (*hidden, act + 1)))
    rates = timed(once, total)
    emit(rates, case="training", net=name, precision="tf32", num_envs=n, horizon=horizon, epochs=epochs,
         minibatch=mb, tflops=2.0 * macs * (1 + 3 * epochs) * statistics.median(rates) / 1e12)


cases = a.cases.split(",")
if "serving" in cases:
    for name in NETS:
        for n in [int(e) for e in a.envs.split(",")]:
            for prec in a.precisions.split(","):
                serving(name, n, prec)
if "training" in cases:
    for name in NETS:
        training(name, a.training_envs)
