// ppo_config::reward_scaling (rl/reward_scaling.hpp): each environment's discounted return R of the raw rewards,
// its running std, the scaled rewards the rollout (and so GAE) takes, a checkpoint that carries R, settings that
// do nothing while it is off, and the combinations refused.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <gmi/agents/gaussian_mlp.hpp>
#include <gmi/core/error.hpp>
#include <gmi/envs/spring_chain.hpp>
#include <gmi/nn/normalizer.hpp>
#include <gmi/rl/appo.hpp>
#include <gmi/rl/gae.hpp>
#include <gmi/rl/ppo.hpp>
#include <gmi/rl/reward_scaling.hpp>

namespace {
using task = gmi::envs::spring_chain;
using net = gmi::agents::gaussian_mlp<gmi::nn::layers<64, 64>>::network<task::obs_dim, task::act_dim>;
using trainer = gmi::rl::ppo_trainer<task, net, gmi::exec::host>;

gmi::rl::ppo_config small(bool scaling) {
  gmi::rl::ppo_config c;
  c.minibatch = 256;
  c.epochs = 2;
  c.normalize_value = !scaling;
  c.reward_scaling = scaling;
  return c;
}

std::vector<float> copy(const float* p, std::size_t n) { return {p, p + n}; }

// The line a refused config gives (empty when accepted).
std::string refusal(const gmi::rl::ppo_config& c) {
  try {
    c.validate();
  } catch (const gmi::config_error& e) {
    return e.what();
  }
  return {};
}
}  // namespace

