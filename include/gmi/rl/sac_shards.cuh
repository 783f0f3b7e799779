#pragma once
// A GPU SAC learner's replay as several device tables (sac_config::replay_shards, laid out by sac_shard_layout):
// shard 0 is the trainer's own table (its stream is the trainer's), shards 1.. have their own streams. Each
// vector step's transitions go to their group's shard (one insert a shard, ordered after the collection on the
// trainer's stream by an event and before the next collection by another); an update's batch is one global draw
// over all shards (replay::device_shard_set::sample_global: uniform over all items, each shard's share by its item
// count; the trainer's stream waits for it on the device); every placement_every vector steps a placement step
// (device_shard_set::place: the draws since the last step through placement.hpp's rule, under the budget) moves
// whole shards between device memory and pinned host memory, which the draw and gather kernels read zero-copy.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <gmi/cuda/event.hpp>
#include <gmi/replay/device_placement.cuh>
#include <gmi/replay/device_table.cuh>
#include <gmi/rl/sac_shard_layout.hpp>

namespace gmi::rl {

class sac_replay_shards {
 public:
  // `first`: the trainer's table (shard 0, created with first_spec_of's spec); spec: every other shard's.
  sac_replay_shards(sac_shard_layout layout, replay::device_table& first, const replay::table_spec& spec)
      : layout_(std::move(layout)), main_(first.stream()) {
    tables_.push_back(&first);
    for (std::size_t k = 1; k < layout_.shards; ++k) {
      owned_.push_back(std::make_unique<replay::device_table>(spec));
      tables_.push_back(owned_.back().get());
    }
    for (std::size_t k = 0; k < layout_.shards; ++k) writers_.push_back(tables_[k]->make_writer(layout_.group_envs(k)));
    inserted_ = std::vector<cuda::event>(layout_.shards);
    set_ = std::make_unique<replay::device_shard_set>(tables_, layout_.rule());
  }
  // Shard 0's spec (and every shard's): the trainer's capacity split over the shards, in pinned host memory from
  // the start when there is a budget.
  static replay::table_spec shard_spec(replay::table_spec s, const sac_shard_layout& l) {
    s.capacity = l.capacity;
    if (l.budget) s.device_capacity = 0;
    return s;
  }

  // One vector step's transitions (r: horizon 1, all the trainer's environments, columns [envs][width] on the
  // trainer's stream), each group's rows into its shard.
  void insert(const replay::rollout& r, std::span<const std::size_t> widths) {
    collected_.record(main_);
    for (std::size_t k = 0; k < layout_.shards; ++k) {
      replay::rollout g = r;
      g.envs = layout_.group_envs(k);
      for (std::size_t c = 0; c < g.columns.size(); ++c)
        g.columns[c] = static_cast<const float*>(r.columns[c]) + layout_.first[k] * widths[c];
      if (k > 0) collected_.wait_on(tables_[k]->stream());
      tables_[k]->insert(writers_[k], g);
      if (k > 0) {
        inserted_[k].record(tables_[k]->stream());
        inserted_[k].wait_on(main_);  // the next collection overwrites the columns
      }
    }
  }
  // An update's batch of n one-step windows drawn over all shards (seed + *seed_offset, as device_table::sample);
  // the trainer's stream waits for it on the device.
  replay::device_batch& sample(std::size_t n, std::uint64_t seed, const std::uint64_t* seed_offset) {
    set_->sample_global(replay::sampler::uniform(), n, 1, seed, 0.0, out_, seed_offset);
    return out_.batch;
  }
  // After a vector step: a placement step when one is due (waits for the shard set's stream; a move waits for the
  // moved table's stream).
  void after_vector_step() {
    ++vector_steps_;
    if (layout_.shards < 2 || every_ == 0 || vector_steps_ % every_ != 0) return;
    const replay::placement_plan p = set_->place();
    ++steps_;
    if (p.decided) {
      ++decided_;
      last_share_ = p.share;
    }
  }
  void set_placement_every(std::size_t n) { every_ = n; }

  // Where each shard lives and its draws so far (waits for the shard set's stream).
  [[nodiscard]] sac_shard_report report() {
    sac_shard_report r;
    for (std::size_t k = 0; k < layout_.shards; ++k) {
      r.envs.push_back(layout_.group_envs(k));
      r.memory.push_back(replay::memory_of(*tables_[k]));
    }
    r.drawn = set_->drawn();
    r.last_share = last_share_;
    r.placement_steps = steps_;
    r.decided_steps = decided_;
    r.moves = set_->moves();
    r.device_shards = layout_.device_shards;
    return r;
  }
  [[nodiscard]] const sac_shard_layout& layout() const noexcept { return layout_; }
  [[nodiscard]] replay::device_table& table(std::size_t k) { return *tables_.at(k); }

 private:
  sac_shard_layout layout_;
  cudaStream_t main_;
  std::vector<replay::device_table*> tables_;
  std::vector<std::unique_ptr<replay::device_table>> owned_;
  std::vector<replay::device_table::writer> writers_;
  std::unique_ptr<replay::device_shard_set> set_;
  replay::global_device_batch out_;
  cuda::event collected_;
  std::vector<cuda::event> inserted_;
  std::size_t every_ = 0;
  std::uint64_t vector_steps_ = 0, steps_ = 0, decided_ = 0;
  std::vector<double> last_share_;
};

}  // namespace gmi::rl
