#pragma once
// The GMI programming API of the paper (Listing 1) for code running inside a GMI: ids, GPU binding, groups,
// heartbeats, send / recv over the rings of the run's shared-memory segment (comm::spsc_ring; a message longer
// than a slot goes in several) and allreduce through comm::ip_allreduce (host memory: the device-buffer
// communicators live in comm/ too). One thread per GMI uses a context.

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

#include <gmi/comm/ip_allreduce.hpp>
#include <gmi/comm/spsc_ring.hpp>
#include <gmi/core/hash.hpp>
#include <gmi/core/error.hpp>
#include <gmi/runtime/identity.hpp>
#include <gmi/runtime/segment.hpp>

namespace gmi::runtime {

using reduce_op = comm::reduce_op;  // what allreduce combines with

// Bytes a group's allreduce moves at once (larger buffers go in pieces).
inline constexpr std::size_t group_allreduce_bytes = std::size_t{1} << 16;

class context {
 public:
  using clock = std::chrono::steady_clock;

  // A context for `id` over `seg` (shared: thread GMIs of one process use one mapping). Marks the GMI running.
  context(identity id, std::shared_ptr<const segment> seg) : id_(std::move(id)), seg_(std::move(seg)) {
    gmi::require(seg_ != nullptr, "context segment", "null", "the run's segment");
    gmi::require(seg_->world() == id_.world, "GMI world", id_.world,
                 "the segment's world " + std::to_string(seg_->world()));
    pending_.resize(static_cast<std::size_t>(id_.world));
    read_at_.assign(static_cast<std::size_t>(id_.world), 0);
    for (int peer = 0; peer < id_.world; ++peer) {  // this GMI produces into (rank, peer), consumes from (peer, rank)
      out_.push_back(seg_->ring(id_.rank, peer));
      in_.push_back(seg_->ring(peer, id_.rank));
      if (peer == id_.rank) continue;
      out_.back().register_producer();
      in_.back().register_consumer();
    }
    seg_->slot(id_.rank).pid.store(static_cast<std::int32_t>(getpid()), std::memory_order_relaxed);
    heartbeat();
    seg_->set_state(id_.rank, gmi_state::running);
  }
  context(const context&) = delete;
  context& operator=(const context&) = delete;
  // Pushes out what is still queued for live peers (bounded), then marks the GMI finished unless failed.
  ~context() {
    try {
      flush(std::chrono::milliseconds(500));
    } catch (...) {  // peers gone: nothing more to deliver
    }
    if (seg_->state(id_.rank) == gmi_state::running) seg_->set_state(id_.rank, gmi_state::finished);
  }

  // --- ids and placement
  [[nodiscard]] const identity& id() const noexcept { return id_; }
  [[nodiscard]] int rank() const noexcept { return id_.rank; }
  [[nodiscard]] int world() const noexcept { return id_.world; }
  [[nodiscard]] int gpu() const noexcept { return id_.gpu; }
  [[nodiscard]] int slice() const noexcept { return id_.slice; }
  [[nodiscard]] const std::vector<std::string>& roles() const noexcept { return id_.roles; }

  // The paper's set_GPU: makes this GMI's device current on the calling thread (its local ordinal, which the
  // partition chose: 0 under MPS/MIG where CUDA_VISIBLE_DEVICES names one device).
  void set_gpu() const {
    gmi::require(id_.gpu >= 0, "set_gpu on", id_.describe(), "a GMI placed on a GPU");
    if (const cudaError_t e = cudaSetDevice(id_.local_device); e != cudaSuccess) {
      cudaGetLastError();
      throw gmi::cuda_error(static_cast<int>(e), "cudaSetDevice(" + std::to_string(id_.local_device) + ") for " +
                                                     id_.describe() + ": " + cudaGetErrorName(e));
    }
  }

  // The paper's get_group: the ranks of group `g` of the run.
  [[nodiscard]] const std::vector<int>& group(int g) const {
    gmi::require(g >= 0 && static_cast<std::size_t>(g) < id_.groups.size(), "group", g,
                 "0.." + std::to_string(static_cast<int>(id_.groups.size()) - 1) + " (groups of the run)");
    return id_.groups[static_cast<std::size_t>(g)];
  }
  // Every rank of the run, 0..world-1.
  [[nodiscard]] std::vector<int> all() const {
    std::vector<int> r(static_cast<std::size_t>(id_.world));
    for (int i = 0; i < id_.world; ++i) r[static_cast<std::size_t>(i)] = i;
    return r;
  }

