#pragma once
// MuJoCo tasks on CPU actors chosen by type: gmi::actors::on_mujoco<Env, Cores> in a pipeline's env slot steps
// Env's MuJoCo counterpart (plan::mujoco_counterpart: envs::ant_v4, envs::humanoid_v4, envs::anymal) with
// mujoco::sim on `Cores` pinned host cores, as actors::on_cpu<Env, Cores> steps Env's own host code:
//
//   using ant_on_cpu = gmi::pipeline<gmi::actors::on_mujoco<gmi::envs::ant_v4, 8>, gmi::agents::gaussian_mlp<>,
//                                    gmi::trainers::ppo<>>;
//   int main(int argc, char** argv) { return gmi::run<ant_on_cpu>(argc, argv); }
//
// on_mujoco<Env, Cores> is on_cpu<Env, Cores> (sizes, params, actor cores; every rule of gmi::train for CPU
// actors: refusals, host GMIs, checkpoints, --resume), with another engine: ppo_sim_on_actors over
// mujoco::sim<Task> on host threads, ppo_gpu_actors over it on a GPU (this header under nvcc). The model is the
// one the benches step: gmi::physics's own MJCF of Env compiled by MuJoCo (plan::mujoco_model_of: the Ant's
// contacts as predefined pairs), in the default data layout (one mjData per stepping thread); so is the end line's
// deterministic evaluation. Env's params are the task's (mujoco::ant_v4::params is envs::ant_v4::params). Link
// gmi::mujoco; without MuJoCo's headers this header declares nothing.

#include <gmi/pipeline/cpu_actors.hpp>
#include <gmi/plan/mujoco_placement.hpp>

#if __has_include(<mujoco/mujoco.h>)
#include <cstdint>
#include <utility>

#include <gmi/actors/mujoco.hpp>

namespace gmi::actors {

// Env's MuJoCo task, stepped on CPU actors: on_cpu<Env, Cores> with the task named for the engine.
template <gmi::env Env, int Cores = 0>
struct on_mujoco : on_cpu<Env, Cores> {
  static_assert(plan::has_mujoco_counterpart<Env>,
                "gmi::actors::on_mujoco<Env>: Env needs a MuJoCo task (envs::ant_v4, envs::humanoid_v4 or envs::anymal)");
  using mujoco_task = typename plan::mujoco_counterpart<Env>::task;
};

template <class Env, int Cores, class Net, class Policy>
class on_mujoco_engine {
  static_assert(sizeof(Policy) == 0, "gmi::actors::on_mujoco: the policy and update run on exec::host or exec::cuda "
                                     "(under nvcc: include <gmi/pipeline/mujoco_actors.hpp> from a .cu file)");
};

template <class Env, int Cores>
using mujoco_sim_of = mujoco::sim<typename on_mujoco<Env, Cores>::mujoco_task>;

// The end line's deterministic evaluation (rl::evaluate_mode) steps the engine's MuJoCo task on the same model, not
// Env's gmi::physics code (the trainer's env type).
template <class Env>
struct mujoco_evaluation {
  [[nodiscard]] static mujoco_sim_of<Env, 0> eval_sim(int episodes, std::uint64_t seed, const typename Env::params& p) {
    return {plan::mujoco_model_of<Env>(), episodes, seed, p};
  }
};

// Host placement: the policy on the driver thread, the update on the trainer's host path.
template <class Env, int Cores, class Net>
class on_mujoco_engine<Env, Cores, Net, exec::host>
    : public ppo_sim_on_actors<mujoco_sim_of<Env, Cores>, Net, on_mujoco<Env, Cores>>, public mujoco_evaluation<Env> {
  using base = ppo_sim_on_actors<mujoco_sim_of<Env, Cores>, Net, on_mujoco<Env, Cores>>;

 public:
  on_mujoco_engine(int num_envs, std::uint64_t seed, rl::ppo_config config, typename Env::params env_params = {},
                   exec::host = {})
      : on_mujoco_engine(actor_config{on_cpu_cores<Cores>(), 2}, num_envs, seed, config, env_params) {}
  // On the given actor cores (a GMI of several: make_gmi_engine).
  on_mujoco_engine(actor_config actors, int num_envs, std::uint64_t seed, rl::ppo_config config,
                   typename Env::params env_params = {}, exec::host = {})
      : base(std::move(actors), num_envs, seed, config, env_params, exec::host{.threads = 1},
             plan::mujoco_model_of<Env>(), num_envs, seed, env_params) {}
};

#if defined(__CUDACC__)
// GPU placement: inference per env group and the update on the GPU's stream.
template <class Env, int Cores, class Net>
class on_mujoco_engine<Env, Cores, Net, exec::cuda>
    : public ppo_gpu_actors<mujoco_sim_of<Env, Cores>, Net, on_mujoco<Env, Cores>>, public mujoco_evaluation<Env> {
  using base = ppo_gpu_actors<mujoco_sim_of<Env, Cores>, Net, on_mujoco<Env, Cores>>;

 public:
  on_mujoco_engine(int num_envs, std::uint64_t seed, rl::ppo_config config, typename Env::params env_params = {},
                   exec::cuda gpu = {})
      : on_mujoco_engine(actor_config{on_cpu_cores<Cores>(), 2}, num_envs, seed, config, env_params, gpu) {}
  // On the given actor cores (a GMI of several: make_gmi_engine).
  on_mujoco_engine(actor_config actors, int num_envs, std::uint64_t seed, rl::ppo_config config,
                   typename Env::params env_params, exec::cuda gpu)
      : base(std::move(actors), num_envs, seed, config, gpu, plan::mujoco_model_of<Env>(), num_envs, seed,
             env_params) {}
};
#endif

}  // namespace gmi::actors

namespace gmi::trainers {
template <class Env, int Cores, class Net, class Policy>
struct engine_for<actors::on_mujoco<Env, Cores>, Net, Policy> {
  using type = actors::on_mujoco_engine<Env, Cores, Net, Policy>;
};
}  // namespace gmi::trainers
#endif
