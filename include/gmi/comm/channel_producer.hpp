#pragma once
// A serving GMI's end of the experience channel: dispense, pack and migrate, with back-pressure (a producer with
// no free slot waits, bounded, for one).

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gmi/comm/channel_dispense.hpp>
#include <gmi/comm/channel_migrate.hpp>
#include <gmi/comm/channel_options.hpp>
#include <gmi/comm/detail/channel_link.hpp>
#include <gmi/comm/wait.hpp>
#include <gmi/core/error.hpp>
#include <gmi/cuda/check.hpp>

namespace gmi::comm {

struct producer_stats {
  std::uint64_t packages = 0, slots = 0, bytes = 0;
  std::uint64_t waits = 0;                 // times the producer found no free slot (back-pressure)
  std::vector<std::uint64_t> slots_to;     // slots sent to each consumer
};

// A serving GMI's end of the channel. Copies go on `stream` (device and pinned placements): the rollout must be
// written by work on that stream, or before it. Not thread-safe: one producer per serving GMI.
class channel_producer {
 public:
  channel_producer(channel_options o, int rank, cudaStream_t stream = nullptr)
      : o_(std::move(o)), rank_(rank), stream_(stream), dispenser_(o_.record_bytes, o_.package_steps, o_.package_envs),
        migrator_(o_.consumers, o_.route) {
    o_.validate();
    require(rank >= 0 && rank < o_.producers, "channel producer rank", rank, "0.." + std::to_string(o_.producers - 1));
    stats_.slots_to.assign(static_cast<std::size_t>(o_.consumers), 0);
    try {
      for (int c = 0; c < o_.consumers; ++c) {
        links_.push_back(
            detail::channel_link::open(detail::link_config_for(o_, rank, c), channel_link_tag(o_.tag, rank, c), o_.timeout));
        auto& s = state_.emplace_back();
        for (std::uint32_t k = 0; k < o_.slots; ++k) s.free.push_back(o_.slots - 1 - k);
        s.slot_generation.assign(o_.slots, 0);
        s.slot_bytes.assign(o_.slots, 0);
      }
    } catch (const gmi::error& e) {
      poison(e.what());
      throw;
    }
    last_check_ = std::chrono::steady_clock::now();
  }
  channel_producer(const channel_producer&) = delete;
  channel_producer& operator=(const channel_producer&) = delete;

  // Without close(), consumers would take a crash for the end of the stream: an unwinding or unclosed producer
  // breaks its links instead, and only a clean close() ends the stream.
  ~channel_producer() {
    if (closed_) return;
    if (std::uncaught_exceptions() > 0) {
      poison("producer " + std::to_string(rank_) + " stopped by an exception");
      return;
    }
    try {
      close();
    } catch (const std::exception& e) {
      poison(std::string("producer ") + std::to_string(rank_) + " failed to close: " + e.what());
    }
  }

  // Dispenses a time-major rollout ([steps][envs][record_bytes]) into packages, packs them into slots and
  // migrates full slots. Host placement: `rollout` is host memory; pinned and device: host or device memory.
  // `note` travels with the rollout's slots (package_note).
  void send(const void* rollout, std::uint32_t steps, std::uint32_t envs, const package_note& note = {}) {
    guarded([&] {
      require(!closed_, "channel producer state", "closed", "open (send after close)");
      health_check(false);
      note_ = note;
      dispenser_.dispense(rollout, steps, envs, [&](const package_region& r) { add(r); });
      // Every copy out of `rollout` is queued before send returns, so the caller may rewrite it on the stream
      // right away: a merged copy left pending in a partly filled slot would read the next contents.
      if (open_) issue_pending();
    });
  }

  // Publishes the partly filled slot, if any (latency over packing: call at the end of a rollout if trainers
  // should not wait for the next one).
  void flush() {
    guarded([&] {
      if (open_ && open_->packages > 0) publish_open();
    });
  }

