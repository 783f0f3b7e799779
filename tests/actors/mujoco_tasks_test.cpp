// The Ant, Humanoid and Anymal tasks on MuJoCo against gmi::physics's (gmi::envs::ant_v4, gmi::envs::humanoid_v4,
// gmi::envs::anymal), on the same model files (include/gmi/physics/builtin/*.xml):
//  - the same reset state for the same seed and environment, and the same observation on it (exactly);
//  - the reward on MuJoCo's states equals gmi's reward formula evaluated on them (ant_v4 and anymal exactly; humanoid_v4
//    to the float round-off of the centre of mass, which gmi computes with its own float kinematics);
//  - 50 env steps under a fixed action sequence from the same state: gmi's host step (float, its solver
//    tolerance 1e-7, as tests/physics/tasks_mujoco_test.cpp's tight case) and MuJoCo's follow each other within
//    the tolerances below (qpos in m or rad: ant_v4 and humanoid_v4 1e-4 until the episode ends, 1e-3 over all 50
//    steps, reward 1e-4; anymal 1e-5 and reward 1e-6) and end at the same step;
//  - models of other tasks refused in one line;
//  - a save, a fresh sim loaded from the file and more steps equal the steps of a sim that never stopped (MuJoCo
//    state and the task's own floats: anymal's command and last action); without the task floats they do not;
//  - gmi::physics's embedded MJCF compiles in MuJoCo, and placement's CPU side is timed on each task.
#include <doctest/doctest.h>
#include <mujoco/mujoco.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

#include <gmi/actors/cores.hpp>
#include <gmi/actors/mujoco.hpp>
#include <gmi/plan/mujoco_placement.hpp>
#include <gmi/io/gmi_file.hpp>

namespace {
namespace mj = gmi::actors::mujoco;

std::string builtin(const char* name) { return std::string(GMI_BUILTIN_MODELS) + "/" + name; }
bool one_line(const std::string& s) { return !s.empty() && s.find('\n') == std::string::npos; }

// A fixed, gait-like action sequence in [-1, 1].
float action_at(int t, int u) { return float(std::sin(0.35 * t + 0.9 * u) * (u % 2 ? 0.9 : 0.7)); }

// gmi's params bound to gmi::physics's table of the task's model (kept alive by the returned table).
template <class Def>
struct bound {
  typename Def::params p;
  std::vector<float> table;
  explicit bound(float tolerance = 1e-6f) {
    p.solver_tolerance = tolerance;
    table = Def::make_table(p);
    Def::bind_table(p, table.data());
  }
};

template <class Def>
std::vector<float> observe(const typename Def::state& s, const typename Def::params& p) {
  std::vector<float> o(Def::obs_dim);
  Def::observe(s, o.data(), p);
  return o;
}

// Environment i's MuJoCo state (and task floats) as gmi's state.
template <class Task>
typename Task::definition::state state_of(mj::sim<Task>& sim, std::size_t i) {
  if constexpr (requires { Task::task_state_size; }) {
    return sim.task().state_of(sim.data(i), sim.task_state(i));
  } else {
    return sim.task().state_of(sim.data(i));
  }
}

// Resets of 3 environments (seed 5) equal gmi's reset from the same streams (qpos: mj_forward renormalizes the
// root quaternion in double, so up to that rounding), and the observation is gmi's of MuJoCo's state, exactly.
template <class Task>
void check_resets(mj::sim<Task>& sim, const bound<typename Task::definition>& g) {
  using Def = typename Task::definition;
  std::vector<float> obs(Task::obs_size);
  for (std::size_t i = 0; i < 3; ++i) {
    sim.reset_one(i, obs.data());
    typename Def::state s;
    gmi::rng r(5u, i);
    Def::reset(s, r, g.p);
    for (int k = 0; k < Def::sim::nq; ++k) REQUIRE(sim.data(i)->qpos[k] == doctest::Approx(s.qpos[k]).epsilon(1e-7));
    for (int k = 0; k < Def::sim::nv; ++k) REQUIRE(sim.data(i)->qvel[k] == double(s.qvel[k]));
    const typename Def::state m = state_of(sim, i);
    if constexpr (requires { Task::task_state_size; }) {
      for (int k = 0; k < 3; ++k) REQUIRE(m.command[k] == s.command[k]);
    }
    REQUIRE(obs == observe<Def>(m, g.p));
  }
}

struct trajectory_diff {
  double qpos = 0, reward = 0;  // largest |diff| over the env steps before either episode ended
  double qpos_all = 0;          // over all the steps (both go on stepping after an end: no reset)
  int end_gmi = -1, end_mujoco = -1, mismatched_ends = 0;
};

// Steps gmi's task and the MuJoCo task (its own mjData, no sim: no auto-reset) from the same reset state (seed
// 11, environment 0) under scale x action_at for `steps` env steps.
template <class Task>
trajectory_diff follow(const char* file, int steps, float scale) {
  using Def = typename Task::definition;
  const mj::model_ptr model = mj::load(builtin(file));
  const Task task(model.get(), typename Task::params{});
  std::unique_ptr<mjData, void (*)(mjData*)> d(mj_makeData(model.get()), mj_deleteData);
  float task_state[Task::act_size + 3] = {};
  gmi::rng rm(11u, 0);
  bound<Def> g(1e-7f);
  typename Def::state s;
  gmi::rng r(11u, 0);
  Def::reset(s, r, g.p);
  if constexpr (requires { Task::task_state_size; }) {
    task.reset(d.get(), task_state, rm);
  } else {
    task.reset(d.get(), rm);
  }
  std::vector<float> act(Task::act_size);
  trajectory_diff out;
  for (int t = 0; t < steps; ++t) {
    for (int u = 0; u < Task::act_size; ++u) act[std::size_t(u)] = scale * action_at(t, u);
    gmi::transition a;
    if constexpr (requires { Task::task_state_size; }) {
      a = task.step(d.get(), task_state, act.data());
    } else {
      a = task.step(d.get(), act.data());
    }
    const gmi::transition b = Def::step(s, act.data(), r, g.p);
    const bool running = out.end_gmi < 0 && out.end_mujoco < 0;
    if (a.terminated && out.end_mujoco < 0) out.end_mujoco = t;
    if (b.terminated && out.end_gmi < 0) out.end_gmi = t;
    out.mismatched_ends += a.terminated != b.terminated;
    double dq = 0;
    for (int k = 0; k < Def::sim::nq; ++k) dq = std::max(dq, std::fabs(d->qpos[k] - double(s.qpos[k])));
    out.qpos_all = std::max(out.qpos_all, dq);
    if (running) {
      out.qpos = std::max(out.qpos, dq);
      out.reward = std::max(out.reward, double(std::fabs(a.reward - b.reward)));
    }
  }
  MESSAGE(std::string(file) << ": " << steps << " env steps, before an end: qpos max |diff| " << out.qpos
                            << ", reward max |diff| " << out.reward << "; all steps: qpos max |diff| " << out.qpos_all
                            << "; first end (gmi, MuJoCo) " << out.end_gmi << ", " << out.end_mujoco
                            << "; steps whose end flags differ " << out.mismatched_ends);
  return out;
}
}  // namespace