TEST_SUITE("cpu") {
  TEST_CASE("ppo.reward_scaling.running_std_follows_a_known_reward_sequence") {
    // Two environments, four steps, gamma 0.5: env 0 rewards 1, 2, 4, 8 with an end after the second step, env 1
    // rewards -3 throughout without an end. R by hand: env 0: 1, 2.5, 4 (after the reset), 10; env 1: -3, -4.5,
    // -5.25, -5.625.
    const float gamma = 0.5f;
    const float rewards[4][2] = {{1, -3}, {2, -3}, {4, -3}, {8, -3}};
    const bool ends[4][2] = {{false, false}, {true, false}, {false, false}, {false, false}};
    const std::vector<float> want{1, -3, 2.5f, -4.5f, 4, -5.25f, 10, -5.625f};
    gmi::nn::running_mean_std<gmi::exec::host> norm(1, gmi::nn::normalizer_config{10.0f, 1e-8, 0});
    std::vector<float> running(2, 0.0f), seen(8, -1.0f), scaled(8);
    const gmi::rl::reward_scaling_view v{running.data(), seen.data(), norm.view(), gamma};
    for (int t = 0; t < 4; ++t)
      for (std::size_t i = 0; i < 2; ++i) scaled[t * 2 + i] = v.scale(i, t * 2 + i, rewards[t][i], ends[t][i]);
    for (std::size_t k = 0; k < want.size(); ++k) CHECK(seen[k] == doctest::Approx(want[k]).epsilon(1e-6));
    CHECK(running[0] == doctest::Approx(10.0));
    CHECK(running[1] == doctest::Approx(-5.625));
    // Before any statistics the std is 1: the rewards pass, clamped to [-10, 10] only.
    for (int t = 0; t < 4; ++t)
      for (std::size_t i = 0; i < 2; ++i) CHECK(scaled[t * 2 + i] == rewards[t][i]);
    // The statistics take in R; the std is the population std of the eight values (no mean subtracted from the
    // rewards, which keep their sign).
    norm.update(gmi::host_span<const float>(seen.data(), seen.size()));
    double mean = 0, var = 0;
    for (float x : want) mean += x / 8.0;
    for (float x : want) var += (x - mean) * (x - mean) / 8.0;
    const double std_r = std::sqrt(var + 1e-8);
    REQUIRE(norm.view().std[0] == doctest::Approx(std_r).epsilon(1e-6));
    const gmi::rl::reward_scaling_view w{running.data(), seen.data(), norm.view(), gamma};
    CHECK(w.scale(0, 0, 8.0f, false) == doctest::Approx(8.0 / std_r).epsilon(1e-6));
    CHECK(w.scale(1, 1, -3.0f, true) == doctest::Approx(-3.0 / std_r).epsilon(1e-6));
    CHECK(seen[0] == doctest::Approx(10.0 * gamma + 8.0));
    CHECK(running[1] == 0.0f);  // ended
    CHECK(w.scale(1, 1, -1e6f, false) == -10.0f);  // clamped
    CHECK(w.scale(1, 1, 1e6f, false) == 10.0f);
    // Off (running null): the reward passes untouched and nothing is recorded.
    const gmi::rl::reward_scaling_view off{nullptr, seen.data(), norm.view(), gamma};
    CHECK(off.scale(0, 3, 1e6f, true) == 1e6f);
    CHECK(seen[3] == doctest::Approx(want[3]));
  }

  TEST_CASE("ppo.reward_scaling.scaled_rewards_reach_gae") {
    // Two trainers from one checkpoint (three iterations with reward scaling, the first of them without an update):
    // one scales, one does not. Their
    // next rollouts play the same actions in the same states; the scaling one's rewards are the other's divided by
    // the std of R the checkpoint held (steps that ended an episode carry a bootstrap in value units: left out),
    // and its advantages and returns are GAE over those scaled rewards.
    trainer first(64, 5, small(true), {}, gmi::exec::host{.threads = 1});
    const std::vector<float> p0 = copy(first.params().data(), first.params().size());
    first.iterate();  // a fresh trainer's first rollout only fills the statistics of R: no update
    CHECK(copy(first.params().data(), first.params().size()) == p0);
    CHECK(first.reward_normalizer().count() == 64.0 * 16);
    for (int i = 1; i < 3; ++i) first.iterate();
    CHECK(copy(first.params().data(), first.params().size()) != p0);
    REQUIRE(first.reward_normalizer().count() == 3.0 * 64 * 16);
    const auto ck = first.save_state();
    trainer scaled(64, 5, small(true), {}, gmi::exec::host{.threads = 1});
    trainer raw(64, 5, small(false), {}, gmi::exec::host{.threads = 1});
    scaled.load_state(ck);
    raw.load_state(ck);
    const float std_r = scaled.reward_normalizer().view().std[0];
    CAPTURE(std_r);
    REQUIRE(std_r > 10.0f);  // spring_chain's costs: a scale far from 1
    scaled.iterate();
    raw.iterate();
    const auto s = scaled.rollout_view(), r = raw.rollout_view();
    const std::size_t n = 64, total = n * 16;
    CHECK(copy(s.obs, total * s.obs_dim) == copy(r.obs, total * r.obs_dim));
    int compared = 0;
    for (std::size_t k = 0; k < total; ++k) {
      if (s.ends[k]) continue;
      CAPTURE(k);
      CHECK(s.rewards[k] == gmi::rl::reward_scaling_view::scaled_reward(r.rewards[k], std_r, 10.0f));
      ++compared;
    }
    CHECK(compared > static_cast<int>(total / 2));
    std::vector<float> adv(total), ret(total);
    for (int i = 0; i < 64; ++i)
      gmi::rl::gae_column(i, 64, 16, 0.99f, 0.95f, s.rewards, s.ends, s.values, adv.data(), ret.data());
    CHECK(copy(s.advantages, total) == adv);
    CHECK(copy(s.returns, total) == ret);
    CHECK(copy(s.returns, total) != copy(r.returns, total));
    CHECK(scaled.reward_normalizer().count() == 4.0 * 64 * 16);
  }

  TEST_CASE("ppo.reward_scaling.checkpoint_carries_every_environments_return") {
    // Two iterations, a checkpoint, two more: the same weights and R as four straight; and the statistics forget
    // under reward_scaling_window.
    gmi::rl::ppo_config c = small(true);
    c.reward_scaling_window = 2048;  // two rollouts of 64 x 16
    trainer straight(64, 9, c, {}, gmi::exec::host{.threads = 1});
    trainer half(64, 9, c, {}, gmi::exec::host{.threads = 1});
    for (int i = 0; i < 2; ++i) half.iterate();
    const auto ck = half.save_state();
    REQUIRE(ck.get<float>("reward_norm.running").size() == 64);
    trainer resumed(64, 9, c, {}, gmi::exec::host{.threads = 1});
    resumed.load_state(ck);
    for (int i = 0; i < 4; ++i) straight.iterate();
    for (int i = 0; i < 2; ++i) resumed.iterate();
    CHECK(copy(resumed.params().data(), resumed.params().size()) == copy(straight.params().data(), straight.params().size()));
    const auto a = resumed.save_state(), b = straight.save_state();
    CHECK(a.get<float>("reward_norm.running") == b.get<float>("reward_norm.running"));
    CHECK(a.get<double>("reward_norm.stats") == b.get<double>("reward_norm.stats"));
    CHECK(straight.reward_normalizer().count() == 2048.0);
    // A checkpoint of a run without reward scaling lacks R: refused, not started from zeros.
    trainer plain(64, 9, small(false), {}, gmi::exec::host{.threads = 1});
    CHECK_THROWS_AS(resumed.load_state(plain.save_state()), gmi::error);
  }

  TEST_CASE("ppo.reward_scaling.off_trains_bit_for_bit_as_before") {
    // Off, the view carries no R and the reward settings do nothing: the defaults' weights, bit for bit, with
    // another clip and window. (gmi.tool.host_ppo printed the same lines before and after the change: docs/
    // learning.md, "Reward scaling".)
    gmi::rl::ppo_config c;
    c.minibatch = 256;
    c.epochs = 2;
    gmi::rl::ppo_config other = c;
    other.reward_clip = 0.5f;
    other.reward_scaling_window = 100;
    trainer a(64, 3, c, {}, gmi::exec::host{.threads = 1}), b(64, 3, other, {}, gmi::exec::host{.threads = 1});
    CHECK(a.rollout_view().reward_scale.running == nullptr);
    for (int i = 0; i < 3; ++i) {
      a.iterate();
      b.iterate();
    }
    CHECK(copy(a.params().data(), a.params().size()) == copy(b.params().data(), b.params().size()));
    CHECK(a.reward_normalizer().count() == 0.0);
    // The rollout's rewards are the environments' own: above -10 nowhere clamped (spring_chain's costs reach
    // thousands).
    const auto v = a.rollout_view();
    CHECK(*std::min_element(v.rewards, v.rewards + 64 * 16) < -10.0f);
  }

  TEST_CASE("ppo.reward_scaling.bad_combinations_refused_in_one_line") {
    gmi::rl::ppo_config c;
    c.reward_scaling = true;  // with the default normalize_value true
    std::string line = refusal(c);
    CHECK(line.find("ppo.reward_scaling") == 0);
    CHECK(line.find("normalize_value false") != std::string::npos);
    c.normalize_value = false;
    CHECK(refusal(c).empty());
    for (float bad : {0.0f, -1.0f, INFINITY, NAN}) {
      gmi::rl::ppo_config d = c;
      d.reward_clip = bad;
      CAPTURE(bad);
      CHECK(refusal(d).find("ppo.reward_clip") == 0);
    }
    for (double bad : {-1.0, double(INFINITY), double(NAN)}) {
      gmi::rl::ppo_config d = c;
      d.reward_scaling_window = bad;
      CHECK(refusal(d).find("ppo.reward_scaling_window") == 0);
    }
    for (const gmi::rl::ppo_config& d : {c, small(true)}) CHECK(refusal(d).find('\n') == std::string::npos);
    gmi::rl::appo_config a;
    a.ppo = c;
    try {
      a.validate();
      FAIL("appo accepted reward scaling");
    } catch (const gmi::config_error& e) {
      CHECK(std::string(e.what()).find("--reward-scaling") != std::string::npos);
    }
  }
}
