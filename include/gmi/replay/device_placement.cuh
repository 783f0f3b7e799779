#pragma once
// Device shards placed by access probability: a set of device_tables (the shards one GPU samples) with their draw
// counters; place() runs placement.hpp's rule on the window since the last step and moves each shard whose place
// changed (device_table::set_device_slots: all of it in device memory, or all in mapped pinned host memory that
// the sampler and gather kernels read zero-copy). sample_global draws over all the shards at once by their total
// priorities (global_sample.hpp's algorithm in kernels) and counts each shard's draws on the device.

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/event.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/replay/detail/global_kernels.cuh>
#include <gmi/replay/device_table.cuh>
#include <gmi/replay/global_sample.hpp>
#include <gmi/replay/placement.hpp>

namespace gmi::replay {

// Where a device table's slots are now: all in device memory counts as device, anything less as pinned host.
[[nodiscard]] inline shard_memory memory_of(const device_table& t) {
  return t.device_slots() >= t.spec().capacity ? shard_memory::device : shard_memory::pinned_host;
}

// A global sample's output in device memory: the windows (batch: keys, global probabilities, columns, mask) and,
// per draw, its shard and importance weight.
struct global_device_batch {
  device_batch batch;
  gmi::cuda::device_buffer<std::int32_t> shard;
  gmi::cuda::device_buffer<float> weight;
};

class device_shard_set {
 public:
  // The tables outlive the set; the rule is validated here (a bad one refused with one line).
  device_shard_set(std::vector<device_table*> tables, placement_rule rule)
      : tables_(std::move(tables)), rule_((rule.validate(), rule)), counts_(checked(tables_.size())) {
    for (std::size_t i = 0; i < tables_.size(); ++i)
      gmi::require(tables_[i] != nullptr, "device_shard_set table " + std::to_string(i), "null", "a table");
    device_counts_.fill_bytes(0, stream_);
  }

  // n draws over every shard as one table: by total priority (prioritized) or over all items (uniform), the
  // windows of `length` steps gathered from each draw's shard, importance weights (p_min / p)^beta. On stream(),
  // after the work already queued on each shard's stream and before what the shards queue next (events, under
  // each table's lock, taken in shard order); no host wait. The shards need the same columns. Each shard's draws
  // are counted on the device and join the placement window at place(). seed_offset as device_table::sample.
  // Rate limiters and max_times_sampled are the shards' own samples' business: a global sample counts in neither.
  // With every total 0 (nothing to draw; the host's draw_global refuses it) each draw has shard and key -1,
  // probability and weight 0, and an all-padding window.
  void sample_global(const sampler& s, std::size_t n, std::size_t length, std::uint64_t seed, double beta,
                     global_device_batch& out, const std::uint64_t* seed_offset = nullptr) {
    check_global_sample(s, tables_.size(), n, beta);
    require(length >= 1 && length <= 8192, "replay window length (device)", length, "1 .. 8192");
    const table_spec& first = tables_[0]->spec();
    for (std::size_t k = 1; k < tables_.size(); ++k) {
      const table_spec& o = tables_[k]->spec();
      bool same = o.columns.size() == first.columns.size();
      for (std::size_t c = 0; same && c < o.columns.size(); ++c) same = o.columns[c].width == first.columns[c].width;
      require(same, "global sample shard " + std::to_string(k) + " columns", "another layout than shard 0's",
              "the same column widths on every shard");
    }
    shape_global(out, n, length, first);
    const auto locks = after_shards();
    const int count = static_cast<int>(tables_.size());
    const bool prio = s.kind == sampler_kind::prioritized;
    const auto N = static_cast<std::int64_t>(n);
    detail::global_roots_kernel<<<1, 1, 0, stream_>>>(refs_.data(), count, prio, totals_.data(), prefix_.data());
    detail::global_draw_kernel<<<detail::blocks_for(N), 256, 0, stream_>>>(
        refs_.data(), count, prio, prefix_.data(), seed, seed_offset, N, out.shard.data(), out.batch.keys.data(),
        out.batch.probability.data(), device_counts_.data());
    detail::global_weights_kernel<<<1, detail::global_weight_block, 0, stream_>>>(out.batch.probability.data(), N,
                                                                                 beta, out.weight.data());
    detail::gather_args g{};
    for (std::size_t c = 0; c < out.batch.columns.size(); ++c) g.dst[c] = out.batch.columns[c].data();
    g.mask = out.batch.mask.data();
    g.keys = out.batch.keys.data();
    g.length = static_cast<std::int32_t>(length);
    const unsigned threads = length * 8 >= 256 ? 256 : 128;
    detail::global_gather_kernel<<<static_cast<unsigned>(n), threads, length * 4, stream_>>>(refs_.data(),
                                                                                          out.shard.data(), g);
    GMI_CUDA_TRY(cudaGetLastError());
    done_.record(stream_);
    for (device_table* t : tables_) done_.wait_on(t->stream());
  }
  // Each shard's total (its sum-tree's root: priorities, or item counts for uniform) copied into host_totals
  // (shards() doubles, pinned host memory so the copy is asynchronous) on stream(), after the work queued on each
  // shard's stream; ready once stream() has passed it (multi_gpu_shard_set's gather of the totals).
  void enqueue_totals(const sampler& s, double* host_totals) {
    const auto locks = after_shards();
    detail::global_roots_kernel<<<1, 1, 0, stream_>>>(refs_.data(), static_cast<int>(tables_.size()),
                                                      s.kind == sampler_kind::prioritized, totals_.data(),
                                                      prefix_.data());
    GMI_CUDA_TRY(cudaGetLastError());
    GMI_CUDA_TRY(cudaMemcpyAsync(host_totals, totals_.data(), tables_.size() * 8, cudaMemcpyDeviceToHost, stream_));
  }
  // The stream global samples run on (their outputs are ready in its order).
  [[nodiscard]] cudaStream_t stream() const noexcept { return stream_; }
  // Each shard's total when the last global sample drew (waits for stream()).
  [[nodiscard]] std::vector<double> last_totals() {
    std::vector<double> v(tables_.size());
    GMI_CUDA_TRY(cudaMemcpyAsync(v.data(), totals_.data(), v.size() * 8, cudaMemcpyDeviceToHost, stream_));
    GMI_CUDA_TRY(cudaStreamSynchronize(stream_));
    return v;
  }

