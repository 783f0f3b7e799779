#pragma once
// The actor-critic networks PPO trains (the shape of the Isaac-Gym-style anchor): a shared body with the
// activation after every hidden layer, a policy head and a value head on the last hidden layer. Both heads
// are one linear layer of the flat network (policy rows first, the value row last), so the whole network is
// one mlp and every batched path (host, shared-memory kernel, cuBLAS) serves it unchanged.
//
// Flat parameters: [body W/b ... | heads W[(D+1)][H] | heads b[D+1] | log_std[D] (Gaussian only)].
//
// Both give one policy interface, what PPO, APPO and serving call (out: the policy head's dist_dim outputs):
//   discrete, dist_dim (policy outputs), act_dim (floats stored per action: a categorical's index as a float),
//   dist_param_count (parameters after the network's own: log_std), sample(params, out, rng, action, logp),
//   log_prob(params, out, action), entropy(params, out), log_prob_grad / entropy_grad (add into dL/d(out) and
//   dL/d(dist params)), policy_gradient (PPO's policy part in one pass), and backward taking dL/d(dist params).

#include <type_traits>

#include <gmi/core/hd.hpp>
#include <gmi/core/rng.hpp>
#include <gmi/nn/activation.hpp>
#include <gmi/nn/heads.hpp>
#include <gmi/nn/layers.hpp>
#include <gmi/nn/mlp.hpp>

namespace gmi::nn {

namespace detail {
template <int In, class Hidden, int Out, class Act, class T>
struct actor_critic_net {
  static_assert(is_layers<Hidden>, "gmi::nn actor-critic: Hidden must be gmi::nn::layers<h1, h2, ...>");
  using layers = typename Hidden::template prepend<In>::template append<Out>;
  using type = mlp<layers, Act, identity, T>;
};
}  // namespace detail

// Continuous actions: mu (ActDim) and value from the network, log_std a state-independent parameter vector.
template <int ObsDim, int ActDim, class Hidden = layers<32, 32>, class Act = elu, class T = float>
struct gaussian_actor_critic {
  using head = gaussian<ActDim, T>;
  using net = typename detail::actor_critic_net<ObsDim, Hidden, ActDim + 1, Act, T>::type;
  using scalar = T;
  template <class U>
  using rebind = gaussian_actor_critic<ObsDim, ActDim, Hidden, Act, U>;

  static constexpr bool discrete = false;
  static constexpr int obs_dim = ObsDim;
  static constexpr int act_dim = ActDim;
  static constexpr int dist_dim = ActDim;  // the policy head's outputs: the mean
  static constexpr int hidden = Hidden::width(Hidden::count);  // width of the last hidden layer
  static constexpr int log_std_offset = net::param_count;
  static constexpr int dist_param_count = ActDim;  // log_std, after the network's parameters
  static constexpr int param_count = net::param_count + ActDim;
  static constexpr int head_weight_offset = net::layers::weight_offset(net::count - 1);  // mu rows, then value
  static constexpr int head_bias_offset = net::layers::bias_offset(net::count - 1);
  // Per-sample scratch: forward's activation record, and the same again for backward's dz.
  static constexpr int acts_size = net::activation_size;

  GMI_HD static const T* log_std(const T* params) { return params + log_std_offset; }

  // mu[ActDim] and *value; acts (acts_size, may be nullptr) is kept for backward.
  GMI_HD static void forward(const T* params, const T* obs, T* mu, T* value, T* acts = nullptr) {
    T y[ActDim + 1];
    net::forward(params, obs, y, acts);
    for (int j = 0; j < ActDim; ++j) mu[j] = y[j];
    *value = y[ActDim];
  }

  // Forward plus sampling, what a rollout step needs: action, its log-probability and the value.
  GMI_HD static void act(const T* params, const T* obs, gmi::rng& g, T* action, T* logp, T* value, T* mu = nullptr) {
    T m[ActDim];
    forward(params, obs, m, value);
    head::sample(m, log_std(params), g, action, logp);
    if (mu)
      for (int j = 0; j < ActDim; ++j) mu[j] = m[j];
  }

  // Given dL/dmu, dL/dvalue and dL/dlog_std (nullptr: none) of one sample: d_params += dL/dparams and
  // d_obs = dL/dobs (if not nullptr). acts: what forward stored; dz_scratch: acts_size values.
  template <class Add = accumulate_plain>
  GMI_HD static void backward(const T* params, const T* obs, const T* acts, const T* d_mu, T d_value,
                              const T* d_log_std, T* d_params, T* dz_scratch, T* d_obs = nullptr, Add add = {}) {
    T d_y[ActDim + 1];
    for (int j = 0; j < ActDim; ++j) d_y[j] = d_mu[j];
    d_y[ActDim] = d_value;
    net::backward(params, obs, acts, d_y, d_params, d_obs, dz_scratch, add);
    if (d_log_std)
      for (int j = 0; j < ActDim; ++j) add(d_params + log_std_offset + j, d_log_std[j]);
  }

