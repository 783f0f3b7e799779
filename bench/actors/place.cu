// gmi.bench.actors_place: the placement threshold's points for the tasks that exist both in gmi::physics and on
// MuJoCo (ant, humanoid, anymal). For each actor core count, with 64 envs per core and env group (as
// gmi.bench.actors_train's points):
//   train on CPU actors:   PPO env steps/s with the task's MuJoCo counterpart (plan/mujoco_placement.hpp, on
//                          gmi::physics's own model of it) on the actors and the trainer on the GPU (impl gmi),
//   train on the GPU:      the same PPO over gmi::envs::<task> (gmi::physics on the GPU) at the same env count
//                          (impl gmi.gpu_simulation, for_actor_cores),
//   placement:             plan::choose_placement with the CPU side timed as one MuJoCo env step on one pinned
//                          core (the simulator the actors run) and the GPU side as gmi::physics's batched step.
// Lines in gmi.bench.actors_train's shape, so gmi.bench.actors_check_threshold reads both files.
//   gmi.bench.actors_place OUT.jsonl TASK [seconds per rep] [cores...]      (TASK: ant, humanoid or anymal)
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "place.cuh"

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
    if (task == "ant") place_bench::place_ant(out, core_counts, seconds);
    if (task == "humanoid") place_bench::place_humanoid(out, core_counts, seconds);
    if (task == "anymal") place_bench::place_anymal(out, core_counts, seconds);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gmi.bench.actors_place: %s\n", e.what());
    return 2;
  }
  return 0;
}
