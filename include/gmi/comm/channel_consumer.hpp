#pragma once
// A trainer GMI's end of the experience channel: the last stage, batch. channel_consumer hands out
// experience_batch, zero-copy where a batch lies inside one migrated slot.

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gmi/comm/channel_options.hpp>
#include <gmi/comm/detail/channel_link.hpp>
#include <gmi/comm/wait.hpp>
#include <gmi/core/error.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/check.hpp>

namespace gmi::comm {

class channel_consumer;

// A training batch: packages x package_steps x package_envs records, packages after one another, each package
// time-major ([step][env][record]). Host memory (host placement) or the consumer's device memory (pinned,
// device). Move-only; its slots go back to the producers when it is destroyed or release()d, after the work
// queued on the consumer's stream so far: read the batch on that stream.
class experience_batch {
 public:
  experience_batch() = default;
  experience_batch(const experience_batch&) = delete;
  experience_batch& operator=(const experience_batch&) = delete;
  experience_batch(experience_batch&& o) noexcept { *this = std::move(o); }
  experience_batch& operator=(experience_batch&& o) noexcept;
  ~experience_batch() { release(); }

  [[nodiscard]] const std::byte* data() const noexcept { return data_; }
  template <class T>
  [[nodiscard]] const T* as() const noexcept {
    return reinterpret_cast<const T*>(data_);
  }
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }
  [[nodiscard]] std::uint32_t packages() const noexcept { return packages_; }
  [[nodiscard]] bool on_device() const noexcept { return on_device_; }
  // Handed out without a copy (it lies inside one migrated slot).
  [[nodiscard]] bool zero_copy() const noexcept { return zero_copy_; }
  // The producer and running package index of each package, in order (who sent what, for tests and tracing).
  [[nodiscard]] const std::vector<std::pair<std::uint32_t, std::uint64_t>>& origins() const noexcept { return origins_; }
  // The note each package's slot carried (package_note), in the same order: host memory, readable at once.
  [[nodiscard]] const std::vector<package_note>& notes() const noexcept { return notes_; }
  void release() noexcept;

 private:
  friend class channel_consumer;
  channel_consumer* owner_ = nullptr;
  const std::byte* data_ = nullptr;
  std::size_t bytes_ = 0;
  std::uint32_t packages_ = 0;
  bool on_device_ = false, zero_copy_ = false;
  std::int64_t held_slot_ = -1;  // index into the consumer's received slots (zero-copy batches)
  std::vector<std::pair<std::uint32_t, std::uint64_t>> origins_;
  std::vector<package_note> notes_;
};

struct consumer_stats {
  std::uint64_t batches = 0, packages = 0, bytes = 0, zero_copy_batches = 0, copied_bytes = 0;
  std::vector<std::uint64_t> slots_from;  // slots received from each producer
};

// A trainer GMI's end of the channel: creates one link per producer (so it is built before, or while, its
// producers start) and assembles batches of packages_per_batch packages. Not thread-safe.
class channel_consumer {
 public:
  channel_consumer(channel_options o, int rank, std::uint32_t packages_per_batch, cudaStream_t stream = nullptr)
      : o_(std::move(o)), rank_(rank), per_batch_(packages_per_batch), stream_(stream) {
    o_.validate();
    require(rank >= 0 && rank < o_.consumers, "channel consumer rank", rank, "0.." + std::to_string(o_.consumers - 1));
    // A batch must fit in what one producer can have in flight on this link, or a lone producer would wait
    // for slots the consumer keeps until the batch is complete.
    require(packages_per_batch >= 1 && packages_per_batch <= o_.slots * o_.packages_per_slot,
            "channel packages_per_batch", packages_per_batch,
            "1..slots x packages_per_slot = " + std::to_string(o_.slots * o_.packages_per_slot));
    stats_.slots_from.assign(static_cast<std::size_t>(o_.producers), 0);
    expected_generation_.assign(static_cast<std::size_t>(o_.producers), 1);
    try {
      for (int p = 0; p < o_.producers; ++p) {
        links_.push_back(
            detail::channel_link::create(detail::link_config_for(o_, p, rank), channel_link_tag(o_.tag, p, rank)));
      }
    } catch (const gmi::error& e) {
      poison(e.what());
      throw;
    }
    start_ = std::chrono::steady_clock::now();
    last_check_ = start_;
  }
  channel_consumer(const channel_consumer&) = delete;
  channel_consumer& operator=(const channel_consumer&) = delete;
  // A consumer that goes before its producers finished breaks its links, so they fail instead of waiting.
  ~channel_consumer() {
    for (auto& l : links_) {
      if (!l->drained()) l->mark_broken("channel " + o_.tag + ": consumer " + std::to_string(rank_) + " went away");
    }
  }

