#pragma once
// SAC's networks and gradients on host threads: a tanh-squashed Gaussian actor (state-dependent log-std squashed
// into [log_std_min, log_std_max]), twin Q critics, and the hand-written gradients of the critic and actor losses
// through gmi::nn's per-sample mlp backward. Templated on the scalar so the tests check them in double against
// finite differences.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/core/hd.hpp>
#include <gmi/core/rng.hpp>
#include <gmi/core/span.hpp>
#include <gmi/exec/host.hpp>
#include <gmi/nn/activation.hpp>
#include <gmi/nn/layers.hpp>
#include <gmi/nn/mlp.hpp>

namespace gmi::rl {

// The actor maps obs to [mean (act_dim), raw log-std (act_dim)]; each critic maps [obs, action] to Q.
template <int ObsDim, int ActDim, int Hidden = 256, class Act = nn::relu, class T = float>
struct sac_networks {
  static_assert(ObsDim >= 1 && ActDim >= 1 && Hidden >= 1, "gmi::rl::sac_networks: sizes must be >= 1");
  static constexpr int obs_dim = ObsDim, act_dim = ActDim, hidden = Hidden;
  using scalar = T;
  using actor = nn::mlp<nn::layers<ObsDim, Hidden, Hidden, 2 * ActDim>, Act, nn::identity, T>;
  using critic = nn::mlp<nn::layers<ObsDim + ActDim, Hidden, Hidden, 1>, Act, nn::identity, T>;
  template <class U>
  using rebind = sac_networks<ObsDim, ActDim, Hidden, Act, U>;
};

namespace sac_math {
// log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u)): finite for every u (the form the SAC paper's appendix uses).
template <class T>
GMI_HD T log_one_minus_tanh_sq(T u) {
  using std::exp;
  using std::log1p;
  const T x = T(-2) * u;
  const T softplus = x > T(0) ? x + log1p(exp(-x)) : log1p(exp(x));
  return T(2) * (T(0.69314718055994530942) - u - softplus);
}
}  // namespace sac_math

// One draw of the squashed Gaussian from the actor's head and a standard normal eps (reparameterised):
// u = mean + exp(log_std) eps, action = tanh(u),
// log_prob = sum_k [-eps_k^2 / 2 - log_std_k - log(2 pi) / 2 - log(1 - tanh(u_k)^2)].
template <class T, int A>
struct squashed_draw {
  T action[A];
  T sigma[A];
  T log_prob;

  GMI_HD void compute(const T* head, const T* eps, T log_std_min, T log_std_max) {
    using std::exp;
    using std::tanh;
    log_prob = T(0);
    for (int k = 0; k < A; ++k) {
      const T ls = log_std_min + T(0.5) * (log_std_max - log_std_min) * (tanh(head[A + k]) + T(1));
      sigma[k] = exp(ls);
      const T u = head[k] + sigma[k] * eps[k];
      action[k] = tanh(u);
      log_prob += T(-0.5) * eps[k] * eps[k] - ls - T(0.91893853320467274178) - sac_math::log_one_minus_tanh_sq(u);
    }
  }

