// rl::policy_server, the serving engine of trainers::none: it serves the steps a PPO trainer of the same seed
// serves (same episodes, same returns), holds the trainer's initial weights, and is what the serving pipeline builds.
#include <doctest/doctest.h>

#include <type_traits>

#include <gmi/agents/gaussian_mlp.hpp>
#include <gmi/envs/cartpole.hpp>
#include <gmi/exec/host.hpp>
#include <gmi/rl/policy_server.hpp>
#include <gmi/rl/ppo.hpp>
#include <gmi/trainers/ppo.hpp>

namespace {
using net = gmi::agents::gaussian_mlp<>::network<gmi::envs::cartpole::obs_dim, gmi::envs::cartpole::act_dim>;
using server = gmi::rl::policy_server<gmi::envs::cartpole, net, gmi::exec::host>;
}

TEST_SUITE("cpu") {
TEST_CASE("rl.policy_server.serves_what_the_trainer_serves") {
  gmi::rl::ppo_config c;
  // Both episode starts: the server's first reset follows the config's, as the trainer's does.
  SUBCASE("random episode starts") { c.random_episode_start = true; }
  SUBCASE("in-phase episode starts (the default)") { c.random_episode_start = false; }
  CAPTURE(c.random_episode_start);
  gmi::rl::ppo_trainer<gmi::envs::cartpole, net, gmi::exec::host> trainer(64, 11, c);
  server served(64, 11, c);
  for (int k = 0; k < 5; ++k) {
    trainer.serve(40);
    served.serve(40);
  }
  const auto a = trainer.envs().read_stats();
  const auto b = served.envs().read_stats();
  CHECK(a.episodes > 0);  // 200 steps of an untrained policy end Cartpole episodes
  CHECK(b.episodes == a.episodes);
  CHECK(b.return_sum == a.return_sum);
  CHECK(b.length_sum == a.length_sum);
  const auto wa = trainer.policy_tensors(), wb = served.policy_tensors();
  CHECK(wa.get<float>("heads.weight") == wb.get<float>("heads.weight"));
  CHECK(wa.get<float>("log_std") == wb.get<float>("log_std"));
  // Another seed serves other episodes (the comparison above can fail).
  server other(64, 12, c);
  for (int k = 0; k < 5; ++k) other.serve(40);
  CHECK(other.envs().read_stats().return_sum != a.return_sum);
}

TEST_CASE("rl.policy_server.is_the_serving_engine") {
  using engine = gmi::trainers::none::engine<gmi::envs::cartpole, net, gmi::exec::host>;
  static_assert(std::is_same_v<engine, server>);
  static_assert(std::is_same_v<gmi::trainers::ppo<>::engine<gmi::envs::cartpole, net, gmi::exec::host>,
                               gmi::rl::ppo_trainer<gmi::envs::cartpole, net, gmi::exec::host>>);
  CHECK_THROWS_WITH_AS(
      [] {
        server s(8, 1);
        s.serve(0);
      }(),
      "serve steps: got 0, need >= 1", gmi::config_error);
}
}