  // Flushes, ends the stream on every link, and waits (bounded) until the consumers gave every slot back, so
  // nothing of this producer (events, mappings) is still needed when it is destroyed.
  void close() {
    if (closed_) return;
    guarded([&] {
      if (open_ && open_->packages > 0) publish_open();
      open_.reset();
      for (auto& l : links_) l->close();
      closed_ = true;
      bounded_wait(
          [&] {
            reclaim_all();
            for (const auto& s : state_) {
              if (s.free.size() != o_.slots) return false;
            }
            return true;
          },
          [&] {
            // A consumer that gave every slot back and then exited is done, not dead.
            for (std::size_t c = 0; c < links_.size(); ++c) {
              if (state_[c].free.size() != o_.slots) links_[c]->check_peer();
            }
          },
          o_.timeout,
          "channel " + o_.tag + ": producer " + std::to_string(rank_) + " waiting for consumers to give slots back");
      // A slot comes back once the consumer has queued its reads, not run them: this producer's copies must be
      // finished before it goes (a process exiting with copies in flight would never fire their events).
      if (o_.placement != payload_placement::host) GMI_CUDA_TRY(cudaStreamSynchronize(stream_));
    });
  }

  [[nodiscard]] const producer_stats& stats() const noexcept { return stats_; }
  // Bytes this producer has queued on each link (sent, not given back yet): what the migrator balances.
  [[nodiscard]] std::vector<std::uint64_t> queued_bytes() const {
    std::vector<std::uint64_t> q;
    for (const auto& s : state_) q.push_back(s.queued);
    return q;
  }
  [[nodiscard]] int rank() const noexcept { return rank_; }
  [[nodiscard]] const channel_options& options() const noexcept { return o_; }

 private:
  struct link_state {
    std::vector<std::uint32_t> free;          // slots this producer may fill
    std::vector<std::uint64_t> slot_generation;  // generation of the descriptor that last carried each slot
    std::vector<std::uint64_t> slot_bytes;
    std::uint64_t queued = 0;
    std::uint64_t generation = 0;
  };
  struct open_slot {
    int consumer;
    std::uint32_t slot;
    std::uint32_t packages = 0;
    std::uint64_t first_package = 0;
    package_note note;  // of the last send that added packages
    // A copy not issued yet: adjacent contiguous packages merge into one memcpy (a whole slot when the rollout's
    // package rows are contiguous), which is what makes large transfers run at copy bandwidth.
    const std::byte* pending_src = nullptr;
    std::byte* pending_dst = nullptr;
    std::size_t pending_bytes = 0;
  };

  template <class Fn>
  void guarded(Fn&& fn) {
    try {
      fn();
    } catch (const comm_error& e) {
      poison(e.what());
      throw;
    } catch (const cuda_error& e) {
      poison(e.what());
      throw;
    }
  }

  // A failed link fails the whole endpoint: every other link is marked broken too, so every consumer learns
  // within its next wait, and the failure spreads to every survivor of the channel.
  void poison(const std::string& why) noexcept {
    const std::string me = "channel " + o_.tag + ": producer " + std::to_string(rank_);
    for (auto& l : links_) l->mark_broken(why.rfind(me, 0) == 0 ? why : me + ": " + why);
  }

  // Liveness of every consumer, at most every few milliseconds on the hot path (each check is a syscall).
  void health_check(bool force) {
    const auto now = std::chrono::steady_clock::now();
    if (!force && now - last_check_ < std::chrono::milliseconds(5)) {
      for (auto& l : links_) l->throw_if_broken();  // an atomic load each
      return;
    }
    last_check_ = now;
    for (auto& l : links_) l->check_peer();
  }

  void reclaim_all() {
    for (std::size_t c = 0; c < links_.size(); ++c) {
      auto& s = state_[c];
      while (auto r = links_[c]->try_reclaim()) {
        if (s.slot_generation[r->slot] != r->generation ||
            std::find(s.free.begin(), s.free.end(), r->slot) != s.free.end()) {
          links_[c]->fail(got_need(links_[c]->name() + ": release of slot " + std::to_string(r->slot) + " generation",
                                   r->generation, std::to_string(s.slot_generation[r->slot]) + ", a slot in flight"));
        }
        s.free.push_back(r->slot);
        s.queued -= s.slot_bytes[r->slot];
      }
    }
  }

  void add(const package_region& r) {
    if (!open_) open_new_slot();
    auto& os = *open_;
    auto& link = *links_[static_cast<std::size_t>(os.consumer)];
    std::byte* dst = link.slot_data(os.slot) + std::uint64_t{os.packages} * o_.package_bytes();
    if (r.contiguous()) {
      if (os.pending_bytes && os.pending_src + os.pending_bytes == r.src && os.pending_dst + os.pending_bytes == dst) {
        os.pending_bytes += r.bytes();
      } else {
        issue_pending();
        os.pending_src = r.src;
        os.pending_dst = dst;
        os.pending_bytes = r.bytes();
      }
    } else {
      issue_pending();
      copy_2d(dst, r.row_bytes, r.src, r.src_pitch, r.row_bytes, r.rows);
    }
    if (os.packages == 0) os.first_package = package_counter_;
    os.note = note_;
    ++os.packages;
    ++package_counter_;
    ++stats_.packages;
    if (os.packages == o_.packages_per_slot) publish_open();
  }