  // d_head (2A values) from dL/daction (g_a, eps held fixed) and dL/dlog_prob (g_logp).
  GMI_HD void backward(const T* head, const T* eps, T log_std_min, T log_std_max, const T* g_a, T g_logp,
                       T* d_head) const {
    using std::tanh;
    for (int k = 0; k < A; ++k) {
      const T a = action[k], da_du = T(1) - a * a, se = sigma[k] * eps[k];
      // d log_prob / du = 2 tanh(u); d log_prob / d log_std (direct) = -1; du / d log_std = sigma eps.
      d_head[k] = g_a[k] * da_du + g_logp * T(2) * a;
      const T d_ls = g_a[k] * da_du * se + g_logp * (T(-1) + T(2) * a * se);
      const T t = tanh(head[A + k]);
      d_head[A + k] = d_ls * T(0.5) * (log_std_max - log_std_min) * (T(1) - t * t);
    }
  }
};

// The per-sample pieces between the batched network passes of the device update (sac_batched.cuh), host- and
// device-callable so that a host test can compose them the same way (tests/sac).
namespace sac_sample {
// x = [obs, action] of one draw from the actor's head (2A values) and eps (A); returns its log-prob.
template <class T, int O, int A>
GMI_HD T draw_row(const T* head, const T* obs, const T* eps, T lo, T hi, T* x) {
  squashed_draw<T, A> d;
  d.compute(head, eps, lo, hi);
  for (int k = 0; k < O; ++k) x[k] = obs[k];
  for (int k = 0; k < A; ++k) x[O + k] = d.action[k];
  return d.log_prob;
}
// The soft TD target r + gamma (1 - terminated) (min(q1, q2) - alpha log_prob).
template <class T>
GMI_HD T soft_target(T q1, T q2, T log_prob, T reward, T terminated, T alpha, T gamma) {
  const T q = q1 < q2 ? q1 : q2;
  return reward + gamma * (T(1) - terminated) * (q - alpha * log_prob);
}
// The head's gradient (2A values) of scale (alpha log_prob - min Q) from d(-min Q)/dx = dx1 + dx2 (X = O + A values
// each: the critics' input gradients with d_out -1 for the smaller critic and 0 for the other, so one is zero);
// the sample's loss term alpha log_prob - min(q1, q2) and log-prob into the last two.
template <class T, int O, int A>
GMI_HD void actor_head_grad(const T* head, const T* eps, const T* dx1, const T* dx2, T q1, T q2, T alpha, T scale,
                            T lo, T hi, T* d_head, T& loss_term, T& log_prob) {
  squashed_draw<T, A> d;
  d.compute(head, eps, lo, hi);
  T g_a[A];
  for (int k = 0; k < A; ++k) g_a[k] = (dx1[O + k] + dx2[O + k]) * scale;
  d.backward(head, eps, lo, hi, g_a, alpha * scale, d_head);
  loss_term = alpha * d.log_prob - (q1 <= q2 ? q1 : q2);
  log_prob = d.log_prob;
}
}  // namespace sac_sample

// torch.nn.Linear's initialisation: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for every weight and bias; stream
// tells the networks of one seed apart.
template <class Net>
std::vector<typename Net::scalar> sac_initial_params(std::uint64_t seed, std::uint64_t stream) {
  using L = typename Net::layers;
  using T = typename Net::scalar;
  std::vector<T> p(Net::param_count, T(0));
  gmi::rng r(seed, 0x5AC0000ull + stream);
  for (int l = 0; l < L::count; ++l) {
    const int in = L::width(l), out = L::width(l + 1);
    const float bound = 1.0f / std::sqrt(static_cast<float>(in));
    for (int o = 0; o < out; ++o) {
      for (int i = 0; i < in; ++i) p[L::weight_offset(l) + o * in + i] = T(r.uniform(-bound, bound));
      p[L::bias_offset(l) + o] = T(r.uniform(-bound, bound));
    }
  }
  return p;
}

// target <- (1 - tau) target + tau online, element by element.
template <class T>
void polyak_update(host_span<T> target, host_span<const T> online, T tau) {
  gmi::require(target.size() == online.size(), "polyak_update target size", target.size(),
               "== online size " + std::to_string(online.size()));
  for (std::size_t i = 0; i < target.size(); ++i) target[i] = (T(1) - tau) * target[i] + tau * online[i];
}

// The batched losses and their gradients, with scratch kept between calls. Arrays are row-major [n][width].
template <class Nets>
class sac_gradients {
 public:
  using T = typename Nets::scalar;
  using actor_net = typename Nets::actor;
  using critic_net = typename Nets::critic;
  static constexpr int O = Nets::obs_dim, A = Nets::act_dim, X = O + A;

  struct actor_result {
    double loss = 0;      // mean of alpha log_prob - min(Q1, Q2)
    double log_prob = 0;  // mean log_prob (what the temperature update reads)
  };

  explicit sac_gradients(exec::host policy = {}) : policy_(policy), actor_bm_(policy), critic_bm_(policy) {}

  // Soft TD targets y = r + gamma (1 - terminated) (min_k Qtarget_k(s', a') - alpha log pi(a'|s')), a' drawn
  // from the actor at s' with eps_next [n][A].
  void critic_targets(const T* actor_p, const T* target1_p, const T* target2_p, const T* next_obs, const T* reward,
                      const T* terminated, const T* eps_next, std::size_t n, T alpha, T gamma, T ls_min, T ls_max,
                      T* y) const {
    exec::for_each(policy_, n, [=](std::size_t i) {
      T head[2 * A], x[X], q1, q2;
      actor_net::forward(actor_p, next_obs + i * O, head);
      squashed_draw<T, A> d;
      d.compute(head, eps_next + i * A, ls_min, ls_max);
      for (int k = 0; k < O; ++k) x[k] = next_obs[i * O + k];
      for (int k = 0; k < A; ++k) x[O + k] = d.action[k];
      critic_net::forward(target1_p, x, &q1);
      critic_net::forward(target2_p, x, &q2);
      const T soft = std::min(q1, q2) - alpha * d.log_prob;
      y[i] = reward[i] + gamma * (T(1) - terminated[i]) * soft;
    });
  }

