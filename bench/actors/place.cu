// gmi.bench.actors_place: the placement threshold's points for the tasks that exist both in gmi::physics and on
// MuJoCo (ant, humanoid, anymal). For each actor core count, with 64 envs per core and env group (as
// gmi.bench.actors_train's points):
//   train on CPU actors:   PPO env steps/s with the task's MuJoCo counterpart (actors/mujoco_profile.hpp, on
//                          gmi::physics's own model of it) on the actors and the trainer on the GPU (impl gmi),
//   train on the GPU:      the same PPO over gmi::envs::<task> (gmi::physics on the GPU) at the same env count
//                          (impl gmi.gpu_simulation, for_actor_cores),
//   placement:             plan::choose_placement with the CPU side timed as one MuJoCo env step on one pinned
//                          core (the simulator the actors run) and the GPU side as gmi::physics's batched step.
// Lines in gmi.bench.actors_train's shape, so gmi.bench.actors_check_threshold reads both files.
//   gmi.bench.actors_place OUT.jsonl TASK [seconds per rep] [cores...]      (TASK: ant, humanoid or anymal)
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <gmi/actors/mujoco_profile.hpp>
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

namespace {
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

void emit(std::ofstream& out, const nlohmann::json& line) {
  out << line.dump() << "\n";
  out.flush();
  std::printf("%s\n", line.dump().c_str());
}

// The three lines of every core count for Env (a gmi::envs task with a MuJoCo counterpart).
template <class Env>
void place(std::ofstream& out, const std::vector<int>& core_counts, double seconds) {
  using task = typename mj::counterpart<Env>::task;
  using net = gmi::agents::gaussian_mlp<>::network<Env::obs_dim, Env::act_dim>;
  const std::string name = Env::name;
  const int available = int(ac::available_cores().size());
  const auto run = gmi::metrics::describe_run();
  const std::string cpu = ac::cpu_model();
  gmi::cuda::stream s;
  const gmi::exec::cuda gpu{.stream = s.get()};
  const mj::model_ptr model = mj::model_of<Env>();
  const double core_seconds = mj::seconds_per_step<task>(model, ac::available_cores().back());
  gmi::rl::ppo_config c;  // the defaults: horizon 16
  for (int cores : core_counts) {
    if (cores + 1 > available) continue;  // one core is left to the driver
    const int n = cores * 128;             // 64 envs per core and group
    const double per_iteration = double(n) * c.horizon;
    {
      ac::ppo_gpu_actors<mj::sim<task>, net> t(ac::actor_config{ac::choose_cores(cores), 2}, n, 1, c, gpu, model, n,
                                               std::uint64_t(1));
      auto line = gmi::metrics::result_line(run, "cpu_actors_ppo", "gmi", "steps_per_s",
                                            gmi::metrics::summarize(train_rates(t, per_iteration, seconds, 3)));
      line.update({{"task", name}, {"phase", "train"}, {"actor_cores", cores}, {"num_envs", n},
                   {"horizon", c.horizon}, {"simulator", "mujoco"}, {"host_cpu", cpu}});
      emit(out, line);
    }
    {
      gmi::rl::ppo_trainer<Env, net, gmi::exec::cuda> g(n, 1, c, {}, gpu);
      auto line = gmi::metrics::result_line(run, "cpu_actors_ppo", "gmi.gpu_simulation", "steps_per_s",
                                            gmi::metrics::summarize(train_rates(g, per_iteration, seconds, 3)));
      line.update({{"task", name}, {"phase", "train"}, {"actor_cores", 0}, {"for_actor_cores", cores},
                   {"num_envs", n}, {"horizon", c.horizon}, {"simulator", "gmi::physics"}, {"host_cpu", cpu}});
      emit(out, line);
    }
    gmi::plan::placement_profile prof = gmi::profile_placement<Env>({}, n, 0, 1);
    prof.task = name;
    prof.cpu_cores = cores;
    prof.cpu_seconds_per_step = core_seconds;  // MuJoCo's step, not gmi::physics's host step
    auto placed = gmi::plan::choose_placement(prof).line();
    placed.update({{"actor_cores", cores}, {"cpu_simulator", "mujoco"}, {"gpu_simulator", "gmi::physics"},
                   {"device", run.device}, {"git", run.git}, {"run_id", run.run_id}, {"host_cpu", cpu}});
    emit(out, placed);
  }
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s OUT.jsonl TASK(ant|humanoid|anymal) [seconds per rep] [cores...]\n", argv[0]);
    return 2;
  }
  const std::string task = argv[2];
  if (task != "ant" && task != "humanoid" && task != "anymal") {
    std::fprintf(stderr, "gmi.bench.actors_place: task: got %s, need ant, humanoid or anymal\n", task.c_str());
    return 2;
  }
  if (!ac::cuda_device_present()) {
    std::fprintf(stderr, "gmi.bench.actors_place: got no CUDA device, need one (both trainers run on the GPU)\n");
    return 77;
  }
  try {
    const double seconds = argc > 3 ? std::stod(argv[3]) : 0.5;
    std::vector<int> core_counts;
    for (int i = 4; i < argc; ++i) core_counts.push_back(std::stoi(argv[i]));
    if (core_counts.empty()) core_counts = {1, 4, std::max(1, int(ac::available_cores().size()) - 1)};
    std::ofstream out(argv[1], std::ios::app);
    if (task == "ant") place<gmi::envs::ant>(out, core_counts, seconds);
    if (task == "humanoid") place<gmi::envs::humanoid>(out, core_counts, seconds);
    if (task == "anymal") place<gmi::envs::anymal>(out, core_counts, seconds);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gmi.bench.actors_place: %s\n", e.what());
    return 2;
  }
  return 0;
}
