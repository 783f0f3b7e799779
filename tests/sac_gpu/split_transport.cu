#include "sac_gpu/split_transport.hpp"

#include <chrono>
#include <optional>

#include <gmi/cuda/check.hpp>
#include <gmi/envs/pendulum.hpp>
#include <gmi/pipeline/offpolicy_split.hpp>
#include <gmi/rl/sac.cuh>
#include <gmi/runtime/launcher.hpp>
#include <gmi/runtime/supervisor.hpp>

namespace sac_gpu {

split_transport_run split_run_on_gpu(int actors, std::size_t env_steps, bool device_transport, std::uint64_t seed) {
  using trainer = gmi::rl::sac_device_trainer<gmi::envs::pendulum, gmi::rl::sac_networks<3, 1, 64>>;
  gmi::rl::sac_config c;
  c.batch = 128;
  c.warmup_steps = 512;
  c.replay_capacity = 20000;
  constexpr int envs = 8;
  gmi::detail::split_channel_spec spec;
  spec.tag = gmi::comm::unique_tag("sac-gpu-split");
  spec.actors = actors;
  spec.envs = envs;
  spec.steps = gmi::detail::offpolicy_split_steps;
  spec.row_floats = std::uint32_t(trainer::packed_width);
  spec.weight_floats = trainer::actor_net::param_count;
  spec.placement = gmi::comm::payload_placement::device;
  spec.across_processes = false;  // thread GMIs: plain device pointers and events
  spec.timeout = std::chrono::seconds(30);
  split_transport_run out;
  const auto t0 = std::chrono::steady_clock::now();
  gmi::runtime::thread_group g(gmi::runtime::launch_spec::uniform(1, actors + 1), [&](gmi::runtime::context& ctx) {
    GMI_CUDA_TRY(cudaSetDevice(0));
    if (ctx.rank() == 0) {
      trainer eng(c, envs, seed);
      out.initial = eng.actor_params();
      std::optional<gmi::detail::split_channels_learner> ch;
      if (device_transport) ch.emplace(spec, eng.stream());
      gmi::detail::split_learner<trainer> l(eng, ctx, ch ? &*ch : nullptr);
      while (eng.env_steps() < env_steps) l.step();
      out.episodes = l.read_stats().episodes;
      l.finish();
      out.env_steps = eng.env_steps();
      out.updates = eng.updates();
      out.table = eng.table().size();
      for (const auto& v : {eng.actor_params(), eng.critic_params(0), eng.critic_params(1)})
        out.weights.insert(out.weights.end(), v.begin(), v.end());
    } else {
      trainer eng(gmi::detail::split_actor_config(c), envs, seed + std::uint64_t(ctx.rank()));
      std::optional<gmi::detail::split_channels_actor> ch;
      if (device_transport) ch.emplace(spec, ctx.rank(), eng.stream());
      gmi::detail::split_actor_run(eng, ctx, ch ? &*ch : nullptr, envs);
    }
  });
  (void)g.wait_or_throw();
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace sac_gpu
