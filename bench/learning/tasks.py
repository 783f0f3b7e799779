"""gmi's learning-suite tasks ported to Python, written once for numpy and jax.numpy (pass the module as xp).

Each task's state is one float32 array [..., state_dim] whose columns follow the field order of the C++ struct
(include/gmi/envs/*.hpp; integer fields such as a step count are held as floats); every function works on any
leading batch shape, so jax.vmap is not needed. The port is checked step by step against gmi's host envs by
bench/learning/check_port.py (CTest envs.python_port.matches_gmi). Resets draw from the same distributions as
gmi's but from the caller's random numbers (uniforms in [0, 1) and standard normals), not from gmi's Philox
streams: only the LQ proxies' fixed model matrices are rebuilt bit for bit from gmi's Philox generator.

A task: name, obs_dim, act_dim, state_dim, max_steps, num_envs (gmi's default count), n_uniform, n_normal,
num_actions (a discrete task's choice count, its action the index as a float in a[..., 0]; None: continuous),
reset(xp, u, z) -> state, step(xp, s, a) -> (state, reward, terminated), observe(xp, s) -> obs,
from_words(words) -> state (numpy; gmi's raw 32-bit state words), optimum (LQ proxies: best mean return).
"""
import math

import numpy as np

PI = 3.14159265358979


def _clip1(xp, a):
    return xp.clip(a, -1.0, 1.0)


def _f32(words):
    return np.asarray(words, dtype=np.uint32).view(np.float32).astype(np.float32)


def _with_ints(words, int_columns):
    """gmi's state words as float32 columns, the int32 fields converted to float."""
    w = np.asarray(words, dtype=np.uint32)
    out = w.view(np.float32).astype(np.float32).copy()
    for c in int_columns:
        out[..., c] = w[..., c].view(np.int32).astype(np.float32)
    return out


class Task:
    n_uniform = 0
    n_normal = 0
    num_actions = None
    num_envs = 4096
    optimum = None
    terminates = True

    def from_words(self, words):
        return _f32(words)


class Cartpole(Task):
    name, obs_dim, act_dim, state_dim, max_steps, num_envs, n_uniform = "cartpole", 4, 1, 5, 500, 512, 4

    def reset(self, xp, u, z):
        s4 = (u[..., :4] - 0.5) * 0.2
        return xp.concatenate([s4, xp.zeros_like(s4[..., :1])], axis=-1)

    def step(self, xp, s, a):
        x, xd, th, thd, t = (s[..., i] for i in range(5))
        f = _clip1(xp, a[..., 0]) * 10.0
        mp, l, total = 0.1, 0.5, 1.1
        ct, st = xp.cos(th), xp.sin(th)
        tmp = (f + mp * l * thd * thd * st) / total
        tha = (9.8 * st - ct * tmp) / (l * (4.0 / 3.0 - mp * ct * ct / total))
        xa = tmp - mp * l * tha * ct / total
        dt = 1.0 / 60.0
        x, xd, th, thd, t = x + dt * xd, xd + dt * xa, th + dt * thd, thd + dt * tha, t + 1.0
        reward = 1.0 - th * th - 0.01 * xp.abs(xd) - 0.005 * xp.abs(thd)
        fell = (xp.abs(x) > 3.0) | (xp.abs(th) > 1.57079632679489661923)
        reward = xp.where(fell & (t < self.max_steps), -2.0, reward)
        return xp.stack([x, xd, th, thd, t], axis=-1), reward, fell

    def observe(self, xp, s):
        return s[..., :4]

    def from_words(self, words):
        return _with_ints(words, [4])


class CartpoleDiscrete(Task):
    """Gym's CartPole-v1: push left (index 0) or right (1) with 10 N, reward 1 a step, 12 degrees / 2.4 m limits."""
    name, obs_dim, act_dim, state_dim, max_steps, num_envs, n_uniform = "cartpole_discrete", 4, 1, 4, 500, 4096, 4
    num_actions = 2
    THETA_LIMIT = float(np.float32(12.0) * np.float32(2.0) * np.float32(PI) / np.float32(360.0))

    def reset(self, xp, u, z):
        return -0.05 + 0.1 * u[..., :4]

    def step(self, xp, s, a):
        x, xd, th, thd = (s[..., i] for i in range(4))
        f = xp.where(a[..., 0] >= 0.5, 10.0, -10.0)
        mp, l, total = 0.1, 0.5, 1.1
        ct, st = xp.cos(th), xp.sin(th)
        tmp = (f + mp * l * thd * thd * st) / total
        tha = (9.8 * st - ct * tmp) / (l * (4.0 / 3.0 - mp * ct * ct / total))
        xa = tmp - mp * l * tha * ct / total
        dt = 0.02
        x, xd, th, thd = x + dt * xd, xd + dt * xa, th + dt * thd, thd + dt * tha
        fell = (x < -2.4) | (x > 2.4) | (th < -self.THETA_LIMIT) | (th > self.THETA_LIMIT)
        return xp.stack([x, xd, th, thd], axis=-1), xp.ones_like(x), fell

    def observe(self, xp, s):
        return s[..., :4]


