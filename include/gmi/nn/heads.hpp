#pragma once
// Action distributions on top of a network's outputs, per sample (host loop or device thread): a diagonal
// Gaussian with a state-independent log_std, and a categorical over logits. Each gives sample, log_prob,
// entropy and their gradients, which PPO combines into dL/d(mu, log_std) or dL/dlogits.

#include <gmi/core/hd.hpp>
#include <gmi/core/rng.hpp>
#include <gmi/nn/detail/math.hpp>

namespace gmi::nn {

namespace detail {
// (1 + log(2 pi)) / 2, the Gaussian's entropy per dimension beyond log_std.
template <class T>
inline constexpr T half_log_2pie = static_cast<T>(1.41893853320467274178032973640562);
}  // namespace detail

template <int Dim, class T = float>
struct gaussian {
  static_assert(Dim >= 1, "gmi::nn::gaussian: need at least one action dimension");
  static constexpr int dim = Dim;

  // action = mu + exp(log_std) * eps, eps ~ N(0, 1); logp (if not nullptr) = log_prob(action).
  GMI_HD static void sample(const T* mu, const T* log_std, gmi::rng& g, T* action, T* logp = nullptr) {
    T lp = T(0);
    for (int j = 0; j < Dim; ++j) {
      const T eps = static_cast<T>(g.normal());
      action[j] = mu[j] + detail::exp_(log_std[j]) * eps;
      lp += T(-0.5) * eps * eps - log_std[j] - detail::half_log_2pi<T>;
    }
    if (logp) *logp = lp;
  }

  // sum_j -(a - mu)^2 / (2 sigma^2) - log_std - log(2 pi) / 2, as the anchor computes it.
  GMI_HD static T log_prob(const T* mu, const T* log_std, const T* action) {
    T lp = T(0);
    for (int j = 0; j < Dim; ++j) {
      const T z = (action[j] - mu[j]) * detail::exp_(-log_std[j]);
      lp += T(-0.5) * z * z - log_std[j] - detail::half_log_2pi<T>;
    }
    return lp;
  }

  // sum_j log_std + (1 + log 2 pi) / 2, one constant added per dimension (the bits PPO's loss has always had).
  GMI_HD static T entropy(const T* log_std) {
    T h = T(0);
    for (int j = 0; j < Dim; ++j) h += detail::half_log_2pie<T> + log_std[j];
    return h;
  }

  // d_mu += scale * dlogp/dmu = scale * (a - mu) / sigma^2; d_log_std += scale * ((a - mu)^2 / sigma^2 - 1).
  // Either output may be nullptr.
  GMI_HD static void log_prob_grad(const T* mu, const T* log_std, const T* action, T scale, T* d_mu, T* d_log_std) {
    for (int j = 0; j < Dim; ++j) {
      const T inv_var = detail::exp_(T(-2) * log_std[j]);
      const T diff = action[j] - mu[j];
      if (d_mu) d_mu[j] += scale * diff * inv_var;
      if (d_log_std) d_log_std[j] += scale * (diff * diff * inv_var - T(1));
    }
  }

  // d_log_std += scale * dH/dlog_std (= scale for every dimension).
  GMI_HD static void entropy_grad(T scale, T* d_log_std) {
    for (int j = 0; j < Dim; ++j) d_log_std[j] += scale;
  }

  // The policy part of PPO's loss in one pass: d_mu = scale * (d_log_prob * dlogp/dmu + bounds_coef * d(bounds)/dmu),
  // d_log_std = scale * (d_log_prob * dlogp/dlog_std - entropy_coef) (assigned, not added). Returns the bounds
  // loss, sum_j of the squared distance of mu_j outside [-bound, bound].
  GMI_HD static T policy_gradient(const T* mu, const T* log_std, const T* action, T d_log_prob, T entropy_coef, T bound,
                                  T bounds_coef, T scale, T* d_mu, T* d_log_std) {
    T bounds = T(0);
    for (int j = 0; j < Dim; ++j) {
      const T inv_var = detail::exp_(T(-2) * log_std[j]);
      const T diff = action[j] - mu[j];
      const T above = detail::max_(mu[j] - bound, T(0)), below = detail::min_(mu[j] + bound, T(0));
      bounds += above * above + below * below;
      d_mu[j] = scale * (d_log_prob * diff * inv_var + bounds_coef * T(2) * (above + below));
      d_log_std[j] = scale * (d_log_prob * (diff * diff * inv_var - T(1)) - entropy_coef);
    }
    return bounds;
  }
};

template <int N, class T = float>
struct categorical {
  static_assert(N >= 2, "gmi::nn::categorical: need at least two actions");
  static constexpr int dim = N;