  // What this GMI reports to its launcher (run_report::results[rank] after the run): a short text, usually one
  // JSON object, up to 1023 bytes; the last call wins.
  void report(std::string_view text) const {
    gmi::require(text.size() < detail::result_bytes, "GMI report size", text.size(),
                 "< " + std::to_string(detail::result_bytes) + " bytes");
    seg_->set_result(id_.rank, text);
  }

  // --- liveness
  // Tells the supervisor this GMI is making progress; call it from the GMI's main loop (a GMI whose heartbeat
  // stops for longer than the supervisor's timeout is declared hung). Waits inside recv beat on their own.
  void heartbeat() const noexcept { seg_->slot(id_.rank).heartbeat.fetch_add(1, std::memory_order_release); }
  // The supervisor is tearing the run down: return soon.
  [[nodiscard]] bool stop_requested() const noexcept { return seg_->stop_requested(); }

  // How long send/recv/allreduce wait for a peer before throwing comm_error.
  void set_timeout(std::chrono::milliseconds t) noexcept { timeout_ = t; }
  [[nodiscard]] std::chrono::milliseconds timeout() const noexcept { return timeout_; }

  // --- point to point
  // The paper's send(data, dst), asynchronous: copies the message and returns at once; bytes that do not fit in
  // the ring yet go out during later calls on this context (recv, send, allreduce, flush, the destructor).
  void send(std::span<const std::byte> data, int dst) {
    check_peer_rank(dst, "send to");
    std::vector<std::byte> framed(sizeof(std::uint64_t) + data.size());
    const std::uint64_t n = data.size();
    std::memcpy(framed.data(), &n, sizeof n);
    if (!data.empty()) std::memcpy(framed.data() + sizeof n, data.data(), data.size());
    auto& q = pending_[static_cast<std::size_t>(dst)];
    q.push_back({std::move(framed), 0});
    progress();
  }
  template <class T>
    requires std::is_trivially_copyable_v<T>
  void send(std::span<const T> data, int dst) {
    send(std::as_bytes(data), dst);
  }
  template <class T>
    requires std::is_trivially_copyable_v<T>
  void send(const std::vector<T>& data, int dst) {
    send(std::span<const T>(data), dst);
  }

