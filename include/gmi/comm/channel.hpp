#pragma once
// gmi::comm::channel: the experience channel from serving GMIs (producers) to trainer GMIs (consumers), in the
// paper's four stages. dispense: a rollout of T steps x E envs of fixed-size records is cut into packages of
// package_steps x package_envs records; pack: packages_per_slot same-shaped packages share one slot; migrate:
// each slot goes to the consumer with the fewest queued bytes (ties: round robin); batch: the consumer hands out
// training batches of a fixed number of packages. Back-pressure: every producer->consumer link has `slots`
// slots, and a producer with no free slot waits (bounded) for one: memory never grows.
// Payload is copied once on the producer side, straight into the consumer's memory (device, pinned or host,
// see payload_placement); a batch that lies inside one slot is handed out without a copy.

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <gmi/comm/detail/channel_link.hpp>
#include <gmi/comm/shm_segment.hpp>
#include <gmi/comm/wait.hpp>
#include <gmi/core/error.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/check.hpp>

namespace gmi::comm {

// How the migrator picks a consumer for the next slot.
enum class routing : std::uint32_t {
  least_queued = 0,  // the consumer with the fewest bytes queued from this producer; ties in round-robin order
  round_robin = 1,   // the next consumer in order that has a free slot
};

// The one description every endpoint of a channel is built from (the same values on every GMI of the run).
struct channel_options {
  std::string tag;                      // names the channel's segments; unique per run (gmi::comm::unique_tag)
  int producers = 1;                    // serving GMIs
  int consumers = 1;                    // trainer GMIs
  std::uint32_t record_bytes = 0;       // one env-step record (observation, action, reward, ...), fixed
  std::uint64_t shape_tag = 0;          // what a record holds (e.g. a hash of its layout); both sides must agree
  std::uint32_t package_steps = 1;      // dispense: a package is package_steps x package_envs records
  std::uint32_t package_envs = 1;
  std::uint32_t packages_per_slot = 1;  // pack: packages per migrated slot
  std::uint32_t slots = 4;              // slots per producer->consumer link, a power of two <= 64: the back-pressure bound
  payload_placement placement = payload_placement::host;
  routing route = routing::least_queued;
  milliseconds timeout = default_timeout();  // bound on every wait for a peer
  // false: every producer and consumer is a thread of this process, so device payloads are ordered by plain CUDA
  // events (interprocess ones each leave a driver file in /dev/shm until the process's contexts go).
  bool across_processes = true;

  [[nodiscard]] std::uint64_t package_bytes() const noexcept {
    return std::uint64_t{record_bytes} * package_steps * package_envs;
  }
  [[nodiscard]] std::uint64_t slot_bytes() const noexcept { return package_bytes() * packages_per_slot; }

  // Throws config_error naming the first value out of range.
  void validate() const {
    detail::check_tag(tag);
    require(producers >= 1 && producers <= 256, "channel producers", producers, "1..256");
    require(consumers >= 1 && consumers <= 256, "channel consumers", consumers, "1..256");
    require(record_bytes >= 1, "channel record_bytes", record_bytes, ">= 1");
    require(package_steps >= 1, "channel package_steps", package_steps, ">= 1");
    require(package_envs >= 1, "channel package_envs", package_envs, ">= 1");
    require(packages_per_slot >= 1, "channel packages_per_slot", packages_per_slot, ">= 1");
    require(slots >= 1 && slots <= detail::max_link_slots && (slots & (slots - 1)) == 0, "channel slots", slots,
            "a power of two in 1.." + std::to_string(detail::max_link_slots));
    require(slot_bytes() <= (std::uint64_t{1} << 40), "channel slot bytes (record_bytes x package records x packages_per_slot)",
            slot_bytes(), "<= 2^40");
    require(timeout.count() >= 1, "channel timeout (ms)", timeout.count(), ">= 1");
  }
};

// The segment tag of the link from producer p to consumer c.
inline std::string channel_link_tag(const std::string& tag, int producer, int consumer) {
  return tag + "-p" + std::to_string(producer) + "-c" + std::to_string(consumer);
}

// ---- dispense ---------------------------------------------------------------------------------------------------

// One package of a rollout: rows = package_steps rows of row_bytes (package_envs records), src_pitch apart.
struct package_region {
  std::uint64_t index;  // position in the rollout, time blocks outermost
  std::uint32_t step0, env0;
  const std::byte* src;
  std::size_t src_pitch, row_bytes;
  std::uint32_t rows;
  [[nodiscard]] std::size_t bytes() const noexcept { return row_bytes * rows; }
  [[nodiscard]] bool contiguous() const noexcept { return rows == 1 || row_bytes == src_pitch; }
};

// Cuts a time-major rollout ([step][env][record]) into packages of package_steps x package_envs records.
// Time blocks go first, so a producer may dispense the first steps of a rollout before the last are written.
class dispenser {
 public:
  dispenser(std::uint32_t record_bytes, std::uint32_t package_steps, std::uint32_t package_envs)
      : record_bytes_(record_bytes), steps_(package_steps), envs_(package_envs) {
    require(record_bytes >= 1 && package_steps >= 1 && package_envs >= 1, "dispenser record/package sizes",
            std::to_string(record_bytes) + "/" + std::to_string(package_steps) + "/" + std::to_string(package_envs),
            "all >= 1");
  }
  // Packages in a rollout of steps x envs; throws config_error unless the package shape divides it.
  [[nodiscard]] std::uint64_t packages(std::uint32_t steps, std::uint32_t envs) const {
    require(steps >= 1 && steps % steps_ == 0, "rollout steps", steps,
            "a positive multiple of package_steps " + std::to_string(steps_));
    require(envs >= 1 && envs % envs_ == 0, "rollout envs", envs,
            "a positive multiple of package_envs " + std::to_string(envs_));
    return std::uint64_t{steps / steps_} * (envs / envs_);
  }
  // Calls fn(package_region) for every package, in order.
  template <class Fn>
  void dispense(const void* rollout, std::uint32_t steps, std::uint32_t envs, Fn&& fn) const {
    const std::uint64_t n = packages(steps, envs);
    const std::size_t pitch = std::size_t{envs} * record_bytes_;
    const std::uint32_t env_blocks = envs / envs_;
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::uint32_t t0 = static_cast<std::uint32_t>(i / env_blocks) * steps_;
      const std::uint32_t e0 = static_cast<std::uint32_t>(i % env_blocks) * envs_;
      fn(package_region{i, t0, e0,
                        static_cast<const std::byte*>(rollout) + std::size_t{t0} * pitch + std::size_t{e0} * record_bytes_,
                        pitch, std::size_t{envs_} * record_bytes_, steps_});
    }
  }
  [[nodiscard]] std::uint64_t package_bytes() const noexcept { return std::uint64_t{record_bytes_} * steps_ * envs_; }

