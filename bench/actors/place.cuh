#pragma once
// gmi.bench.actors_place's per-task part (place.cu has main): place<Env> writes the three lines of every actor core
// count for one task at `envs_per_group` envs per core and env group (batch = cores x 2 x envs_per_group). Each
// task is instantiated in a file of its own (place_<task>.cu), so the build compiles the three tasks' GPU code in
// parallel.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <gmi/plan/mujoco_placement.hpp>
#include <gmi/actors/power.hpp>
#include <gmi/actors/ppo_actors_gpu.cuh>
#include <gmi/agents/gaussian_mlp.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/metrics/run_info.hpp>
#include <gmi/metrics/summary.hpp>
#include <gmi/pipeline/actor_placement.cuh>
#include <gmi/plan/placement.hpp>

namespace ac = gmi::actors;
namespace mj = gmi::actors::mujoco;

namespace place_bench {
using clock_type = std::chrono::steady_clock;

// PPO env steps/s over whole iterations, `reps` times `seconds`, after one warm-up iteration.
template <class Trainer>
std::vector<double> train_rates(Trainer& t, double per_iteration, double seconds, int reps) {
  t.iterate();
  t.synchronize();
  std::vector<double> out;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = clock_type::now();
    double steps = 0, elapsed = 0;
    while (elapsed < seconds) {
      t.iterate();
      t.synchronize();
      steps += per_iteration;
      elapsed = std::chrono::duration<double>(clock_type::now() - t0).count();
    }
    out.push_back(steps / elapsed);
  }
  return out;
}

inline void emit(std::ofstream& out, const nlohmann::json& line) {
  out << line.dump() << "\n";
  out.flush();
  std::printf("%s\n", line.dump().c_str());
}

// The three lines of every core count for Env (a gmi::envs task with a MuJoCo counterpart).
template <class Env>
void place(std::ofstream& out, const std::vector<int>& core_counts, double seconds, int envs_per_group) {
  using task = typename gmi::plan::mujoco_counterpart<Env>::task;
  using net = gmi::agents::gaussian_mlp<>::network<Env::obs_dim, Env::act_dim>;
  const std::string name = Env::name;
  const int available = int(ac::available_cores().size());
  const auto run = gmi::metrics::describe_run();
  const std::string cpu = ac::cpu_model();
  gmi::cuda::stream s;
  const gmi::exec::cuda gpu{.stream = s.get()};
  const mj::model_ptr model = gmi::plan::mujoco_model_of<Env>();
  const double core_seconds = gmi::plan::mujoco_seconds_per_step<task>(model, ac::available_cores().back());
  gmi::rl::ppo_config c;  // the defaults: horizon 16
  for (int cores : core_counts) {
    if (cores + 1 > available) {  // one core is left to the driver
      std::fprintf(stderr, "%s at %d actor cores: skipped, %d cores available (one is the driver's)\n", name.c_str(),
                   cores, available);
      continue;
    }
    const int n = cores * 2 * envs_per_group;  // two env groups
    const nlohmann::json size = {{"envs_per_group", envs_per_group}, {"batch", n}};
    const double per_iteration = double(n) * c.horizon;
    {
      ac::ppo_gpu_actors<mj::sim<task>, net> t(ac::actor_config{ac::choose_cores(cores), 2}, n, 1, c, gpu, model, n,
                                               std::uint64_t(1));
      auto line = gmi::metrics::result_line(run, "cpu_actors_ppo", "gmi", "steps_per_s",
                                            gmi::metrics::summarize(train_rates(t, per_iteration, seconds, 3)));
      line.update({{"task", name}, {"phase", "train"}, {"actor_cores", cores}, {"num_envs", n},
                   {"horizon", c.horizon}, {"simulator", "mujoco"}, {"host_cpu", cpu}});
      line.update(size);
      emit(out, line);
    }
    {
      gmi::rl::ppo_trainer<Env, net, gmi::exec::cuda> g(n, 1, c, {}, gpu);
      auto line = gmi::metrics::result_line(run, "cpu_actors_ppo", "gmi.gpu_simulation", "steps_per_s",
                                            gmi::metrics::summarize(train_rates(g, per_iteration, seconds, 3)));
      line.update({{"task", name}, {"phase", "train"}, {"actor_cores", 0}, {"for_actor_cores", cores},
                   {"num_envs", n}, {"horizon", c.horizon}, {"simulator", "gmi::physics"}, {"host_cpu", cpu}});
      line.update(size);
      emit(out, line);
    }
    gmi::plan::placement_profile prof = gmi::profile_placement<Env>({}, n, 0, 1);
    prof.task = name;
    prof.cpu_cores = cores;
    prof.cpu_seconds_per_step = core_seconds;  // MuJoCo's step, not gmi::physics's host step
    auto placed = gmi::plan::choose_placement(prof).line();
    placed.update({{"actor_cores", cores}, {"cpu_simulator", "mujoco"}, {"gpu_simulator", "gmi::physics"},
                   {"device", run.device}, {"git", run.git}, {"run_id", run.run_id}, {"host_cpu", cpu}});
    placed.update(size);
    emit(out, placed);
  }
}
}  // namespace place_bench


namespace place_bench {
void place_ant_v4(std::ofstream& out, const std::vector<int>& core_counts, double seconds, int envs_per_group);
void place_humanoid_v4(std::ofstream& out, const std::vector<int>& core_counts, double seconds, int envs_per_group);
void place_anymal(std::ofstream& out, const std::vector<int>& core_counts, double seconds, int envs_per_group);
}  // namespace place_bench