class Pendulum(Task):
    name, obs_dim, act_dim, state_dim, max_steps, num_envs, n_uniform = "pendulum", 3, 1, 2, 200, 512, 2
    terminates = False

    def reset(self, xp, u, z):
        return xp.stack([-PI + 2 * PI * u[..., 0], -1.0 + 2.0 * u[..., 1]], axis=-1)

    def step(self, xp, s, a):
        th, thd = s[..., 0], s[..., 1]
        u = _clip1(xp, a[..., 0]) * 2.0
        w = th - 2.0 * PI * xp.floor((th + PI) / (2.0 * PI))
        cost = w * w + 0.1 * thd * thd + 0.001 * u * u
        acc = 3.0 * 10.0 / 2.0 * xp.sin(th) + 3.0 * u
        thd = xp.clip(thd + acc * 0.05, -8.0, 8.0)
        th = th + thd * 0.05
        return xp.stack([th, thd], axis=-1), -cost, xp.zeros_like(cost, dtype=bool)

    def observe(self, xp, s):
        return xp.stack([xp.cos(s[..., 0]), xp.sin(s[..., 0]), s[..., 1]], axis=-1)


_LEG_COS = (1.0, -0.5, -0.5)
_LEG_SIN = (0.0, 0.86602540378, -0.86602540378)


class BallBalance(Task):
    """State: leg[3], leg_vel[3], leg_acc[3], force[3], bx, by, bvx, bvy."""
    name, obs_dim, act_dim, state_dim, max_steps, n_uniform = "ball_balance", 24, 3, 16, 500, 7
    R, LMIN, LMAX, DT = 0.2, 0.3, 0.7, 0.01

    def _w(self, i, x, y):
        return 1.0 / 3.0 + 2.0 / (3.0 * self.R) * (x * _LEG_COS[i] + y * _LEG_SIN[i])

    def _grad(self, z):
        k = 2.0 / (3.0 * self.R)
        return (k * (z[0] * _LEG_COS[0] + z[1] * _LEG_COS[1] + z[2] * _LEG_COS[2]),
                k * (z[0] * _LEG_SIN[0] + z[1] * _LEG_SIN[1] + z[2] * _LEG_SIN[2]))

    def reset(self, xp, u, z):
        mid = 0.5 * (self.LMIN + self.LMAX)
        legs = [mid + (-0.02 + 0.04 * u[..., i]) for i in range(3)]
        zero = xp.zeros_like(u[..., 0])
        ball = [-0.1 + 0.2 * u[..., 3], -0.1 + 0.2 * u[..., 4], -0.2 + 0.4 * u[..., 5], -0.2 + 0.4 * u[..., 6]]
        return xp.stack(legs + [zero] * 9 + ball, axis=-1)

    def step(self, xp, s, a):
        leg = [s[..., i] for i in range(3)]
        vel = [s[..., 3 + i] for i in range(3)]
        lacc = [s[..., 6 + i] for i in range(3)]
        bx, by, bvx, bvy = (s[..., 12 + i] for i in range(4))
        force = [_clip1(xp, a[..., i]) * 10.0 for i in range(3)]
        h = self.DT / 2.0
        for _ in range(2):
            gx, gy = self._grad(leg)
            lift = sum(self._w(i, bx, by) * lacc[i] for i in range(3))
            g_eff = xp.maximum(9.81 + lift, 0.0)
            k = -(5.0 / 7.0) * g_eff / (1.0 + gx * gx + gy * gy)
            bvx = bvx + h * k * gx
            bvy = bvy + h * k * gy
            bx = bx + h * bvx
            by = by + h * bvy
            for i in range(3):
                acc = (force[i] - 2.0 * vel[i]) / 1.0
                v = vel[i] + h * acc
                zz = leg[i] + h * v
                hit = (zz < self.LMIN) | (zz > self.LMAX)
                zz = xp.where(hit, xp.clip(zz, self.LMIN, self.LMAX), zz)
                v = xp.where(hit, 0.0, v)
                lacc[i] = (v - vel[i]) / h
                vel[i] = v
                leg[i] = zz
        d2 = bx * bx + by * by
        speed = xp.sqrt(bvx * bvx + bvy * bvy)
        reward = 1.0 / (1.0 + d2) * (1.0 / (1.0 + speed))
        return xp.stack(leg + vel + lacc + force + [bx, by, bvx, bvy], axis=-1), reward, d2 > 0.25 * 0.25

    def observe(self, xp, s):
        leg = [s[..., i] for i in range(3)]
        vel = [s[..., 3 + i] for i in range(3)]
        lacc = [s[..., 6 + i] for i in range(3)]
        force = [s[..., 9 + i] for i in range(3)]
        bx, by, bvx, bvy = (s[..., 12 + i] for i in range(4))
        gx, gy = self._grad(leg)
        gxd, gyd = self._grad(vel)
        w = [self._w(i, bx, by) for i in range(3)]
        bz = sum(w[i] * leg[i] for i in range(3))
        bz_dot = gx * bvx + gy * bvy + sum(w[i] * vel[i] for i in range(3))
        lift = sum(w[i] * lacc[i] for i in range(3))
        h_dot = sum(vel[i] / 3.0 for i in range(3))
        g_eff = xp.maximum(9.81 + lift, 0.0)
        inv_n = 1.0 / xp.sqrt(1.0 + gx * gx + gy * gy)
        cols = (leg + vel + [bx, by, bz, bvx, bvy, bz_dot] + [f / 10.0 for f in force] +
                [w[i] * 0.2 * g_eff for i in range(3)] + [-gx * inv_n, -gy * inv_n, inv_n, gxd, gyd, h_dot])
        return xp.stack(cols, axis=-1)


