#include "appo_runs.hpp"

#include <algorithm>
#include <deque>
#include <type_traits>

#include <gmi/agents/gaussian_mlp.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/envs/cartpole.hpp>
#include <gmi/rl/appo.cuh>

namespace {
using net = gmi::agents::gaussian_mlp<>::network<4, 1>;

template <class Policy>
appo_run_result run(const Policy& policy, int lag, int updates, bool stop_when_solved, bool replay_updates) {
  using learner = gmi::rl::appo_learner<net, Policy>;
  using actor = gmi::rl::appo_actor<gmi::envs::cartpole, net, Policy>;
  const int envs = 256;
  gmi::rl::appo_config c;
  c.rollouts = 2;
  c.ppo.minibatch = 2048;
  c.ppo.epochs = 4;
  c.ppo.schedule = gmi::rl::lr_schedule::adaptive_kl;  // what these small runs (2 x 256 envs) were tuned with
  // ... with PPO's ratio over the learner's policy and the advantages normalized after rho: the adaptive rule reads
  // the loss's KL, which under --clip-against behaviour is the KL to the lagging actors' policy and cuts the step
  // size (an H200: best mean return 110 after 300 updates with the split layout's defaults, 497 after 55 with these).
  // The split layout's defaults learn with a constant rate in the cartpole_appo example's GPU cases.
  c.clip_against_behaviour = false;
  c.normalize_before_weights = false;
  c.replay_updates = replay_updates;
  learner l(envs, 1, c, policy);
  actor a0(envs, 11, c.ppo.horizon, c.ppo.gamma, c.ppo.bootstrap_truncation, {}, policy);
  actor a1(envs, 12, c.ppo.horizon, c.ppo.gamma, c.ppo.bootstrap_truncation, {}, policy);
  auto to_host = [&](const auto* p, std::size_t n) {
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(p)>>;
    std::vector<T> out(n);
    if constexpr (Policy::on_device) {
      // The actors and the learner work on a non-blocking stream: finish it before reading what it wrote.
      GMI_CUDA_TRY(cudaDeviceSynchronize());
      GMI_CUDA_TRY(cudaMemcpy(out.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
    } else {
      std::copy(p, p + n, out.begin());
    }
    return out;
  };
  std::deque<std::vector<float>> kept;
  auto publish = [&] {
    const auto s = l.snapshot();
    kept.push_back(to_host(s.data(), s.size()));
    while (kept.size() > static_cast<std::size_t>(lag) + 1) kept.pop_front();
  };
  auto load = [&](actor& a) {
    const std::vector<float>& w = kept.front();
    if constexpr (Policy::on_device) {
      GMI_CUDA_TRY(cudaMemcpy(a.snapshot().data(), w.data(), w.size() * sizeof(float), cudaMemcpyHostToDevice));
    } else {
      std::copy(w.begin(), w.end(), a.snapshot().begin());
    }
    a.set_version(l.version() - (kept.size() - 1));
  };
  appo_run_result r;
  publish();
  for (int u = 0; u < updates; ++u) {
    for (actor* a : {&a0, &a1}) {
      load(*a);
      a->collect();
      l.take(a->records().data());
      if (u == 0 && a == &a0) {
        const auto recs = to_host(a0.records().data(), a0.rollout_records());
        for (int t = 0; t < c.ppo.horizon; ++t)
          for (int i = 0; i < envs; ++i) r.first_rewards.push_back(recs[static_cast<std::size_t>(t) * envs + i].reward);
      }
    }
    l.update();
    r.max_abs_log_ratio = std::max(r.max_abs_log_ratio, l.lag_stats().mean_abs_log_ratio);
    publish();
    r.updates = u + 1;
    if (stop_when_solved && u % 5 == 4) {
      const auto e0 = a0.episodes(), e1 = a1.episodes();
      const auto n = e0.episodes + e1.episodes;
      if (n >= 32) r.best_return = std::max(r.best_return, (e0.return_sum + e1.return_sum) / static_cast<double>(n));
      if (r.best_return >= 450) break;
    }
  }
  l.synchronize();
  r.params = to_host(l.params().data(), l.params().size());
  r.replayed_updates = l.replayed_updates();
  return r;
}
}  // namespace

appo_run_result run_cartpole_appo(bool on_gpu, int lag, int updates, bool stop_when_solved, bool replay_updates) {
  if (on_gpu) {
    gmi::cuda::stream s;
    return run(gmi::exec::cuda{.stream = s.get()}, lag, updates, stop_when_solved, replay_updates);
  }
  return run(gmi::exec::host{}, lag, updates, stop_when_solved, replay_updates);
}
