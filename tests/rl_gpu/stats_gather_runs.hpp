#pragma once
// Host-callable runs of the synced PPO statistics gather (rl::detail::ppo_stats_gather_kernel) for the doctest
// file (compiled by g++): `members` one-block kernels on one GPU, each on its own stream, joined by a
// comm::row_exchange over device buffers, as the MPS GMIs of one GPU are.
#include <cstdint>
#include <vector>

struct stats_gather_rounds {
  int members = 8;
  int obs_dim = 60;      // the records: advantages (dim 1), observations (obs_dim), returns (dim 1)
  int rounds = 200;
  std::uint64_t seed = 1;
};

struct stats_gather_round {
  std::vector<std::vector<double>> local;           // [member]: the record it contributed (values doubles)
  std::vector<std::vector<double>> merged;          // [member]: what its kernel merged
  std::vector<std::vector<float>> advantage_stats;  // [member]: mean, 1 / (std + 1e-8)
};

// The number of doubles a member contributes: 3 + (1 + 2 obs_dim) + 3.
int stats_gather_values(int obs_dim);

// Every round: fresh random records, every member's row first filled with garbage (as a gradient buffer holds),
// then the members' kernels launched together. Throws if a wait gave up (the group's stall word set).
std::vector<stats_gather_round> run_stats_gather(const stats_gather_rounds& o);
