// Value normalization under returns of any scale: PopArt keeps the critic's denormalized predictions through a
// change of the return statistics, and with the statistics updated before each update the value loss is in
// normalized units from the first iteration on.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include <gmi/agents/gaussian_mlp.hpp>
#include <gmi/envs/spring_chain.hpp>
#include <gmi/rl/popart.hpp>
#include <gmi/rl/ppo.hpp>

namespace {
using task = gmi::envs::spring_chain;
using net = gmi::agents::gaussian_mlp<gmi::nn::layers<64, 64>>::network<task::obs_dim, task::act_dim>;
using trainer = gmi::rl::ppo_trainer<task, net, gmi::exec::host>;

// Denormalized value predictions of `t` at `probes` (obs_dim floats each; observation normalization off).
std::vector<double> values_at(trainer& t, const std::vector<float>& probes) {
  std::vector<double> out;
  const std::vector<float> p(t.params().begin(), t.params().end());
  for (std::size_t i = 0; i < probes.size(); i += task::obs_dim) {
    float mu[task::act_dim], head;
    net::forward(p.data(), probes.data() + i, mu, &head);
    out.push_back(t.value_normalizer().view().denormalize(0, head));
  }
  return out;
}

// The largest change of a prediction, in units of the return normalizer's std (float cancellation in y s + m
// leaves about 1e-7 of the mean's size).
double largest_change(const std::vector<double>& a, const std::vector<double>& b, double scale) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]) / scale);
  return worst;
}
}  // namespace

TEST_SUITE("cpu") {
  TEST_CASE("ppo.popart.rescale_keeps_every_denormalized_output") {
    const int hidden = 5;
    std::vector<float> p = {0.3f, -1.2f, 0.7f, 2.0f, -0.1f, 0.45f};  // weights, then the bias
    const float h[hidden] = {0.5f, -0.25f, 1.5f, 0.1f, -2.0f};
    const auto value = [&](float mean, float std) {
      float y = p[hidden];
      for (int k = 0; k < hidden; ++k) y += p[k] * h[k];
      return double(y) * std + mean;
    };
    const double before = value(-3.0f, 0.5f);
    gmi::rl::popart_rescale(p.data(), 0, hidden, hidden, -3.0f, 0.5f, 120.0f, 40.0f);
    CHECK(value(120.0f, 40.0f) == doctest::Approx(before).epsilon(1e-5));
  }

  TEST_CASE("ppo.popart.value_predictions_survive_the_first_return_statistics" * doctest::timeout(120)) {
    // Returns near -1e5: the first update of the return statistics moves them from (0, 1) to about (-1e5, 5e4).
    // With a learning rate of 1e-9 the update itself barely moves the weights, so the predictions must stay.
    gmi::rl::ppo_config c;
    c.normalize_obs = false;
    c.learning_rate = 1e-9f;
    c.min_learning_rate = 1e-9f;
    c.minibatch = 256;
    c.epochs = 1;
    gmi::rng r(3, 0);
    std::vector<float> probes(16 * task::obs_dim);
    for (float& x : probes) x = r.uniform(-1.0f, 1.0f);
    for (const bool popart : {true, false}) {
      CAPTURE(popart);
      c.popart = popart;
      trainer t(32, 5, c);
      const auto before = values_at(t, probes);
      t.iterate();
      const double scale = t.value_normalizer().view().std[0];
      CHECK(scale > 1e3);  // the statistics did move to the returns' scale
      const double change = largest_change(before, values_at(t, probes), scale);
      MESSAGE("popart " << popart << ": largest change of a value prediction " << change << " return stds");
      if (popart) CHECK(change < 1e-4);
      else CHECK(change > 1.0);  // the control: without the rescale the predictions jump with the statistics
    }
  }

  TEST_CASE("ppo.popart.value_loss_stays_bounded_with_rewards_1000x" * doctest::timeout(300)) {
    // spring_chain's costs are in units of 1000 (returns about -1e5). With the defaults the value loss is in
    // normalized units from the first iteration on (the return statistics take in each rollout before its update);
    // the control without value normalization shows the loss it would otherwise be.
    gmi::rl::ppo_config c;
    c.minibatch = 512;
    c.epochs = 2;
    for (const bool normalize : {true, false}) {
      CAPTURE(normalize);
      c.normalize_value = normalize;
      trainer t(64, 9, c);
      double worst = 0;
      for (int i = 0; i < 6; ++i) {
        t.iterate();
        worst = std::max(worst, t.losses().value_loss);
      }
      MESSAGE("value normalization " << normalize << ": largest value loss over 6 iterations " << worst);
      if (normalize) CHECK(worst < 10.0);
      else CHECK(worst > 1e6);
    }
  }
}
