#pragma once
// The actor-critic networks PPO trains (the shape of the Isaac-Gym-style anchor): a shared body with the
// activation after every hidden layer, a policy head and a value head on the last hidden layer. Both heads
// are one linear layer of the flat network (policy rows first, the value row last), so the whole network is
// one mlp and every batched path (host, shared-memory kernel, cuBLAS) serves it unchanged.
//
// Flat parameters: [body W/b ... | heads W[(A+1)][H] | heads b[A+1] | log_std[A] (Gaussian only)].

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

  static constexpr int obs_dim = ObsDim;
  static constexpr int act_dim = ActDim;
  static constexpr int hidden = Hidden::width(Hidden::count);  // width of the last hidden layer
  static constexpr int log_std_offset = net::param_count;
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
};

// Discrete actions: NumActions logits and the value from the network; no extra parameters.
template <int ObsDim, int NumActions, class Hidden = layers<32, 32>, class Act = elu, class T = float>
struct categorical_actor_critic {
  using head = categorical<NumActions, T>;
  using net = typename detail::actor_critic_net<ObsDim, Hidden, NumActions + 1, Act, T>::type;
  using scalar = T;
  template <class U>
  using rebind = categorical_actor_critic<ObsDim, NumActions, Hidden, Act, U>;

  static constexpr int obs_dim = ObsDim;
  static constexpr int num_actions = NumActions;
  static constexpr int hidden = Hidden::width(Hidden::count);
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
  GMI_HD static void backward(const T* params, const T* obs, const T* acts, const T* d_logits, T d_value,
                              T* d_params, T* dz_scratch, T* d_obs = nullptr, Add add = {}) {
    T d_y[NumActions + 1];
    for (int k = 0; k < NumActions; ++k) d_y[k] = d_logits[k];
    d_y[NumActions] = d_value;
    net::backward(params, obs, acts, d_y, d_params, d_obs, dz_scratch, add);
  }
};

}  // namespace gmi::nn
