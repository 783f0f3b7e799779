#include "sac_multigpu/runs.hpp"

#include <chrono>
#include <optional>
#include <utility>

#include <gmi/cuda/check.hpp>
#include <gmi/envs/pendulum.hpp>
#include <gmi/pipeline/offpolicy_split.hpp>
#include <gmi/pipeline/split_paths.hpp>
#include <gmi/rl/sac.cuh>
#include <gmi/runtime/launcher.hpp>
#include <gmi/runtime/supervisor.hpp>

namespace sac_multigpu {

bool peer_1_to_0() {
  int reach = 0;
  GMI_CUDA_TRY(cudaDeviceCanAccessPeer(&reach, 1, 0));
  return reach != 0;
}

split_result split_run(const std::vector<int>& actor_gpus, int envs, std::size_t env_steps, bool host, bool evaluate,
                       std::uint64_t seed) {
  using trainer = gmi::rl::sac_device_trainer<gmi::envs::pendulum, gmi::rl::sac_networks<3, 1, 64>>;
  gmi::rl::sac_config c;  // learn_pendulum's settings (tests/sac_gpu)
  c.batch = 128;
  c.warmup_steps = 1000;
  c.replay_capacity = 100000;
  c.actor_lr = 1e-3f;
  c.critic_lr = 1e-3f;
  c.alpha_lr = 1e-3f;
  const int actors = int(actor_gpus.size());
  int visible = 0;
  GMI_CUDA_TRY(cudaGetDeviceCount(&visible));
  std::vector<gmi::detail::split_gmi_place> places;
  for (int g : actor_gpus) places.push_back({g, g, visible});
  const auto plan = gmi::detail::plan_split_paths(
      host ? gmi::split_transport_choice::host : gmi::split_transport_choice::automatic, {0, 0, visible}, places,
      [](int from, int to) {
        int reach = 0;
        GMI_CUDA_TRY(cudaDeviceCanAccessPeer(&reach, from, to));
        return reach != 0;
      });
  split_result out;
  out.device = plan.device;
  out.peer = plan.peer;
  out.lines = plan.lines;
  gmi::detail::split_channel_spec spec;
  spec.tag = gmi::comm::unique_tag("sac-multigpu-split");
  spec.actors = actors;
  spec.envs = std::uint32_t(envs);
  spec.steps = gmi::detail::offpolicy_split_steps;
  spec.row_floats = std::uint32_t(trainer::packed_width);
  spec.weight_floats = trainer::actor_net::param_count;
  spec.placement = gmi::comm::payload_placement::device;
  spec.across_processes = false;  // thread GMIs: plain device pointers and events, peer access enabled per context
  spec.peer = plan.peer;
  spec.timeout = std::chrono::seconds(60);
  const auto t0 = std::chrono::steady_clock::now();
  gmi::runtime::launch_spec ls = gmi::runtime::launch_spec::uniform(1, actors + 1);
  ls.heartbeat_timeout = std::chrono::milliseconds(30000);  // the learner's end: a snapshot and an evaluation
  gmi::runtime::thread_group g(std::move(ls), [&](gmi::runtime::context& ctx) {
    GMI_CUDA_TRY(cudaSetDevice(ctx.rank() == 0 ? 0 : actor_gpus[std::size_t(ctx.rank() - 1)]));
    if (ctx.rank() == 0) {
      trainer eng(c, envs, seed);
      std::optional<gmi::detail::split_channels_learner> ch;
      if (plan.device) ch.emplace(spec, eng.stream());
      gmi::detail::split_learner<trainer> l(eng, ctx, ch ? &*ch : nullptr);
      while (eng.env_steps() < env_steps) l.step();
      out.episodes = l.read_stats().episodes;
      l.finish();
      GMI_CUDA_TRY(cudaStreamSynchronize(eng.stream()));
      out.env_steps = eng.env_steps();
      out.updates = eng.updates();
      out.table = eng.table().size();
      auto snap = eng.table().take_snapshot();
      out.columns = std::move(snap.columns);
      out.traj = std::move(snap.traj);
      out.step = std::move(snap.step);
      out.next = std::move(snap.next);
      for (const auto& v : {eng.actor_params(), eng.critic_params(0), eng.critic_params(1)})
        out.weights.insert(out.weights.end(), v.begin(), v.end());
      if (evaluate) out.eval_return = eng.evaluate(16, 4242);
    } else {
      trainer eng(gmi::detail::split_actor_config(c), envs, seed + std::uint64_t(ctx.rank()));
      std::optional<gmi::detail::split_channels_actor> ch;
      if (plan.device) ch.emplace(spec, ctx.rank(), eng.stream());
      gmi::detail::split_actor_run(eng, ctx, ch ? &*ch : nullptr, std::size_t(envs));
    }
  });
  (void)g.wait_or_throw();
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace sac_multigpu