  // The policy interface (see the top of this file); out = mu.
  GMI_HD static void sample(const T* params, const T* out, gmi::rng& g, T* action, T* logp) {
    head::sample(out, log_std(params), g, action, logp);
  }
  GMI_HD static T log_prob(const T* params, const T* out, const T* action) {
    return head::log_prob(out, log_std(params), action);
  }
  GMI_HD static T entropy(const T* params, const T*) { return head::entropy(log_std(params)); }
  // d_out += scale * dlogp/dmu, d_dist += scale * dlogp/dlog_std (either may be nullptr).
  GMI_HD static void log_prob_grad(const T* params, const T* out, const T* action, T scale, T* d_out, T* d_dist) {
    head::log_prob_grad(out, log_std(params), action, scale, d_out, d_dist);
  }
  // d_dist += scale * dH/dlog_std; the entropy does not depend on mu.
  GMI_HD static void entropy_grad(const T*, const T*, T scale, T*, T* d_dist) { head::entropy_grad(scale, d_dist); }
  // PPO's policy part, assigned: d_out, d_dist = scale * (d_log_prob * dlogp - entropy_coef * dH + bounds_coef *
  // d(bounds)); returns the bounds loss (how far mu is outside [-bound, bound], squared).
  GMI_HD static T policy_gradient(const T* params, const T* out, const T* action, T d_log_prob, T entropy_coef, T bound,
                                  T bounds_coef, T scale, T* d_out, T* d_dist) {
    return head::policy_gradient(out, log_std(params), action, d_log_prob, entropy_coef, bound, bounds_coef, scale,
                                 d_out, d_dist);
  }
};

// Discrete actions: NumActions logits and the value from the network; no extra parameters.
template <int ObsDim, int NumActions, class Hidden = layers<32, 32>, class Act = elu, class T = float>
struct categorical_actor_critic {
  using head = categorical<NumActions, T>;
  using net = typename detail::actor_critic_net<ObsDim, Hidden, NumActions + 1, Act, T>::type;
  using scalar = T;
  template <class U>
  using rebind = categorical_actor_critic<ObsDim, NumActions, Hidden, Act, U>;

  static constexpr bool discrete = true;
  static constexpr int obs_dim = ObsDim;
  static constexpr int num_actions = NumActions;
  static constexpr int act_dim = 1;  // the action's index, stored as a float
  static constexpr int dist_dim = NumActions;  // the policy head's outputs: the logits
  static constexpr int hidden = Hidden::width(Hidden::count);
  static constexpr int dist_param_count = 0;
  static constexpr int param_count = net::param_count;
  static constexpr int head_weight_offset = net::layers::weight_offset(net::count - 1);
  static constexpr int head_bias_offset = net::layers::bias_offset(net::count - 1);
  static constexpr int acts_size = net::activation_size;

  GMI_HD static void forward(const T* params, const T* obs, T* logits, T* value, T* acts = nullptr) {
    T y[NumActions + 1];
    net::forward(params, obs, y, acts);
    for (int k = 0; k < NumActions; ++k) logits[k] = y[k];
    *value = y[NumActions];
  }

  GMI_HD static int act(const T* params, const T* obs, gmi::rng& g, T* logp, T* value) {
    T logits[NumActions];
    forward(params, obs, logits, value);
    return head::sample(logits, g, logp);
  }

  template <class Add = accumulate_plain>
    requires(!std::is_pointer_v<Add> && !std::is_null_pointer_v<Add>)  // a pointer here is the overload below's
  GMI_HD static void backward(const T* params, const T* obs, const T* acts, const T* d_logits, T d_value,
                              T* d_params, T* dz_scratch, T* d_obs = nullptr, Add add = {}) {
    T d_y[NumActions + 1];
    for (int k = 0; k < NumActions; ++k) d_y[k] = d_logits[k];
    d_y[NumActions] = d_value;
    net::backward(params, obs, acts, d_y, d_params, d_obs, dz_scratch, add);
  }
  // The same with the policy interface's dL/d(dist params) (none here: d_dist is ignored).
  template <class Add = accumulate_plain>
  GMI_HD static void backward(const T* params, const T* obs, const T* acts, const T* d_logits, T d_value, const T*,
                              T* d_params, T* dz_scratch, T* d_obs = nullptr, Add add = {}) {
    backward(params, obs, acts, d_logits, d_value, d_params, dz_scratch, d_obs, add);
  }

  // The policy interface (see the top of this file); out = the logits, action[0] = the index as a float.
  GMI_HD static void sample(const T*, const T* out, gmi::rng& g, T* action, T* logp) {
    action[0] = static_cast<T>(head::sample(out, g, logp));
  }
  GMI_HD static T log_prob(const T*, const T* out, const T* action) {
    return head::log_prob(out, head::index_of(action[0]));
  }
  GMI_HD static T entropy(const T*, const T* out) { return head::entropy(out); }
  GMI_HD static void log_prob_grad(const T*, const T* out, const T* action, T scale, T* d_out, T*) {
    head::log_prob_grad(out, head::index_of(action[0]), scale, d_out);
  }
  GMI_HD static void entropy_grad(const T*, const T* out, T scale, T* d_out, T*) { head::entropy_grad(out, scale, d_out); }
  // PPO's policy part, assigned: d_out = scale * (d_log_prob * dlogp - entropy_coef * dH); no bounds loss.
  GMI_HD static T policy_gradient(const T*, const T* out, const T* action, T d_log_prob, T entropy_coef, T, T, T scale,
                                  T* d_out, T*) {
    head::policy_gradient(out, head::index_of(action[0]), d_log_prob, entropy_coef, scale, d_out);
    return T(0);
  }
};

}  // namespace gmi::nn
