// gmi.bench.actors_place_ant: the placement threshold's Ant points. For each actor core count, with 64 envs per
// core and env group (as gmi.bench.actors_train's Ant point):
//   train on CPU actors:   PPO env steps/s with MuJoCo's Ant on the actors and the trainer on the GPU (impl gmi),
//   train on the GPU:      the same PPO over gmi::envs::ant (gmi::physics on the GPU) at the same env count
//                          (impl gmi.gpu_simulation, for_actor_cores),
//   placement:             plan::choose_placement with the CPU side timed as one MuJoCo Ant step on one pinned
//                          core (the simulator the actors run) and the GPU side as gmi::physics's batched step.
// Lines in gmi.bench.actors_train's shape, so gmi.bench.actors_check_threshold reads both files.
//   gmi.bench.actors_place_ant OUT.jsonl MODEL_XML [seconds per rep] [cores...]
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include <gmi/actors/mujoco.hpp>
#include <gmi/actors/power.hpp>
#include <gmi/actors/ppo_actors_gpu.cuh>
#include <gmi/agents/gaussian_mlp.hpp>
#include <gmi/core/rng.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/envs/ant.hpp>
#include <gmi/metrics/run_info.hpp>
#include <gmi/metrics/summary.hpp>
#include <gmi/pipeline/actor_placement.cuh>
#include <gmi/plan/placement.hpp>

namespace ac = gmi::actors;

namespace {
using clock_type = std::chrono::steady_clock;
using net = gmi::agents::gaussian_mlp<>::network<27, 8>;

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

// One MuJoCo Ant env step (random actions in [-1, 1], 64 envs in turn) on `core`, timed on a thread of its own.
double mujoco_seconds_per_step(const std::string& model, int core) {
  double seconds = 0;
  std::exception_ptr failed;
  std::thread timer([&] {
    try {
      ac::pin_this_thread(core);
      ac::mujoco::sim<ac::mujoco::ant> sim(model, 64, 7u);
      std::vector<float> obs(27 * 64), actions(8 * 1024);
      gmi::rng r(7, 0);
      for (float& a : actions) a = r.uniform(-1.0f, 1.0f);
      for (std::size_t i = 0; i < 64; ++i) sim.reset_one(i, obs.data() + i * 27);
      std::size_t k = 0;
      seconds = gmi::plan::seconds_per_call([&] {
        const std::size_t i = k % 64;
        (void)sim.step_one(i, actions.data() + (k % 1024) * 8, obs.data() + i * 27, nullptr);
        ++k;
      }, 64, 2000, 0.3);
    } catch (...) {
      failed = std::current_exception();
    }
  });
  timer.join();
  if (failed) std::rethrow_exception(failed);
  return seconds;
}

void emit(std::ofstream& out, const nlohmann::json& line) {
  out << line.dump() << "\n";
  out.flush();
  std::printf("%s\n", line.dump().c_str());
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s OUT.jsonl MODEL_XML [seconds per rep] [cores...]\n", argv[0]);
    return 2;
  }
  if (!ac::cuda_device_present()) {
    std::fprintf(stderr, "gmi.bench.actors_place_ant: got no CUDA device, need one (both trainers run on the GPU)\n");
    return 77;
  }
  try {
    const std::string out_file = argv[1], model = argv[2];
    (void)ac::mujoco::load(model);  // a bad model is refused in one line before anything runs
    const double seconds = argc > 3 ? std::stod(argv[3]) : 0.5;
    std::vector<int> core_counts;
    for (int i = 4; i < argc; ++i) core_counts.push_back(std::stoi(argv[i]));
    const int available = int(ac::available_cores().size());
    if (core_counts.empty()) core_counts = {1, 4, std::max(1, available - 1)};
    const auto run = gmi::metrics::describe_run();
    const std::string cpu = ac::cpu_model();
    std::ofstream out(out_file, std::ios::app);
    gmi::cuda::stream s;
    const gmi::exec::cuda gpu{.stream = s.get()};
    const double core_seconds = mujoco_seconds_per_step(model, ac::available_cores().back());
    gmi::rl::ppo_config c;  // the defaults: horizon 16
    for (int cores : core_counts) {
      if (cores + 1 > available) continue;  // one core is left to the driver
      const int n = cores * 128;             // 64 envs per core and group
      const double per_iteration = double(n) * c.horizon;
      {
        ac::ppo_gpu_actors<ac::mujoco::sim<ac::mujoco::ant>, net> t(ac::actor_config{ac::choose_cores(cores), 2}, n, 1,
                                                                     c, gpu, model, n, std::uint64_t(1));
        auto line = gmi::metrics::result_line(run, "cpu_actors_ppo", "gmi", "steps_per_s",
                                              gmi::metrics::summarize(train_rates(t, per_iteration, seconds, 3)));
        line.update({{"task", "ant"}, {"phase", "train"}, {"actor_cores", cores}, {"num_envs", n},
                     {"horizon", c.horizon}, {"simulator", "mujoco"}, {"host_cpu", cpu}});
        emit(out, line);
      }
      {
        gmi::rl::ppo_trainer<gmi::envs::ant, net, gmi::exec::cuda> g(n, 1, c, {}, gpu);
        auto line = gmi::metrics::result_line(run, "cpu_actors_ppo", "gmi.gpu_simulation", "steps_per_s",
                                              gmi::metrics::summarize(train_rates(g, per_iteration, seconds, 3)));
        line.update({{"task", "ant"}, {"phase", "train"}, {"actor_cores", 0}, {"for_actor_cores", cores},
                     {"num_envs", n}, {"horizon", c.horizon}, {"simulator", "gmi::physics"}, {"host_cpu", cpu}});
        emit(out, line);
      }
      gmi::plan::placement_profile prof = gmi::profile_placement<gmi::envs::ant>({}, n, 0, 1);
      prof.task = "ant";
      prof.cpu_cores = cores;
      prof.cpu_seconds_per_step = core_seconds;  // MuJoCo's step, not gmi::physics's host step
      auto placed = gmi::plan::choose_placement(prof).line();
      placed.update({{"actor_cores", cores}, {"cpu_simulator", "mujoco"}, {"gpu_simulator", "gmi::physics"},
                     {"device", run.device}, {"git", run.git}, {"run_id", run.run_id}, {"host_cpu", cpu}});
      emit(out, placed);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gmi.bench.actors_place_ant: %s\n", e.what());
    return 2;
  }
  return 0;
}
