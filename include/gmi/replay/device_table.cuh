#pragma once
// A replay table on the GPU (GEAR's layout): slots [0, device_capacity) in device memory, the rest in mapped
// pinned host memory that the gather and insert kernels read and write zero-copy; samplers run as kernels,
// inserts take a GMI's rollout straight from device memory in one kernel. Control (slot allocation, removers,
// rate limiters) stays on the host, in the same code as the host table's.

#include <cuda_runtime.h>

#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <vector>

#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/check.hpp>
#include <gmi/cuda/event.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/replay/detail/control.hpp>
#include <gmi/replay/detail/kernels.cuh>
#include <gmi/replay/host_table.hpp>
#include <gmi/replay/snapshot.hpp>

namespace gmi::replay {

// Page-locked host memory mapped into the device's address space (cudaHostAllocMapped).
template <class T>
class mapped_buffer {
 public:
  mapped_buffer() = default;
  explicit mapped_buffer(std::size_t n) : size_(n) {
    if (n == 0) return;
    GMI_CUDA_TRY(cudaHostAlloc(reinterpret_cast<void**>(&host_), n * sizeof(T), cudaHostAllocMapped));
    GMI_CUDA_TRY(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev_), host_, 0));
  }
  mapped_buffer(const mapped_buffer&) = delete;
  mapped_buffer& operator=(const mapped_buffer&) = delete;
  mapped_buffer(mapped_buffer&& o) noexcept
      : host_(std::exchange(o.host_, nullptr)), dev_(std::exchange(o.dev_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  mapped_buffer& operator=(mapped_buffer&& o) noexcept {
    std::swap(host_, o.host_);
    std::swap(dev_, o.dev_);
    std::swap(size_, o.size_);
    return *this;
  }
  ~mapped_buffer() {
    if (host_) cudaFreeHost(host_);
  }
  [[nodiscard]] T* host() const noexcept { return host_; }
  [[nodiscard]] T* device() const noexcept { return dev_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

 private:
  T* host_ = nullptr;
  T* dev_ = nullptr;
  std::size_t size_ = 0;
};

// A gathered batch in device memory: columns[c] is [batch, length, width_c] words, mask [batch, length].
struct device_batch {
  std::size_t batch = 0, length = 0;
  gmi::cuda::device_buffer<std::int32_t> keys;
  gmi::cuda::device_buffer<double> probability;
  std::vector<gmi::cuda::device_buffer<std::uint32_t>> columns;
  gmi::cuda::device_buffer<float> mask;
  template <class T>
  [[nodiscard]] T* column(std::size_t c) const {
    static_assert(sizeof(T) == 4, "replay columns hold 4-byte elements");
    return reinterpret_cast<T*>(columns[c].data());
  }
};

class device_table {
 public:
  struct writer {
    detail::writer_host_part host;
    gmi::cuda::device_buffer<std::int64_t> traj, episodes;
    gmi::cuda::device_buffer<std::int32_t> step;
  };

  explicit device_table(table_spec spec, rate_limiter limiter = rate_limiter::min_size(1),
                        std::chrono::milliseconds timeout = std::chrono::seconds(10))
      : ctl_(std::move(spec), std::move(limiter), timeout) {
    const table_spec& s = ctl_.spec_;
    split_ = std::min(s.capacity, s.device_capacity);
    leaves_ = detail::tree_leaves_for(static_cast<std::int64_t>(s.capacity));
    for (const column& c : s.columns) {
      dev_cols_.emplace_back(split_ * c.width);
      host_cols_.emplace_back((s.capacity - split_) * c.width);
    }
    traj_ = gmi::cuda::device_buffer<std::int64_t>(s.capacity);
    step_ = gmi::cuda::device_buffer<std::int32_t>(s.capacity);
    next_ = gmi::cuda::device_buffer<std::int32_t>(s.capacity);
    seq_ = gmi::cuda::device_buffer<std::uint64_t>(s.capacity);
    prio_tree_ = gmi::cuda::device_buffer<double>(2 * leaves_);
    size_tree_ = gmi::cuda::device_buffer<double>(2 * leaves_);
    GMI_CUDA_TRY(cudaMemsetAsync(traj_.data(), 0xFF, traj_.size_bytes(), stream_));
    GMI_CUDA_TRY(cudaMemsetAsync(step_.data(), 0, step_.size_bytes(), stream_));
    GMI_CUDA_TRY(cudaMemsetAsync(next_.data(), 0xFF, next_.size_bytes(), stream_));
    GMI_CUDA_TRY(cudaMemsetAsync(seq_.data(), 0, seq_.size_bytes(), stream_));
    GMI_CUDA_TRY(cudaMemsetAsync(prio_tree_.data(), 0, prio_tree_.size_bytes(), stream_));
    GMI_CUDA_TRY(cudaMemsetAsync(size_tree_.data(), 0, size_tree_.size_bytes(), stream_));
    GMI_CUDA_TRY(cudaStreamSynchronize(stream_));
  }
  device_table(const device_table&) = delete;
  device_table& operator=(const device_table&) = delete;

  // The stream every kernel of this table runs on: order other work after it with events or this stream.
  [[nodiscard]] cudaStream_t stream() const noexcept { return stream_; }
  [[nodiscard]] const table_spec& spec() const noexcept { return ctl_.spec_; }
  [[nodiscard]] std::size_t device_slots() const noexcept { return split_; }

  // Moves the items so that slots [0, slots) live in device memory and the rest in mapped pinned host memory (a
  // shard placed by access, placement.hpp), under the lock and after the table's stream is idle; links, counters
  // and trees stay, so a sample after the move draws and gathers the same items as one before it would.
  void set_device_slots(std::size_t slots) {
    std::lock_guard lock(ctl_.mu_);
    const std::size_t cap = ctl_.spec_.capacity, split = std::min(slots, cap);
    if (split == split_) return;
    GMI_CUDA_TRY(cudaStreamSynchronize(stream_));
    std::vector<std::uint32_t> all;
    for (std::size_t c = 0; c < dev_cols_.size(); ++c) {
      const std::size_t w = ctl_.spec_.columns[c].width;
      all.resize(cap * w);
      if (split_) GMI_CUDA_TRY(cudaMemcpy(all.data(), dev_cols_[c].data(), split_ * w * 4, cudaMemcpyDeviceToHost));
      std::copy_n(host_cols_[c].host(), (cap - split_) * w, all.data() + split_ * w);
      dev_cols_[c] = gmi::cuda::device_buffer<std::uint32_t>(split * w);
      host_cols_[c] = mapped_buffer<std::uint32_t>((cap - split) * w);
      if (split) GMI_CUDA_TRY(cudaMemcpy(dev_cols_[c].data(), all.data(), split * w * 4, cudaMemcpyHostToDevice));
      std::copy_n(all.data() + split * w, (cap - split) * w, host_cols_[c].host());
    }
    split_ = split;
    ctl_.spec_.device_capacity = split;
  }

  [[nodiscard]] writer make_writer(std::size_t envs) {
    writer w{ctl_.new_writer(envs), gmi::cuda::device_buffer<std::int64_t>(envs),
             gmi::cuda::device_buffer<std::int64_t>(envs), gmi::cuda::device_buffer<std::int32_t>(envs)};
    GMI_CUDA_TRY(cudaMemsetAsync(w.traj.data(), 0xFF, w.traj.size_bytes(), stream_));
    GMI_CUDA_TRY(cudaMemsetAsync(w.episodes.data(), 0, w.episodes.size_bytes(), stream_));
    GMI_CUDA_TRY(cudaMemsetAsync(w.step.data(), 0, w.step.size_bytes(), stream_));
    return w;
  }

  // Inserts a rollout whose columns (and priorities) are device arrays [horizon, envs, width], in one kernel
  // plus the sum-trees' upkeep; asynchronous on stream() unless a heap remover needs the priorities back.
  void insert(writer& w, const rollout& r) {
    ctl_.check_rollout(r);
    require(r.envs == w.host.envs, "rollout.envs", r.envs, std::to_string(w.host.envs) + " (the writer's envs)");
    const std::size_t n = r.horizon * r.envs;
    std::unique_lock lock(ctl_.mu_);
    ctl_.await_insert(lock, n);
    auto a = ctl_.index_.allocate(n);
    const auto link = ctl_.links(w.host, a, r.horizon);
    // Staging for slot lists: the previous insert's copies out of it must be done before it is overwritten. A wait
    // for those copies alone (an event after them), not for the stream: work queued after the previous insert
    // (a trainer's updates) keeps the device busy while the host prepares this one.
    staged_free_.synchronize();
    stage_ints(staged_link_, link);
    // Evicted slots need no clearing: every one is reused by this insert (index.hpp allocates them).
    if (a.contiguous_base < 0) stage_ints(staged_slots_, a.slots);
    staged_free_.record(stream_);
    detail::insert_args args{};
    for (std::size_t c = 0; c < r.columns.size(); ++c) args.src[c] = static_cast<const std::uint32_t*>(r.columns[c]);
    args.priorities = r.priorities;
    args.default_priority = r.default_priority;
    args.exponent = ctl_.spec_.priority_exponent;
    args.horizon = static_cast<std::int32_t>(r.horizon);
    args.envs = static_cast<std::int32_t>(r.envs);
    args.contiguous_base = a.contiguous_base;
    args.slots = slots_dev_.data();
    args.link_from = link_dev_.data();
    args.w_traj = w.traj.data();
    args.w_step = w.step.data();
    args.w_episodes = w.episodes.data();
    args.traj_base = w.host.traj_base;
    args.seq_base = a.seq_base;
    const bool done_f32 = ctl_.done_col_ >= 0 && ctl_.spec_.columns[ctl_.done_col_].type == dtype::f32;
    detail::insert_kernel<<<static_cast<unsigned>(r.envs), 128, 0, stream_>>>(ref(), args, done_f32);
    GMI_CUDA_TRY(cudaGetLastError());
    refresh(a.contiguous_base, slots_dev_.data(), static_cast<std::int64_t>(n));
    // Leaves on the host mirror: the heap removers order by them.
    if (ctl_.spec_.remove == remover::min_heap || ctl_.spec_.remove == remover::max_heap) {
      std::vector<float> p(n, r.default_priority);
      if (r.priorities) GMI_CUDA_TRY(cudaMemcpyAsync(p.data(), r.priorities, n * 4, cudaMemcpyDeviceToHost, stream_));
      GMI_CUDA_TRY(cudaStreamSynchronize(stream_));
      for (std::size_t e = 0; e < r.envs; ++e)
        for (std::size_t k = 0; k < r.horizon; ++k)
          ctl_.index_.set_leaf(a.slots[e * r.horizon + k], ctl_.leaf_of_priority(p[k * r.envs + e]));
    }
    ctl_.cv_.notify_all();
  }

  // Draws n items and gathers windows of `length` steps into out (device memory, resized as needed), all on
  // stream(); with max_times_sampled the keys come back to the host to count (one synchronization).
  // seed_offset (a device word, or null): uniform and prioritized draws use seed + *seed_offset, read when the
  // kernel runs, so a CUDA graph that captured this call draws new items on every replay (the rate limiter and
  // the counters see the captured call only: capture once out's shape and the limiter are settled, and without
  // max_times_sampled, which needs the host).
  void sample(const sampler& s, std::size_t n, std::size_t length, std::uint64_t seed, device_batch& out,
              const std::uint64_t* seed_offset = nullptr) {
    require(n >= 1, "replay sample (items)", n, ">= 1");
    require(length >= 1 && length <= 8192, "replay window length (device)", length, "1 .. 8192");
    std::unique_lock lock(ctl_.mu_);
    ctl_.await_sample(lock, n);
    ctl_.check_sampler(s, n);
    shape(out, n, length);
    if (!s.ordered()) {
      const bool prio = s.kind == sampler_kind::prioritized;
      detail::draw_kernel<<<detail::blocks_for(n), 256, 0, stream_>>>(
          ref(), prio, seed, seed_offset, static_cast<std::int64_t>(n), out.keys.data(), out.probability.data());
      GMI_CUDA_TRY(cudaGetLastError());
    } else {
      draw_ordered(s, n, out);
    }
    detail::gather_args g{};
    for (std::size_t c = 0; c < out.columns.size(); ++c) g.dst[c] = out.columns[c].data();
    g.mask = out.mask.data();
    g.keys = out.keys.data();
    g.length = static_cast<std::int32_t>(length);
    const unsigned threads = length * 8 >= 256 ? 256 : 128;
    detail::gather_kernel<<<static_cast<unsigned>(n), threads, length * 4, stream_>>>(ref(), g);
    GMI_CUDA_TRY(cudaGetLastError());
    std::vector<std::int32_t> keys;
    if (ctl_.spec_.max_times_sampled != 0) {
      keys.resize(n);
      GMI_CUDA_TRY(cudaMemcpyAsync(keys.data(), out.keys.data(), n * 4, cudaMemcpyDeviceToHost, stream_));
      GMI_CUDA_TRY(cudaStreamSynchronize(stream_));
    }
    const auto removed = ctl_.index_.note_sampled(keys.data(), n);
    if (!removed.empty()) {
      GMI_CUDA_TRY(cudaStreamSynchronize(stream_));
      launch_clear(removed);
    }
    ctl_.cv_.notify_all();
  }

  // Batched priority updates from device arrays (e.g. TD errors of the sampled keys); last one wins for repeats.
  void update_priorities(const std::int32_t* keys, const float* priorities, std::size_t n) {
    if (n == 0) return;
    std::unique_lock lock(ctl_.mu_);
    const auto count = static_cast<std::int64_t>(n);
    detail::set_priority_kernel<<<detail::blocks_for(count), 256, 0, stream_>>>(ref(), keys, priorities, count,
                                                                               ctl_.spec_.priority_exponent);
    for (int level = 1; (leaves_ >> level) >= 1; ++level)
      detail::tree_level_keys_kernel<<<detail::blocks_for(count), 256, 0, stream_>>>(ref(), keys, count, level);
    GMI_CUDA_TRY(cudaGetLastError());
    if (ctl_.spec_.remove == remover::min_heap || ctl_.spec_.remove == remover::max_heap) {
      std::vector<std::int32_t> k(n);
      std::vector<float> p(n);
      GMI_CUDA_TRY(cudaMemcpyAsync(k.data(), keys, n * 4, cudaMemcpyDeviceToHost, stream_));
      GMI_CUDA_TRY(cudaMemcpyAsync(p.data(), priorities, n * 4, cudaMemcpyDeviceToHost, stream_));
      GMI_CUDA_TRY(cudaStreamSynchronize(stream_));
      for (std::size_t i = 0; i < n; ++i)
        if (k[i] >= 0 && static_cast<std::size_t>(k[i]) < ctl_.spec_.capacity && ctl_.index_.seq_of(k[i]) != 0)
          ctl_.index_.set_leaf(k[i], ctl_.leaf_of_priority(p[i] > 0.0f ? p[i] : 0.0f));
    }
  }

  // For samplers over several tables (device_shard_set::sample_global): the table's lock; while it is held no
  // insert or sample of this table enqueues work, so events recorded on stream() then order against them.
  [[nodiscard]] std::unique_lock<std::mutex> lock() { return std::unique_lock(ctl_.mu_); }

  [[nodiscard]] std::size_t size() {
    std::lock_guard lock(ctl_.mu_);
    return ctl_.index_.size();
  }
  [[nodiscard]] detail::counters counters() {
    std::lock_guard lock(ctl_.mu_);
    return ctl_.index_.count();
  }

  // Copies the table out: under the lock only the copies are enqueued on stream() (stream order makes them
  // a consistent cut); the wait for them happens after the lock is released, so other threads go on.
  [[nodiscard]] snapshot take_snapshot() {
    snapshot s;
    s.spec = ctl_.spec_;
    const std::size_t cap = s.spec.capacity;
    s.traj.resize(cap);
    s.step.resize(cap);
    s.next.resize(cap);
    std::vector<double> leaves(cap);
    gmi::cuda::event done;
    {
      std::lock_guard lock(ctl_.mu_);
      s.index = ctl_.index_.save();
      for (std::size_t c = 0; c < dev_cols_.size(); ++c) {
        const std::size_t w = s.spec.columns[c].width;
        s.columns.emplace_back(cap * w);
        copy_out(s.columns[c].data(), dev_cols_[c].data(), split_ * w * 4);
        copy_out(s.columns[c].data() + split_ * w, host_cols_[c].host(), (cap - split_) * w * 4);
      }
      copy_out(s.traj.data(), traj_.data(), cap * 8);
      copy_out(s.step.data(), step_.data(), cap * 4);
      copy_out(s.next.data(), next_.data(), cap * 4);
      copy_out(leaves.data(), prio_tree_.data() + leaves_, cap * 8);
      done.record(stream_);
    }
    done.synchronize();
    s.index.leaf = std::move(leaves);  // the device's leaves are the authority (priorities updated on device)
    return s;
  }

  void restore(snapshot s) {
    detail::check_same_layout(ctl_.spec_, s.spec, s.origin);
    detail::check_data(s);
    std::lock_guard lock(ctl_.mu_);
    ctl_.index_.restore(s.index, s.origin);
    GMI_CUDA_TRY(cudaStreamSynchronize(stream_));
    const std::size_t cap = ctl_.spec_.capacity;
    for (std::size_t c = 0; c < dev_cols_.size(); ++c) {
      const std::size_t w = ctl_.spec_.columns[c].width;
      GMI_CUDA_TRY(cudaMemcpy(dev_cols_[c].data(), s.columns[c].data(), split_ * w * 4, cudaMemcpyHostToDevice));
      std::copy_n(s.columns[c].data() + split_ * w, (cap - split_) * w, host_cols_[c].host());
    }
    GMI_CUDA_TRY(cudaMemcpy(traj_.data(), s.traj.data(), cap * 8, cudaMemcpyHostToDevice));
    GMI_CUDA_TRY(cudaMemcpy(step_.data(), s.step.data(), cap * 4, cudaMemcpyHostToDevice));
    GMI_CUDA_TRY(cudaMemcpy(next_.data(), s.next.data(), cap * 4, cudaMemcpyHostToDevice));
    GMI_CUDA_TRY(cudaMemcpy(seq_.data(), s.index.seq.data(), cap * 8, cudaMemcpyHostToDevice));
    std::vector<double> size_leaves(leaves_, 0.0), prio_leaves(leaves_, 0.0);
    for (std::size_t i = 0; i < cap; ++i) {
      size_leaves[i] = s.index.seq[i] != 0 ? 1.0 : 0.0;
      prio_leaves[i] = s.index.seq[i] != 0 ? s.index.leaf[i] : 0.0;
    }
    GMI_CUDA_TRY(cudaMemcpy(prio_tree_.data() + leaves_, prio_leaves.data(), leaves_ * 8, cudaMemcpyHostToDevice));
    GMI_CUDA_TRY(cudaMemcpy(size_tree_.data() + leaves_, size_leaves.data(), leaves_ * 8, cudaMemcpyHostToDevice));
    rebuild_trees();
    GMI_CUDA_TRY(cudaStreamSynchronize(stream_));
    ctl_.cv_.notify_all();
  }

  [[nodiscard]] detail::table_ref ref() const {
    detail::table_ref t;
    for (std::size_t c = 0; c < dev_cols_.size(); ++c)
      t.cols[c] = {dev_cols_[c].data(), host_cols_[c].device(), static_cast<std::uint32_t>(ctl_.spec_.columns[c].width)};
    t.num_cols = static_cast<int>(dev_cols_.size());
    t.split = static_cast<std::int64_t>(split_);
    t.capacity = static_cast<std::int32_t>(ctl_.spec_.capacity);
    t.traj = traj_.data();
    t.step = step_.data();
    t.next = next_.data();
    t.seq = seq_.data();
    t.prio_tree = prio_tree_.data();
    t.size_tree = size_tree_.data();
    t.leaves = leaves_;
    t.done_col = ctl_.done_col_;
    return t;
  }

 private:
  void copy_out(void* dst, const void* src, std::size_t bytes) {
    if (bytes) GMI_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_));
  }

  void stage_ints(gmi::cuda::pinned_buffer<std::int32_t>& staged, const std::vector<std::int32_t>& v) {
    if (staged.size() < v.size()) staged = gmi::cuda::pinned_buffer<std::int32_t>(v.size());
    auto& dev = &staged == &staged_link_ ? link_dev_ : slots_dev_;
    if (dev.size() < v.size()) {  // kernels queued before may still read the old one
      GMI_CUDA_TRY(cudaStreamSynchronize(stream_));
      dev = gmi::cuda::device_buffer<std::int32_t>(v.size());
    }
    std::copy(v.begin(), v.end(), staged.data());
    GMI_CUDA_TRY(cudaMemcpyAsync(dev.data(), staged.data(), v.size() * 4, cudaMemcpyHostToDevice, stream_));
  }

  void launch_clear(const std::vector<std::int32_t>& slots) {
    GMI_CUDA_TRY(cudaStreamSynchronize(stream_));
    stage_ints(staged_slots_, slots);
    const auto n = static_cast<std::int64_t>(slots.size());
    detail::clear_kernel<<<detail::blocks_for(n), 256, 0, stream_>>>(ref(), slots_dev_.data(), n);
    refresh(-1, slots_dev_.data(), n);
    GMI_CUDA_TRY(cudaStreamSynchronize(stream_));  // slots_dev_ is reused by the caller's next staging
  }

  // Settles the trees after leaf changes: per level over the changed slots, or whole levels when most change.
  void refresh(std::int32_t contiguous_base, const std::int32_t* slots, std::int64_t n) {
    if (n * 4 >= leaves_) return rebuild_trees();
    for (int level = 1; (leaves_ >> level) >= 1; ++level)
      detail::tree_level_kernel<<<detail::blocks_for(n), 256, 0, stream_>>>(ref(), slots, contiguous_base, n, level);
    GMI_CUDA_TRY(cudaGetLastError());
  }
  void rebuild_trees() {
    for (std::int64_t first = leaves_ / 2; first >= 1; first /= 2)
      detail::tree_rebuild_kernel<<<detail::blocks_for(first), 256, 0, stream_>>>(ref(), first, first);
    GMI_CUDA_TRY(cudaGetLastError());
  }

  void shape(device_batch& out, std::size_t n, std::size_t length) {
    if (out.keys.size() < n) {
      out.keys = gmi::cuda::device_buffer<std::int32_t>(n);
      out.probability = gmi::cuda::device_buffer<double>(n);
    }
    out.columns.resize(dev_cols_.size());
    for (std::size_t c = 0; c < dev_cols_.size(); ++c) {
      const std::size_t words = n * length * ctl_.spec_.columns[c].width;
      if (out.columns[c].size() < words) out.columns[c] = gmi::cuda::device_buffer<std::uint32_t>(words);
    }
    if (out.mask.size() < n * length) out.mask = gmi::cuda::device_buffer<float>(n * length);
    out.batch = n;
    out.length = length;
  }

  // FIFO, LIFO and top-k: key every slot, sort descending (stable: ties keep the lower slot first), take n.
  void draw_ordered(const sampler& s, std::size_t n, device_batch& out) {
    const auto cap = static_cast<std::int64_t>(ctl_.spec_.capacity);
    if (sort_keys_.size() < static_cast<std::size_t>(cap)) {
      sort_keys_ = gmi::cuda::device_buffer<std::uint64_t>(cap);
      sort_keys_out_ = gmi::cuda::device_buffer<std::uint64_t>(cap);
      sort_slots_ = gmi::cuda::device_buffer<std::int32_t>(cap);
      sort_slots_out_ = gmi::cuda::device_buffer<std::int32_t>(cap);
    }
    const int score = s.kind == sampler_kind::top_k ? static_cast<int>(column_index(ctl_.spec_, s.score_column)) : -1;
    detail::order_key_kernel<<<detail::blocks_for(cap), 256, 0, stream_>>>(ref(), static_cast<int>(s.kind), score,
                                                                           sort_keys_.data(), sort_slots_.data());
    std::size_t temp_bytes = 0;
    GMI_CUDA_TRY(cub::DeviceRadixSort::SortPairsDescending(nullptr, temp_bytes, sort_keys_.data(), sort_keys_out_.data(),
                                                           sort_slots_.data(), sort_slots_out_.data(), cap, 0, 64,
                                                           stream_));
    if (sort_temp_.size() < temp_bytes) sort_temp_ = gmi::cuda::device_buffer<std::uint8_t>(temp_bytes);
    GMI_CUDA_TRY(cub::DeviceRadixSort::SortPairsDescending(sort_temp_.data(), temp_bytes, sort_keys_.data(),
                                                           sort_keys_out_.data(), sort_slots_.data(),
                                                           sort_slots_out_.data(), cap, 0, 64, stream_));
    GMI_CUDA_TRY(cudaMemcpyAsync(out.keys.data(), sort_slots_out_.data(), n * 4, cudaMemcpyDeviceToDevice, stream_));
    detail::fill_kernel<<<detail::blocks_for(static_cast<std::int64_t>(n)), 256, 0, stream_>>>(
        out.probability.data(), static_cast<std::int64_t>(n), 1.0);
    GMI_CUDA_TRY(cudaGetLastError());
  }

  detail::control ctl_;
  gmi::cuda::stream stream_;
  std::size_t split_ = 0;
  std::int64_t leaves_ = 1;
  std::vector<gmi::cuda::device_buffer<std::uint32_t>> dev_cols_;
  std::vector<mapped_buffer<std::uint32_t>> host_cols_;
  gmi::cuda::device_buffer<std::int64_t> traj_;
  gmi::cuda::device_buffer<std::int32_t> step_, next_;
  gmi::cuda::device_buffer<std::uint64_t> seq_;
  gmi::cuda::device_buffer<double> prio_tree_, size_tree_;
  gmi::cuda::pinned_buffer<std::int32_t> staged_slots_, staged_link_;
  gmi::cuda::event staged_free_;  // recorded after an insert's copies out of the staging buffers
  gmi::cuda::device_buffer<std::int32_t> slots_dev_, link_dev_;
  gmi::cuda::device_buffer<std::uint64_t> sort_keys_, sort_keys_out_;
  gmi::cuda::device_buffer<std::int32_t> sort_slots_, sort_slots_out_;
  gmi::cuda::device_buffer<std::uint8_t> sort_temp_;
};

}  // namespace gmi::replay
