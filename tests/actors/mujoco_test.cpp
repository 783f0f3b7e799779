// MuJoCo tasks on the CPU actors: the Ant task's steps equal MuJoCo stepped directly with gmi::envs::ant_v4's formulas
// written out here, a run on two pinned threads (one mjData per thread, the default) equals a serial run for the
// same seed (one mjData per environment), any MJCF loads, and bad MJCF files or non-ant models are refused in one
// line.
#include <doctest/doctest.h>
#include <mujoco/mujoco.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <gmi/actors/cpu_actors.hpp>
#include <gmi/actors/mujoco.hpp>

namespace {
namespace ac = gmi::actors;
namespace mj = gmi::actors::mujoco;

std::string model_path(const char* name) { return std::string(GMI_ACTORS_MODELS) + "/" + name; }

// A fixed, varied action sequence in [-1.2, 1.2] (beyond ctrlrange at times, to check clamping is MuJoCo's).
float action_at(int step, int env, int u) { return 1.2f * std::sin(0.37f * float(step) + 1.1f * float(u) + 0.5f * float(env)); }

bool one_line(const std::string& s) { return s.find('\n') == std::string::npos && !s.empty(); }
}  // namespace

TEST_CASE("actors.mujoco.bad_mjcf_refused_in_one_line") {
  const std::string bad = "/tmp/gmi_actors_bad_" + std::to_string(::getpid()) + ".xml";
  {
    std::ofstream f(bad);
    f << "<mujoco><worldbody><body><geom type=\"sphere\" size=\"oops\"/></body></worldbody></mujoco>\n";
  }
  for (const std::string& path : {bad, std::string("/nonexistent/ant_v4.xml")}) {
    try {
      (void)mj::load(path);
      FAIL("loaded a bad MJCF file: " << path);
    } catch (const gmi::config_error& e) {
      CHECK(one_line(e.what()));
      CHECK(std::string(e.what()).find("MJCF file " + path + ": got") == 0);
    }
  }
  std::remove(bad.c_str());
  // A model that is not an ant_v4, given to the Ant task.
  CHECK_THROWS_WITH_AS(mj::sim<mj::ant_v4>(model_path("pendulum.xml"), 2, 1u), doctest::Contains("Ant model sizes"),
                       gmi::config_error);
}

TEST_CASE("actors.mujoco.ant_v4_equals_mujoco_stepped_directly") {
  mj::sim<mj::ant_v4> sim(model_path("ant_floor.xml"), 1, 7u);
  std::vector<float> obs(27), act(8);
  sim.reset_one(0, obs.data());
  // The reference: its own model and data, started from the sim's reset state.
  char error[1000] = "";
  mjModel* m = mj_loadXML(model_path("ant_floor.xml").c_str(), nullptr, error, sizeof error);
  REQUIRE_MESSAGE(m != nullptr, error);
  mjData* d = mj_makeData(m);
  mj_resetData(m, d);
  for (int i = 0; i < m->nq; ++i) d->qpos[i] = sim.data(0)->qpos[i];
  for (int i = 0; i < m->nv; ++i) d->qvel[i] = sim.data(0)->qvel[i];
  mj_forward(m, d);
  // gmi::envs::ant_v4's formulas in float: the root's (torso's) x from qpos, the cost of the clamped controls.
  const float dt = float(m->opt.timestep) * 5.0f;
  int steps_done = 0, terminated_at = -1;
  double total_forward = 0;
  for (int k = 0; k < 300 && terminated_at < 0; ++k, ++steps_done) {
    for (int u = 0; u < 8; ++u) act[std::size_t(u)] = action_at(k, 0, u);
    std::vector<float> final_obs(27, -99.0f);
    const auto r = sim.step_one(0, act.data(), obs.data(), final_obs.data());
    const float x0 = float(d->qpos[0]);
    float ctrl_cost = 0;
    for (int u = 0; u < 8; ++u) {
      const float c = std::fmin(std::fmax(act[std::size_t(u)], -1.0f), 1.0f);
      d->ctrl[u] = double(c);
      ctrl_cost += c * c;
    }
    for (int s = 0; s < 5; ++s) mj_step(m, d);
    const float forward = (float(d->qpos[0]) - x0) / dt;
    total_forward += forward;
    const float z = float(d->qpos[2]);
    const bool healthy = z >= 0.2f && z <= 1.0f;
    const float reward = 1.0f * forward + 1.0f - 0.5f * ctrl_cost;
    REQUIRE(r.reward == doctest::Approx(reward).epsilon(1e-6));
    REQUIRE(r.terminated == !healthy);
    std::vector<float> expect;
    for (int i = 2; i < m->nq; ++i) expect.push_back(float(d->qpos[i]));
    for (int i = 0; i < m->nv; ++i) expect.push_back(float(d->qvel[i]));
    REQUIRE(r.terminated == (final_obs[0] != -99.0f));
    REQUIRE((r.terminated ? final_obs : obs) == expect);  // after termination obs is the next episode's first
    if (r.terminated) terminated_at = k;
  }
  CHECK(steps_done > 10);
  CHECK(std::isfinite(total_forward));
  mj_deleteData(d);
  mj_deleteModel(m);
}