  // Samples shard k with the table's own sample call and counts its n draws.
  void sample(std::size_t k, const sampler& s, std::size_t n, std::size_t length, std::uint64_t seed, device_batch& out) {
    gmi::require(k < tables_.size(), "device_shard_set shard", k, "< " + std::to_string(tables_.size()));
    tables_[k]->sample(s, n, length, seed, out);
    count(k, n);
  }
  // Draws counted elsewhere (a sampler that calls the table directly).
  void count(std::size_t k, std::uint64_t n) {
    counts_.count(k, n);
    drawn_[k] += n;
  }

  // One placement step: the window's counts through the rule, then the moves. Returns the plan.
  placement_plan place() {
    pull_device_counts();
    const std::vector<std::uint64_t> c = counts_.take();
    std::vector<shard_memory> now(tables_.size());
    for (std::size_t i = 0; i < tables_.size(); ++i) now[i] = memory_of(*tables_[i]);
    placement_plan p = place_shards(c, now, rule_);
    for (std::size_t i = 0; i < tables_.size(); ++i) {
      if (p.where[i] == now[i]) continue;
      tables_[i]->set_device_slots(p.where[i] == shard_memory::device ? tables_[i]->spec().capacity : 0);
      ++moves_;
    }
    return p;
  }
  // Each shard's draws since the set was made, global samples' and sample()'s (waits for stream(); the placement
  // window keeps them).
  [[nodiscard]] std::vector<std::uint64_t> drawn() {
    pull_device_counts();
    return drawn_;
  }
  [[nodiscard]] std::size_t shards() const noexcept { return tables_.size(); }
  [[nodiscard]] std::uint64_t moves() const noexcept { return moves_; }
  [[nodiscard]] const placement_rule& rule() const noexcept { return rule_; }

