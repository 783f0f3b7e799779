// pipeline/train_loop.hpp on a scripted trainer: when a group of one and a group of several stop, save and fold in
// the last episodes; what a progress line sees.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <vector>

#include <gmi/pipeline/run_lines.hpp>
#include <gmi/pipeline/train_loop.hpp>

namespace {

// Every iteration finishes `episodes_per_iteration` episodes of return `ret`; the loss terms turn nan at
// `nan_from` (0: never). Records the loop's calls.
struct scripted_trainer {
  std::uint64_t it = 0;
  double ret = 1.0;
  std::uint64_t episodes_per_iteration = 4;
  std::uint64_t nan_from = 0;
  std::uint64_t asked_at = 0;  // the iteration of the pending request (what wait_episodes returns covers up to it)
  std::uint64_t folded_to = 0;
  bool pending = false;
  int syncs = 0, losses_looks = 0;

  void iterate() { ++it; }
  [[nodiscard]] std::uint64_t iteration() const { return it; }
  [[nodiscard]] std::uint64_t samples_per_iteration() const { return 100; }
  void synchronize() { ++syncs; }
  void request_episodes() {
    asked_at = it;
    pending = true;
  }
  std::optional<gmi::rl::episode_stats> wait_episodes() {
    if (!pending) return std::nullopt;
    pending = false;
    gmi::rl::episode_stats s;
    s.episodes = (asked_at - folded_to) * episodes_per_iteration;
    s.return_sum = ret * static_cast<double>(s.episodes);
    s.length_sum = 10.0 * static_cast<double>(s.episodes);
    folded_to = asked_at;
    return s;
  }
  gmi::rl::ppo_losses losses() {
    ++losses_looks;
    gmi::rl::ppo_losses l;
    if (nan_from && it >= nan_from) l.value_loss = std::numeric_limits<double>::quiet_NaN();
    return l;
  }
};

// Rank 0 of two GMIs whose peer saw exactly what it saw: every sum doubles.
struct twin_group {
  [[nodiscard]] static int rank() { return 0; }
  [[nodiscard]] static int world() { return 2; }
  static void sum(std::span<double> v) {
    for (double& x : v) x *= 2;
  }
  [[nodiscard]] static bool stop_requested() { return false; }
};

gmi::detail::loop_settings settings(double max_env_steps) {
  gmi::detail::loop_settings s;
  s.max_env_steps = max_env_steps;
  s.max_seconds = 1e9;
  s.target_return = std::numeric_limits<double>::quiet_NaN();
  s.log_interval = 1e9;  // one line at the first decision, one at the stop
  s.min_episodes = 8;
  return s;
}

struct recorded {
  std::vector<std::uint64_t> saves, lines;
};

template <class Group, class Trainer>
gmi::detail::loop_end run(Trainer& t, const gmi::detail::loop_settings& s, recorded& rec) {
  gmi::sm_activity_window gpm(0, -1);
  return gmi::detail::train_loop(
      t, Group{}, s, gpm, [] {}, [&](const gmi::detail::loop_view& v) { rec.lines.push_back(v.iteration); },
      [&] { rec.saves.push_back(t.iteration()); });
}

}  // namespace

TEST_CASE("pipeline.train_loop.one_gmi_stops_at_the_step_limit_and_folds_the_last_episodes") {
  scripted_trainer t;
  recorded rec;
  const auto e = run<gmi::detail::solo_group>(t, settings(700), rec);  // 100 samples an iteration
  CHECK(e.reason == gmi::stop_reason::step_limit);
  CHECK(e.iterations == 7);  // a group of one decides every iteration
  CHECK(e.steps == doctest::Approx(700));
  CHECK(t.folded_to == 7);  // the episodes up to the stop, not only those of the round at 5
  CHECK(e.mean_return == doctest::Approx(1.0));
  REQUIRE(rec.saves.size() == 1);
  CHECK(rec.saves.front() == 7);
  REQUIRE(rec.lines.size() == 2);
  CHECK(rec.lines.front() == 1);
  CHECK(rec.lines.back() == 7);
  CHECK(t.syncs == 1);  // the first round's, once
  CHECK(gmi::exit_code_of(e.reason, e.signal_number) == 0);
}

TEST_CASE("pipeline.train_loop.a_group_decides_at_rounds_over_the_group_steps") {
  scripted_trainer t;
  recorded rec;
  const auto e = run<twin_group>(t, settings(1400), rec);  // two GMIs: 200 group samples an iteration
  CHECK(e.reason == gmi::stop_reason::step_limit);
  CHECK(e.iterations == 10);  // 7 iterations reach the limit; the group decides at the round after
  CHECK(e.steps == doctest::Approx(2000));
  REQUIRE(rec.lines.size() == 2);
  CHECK(rec.lines.front() == 5);
  REQUIRE_FALSE(e.curve.empty());
  CHECK(e.curve.front()[0] == doctest::Approx(1000.0));  // the round at 10 folds in what was asked for at 5
}