TEST_CASE("actors.mujoco.actors_equal_serial_run") {
  constexpr int n = 8, steps = 60;
  const auto cores = ac::choose_cores(std::min<int>(2, int(ac::available_cores().size())));
  const auto model = mj::load(model_path("ant_floor.xml"));
  mj::ant_v4::params p;
  p.max_steps = 25;  // time limits inside the run
  ac::cpu_actors<mj::sim<mj::ant_v4>> actors({cores, 2}, model, n, 21u, p);
  static_assert(gmi::batch_env<ac::cpu_actors<mj::sim<mj::ant_v4>>>);
  mj::sim<mj::ant_v4> serial(model, n, 21u, p, mj::data_layout::per_env);  // the actors: per_thread (default)
  std::vector<float> oa(n * 27), ob(n * 27), act(n * 8), ra(n), rb(n);
  std::vector<std::uint8_t> ta(n), tb(n), ua(n), ub(n);
  actors.reset({oa.data(), oa.size()});
  for (std::size_t i = 0; i < n; ++i) serial.reset_one(i, ob.data() + i * 27);
  REQUIRE(oa == ob);
  int truncations = 0;
  for (int k = 0; k < steps; ++k) {
    for (int i = 0; i < n; ++i) {
      for (int u = 0; u < 8; ++u) act[std::size_t(i * 8 + u)] = action_at(k, i, u);
    }
    actors.step({act.data(), act.size()}, {oa.data(), oa.size()}, {ra.data(), ra.size()}, {ta.data(), ta.size()},
                {ua.data(), ua.size()});
    for (std::size_t i = 0; i < n; ++i) {
      const auto r = serial.step_one(i, act.data() + i * 8, ob.data() + i * 27, nullptr);
      rb[i] = r.reward;
      tb[i] = r.terminated;
      ub[i] = r.truncated;
    }
    REQUIRE(oa == ob);
    REQUIRE(ra == rb);
    REQUIRE(ta == tb);
    REQUIRE(ua == ub);
    for (auto u : ua) truncations += u;
  }
  CHECK(truncations > 0);
  const auto sa = actors.read_stats(), sb = serial.read_stats();
  CHECK(sa.episodes == sb.episodes);
  CHECK(sa.return_sum == sb.return_sum);
}

