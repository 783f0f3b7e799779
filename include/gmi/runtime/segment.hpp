#pragma once
// The run's shared-memory segment: one comm::shm_segment (gmi's one implementation of named segments: private to
// the user, the owner's pid in its header, the stale sweep) tagged with the run id, holding per-GMI heartbeat slots
// the supervisor watches and one comm::spsc_ring per ordered pair of GMIs for send/recv. Lock-free atomics only,
// so a GMI that dies mid-write can not leave a lock held (Boost 1.83's interprocess mutexes are not recoverable;
// cuda-notes section 6).

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <random>
#include <string>
#include <string_view>
#include <utility>

#include <gmi/comm/shm_segment.hpp>
#include <gmi/comm/spsc_ring.hpp>
#include <gmi/core/error.hpp>

namespace gmi::runtime {

static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "heartbeats need lock-free 64-bit atomics");
static_assert(std::atomic<std::uint32_t>::is_always_lock_free);
static_assert(std::atomic<std::int32_t>::is_always_lock_free);

// Where a GMI is in its life, as written into its slot (by the GMI, or by the supervisor once it is gone).
enum class gmi_state : std::uint32_t { starting = 0, running = 1, finished = 2, failed = 3, dead = 4 };

namespace detail {

inline constexpr std::uint32_t segment_version = 4;
inline constexpr std::size_t message_bytes = 224;
inline constexpr std::size_t result_bytes = 8192;  // a training report carries its learning curve
inline constexpr std::uint32_t ring_slot_stride = 256;  // a ring slot: its length word and 248 bytes of message

struct segment_header {
  std::uint32_t version;
  std::uint32_t world;
  std::uint32_t ring_slots;       // slots of every ring
  std::uint32_t ring_slot_bytes;  // bytes of message a slot holds
  std::uint64_t ring_bytes;       // bytes of one ring (its control block and slots)
  std::atomic<std::uint32_t> stop;  // the supervisor asks every GMI to stop
  char run_id[64];
};

struct alignas(64) gmi_slot {
  std::atomic<std::uint64_t> heartbeat;
  std::atomic<std::uint32_t> state;
  std::atomic<std::int32_t> pid;
  char message[message_bytes];  // why the GMI failed, written by the GMI itself before it exits
  char result[result_bytes];    // what the GMI reports to its launcher (context::report), read after the run
};

inline constexpr std::size_t header_bytes = 4096;

inline std::size_t round_up(std::size_t v, std::size_t to) { return (v + to - 1) / to * to; }

inline bool pid_alive(pid_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); }

inline std::string errno_text(int e) { return std::string(std::strerror(e)); }

inline std::size_t slots_bytes(int world) { return round_up(static_cast<std::size_t>(world) * sizeof(gmi_slot), 4096); }

}  // namespace detail

// A run id unique on this host: launcher pid plus 32 random bits.
[[nodiscard]] inline std::string make_run_id() {
  std::random_device rd;
  char hex[16];
  std::snprintf(hex, sizeof hex, "%08x", static_cast<unsigned>(rd()));
  return std::to_string(getpid()) + "-" + hex;
}

// Removes this user's gmi segments whose owner is dead (left behind by a SIGKILLed launcher): comm's sweep, which
// knows every gmi segment. Returns how many were removed.
inline int remove_stale_segments() { return comm::cleanup_stale_segments(); }

// One mapping of a run's segment. The launcher creates (and on destruction unlinks) it; workers attach.
class segment {
 public:
  // Creates the segment of run `run_id` for `world` GMIs with rings of about `ring_capacity` bytes (a power of
  // two >= 64) between every ordered pair.
  static segment create(const std::string& run_id, int world, std::uint32_t ring_capacity = 1u << 16) {
    gmi::require(world >= 1, "world", world, ">= 1");
    gmi::require(ring_capacity >= 64 && (ring_capacity & (ring_capacity - 1)) == 0, "ring_capacity", ring_capacity,
                 "a power of two >= 64");
    const std::uint32_t slots = std::max<std::uint32_t>(1, ring_capacity / detail::ring_slot_stride);
    const std::uint32_t slot_bytes = detail::ring_slot_stride - sizeof(std::uint64_t);
    const std::size_t ring_bytes = comm::spsc_ring::bytes_needed(slots, slot_bytes);
    const std::size_t w = static_cast<std::size_t>(world);
    const std::size_t payload = detail::header_bytes + detail::slots_bytes(world) + w * w * ring_bytes;
    segment s;
    s.shm_ = comm::shm_segment::create(run_id, payload, [&](void* p, std::size_t) {
      auto* h = new (p) detail::segment_header{};
      h->version = detail::segment_version;
      h->world = static_cast<std::uint32_t>(world);
      h->ring_slots = slots;
      h->ring_slot_bytes = slot_bytes;
      h->ring_bytes = ring_bytes;
      std::snprintf(h->run_id, sizeof h->run_id, "%s", run_id.c_str());
      for (int src = 0; src < world; ++src) {
        for (int dst = 0; dst < world; ++dst) {
          (void)comm::spsc_ring::format(ring_memory(p, world, ring_bytes, src, dst), ring_bytes, slots, slot_bytes,
                                        ring_name(src, dst));
        }
      }
    });
    s.bind();
    return s;
  }

