// Placement by metric: the GPU wins at the default threshold when clearly faster, the threshold overrides it, bad profiles
// are refused in one line, and a real CPU step is timed. The threshold checked against training lines
// (threshold_check.hpp): right and wrong points, the range of right thresholds, refusals, points keyed by task,
// actor cores and batch.
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include <gmi/actors/cores.hpp>
#include <gmi/actors/threshold_check.hpp>
#include <gmi/actors/host_sim.hpp>
#include <gmi/envs/pendulum.hpp>
#include <gmi/plan/placement.hpp>

namespace plan = gmi::plan;

TEST_CASE("plan.placement.faster_side_wins") {
  // 8 cores at 50 us per step: 160 K steps/s; the GPU does 4096 envs in 10 ms: 409.6 K steps/s.
  plan::placement_profile p{"ant_v4", 4096, 8, 50e-6, 10e-3};
  auto c = plan::choose_placement(p);
  CHECK(c.chosen == plan::placement::gpu_simulation);
  CHECK(c.cpu_steps_per_s == doctest::Approx(160e3));
  CHECK(c.gpu_steps_per_s == doctest::Approx(409.6e3));
  // A small batch: 256 envs in the same 10 ms is 25.6 K steps/s; CPU actors win.
  p.batch = 256;
  CHECK(plan::choose_placement(p).chosen == plan::placement::cpu_actors);
  const auto line = plan::choose_placement(p).line();
  CHECK(line["bench"] == "placement");
  CHECK(line["chosen"] == "cpu");
}

TEST_CASE("plan.placement.threshold_overrides") {
  const plan::placement_profile p{"ant_v4", 4096, 8, 50e-6, 10e-3};  // gpu 2.56x cpu
  CHECK(plan::choose_placement(p, {2.0}).chosen == plan::placement::gpu_simulation);
  CHECK(plan::choose_placement(p, {3.0}).chosen == plan::placement::cpu_actors);
}

TEST_CASE("plan.placement.default_threshold_decides_the_measured_extremes") {
  // The two points nearest the threshold at b864026 (bench/results/actors/*-b864026-actors7.jsonl, 14 actor cores):
  // Humanoid at batch 224, the GPU's step 1.035x the actors' but CPU actors trained faster (88.1 K against 74.8 K env
  // steps/s); Ant at batch 1792, the GPU's step 1.957x and GPU simulation trained faster (461.7 K against 197.3 K).
  // The former default of 1 took the GPU for both.
  const auto choose = [](double ratio, plan::placement_rule rule = {}) {  // CPU side: 10 cores at 100 us a step
    return plan::choose_placement({"task", 1000, 10, 1e-4, 1000.0 / (ratio * 10.0 / 1e-4)}, rule).chosen;
  };
  CHECK(choose(1.035) == plan::placement::cpu_actors);
  CHECK(choose(1.957) == plan::placement::gpu_simulation);
  CHECK(choose(1.035, {1.0}) == plan::placement::gpu_simulation);
}

TEST_CASE("plan.placement.bad_profiles_refused_in_one_line") {
  CHECK_THROWS_WITH_AS((void)plan::choose_placement({"ant_v4", 0, 8, 50e-6, 1e-3}),
                       doctest::Contains("placement batch for ant_v4: got 0"), gmi::config_error);
  CHECK_THROWS_WITH_AS((void)plan::choose_placement({"ant_v4", 64, 8, 0, 1e-3}),
                       doctest::Contains("cpu_seconds_per_step"), gmi::config_error);
  CHECK_THROWS_WITH_AS((void)plan::choose_placement({"ant_v4", 64, 8, 1e-5, 1e-3}, {0.0}),
                       doctest::Contains("placement threshold: got 0"), gmi::config_error);
}

TEST_CASE("plan.placement.times_a_real_cpu_step") {
  gmi::actors::pin_this_thread(gmi::actors::available_cores().front());
  gmi::actors::env_sim<gmi::envs::pendulum> sim(1, 3u);
  float obs[3], action[1] = {0.5f};
  sim.reset_one(0, obs);
  const double t = plan::seconds_per_call([&] { (void)sim.step_one(0, action, obs, nullptr); }, 10, 1000, 0.01);
  CHECK(t > 0);
  CHECK(t < 1e-3);
}