TEST_CASE("actors.mujoco.tasks_refuse_other_models_in_one_line") {
  const auto refused = [](auto make, const char* what) {
    try {
      make();
      FAIL("accepted another task's model: " << what);
    } catch (const gmi::config_error& e) {
      CHECK(one_line(e.what()));
      CHECK(std::string(e.what()).find(what) != std::string::npos);
    }
  };
  refused([] { mj::sim<mj::humanoid_v4>(builtin("ant_v4.xml"), 1, 1u); }, "Humanoid model sizes (nq, nv, nu): got \"15, 14, 8\", need 24, 23, 17");
  refused([] { mj::sim<mj::anymal>(builtin("humanoid_v4.xml"), 1, 1u); }, "Anymal model sizes (nq, nv, nu): got \"24, 23, 17\", need 19, 18, 12");
  refused([] { mj::sim<mj::ant_v4>(builtin("anymal.xml"), 1, 1u); }, "Ant model sizes");
}

TEST_CASE("actors.mujoco.ant_v4_defined_as_gmi_physics") {
  using Def = gmi::envs::ant_v4;
  mj::sim<mj::ant_v4> sim(builtin("ant_v4.xml"), 3, 5u);
  bound<Def> g;
  std::vector<float> obs(27), act(8);
  check_resets(sim, g);
  // gmi's control and finish on MuJoCo's states before and after each step: the same reward and end, exactly.
  int steps = 0;
  for (int t = 0; t < 40; ++t, ++steps) {
    for (int u = 0; u < 8; ++u) act[std::size_t(u)] = 1.5f * action_at(t, u);  // beyond ctrlrange at times
    const Def::state before = state_of(sim, 0);
    float ctrl[8], carry[Def::carry_dim];
    Def::control(before, act.data(), g.p, ctrl, carry, nullptr);
    const auto a = sim.step_one(0, act.data(), obs.data(), nullptr);
    if (a.terminated) break;  // obs and data are the next episode's
    for (int u = 0; u < 8; ++u) REQUIRE(sim.data(0)->ctrl[u] == double(ctrl[u]));
    Def::state after = state_of(sim, 0);
    const gmi::transition b = Def::finish(after, act.data(), carry, gmi::physics::data<float>{}, g.p, nullptr);
    REQUIRE(obs == observe<Def>(after, g.p));
    REQUIRE(a.terminated == b.terminated);
    REQUIRE(a.reward == b.reward);
  }
  CHECK(steps >= 10);
}

