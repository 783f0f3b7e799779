// The log-std bounds and the entropy weight's schedule (ppo_config: log_std_min/max, entropy_decay): the bounds
// hold after every step (the control without them leaves them), the linear schedule's weight takes the update of
// a constant weight of the same value bit for bit, and bad values are refused in one line.
#include <doctest/doctest.h>

#include <gmi/agents/categorical_mlp.hpp>
#include <gmi/agents/gaussian_mlp.hpp>
#include <gmi/envs/cartpole.hpp>
#include <gmi/envs/cartpole_discrete.hpp>
#include <gmi/rl/appo.hpp>
#include <gmi/rl/ppo.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace {
using task = gmi::envs::cartpole;
using net = gmi::agents::gaussian_mlp<gmi::nn::layers<32, 32>>::network<task::obs_dim, task::act_dim>;
using trainer = gmi::rl::ppo_trainer<task, net, gmi::exec::host>;
constexpr int envs = 64;

gmi::rl::ppo_config small_config() {
  gmi::rl::ppo_config c;
  c.minibatch = 256;
  c.epochs = 2;
  return c;
}

std::vector<float> params_of(trainer& t) { return {t.params().begin(), t.params().end()}; }
float log_std_of(trainer& t) { return t.params()[net::log_std_offset]; }