# Rigid body (include/gmi/envs/detail/rigid_body.hpp): columns pos 0-2, vel 3-5, rot (w, x, y, z) 6-9, ang_vel 10-12.
def _cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def _rotate(q, v):
    u = (q[1], q[2], q[3])
    c = _cross(u, v)
    t = (2.0 * c[0], 2.0 * c[1], 2.0 * c[2])
    c2 = _cross(u, t)
    return tuple(v[i] + q[0] * t[i] + c2[i] for i in range(3))


def _integrate(xp, b, force, torque, mass, inertia, gravity, dt):
    pos, vel, rot, w = b
    rf = _rotate(rot, force)
    acc = (rf[0] / mass, rf[1] / mass, rf[2] / mass - gravity)
    vel = tuple(vel[i] + dt * acc[i] for i in range(3))
    pos = tuple(pos[i] + dt * vel[i] for i in range(3))
    iw = tuple(inertia[i] * w[i] for i in range(3))
    cw = _cross(w, iw)
    rhs = tuple(torque[i] - cw[i] for i in range(3))
    w = tuple(w[i] + dt * (rhs[i] / inertia[i]) for i in range(3))
    n = w
    q = rot
    d = (-q[1] * n[0] - q[2] * n[1] - q[3] * n[2], q[0] * n[0] + q[2] * n[2] - q[3] * n[1],
         q[0] * n[1] + q[3] * n[0] - q[1] * n[2], q[0] * n[2] + q[1] * n[1] - q[2] * n[0])
    r = tuple(q[i] + 0.5 * dt * d[i] for i in range(4))
    inv = 1.0 / xp.sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2] + r[3] * r[3])
    return pos, vel, tuple(r[i] * inv for i in range(4)), w


def _body(s):
    c = [s[..., i] for i in range(13)]
    return tuple(c[0:3]), tuple(c[3:6]), tuple(c[6:10]), tuple(c[10:13])


def _hover_reward(b, target):
    pos, vel, rot, w = b
    e = [target[i] - pos[i] for i in range(3)]
    pos_r = 1.0 / (1.0 + e[0] * e[0] + e[1] * e[1] + e[2] * e[2])
    zero = pos[0] * 0.0
    up = _rotate(rot, (zero, zero, zero + 1.0))[2]
    tilt = abs(1.0 - up)
    up_r = 1.0 / (1.0 + tilt * tilt)
    spin = abs(w[2])
    spin_r = 1.0 / (1.0 + spin * spin)
    return pos_r + pos_r * (up_r + spin_r)


