#pragma once
// Workload proxies for the articulated tasks (Ant, Anymal, Humanoid, FrankaCabinet, ShadowHand): seeded
// random, stable linear-quadratic control tasks with the table's observation and action sizes, a per-step
// simulation cost set by substeps, and a known optimum from the discrete-time algebraic Riccati equation.
// They are proxies of the workload (sizes, cost per step), not of the physics. Details: docs/envs.md.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include <gmi/concepts/env.hpp>
#include <gmi/core/error.hpp>
#include <gmi/core/hd.hpp>
#include <gmi/core/rng.hpp>

namespace gmi::envs {

// The host-side model of one proxy, in double: x' = A_sub x + B_sub u applied `substeps` times per action
// (zero-order hold), so one action step is x' = A x + B u with A = A_sub^k, B = sum_j A_sub^j B_sub. Cost per
// step x'Qx + u'Ru (Q, R diagonal). p and k (filled by solve_dare) give the optimal value x0'P x0 of the
// infinite-horizon problem and the optimal control u = -K x.
struct lq_model {
  int n = 0, m = 0, substeps = 0;
  std::vector<double> a_sub, b_sub;  // n x n, n x m, row-major
  std::vector<double> a, b;          // per action step
  std::vector<double> q, r;          // diagonals
  std::vector<double> p, k;          // n x n, m x n
  int dare_iterations = 0;

  [[nodiscard]] double value(const double* x0) const {
    double v = 0;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) v += x0[i] * p[std::size_t(i) * n + j] * x0[j];
    return v;
  }
  // The table the env reads: A_sub, B_sub, q, r as floats.
  [[nodiscard]] std::vector<float> table() const {
    std::vector<float> t;
    t.reserve(a_sub.size() + b_sub.size() + q.size() + r.size());
    for (const auto* v : {&a_sub, &b_sub, &q, &r})
      for (double x : *v) t.push_back(float(x));
    return t;
  }
};

namespace detail {
inline void matmul(const double* x, const double* y, double* out, int rows, int inner, int cols) {
  std::fill(out, out + std::size_t(rows) * cols, 0.0);
  for (int i = 0; i < rows; ++i)
    for (int l = 0; l < inner; ++l) {
      const double xil = x[std::size_t(i) * inner + l];
      for (int j = 0; j < cols; ++j) out[std::size_t(i) * cols + j] += xil * y[std::size_t(l) * cols + j];
    }
}
inline std::vector<double> transpose(const std::vector<double>& x, int rows, int cols) {
  std::vector<double> t(x.size());
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) t[std::size_t(j) * rows + i] = x[std::size_t(i) * cols + j];
  return t;
}
// Solves S X = Y for symmetric positive definite S (m x m) by Cholesky; Y is m x cols, overwritten by X.
inline void spd_solve(std::vector<double> s, std::vector<double>& y, int m, int cols) {
  for (int j = 0; j < m; ++j) {
    double d = s[std::size_t(j) * m + j];
    for (int l = 0; l < j; ++l) d -= s[std::size_t(j) * m + l] * s[std::size_t(j) * m + l];
    if (!(d > 0)) throw std::runtime_error("gmi::envs::solve_dare: R + B'PB is not positive definite");
    d = std::sqrt(d);
    s[std::size_t(j) * m + j] = d;
    for (int i = j + 1; i < m; ++i) {
      double v = s[std::size_t(i) * m + j];
      for (int l = 0; l < j; ++l) v -= s[std::size_t(i) * m + l] * s[std::size_t(j) * m + l];
      s[std::size_t(i) * m + j] = v / d;
    }
  }
  for (int c = 0; c < cols; ++c) {
    for (int i = 0; i < m; ++i) {  // L z = y
      double v = y[std::size_t(i) * cols + c];
      for (int l = 0; l < i; ++l) v -= s[std::size_t(i) * m + l] * y[std::size_t(l) * cols + c];
      y[std::size_t(i) * cols + c] = v / s[std::size_t(i) * m + i];
    }
    for (int i = m - 1; i >= 0; --i) {  // L' x = z
      double v = y[std::size_t(i) * cols + c];
      for (int l = i + 1; l < m; ++l) v -= s[std::size_t(l) * m + i] * y[std::size_t(l) * cols + c];
      y[std::size_t(i) * cols + c] = v / s[std::size_t(i) * m + i];
    }
  }
}
}  // namespace detail