  // 0.5 mean_i (Q(x_i) - y_i)^2 for x = [obs, action] rows [n][X]; grad (critic param_count) is overwritten.
  double critic_loss(const T* params, const T* x, const T* y, std::size_t n, T* grad) {
    q_.resize(n);
    acts_.resize(n * critic_net::activation_size);
    d_q_.resize(n);
    const auto P = std::size_t(critic_net::param_count);
    critic_bm_.forward({params, P}, {x, n * X}, {q_.data(), n}, {acts_.data(), acts_.size()});
    double loss = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const T e = q_[i] - y[i];
      loss += 0.5 * double(e) * double(e);
      d_q_[i] = e / T(n);
    }
    critic_bm_.backward({params, P}, {x, n * X}, {acts_.data(), acts_.size()}, {d_q_.data(), n}, {grad, P});
    return loss / double(n);
  }

  // mean_i alpha log pi(a_i|s_i) - min(Q1, Q2)(s_i, a_i) with a_i = tanh(mean + sigma eps_i); grad (actor
  // param_count) is overwritten. The critics are held fixed (their gradients are not formed).
  actor_result actor_loss(const T* actor_p, const T* critic1_p, const T* critic2_p, const T* obs, const T* eps,
                          std::size_t n, T alpha, T ls_min, T ls_max, T* grad) {
    constexpr int CA = critic_net::activation_size;
    head_.resize(n * 2 * A);
    d_head_.resize(n * 2 * A);
    acts_.resize(n * actor_net::activation_size);
    loss_.resize(n);
    logp_.resize(n);
    const auto P = std::size_t(actor_net::param_count);
    actor_bm_.forward({actor_p, P}, {obs, n * O}, {head_.data(), head_.size()}, {acts_.data(), acts_.size()});
    const T* heads = head_.data();
    T* d_heads = d_head_.data();
    T* losses = loss_.data();
    T* logps = logp_.data();
    exec::for_each(policy_, n, [=](std::size_t i) {
      squashed_draw<T, A> d;
      d.compute(heads + i * 2 * A, eps + i * A, ls_min, ls_max);
      T x[X], q1, q2, ca1[CA], ca2[CA], dz[CA], d_x[X], g_a[A];
      for (int k = 0; k < O; ++k) x[k] = obs[i * O + k];
      for (int k = 0; k < A; ++k) x[O + k] = d.action[k];
      critic_net::forward(critic1_p, x, &q1, ca1);
      critic_net::forward(critic2_p, x, &q2, ca2);
      const bool first = q1 <= q2;  // the gradient of min goes through the smaller critic
      const T minus_one = T(-1);
      critic_net::backward_deltas(first ? critic1_p : critic2_p, first ? ca1 : ca2, &minus_one, dz, d_x);
      const T scale = T(1) / T(n);
      for (int k = 0; k < A; ++k) g_a[k] = d_x[O + k] * scale;
      d.backward(heads + i * 2 * A, eps + i * A, ls_min, ls_max, g_a, alpha * scale, d_heads + i * 2 * A);
      losses[i] = alpha * d.log_prob - (first ? q1 : q2);
      logps[i] = d.log_prob;
    });
    actor_bm_.backward({actor_p, P}, {obs, n * O}, {acts_.data(), acts_.size()}, {d_head_.data(), d_head_.size()},
                       {grad, P});
    actor_result r;
    for (std::size_t i = 0; i < n; ++i) {
      r.loss += double(loss_[i]);
      r.log_prob += double(logp_[i]);
    }
    r.loss /= double(n);
    r.log_prob /= double(n);
    return r;
  }

 private:
  exec::host policy_;
  nn::batch_mlp<actor_net, exec::host> actor_bm_;
  nn::batch_mlp<critic_net, exec::host> critic_bm_;
  std::vector<T> q_, acts_, d_q_, head_, d_head_, loss_, logp_;
};

}  // namespace gmi::rl