// A resumed run counts env steps from iteration 0, the checkpoint's included, as a fresh one does: a group of one
// resumed at 4 (400 steps) with a limit of 700 ends at 7, not at 11; its progress lines' run_steps (the rate's) are
// this run's only. A group resumed at 5 (1000 of the pair's steps) with a limit of 1400 ends at the round at 10.
TEST_CASE("pipeline.train_loop.a_resumed_run_counts_env_steps_since_training_began") {
  scripted_trainer t;
  t.it = t.asked_at = t.folded_to = 4;
  recorded rec;
  std::vector<double> run_steps;
  gmi::sm_activity_window gpm(0, -1);
  const auto e = gmi::detail::train_loop(
      t, gmi::detail::solo_group{}, settings(700), gpm, [] {},
      [&](const gmi::detail::loop_view& v) { run_steps.push_back(v.run_steps); }, [&] { rec.saves.push_back(t.iteration()); });
  CHECK(e.reason == gmi::stop_reason::step_limit);
  CHECK(e.resumed_at == 4);
  CHECK(e.iterations == 7);
  CHECK(e.steps == doctest::Approx(700));
  CHECK(e.run_steps == doctest::Approx(300));
  CHECK(e.trained());
  REQUIRE(run_steps.size() == 2);
  CHECK(run_steps.front() == doctest::Approx(100));  // the first line at iteration 5
  CHECK(run_steps.back() == doctest::Approx(300));
  CHECK(rec.saves == std::vector<std::uint64_t>{7});
  CHECK(gmi::detail::end_fields(e, "step limit").at("resumed_at") == 4);

  scripted_trainer pair;
  pair.it = pair.asked_at = pair.folded_to = 5;
  recorded group_rec;
  const auto g = run<twin_group>(pair, settings(1400), group_rec);
  CHECK(g.reason == gmi::stop_reason::step_limit);
  CHECK(g.iterations == 10);
  CHECK(g.steps == doctest::Approx(2000));
  CHECK(g.run_steps == doctest::Approx(1000));
}

// A run resumed at or past its limit ends before its first iteration: the step limit, exit 0, nothing saved (the
// checkpoint is the state), no progress line, no time; a group of one and a group alike.
TEST_CASE("pipeline.train_loop.resumed_at_the_limit_ends_before_its_first_iteration") {
  for (const std::uint64_t at : {7u, 9u}) {
    CAPTURE(at);
    scripted_trainer t;
    t.it = at;
    recorded rec;
    const auto e = run<gmi::detail::solo_group>(t, settings(700), rec);
    CHECK(e.reason == gmi::stop_reason::step_limit);
    CHECK(gmi::exit_code_of(e.reason, e.signal_number) == 0);
    CHECK(t.it == at);
    CHECK(e.iterations == at);
    CHECK(e.resumed_at == at);
    CHECK(e.steps == doctest::Approx(100.0 * static_cast<double>(at)));
    CHECK(e.run_steps == 0);
    CHECK(e.seconds == 0);
    CHECK(e.rate() == 0);
    CHECK_FALSE(e.trained());  // so no evaluation either
    CHECK(rec.saves.empty());
    CHECK(rec.lines.empty());
    CHECK(t.losses_looks == 0);
  }
  scripted_trainer pair;
  pair.it = 7;  // 1400 of the pair's steps
  recorded rec;
  const auto g = run<twin_group>(pair, settings(1400), rec);
  CHECK(g.reason == gmi::stop_reason::step_limit);
  CHECK(pair.it == 7);
  CHECK(g.iterations == 7);
  CHECK(rec.saves.empty());
}

TEST_CASE("pipeline.train_loop.saves_at_multiples_and_never_after_divergence") {
  scripted_trainer t;
  t.nan_from = 9;
  recorded rec;
  auto s = settings(1e9);
  s.checkpoint_every = 4;
  const auto e = run<gmi::detail::solo_group>(t, s, rec);
  CHECK(e.reason == gmi::stop_reason::diverged);
  CHECK(e.iterations == 12);  // the look before the save due at 12 finds the nan
  CHECK(rec.saves == std::vector<std::uint64_t>{4, 8});
  REQUIRE(e.losses.has_value());
  CHECK_FALSE(e.losses->finite());
  CHECK(gmi::exit_code_of(e.reason, e.signal_number) == 1);
}