// config_error's message from validate(), or "" when it passes.
std::string refusal(const gmi::rl::ppo_config& c) {
  try {
    c.validate();
  } catch (const gmi::config_error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_SUITE("cpu") {
  TEST_CASE("ppo.schedules.log_std_stays_within_its_bounds") {
    // A large entropy weight and lr push log-std up fast; the ceiling must stop it, the control shows it would not.
    gmi::rl::ppo_config c = small_config();
    c.entropy_coef = 0.5f;
    c.learning_rate = 1e-2f;
    trainer control(envs, 3, c);
    c.log_std_max = 0.05f;
    trainer capped(envs, 3, c);
    for (int i = 0; i < 4; ++i) {
      control.iterate();
      capped.iterate();
      CHECK(log_std_of(capped) <= 0.05f);
    }
    REQUIRE(log_std_of(control) > 0.1f);
    CHECK(log_std_of(capped) == 0.05f);

    // A floor above the initial 0 applies from the start and after every step.
    gmi::rl::ppo_config f = small_config();
    f.log_std_min = 0.3f;
    trainer floored(envs, 3, f);
    CHECK(log_std_of(floored) == 0.3f);
    trainer free(envs, 3, small_config());
    CHECK(log_std_of(free) == 0.0f);
    for (int i = 0; i < 3; ++i) {
      floored.iterate();
      CHECK(log_std_of(floored) >= 0.3f);
    }
    // Bounds that never bind change nothing: the same bits as no bounds.
    gmi::rl::ppo_config wide = small_config();
    wide.log_std_min = -20.0f;
    wide.log_std_max = 20.0f;
    trainer loose(envs, 5, wide), none(envs, 5, small_config());
    for (int i = 0; i < 2; ++i) {
      loose.iterate();
      none.iterate();
    }
    CHECK(params_of(loose) == params_of(none));
  }

  TEST_CASE("ppo.schedules.linear_entropy_weight_follows_its_line") {
    const double per_iteration = double(envs) * small_config().horizon;
    // Start equal to floor: the scheduled weight, read through its pointer, trains as the constant one.
    gmi::rl::ppo_config flat = small_config();
    flat.entropy_coef = 0.2f;
    trainer constant(envs, 7, flat);
    flat.entropy_decay = gmi::rl::entropy_schedule::linear;
    flat.min_entropy_coef = 0.2f;
    flat.entropy_decay_env_steps = 3 * per_iteration;
    trainer scheduled(envs, 7, flat);
    for (int i = 0; i < 2; ++i) {
      constant.iterate();
      scheduled.iterate();
    }
    CHECK(params_of(constant) == params_of(scheduled));

    // From 0.5 to 0 over one iteration: the first update is constant 0.5's, the second constant 0's.
    gmi::rl::ppo_config drop = small_config();
    drop.entropy_coef = 0.5f;
    trainer half(envs, 9, drop);
    drop.entropy_decay = gmi::rl::entropy_schedule::linear;
    drop.entropy_decay_env_steps = per_iteration;
    trainer falling(envs, 9, drop);
    half.iterate();
    falling.iterate();
    CHECK(falling.current_entropy_coef() == 0.5f);
    REQUIRE(params_of(half) == params_of(falling));
    trainer zero(envs, 9, small_config());
    zero.load_state(falling.save_state());
    falling.iterate();
    zero.iterate();
    CHECK(falling.current_entropy_coef() == 0.0f);
    CHECK(params_of(zero) == params_of(falling));
    half.iterate();
    CHECK(params_of(half) != params_of(falling));  // the control: 0.5 again would differ

    // Midway: 0.4 down to 0.1 over 4 iterations, a quarter of the drop an iteration, then flat.
    gmi::rl::ppo_config line = small_config();
    line.entropy_coef = 0.4f;
    line.min_entropy_coef = 0.1f;
    line.entropy_decay = gmi::rl::entropy_schedule::linear;
    line.entropy_decay_env_steps = 4 * per_iteration;
    trainer t(envs, 11, line);
    const double expected[] = {0.4, 0.325, 0.25, 0.175, 0.1, 0.1};
    for (const double e : expected) {
      t.iterate();
      CHECK(t.current_entropy_coef() == doctest::Approx(e).epsilon(1e-6));
    }
  }

  TEST_CASE("ppo.schedules.kl_capped_lr_falls_on_large_kl_and_never_passes_the_base") {
    // KL that never passes 2 x kl_target: the constant lr's bits (the rise toward the ceiling is capped at it).
    gmi::rl::ppo_config calm = small_config();
    trainer constant(envs, 4, calm);
    calm.schedule = gmi::rl::lr_schedule::kl_capped;
    calm.kl_target = 1.0f;
    trainer capped(envs, 4, calm);
    for (int i = 0; i < 3; ++i) {
      constant.iterate();
      capped.iterate();
      CHECK(capped.losses().learning_rate == doctest::Approx(calm.learning_rate).epsilon(1e-7));
    }
    CHECK(params_of(constant) == params_of(capped));

    // KL above 2 x kl_target after the policy moved: each such step divides the lr by 1.5 (8 steps an iteration
    // here; the first starts from the rollout's own policy, KL 0, and keeps the ceiling).
    gmi::rl::ppo_config tight = small_config();
    tight.learning_rate = 1e-3f;
    tight.schedule = gmi::rl::lr_schedule::kl_capped;
    tight.kl_target = 1e-9f;
    trainer falling(envs, 4, tight);
    falling.iterate();
    CHECK(falling.losses().learning_rate < 1e-3 / std::pow(1.5, 6));
    CHECK(falling.losses().learning_rate >= 1e-3 / std::pow(1.5, 8) * (1 - 1e-5));

    // KL below kl_target / 2: the adaptive rule climbs toward max_learning_rate, kl_capped stays at --lr.
    gmi::rl::ppo_config loose = small_config();
    loose.kl_target = 1.0f;
    loose.schedule = gmi::rl::lr_schedule::adaptive_kl;
    trainer adaptive(envs, 4, loose);
    loose.schedule = gmi::rl::lr_schedule::kl_capped;
    trainer ceiling(envs, 4, loose);
    adaptive.iterate();
    ceiling.iterate();
    CHECK(adaptive.losses().learning_rate > 2 * loose.learning_rate);  // the control: the rule would rise
    CHECK(ceiling.losses().learning_rate == doctest::Approx(loose.learning_rate).epsilon(1e-7));
    CHECK(gmi::rl::parse_lr_schedule("kl_capped") == gmi::rl::lr_schedule::kl_capped);
    CHECK(std::string(gmi::rl::lr_schedule_name(gmi::rl::lr_schedule::kl_capped)) == "kl_capped");
  }

  TEST_CASE("ppo.schedules.bad_values_are_refused_in_one_line") {
    using gmi::rl::ppo_config;
    ppo_config c;
    c.log_std_min = 1.0f;
    c.log_std_max = 0.5f;
    CHECK(refusal(c).find("ppo.log_std_min: got 1, need <= log_std_max (0.5") != std::string::npos);
    c = {};
    c.log_std_min = std::numeric_limits<float>::quiet_NaN();
    CHECK(refusal(c).find("ppo.log_std_min: got nan, need a number below +inf") != std::string::npos);
    c = {};
    c.log_std_max = -std::numeric_limits<float>::infinity();
    CHECK(refusal(c).find("ppo.log_std_max: got -inf, need a number above -inf") != std::string::npos);
    c = {};
    c.entropy_decay = gmi::rl::entropy_schedule::linear;
    c.entropy_coef = 0.01f;
    c.min_entropy_coef = 0.02f;
    c.entropy_decay_env_steps = 1e6;
    CHECK(refusal(c).find("ppo.min_entropy_coef: got 0.02, need <= entropy_coef (0.01") != std::string::npos);
    c.min_entropy_coef = 0.0f;
    c.entropy_decay_env_steps = 0;
    CHECK(refusal(c).find("ppo.entropy_decay_env_steps: got 0, need >= 1") != std::string::npos);
    c.entropy_decay_env_steps = 1e6;
    CHECK(refusal(c).empty());
    c = {};
    c.min_entropy_coef = -1.0f;
    CHECK(refusal(c).find("ppo.min_entropy_coef: got -1, need >= 0") != std::string::npos);
    CHECK(gmi::rl::parse_entropy_schedule("cosine") == std::nullopt);
    CHECK(gmi::rl::parse_entropy_schedule("linear") == gmi::rl::entropy_schedule::linear);

    // A categorical agent has no log-std to bound; the split layout has neither setting.
    using dnet = gmi::agent_network<gmi::agents::categorical_mlp<>, gmi::envs::cartpole_discrete>;
    ppo_config b = small_config();
    b.log_std_max = 1.0f;
    CHECK_THROWS_WITH_AS((gmi::rl::ppo_trainer<gmi::envs::cartpole_discrete, dnet, gmi::exec::host>(8, 1, b)),
                         doctest::Contains("ppo.log_std_min/max with a categorical agent"), gmi::config_error);
    gmi::rl::appo_config a;
    a.ppo.log_std_max = 1.0f;
    CHECK_THROWS_WITH_AS(a.validate(), doctest::Contains("appo: --log-std-min/--log-std-max"), gmi::config_error);
    a.ppo = {};
    a.ppo.entropy_coef = 0.01f;
    a.ppo.entropy_decay = gmi::rl::entropy_schedule::linear;
    a.ppo.entropy_decay_env_steps = 1e6;
    CHECK_THROWS_WITH_AS(a.validate(), doctest::Contains("appo: --entropy-schedule: got \"linear\", need constant"),
                         gmi::config_error);
  }
}
