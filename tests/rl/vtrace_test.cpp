#include <doctest/doctest.h>

#include <gmi/rl/gae.hpp>
#include <gmi/rl/vtrace.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

namespace {
struct column_data {
  int horizon, envs;
  std::vector<float> rewards, values, log_ratios;
  std::vector<std::uint8_t> ends;
};

// 6 steps x 3 environments: ends in env 1 (t = 2) and env 2 (t = 0 and t = 4), ratios spread around 1.
column_data sample_data() {
  column_data d{6, 3, {}, {}, {}, {}};
  for (int k = 0; k < d.horizon * d.envs; ++k) {
    d.rewards.push_back(0.3f * static_cast<float>(k % 5) - 0.4f);
    d.log_ratios.push_back(0.35f * std::sin(1.7f * static_cast<float>(k)));
    d.ends.push_back(0);
  }
  for (int k = 0; k < (d.horizon + 1) * d.envs; ++k) d.values.push_back(0.5f + 0.1f * static_cast<float>((k * 7) % 11));
  d.ends[2 * 3 + 1] = 1;
  d.ends[0 * 3 + 2] = 1;
  d.ends[4 * 3 + 2] = 1;
  return d;
}

struct vtrace_out {
  std::vector<float> targets, advantages;
};
vtrace_out run(const column_data& d, const gmi::rl::vtrace_config& c) {
  vtrace_out o{std::vector<float>(d.rewards.size()), std::vector<float>(d.rewards.size())};
  for (int e = 0; e < d.envs; ++e)
    gmi::rl::vtrace_column(e, d.envs, d.horizon, c, d.rewards.data(), d.ends.data(), d.values.data(),
                           d.log_ratios.data(), o.targets.data(), o.advantages.data());
  return o;
}

// The paper's definition (eq. 1), summed forward in double: v_s = V(x_s) + sum_t gamma^(t-s) (prod_{i<t} c_i)
// delta_t, the sum stopping after an episode end (whose delta has no next value).
double reference_target(const column_data& d, const gmi::rl::vtrace_config& c, int s, int e) {
  const int n = d.envs;
  double sum = d.values[s * n + e], weight = 1.0;
  for (int t = s; t < d.horizon; ++t) {
    const int at = t * n + e;
    const double ratio = std::exp(static_cast<double>(d.log_ratios[at]));
    const double rho = std::min<double>(c.rho_bar, ratio);
    const double next = d.ends[at] ? 0.0 : d.values[at + n];
    sum += weight * rho * (d.rewards[at] + c.gamma * next - d.values[at]);
    if (d.ends[at]) break;
    weight *= c.gamma * c.lambda * std::min<double>(c.c_bar, ratio);
  }
  return sum;
}
}  // namespace

