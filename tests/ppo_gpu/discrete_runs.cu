#include "discrete_runs.hpp"

#include <gmi/agents/categorical_mlp.hpp>
#include <gmi/agents/gaussian_mlp.hpp>
#include <gmi/envs/pendulum.hpp>
#include <gmi/envs/point_reach.hpp>
#include <gmi/envs/quadcopter.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/envs/cartpole_discrete.hpp>
#include <gmi/rl/ppo.cuh>

#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "grid_walk.hpp"  // examples/grid_walk: five actions
#include "pick_env.hpp"

namespace {

// The first minibatch's gradient at `initial` weights recomputed on the host, serially, from copies of the trainer's
// own arrays and statistics (whichever memory they live in): tells a fault in the device's kernels from a
// difference in what they read.
template <class T, class ToHost>
std::vector<float> recompute_first_gradient(T& t, const std::vector<float>& initial, ToHost to_host,
                                            std::vector<float>& stats) {
  auto mb = t.minibatch_view(0, 0, 0);
  using view = decltype(mb);
  constexpr int O = view::obs_dim, A = view::act_dim;
  const std::size_t total = mb.total;
  const auto obs = to_host(mb.obs, total * O), actions = to_host(mb.actions, total * A),
             log_probs = to_host(mb.log_probs, total), values = to_host(mb.values, total),
             advantages = to_host(mb.advantages, total), returns = to_host(mb.returns, total),
             adv_stats = to_host(mb.advantage_stats, 2), obs_mean = to_host(mb.obs_norm.mean, O),
             obs_std = to_host(mb.obs_norm.std, O), v_mean = to_host(mb.value_norm.mean, 1),
             v_std = to_host(mb.value_norm.std, 1);
  std::vector<float> entropy = mb.entropy_coef_at ? to_host(mb.entropy_coef_at, 1) : std::vector<float>{};
  stats = adv_stats;
  stats.insert(stats.end(), obs_mean.begin(), obs_mean.end());
  stats.insert(stats.end(), obs_std.begin(), obs_std.end());
  stats.push_back(v_mean[0]);
  stats.push_back(v_std[0]);
  mb.obs = obs.data();
  mb.actions = actions.data();
  mb.log_probs = log_probs.data();
  mb.values = values.data();
  mb.advantages = advantages.data();
  mb.returns = returns.data();
  mb.advantage_stats = adv_stats.data();
  mb.obs_norm.mean = obs_mean.data();
  mb.obs_norm.std = obs_std.data();
  mb.value_norm.mean = v_mean.data();
  mb.value_norm.std = v_std.data();
  mb.entropy_coef_at = entropy.empty() ? nullptr : entropy.data();
  mb.shuffle_round = 0;
  std::vector<float> grads(initial.size(), 0.0f), terms(gmi::rl::term_count, 0.0f);
  const auto add = [](float* where, float value) { *where += value; };
  for (std::uint32_t k = 0; k < mb.count; ++k) mb.accumulate(k, true, initial.data(), grads.data(), terms.data(), add);
  return grads;
}

template <class T, class ToHost, class ToHostBytes>
void finish(T& t, int iterations, ToHost to_host, ToHostBytes to_host_bytes, discrete_run& r) {
  const std::size_t n = static_cast<std::size_t>(t.num_envs()) * t.config().horizon;
  const auto initial = to_host(t.params().data(), t.params().size());
  for (int i = 0; i < iterations; ++i) {
    t.iterate();
    if (i == 0) {
      t.synchronize();
      r.recomputed_grads = recompute_first_gradient(t, initial, to_host, r.stats);
      const auto v = t.rollout_view();
      r.first_actions = to_host(v.actions, n);
      r.first_log_probs = to_host(v.log_probs, n);
      r.first_obs = to_host(v.obs, n * std::remove_cvref_t<decltype(v)>::obs_dim);
      r.first_values = to_host(v.values, n + t.num_envs());
      r.first_rewards = to_host(v.rewards, n);
      r.first_advantages = to_host(v.advantages, n);
      r.first_returns = to_host(v.returns, n);
      const auto ends = to_host_bytes(v.ends, n);
      r.first_ends.assign(ends.begin(), ends.end());
    }
  }
  t.synchronize();
  r.params = to_host(t.params().data(), t.params().size());
  r.grads = to_host(t.gradient_buffer().data(), t.params().size());
  const auto l = t.losses();
  r.policy_loss = l.policy_loss;
  r.value_loss = l.value_loss;
  r.entropy = l.entropy;
}

template <class task, class agent = gmi::agents::categorical_mlp<>>
discrete_run iterations_of(const std::string& path, int iterations, bool one_minibatch) {
  using net = gmi::agent_network<agent, task>;
  gmi::rl::ppo_config c;
  c.minibatch = one_minibatch ? 256 * c.horizon : 1024;
  c.epochs = one_minibatch ? 1 : 2;
  discrete_run r;
  if (path.empty()) {
    gmi::rl::ppo_trainer<task, net, gmi::exec::host> t(256, 11, c, {}, gmi::exec::host{});
    finish(
        t, iterations, [](const float* p, std::size_t n) { return std::vector<float>(p, p + n); },
        [](const std::uint8_t* p, std::size_t n) { return std::vector<std::uint8_t>(p, p + n); }, r);
    r.path = "host";
    return r;
  }
  gmi::rl::request_gradient_path(path);
  {
    gmi::cuda::stream s;
    gmi::rl::ppo_trainer<task, net, gmi::exec::cuda> t(256, 11, c, {}, gmi::exec::cuda{.stream = s.get()});
    finish(t, iterations,
           [](const float* p, std::size_t n) {
             std::vector<float> out(n);
             GMI_CUDA_TRY(cudaMemcpy(out.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost));
             return out;
           },
           [](const std::uint8_t* p, std::size_t n) {
             std::vector<std::uint8_t> out(n);
             GMI_CUDA_TRY(cudaMemcpy(out.data(), p, n, cudaMemcpyDeviceToHost));
             return out;
           },
           r);
    r.path = gmi::rl::detail::gradient_path_name(gmi::rl::detail::minibatch_gradient<net>::chosen_path());
  }
  gmi::rl::request_gradient_path("");
  return r;
}
}  // namespace

