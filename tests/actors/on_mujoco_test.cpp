// actors::on_mujoco<Env, Cores> in a pipeline's env slot: trainers::ppo<>'s engine for it is the MuJoCo one
// (ppo_sim_on_actors over mujoco::sim<Task> on host threads), built as gmi::train builds it (make_gmi_engine), and
// it trains MuJoCo's Ant: equal bit for bit to ppo_sim_on_actors on the benches' model with the same seed, its
// checkpoint holding every environment's MuJoCo state, and unequal to on_cpu<envs::ant_v4> (gmi::physics's host code
// on the actors), so the check can fail; the end line's evaluation steps MuJoCo too.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include <gmi/agents/gaussian_mlp.hpp>
#include <gmi/envs/ant_v4.hpp>
#include <gmi/pipeline/mujoco_actors.hpp>
#include <gmi/rl/ppo_eval.hpp>

namespace {
namespace ac = gmi::actors;
namespace mj = gmi::actors::mujoco;
using ant_v4_env = ac::on_mujoco<gmi::envs::ant_v4, 1>;
using net = gmi::agents::gaussian_mlp<>::network<27, 8>;
using engine = gmi::trainers::engine_for<ant_v4_env, net, gmi::exec::host>::type;

static_assert(ac::is_on_cpu<ant_v4_env> && ant_v4_env::actor_cores == 1 && gmi::env<ant_v4_env>);
static_assert(std::is_same_v<engine, ac::on_mujoco_engine<gmi::envs::ant_v4, 1, net, gmi::exec::host>>);
static_assert(std::is_base_of_v<ac::ppo_sim_on_actors<mj::sim<mj::ant_v4>, net, ant_v4_env>, engine>);
static_assert(std::is_same_v<ac::on_mujoco<gmi::envs::humanoid_v4>::mujoco_task, mj::humanoid_v4> &&
              std::is_same_v<ac::on_mujoco<gmi::envs::anymal>::mujoco_task, mj::anymal>);

gmi::rl::ppo_config small_config() {
  gmi::rl::ppo_config c;
  c.horizon = 16;
  c.minibatch = 128;
  c.epochs = 2;
  return c;
}
constexpr int envs = 16, iterations = 3;
constexpr std::uint64_t seed = 11;

template <class E>
std::vector<float> params_of(E& e) {
  return {e.params().begin(), e.params().end()};
}
}  // namespace

TEST_CASE("actors.on_mujoco.engine_is_mujoco_sim_on_actors") {
  gmi::envs::ant_v4::params p;
  p.max_steps = 20;  // episodes end inside the run
  // One engine at a time: each pins its actor thread to the same core.
  std::vector<float> piped, direct, physics;
  {
    // As gmi::train builds a GMI's engine (run_one_gmi.cuh): one GMI, Cores actor cores.
    engine e = ac::make_gmi_engine<engine, ant_v4_env>(0, 1, 0, envs, seed, small_config(), p, gmi::exec::host{});
    CHECK(e.cores().size() == 1);
    CHECK(e.actors().sim().model()->nq == 15);
    CHECK(e.actors().sim().model()->opt.collision == mjCOL_PAIR);  // the benches' Ant: predefined pairs
    CHECK(e.actors().sim().layout() == mj::default_layout);
    for (int k = 0; k < iterations; ++k) e.iterate();
    CHECK(e.episodes().episodes > 0);
    const auto ck = e.save_state();
    CHECK(ck.meta["actors_env_state"] == "saved");
    CHECK(ck.contains("actors.mujoco.qpos"));
    piped = params_of(e);

    // The end line's evaluation (rl::evaluate_mode over the engine) steps MuJoCo (eval_sim), not gmi::physics's Ant
    // (the trainer's env type): the same weights and streams give another return.
    const auto on_mujoco = gmi::rl::evaluate_mode(e, 8, p);
    const auto w = ck.get<float>("policy.params", std::size_t(net::param_count));
    const auto stats = ck.get<double>("obs_norm.stats", 1 + 2 * std::size_t(27));
    const gmi::host_span<const float> weights(w.data(), w.size());
    const gmi::host_span<const double> moments(stats.data(), stats.size());
    const auto on_physics = gmi::rl::evaluate_mode<ant_v4_env, net>(weights, moments, 8, e.seed(), p, {},
                                                                 e.config().obs_clip);
    CHECK(on_mujoco.episodes == 8);
    CHECK(on_mujoco.mean_length <= 20);
    CHECK(std::isfinite(on_mujoco.mean_return));
    CHECK(on_mujoco.mean_return != on_physics.mean_return);
  }
  {
    // The engine the benches train, on the model they load, with the same seed: the same weights bit for bit.
    ac::ppo_sim_on_actors<mj::sim<mj::ant_v4>, net, ant_v4_env> d(
        ac::actor_config{ac::on_cpu_cores<1>(), 2}, envs, seed, small_config(), p, gmi::exec::host{.threads = 1},
        gmi::plan::mujoco_model_of<gmi::envs::ant_v4>(), envs, seed, p);
    for (int k = 0; k < iterations; ++k) d.iterate();
    direct = params_of(d);
  }
  {
    // gmi::physics's Ant on the actors (on_cpu<envs::ant_v4>) steps other states: other weights.
    using physics_engine = gmi::trainers::engine_for<ac::on_cpu<gmi::envs::ant_v4, 1>, net, gmi::exec::host>::type;
    physics_engine g(envs, seed, small_config(), p);
    for (int k = 0; k < iterations; ++k) g.iterate();
    physics = params_of(g);
  }
  CHECK(piped == direct);
  CHECK(piped != physics);
}