def _body_reset(xp, u, target_z):
    pos = [-0.5 + u[..., 0], -0.5 + u[..., 1], target_z + (-0.5 + u[..., 2])]
    vel = [-0.2 + 0.4 * u[..., 3 + i] for i in range(3)]
    one = xp.ones_like(u[..., 0])
    rot = [one, 0.0 * one, 0.0 * one, 0.0 * one]
    w = [-0.2 + 0.4 * u[..., 6 + i] for i in range(3)]
    return pos + vel + rot + w


def _out(xp, pos, target_z):
    e2 = pos[0] * pos[0] + pos[1] * pos[1] + (target_z - pos[2]) * (target_z - pos[2])
    return (e2 > 9.0) | (pos[2] < 0.3)


def _body_obs(b, target_z):
    pos, vel, rot, w = b
    return [-pos[0], -pos[1], target_z - pos[2]] + list(rot) + list(vel) + list(w)


class Quadcopter(Task):
    name, obs_dim, act_dim, state_dim, max_steps, num_envs, n_uniform = "quadcopter", 21, 12, 21, 500, 8192, 9

    def reset(self, xp, u, z):
        zero = xp.zeros_like(u[..., 0])
        return xp.stack(_body_reset(xp, u, 1.0) + [zero] * 8, axis=-1)

    def step(self, xp, s, a):
        tilt = [s[..., 13 + j] for j in range(8)]
        tilt = [tilt[j] + (_clip1(xp, a[..., j]) * 0.5 - tilt[j]) * 0.2 for j in range(8)]  # dt / servo_time
        h = 0.2 * 0.70710678
        hubs = [(h, h, 0.0), (-h, h, 0.0), (-h, -h, 0.0), (h, -h, 0.0)]
        zero = s[..., 0] * 0.0
        force = (zero, zero, zero)
        torque = (zero, zero, zero)
        for k in range(4):
            thrust = xp.clip((a[..., 8 + k] + 1.0) * 0.5, 0.0, 1.0) * 5.0
            ta, tb = tilt[2 * k], tilt[2 * k + 1]
            axis = (xp.cos(ta) * xp.sin(tb), -xp.sin(ta), xp.cos(ta) * xp.cos(tb))
            f = tuple(thrust * axis[i] for i in range(3))
            spin = 1.0 if k % 2 == 0 else -1.0
            hub = tuple(zero + hubs[k][i] for i in range(3))
            c = _cross(hub, f)
            force = tuple(force[i] + f[i] for i in range(3))
            torque = tuple(torque[i] + c[i] + (spin * 0.02) * f[i] for i in range(3))
        b = _integrate(xp, _body(s), force, torque, 1.0, (0.01, 0.01, 0.02), 9.81, 0.01)
        cols = list(b[0]) + list(b[1]) + list(b[2]) + list(b[3]) + tilt
        return xp.stack(cols, axis=-1), _hover_reward(b, (0.0, 0.0, 1.0)), _out(xp, b[0], 1.0)

    def observe(self, xp, s):
        return xp.stack(_body_obs(_body(s), 1.0) + [s[..., 13 + j] for j in range(8)], axis=-1)


class Ingenuity(Task):
    name, obs_dim, act_dim, state_dim, max_steps, n_uniform = "ingenuity", 13, 6, 13, 500, 9

    def reset(self, xp, u, z):
        return xp.stack(_body_reset(xp, u, 1.0), axis=-1)

    def step(self, xp, s, a):
        zero = s[..., 0] * 0.0
        force = (zero, zero, zero)
        torque = (zero, zero, zero)
        for k, height in enumerate((0.2, 0.3)):
            thrust = xp.clip((a[..., 3 * k + 2] + 1.0) * 0.5, 0.0, 1.0) * 8.0
            cx = _clip1(xp, a[..., 3 * k]) * 0.2
            cy = _clip1(xp, a[..., 3 * k + 1]) * 0.2
            f = (cx * thrust, cy * thrust, thrust)
            spin = 1.0 if k == 1 else -1.0
            c = _cross((zero, zero, zero + height), f)
            force = tuple(force[i] + f[i] for i in range(3))
            torque = (torque[0] + c[0], torque[1] + c[1], torque[2] + c[2] + spin * 0.03 * thrust)
        b = _integrate(xp, _body(s), force, torque, 1.8, (0.03, 0.03, 0.05), 3.721, 0.01)
        cols = list(b[0]) + list(b[1]) + list(b[2]) + list(b[3])
        return xp.stack(cols, axis=-1), _hover_reward(b, (0.0, 0.0, 1.0)), _out(xp, b[0], 1.0)

    def observe(self, xp, s):
        return xp.stack(_body_obs(_body(s), 1.0), axis=-1)