// A task whose step() returned a nan reward: the loss terms turn nan and the end names the environment, not the lr.
struct nan_reward_trainer : scripted_trainer {
  gmi::io::checkpoint save_state() const {
    gmi::io::checkpoint ck;
    std::vector<float> returns(4, -1.0f);
    if (nan_from && it >= nan_from) returns[2] = std::numeric_limits<float>::quiet_NaN();
    ck.add("env.returns", returns);
    return ck;
  }
};

TEST_CASE("pipeline.train_loop.divergence_from_a_non_finite_reward_names_the_environment") {
  nan_reward_trainer t;
  t.nan_from = 3;
  recorded rec;
  const auto e = run<gmi::detail::solo_group>(t, settings(700), rec);
  CHECK(e.reason == gmi::stop_reason::diverged);
  CHECK(e.diverged_cause.find("non-finite reward") != std::string::npos);
  CHECK(e.diverged_cause.find("environment 2's episode return is nan") != std::string::npos);
  scripted_trainer plain;  // loss terms nan, rewards fine (nothing to look at): no cause, the lr hint stays
  plain.nan_from = 3;
  const auto p = run<gmi::detail::solo_group>(plain, settings(700), rec);
  CHECK(p.reason == gmi::stop_reason::diverged);
  CHECK(p.diverged_cause.empty());
  // Finished episodes with a nan return (the statistics of the round at 10, asked for at 5): they point at the
  // environment when its running returns no longer do (a diverged policy's invalid actions reset every episode).
  scripted_trainer finished;
  finished.nan_from = 12;
  finished.ret = std::numeric_limits<double>::quiet_NaN();
  const auto f = run<gmi::detail::solo_group>(finished, settings(1500), rec);
  CHECK(f.reason == gmi::stop_reason::diverged);
  CHECK(f.diverged_cause.find("a finished episode's return is not finite") != std::string::npos);
}

// A run with no log time or save due before its limit (a population member): the loss terms are looked at when
// it stops, so non-finite ones end it diverged and unsaved rather than at the step limit.
TEST_CASE("pipeline.train_loop.non_finite_terms_at_the_limit_end_diverged") {
  scripted_trainer t;
  t.nan_from = 3;
  recorded rec;
  const auto e = run<gmi::detail::solo_group>(t, settings(700), rec);
  CHECK(e.reason == gmi::stop_reason::diverged);
  CHECK(e.iterations == 7);
  CHECK(rec.saves.empty());
  REQUIRE(e.losses.has_value());
  CHECK_FALSE(e.losses->finite());
}

TEST_CASE("pipeline.train_loop.stops_when_the_group_mean_reaches_the_target") {
  scripted_trainer t;
  t.ret = 5.0;
  recorded rec;
  auto s = settings(1e9);
  s.target_return = 4.5;
  const auto e = run<twin_group>(t, s, rec);
  CHECK(e.reason == gmi::stop_reason::solved);
  CHECK(e.iterations == 10);  // the first round has no statistics yet; the second closes the window
  CHECK(e.mean_return == doctest::Approx(5.0));
  REQUIRE(rec.saves.size() == 1);
}

// The wall-clock curve: a point (seconds since the loop began, mean return) at every statistics round that gives
// a mean, beside the env-step curve's, from the loop's own clock (no host read more); the end line carries both.
TEST_CASE("pipeline.train_loop.wall_curve_has_a_point_at_every_curve_point") {
  scripted_trainer t;
  t.episodes_per_iteration = 8;  // the window (8 episodes) fills at the first round
  recorded rec;
  const auto e = run<gmi::detail::solo_group>(t, settings(3000), rec);
  REQUIRE(e.curve.size() >= 3);
  REQUIRE(e.wall_curve.size() == e.curve.size());
  for (std::size_t i = 0; i < e.curve.size(); ++i) {
    CHECK(e.wall_curve[i][1] == e.curve[i][1]);
    CHECK(e.wall_curve[i][0] >= 0.0);
    CHECK(e.wall_curve[i][0] <= e.seconds);
    if (i) CHECK(e.wall_curve[i][0] >= e.wall_curve[i - 1][0]);
  }
  const nlohmann::json end = gmi::detail::end_fields(e, "step limit");
  CHECK(end.at("wall_curve").size() == e.curve.size());
  CHECK(end.at("curve").size() == e.curve.size());
  CHECK(end.at("event") == "end");
}

TEST_CASE("pipeline.run_lines.member_metrics_path_tags_the_rank") {
  CHECK(gmi::detail::member_metrics_path("/tmp/runs.jsonl", 2) == "/tmp/runs.gmi2.jsonl");
  CHECK(gmi::detail::member_metrics_path("runs", 0) == "runs.gmi0");
  CHECK(gmi::detail::member_metrics_path(".jsonl", 1) == ".jsonl.gmi1");
}