  // The paper's recv(src), synchronous: the next message from `src`. Throws comm_error when `src` dies or
  // finishes without sending, or after timeout().
  [[nodiscard]] std::vector<std::byte> recv(int src) {
    check_peer_rank(src, "recv from");
    std::uint64_t n = 0;
    read_exact(src, reinterpret_cast<std::byte*>(&n), sizeof n);
    std::vector<std::byte> out(n);
    read_exact(src, out.data(), n);
    return out;
  }
  template <class T>
    requires std::is_trivially_copyable_v<T>
  [[nodiscard]] std::vector<T> recv_as(int src) {
    const std::vector<std::byte> bytes = recv(src);
    if (bytes.size() % sizeof(T) != 0) {
      throw gmi::comm_error("recv from GMI " + std::to_string(src) + ": got " + std::to_string(bytes.size()) +
                            " bytes, need a multiple of " + std::to_string(sizeof(T)));
    }
    std::vector<T> out(bytes.size() / sizeof(T));
    if (!bytes.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
    return out;
  }

  // Waits until everything sent so far is in the peers' rings (or `limit` passes: comm_error).
  void flush(std::chrono::milliseconds limit) {
    const auto deadline = clock::now() + limit;
    while (progress()) {
      if (clock::now() > deadline) throw gmi::comm_error(id_.describe() + ": flush timed out with messages queued");
      wait_a_little();
    }
  }
  void flush() { flush(timeout_); }

  // --- collectives
  // The paper's allreduce(data, group): every member ends with the element-wise reduction of all members' data
  // (float, double, int32_t or int64_t). comm::ip_allreduce does it, one per group, made by the group's lowest
  // rank at the group's first call: combined in rank order, so the result does not depend on arrival order.
  // All members must call it with the same group and size; a member that dies or the run's teardown ends the
  // wait with comm_error, and so does timeout().
  template <class T>
    requires std::is_arithmetic_v<T>
  void allreduce(std::span<T> data, const std::vector<int>& members, reduce_op op = reduce_op::sum) {
    std::vector<int> sorted = members;
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    gmi::require(std::binary_search(sorted.begin(), sorted.end(), id_.rank), "allreduce group of " + id_.describe(),
                 detail::join_ints(sorted, ','), "a group that contains rank " + std::to_string(id_.rank));
    for (const int m : sorted) check_rank(m, "allreduce with");
    if (sorted.size() == 1) return;
    progress();  // point-to-point bytes still queued go out first
    group_allreduce(sorted).allreduce(data, timeout_, op);
  }
  template <class T>
    requires std::is_arithmetic_v<T>
  void allreduce(std::span<T> data, int group_index, reduce_op op = reduce_op::sum) {
    allreduce(data, group(group_index), op);
  }
  template <class T>
    requires std::is_arithmetic_v<T>
  void allreduce(std::vector<T>& data, const std::vector<int>& members, reduce_op op = reduce_op::sum) {
    allreduce(std::span<T>(data), members, op);
  }
  // Returns when every member of `members` has reached the barrier.
  void barrier(const std::vector<int>& members) {
    int one = 1;
    allreduce(std::span<int>(&one, 1), members);
  }

 private:
  struct outgoing {
    std::vector<std::byte> bytes;
    std::size_t sent = 0;
  };

  void check_rank(int rank, const char* what) const {
    gmi::require(rank >= 0 && rank < id_.world, std::string(what) + " (" + id_.describe() + ")", rank,
                 "a rank in 0.." + std::to_string(id_.world - 1));
  }

  // The allreduce group of `sorted` (this rank among them), opened at its first use; while it waits it beats,
  // moves queued sends on, and gives up when a member is dead or failed, or the run is being torn down.
  comm::ip_allreduce& group_allreduce(const std::vector<int>& sorted) {
    if (const auto it = groups_.find(sorted); it != groups_.end()) return *it->second;
    const auto at = std::lower_bound(sorted.begin(), sorted.end(), id_.rank) - sorted.begin();
    char hash[17];
    std::snprintf(hash, sizeof hash, "%016llx",
                  static_cast<unsigned long long>(gmi::fnv1a(sorted.data(), sorted.size() * sizeof(int))));
    const std::string tag = seg_->run_id() + "-ar" + std::to_string(sorted.size()) + "-" + hash;
    const auto check = [this, sorted] {
      heartbeat();
      progress();  // a member may first wait in recv for bytes this GMI still has queued
      for (const int m : sorted) {
        const gmi_state s = seg_->state(m);
        if (m != id_.rank && (s == gmi_state::failed || s == gmi_state::dead)) {
          throw gmi::comm_error("allreduce in " + id_.describe() + ": GMI " + std::to_string(m) + " is dead");
        }
      }
      if (seg_->stop_requested()) throw gmi::comm_error("allreduce in " + id_.describe() + ": the run is being torn down");
    };
    // The others wait for the lowest member to create the group with the same check (a slow creator is no hang).
    auto g = std::make_unique<comm::ip_allreduce>(
        at == 0 ? comm::ip_allreduce::create(tag, static_cast<int>(sorted.size()), group_allreduce_bytes)
                : comm::ip_allreduce::open(tag, static_cast<int>(at), timeout_, check));
    g->set_wait_check(check);
    return *groups_.emplace(sorted, std::move(g)).first->second;
  }

  void check_peer_rank(int peer, const char* what) const {
    gmi::require(peer >= 0 && peer < id_.world && peer != id_.rank, std::string(what) + " (" + id_.describe() + ")",
                 peer, "another rank in 0.." + std::to_string(id_.world - 1));
  }

  // Moves queued bytes into the peers' rings, a slot at a time; true while anything is still queued.
  bool progress() {
    bool left = false;
    for (int dst = 0; dst < id_.world; ++dst) {
      auto& q = pending_[static_cast<std::size_t>(dst)];
      comm::spsc_ring& ring = out_[static_cast<std::size_t>(dst)];
      while (!q.empty()) {
        const std::span<std::byte> room = ring.try_begin_push();
        if (room.empty()) break;
        outgoing& m = q.front();
        const std::size_t n = std::min(room.size(), m.bytes.size() - m.sent);
        std::memcpy(room.data(), m.bytes.data() + m.sent, n);
        ring.commit_push(n);
        m.sent += n;
        if (m.sent == m.bytes.size()) q.pop_front();
      }
      if (!q.empty()) left = true;
    }
    return left;
  }

  // Reads n bytes of the stream from `src`: slot by slot, the rest of a slot kept for the next read.
  void read_exact(int src, std::byte* to, std::size_t n) {
    comm::spsc_ring& ring = in_[static_cast<std::size_t>(src)];
    std::size_t& at = read_at_[static_cast<std::size_t>(src)];
    auto deadline = clock::now() + timeout_;
    while (n > 0) {
      if (const auto slot = ring.try_begin_pop()) {
        const std::size_t take = std::min(slot->size() - at, n);
        std::memcpy(to, slot->data() + at, take);
        at += take;
        if (at == slot->size()) {
          ring.end_pop();
          at = 0;
        }
        to += take;
        n -= take;
        deadline = clock::now() + timeout_;  // progress: the timeout is per stall, not per message
        spins_ = 0;
        continue;
      }
      progress();  // our own queued sends may be what the peer waits for
      heartbeat();
      const gmi_state peer = seg_->state(src);
      if (peer == gmi_state::failed || peer == gmi_state::dead) {
        throw gmi::comm_error("recv from GMI " + std::to_string(src) + " in " + id_.describe() + ": the peer is dead");
      }
      if (peer == gmi_state::finished && ring.size() == 0) {
        throw gmi::comm_error("recv from GMI " + std::to_string(src) + " in " + id_.describe() +
                              ": the peer finished without sending");
      }
      if (seg_->stop_requested()) {
        throw gmi::comm_error("recv from GMI " + std::to_string(src) + " in " + id_.describe() +
                              ": the run is being torn down");
      }
      if (clock::now() > deadline) {
        throw gmi::comm_error("recv from GMI " + std::to_string(src) + " in " + id_.describe() + ": timed out after " +
                              std::to_string(timeout_.count()) + " ms with no data");
      }
      wait_a_little();
    }
  }

  // Spin briefly, then sleep: no futex across processes (libstdc++'s atomic wait is process-private).
  void wait_a_little() {
    if (++spins_ < 64) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    if (spins_ > 1'000'000) spins_ = 64;
  }

  identity id_;
  std::shared_ptr<const segment> seg_;
  std::vector<std::deque<outgoing>> pending_;
  std::vector<comm::spsc_ring> out_, in_;  // [peer]: the rings to and from every GMI
  std::vector<std::size_t> read_at_;       // [peer]: bytes already read of the slot at the tail of in_[peer]
  std::map<std::vector<int>, std::unique_ptr<comm::ip_allreduce>> groups_;  // [sorted members]
  std::chrono::milliseconds timeout_{30'000};
  unsigned spins_ = 0;
};

// Beats for a GMI from a thread of its own while the GMI's thread does one long, bounded task that has no loop to
// beat from (the final policy's evaluation on host threads: seconds for Cartpole, minutes for a physics task), so
// the supervisor does not call it hung; the beats stop when this goes out of scope.
class heartbeat_during {
 public:
  explicit heartbeat_during(const context& ctx, std::chrono::milliseconds every = std::chrono::milliseconds(200))
      : beats_([this, &ctx, every](std::stop_token stop) {
          std::unique_lock lock(mutex_);
          while (!stop.stop_requested()) {
            ctx.heartbeat();
            wake_.wait_for(lock, stop, every, [] { return false; });  // returns at the period or at once on stop
          }
        }) {}

 private:
  std::mutex mutex_;
  std::condition_variable_any wake_;
  std::jthread beats_;  // last: started after, and joined before, the members it uses
};

}  // namespace gmi::runtime
