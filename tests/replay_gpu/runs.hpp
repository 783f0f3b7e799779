#pragma once
// Host entry points into the device table, for the doctest file (compiled by the host compiler).

#include <cstdint>
#include <vector>

#include <gmi/replay/replay.hpp>

#include "replay/support.hpp"

namespace replay_gpu {

struct run_result {
  std::vector<std::int32_t> keys;
  std::vector<double> probability;
  std::vector<std::vector<std::uint32_t>> columns;
  std::vector<float> mask;
  std::size_t size = 0;
};

// Builds a device table of spec, inserts each rollout (one writer of inserts[0].envs envs), then for each
// (sampler, n, length, seed) draw returns what the device sampled and gathered; after draw `snapshot_after`
// (if >= 0) the table's snapshot is stored in *snap.
struct draw {
  gmi::replay::sampler smp;
  std::size_t n, length;
  std::uint64_t seed;
};
std::vector<run_result> run_device(const gmi::replay::table_spec& spec, const std::vector<replay_test::rollout_data>& inserts,
                                   const std::vector<draw>& draws, gmi::replay::snapshot* snap = nullptr);

}  // namespace replay_gpu