  // The next batch of packages_per_batch packages; a shorter last batch when every producer closed with fewer
  // left; std::nullopt when every producer closed and everything was handed out. Waits (bounded by `timeout`)
  // for producers; throws comm_error on a dead producer, a broken link or a descriptor that does not match.
  std::optional<experience_batch> next_batch(milliseconds timeout) {
    try {
      return assemble(timeout);
    } catch (const comm_error& e) {
      poison(e.what());
      throw;
    } catch (const cuda_error& e) {
      poison(e.what());
      throw;
    }
  }
  std::optional<experience_batch> next_batch() { return next_batch(o_.timeout); }

  [[nodiscard]] const consumer_stats& stats() const noexcept { return stats_; }
  [[nodiscard]] int rank() const noexcept { return rank_; }
  [[nodiscard]] const channel_options& options() const noexcept { return o_; }

 private:
  friend class experience_batch;
  struct received {
    detail::slot_descriptor d;
    std::size_t link;
    std::uint32_t taken = 0;  // packages handed out so far
    int holders = 0;          // zero-copy batches still holding it
  };

  void poison(const std::string& why) noexcept {
    const std::string me = "channel " + o_.tag + ": consumer " + std::to_string(rank_);
    for (auto& l : links_) l->mark_broken(why.rfind(me, 0) == 0 ? why : me + ": " + why);
  }

  void health_check(bool force) {
    const auto now = std::chrono::steady_clock::now();
    if (!force && now - last_check_ < std::chrono::milliseconds(5)) {
      for (auto& l : links_) l->throw_if_broken();
      return;
    }
    last_check_ = now;
    for (auto& l : links_) {
      if (l->attached() && l->drained()) continue;  // a producer that closed and exited is done, not dead
      l->check_peer();
      // A producer that never attaches is a timeout, not a hang.
      if (!l->attached() && now - start_ > o_.timeout) {
        l->fail(l->name() + ": producer did not attach within " + std::to_string(o_.timeout.count()) + " ms");
      }
    }
  }

  // Pops at most one descriptor per link, round robin from after the last link served (fair among producers).
  bool poll_links() {
    bool got = false;
    for (std::size_t k = 0; k < links_.size(); ++k) {
      const std::size_t i = (next_link_ + k) % links_.size();
      auto& l = *links_[i];
      if (!l.poll_attach()) continue;
      if (auto d = l.try_pop()) {
        check_descriptor(*d, i);
        l.wait_filled(d->slot, stream_);
        queue_.push_back(std::make_unique<received>(received{*d, i}));
        available_ += d->packages;
        ++stats_.slots_from[i];
        next_link_ = i + 1;
        got = true;
      }
    }
    return got;
  }

