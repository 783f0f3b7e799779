#pragma once
// Split roles over 2 GPUs (pipeline/split_paths.hpp, split_channels.hpp) for the doctest file: a learner on GPU 0 and
// actors as thread GMIs on the GPUs given, through the path the plan picks (peer copies where the GPUs have peer
// access) or through host messages; what the learner's table and weights hold at the end.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sac_multigpu {

struct split_result {
  bool device = false, peer = false;   // the run's transport as planned
  std::vector<std::string> lines;      // the plan's line per actor
  std::vector<float> weights;          // actor and both critics
  std::size_t env_steps = 0, updates = 0, table = 0;
  std::uint64_t episodes = 0;
  // The learner's table (device_table::take_snapshot): every column's words, trajectory ids, steps, links.
  std::vector<std::vector<std::uint32_t>> columns;
  std::vector<std::int64_t> traj;
  std::vector<std::int32_t> step, next;
  double eval_return = 0;  // deterministic, 16 environments (when asked)
  double seconds = 0;
};

// 1 learner on GPU 0 and one actor a GPU of `actor_gpus` (Pendulum, device trainers, hidden 64, `envs` environments
// each), until the learner has received `env_steps`; `host`: --split-transport host, else auto.
split_result split_run(const std::vector<int>& actor_gpus, int envs, std::size_t env_steps, bool host, bool evaluate,
                       std::uint64_t seed = 100);

// Whether GPU 1 can access GPU 0's memory (cudaDeviceCanAccessPeer).
bool peer_1_to_0();

}  // namespace sac_multigpu