TEST_SUITE("cpu") {
  TEST_CASE("rl.vtrace.on_policy_targets_are_gae_returns") {
    auto d = sample_data();
    std::fill(d.log_ratios.begin(), d.log_ratios.end(), 0.0f);
    for (float lambda : {1.0f, 0.95f, 0.5f, 0.0f}) {
      CAPTURE(lambda);
      const gmi::rl::vtrace_config c{0.9f, lambda, 1.0f, 1.0f};
      const auto v = run(d, c);
      std::vector<float> adv(d.rewards.size()), ret(d.rewards.size());
      for (int e = 0; e < d.envs; ++e)
        gmi::rl::gae_column(e, d.envs, d.horizon, c.gamma, lambda, d.rewards.data(), d.ends.data(), d.values.data(),
                            adv.data(), ret.data());
      for (std::size_t k = 0; k < ret.size(); ++k) CHECK(v.targets[k] == doctest::Approx(ret[k]).epsilon(1e-5));
      // With lambda = 1 the policy-gradient advantage is GAE(1)'s advantage (the n-step return minus V).
      if (lambda == 1.0f)
        for (std::size_t k = 0; k < adv.size(); ++k) CHECK(v.advantages[k] == doctest::Approx(adv[k]).epsilon(1e-5));
    }
  }

  TEST_CASE("rl.vtrace.on_policy_n_step_return_by_hand") {
    // One environment, 3 steps, no end, gamma 0.5: v_0 = r0 + 0.5 r1 + 0.25 r2 + 0.125 V3.
    const std::vector<float> r{1, 2, 4}, v{10, 20, 30, 8}, lr{0, 0, 0};
    const std::vector<std::uint8_t> ends{0, 0, 0};
    std::vector<float> targets(3), adv(3);
    gmi::rl::vtrace_column(0, 1, 3, {0.5f, 1.0f, 1.0f, 1.0f}, r.data(), ends.data(), v.data(), lr.data(),
                           targets.data(), adv.data());
    CHECK(targets[2] == doctest::Approx(4 + 0.5 * 8));
    CHECK(targets[1] == doctest::Approx(2 + 0.5 * 4 + 0.25 * 8));
    CHECK(targets[0] == doctest::Approx(1 + 0.5 * 2 + 0.25 * 4 + 0.125 * 8));
    CHECK(adv[0] == doctest::Approx(targets[0] - 10));
    CHECK(adv[2] == doctest::Approx(4 + 0.5 * 8 - 30));
  }

  TEST_CASE("rl.vtrace.off_policy_by_hand") {
    // Two steps, gamma 1, lambda 1, rho_bar = c_bar = 1; ratios 0.5 then 2 (clipped to 1).
    //   delta_1 = min(1, 2) (r1 + V2 - V1) = 1 * (3 + 5 - 4) = 4;          v_1 = 4 + 4 = 8
    //   delta_0 = 0.5 (r0 + V1 - V0) = 0.5 (1 + 4 - 2) = 1.5;             v_0 = 2 + 1.5 + 0.5 * (8 - 4) = 5.5
    //   A_0 = 0.5 (r0 + v_1 - V0) = 0.5 (1 + 8 - 2) = 3.5;                A_1 = 1 * (3 + 5 - 4) = 4
    const std::vector<float> r{1, 3}, v{2, 4, 5}, lr{std::log(0.5f), std::log(2.0f)};
    const std::vector<std::uint8_t> ends{0, 0};
    std::vector<float> targets(2), adv(2);
    gmi::rl::vtrace_column(0, 1, 2, {1.0f, 1.0f, 1.0f, 1.0f}, r.data(), ends.data(), v.data(), lr.data(),
                           targets.data(), adv.data());
    CHECK(targets[1] == doctest::Approx(8));
    CHECK(targets[0] == doctest::Approx(5.5));
    CHECK(adv[0] == doctest::Approx(3.5));
    CHECK(adv[1] == doctest::Approx(4));
  }

  TEST_CASE("rl.vtrace.pg_weights_split_the_advantage") {
    // The same two steps with pg_weights: the weights are rho (0.5, then 2 clipped to 1), the advantages unweighted
    // (A_0 / 0.5 = 7, A_1 = 4), the targets unchanged.
    const std::vector<float> r{1, 3}, v{2, 4, 5}, lr{std::log(0.5f), std::log(2.0f)};
    const std::vector<std::uint8_t> ends{0, 0};
    std::vector<float> targets(2), adv(2), w(2);
    gmi::rl::vtrace_column(0, 1, 2, {1.0f, 1.0f, 1.0f, 1.0f}, r.data(), ends.data(), v.data(), lr.data(),
                           targets.data(), adv.data(), w.data());
    CHECK(w[0] == doctest::Approx(0.5));
    CHECK(w[1] == doctest::Approx(1));
    CHECK(adv[0] == doctest::Approx(7));
    CHECK(adv[1] == doctest::Approx(4));
    CHECK(targets[0] == doctest::Approx(5.5));
    // ... and over the sample columns, weight x advantage is the weighted advantage, for any truncation.
    const auto d = sample_data();
    const gmi::rl::vtrace_config c{0.99f, 0.95f, 1.2f, 0.9f};
    const auto weighted = run(d, c);
    std::vector<float> t2(d.rewards.size()), a2(d.rewards.size()), w2(d.rewards.size());
    for (int e = 0; e < d.envs; ++e)
      gmi::rl::vtrace_column(e, d.envs, d.horizon, c, d.rewards.data(), d.ends.data(), d.values.data(),
                             d.log_ratios.data(), t2.data(), a2.data(), w2.data());
    CHECK(t2 == weighted.targets);
    for (std::size_t k = 0; k < a2.size(); ++k) CHECK(w2[k] * a2[k] == doctest::Approx(weighted.advantages[k]).epsilon(1e-6));
  }

  TEST_CASE("rl.vtrace.matches_the_papers_sum_with_truncation_and_ends") {
    const auto d = sample_data();
    for (const gmi::rl::vtrace_config c : {gmi::rl::vtrace_config{0.9f, 1.0f, 1.0f, 1.0f},
                                           gmi::rl::vtrace_config{0.99f, 0.95f, 1.2f, 0.9f},
                                           gmi::rl::vtrace_config{0.8f, 0.7f, 0.8f, 0.8f}}) {
      CAPTURE(c.rho_bar);
      const auto v = run(d, c);
      for (int e = 0; e < d.envs; ++e)
        for (int s = 0; s < d.horizon; ++s) {
          CAPTURE(s);
          CAPTURE(e);
          CHECK(v.targets[s * d.envs + e] == doctest::Approx(reference_target(d, c, s, e)).epsilon(1e-5));
        }
    }
  }

  TEST_CASE("rl.vtrace.truncation_clips_large_ratios") {
    auto d = sample_data();
    const gmi::rl::vtrace_config c{0.9f, 1.0f, 1.0f, 1.0f};
    auto at_bar = d, above = d, below = d;
    std::fill(at_bar.log_ratios.begin(), at_bar.log_ratios.end(), 0.0f);
    std::fill(above.log_ratios.begin(), above.log_ratios.end(), std::log(5.0f));
    std::fill(below.log_ratios.begin(), below.log_ratios.end(), std::log(0.5f));
    const auto a = run(at_bar, c), b = run(above, c), w = run(below, c);
    CHECK(a.targets == b.targets);  // ratios above rho_bar = c_bar = 1 count as 1
    CHECK(a.advantages == b.advantages);
    CHECK(a.targets != w.targets);  // ratios below the bars are not clipped
    // A higher rho_bar lets the large ratio through: the last step's advantage (which sees only the bootstrap
    // value) scales by it, and the targets move.
    const auto wide = run(above, {0.9f, 1.0f, 10.0f, 1.0f});
    for (int e = 0; e < d.envs; ++e) {
      const std::size_t k = static_cast<std::size_t>((d.horizon - 1) * d.envs + e);
      CHECK(wide.advantages[k] == doctest::Approx(5.0f * a.advantages[k]).epsilon(1e-5));
    }
    CHECK(wide.targets != a.targets);
  }

  TEST_CASE("rl.vtrace.episode_end_cuts_the_trace") {
    // The end at (t = 2, env 1): its targets for t <= 2 must not move when later rewards and values change.
    auto d = sample_data();
    const gmi::rl::vtrace_config c{0.95f, 1.0f, 1.0f, 1.0f};
    const auto before = run(d, c);
    for (int t = 3; t < d.horizon; ++t) d.rewards[t * 3 + 1] += 100.0f;
    for (int t = 3; t <= d.horizon; ++t) d.values[t * 3 + 1] += 50.0f;
    const auto after = run(d, c);
    for (int t = 0; t <= 2; ++t) {
      CHECK(after.targets[t * 3 + 1] == before.targets[t * 3 + 1]);
      CHECK(after.advantages[t * 3 + 1] == before.advantages[t * 3 + 1]);
    }
    CHECK(after.targets[3 * 3 + 1] != before.targets[3 * 3 + 1]);
    // The ending step's target is its reward (its bootstrap, if truncated, is in the reward already).
    CHECK(after.targets[2 * 3 + 1] == doctest::Approx(before.targets[2 * 3 + 1]));
    const float v2 = d.values[2 * 3 + 1], rho = std::min(1.0f, std::exp(d.log_ratios[2 * 3 + 1]));
    CHECK(before.targets[2 * 3 + 1] == doctest::Approx(v2 + rho * (d.rewards[2 * 3 + 1] - v2)));
  }

  TEST_CASE("rl.vtrace.config_validated") {
    CHECK_THROWS_WITH_AS(gmi::rl::vtrace_config({0.99f, 1.0f, 1.0f, 2.0f}).validate(),
                         "vtrace.c_bar: got 2, need > 0 and <= rho_bar (1.000000)", gmi::config_error);
    CHECK_THROWS_AS(gmi::rl::vtrace_config({0.0f, 1.0f, 1.0f, 1.0f}).validate(), gmi::config_error);
    CHECK_NOTHROW(gmi::rl::vtrace_config{}.validate());
  }
}