namespace {
// actors_train's three lines for one point: CPU-actor training, GPU-simulation training beside it, placement. With
// batch > 0 every line says it (`size` names the training lines' field: actors_place's "batch", actors_train's
// "num_envs"; placement lines always say "batch"); without, the lines of older benches.
std::string train_lines(int cores, double cpu_sim, double gpu_sim, double cpu_train, double gpu_train,
                        const std::string& task = "cartpole", int batch = 0, const std::string& size = "batch") {
  const std::string c = std::to_string(cores);
  const auto quoted = [](const std::string& t) { return "\"" + t + "\""; };
  const std::string train_size = batch > 0 ? ",\"" + size + "\":" + std::to_string(batch) : "";
  const std::string placement_size = batch > 0 ? ",\"batch\":" + std::to_string(batch) : "";
  return R"({"bench":"cpu_actors_ppo","impl":"gmi","task":)" + quoted(task) + R"(,"phase":"stepping","actor_cores":)" + c +
         R"(,"median":1e9})" "\n" +
         R"({"bench":"cpu_actors_ppo","impl":"gmi","task":)" + quoted(task) + R"(,"phase":"train","actor_cores":)" + c +
         train_size + R"(,"median":)" + std::to_string(cpu_train) + "}\n" +
         R"({"bench":"cpu_actors_ppo","impl":"gmi.gpu_simulation","task":)" + quoted(task) + R"(,"phase":"train","actor_cores":0,)"
         R"("for_actor_cores":)" + c + train_size + R"(,"median":)" + std::to_string(gpu_train) + "}\n" +
         R"({"bench":"placement","task":)" + quoted(task) + R"(,"chosen":"x","actor_cores":)" + c + placement_size +
         R"(,"cpu_steps_per_s":)" + std::to_string(cpu_sim) + R"(,"gpu_steps_per_s":)" + std::to_string(gpu_sim) +
         "}\n";
}
}  // namespace

TEST_CASE("actors.placement.threshold_checked_against_training") {
  namespace ac = gmi::actors;
  // Ratios (gpu_sim / cpu_sim) 40, 8, 2.5: the GPU trains faster at the first two, CPU actors at the third.
  std::istringstream in(train_lines(1, 1e5, 4e6, 1e5, 2e6) + train_lines(4, 4e5, 3.2e6, 3e5, 1.9e6) +
                        train_lines(14, 1.2e6, 3e6, 9e5, 8e5) +
                        // a point without its GPU line is left out
                        R"({"bench":"placement","task":"cartpole","actor_cores":7,)"
                        R"("cpu_steps_per_s":1,"gpu_steps_per_s":2})" "\n");
  const auto points = ac::threshold_points_from_lines(in, "train.jsonl");
  REQUIRE(points.size() == 3);
  CHECK(points[0].actor_cores == 1);
  CHECK(points[2].ratio() == doctest::Approx(2.5));
  // T = 1 calls the 14-core point GPU (2.5 >= 1) though CPU actors trained faster there: wrong.
  auto v = ac::check_threshold(points, 1.0);
  CHECK(v.points == 3);
  CHECK(v.right == 2);
  CHECK(v.low == doctest::Approx(2.5));
  CHECK(v.high == doctest::Approx(8));
  REQUIRE(v.exists());
  const double t = *v.suggested();
  CHECK(t == doctest::Approx(std::sqrt(2.5 * 8)));
  CHECK(ac::check_threshold(points, t).right == 3);
  CHECK(*ac::check_threshold(points, 5.0).suggested() == 5.0);  // a right threshold is kept
  // Every point favouring the GPU: any T up to the smallest ratio.
  const std::vector<ac::threshold_point> gpu_only(points.begin(), points.begin() + 2);
  CHECK(ac::check_threshold(gpu_only, 1.0).right == 2);
  CHECK(*ac::check_threshold(gpu_only, 1.0).suggested() == 1.0);
  // Contradicting points (the GPU side faster at a lower ratio than a CPU-faster one): no threshold fits.
  auto clash = points;
  clash[2].gpu_sim = 1e8;  // ratio 83, yet CPU actors trained faster
  CHECK_FALSE(ac::check_threshold(clash, 1.0).exists());
  CHECK_FALSE(ac::check_threshold(clash, 1.0).suggested().has_value());
}