TEST_CASE("actors.mujoco.humanoid_v4_defined_as_gmi_physics") {
  using Def = gmi::envs::humanoid_v4;
  mj::sim<mj::humanoid_v4> sim(builtin("humanoid_v4.xml"), 3, 5u);
  bound<Def> g;
  std::vector<float> obs(45), act(17);
  check_resets(sim, g);
  // gmi's control and finish on MuJoCo's states before and after each step.
  std::vector<float> scratch(Def::sim::scratch_reals);
  int steps = 0;
  double worst = 0;
  for (int t = 0; t < 40; ++t, ++steps) {
    for (int u = 0; u < 17; ++u) act[std::size_t(u)] = 1.5f * action_at(t, u);  // beyond ctrlrange at times
    const Def::state before = state_of(sim, 0);
    float ctrl[17], carry[Def::carry_dim];
    Def::control(before, act.data(), g.p, ctrl, carry, scratch.data());
    const auto a = sim.step_one(0, act.data(), obs.data(), nullptr);
    if (a.terminated) break;  // obs and data are the next episode's
    for (int u = 0; u < 17; ++u) REQUIRE(sim.data(0)->ctrl[u] == double(ctrl[u]));
    Def::state after = state_of(sim, 0);
    const gmi::transition b = Def::finish(after, act.data(), carry, gmi::physics::data<float>{}, g.p, scratch.data());
    REQUIRE(obs == observe<Def>(after, g.p));
    REQUIRE(a.terminated == b.terminated);
    worst = std::max(worst, double(std::fabs(a.reward - b.reward)));
  }
  MESSAGE("humanoid_v4: " << steps << " steps, reward max |diff| " << worst << " (centre of mass in double and float)");
  CHECK(steps >= 10);
  CHECK(worst < 1e-4);
}

TEST_CASE("actors.mujoco.anymal_defined_as_gmi_physics") {
  using Def = gmi::envs::anymal;
  // per_env: data(0) is environment 0's own last step (its actuator forces and contacts)
  mj::sim<mj::anymal> sim(builtin("anymal.xml"), 3, 5u, {}, mj::data_layout::per_env);
  bound<Def> g;
  std::vector<float> obs(48), act(12);
  check_resets(sim, g);
  int steps = 0, contacts = 0;
  for (int t = 0; t < 40; ++t, ++steps) {
    for (int u = 0; u < 12; ++u) act[std::size_t(u)] = action_at(t, u);
    const Def::state before = state_of(sim, 0);
    const auto a = sim.step_one(0, act.data(), obs.data(), nullptr);
    if (a.terminated) break;
    const mjData* d = sim.data(0);
    Def::state after = state_of(sim, 0);
    for (int j = 0; j < 12; ++j) {
      REQUIRE(d->ctrl[j] == double(Def::default_joint(j, g.p) + g.p.action_scale * act[std::size_t(j)]));
      REQUIRE(after.last_action[j] == act[std::size_t(j)]);
    }
    REQUIRE(obs == observe<Def>(after, g.p));
    std::copy_n(before.last_action, 12, after.last_action);  // the terms compare with the action before
    float torque[12];
    for (int j = 0; j < 12; ++j) torque[j] = float(d->actuator_force[j]);
    REQUIRE(a.reward == Def::terms(after, before.qvel, act.data(), torque, g.p).sum());
    contacts += d->ncon;
    for (int c = 0; c < d->ncon; ++c) REQUIRE((d->contact[c].geom1 != Def::base_geom && d->contact[c].geom2 != Def::base_geom));
  }
  CHECK(contacts > 0);  // the feet touched the floor
  CHECK(steps >= 20);
  CHECK(steps < 40);  // then the base did, and the episode ended
}