  // Attaches to the segment of run `run_id`, which its launcher created (waits up to `timeout` for it).
  static segment attach(const std::string& run_id, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    segment s;
    s.shm_ = comm::shm_segment::open(run_id, timeout);
    s.bind();
    const auto* h = s.header();
    if (s.shm_.size() < detail::header_bytes || h->version != detail::segment_version ||
        s.shm_.size() != detail::header_bytes + detail::slots_bytes(static_cast<int>(h->world)) +
                              std::size_t{h->world} * h->world * h->ring_bytes) {
      throw gmi::comm_error("segment " + s.name_ + ": not a gmi runtime v" + std::to_string(detail::segment_version) +
                            " segment of " + std::to_string(s.shm_.size()) + " bytes");
    }
    return s;
  }

  segment(const segment&) = delete;
  segment& operator=(const segment&) = delete;
  segment(segment&&) noexcept = default;
  segment& operator=(segment&&) noexcept = default;

  // Removes the name now (the mapping stays valid); the owner's destructor does it otherwise.
  void unlink() noexcept { shm_.unlink(); }

  // The name as shm_open takes it ("/gmi-<uid>-<run id>").
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] int world() const noexcept { return static_cast<int>(header()->world); }
  // The run id the segment was created for (its comm::shm_segment tag).
  [[nodiscard]] std::string run_id() const { return std::string(header()->run_id); }
  [[nodiscard]] detail::segment_header* header() const noexcept { return static_cast<detail::segment_header*>(base_); }
  [[nodiscard]] detail::gmi_slot& slot(int rank) const noexcept {
    return reinterpret_cast<detail::gmi_slot*>(static_cast<char*>(base_) + detail::header_bytes)[rank];
  }
  // The ring that carries messages from `src` to `dst` (a view; its state lives in the segment).
  [[nodiscard]] comm::spsc_ring ring(int src, int dst) const {
    const auto* h = header();
    return comm::spsc_ring::attach(ring_memory(base_, static_cast<int>(h->world), h->ring_bytes, src, dst),
                                   h->ring_bytes, ring_name(src, dst));
  }

  [[nodiscard]] bool stop_requested() const noexcept { return header()->stop.load(std::memory_order_acquire) != 0; }
  void request_stop() const noexcept { header()->stop.store(1, std::memory_order_release); }

  [[nodiscard]] gmi_state state(int rank) const noexcept {
    return static_cast<gmi_state>(slot(rank).state.load(std::memory_order_acquire));
  }
  void set_state(int rank, gmi_state s) const noexcept {
    slot(rank).state.store(static_cast<std::uint32_t>(s), std::memory_order_release);
  }
  void set_message(int rank, std::string_view text) const noexcept {
    auto& m = slot(rank).message;
    const std::size_t n = std::min(text.size(), sizeof m - 1);
    std::memcpy(m, text.data(), n);
    m[n] = '\0';
  }
  [[nodiscard]] std::string message(int rank) const {
    const auto& m = slot(rank).message;
    return std::string(m, strnlen(m, sizeof m));
  }
  void set_result(int rank, std::string_view text) const noexcept {
    auto& m = slot(rank).result;
    const std::size_t n = std::min(text.size(), sizeof m - 1);
    std::memcpy(m, text.data(), n);
    m[n] = '\0';
  }
  [[nodiscard]] std::string result(int rank) const {
    const auto& m = slot(rank).result;
    return std::string(m, strnlen(m, sizeof m));
  }

 private:
  segment() = default;
  void bind() {
    base_ = shm_.data();
    name_ = "/" + shm_.name();
  }
  static void* ring_memory(void* base, int world, std::size_t ring_bytes, int src, int dst) noexcept {
    const std::size_t w = static_cast<std::size_t>(world);
    char* rings = static_cast<char*>(base) + detail::header_bytes + detail::slots_bytes(world);
    return rings + (static_cast<std::size_t>(src) * w + static_cast<std::size_t>(dst)) * ring_bytes;
  }
  static std::string ring_name(int src, int dst) {
    return "ring GMI " + std::to_string(src) + " -> GMI " + std::to_string(dst);
  }

  comm::shm_segment shm_;  // the mapping (moves keep its address)
  void* base_ = nullptr;
  std::string name_;
};

}  // namespace gmi::runtime