  void check_descriptor(const detail::slot_descriptor& d, std::size_t i) {
    auto& l = *links_[i];
    auto expect = [&](const char* what, std::uint64_t got, std::uint64_t need) {
      if (got != need) {
        l.fail(got_need(l.name() + ": descriptor " + what, got, std::to_string(need) + " as on consumer " + std::to_string(rank_)));
      }
    };
    expect("generation", d.generation, expected_generation_[i]++);
    expect("shape tag", d.shape_tag, o_.shape_tag);
    expect("record bytes", d.record_bytes, o_.record_bytes);
    expect("package steps", d.package_steps, o_.package_steps);
    expect("package envs", d.package_envs, o_.package_envs);
    expect("producer", d.producer, i);
    if (d.slot >= o_.slots) expect("slot", d.slot, o_.slots - 1);
    if (d.packages < 1 || d.packages > o_.packages_per_slot) expect("packages", d.packages, o_.packages_per_slot);
    expect("bytes", d.bytes, std::uint64_t{d.packages} * o_.package_bytes());
  }

  [[nodiscard]] bool all_drained() const {
    for (const auto& l : links_) {
      if (!l->attached() || !l->drained()) return false;
    }
    return true;
  }

  std::optional<experience_batch> assemble(milliseconds timeout) {
    health_check(false);
    poll_links();
    if (available_ < per_batch_) {
      bool finished = false;
      bounded_wait(
          [&] {
            poll_links();
            if (available_ >= per_batch_) return true;
            // drained is read after an empty look; a descriptor pushed before close shows in the next poll.
            if (all_drained()) {
              poll_links();
              finished = available_ < per_batch_;
            }
            return finished;
          },
          [&] { health_check(true); }, timeout,
          "channel " + o_.tag + ": consumer " + std::to_string(rank_) + " waiting for experience");
      if (finished && available_ == 0) return std::nullopt;
    }
    const std::uint32_t want = static_cast<std::uint32_t>(std::min<std::uint64_t>(per_batch_, available_));
    experience_batch b;
    b.owner_ = this;
    b.packages_ = want;
    b.bytes_ = std::size_t{want} * o_.package_bytes();
    b.on_device_ = o_.placement != payload_placement::host;
    received& front = *queue_[first_live_];
    // Zero-copy: the batch lies inside the front slot (host or device payload; pinned payload must reach the GPU).
    if (o_.placement != payload_placement::pinned && front.d.packages - front.taken >= want) {
      b.data_ = links_[front.link]->slot_data(front.d.slot) + std::uint64_t{front.taken} * o_.package_bytes();
      b.zero_copy_ = true;
      b.held_slot_ = static_cast<std::int64_t>(first_live_ + dropped_);
      for (std::uint32_t k = 0; k < want; ++k) {
        b.origins_.emplace_back(front.d.producer, front.d.first_package + front.taken + k);
        b.notes_.push_back(front.d.note);
      }
      front.taken += want;
      ++front.holders;
      available_ -= want;
      if (front.taken == front.d.packages) ++first_live_;
      ++stats_.zero_copy_batches;
    } else {
      gather(b, want);
    }
    ++stats_.batches;
    stats_.packages += want;
    stats_.bytes += b.bytes_;
    return b;
  }