discrete_run discrete_iterations(const std::string& path, int iterations, const std::string& task,
                                 bool one_minibatch) {
  if (task == "cartpole_discrete") return iterations_of<gmi::envs::cartpole_discrete>(path, iterations, one_minibatch);
  if (task == "grid_walk") return iterations_of<grid_walk>(path, iterations, one_minibatch);
  if (task == "pick2") return iterations_of<pick_env<2>>(path, iterations, one_minibatch);
  if (task == "pick3") return iterations_of<pick_env<3>>(path, iterations, one_minibatch);
  if (task == "pick4") return iterations_of<pick_env<4>>(path, iterations, one_minibatch);
  if (task == "pick5") return iterations_of<pick_env<5>>(path, iterations, one_minibatch);
  // Gaussian policies of other widths (param_count mod 4 = 1 for an even act_dim with these networks)
  using gaussian = gmi::agents::gaussian_mlp<>;
  if (task == "point_reach") return iterations_of<gmi::envs::point_reach, gaussian>(path, iterations, one_minibatch);
  if (task == "quadcopter") return iterations_of<gmi::envs::quadcopter, gaussian>(path, iterations, one_minibatch);
  if (task == "pendulum") return iterations_of<gmi::envs::pendulum, gaussian>(path, iterations, one_minibatch);
  throw std::invalid_argument("discrete_iterations: task: got " + task +
                              ", need cartpole_discrete, grid_walk, pick2..pick5, point_reach, quadcopter or pendulum");
}