TEST_CASE("actors.placement.threshold_check_refuses_bad_input_in_one_line") {
  namespace ac = gmi::actors;
  std::istringstream bad("{\"bench\":\"placement\",\"task\":\"cartpole\",\"actor_cores\":2}\n");
  const std::string msg = [&] {
    try {
      (void)ac::threshold_points_from_lines(bad, "t.jsonl");
    } catch (const gmi::config_error& e) {
      return std::string(e.what());
    }
    return std::string();
  }();
  CHECK(msg.find("t.jsonl:1: not an actors_train line") != std::string::npos);
  CHECK(msg.find('\n') == std::string::npos);
  std::istringstream not_json("{oops\n");
  CHECK_THROWS_AS((void)ac::threshold_points_from_lines(not_json, "t.jsonl"), gmi::config_error);
  CHECK_THROWS_WITH_AS((void)ac::check_threshold({}, 1.0), doctest::Contains("points: got 0"), gmi::config_error);
  ac::threshold_point p{"cartpole", 2, 1, 2, 0, 3};
  CHECK_THROWS_WITH_AS((void)ac::check_threshold({p}, 1.0), doctest::Contains("finite rates > 0"), gmi::config_error);
  p.cpu_train = 1;
  CHECK_THROWS_WITH_AS((void)ac::check_threshold({p}, -1.0), doctest::Contains("placement threshold: got -1"),
                       gmi::config_error);
}

TEST_CASE("actors.placement.threshold_checked_per_task") {
  namespace ac = gmi::actors;
  // The MuJoCo tasks' points beside Cartpole's (gmi.bench.actors_place writes them in the same shape): each task
  // is checked on its own points. Humanoid: the GPU trains faster at ratio 3 and CPU actors at 0.8, so T = 1 is
  // right; anymal: CPU actors train faster at ratio 1.5, so T = 1 is wrong there and the range is (1.5, 6].
  std::istringstream in(train_lines(1, 1e5, 4e6, 1e5, 2e6) + train_lines(3, 2e5, 6e5, 1e5, 3e5, "humanoid_v4") +
                        train_lines(14, 1e6, 8e5, 9e5, 5e5, "humanoid_v4") + train_lines(3, 2e5, 1.2e6, 1e5, 4e5, "anymal") +
                        train_lines(14, 1e6, 1.5e6, 9e5, 5e5, "anymal"));
  const auto by_task = ac::check_threshold_by_task(ac::threshold_points_from_lines(in, "place.jsonl"), 1.0);
  REQUIRE(by_task.size() == 3);
  CHECK(by_task[0].task == "anymal");
  CHECK(by_task[1].task == "cartpole");
  CHECK(by_task[2].task == "humanoid_v4");
  CHECK(by_task[2].points.size() == 2);
  CHECK(by_task[2].verdict.right == 2);
  CHECK(by_task[2].verdict.low == doctest::Approx(0.8));
  CHECK(by_task[2].verdict.high == doctest::Approx(3));
  CHECK(by_task[0].verdict.right == 1);
  CHECK(by_task[0].verdict.low == doctest::Approx(1.5));
  CHECK(by_task[0].verdict.high == doctest::Approx(6));
  CHECK(*by_task[0].verdict.suggested() == doctest::Approx(3));
  CHECK(by_task[1].verdict.right == 1);
  CHECK_THROWS_WITH_AS((void)ac::check_threshold_by_task({}, 1.0), doctest::Contains("points: got 0"), gmi::config_error);
}

