// ppo_config::value_clip (--value-clip): the range of the clipped value loss (clip_value). A sample's value that
// moved further than the range from the rollout's, away from its target, stops learning; within the range it
// learns as the plain loss. The range reaches a trainer's minibatch view, and changes training.
#include <doctest/doctest.h>

#include <vector>

#include <gmi/agents/gaussian_mlp.hpp>
#include <gmi/envs/point_reach.hpp>
#include <gmi/rl/ppo.hpp>
#include <gmi/rl/ppo_loss.hpp>

TEST_SUITE("cpu") {
  TEST_CASE("ppo.value_clip.range_sets_which_values_still_learn") {
    // The rollout's value 0, the target 1, the new value 0.3: beyond a 0.2 range (its clipped error, -0.8, is the
    // larger: no gradient), within a 0.5 range (the plain loss's gradient, 2 x coef x error x scale).
    gmi::rl::ppo_sample_terms t{};
    float d_narrow = -1, d_wide = -1, d_plain = -1;
    gmi::rl::detail::ppo_value_terms(0.3f, 0.0f, 1.0f, 2.0f, true, 0.2f, 0.5f, t, &d_narrow);
    CHECK(t.value_loss == doctest::Approx(0.64f));
    gmi::rl::detail::ppo_value_terms(0.3f, 0.0f, 1.0f, 2.0f, true, 0.5f, 0.5f, t, &d_wide);
    CHECK(t.value_loss == doctest::Approx(0.49f));
    gmi::rl::detail::ppo_value_terms(0.3f, 0.0f, 1.0f, 2.0f, false, 0.5f, 0.5f, t, &d_plain);
    CHECK(d_narrow == 0.0f);
    CHECK(d_wide == d_plain);
    CHECK(d_plain == doctest::Approx(0.5f * 2.0f * 2.0f * (0.3f - 1.0f)));
  }

  TEST_CASE("ppo.value_clip.reaches_the_update") {
    using task = gmi::envs::point_reach;
    using net = gmi::agents::gaussian_mlp<gmi::nn::layers<64, 64>>::network<task::obs_dim, task::act_dim>;
    using trainer = gmi::rl::ppo_trainer<task, net, gmi::exec::host>;
    gmi::rl::ppo_config c;
    c.minibatch = 512;
    c.epochs = 4;
    c.clip_value = true;
    c.value_clip = 0.2f;
    trainer narrow(64, 9, c, {}, gmi::exec::host{.threads = 1});
    c.value_clip = 0.5f;
    trainer wide(64, 9, c, {}, gmi::exec::host{.threads = 1});
    CHECK(narrow.minibatch_view(0, 0, 0).value_clip == 0.2f);
    CHECK(wide.minibatch_view(0, 0, 0).value_clip == 0.5f);
    for (int i = 0; i < 3; ++i) {
      narrow.iterate();
      wide.iterate();
    }
    const std::vector<float> a(narrow.params().begin(), narrow.params().end()),
        b(wide.params().begin(), wide.params().end());
    CHECK(a != b);
  }
}
