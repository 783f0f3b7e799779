// gmi.bench.actors_steps: MuJoCo Ant env steps per second per core on the CPU actors (all envs stepped each
// batch step, each env on the pinned thread that owns it), at the thread counts given; one result line each:
//   gmi.bench.actors_steps MODEL_XML OUT.jsonl [threads...] (default 1 2)
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "load_average.hpp"

#include <gmi/actors/cpu_actors.hpp>
#include <gmi/actors/mujoco.hpp>
#include <gmi/actors/power.hpp>
#include <gmi/metrics/run_info.hpp>
#include <gmi/metrics/summary.hpp>

namespace ac = gmi::actors;
namespace mj = gmi::actors::mujoco;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL_XML OUT.jsonl [threads...]\n", argv[0]);
    return 2;
  }
  const std::string model_file = argv[1], out_file = argv[2];
  std::vector<int> thread_counts;
  for (int i = 3; i < argc; ++i) thread_counts.push_back(std::stoi(argv[i]));
  if (thread_counts.empty()) thread_counts = {1, 2};
  constexpr int envs_per_core = 64, warmup_steps = 20, reps = 5;
  const double rep_seconds = 2.0;
  const auto run = gmi::metrics::describe_run();
  const std::string cpu = ac::cpu_model();
  const auto model = mj::load(model_file);
  std::ofstream out(out_file, std::ios::app);
  for (int threads : thread_counts) {
    const auto cores = ac::choose_cores(threads);
    const int n = envs_per_core * threads;
    ac::cpu_actors<mj::sim<mj::ant_v4>> actors({cores, 1}, model, n, 1u);
    const std::size_t un = std::size_t(n);
    std::vector<float> obs(un * 27), act(un * 8), rew(un);
    std::vector<std::uint8_t> te(un), tr(un);
    actors.reset({obs.data(), obs.size()});
    int k = 0;
    auto one_step = [&] {
      // Actions vary per env and step like a policy's (the contact workload depends on the gait).
      for (int i = 0; i < n; ++i) {
        for (int u = 0; u < 8; ++u) act[std::size_t(i * 8 + u)] = std::sin(0.3f * float(k) + 0.9f * float(u) + 0.1f * float(i));
      }
      actors.step({act.data(), act.size()}, {obs.data(), obs.size()}, {rew.data(), rew.size()}, {te.data(), te.size()},
                  {tr.data(), tr.size()});
      ++k;
    };
    for (int w = 0; w < warmup_steps; ++w) one_step();
    std::vector<double> per_core;
    for (int r = 0; r < reps; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      long steps = 0;
      double elapsed = 0;
      while (elapsed < rep_seconds) {
        one_step();
        steps += n;
        elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      }
      per_core.push_back(double(steps) / elapsed / threads);
    }
    const auto s = gmi::metrics::summarize(per_core);
    const auto stats = actors.read_stats();
    auto line = gmi::metrics::result_line(run, "cpu_actors", "gmi.actors.mujoco", "steps_per_s_per_core", s);
    line["task"] = "ant_v4";
    line["model"] = std::filesystem::path(model_file).filename().string();
    line["threads"] = threads;
    line["envs_per_core"] = envs_per_core;
    line["frame_skip"] = 5;
    line["host_cpu"] = cpu;
    line["mujoco"] = mj_versionString();
    line["mean_episode_length"] = stats.mean_length();
    line["target"] = 20000;
    line["load_average_1min"] = gmi::bench::load_average_1min();  // other work on the machine while this ran
    out << line.dump() << "\n";
    std::printf("%s\n", line.dump().c_str());
  }
  return 0;
}
