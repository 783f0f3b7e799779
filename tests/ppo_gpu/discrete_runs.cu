#include "discrete_runs.hpp"

#include <gmi/agents/categorical_mlp.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/envs/cartpole_discrete.hpp>
#include <gmi/rl/ppo.cuh>

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "grid_walk.hpp"  // examples/grid_walk: five actions

namespace {

template <class T, class ToHost>
void finish(T& t, int iterations, ToHost to_host, discrete_run& r) {
  const std::size_t n = static_cast<std::size_t>(t.num_envs()) * t.config().horizon;
  for (int i = 0; i < iterations; ++i) {
    t.iterate();
    if (i == 0) {
      t.synchronize();
      const auto v = t.rollout_view();
      r.first_actions = to_host(v.actions, n);
      r.first_log_probs = to_host(v.log_probs, n);
    }
  }
  t.synchronize();
  r.params = to_host(t.params().data(), t.params().size());
  const auto l = t.losses();
  r.policy_loss = l.policy_loss;
  r.value_loss = l.value_loss;
  r.entropy = l.entropy;
}

template <class task>
discrete_run iterations_of(const std::string& path, int iterations) {
  using net = gmi::agent_network<gmi::agents::categorical_mlp<>, task>;
  gmi::rl::ppo_config c;
  c.minibatch = 1024;
  c.epochs = 2;
  discrete_run r;
  if (path.empty()) {
    gmi::rl::ppo_trainer<task, net, gmi::exec::host> t(256, 11, c, {}, gmi::exec::host{});
    finish(t, iterations, [](const float* p, std::size_t n) { return std::vector<float>(p, p + n); }, r);
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
           r);
    r.path = gmi::rl::detail::gradient_path_name(gmi::rl::detail::minibatch_gradient<net>::chosen_path());
  }
  gmi::rl::request_gradient_path("");
  return r;
}
}  // namespace

discrete_run discrete_iterations(const std::string& path, int iterations, int actions) {
  if (actions == 5) return iterations_of<grid_walk>(path, iterations);
  if (actions != 2) throw std::invalid_argument("discrete_iterations: actions: got " + std::to_string(actions) + ", need 2 or 5");
  return iterations_of<gmi::envs::cartpole_discrete>(path, iterations);
}