TEST_CASE("actors.mujoco.tasks_follow_gmi_physics_for_50_steps") {
  // Float against double and a chaotic system once a foot lands hard (docs/physics.md): the bounds are those of
  // the first 50 env steps from the reset state, with gmi's solver tolerance 1e-7.
  SUBCASE("ant_v4") {
    const trajectory_diff d = follow<mj::ant_v4>("ant_v4.xml", 50, 1.0f);
    CHECK(d.end_gmi == d.end_mujoco);
    CHECK(d.end_gmi >= 10);  // the torso leaves the healthy range: the end is compared too
    CHECK(d.qpos < 1e-4);
    CHECK(d.reward < 1e-4);
    CHECK(d.qpos_all < 1e-3);
    CHECK(d.mismatched_ends == 0);
  }
  SUBCASE("humanoid_v4") {
    const trajectory_diff d = follow<mj::humanoid_v4>("humanoid_v4.xml", 50, 1.0f);
    CHECK(d.end_gmi == d.end_mujoco);
    CHECK(d.end_gmi >= 10);  // it falls: the end is compared too
    CHECK(d.qpos < 1e-4);
    CHECK(d.reward < 1e-4);
    CHECK(d.qpos_all < 1e-3);
    CHECK(d.mismatched_ends == 0);
  }
  SUBCASE("anymal") {
    const trajectory_diff d = follow<mj::anymal>("anymal.xml", 50, 0.5f);
    CHECK(d.end_gmi == d.end_mujoco);
    CHECK(d.end_gmi == -1);  // half the actions: it stays up for all 50 steps
    CHECK(d.qpos < 1e-5);
    CHECK(d.reward < 1e-6);
    CHECK(d.qpos_all < 1e-5);
    CHECK(d.mismatched_ends == 0);
  }
}

TEST_CASE("actors.mujoco.builtin_models_from_text") {
  // gmi::physics's embedded MJCF compiles in MuJoCo to the model of the file it came from, and each task takes it.
  const auto same = [](const mj::model_ptr& a, const mj::model_ptr& b) {
    CHECK(a->nq == b->nq);
    CHECK(a->nv == b->nv);
    CHECK(a->nu == b->nu);
    CHECK(a->ngeom == b->ngeom);
    CHECK(a->opt.timestep == b->opt.timestep);
    for (int i = 0; i < a->nbody; ++i) CHECK(a->body_mass[i] == b->body_mass[i]);
  };
  same(gmi::plan::mujoco_model_of<gmi::envs::ant_v4>(), mj::load(builtin("ant_v4.xml")));
  same(gmi::plan::mujoco_model_of<gmi::envs::humanoid_v4>(), mj::load(builtin("humanoid_v4.xml")));
  same(gmi::plan::mujoco_model_of<gmi::envs::anymal>(), mj::load(builtin("anymal.xml")));
  mj::sim<mj::ant_v4> a(gmi::plan::mujoco_model_of<gmi::envs::ant_v4>(), 1, 1u);
  mj::sim<mj::humanoid_v4> h(gmi::plan::mujoco_model_of<gmi::envs::humanoid_v4>(), 1, 1u);
  mj::sim<mj::anymal> q(gmi::plan::mujoco_model_of<gmi::envs::anymal>(), 1, 1u);
  CHECK_THROWS_WITH_AS((void)mj::load_text("bad.xml", "<mujoco><worldbody><geom size=\"x\"/></worldbody></mujoco>"),
                       doctest::Contains("MJCF text bad.xml: got \""), gmi::config_error);
  try {
    (void)mj::load_text("bad.xml", "<mujoco><oops/></mujoco>");
    FAIL("compiled bad MJCF text");
  } catch (const gmi::config_error& e) {
    CHECK(one_line(e.what()));
  }
}

TEST_CASE("actors.placement.mujoco_cpu_side_per_task") {
  // The CPU side timed on MuJoCo for each task, and the rule deciding on it: a GPU side twice the CPU actors' rate
  // is chosen, half of it is not, and threshold 3 keeps the CPU actors where the GPU is only twice as fast.
  const int core = gmi::actors::available_cores().back();
  const auto decide = [](gmi::plan::placement_profile p) {
    CHECK(p.cpu_seconds_per_step > 0);
    CHECK(p.cpu_seconds_per_step < 1e-2);
    const double cpu_rate = p.cpu_cores / p.cpu_seconds_per_step;
    p.gpu_seconds_per_batch_step = p.batch / (2 * cpu_rate);
    CHECK(gmi::plan::choose_placement(p).chosen == gmi::plan::placement::gpu_simulation);
    CHECK(gmi::plan::choose_placement(p, {3.0}).chosen == gmi::plan::placement::cpu_actors);
    p.gpu_seconds_per_batch_step = p.batch / (0.5 * cpu_rate);
    CHECK(gmi::plan::choose_placement(p).chosen == gmi::plan::placement::cpu_actors);
    MESSAGE(p.task << ": one MuJoCo env step on a core " << p.cpu_seconds_per_step * 1e6 << " us");
  };
  decide(gmi::plan::with_mujoco_cpu_side<gmi::envs::ant_v4>({"ant_v4", 1024, 4, 0, 0}, core, 0.05));
  decide(gmi::plan::with_mujoco_cpu_side<gmi::envs::humanoid_v4>({"humanoid_v4", 1024, 4, 0, 0}, core, 0.05));
  decide(gmi::plan::with_mujoco_cpu_side<gmi::envs::anymal>({"anymal", 1024, 4, 0, 0}, core, 0.05));
}