  // log of the softmax normaliser, max-shifted so large logits do not overflow.
  GMI_HD static T log_sum_exp(const T* logits) {
    T m = logits[0];
    for (int k = 1; k < N; ++k) m = detail::max_(m, logits[k]);
    T s = T(0);
    for (int k = 0; k < N; ++k) s += detail::exp_(logits[k] - m);
    return m + detail::log_(s);
  }

  GMI_HD static void softmax(const T* logits, T* probs) {
    const T lse = log_sum_exp(logits);
    for (int k = 0; k < N; ++k) probs[k] = detail::exp_(logits[k] - lse);
  }

  GMI_HD static T log_prob(const T* logits, int action) { return logits[action] - log_sum_exp(logits); }

  // Inverse CDF on one uniform draw; logp (if not nullptr) = log_prob(action).
  GMI_HD static int sample(const T* logits, gmi::rng& g, T* logp = nullptr) {
    const T lse = log_sum_exp(logits);
    const T u = static_cast<T>(g.uniform());
    T cdf = T(0);
    int a = N - 1;  // rounding can leave the last cdf a hair below 1
    for (int k = 0; k < N; ++k) {
      cdf += detail::exp_(logits[k] - lse);
      if (u < cdf) {
        a = k;
        break;
      }
    }
    if (logp) *logp = logits[a] - lse;
    return a;
  }

  GMI_HD static T entropy(const T* logits) {
    const T lse = log_sum_exp(logits);
    T h = T(0);
    for (int k = 0; k < N; ++k) {
      const T lp = logits[k] - lse;
      h -= detail::exp_(lp) * lp;
    }
    return h;
  }

  // d_logits += scale * (onehot(action) - p). The one-hot part is one indexed add after the loop: written as
  // `(k == action ? 1 : 0)` inside the unrolled loop, nvcc 13 (-O2, sm_90) set the last logit's one-hot term for
  // actions other than the last too, for N >= 3 (a GPU-only fault: categorical PPO over 3+ actions did not learn
  // on a GPU; tests/ppo_gpu/discrete_gpu_test.cpp compares every gradient path with the host's).
  GMI_HD static void log_prob_grad(const T* logits, int action, T scale, T* d_logits) {
    const T lse = log_sum_exp(logits);
    for (int k = 0; k < N; ++k) d_logits[k] -= scale * detail::exp_(logits[k] - lse);
    d_logits[action] += scale;
  }

  // d_logits += scale * dH/dlogits, dH/dz_k = -p_k (log p_k + H).
  GMI_HD static void entropy_grad(const T* logits, T scale, T* d_logits) {
    const T lse = log_sum_exp(logits);
    const T h = entropy(logits);
    for (int k = 0; k < N; ++k) {
      const T lp = logits[k] - lse;
      d_logits[k] += scale * (-detail::exp_(lp) * (lp + h));
    }
  }

  // The policy part of PPO's loss: d_logits = scale * (d_log_prob * dlogp/dlogits - entropy_coef * dH/dlogits)
  // (assigned, not added).
  GMI_HD static void policy_gradient(const T* logits, int action, T d_log_prob, T entropy_coef, T scale, T* d_logits) {
    for (int k = 0; k < N; ++k) d_logits[k] = T(0);
    log_prob_grad(logits, action, scale * d_log_prob, d_logits);
    entropy_grad(logits, -scale * entropy_coef, d_logits);
  }

  // An action stored as a float (its index) back to the index, clamped into [0, N).
  GMI_HD static int index_of(T stored) {
    const int a = static_cast<int>(stored);
    return a < 0 ? 0 : (a >= N ? N - 1 : a);
  }
};

}  // namespace gmi::nn
