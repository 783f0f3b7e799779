// gmi.bench.actors_place: the placement threshold's points for the tasks that exist both in gmi::physics and on
// MuJoCo (ant_v4, humanoid_v4, anymal). For each actor core count, with ENVS envs per core and env group (default 64, as
// gmi.bench.actors_train's points; batch = cores x 2 x ENVS, both recorded as envs_per_group and batch):
//   train on CPU actors:   PPO env steps/s with the task's MuJoCo counterpart (plan/mujoco_placement.hpp, on
//                          gmi::physics's own model of it) on the actors and the trainer on the GPU (impl gmi),
//   train on the GPU:      the same PPO over gmi::envs::<task> (gmi::physics on the GPU) at the same env count
//                          (impl gmi.gpu_simulation, for_actor_cores),
//   placement:             plan::choose_placement with the CPU side timed as one MuJoCo env step on one pinned
//                          core (the simulator the actors run) and the GPU side as gmi::physics's batched step.
// Lines in gmi.bench.actors_train's shape, so gmi.bench.actors_check_threshold reads both files.
//   gmi.bench.actors_place OUT.jsonl TASK[:ENVS] [seconds per rep] [cores...]  (TASK: ant_v4, humanoid_v4 or anymal)
// Bad arguments are refused in one line with exit code 2 before any device work.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <type_traits>
#include <vector>

#include <gmi/envs/renamed_tasks.hpp>

#include "place.cuh"

namespace {
// A number in [lo, hi] from an argument's whole text; else config_error "<what>: got <text>, need <range>".
template <class T>
T parse_number(const std::string& text, const std::string& what, T lo, T hi, const std::string& need) {
  std::size_t used = 0;
  double v = std::nan("");
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const bool whole = std::is_floating_point_v<T> || v == std::floor(v);
  gmi::require(used == text.size() && whole && v >= double(lo) && v <= double(hi), what, text, need);
  return T(v);
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s OUT.jsonl TASK[:ENVS](ant_v4|humanoid_v4|anymal) [seconds per rep] [cores...]\n",
                 argv[0]);
    return 2;
  }
  std::string task = argv[2];
  int envs_per_group = 64;
  std::vector<int> core_counts;
  double seconds = 0.5;
  try {
    if (const auto colon = task.find(':'); colon != std::string::npos) {
      envs_per_group = parse_number(task.substr(colon + 1), "gmi.bench.actors_place TASK:ENVS envs per core and group",
                                    1, 4096, "an integer in 1..4096");
      task.resize(colon);
    }
    if (const std::string renamed = gmi::envs::renamed_task(task); !renamed.empty()) throw gmi::config_error(renamed);
    gmi::require(task == "ant_v4" || task == "humanoid_v4" || task == "anymal", "gmi.bench.actors_place task", task,
                 "ant_v4, humanoid_v4 or anymal");
    if (argc > 3) seconds = parse_number(argv[3], "gmi.bench.actors_place seconds per rep", 0.01, 600.0, "0.01..600");
    for (int i = 4; i < argc; ++i)
      core_counts.push_back(parse_number(argv[i], "gmi.bench.actors_place actor cores", 1, 4096,
                                         "an integer in 1..4096"));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  if (!ac::cuda_device_present()) {
    std::fprintf(stderr, "gmi.bench.actors_place: got no CUDA device, need one (both trainers run on the GPU)\n");
    return 77;
  }
  try {
    if (core_counts.empty()) core_counts = {1, 4, std::max(1, int(ac::available_cores().size()) - 1)};
    std::ofstream out(argv[1], std::ios::app);
    if (task == "ant_v4") place_bench::place_ant_v4(out, core_counts, seconds, envs_per_group);
    if (task == "humanoid_v4") place_bench::place_humanoid_v4(out, core_counts, seconds, envs_per_group);
    if (task == "anymal") place_bench::place_anymal(out, core_counts, seconds, envs_per_group);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gmi.bench.actors_place: %s\n", e.what());
    return 2;
  }
  return 0;
}