// Builds the seeded model. A_sub = (1 - h) I + 0.9 h G / |G|_2 with G Gaussian and h = 0.5 / substeps, so
// |A_sub|_2 <= 1 - 0.05 h: every substep contracts, the task is stable; B_sub = h H with H Gaussian / sqrt(m);
// Q diagonal in [0.5, 1.5), R diagonal in [0.05, 0.15).
inline lq_model make_lq_model(int n, int m, int substeps, std::uint64_t model_seed) {
  gmi::require(n >= 1 && m >= 1, "lq_model sizes (n, m)", std::to_string(n) + ", " + std::to_string(m), ">= 1 each");
  gmi::require(substeps >= 1, "lq_model substeps", substeps, ">= 1");
  lq_model md;
  md.n = n;
  md.m = m;
  md.substeps = substeps;
  gmi::rng r(model_seed, 0x6c71ull);  // one stream for the whole model
  std::vector<double> g(std::size_t(n) * n);
  for (double& x : g) x = r.normal();
  // |G|_2 by power iteration on G'G (symmetric, so it converges); rounded up by 1% to stay an upper bound.
  std::vector<double> v(n, 1.0), w(n), u(n);
  double sigma2 = 0;
  for (int it = 0; it < 200; ++it) {
    for (int i = 0; i < n; ++i) {
      double s = 0;
      for (int j = 0; j < n; ++j) s += g[std::size_t(i) * n + j] * v[j];
      w[i] = s;
    }
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int i = 0; i < n; ++i) s += g[std::size_t(i) * n + j] * w[i];
      u[j] = s;
    }
    double norm = 0;
    for (double x : u) norm += x * x;
    norm = std::sqrt(norm);
    sigma2 = norm;  // |G'G v| with |v| = 1 approaches the largest eigenvalue of G'G
    for (int j = 0; j < n; ++j) v[j] = u[j] / norm;
  }
  const double sigma = std::sqrt(sigma2) * 1.01;
  const double h = 0.5 / substeps;
  md.a_sub.assign(std::size_t(n) * n, 0.0);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) md.a_sub[std::size_t(i) * n + j] = (i == j ? 1.0 - h : 0.0) + 0.9 * h * g[std::size_t(i) * n + j] / sigma;
  md.b_sub.resize(std::size_t(n) * m);
  for (double& x : md.b_sub) x = h * r.normal() / std::sqrt(double(m));
  md.q.resize(n);
  for (double& x : md.q) x = 0.5 + r.uniform();
  md.r.resize(m);
  for (double& x : md.r) x = 0.05 + 0.1 * r.uniform();
  // Compose the substeps.
  md.a.assign(std::size_t(n) * n, 0.0);
  for (int i = 0; i < n; ++i) md.a[std::size_t(i) * n + i] = 1.0;
  md.b.assign(std::size_t(n) * m, 0.0);
  std::vector<double> t1(std::size_t(n) * n), t2(std::size_t(n) * m);
  for (int s = 0; s < substeps; ++s) {
    detail::matmul(md.a_sub.data(), md.a.data(), t1.data(), n, n, n);
    md.a = t1;
    detail::matmul(md.a_sub.data(), md.b.data(), t2.data(), n, n, m);
    for (std::size_t i = 0; i < t2.size(); ++i) md.b[i] = t2[i] + md.b_sub[i];
  }
  return md;
}

