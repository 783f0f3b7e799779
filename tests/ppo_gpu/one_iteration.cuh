#pragma once
// One PPO iteration with the minibatch gradient path rl::request_gradient_path asks for (runs.hpp's
// gradient_path_run), shared by runs.cu and runs_ant.cu.
#include <gmi/cuda/check.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/rl/ppo.cuh>

#include <string>
#include <vector>

#include "runs.hpp"

namespace ppo_gpu_runs {

// One PPO iteration (8192 samples, 2 epochs of one minibatch) with the gradient path rl::request_gradient_path asks for
// (empty: the host trainer), reporting the path the GPU trainer took.
template <class Env, class Net>
gradient_path_run one_iteration(const std::string& path) {
  gmi::rl::ppo_config c;
  c.minibatch = 8192;
  c.epochs = 2;
  gradient_path_run r;
  auto finish = [&](auto& t, auto to_host) {
    t.iterate();
    t.synchronize();
    r.params = to_host(t.params());
    const auto l = t.losses();
    r.policy_loss = l.policy_loss;
    r.value_loss = l.value_loss;
  };
  if (path.empty()) {
    gmi::rl::ppo_trainer<Env, Net, gmi::exec::host> t(512, 7, c, {}, gmi::exec::host{});
    finish(t, [](auto span) { return std::vector<float>(span.begin(), span.end()); });
    r.path = "host";
    return r;
  }
  gmi::rl::request_gradient_path(path);
  gmi::cuda::stream s;
  try {
    gmi::rl::ppo_trainer<Env, Net, gmi::exec::cuda> t(512, 7, c, {}, gmi::exec::cuda{.stream = s.get()});
    finish(t, [](auto span) {
      std::vector<float> out(span.size());
      GMI_CUDA_TRY(cudaMemcpy(out.data(), span.data(), span.size() * sizeof(float), cudaMemcpyDeviceToHost));
      return out;
    });
    r.path = gmi::rl::detail::gradient_path_name(gmi::rl::detail::minibatch_gradient<Net>::chosen_path());
  } catch (const gmi::config_error& e) {
    r.refusal = e.what();
  }
  gmi::rl::request_gradient_path("");
  return r;
}

}  // namespace ppo_gpu_runs