# ---- The LQ proxies: the model rebuilt from gmi's Philox4x32-10 stream (include/gmi/core/rng.hpp). ----
def philox_words(seed, stream, count):
    """The first `count` 32-bit words of gmi::rng(seed, stream), in draw order."""
    blocks = (count + 3) // 4
    m32 = np.uint64(0xFFFFFFFF)
    b = np.arange(blocks, dtype=np.uint64)
    c0, c1 = b & m32, b >> np.uint64(32)
    c2 = np.full(blocks, stream & 0xFFFFFFFF, dtype=np.uint64)
    c3 = np.full(blocks, stream >> 32, dtype=np.uint64)
    k0, k1 = seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF
    for rnd in range(10):
        if rnd > 0:
            k0, k1 = (k0 + 0x9E3779B9) & 0xFFFFFFFF, (k1 + 0xBB67AE85) & 0xFFFFFFFF
        p0 = np.uint64(0xD2511F53) * c0
        p1 = np.uint64(0xCD9E8D57) * c2
        hi0, lo0 = p0 >> np.uint64(32), p0 & m32
        hi1, lo1 = p1 >> np.uint64(32), p1 & m32
        c0, c1, c2, c3 = hi1 ^ c1 ^ np.uint64(k0), lo1, hi0 ^ c3 ^ np.uint64(k1), lo0
    return np.stack([c0, c1, c2, c3], axis=-1).reshape(-1)[:count].astype(np.uint32)


class _Draws:
    def __init__(self, seed, stream, count):
        self.w = philox_words(seed, stream, count)
        self.i = 0

    def u32(self, n):
        out = self.w[self.i:self.i + n]
        self.i += n
        return out

    def uniform(self, n):
        return (self.u32(n) >> 8).astype(np.float32) * np.float32(2.0 ** -24)

    def normal(self, n):
        w = self.u32(2 * n)
        u1 = ((w[0::2] >> 8) + 1).astype(np.float32) * np.float32(2.0 ** -24)
        u2 = (w[1::2] >> 8).astype(np.float32) * np.float32(2.0 ** -24)
        return np.sqrt(np.float32(-2.0) * np.log(u1)) * np.cos(np.float32(6.28318530717958647692) * u2)


def lq_model(n, m, substeps, model_seed=1):
    """gmi::envs::make_lq_model in float64: (a_sub, b_sub, q, r, a, b)."""
    d = _Draws(model_seed, 0x6C71, 2 * n * n + 2 * n * m + n + m)
    g = d.normal(n * n).astype(np.float64).reshape(n, n)
    v = np.ones(n)
    sigma2 = 0.0
    for _ in range(200):
        u = g.T @ (g @ v)
        sigma2 = np.sqrt(u @ u)
        v = u / sigma2
    sigma = np.sqrt(sigma2) * 1.01
    h = 0.5 / substeps
    a_sub = (1.0 - h) * np.eye(n) + 0.9 * h * g / sigma
    b_sub = h * d.normal(n * m).astype(np.float64).reshape(n, m) / np.sqrt(float(m))
    q = 0.5 + d.uniform(n).astype(np.float64)
    r = 0.05 + 0.1 * d.uniform(m).astype(np.float64)
    a, b = np.eye(n), np.zeros((n, m))
    for _ in range(substeps):
        a, b = a_sub @ a, a_sub @ b + b_sub
    return a_sub, b_sub, q, r, a, b


def riccati_trace(a, b, q, r, tol=1e-13, iterations=10000):
    """trace(P) of the discrete-time algebraic Riccati equation, iterated from P = Q as gmi's solve_dare."""
    p = np.diag(q)
    for _ in range(iterations):
        pa, pb = p @ a, p @ b
        k = np.linalg.solve(np.diag(r) + b.T @ pb, b.T @ pa)
        nxt = np.diag(q) + a.T @ pa - (a.T @ pb) @ k
        done = np.max(np.abs(nxt - p)) <= tol * np.max(np.abs(nxt))
        p = nxt
        if done:
            break
    return float(np.trace(p))


