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
// statistics are the actors'. Several GMIs each get their own actor cores (on_cpu_cores: disjoint, NUMA-aware) and
// train as one synchronous group through the trainer's set_sync (host GMIs: pipeline/cpu_actor_gmis.hpp; GPU GMIs:
// the colocated run, engines built by make_gmi_engine).

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <gmi/actors/cores.hpp>
#include <gmi/actors/cpu_actors.hpp>
#include <gmi/actors/ppo_actors.hpp>
#include <gmi/concepts/env.hpp>
#include <gmi/core/error.hpp>
#include <gmi/exec/host.hpp>
#include <gmi/exec/policy.hpp>
#include <gmi/pipeline/run_options.hpp>
#include <gmi/plan/ratio.hpp>
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

// Whether Env is an env slot of CPU actors (actors::on_cpu<E, Cores>).
template <class Env>
inline constexpr bool is_on_cpu = requires { typename Env::cpu_env; };

// The actor cores of GMI `index` of `gmis` on this host for on_cpu<Env, Cores>: `per_gmi` each when set (the
// ratio's cores per GMI), else Cores, else an even share of the cores this process may use less one per GMI for
// its driver thread (at least one). Disjoint between the GMIs and on one NUMA node each where one has room
// (gmi_core_sets); counts the machine lacks are refused in one line.
template <int Cores>
[[nodiscard]] std::vector<int> on_cpu_cores(int index = 0, int gmis = 1, int per_gmi = 0) {
  require(index >= 0 && index < gmis, "GMI index for actor cores", index, "0.." + std::to_string(gmis - 1));
  const int available = static_cast<int>(available_cores().size());
  const int n = per_gmi > 0 ? per_gmi : Cores > 0 ? Cores : std::max(1, available / std::max(1, gmis) - 1);
  return gmi_core_sets(gmis, n)[static_cast<std::size_t>(index)];
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
      : on_cpu_engine(actor_config{on_cpu_cores<Cores>(), 2}, num_envs, seed, config, env_params) {}
  // On the given actor cores (a GMI of several: make_gmi_engine).
  on_cpu_engine(actor_config actors, int num_envs, std::uint64_t seed, rl::ppo_config config,
                typename Env::params env_params = {}, exec::host = {})
      : ppo_on_actors<Env, Net, on_cpu<Env, Cores>>(std::move(actors), num_envs, seed, config, env_params) {}
};

#if defined(__CUDACC__)
// GPU placement: inference per env group and the update on the GPU's stream.
template <class Env, int Cores, class Net>
class on_cpu_engine<Env, Cores, Net, exec::cuda> : public ppo_gpu_actors<env_sim<Env>, Net, on_cpu<Env, Cores>> {
 public:
  on_cpu_engine(int num_envs, std::uint64_t seed, rl::ppo_config config, typename Env::params env_params = {},
                exec::cuda gpu = {})
      : on_cpu_engine(actor_config{on_cpu_cores<Cores>(), 2}, num_envs, seed, config, env_params, gpu) {}
  // On the given actor cores (a GMI of several: make_gmi_engine).
  on_cpu_engine(actor_config actors, int num_envs, std::uint64_t seed, rl::ppo_config config,
                typename Env::params env_params, exec::cuda gpu)
      : ppo_gpu_actors<env_sim<Env>, Net, on_cpu<Env, Cores>>(std::move(actors), num_envs, seed, config, gpu, num_envs,
                                                              seed, env_params) {}
};
#endif

// A pipeline's engine for GMI `index` of `gmis` on this host, from the engine's usual arguments: an engine of
// on_cpu<E, Cores> steps on its own actor cores (on_cpu_cores with `cores_per_gmi`), any other is built as given.
template <class Engine, class Env, class... Args>
Engine make_gmi_engine(int index, int gmis, int cores_per_gmi, Args&&... args) {
  if constexpr (is_on_cpu<Env> && std::is_constructible_v<Engine, actor_config, Args&&...>) {
    return Engine(actor_config{on_cpu_cores<Env::actor_cores>(index, gmis, cores_per_gmi), 2}, std::forward<Args>(args)...);
  } else {
    return Engine(std::forward<Args>(args)...);
  }
}

}  // namespace gmi::actors

namespace gmi {

// A plan's CPU/GPU ratio (plan/ratio.hpp, chosen from the measured sweep) applied to a run of CPU actors: actor
// cores per GMI, GMIs per GPU, and environments per GMI as the sweep ran them (envs per core x cores x 2 env groups).
inline void apply_actor_ratio(run_options& o, const plan::ratio_point& r) {
  plan::validate(r, "cpu_actor_ratio.chosen");
  o.actor_cores_per_gmi = r.cores_per_gmi;
  o.gmis_per_gpu = r.gmis_per_gpu;
  o.num_envs = r.envs_per_core * r.cores_per_gmi * 2;
}

}  // namespace gmi

namespace gmi::trainers {
template <class Env, int Cores, class Net, class Policy>
struct engine_for<actors::on_cpu<Env, Cores>, Net, Policy> {
  using type = actors::on_cpu_engine<Env, Cores, Net, Policy>;
};
}  // namespace gmi::trainers