TEST_CASE("actors.placement.threshold_points_keyed_by_batch") {
  namespace ac = gmi::actors;
  // Ant at 14 actor cores and two batches (actors_place's lines, "batch" on each): at 56 envs (2 per core and group)
  // the GPU simulates 28 K env steps/s against 210 K on the cores (ratio 0.13) and CPU actors train faster; at 1792
  // (64 per core and group) the GPU simulates 3x the cores and trains faster. Two points at one core count.
  std::istringstream in(train_lines(14, 2.1e5, 2.8e4, 1.5e5, 2.5e4, "ant_v4", 56) +
                        train_lines(14, 2.1e5, 6.3e5, 1.9e5, 3.1e5, "ant_v4", 1792));
  const auto points = ac::threshold_points_from_lines(in, "place.jsonl");
  REQUIRE(points.size() == 2);
  CHECK(points[0].actor_cores == 14);
  CHECK(points[1].actor_cores == 14);
  CHECK(points[0].batch == 56);
  CHECK(points[1].batch == 1792);
  CHECK_FALSE(points[0].gpu_trains_faster());
  CHECK(points[1].gpu_trains_faster());
  // The CPU-wins point bounds the range from below (consistent_low > 0), the GPU-wins point from above: T = 1 is
  // inside and decides both right.
  const auto v = ac::check_threshold(points, 1.0);
  CHECK(v.right == 2);
  CHECK(v.low == doctest::Approx(2.8e4 / 2.1e5));
  CHECK(v.high == doctest::Approx(3));
  CHECK(*v.suggested() == 1.0);
  // The CPU-wins point alone: bounded below only (high infinite), suggested a factor 2 above low.
  const auto cpu_only = ac::check_threshold({points[0]}, 0.1);
  CHECK(cpu_only.right == 0);  // T = 0.1 calls it GPU (0.13 >= 0.1)
  CHECK(std::isinf(cpu_only.high));
  CHECK(*cpu_only.suggested() == doctest::Approx(2 * 2.8e4 / 2.1e5));
}

TEST_CASE("actors.placement.threshold_points_mixed_and_old_lines") {
  namespace ac = gmi::actors;
  // actors_train's lines (the batch as "num_envs" on the training lines) beside actors_place's ("batch"), one task:
  // the two shapes join at equal batches, and a third point comes from older lines without any batch (key 0).
  // Lines of one core count whose batches differ are not one point: the 7-core point's placement is at another
  // batch than its training lines, so it is left out.
  std::istringstream in(train_lines(3, 4.5e4, 2e5, 4e4, 9e4, "ant_v4", 384, "num_envs") +
                        train_lines(3, 4.5e4, 1.2e4, 4.2e4, 1.1e4, "ant_v4", 12) +
                        train_lines(1, 1.5e4, 8e4, 1.3e4, 5.2e4, "ant_v4") +
                        R"({"bench":"cpu_actors_ppo","impl":"gmi","task":"ant_v4","phase":"train","actor_cores":7,)"
                        R"("batch":896,"median":1})" "\n"
                        R"({"bench":"cpu_actors_ppo","impl":"gmi.gpu_simulation","task":"ant_v4","phase":"train",)"
                        R"("actor_cores":0,"for_actor_cores":7,"batch":896,"median":2})" "\n"
                        R"({"bench":"placement","task":"ant_v4","actor_cores":7,"batch":28,)"
                        R"("cpu_steps_per_s":1,"gpu_steps_per_s":2})" "\n");
  const auto points = ac::threshold_points_from_lines(in, "mixed.jsonl");
  REQUIRE(points.size() == 3);
  CHECK(points[0].actor_cores == 1);
  CHECK(points[0].batch == 0);
  CHECK(points[0].ratio() == doctest::Approx(8e4 / 1.5e4));
  CHECK(points[1].batch == 12);
  CHECK(points[2].batch == 384);
  CHECK(points[2].cpu_train == doctest::Approx(4e4));
  const auto by_task = ac::check_threshold_by_task(points, 1.0);
  REQUIRE(by_task.size() == 1);
  const auto& v = by_task[0].verdict;
  CHECK(v.points == 3);
  CHECK(v.right == 3);
  CHECK(v.low == doctest::Approx(1.2e4 / 4.5e4));     // the small batch, CPU actors faster
  CHECK(v.high == doctest::Approx(2e5 / 4.5e4));      // the smallest GPU-wins ratio (384 envs at 3 cores)
  // A rate of 0 names the point's batch in its one line.
  auto bad = points;
  bad[1].gpu_train = 0;
  CHECK_THROWS_WITH_AS((void)ac::check_threshold(bad, 1.0), doctest::Contains("ant_v4 at 3 actor cores and batch 12"),
                       gmi::config_error);
}