TEST_CASE("actors.mujoco.random_episode_start") {
  // ppo_config::random_episode_start on MuJoCo actors: the same initial states as in-phase starts, first episodes
  // cut at max_steps - draw (the actors and a serial sim alike) and left out of the statistics.
  constexpr int n = 8, max_steps = 25;
  const auto cores = ac::choose_cores(std::min<int>(2, int(ac::available_cores().size())));
  const auto model = mj::load(model_path("ant_floor.xml"));
  mj::ant_v4::params p;
  p.max_steps = max_steps;
  constexpr auto random = gmi::rl::episode_start::random_step;
  ac::cpu_actors<mj::sim<mj::ant_v4>> actors({cores, 2}, model, n, 5u, p);
  mj::sim<mj::ant_v4> serial(model, n, 5u, p), in_phase(model, n, 5u, p);
  std::vector<float> oa(n * 27), ob(n * 27), oc(n * 27), act(n * 8);
  std::vector<float> ra(n);
  std::vector<std::uint8_t> ta(n), ua(n);
  actors.reset({oa.data(), oa.size()}, nullptr, random);
  for (std::size_t i = 0; i < n; ++i) {
    serial.reset_one(i, ob.data() + i * 27, random);
    in_phase.reset_one(i, oc.data() + i * 27);
  }
  REQUIRE(oa == ob);
  CHECK(oa == oc);
  std::vector<int> first_end(n, 0), in_phase_end(n, 0);
  for (int k = 1; k <= max_steps; ++k) {
    for (int i = 0; i < n; ++i) {
      for (int u = 0; u < 8; ++u) act[std::size_t(i * 8 + u)] = 0.1f * action_at(k, i, u);
    }
    actors.step({act.data(), act.size()}, {oa.data(), oa.size()}, {ra.data(), ra.size()}, {ta.data(), ta.size()},
                {ua.data(), ua.size()});
    for (std::size_t i = 0; i < n; ++i) {
      const auto r = serial.step_one(i, act.data() + i * 8, ob.data() + i * 27, nullptr);
      CHECK(r.truncated == (ua[i] != 0));
      CHECK(r.terminated == (ta[i] != 0));
      if ((r.truncated || r.terminated) && first_end[i] == 0) first_end[i] = k;
      const auto c = in_phase.step_one(i, act.data() + i * 8, oc.data() + i * 27, nullptr);
      if ((c.truncated || c.terminated) && in_phase_end[i] == 0) in_phase_end[i] = k;
    }
    REQUIRE(oa == ob);
  }
  int cut_early = 0;
  for (int i = 0; i < n; ++i) {
    CAPTURE(i);
    CHECK(first_end[i] >= 1);  // every first episode ended within max_steps steps
    CHECK(in_phase_end[i] >= 1);
    cut_early += first_end[i] < in_phase_end[i];
  }
  CHECK(cut_early >= n / 2);  // draws in [0, 25): most first episodes are shorter
  // The first episodes are not counted; the in-phase ones are (the ones that ran to the limit at least).
  const auto sa = actors.read_stats(), sb = serial.read_stats(), sc = in_phase.read_stats();
  CHECK(sa.episodes == sb.episodes);
  CHECK(sa.episodes == 0);  // the second episodes (25 steps from step 25 - draw) are still running
  CHECK(sc.episodes >= std::uint64_t(n));
}

TEST_CASE("actors.mujoco.any_mjcf") {
  mj::sim<mj::mjcf_task> sim(model_path("humanoid_tree.xml"), 3, 2u, {2, 0.05, 50});
  const mjModel* m = sim.model();
  CHECK(sim.obs_dim() == m->nq + m->nv);
  CHECK(sim.act_dim() == m->nu);
  std::vector<float> obs(std::size_t(3 * sim.obs_dim())), act(std::size_t(sim.act_dim()), 0.3f);
  for (std::size_t i = 0; i < 3; ++i) sim.reset_one(i, obs.data() + i * std::size_t(sim.obs_dim()));
  CHECK(obs[0] != obs[std::size_t(sim.obs_dim())]);  // reset noise differs between environments
  int truncated = 0;
  for (int k = 0; k < 60; ++k) truncated += sim.step_one(0, act.data(), obs.data(), nullptr).truncated;
  CHECK(truncated == 1);
  CHECK(sim.read_stats().episodes == 1);
}