// Iterates the Riccati recursion P <- Q + A'PA - A'PB (R + B'PB)^-1 B'PA from P = Q until the largest change
// is below tol times the largest entry; fills p, k = (R + B'PB)^-1 B'PA and dare_iterations.
inline void solve_dare(lq_model& md, double tol = 1e-13, int max_iterations = 10000) {
  const int n = md.n, m = md.m;
  const std::vector<double> at = detail::transpose(md.a, n, n), bt = detail::transpose(md.b, n, m);
  std::vector<double> p(std::size_t(n) * n, 0.0);
  for (int i = 0; i < n; ++i) p[std::size_t(i) * n + i] = md.q[i];
  std::vector<double> pa(std::size_t(n) * n), pb(std::size_t(n) * m), btpa(std::size_t(m) * n), s(std::size_t(m) * m),
      k(std::size_t(m) * n), next(std::size_t(n) * n), atpb(std::size_t(n) * m);
  for (int it = 1; it <= max_iterations; ++it) {
    detail::matmul(p.data(), md.a.data(), pa.data(), n, n, n);
    detail::matmul(p.data(), md.b.data(), pb.data(), n, n, m);
    detail::matmul(bt.data(), pa.data(), btpa.data(), m, n, n);
    detail::matmul(bt.data(), pb.data(), s.data(), m, n, m);
    for (int i = 0; i < m; ++i) s[std::size_t(i) * m + i] += md.r[i];
    k = btpa;
    detail::spd_solve(s, k, m, n);
    detail::matmul(at.data(), pa.data(), next.data(), n, n, n);  // A'PA
    detail::matmul(at.data(), pb.data(), atpb.data(), n, n, m);   // A'PB
    double change = 0, scale = 0;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        double v = next[std::size_t(i) * n + j] + (i == j ? md.q[i] : 0.0);
        for (int l = 0; l < m; ++l) v -= atpb[std::size_t(i) * m + l] * k[std::size_t(l) * n + j];
        change = std::max(change, std::fabs(v - p[std::size_t(i) * n + j]));
        scale = std::max(scale, std::fabs(v));
        next[std::size_t(i) * n + j] = v;
      }
    p.swap(next);
    if (change <= tol * scale) {
      md.dare_iterations = it;
      break;
    }
    if (it == max_iterations) throw std::runtime_error("gmi::envs::solve_dare: no convergence");
  }
  // K from the converged P.
  detail::matmul(p.data(), md.a.data(), pa.data(), n, n, n);
  detail::matmul(p.data(), md.b.data(), pb.data(), n, n, m);
  detail::matmul(bt.data(), pa.data(), btpa.data(), m, n, n);
  detail::matmul(bt.data(), pb.data(), s.data(), m, n, m);
  for (int i = 0; i < m; ++i) s[std::size_t(i) * m + i] += md.r[i];
  k = btpa;
  detail::spd_solve(s, k, m, n);
  md.p = p;
  md.k = k;
}

// The env over an lq_model. State: x (N floats) and a step count; observation = x; reward = -(x'Qx + u'Ru)
// for the state before the step; the action is used as given (no clamp, so the optimal controller is
// reachable); terminated when some |x_i| exceeds state_limit (keeps a diverging policy finite).
template <int N, int M, int Substeps>
struct lq_proxy {
  using env_concept = gmi::env_tag;
  static constexpr int obs_dim = N, act_dim = M, substeps = Substeps;

  struct params {
    const float* table = nullptr;   // A_sub, B_sub, q, r (lq_model::table()); bound by the driver
    std::uint64_t model_seed = 1;   // which random task; the same for every run unless changed
    float init_std = 1.0f;          // x0 ~ N(0, init_std^2 I)
    float state_limit = 100.0f;
    int max_steps = 1000;
  };

  struct state {
    float x[N];
  };