def _matmul(xp, a, b):
    """a @ b in full float32: JAX on a GPU would otherwise use TF32 for the dynamics (gmi's env runs fp32)."""
    if xp.__name__.startswith("jax"):
        return xp.matmul(a, b, precision="highest")
    return a @ b


class LQProxy(Task):
    max_steps = 1000
    n_uniform = 0

    def __init__(self, name, n, m, substeps, num_envs):
        self.name, self.obs_dim, self.act_dim, self.state_dim, self.num_envs = name, n, m, n, num_envs
        self.substeps, self.n_normal = substeps, n
        a_sub, b_sub, q, r, a, b = lq_model(n, m, substeps)
        self.a_sub_t, self.b_sub_t = a_sub.T.astype(np.float32), b_sub.T.astype(np.float32)
        self.q, self.r = q.astype(np.float32), r.astype(np.float32)
        self.table = np.concatenate([a_sub.reshape(-1), b_sub.reshape(-1), q, r]).astype(np.float32)
        self._model = (a, b, q, r)
        self._optimum = None

    @property
    def optimum(self):
        if self._optimum is None:
            a, b, q, r = self._model
            self._optimum = -riccati_trace(a, b, q, r)
        return self._optimum

    def reset(self, xp, u, z):
        return z[..., :self.obs_dim]

    def step(self, xp, s, a):
        cost = (s * s) @ xp.asarray(self.q) + (a * a) @ xp.asarray(self.r)
        at, bt = xp.asarray(self.a_sub_t), xp.asarray(self.b_sub_t)
        drive = _matmul(xp, a, bt)
        x = s
        for _ in range(self.substeps):
            x = _matmul(xp, x, at) + drive
        out = xp.any(~(xp.abs(x) <= 100.0), axis=-1)
        return x, -cost, out

    def observe(self, xp, s):
        return s


class PointReach(Task):
    name, obs_dim, act_dim, state_dim, max_steps, n_uniform = "point_reach", 6, 2, 6, 200, 4
    terminates = False

    def reset(self, xp, u, z):
        zero = xp.zeros_like(u[..., 0])
        c = [-1.0 + 2.0 * u[..., i] for i in range(4)]
        return xp.stack([c[0], c[1], zero, zero, c[2], c[3]], axis=-1)

    def _axis(self, xp, pos, vel, a):
        vel = vel + 0.05 * (2.0 * _clip1(xp, a) - 0.5 * vel)
        pos = pos + 0.05 * vel
        wall = xp.abs(pos) > 2.0
        return xp.where(wall, xp.clip(pos, -2.0, 2.0), pos), xp.where(wall, 0.0, vel)

    def step(self, xp, s, a):
        x, vx = self._axis(xp, s[..., 0], s[..., 2], a[..., 0])
        y, vy = self._axis(xp, s[..., 1], s[..., 3], a[..., 1])
        dx, dy = x - s[..., 4], y - s[..., 5]
        st = xp.stack([x, y, vx, vy, s[..., 4], s[..., 5]], axis=-1)
        return st, -xp.sqrt(dx * dx + dy * dy), xp.zeros_like(dx, dtype=bool)

    def observe(self, xp, s):
        return s


class SparseReach(Task):
    name, obs_dim, act_dim, state_dim, max_steps, n_uniform = "sparse_reach", 4, 2, 4, 100, 2

    def reset(self, xp, u, z):
        angle = -PI + 2 * PI * u[..., 0]
        dist = 0.3 + 0.5 * u[..., 1]
        zero = xp.zeros_like(dist)
        return xp.stack([zero, zero, dist * xp.cos(angle), dist * xp.sin(angle)], axis=-1)

    def step(self, xp, s, a):
        x = xp.clip(s[..., 0] + 0.05 * _clip1(xp, a[..., 0]), -1.5, 1.5)
        y = xp.clip(s[..., 1] + 0.05 * _clip1(xp, a[..., 1]), -1.5, 1.5)
        dx, dy = x - s[..., 2], y - s[..., 3]
        reached = dx * dx + dy * dy < 0.2 * 0.2
        st = xp.stack([x, y, s[..., 2], s[..., 3]], axis=-1)
        return st, xp.where(reached, 1.0, 0.0), reached

    def observe(self, xp, s):
        return s


