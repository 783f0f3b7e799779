#pragma once
// CPU actors chosen by type: gmi::actors::on_cpu<Env, Cores> in a pipeline's env slot steps Env's host code on
// `Cores` pinned host cores (0: every core this process may use but one, which the driver thread keeps), two env
// groups alternating, while PPO's policy and update run where the run is placed: on the GPU
// (actors/ppo_actors_gpu.cuh, this header under nvcc) or on host threads (actors/ppo_actors.hpp).
//
//   using cartpole_on_cpu = gmi::pipeline<gmi::actors::on_cpu<gmi::envs::cartpole, 8>,
//                                         gmi::agents::gaussian_mlp<>, gmi::trainers::ppo<>>;
//   gmi::train<cartpole_on_cpu>(gmi::default_config<cartpole_on_cpu>());
//
// The rest of the pipeline (flags, metrics, checkpoints of the weights and optimizer, stop rules) is unchanged:
// trainers::ppo<>'s engine for on_cpu<Env> is on_cpu_engine, a ppo_trainer whose iterate, serve and episode
// statistics are the actors'. One GMI only: a synced group of GMIs is refused in one line.

#include <algorithm>
#include <cstdint>
#include <vector>

#include <gmi/actors/cores.hpp>
#include <gmi/actors/cpu_actors.hpp>
#include <gmi/actors/ppo_actors.hpp>
#include <gmi/concepts/env.hpp>
#include <gmi/exec/host.hpp>
#include <gmi/exec/policy.hpp>
#include <gmi/rl/ppo_config.hpp>
#include <gmi/trainers/ppo.hpp>
#if defined(__CUDACC__)
#include <gmi/actors/ppo_actors_gpu.cuh>
#endif

namespace gmi::actors {

// Env, stepped on CPU actors: the same task (it is Env: sizes, params, state, step), marked for the engine.
template <gmi::env Env, int Cores = 0>
struct on_cpu : Env {
  static_assert(Cores >= 0, "gmi::actors::on_cpu<Env, Cores>: Cores is the number of actor cores (0: all but one)");
  using cpu_env = Env;
  static constexpr int actor_cores = Cores;
};

// The actor cores of on_cpu<Env, Cores>: Cores of them (refused in one line when there are fewer), or all this
// process may use but one (at least one).
template <int Cores>
[[nodiscard]] std::vector<int> on_cpu_cores() {
  const int available = static_cast<int>(available_cores().size());
  return choose_cores(Cores > 0 ? Cores : std::max(1, available - 1));
}

template <class Env, int Cores, class Net, class Policy>
class on_cpu_engine {
  static_assert(sizeof(Policy) == 0, "gmi::actors::on_cpu: the policy and update run on exec::host or exec::cuda "
                                     "(under nvcc: include <gmi/pipeline/cpu_actors.hpp> from a .cu file)");
};

// Host placement: the policy on the driver thread, the update on the trainer's host path.
template <class Env, int Cores, class Net>
class on_cpu_engine<Env, Cores, Net, exec::host> : public ppo_on_actors<Env, Net, on_cpu<Env, Cores>> {
 public:
  on_cpu_engine(int num_envs, std::uint64_t seed, rl::ppo_config config, typename Env::params env_params = {},
                exec::host = {})
      : ppo_on_actors<Env, Net, on_cpu<Env, Cores>>(actor_config{on_cpu_cores<Cores>(), 2}, num_envs, seed, config,
                                                    env_params) {}
};

#if defined(__CUDACC__)
// GPU placement: inference per env group and the update on the GPU's stream.
template <class Env, int Cores, class Net>
class on_cpu_engine<Env, Cores, Net, exec::cuda> : public ppo_gpu_actors<env_sim<Env>, Net, on_cpu<Env, Cores>> {
 public:
  on_cpu_engine(int num_envs, std::uint64_t seed, rl::ppo_config config, typename Env::params env_params = {},
                exec::cuda gpu = {})
      : ppo_gpu_actors<env_sim<Env>, Net, on_cpu<Env, Cores>>(actor_config{on_cpu_cores<Cores>(), 2}, num_envs, seed,
                                                              config, gpu, num_envs, seed, env_params) {}
};
#endif

}  // namespace gmi::actors

namespace gmi::trainers {
template <class Env, int Cores, class Net, class Policy>
struct engine_for<actors::on_cpu<Env, Cores>, Net, Policy> {
  using type = actors::on_cpu_engine<Env, Cores, Net, Policy>;
};
}  // namespace gmi::trainers