 private:
  std::uint32_t record_bytes_, steps_, envs_;
};

// ---- migrate ----------------------------------------------------------------------------------------------------

// Chooses the consumer of the next slot from what this producer knows: bytes it has queued on each link (sent,
// not yet given back) and whether the link has a free slot. Pure logic, so the policy is tested on its own.
class migrator {
 public:
  explicit migrator(int consumers, routing r = routing::least_queued) : n_(consumers), route_(r) {
    require(consumers >= 1, "migrator consumers", consumers, ">= 1");
  }
  // The chosen consumer, or -1 when no link has a free slot (the producer then waits: back-pressure).
  int choose(std::span<const std::uint64_t> queued_bytes, std::span<const std::uint8_t> has_free) {
    require(queued_bytes.size() == static_cast<std::size_t>(n_) && has_free.size() == static_cast<std::size_t>(n_),
            "migrator inputs (queued bytes, free flags)",
            std::to_string(queued_bytes.size()) + ", " + std::to_string(has_free.size()), "one per consumer");
    int best = -1;
    for (int k = 1; k <= n_; ++k) {  // round-robin order starting after the last pick: ties rotate
      const int c = (last_ + k) % n_;
      if (!has_free[static_cast<std::size_t>(c)]) continue;
      if (route_ == routing::round_robin) {
        best = c;
        break;
      }
      if (best < 0 || queued_bytes[static_cast<std::size_t>(c)] < queued_bytes[static_cast<std::size_t>(best)]) best = c;
    }
    if (best >= 0) last_ = best;
    return best;
  }

 private:
  int n_;
  routing route_;
  int last_ = -1;
};

// ---- producer: dispense, pack, migrate --------------------------------------------------------------------------

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
        links_.push_back(detail::channel_link::open(config_for(c), channel_link_tag(o_.tag, rank, c), o_.timeout));
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

  detail::link_config config_for(int consumer) const {
    detail::link_config c;
    c.placement = o_.placement;
    c.slots = o_.slots;
    c.shape_tag = o_.shape_tag;
    c.record_bytes = o_.record_bytes;
    c.package_steps = o_.package_steps;
    c.package_envs = o_.package_envs;
    c.packages_per_slot = o_.packages_per_slot;
    c.producer = static_cast<std::uint32_t>(rank_);
    c.consumer = static_cast<std::uint32_t>(consumer);
    c.across_processes = o_.across_processes;
    return c;
  }

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

// ---- consumer: batch --------------------------------------------------------------------------------------------

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
        detail::link_config c;
        c.placement = o_.placement;
        c.slots = o_.slots;
        c.shape_tag = o_.shape_tag;
        c.record_bytes = o_.record_bytes;
        c.package_steps = o_.package_steps;
        c.package_envs = o_.package_envs;
        c.packages_per_slot = o_.packages_per_slot;
        c.producer = static_cast<std::uint32_t>(p);
        c.consumer = static_cast<std::uint32_t>(rank);
        c.across_processes = o_.across_processes;
        links_.push_back(detail::channel_link::create(c, channel_link_tag(o_.tag, p, rank)));
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