class LongTrack(Task):
    """State: x, v, phase1, phase2, t."""
    name, obs_dim, act_dim, state_dim, max_steps, n_uniform = "long_track", 5, 1, 5, 2000, 3
    terminates = False

    def _target(self, xp, s):
        time = s[..., 4] * 0.02
        a1, a2 = 0.5 * time + s[..., 2], 1.7 * time + s[..., 3]
        pos = 1.0 * xp.sin(a1) + 0.3 * xp.sin(a2)
        vel = 1.0 * 0.5 * xp.cos(a1) + 0.3 * 1.7 * xp.cos(a2)
        acc = -1.0 * 0.5 * 0.5 * xp.sin(a1) - 0.3 * 1.7 * 1.7 * xp.sin(a2)
        return pos, vel, acc

    def reset(self, xp, u, z):
        p1, p2 = -PI + 2 * PI * u[..., 0], -PI + 2 * PI * u[..., 1]
        zero = xp.zeros_like(p1)
        pos, _, _ = self._target(xp, xp.stack([zero, zero, p1, p2, zero], axis=-1))
        return xp.stack([pos + (-0.5 + u[..., 2]), zero, p1, p2, zero], axis=-1)

    def step(self, xp, s, a):
        v = s[..., 1] + 0.02 * (4.0 * _clip1(xp, a[..., 0]) - 0.2 * s[..., 1])
        x = s[..., 0] + 0.02 * v
        st = xp.stack([x, v, s[..., 2], s[..., 3], s[..., 4] + 1.0], axis=-1)
        pos, _, _ = self._target(xp, st)
        e = x - pos
        return st, xp.exp(-4.0 * e * e), xp.zeros_like(e, dtype=bool)

    def observe(self, xp, s):
        pos, vel, acc = self._target(xp, s)
        return xp.stack([s[..., 0] - pos, s[..., 1] - vel, pos, vel, acc], axis=-1)

    def from_words(self, words):
        return _with_ints(words, [4])


class SpringChain(Task):
    """State: x[4], v[4]."""
    name, obs_dim, act_dim, state_dim, max_steps, n_uniform = "spring_chain", 8, 4, 8, 250, 8
    terminates = False

    def reset(self, xp, u, z):
        return xp.concatenate([-1.0 + 2.0 * u[..., :4], -0.5 + 1.0 * u[..., 4:8]], axis=-1)

    def step(self, xp, s, a):
        x = [s[..., i] for i in range(4)]
        v = [s[..., 4 + i] for i in range(4)]
        u = [_clip1(xp, a[..., i]) for i in range(4)]
        cost = sum(x[i] * x[i] + 0.1 * v[i] * v[i] + 0.01 * u[i] * u[i] for i in range(4))
        acc = []
        for i in range(4):
            left = x[i - 1] if i > 0 else 0.0
            right = x[i + 1] if i < 3 else 0.0
            acc.append(4.0 * (left - 2.0 * x[i] + right) - 0.05 * v[i] + 5.0 * u[i])
        v = [v[i] + 0.05 * acc[i] for i in range(4)]
        x = [x[i] + 0.05 * v[i] for i in range(4)]
        return xp.stack(x + v, axis=-1), -1000.0 * cost, xp.zeros_like(cost, dtype=bool)

    def observe(self, xp, s):
        return s


def make(name):
    """The task called `name` (gmi's registry name)."""
    simple = {t.name: t for t in (Cartpole, Pendulum, BallBalance, Quadcopter, Ingenuity, PointReach, SparseReach,
                                  LongTrack, SpringChain, CartpoleDiscrete)}
    proxies = {"ant_proxy": (60, 8, 8, 1024), "anymal_proxy": (48, 12, 16, 4000), "humanoid_proxy": (108, 21, 8, 4096),
               "franka_cabinet_proxy": (23, 9, 12, 2048), "shadow_hand_proxy": (211, 20, 16, 4096)}
    if name in simple:
        return simple[name]()
    if name in proxies:
        return LQProxy(name, *proxies[name])
    raise ValueError(f"task: got {name!r}, need one of {', '.join(list(simple) + list(proxies))}")


NAMES = ["cartpole", "pendulum", "ball_balance", "quadcopter", "ingenuity", "ant_proxy", "anymal_proxy",
         "humanoid_proxy", "franka_cabinet_proxy", "shadow_hand_proxy", "point_reach", "sparse_reach", "long_track",
         "spring_chain", "cartpole_discrete"]
