#pragma once
// Placement's CPU side for the tasks that exist both in gmi::physics and on MuJoCo (ant_v4, humanoid_v4, anymal): the
// MuJoCo task of a gmi::envs task (mujoco_counterpart<Env>) on gmi::physics's own model of it (its built-in MJCF
// text), and the time of one env step of it on one pinned core (64 environments in turn, random actions in
// [-1, 1]), which choose_placement weighs against gmi::physics's batched step on the GPU (gmi.bench.actors_place).

#include <gmi/actors/mujoco.hpp>

#if __has_include(<mujoco/mujoco.h>)
#include <exception>
#include <utility>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <gmi/actors/cores.hpp>
#include <gmi/actors/mujoco_pairs.hpp>
#include <gmi/core/error.hpp>
#include <gmi/core/rng.hpp>
#include <gmi/envs/ant_v4.hpp>
#include <gmi/envs/anymal.hpp>
#include <gmi/envs/humanoid_v4.hpp>
#include <gmi/plan/placement.hpp>

namespace gmi::plan {

template <class Env>
struct mujoco_counterpart {};
template <>
struct mujoco_counterpart<envs::ant_v4> {
  using task = actors::mujoco::ant_v4;
};
template <>
struct mujoco_counterpart<envs::humanoid_v4> {
  using task = actors::mujoco::humanoid_v4;
};
template <>
struct mujoco_counterpart<envs::anymal> {
  using task = actors::mujoco::anymal;
};
template <class Env>
concept has_mujoco_counterpart = requires { typename mujoco_counterpart<Env>::task; };

// gmi::physics's model of Env (the MJCF its built-in model was compiled from), compiled by MuJoCo; with
// predefined_pairs, its contacts as predefined pairs, MuJoCo's broadphase off and njmax bounded
// (actors/mujoco_pairs.hpp): the default for the Ant, whose steps that leaves equal bit for bit
// (actors.mujoco.pairs_step_as_dynamic_collision); Humanoid and Anymal keep MuJoCo's dynamic collision.
template <class Env>
  requires has_mujoco_counterpart<Env>
[[nodiscard]] actors::mujoco::model_ptr mujoco_model_of(bool predefined_pairs = std::is_same_v<Env, envs::ant_v4>) {
  const std::string name = std::string(Env::name) + ".xml";
  return predefined_pairs ? actors::mujoco::load_text_with_predefined_pairs(name, Env::sim::model_type::mjcf)
                          : actors::mujoco::load_text(name, Env::sim::model_type::mjcf);
}

// Seconds of one Task env step on `core`, timed on a thread of its own (the caller's affinity is left alone) over
// `envs` environments in turn (auto-reset included), each call at least min_seconds.
template <class Task>
[[nodiscard]] double mujoco_seconds_per_step(actors::mujoco::model_ptr model, int core,
                                             typename Task::params params = {}, int envs = 64,
                                             double min_seconds = 0.3) {
  require(envs >= 1, "MuJoCo placement timing environments", envs, ">= 1");
  double seconds = 0;
  std::exception_ptr failed;
  std::thread timer([&] {
    try {
      actors::pin_this_thread(core);
      actors::mujoco::sim<Task> s(std::move(model), envs, 7u, params);
      const std::size_t n = std::size_t(envs), obs = std::size_t(s.obs_dim()), act = std::size_t(s.act_dim());
      std::vector<float> observations(obs * n), actions(act * 1024);
      gmi::rng r(7, 0);
      for (float& a : actions) a = r.uniform(-1.0f, 1.0f);
      for (std::size_t i = 0; i < n; ++i) s.reset_one(i, observations.data() + i * obs);
      std::size_t k = 0;
      seconds = seconds_per_call([&] {
        const std::size_t i = k % n;
        (void)s.step_one(i, actions.data() + (k % 1024) * act, observations.data() + i * obs, nullptr);
        ++k;
      }, envs, 2000, min_seconds);
    } catch (...) {
      failed = std::current_exception();
    }
  });
  timer.join();
  if (failed) std::rethrow_exception(failed);
  return seconds;
}

// p with its CPU side one env step of Env's MuJoCo counterpart on `core` (the simulator CPU actors would run).
template <class Env>
  requires has_mujoco_counterpart<Env>
[[nodiscard]] placement_profile with_mujoco_cpu_side(placement_profile p, int core, double min_seconds = 0.3) {
  p.cpu_seconds_per_step =
      mujoco_seconds_per_step<typename mujoco_counterpart<Env>::task>(mujoco_model_of<Env>(), core, {}, 64, min_seconds);
  return p;
}

}  // namespace gmi::plan
#endif