  // Copies `want` packages from the front slots into the assembly buffer; slots are given back as they empty.
  void gather(experience_batch& b, std::uint32_t want) {
    require(!assembly_held_, "channel consumer: assembled batches held", 1,
            "0 (release the previous copied batch before the next is assembled)");
    const std::size_t bytes = std::size_t{per_batch_} * o_.package_bytes();
    std::byte* out = nullptr;
    if (o_.placement == payload_placement::host) {
      if (host_assembly_.size() < bytes) host_assembly_.resize(bytes);
      out = host_assembly_.data();
    } else {
      if (device_assembly_.size() < bytes) device_assembly_ = cuda::device_buffer<std::byte>(bytes);
      out = device_assembly_.data();
    }
    std::size_t at = 0;
    std::uint32_t left = want;
    std::vector<std::size_t> emptied;
    while (left > 0) {
      received& r = *queue_[first_live_];
      const std::uint32_t n = std::min(left, r.d.packages - r.taken);
      const std::byte* src = links_[r.link]->slot_data(r.d.slot) + std::uint64_t{r.taken} * o_.package_bytes();
      const std::size_t nb = std::size_t{n} * o_.package_bytes();
      if (o_.placement == payload_placement::host) {
        std::memcpy(out + at, src, nb);
      } else {
        GMI_CUDA_TRY(cudaMemcpyAsync(out + at, src, nb, cudaMemcpyDefault, stream_));
      }
      for (std::uint32_t k = 0; k < n; ++k) {
        b.origins_.emplace_back(r.d.producer, r.d.first_package + r.taken + k);
        b.notes_.push_back(r.d.note);
      }
      r.taken += n;
      left -= n;
      at += nb;
      available_ -= n;
      if (r.taken == r.d.packages) {
        emptied.push_back(first_live_ + dropped_);
        ++first_live_;
      }
    }
    // Pinned slots are host memory the producer may overwrite once given back: the copy must have finished.
    if (o_.placement == payload_placement::pinned) GMI_CUDA_TRY(cudaStreamSynchronize(stream_));
    for (std::size_t id : emptied) drop_if_done(id);
    b.data_ = out;
    b.zero_copy_ = false;
    b.held_slot_ = -1;
    assembly_held_ = true;
    stats_.copied_bytes += b.bytes_;
  }

  received& by_id(std::size_t id) { return *queue_[id - dropped_]; }

  // Gives a slot back once it is fully handed out and no batch holds it; trims the queue's front.
  void drop_if_done(std::size_t id) {
    received& r = by_id(id);
    if (r.taken == r.d.packages && r.holders == 0 && r.d.slot != released_marker) {
      links_[r.link]->release(r.d.slot, r.d.generation, stream_);
      r.d.slot = released_marker;
    }
    while (!queue_.empty() && first_live_ > 0 && queue_.front()->d.slot == released_marker) {
      queue_.erase(queue_.begin());
      --first_live_;
      ++dropped_;
    }
  }

  void release_batch(experience_batch& b) {
    try {
      if (b.held_slot_ >= 0) {
        received& r = by_id(static_cast<std::size_t>(b.held_slot_));
        --r.holders;
        drop_if_done(static_cast<std::size_t>(b.held_slot_));
      } else {
        assembly_held_ = false;
      }
    } catch (const gmi::error& e) {
      poison(e.what());  // release runs in destructors: the failure reaches everyone through the broken links
    }
  }

  static constexpr std::uint32_t released_marker = 0xffffffffu;

  channel_options o_;
  int rank_;
  std::uint32_t per_batch_;
  cudaStream_t stream_;
  std::vector<std::unique_ptr<detail::channel_link>> links_;
  std::vector<std::uint64_t> expected_generation_;
  // Received slots in arrival order: [0, first_live_) fully handed out but still held by zero-copy batches,
  // [first_live_, end) with packages left. Ids are positions since the start (dropped_ + index).
  std::vector<std::unique_ptr<received>> queue_;
  std::size_t first_live_ = 0, dropped_ = 0, next_link_ = 0;
  std::uint64_t available_ = 0;
  std::vector<std::byte> host_assembly_;
  cuda::device_buffer<std::byte> device_assembly_;
  bool assembly_held_ = false;
  consumer_stats stats_;
  std::chrono::steady_clock::time_point start_, last_check_;
};

inline experience_batch& experience_batch::operator=(experience_batch&& o) noexcept {
  if (this != &o) {
    release();
    owner_ = std::exchange(o.owner_, nullptr);
    data_ = std::exchange(o.data_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    packages_ = std::exchange(o.packages_, 0);
    on_device_ = o.on_device_;
    zero_copy_ = o.zero_copy_;
    held_slot_ = std::exchange(o.held_slot_, -1);
    origins_ = std::move(o.origins_);
    notes_ = std::move(o.notes_);
  }
  return *this;
}

inline void experience_batch::release() noexcept {
  if (!owner_) return;
  owner_->release_batch(*this);
  owner_ = nullptr;
  data_ = nullptr;
}

}  // namespace gmi::comm