  void issue_pending() {
    auto& os = *open_;
    if (!os.pending_bytes) return;
    copy_2d(os.pending_dst, os.pending_bytes, os.pending_src, os.pending_bytes, os.pending_bytes, 1);
    os.pending_bytes = 0;
  }

  void copy_2d(std::byte* dst, std::size_t dpitch, const std::byte* src, std::size_t spitch, std::size_t width,
               std::uint32_t rows) {
    if (o_.placement == payload_placement::host) {
      if (dpitch == width && spitch == width) {
        std::memcpy(dst, src, width * rows);
      } else {
        for (std::uint32_t i = 0; i < rows; ++i) std::memcpy(dst + i * dpitch, src + i * spitch, width);
      }
      return;
    }
    if (rows == 1) {
      GMI_CUDA_TRY(cudaMemcpyAsync(dst, src, width, cudaMemcpyDefault, stream_));
    } else {
      GMI_CUDA_TRY(cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, rows, cudaMemcpyDefault, stream_));
    }
  }

  // Migrate: take a free slot on the link the migrator picks; with none free anywhere, wait (back-pressure).
  void open_new_slot() {
    std::vector<std::uint8_t> has_free(links_.size());
    std::vector<std::uint64_t> queued(links_.size());
    int chosen = -1;
    auto look = [&] {
      reclaim_all();
      for (std::size_t c = 0; c < links_.size(); ++c) {
        has_free[c] = state_[c].free.empty() ? 0 : 1;
        queued[c] = state_[c].queued;
      }
      chosen = migrator_.choose(queued, has_free);
      return chosen >= 0;
    };
    health_check(false);
    if (!look()) {
      ++stats_.waits;
      bounded_wait(look, [&] { health_check(true); }, o_.timeout,
                   "channel " + o_.tag + ": producer " + std::to_string(rank_) +
                       " waiting for a free slot (every consumer is behind)");
    }
    auto& s = state_[static_cast<std::size_t>(chosen)];
    open_slot os;
    os.consumer = chosen;
    os.slot = s.free.back();
    s.free.pop_back();
    links_[static_cast<std::size_t>(chosen)]->before_write(os.slot, stream_);
    open_ = os;
  }

  void publish_open() {
    issue_pending();
    auto& os = *open_;
    auto& link = *links_[static_cast<std::size_t>(os.consumer)];
    auto& s = state_[static_cast<std::size_t>(os.consumer)];
    // Pinned payload is read by the consumer's host-side copy: it must have landed before the descriptor goes out.
    if (o_.placement == payload_placement::pinned) GMI_CUDA_TRY(cudaStreamSynchronize(stream_));
    detail::slot_descriptor d{};
    d.generation = ++s.generation;
    d.bytes = std::uint64_t{os.packages} * o_.package_bytes();
    d.shape_tag = o_.shape_tag;
    d.first_package = os.first_package;
    d.slot = os.slot;
    d.packages = os.packages;
    d.record_bytes = o_.record_bytes;
    d.package_steps = o_.package_steps;
    d.package_envs = o_.package_envs;
    d.producer = static_cast<std::uint32_t>(rank_);
    d.note = os.note;
    s.slot_generation[os.slot] = d.generation;
    s.slot_bytes[os.slot] = d.bytes;
    s.queued += d.bytes;
    link.publish(d, stream_);
    ++stats_.slots;
    stats_.bytes += d.bytes;
    ++stats_.slots_to[static_cast<std::size_t>(os.consumer)];
    open_.reset();
  }

  channel_options o_;
  int rank_;
  cudaStream_t stream_;
  dispenser dispenser_;
  migrator migrator_;
  std::vector<std::unique_ptr<detail::channel_link>> links_;
  std::vector<link_state> state_;
  std::optional<open_slot> open_;
  std::uint64_t package_counter_ = 0;
  package_note note_;  // the current send's
  producer_stats stats_;
  bool closed_ = false;
  std::chrono::steady_clock::time_point last_check_;
};

}  // namespace gmi::comm