 private:
  static std::size_t checked(std::size_t n) {
    gmi::require(n >= 1 && n <= max_global_shards, "device_shard_set tables", n,
                 "1 .. " + std::to_string(max_global_shards));
    return n;
  }
  // Every table locked (shard order), their views current on the device, and stream() after the work queued on each
  // table's stream; the locks held until the caller has enqueued what reads the tables.
  std::vector<std::unique_lock<std::mutex>> after_shards() {
    std::vector<std::unique_lock<std::mutex>> locks;
    for (device_table* t : tables_) locks.push_back(t->lock());
    upload_refs();
    for (std::size_t k = 0; k < tables_.size(); ++k) {
      ready_[k].record(tables_[k]->stream());
      ready_[k].wait_on(stream_);
    }
    return locks;
  }
  // The tables' views in device memory, uploaded again when a table moved (its column pointers changed).
  void upload_refs() {
    std::vector<detail::table_ref> now;
    for (device_table* t : tables_) now.push_back(t->ref());
    const auto same = [](const detail::table_ref& a, const detail::table_ref& b) {
      for (int c = 0; c < a.num_cols; ++c)
        if (a.cols[c].dev != b.cols[c].dev || a.cols[c].host != b.cols[c].host) return false;
      return a.num_cols == b.num_cols && a.split == b.split && a.prio_tree == b.prio_tree;
    };
    bool unchanged = refs_host_.size() == now.size();
    for (std::size_t k = 0; unchanged && k < now.size(); ++k) unchanged = same(now[k], refs_host_[k]);
    if (unchanged) return;
    GMI_CUDA_TRY(cudaStreamSynchronize(stream_));  // no sample still reads the old views
    refs_host_ = std::move(now);
    GMI_CUDA_TRY(cudaMemcpy(refs_.data(), refs_host_.data(), refs_host_.size() * sizeof(detail::table_ref),
                            cudaMemcpyHostToDevice));
  }
  void shape_global(global_device_batch& out, std::size_t n, std::size_t length, const table_spec& spec) {
    device_batch& b = out.batch;
    if (b.keys.size() < n) {
      b.keys = gmi::cuda::device_buffer<std::int32_t>(n);
      b.probability = gmi::cuda::device_buffer<double>(n);
      out.shard = gmi::cuda::device_buffer<std::int32_t>(n);
      out.weight = gmi::cuda::device_buffer<float>(n);
    }
    b.columns.resize(spec.columns.size());
    for (std::size_t c = 0; c < spec.columns.size(); ++c) {
      const std::size_t words = n * length * spec.columns[c].width;
      if (b.columns[c].size() < words) b.columns[c] = gmi::cuda::device_buffer<std::uint32_t>(words);
    }
    if (b.mask.size() < n * length) b.mask = gmi::cuda::device_buffer<float>(n * length);
    b.batch = n;
    b.length = length;
  }
  // The global samples' draws per shard into the host counters (one wait on stream(), at placement only).
  void pull_device_counts() {
    std::vector<unsigned long long> c(tables_.size());
    GMI_CUDA_TRY(cudaMemcpyAsync(c.data(), device_counts_.data(), c.size() * 8, cudaMemcpyDeviceToHost, stream_));
    GMI_CUDA_TRY(cudaMemsetAsync(device_counts_.data(), 0, c.size() * 8, stream_));
    GMI_CUDA_TRY(cudaStreamSynchronize(stream_));
    for (std::size_t k = 0; k < c.size(); ++k)
      if (c[k]) count(k, c[k]);
  }
  std::vector<device_table*> tables_;
  placement_rule rule_;
  access_counts counts_;
  std::uint64_t moves_ = 0;
  std::vector<std::uint64_t> drawn_ = std::vector<std::uint64_t>(tables_.size(), 0);
  gmi::cuda::stream stream_;
  std::vector<gmi::cuda::event> ready_ = std::vector<gmi::cuda::event>(tables_.size());
  gmi::cuda::event done_;
  std::vector<detail::table_ref> refs_host_;
  gmi::cuda::device_buffer<detail::table_ref> refs_{tables_.size()};
  gmi::cuda::device_buffer<double> totals_{tables_.size()}, prefix_{tables_.size() + 1};
  gmi::cuda::device_buffer<unsigned long long> device_counts_{tables_.size()};
};

}  // namespace gmi::replay