  static lq_model model(const params& p = {}) { return make_lq_model(N, M, Substeps, p.model_seed); }
  static std::vector<float> make_table(const params& p) { return model(p).table(); }
  // The best mean episode return a policy can reach: -E[x0'P x0] = -init_std^2 trace(P) for x0 ~ N(0, init_std^2 I)
  // (the max_steps truncation removes a tail below 1e-10 of it; a stochastic policy also pays for its noise).
  static double optimal_mean_return(const params& p) {
    lq_model md = model(p);
    solve_dare(md);
    double trace = 0;
    for (int i = 0; i < N; ++i) trace += md.p[std::size_t(i) * N + i];
    return -double(p.init_std) * p.init_std * trace;
  }
  GMI_HD static void bind_table(params& p, const float* table) { p.table = table; }

  GMI_HD static void reset(state& s, gmi::rng& r, const params& p) {
    for (int i = 0; i < N; ++i) s.x[i] = p.init_std * r.normal();
  }

  // Where the table's parts start (A_sub n x n, B_sub n x m, q, r; row-major).
  static constexpr int table_b_sub = N * N, table_q = N * N + N * M, table_r = N * N + N * M + N;

  // The step's cost x'Qx + u'Ru for the state before the step (the reward is its negative).
  GMI_HD static float cost(const state& s, const float* action, const params& p) {
    const float* q = p.table + table_q;
    const float* r = p.table + table_r;
    float c = 0.0f;
    for (int i = 0; i < N; ++i) c += q[i] * s.x[i] * s.x[i];
    for (int j = 0; j < M; ++j) c += r[j] * action[j] * action[j];
    return c;
  }
  // Terminated: some |x_i| above state_limit (or not a number).
  GMI_HD static bool out_of_bounds(const state& s, const params& p) {
    bool out = false;
    for (int i = 0; i < N; ++i) out = out || !(fabsf(s.x[i]) <= p.state_limit);
    return out;
  }

  GMI_HD static gmi::transition step(state& s, const float* action, gmi::rng&, const params& p) {
    const float* a_sub = p.table;
    const float* b_sub = a_sub + table_b_sub;
    const float cost_before = cost(s, action, p);
    float next[N];
    for (int sub = 0; sub < Substeps; ++sub) {
      for (int i = 0; i < N; ++i) {
        float v = 0.0f;
        for (int j = 0; j < N; ++j) v += a_sub[i * N + j] * s.x[j];
        for (int j = 0; j < M; ++j) v += b_sub[i * M + j] * action[j];
        next[i] = v;
      }
      for (int i = 0; i < N; ++i) s.x[i] = next[i];
    }
    return {-cost_before, out_of_bounds(s, p)};
  }

  GMI_HD static void observe(const state& s, float* obs, const params&) {
    for (int i = 0; i < N; ++i) obs[i] = s.x[i];
  }
};

// The table's sizes; substeps = PhysX solver iterations per env step in the Isaac Gym task configurations
// (substeps x position iterations, x decimation for Anymal), one dense matrix-vector substep standing in for one
// solver iteration over the articulation (docs/envs.md says why, and what it does not capture).
struct ant_proxy : lq_proxy<60, 8, 8> {
  static constexpr const char* name = "ant_proxy";
};
struct anymal_proxy : lq_proxy<48, 12, 16> {
  static constexpr const char* name = "anymal_proxy";
};
struct humanoid_proxy : lq_proxy<108, 21, 8> {
  static constexpr const char* name = "humanoid_proxy";
};
struct franka_cabinet_proxy : lq_proxy<23, 9, 12> {
  static constexpr const char* name = "franka_cabinet_proxy";
};
struct shadow_hand_proxy : lq_proxy<211, 20, 16> {
  static constexpr const char* name = "shadow_hand_proxy";
};

static_assert(gmi::env<ant_proxy>);
static_assert(gmi::env<shadow_hand_proxy>);

}  // namespace gmi::envs
