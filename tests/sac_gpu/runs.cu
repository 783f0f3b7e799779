#include "sac_gpu/runs.hpp"

#include <chrono>
#include <cstdio>

#include <gmi/envs/pendulum.hpp>
#include <gmi/rl/env_batch.hpp>
#include <gmi/rl/sac.cuh>

namespace sac_gpu {

learn_result learn_pendulum(int num_envs, std::size_t env_steps) {
  using nets = gmi::rl::sac_networks<3, 1, 64>;
  gmi::rl::sac_config c;
  c.batch = 128;
  c.warmup_steps = 1000;
  c.replay_capacity = 100000;
  c.actor_lr = 1e-3f;
  c.critic_lr = 1e-3f;
  c.alpha_lr = 1e-3f;
  learn_result out;
  {
    gmi::rl::env_batch<gmi::envs::pendulum> e(16, 99);
    std::vector<float> o(16 * 3), a(16), rew(16);
    std::vector<std::uint8_t> te(16), tr(16);
    e.reset({o.data(), o.size()});
    gmi::rng r(5, 5);
    for (int s = 0; s < 200; ++s) {
      for (float& x : a) x = r.uniform(-1.0f, 1.0f);
      e.step({a.data(), 16}, {o.data(), o.size()}, {rew.data(), 16}, {te.data(), 16}, {tr.data(), 16});
      for (float x : rew) out.random_return += x / 16.0;
    }
  }
  const auto start = std::chrono::steady_clock::now();
  gmi::rl::sac_device_trainer<gmi::envs::pendulum, nets> t(c, num_envs, 2024);
  for (std::size_t done = 0; done < env_steps; done += 1000) {
    t.train(done + 1000);
    const auto s = t.last_update();
    char line[256];
    std::snprintf(line, sizeof line, "env_steps %zu updates %llu alpha %.3f critic %.3f actor %.3f eval %.1f (%.1f s)",
                  t.env_steps(), static_cast<unsigned long long>(t.updates()), s.alpha, s.critic_loss, s.actor_loss,
                  t.evaluate(8, 123), std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    out.log.emplace_back(line);
  }
  out.final_return = t.evaluate(16, 4242);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.env_steps = t.env_steps();
  out.updates = t.updates();
  return out;
}

}  // namespace sac_gpu
