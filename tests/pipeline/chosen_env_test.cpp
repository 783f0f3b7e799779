// The candidate a GMI process belongs to, through its environment: what a launcher sets (chosen_env) is what the
// GMI process takes over its flags (apply_chosen_from_env), and a training trial changes the same options on
// both sides (make_training_trial); a restart attempt's note rides in the same variable beside a candidate.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include <gmi/pipeline/chosen_env.hpp>
#include <gmi/pipeline/restart.hpp>

namespace {
// Sets the variables for the life of the object and removes them after, so cases do not leak into each other.
struct scoped_env {
  gmi::runtime::env_list vars;
  explicit scoped_env(gmi::runtime::env_list v) : vars(std::move(v)) {
    for (const auto& [k, val] : vars) ::setenv(k.c_str(), val.c_str(), 1);
  }
  ~scoped_env() {
    for (const auto& [k, val] : vars) ::unsetenv(k.c_str());
  }
};

gmi::run_options flags_of_a_launcher() {
  gmi::run_options o;
  o.partition = "none";
  o.gmis_per_gpu = 1;
  o.num_envs = 512;
  o.metrics_path = "m.jsonl";
  o.checkpoint_path = "c.ckpt";
  o.checkpoint_every = 10;
  o.max_seconds = 3600;
  o.max_env_steps = 5e7;
  o.target_return = 450;
  o.autotune.on = true;
  return o;
}
}  // namespace

TEST_SUITE("cpu") {
TEST_CASE("pipeline.chosen_env.none_set_changes_nothing") {
  gmi::run_options o = flags_of_a_launcher();
  CHECK_FALSE(gmi::apply_chosen_from_env(o));
  CHECK(o.partition == "none");
  CHECK(o.autotune.on);
}

TEST_CASE("pipeline.chosen_env.a_planned_run_keeps_its_training_flags") {
  const scoped_env env(gmi::chosen_env(gmi::plan::candidate{"mps", 4, 2048}, 3.0));
  gmi::run_options o = flags_of_a_launcher();
  REQUIRE(gmi::apply_chosen_from_env(o));
  CHECK(o.partition == "mps");
  CHECK(o.gmis_per_gpu == 4);
  CHECK(o.num_envs == 2048);
  CHECK(o.checkpoint_path == "c.ckpt");  // a planned run saves as asked
  CHECK(o.max_seconds == 3600);
  CHECK(o.target_return == 450);
  CHECK_FALSE(o.split_roles);
  CHECK_FALSE(o.autotune.on);  // a GMI process never searches
}

TEST_CASE("pipeline.chosen_env.a_training_trial_is_the_same_on_both_sides") {
  const gmi::plan::candidate c{"green_context", 2, 1024};
  gmi::run_options launcher = flags_of_a_launcher();
  launcher.partition = c.partition;
  launcher.gmis_per_gpu = c.gmis_per_gpu;
  launcher.num_envs = c.envs_per_gmi;
  gmi::make_training_trial(launcher, 0.5);
  CHECK(launcher.max_seconds == doctest::Approx(0.5 + gmi::training_trial_warmup_seconds));
  CHECK(std::isinf(launcher.max_env_steps));
  CHECK(std::isnan(launcher.target_return));
  CHECK(launcher.quiet);
  CHECK(launcher.metrics_path.empty());
  CHECK(launcher.checkpoint_path.empty());
  CHECK(launcher.checkpoint_every == 0);

  for (const bool split : {false, true}) {
    CAPTURE(split);
    const scoped_env env(gmi::chosen_env(c, 0.5, true, true, split));
    gmi::run_options gmi_process = flags_of_a_launcher();
    REQUIRE(gmi::apply_chosen_from_env(gmi_process));
    CHECK(gmi_process.partition == launcher.partition);
    CHECK(gmi_process.gmis_per_gpu == launcher.gmis_per_gpu);
    CHECK(gmi_process.num_envs == launcher.num_envs);
    CHECK(gmi_process.max_seconds == doctest::Approx(launcher.max_seconds));
    CHECK(std::isinf(gmi_process.max_env_steps));
    CHECK(std::isnan(gmi_process.target_return));
    CHECK(gmi_process.quiet);
    CHECK(gmi_process.metrics_path.empty());
    CHECK(gmi_process.checkpoint_path.empty());  // a trial never writes the run's checkpoint
    CHECK(gmi_process.split_roles == split);
  }
}

TEST_CASE("pipeline.chosen_env.malformed_is_one_line") {
  gmi::run_options o = flags_of_a_launcher();
  {
    const scoped_env env(gmi::runtime::env_list{{"GMI_CHOSEN", "not json"}});
    CHECK_THROWS_WITH_AS(gmi::apply_chosen_from_env(o), doctest::Contains("GMI_CHOSEN: got"), gmi::config_error);
  }
  {
    const scoped_env env(gmi::runtime::env_list{{"GMI_CHOSEN", R"({"partition": "mps", "gmis_per_gpu": "four"})"}});
    CHECK_THROWS_WITH_AS(gmi::apply_chosen_from_env(o), doctest::Contains("GMI_CHOSEN.gmis_per_gpu"), gmi::config_error);
  }
}

TEST_CASE("pipeline.chosen_env.one_variable_carries_the_candidate_and_the_restart_note") {
  gmi::runtime::env_list env = gmi::chosen_env(gmi::plan::candidate{"mps", 4, 2048}, 3.0);
  gmi::add_to_chosen(env, "restart", gmi::to_json(gmi::restart_note{.attempt = 2, .fd = 9, .resume = "m.json"}));
  REQUIRE(env.size() == 1);
  const scoped_env set(env);
  gmi::run_options o = flags_of_a_launcher();
  REQUIRE(gmi::apply_chosen_from_env(o));
  CHECK(o.gmis_per_gpu == 4);
  const auto note = gmi::restart_note_from_env();
  REQUIRE(note.has_value());
  CHECK(note->attempt == 2);
  CHECK(note->fd == 9);
  CHECK(note->resume == "m.json");
  CHECK(gmi::restart_attempt() == 2);
}

TEST_CASE("pipeline.chosen_env.a_restart_note_alone_is_no_candidate") {
  gmi::runtime::env_list env;
  gmi::add_to_chosen(env, "restart", gmi::to_json(gmi::restart_note{.attempt = 1, .fd = 5, .resume = ""}));
  const scoped_env set(env);
  gmi::run_options o = flags_of_a_launcher();
  CHECK_FALSE(gmi::apply_chosen_from_env(o));
  CHECK(o.autotune.on);  // untouched
  CHECK(gmi::is_restart_attempt());
}

TEST_CASE("pipeline.chosen_env.malformed_restart_note_is_one_line") {
  const scoped_env env(gmi::runtime::env_list{{"GMI_CHOSEN", R"({"restart": {"attempt": 0, "fd": 5, "resume": ""}})"}});
  CHECK_THROWS_WITH_AS((void)gmi::restart_note_from_env(), "GMI_CHOSEN.restart.attempt: got 0, need >= 1", gmi::config_error);
  const scoped_env env2(gmi::runtime::env_list{{"GMI_CHOSEN", R"({"restart": {"attempt": 1, "resume": ""}})"}});
  CHECK_THROWS_WITH_AS((void)gmi::restart_note_from_env(), doctest::Contains("GMI_CHOSEN.restart.fd: got \"<missing>\""),
                       gmi::config_error);
}
}
