#pragma once
// Host entry points into the device table, for the doctest file (compiled by the host compiler).

#include <cstdint>
#include <cstddef>
#include <vector>

#include <gmi/replay/gpu_groups.hpp>
#include <gmi/replay/replay.hpp>

#include "replay/concurrent_writers.hpp"
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
// (if >= 0) the table's snapshot is stored in *snap. A draw with device_slots set first moves the table's items
// (device_table::set_device_slots: that many slots in device memory, the rest in mapped pinned host memory).
struct draw {
  gmi::replay::sampler smp;
  std::size_t n, length;
  std::uint64_t seed;
  std::size_t device_slots = SIZE_MAX;  // SIZE_MAX: no move
};
std::vector<run_result> run_device(const gmi::replay::table_spec& spec, const std::vector<replay_test::rollout_data>& inserts,
                                   const std::vector<draw>& draws, gmi::replay::snapshot* snap = nullptr);

// Two device tables with the same items as shards of a device_shard_set (rule: min_samples 64, the defaults else):
// shard 0 sampled `hot_draws` items, shard 1 `cold_draws`, then one placement step; then both shards sampled with
// the same seed.
struct placed {
  std::vector<gmi::replay::shard_memory> before, after;
  std::vector<double> share;
  std::uint64_t moves = 0;
  std::size_t device_slots[2] = {0, 0};
  run_result hot, cold;  // the draws after the step
};
placed place_two_shards(const gmi::replay::table_spec& spec, const std::vector<replay_test::rollout_data>& inserts,
                        std::size_t hot_draws, std::size_t cold_draws);

// Device tables, one per entry of `shards` (each filled with its rollouts; shard 1's slots half in mapped pinned
// host memory), as a device_shard_set; one global sample (device_shard_set::sample_global) read back, then one
// placement step whose shares come from the sample's device counts.
struct global_run {
  std::vector<std::int32_t> shard, keys;
  std::vector<double> probability, totals, share;
  std::vector<float> weight, mask;
  std::vector<std::vector<std::uint32_t>> columns;
};
global_run global_device(const gmi::replay::table_spec& spec,
                         const std::vector<std::vector<replay_test::rollout_data>>& shards,
                         const gmi::replay::sampler& smp, std::size_t n, std::size_t length, std::uint64_t seed,
                         double beta);

// Device tables, one per entry of `shards`, shard k on GPU gpu_of[k] (created and filled with that device current),
// as a multi_gpu_shard_set (the shards of each GPU in order, GPUs in order of first appearance in gpu_of); one
// sample read back from every GPU's part, group-major: shard numbered over all shards (the GPU's first shard plus its
// index there), keys, global probabilities, weights, windows; and the plan (each GPU's total, share, seed, scale).
struct multi_gpu_run {
  global_run draws;
  gmi::replay::group_plan plan;
};
// The GPUs this process sees (0 when CUDA reports none or fails).
int device_count();
multi_gpu_run multi_gpu_device(const gmi::replay::table_spec& spec,
                               const std::vector<std::vector<replay_test::rollout_data>>& shards,
                               const std::vector<int>& gpu_of, const gmi::replay::sampler& smp, std::size_t n,
                               std::size_t length, std::uint64_t seed, double beta);

// The same with the shards in groups (group_of[k]: shard k's, groups numbered from 0 in order of first appearance),
// every group a participant of a group sample (group_sample.cuh: a thread on GPU 0 with its own device_shard_set and
// a device_group_participant on one board): each participant's part read back, group-major as above, and the plan
// (every participant's the same, else a throw).
multi_gpu_run group_device(const gmi::replay::table_spec& spec,
                           const std::vector<std::vector<replay_test::rollout_data>>& shards,
                           const std::vector<int>& group_of, const gmi::replay::sampler& smp, std::size_t n,
                           std::size_t length, std::uint64_t seed, double beta);

// `writers` threads on GPU 0, each its own writer, inserting `inserts` rollouts [horizon, envs] of
// replay_writers::rollout_rows from device memory into one device table (half its slots in mapped pinned host
// memory) at once; the table's snapshot checked (tests/replay/concurrent_writers.hpp).
replay_writers::check_result concurrent_device_writers(int writers, int inserts, std::size_t horizon, std::size_t envs);

}  // namespace replay_gpu
