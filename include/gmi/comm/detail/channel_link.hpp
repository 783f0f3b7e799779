#pragma once
// One producer -> consumer link of an experience channel: a shared-memory segment with the link's header, a
// descriptor ring (producer -> consumer: "slot s holds n packages"), a release ring (consumer -> producer:
// "slot s is free again") and, for host and pinned placements, the payload slots themselves. For the device
// placement the slots are one cudaMalloc on the consumer's GPU (plain pointer in-process, CUDA IPC across
// processes) and each slot carries two events: "filled" (recorded by the producer) and "consumed" (by the
// consumer), so neither side ever waits on the host for the other's copies. Private to the channel_*.hpp headers.

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/interprocess/shared_memory_object.hpp>

#include <gmi/comm/device_share.hpp>
#include <gmi/comm/shm_segment.hpp>
#include <gmi/comm/spsc_ring.hpp>
#include <gmi/comm/wait.hpp>
#include <gmi/core/error.hpp>
#include <gmi/cuda/check.hpp>

namespace gmi::comm {

// Where a channel's payload slots live.
enum class payload_placement : std::uint32_t {
  host = 0,    // shared host memory, memcpy: GMIs without a GPU (and CI); batches are host memory
  pinned = 1,  // shared host memory registered with CUDA: GMIs on different GPUs; D2H, then H2D into the trainer
  device = 2,  // the consumer's GPU memory: GMIs sharing a GPU; one D2D copy, batches are device memory
};

inline const char* to_string(payload_placement p) noexcept {
  switch (p) {
    case payload_placement::host: return "host";
    case payload_placement::pinned: return "pinned";
    case payload_placement::device: return "device";
  }
  return "unknown";
}

// Four words of host metadata a producer sends with a rollout (the weights version it was acted with, episode
// counts, ...): the consumer reads them on the host, without waiting for the payload's copy. A slot carries the
// note of the last send that put packages into it.
struct package_note {
  std::uint64_t words[4] = {0, 0, 0, 0};
};
static_assert(std::is_trivially_copyable_v<package_note>);

namespace detail {

inline constexpr std::uint32_t max_link_slots = 64;
inline constexpr std::uint64_t link_magic = 0x676d692d63686e32ull;  // "gmi-chn2"
inline constexpr std::size_t page_bytes = 4096;

// The control message of one migrated slot. Every field is checked by the consumer: a peer built with other
// options (or other code) is a clear comm_error, never a misread payload.
struct slot_descriptor {
  std::uint64_t generation;     // 1, 2, ... per link: a lost or repeated descriptor is an error
  std::uint64_t bytes;          // packages * package bytes
  std::uint64_t shape_tag;
  std::uint64_t first_package;  // the producer's running package index of the slot's first package
  std::uint32_t slot;
  std::uint32_t packages;
  std::uint32_t record_bytes;
  std::uint32_t package_steps;
  std::uint32_t package_envs;
  std::uint32_t producer;
  package_note note;            // the slot's last send's
};
static_assert(std::is_trivially_copyable_v<slot_descriptor>);

struct slot_release {
  std::uint64_t generation;  // the descriptor's, so the producer can tell a stale release from a fresh one
  std::uint32_t slot;
  std::uint32_t unused;
};

// What both sides of a link must agree on; the consumer writes its own into the header, the producer compares.
struct link_config {
  payload_placement placement = payload_placement::host;
  std::uint32_t slots = 4;
  std::uint64_t shape_tag = 0;
  std::uint32_t record_bytes = 0;
  std::uint32_t package_steps = 1;
  std::uint32_t package_envs = 1;
  std::uint32_t packages_per_slot = 1;
  std::uint32_t producer = 0;
  std::uint32_t consumer = 0;
  bool across_processes = true;  // false: the producer is a thread of the consumer's process (plain events)
  bool peer = false;              // device placement: a producer on another GPU with peer access to the pool
  [[nodiscard]] std::uint64_t package_bytes() const noexcept {
    return std::uint64_t{record_bytes} * package_steps * package_envs;
  }
  [[nodiscard]] std::uint64_t slot_bytes() const noexcept { return package_bytes() * packages_per_slot; }
  // 256-byte strides keep every slot aligned for vectorised device copies; page strides for registered host memory.
  [[nodiscard]] std::uint64_t slot_stride() const noexcept {
    const std::uint64_t a = placement == payload_placement::device ? 256 : page_bytes;
    return (slot_bytes() + a - 1) / a * a;
  }
};

struct link_header {
  std::uint64_t magic;
  std::uint32_t placement;
  std::uint32_t slots;
  std::uint64_t shape_tag;
  std::uint32_t record_bytes;
  std::uint32_t package_steps;
  std::uint32_t package_envs;
  std::uint32_t packages_per_slot;
  std::uint32_t producer;
  std::uint32_t consumer;
  std::uint64_t slot_stride;
  std::uint64_t full_offset, free_offset, ring_bytes, payload_offset, payload_bytes;
  std::atomic<std::int32_t> consumer_pid;
  std::atomic<std::int32_t> producer_pid;
  std::atomic<std::uint32_t> attached;  // the producer attached and checked the header (device: events exported)
  std::int32_t device;
  std::uint32_t ipc_ok;  // the pool and events could be exported (CUDA IPC works here)
  ipc_buffer_handle pool;
  std::uint64_t raw_pool;
  ipc_event_handle consumed[max_link_slots];
  std::uint64_t raw_consumed[max_link_slots];
  ipc_event_handle filled[max_link_slots];
  std::uint64_t raw_filled[max_link_slots];
};
static_assert(std::atomic<std::int32_t>::is_always_lock_free);

inline std::uint64_t round_up(std::uint64_t x, std::uint64_t a) { return (x + a - 1) / a * a; }

// The layout of a link's segment payload. shm_segment payloads start 128 bytes into a page-aligned mapping in
// every process, so an offset that is page-aligned relative to the mapping is page-aligned in every process.
struct link_layout {
  std::uint64_t full_offset, free_offset, ring_bytes, payload_offset, payload_bytes, total;
  explicit link_layout(const link_config& c) {
    ring_bytes = round_up(std::max(spsc_ring::bytes_needed(c.slots, sizeof(slot_descriptor)),
                                   spsc_ring::bytes_needed(c.slots, sizeof(slot_release))),
                          cache_line);
    full_offset = round_up(sizeof(link_header), cache_line);
    free_offset = full_offset + ring_bytes;
    const std::uint64_t end = free_offset + ring_bytes;
    const bool host_payload = c.placement != payload_placement::device;
    payload_offset = host_payload ? round_up(end + segment_header_bytes, page_bytes) - segment_header_bytes : end;
    payload_bytes = host_payload ? c.slot_stride() * c.slots : 0;
    total = payload_offset + payload_bytes;
  }
};

// One side's handle on one link. The consumer creates it (and owns the device pool and the segment name), the
// producer opens it. The name is unlinked as soon as the producer has attached: from then on no crash of
// either side can leave the segment behind in /dev/shm.
class channel_link {
 public:
  // Held by pointer: the rings and the events point into this object's segment and CUDA resources.
  channel_link(const channel_link&) = delete;
  channel_link& operator=(const channel_link&) = delete;
  ~channel_link() { release_cuda(); }

  // ---- consumer side ----------------------------------------------------------------------------------------

  static std::unique_ptr<channel_link> create(const link_config& c, const std::string& tag) {
    std::unique_ptr<channel_link> owner(new channel_link());
    channel_link& l = *owner;
    l.config_ = c;
    l.consumer_side_ = true;
    const link_layout lay(c);
    std::uint64_t raw_pool = 0;
    ipc_buffer_handle pool_handle{};
    bool ipc_ok = false;
    int device = -1;
    if (c.placement == payload_placement::device) {
      GMI_CUDA_TRY(cudaGetDevice(&device));
      // Its own allocation, rounded to 2 MiB: CUDA IPC exports whole allocations, so nothing else leaks out.
      const std::size_t bytes = round_up(c.slot_stride() * c.slots, std::size_t{2} << 20);
      GMI_CUDA_TRY(cudaMalloc(&l.pool_, bytes));
      l.owns_pool_ = true;
      raw_pool = reinterpret_cast<std::uint64_t>(l.pool_);
      for (std::uint32_t s = 0; s < c.slots; ++s) l.consumed_.push_back(shared_event::create(c.across_processes));
      ipc_ok = c.across_processes;  // else producers of another process get the clear error below
      if (ipc_ok) {
        try {
          pool_handle = export_buffer(l.pool_, bytes);
        } catch (const gmi::error&) {
          cudaGetLastError();
          ipc_ok = false;  // MIG or a driver without IPC: in-process producers still work, others get a clear error
        }
      }
    }
    l.segment_ = shm_segment::create(tag, lay.total, [&](void* p, std::size_t bytes) {
      auto* h = new (p) link_header{};
      h->magic = link_magic;
      h->placement = static_cast<std::uint32_t>(c.placement);
      h->slots = c.slots;
      h->shape_tag = c.shape_tag;
      h->record_bytes = c.record_bytes;
      h->package_steps = c.package_steps;
      h->package_envs = c.package_envs;
      h->packages_per_slot = c.packages_per_slot;
      h->producer = c.producer;
      h->consumer = c.consumer;
      h->slot_stride = c.slot_stride();
      h->full_offset = lay.full_offset;
      h->free_offset = lay.free_offset;
      h->ring_bytes = lay.ring_bytes;
      h->payload_offset = lay.payload_offset;
      h->payload_bytes = lay.payload_bytes;
      h->consumer_pid.store(::getpid());
      h->device = device;
      h->ipc_ok = ipc_ok ? 1u : 0u;
      h->pool = pool_handle;
      h->raw_pool = raw_pool;
      for (std::uint32_t s = 0; s < c.slots && c.placement == payload_placement::device; ++s) {
        h->raw_consumed[s] = reinterpret_cast<std::uint64_t>(l.consumed_[s].get());
        if (ipc_ok) h->consumed[s] = l.consumed_[s].export_handle();
      }
      auto* base = static_cast<std::byte*>(p);
      spsc_ring::format(base + lay.full_offset, lay.ring_bytes, c.slots, sizeof(slot_descriptor), tag + " descriptors");
      spsc_ring::format(base + lay.free_offset, lay.ring_bytes, c.slots, sizeof(slot_release), tag + " releases");
      (void)bytes;
    });
    l.bind_rings();
    l.full_.register_consumer();
    l.free_.register_producer();
    if (c.placement == payload_placement::pinned) l.register_payload();
    return owner;
  }

  // True once the producer has attached; opens its events (device) and unlinks the name. Never blocks.
  bool poll_attach() {
    if (attached_) return true;
    if (h()->attached.load(std::memory_order_acquire) == 0) return false;
    if (config_.placement == payload_placement::device) {
      const bool same_process = h()->producer_pid.load() == ::getpid();
      for (std::uint32_t s = 0; s < config_.slots; ++s) {
        filled_.push_back(same_process ? shared_event::borrow(reinterpret_cast<cudaEvent_t>(h()->raw_filled[s]))
                                       : shared_event::open(h()->filled[s]));
      }
    }
    segment_.unlink();
    attached_ = true;
    return true;
  }

  // The oldest descriptor, or nullopt when none is waiting. Throws comm_error when the link is broken.
  std::optional<slot_descriptor> try_pop() {
    throw_if_broken();
    auto m = full_.try_begin_pop();
    if (!m) return std::nullopt;
    if (m->size() != sizeof(slot_descriptor)) {
      fail(got_need(name() + ": descriptor bytes", m->size(), std::to_string(sizeof(slot_descriptor))));
    }
    slot_descriptor d;
    std::memcpy(&d, m->data(), sizeof d);
    full_.end_pop();
    return d;
  }
  // The producer closed the link and every descriptor has been taken.
  [[nodiscard]] bool drained() const { return full_.closed() && full_.size() == 0; }

  // Makes `stream` wait (on the device) for the producer's copies into `slot`.
  void wait_filled(std::uint32_t slot, cudaStream_t stream) {
    if (config_.placement == payload_placement::device) filled_.at(slot).wait_on(stream);
  }
  // Gives `slot` back; with device payload, after the work queued on `stream` so far (which read it).
  void release(std::uint32_t slot, std::uint64_t generation, cudaStream_t stream) {
    throw_if_broken();
    if (config_.placement == payload_placement::device) consumed_.at(slot).record(stream);
    const slot_release r{generation, slot, 0};
    if (!free_.try_push(std::span<const std::byte>(reinterpret_cast<const std::byte*>(&r), sizeof r))) {
      fail(name() + ": release ring full (more releases than slots: a slot was released twice)");
    }
  }

  // ---- producer side ----------------------------------------------------------------------------------------

  // Opens the consumer's link and checks that both sides describe the same experience; a mismatch breaks the
  // link (the consumer then fails with the same sentence) and throws comm_error here.
  static std::unique_ptr<channel_link> open(const link_config& c, const std::string& tag, milliseconds timeout) {
    std::unique_ptr<channel_link> owner(new channel_link());
    channel_link& l = *owner;
    l.config_ = c;
    l.segment_ = shm_segment::open(tag, timeout);
    auto* h = l.h();
    if (h->magic != link_magic) {
      throw comm_error(got_need(l.segment_.name() + ": link header", "another layout", "a gmi channel link"));
    }
    l.bind_rings();
    l.full_.register_producer();
    l.free_.register_consumer();
    h->producer_pid.store(::getpid(), std::memory_order_release);
    const int consumer_pid = h->consumer_pid.load();
    if (!process_alive(consumer_pid)) {
      l.mark_broken("consumer pid " + std::to_string(consumer_pid) + " died before the producer attached");
      l.segment_unlink_dead_owner();
      l.throw_if_broken();
    }
    auto check = [&](const char* what, std::uint64_t mine, std::uint64_t theirs) {
      if (mine != theirs) {
        l.fail(got_need(l.name() + ": " + what + " of producer " + std::to_string(c.producer), mine,
                        std::to_string(theirs) + " as on consumer " + std::to_string(c.consumer)));
      }
    };
    check("record bytes", c.record_bytes, h->record_bytes);
    check("shape tag", c.shape_tag, h->shape_tag);
    check("package steps", c.package_steps, h->package_steps);
    check("package envs", c.package_envs, h->package_envs);
    check("packages per slot", c.packages_per_slot, h->packages_per_slot);
    check("slots", c.slots, h->slots);
    check("payload placement (0 host, 1 pinned, 2 device)", static_cast<std::uint32_t>(c.placement), h->placement);
    if (c.placement == payload_placement::device) l.attach_device();
    if (c.placement == payload_placement::pinned) l.register_payload();
    l.attached_ = true;
    h->attached.store(1, std::memory_order_release);
    return owner;
  }

  // A slot the consumer gave back, or nullopt.
  std::optional<slot_release> try_reclaim() {
    throw_if_broken();
    slot_release r{};
    if (!free_.try_pop(std::span<std::byte>(reinterpret_cast<std::byte*>(&r), sizeof r))) return std::nullopt;
    if (r.slot >= config_.slots) fail(got_need(name() + ": released slot", r.slot, "< " + std::to_string(config_.slots)));
    return r;
  }
  // Makes `stream` wait (on the device) until the consumer has finished reading `slot`'s previous contents.
  void before_write(std::uint32_t slot, cudaStream_t stream) {
    if (config_.placement == payload_placement::device) consumed_.at(slot).wait_on(stream);
  }
  // Publishes a filled slot; with device payload, after the copies queued on `stream` so far.
  void publish(const slot_descriptor& d, cudaStream_t stream) {
    throw_if_broken();
    if (config_.placement == payload_placement::device) filled_.at(d.slot).record(stream);
    if (!full_.try_push(std::span<const std::byte>(reinterpret_cast<const std::byte*>(&d), sizeof d))) {
      fail(name() + ": descriptor ring full (more descriptors than slots)");
    }
  }
  void close() noexcept { full_.close(); }

  // ---- both sides ---------------------------------------------------------------------------------------------

  // Where slot s's payload starts in this process (host memory for host/pinned, device memory for device).
  [[nodiscard]] std::byte* slot_data(std::uint32_t s) const noexcept {
    return payload_base() + std::uint64_t{s} * config_.slot_stride();
  }
  [[nodiscard]] const link_config& config() const noexcept { return config_; }
  [[nodiscard]] const std::string& name() const noexcept { return full_.name(); }
  [[nodiscard]] bool attached() const noexcept { return attached_; }
  [[nodiscard]] bool broken() const noexcept { return full_.broken() || free_.broken(); }
  [[nodiscard]] std::string reason() const { return full_.broken() ? full_.reason() : free_.reason(); }
  // First reason wins; both rings carry it so either side's next operation names it.
  void mark_broken(const std::string& why) noexcept {
    full_.mark_broken(why);
    free_.mark_broken(why);
  }
  void throw_if_broken() const {
    if (broken()) throw comm_error(name() + ": link is broken: " + reason());
  }
  // Throws (after marking the link broken) when the link is broken or the peer process is gone. A dead consumer
  // owned the segment name: the producer removes it if it is still there, so nothing leaks.
  void check_peer() {
    throw_if_broken();
    const int pid = (consumer_side_ ? h()->producer_pid : h()->consumer_pid).load(std::memory_order_acquire);
    if (pid != 0 && !process_alive(pid)) {
      mark_broken(std::string(consumer_side_ ? "producer" : "consumer") + " pid " + std::to_string(pid) + " died");
      if (!consumer_side_) segment_unlink_dead_owner();
      throw_if_broken();
    }
  }
  [[noreturn]] void fail(const std::string& why) {
    mark_broken(why);
    throw comm_error(why);
  }

 private:
  channel_link() = default;
  link_header* h() const noexcept { return static_cast<link_header*>(segment_.data()); }
  std::byte* payload_base() const noexcept {
    if (config_.placement == payload_placement::device) return static_cast<std::byte*>(pool_);
    return static_cast<std::byte*>(segment_.data()) + h()->payload_offset;
  }
  void bind_rings() {
    auto* base = static_cast<std::byte*>(segment_.data());
    full_ = spsc_ring::attach(base + h()->full_offset, h()->ring_bytes, segment_.name() + " descriptors");
    free_ = spsc_ring::attach(base + h()->free_offset, h()->ring_bytes, segment_.name() + " releases");
  }
  void segment_unlink_dead_owner() noexcept {
    boost::interprocess::shared_memory_object::remove(segment_.name().c_str());
  }
  void register_payload() {
    void* p = static_cast<std::byte*>(segment_.data()) + h()->payload_offset;
    GMI_CUDA_TRY(cudaHostRegister(p, h()->payload_bytes, cudaHostRegisterPortable));
    registered_ = p;
  }
  void attach_device() {
    auto* hh = h();
    int device = -1;
    GMI_CUDA_TRY(cudaGetDevice(&device));
    if (device != hh->device) {  // another GPU: its copies go straight into the pool over peer access, if allowed
      try {
        reach_device_memory(hh->device, config_.peer, name() + ": producer " + std::to_string(config_.producer));
      } catch (const gmi::error& e) {
        fail(std::string(e.what()) + " (GMIs on GPUs without peer access use placement pinned)");
      }
    }
    const bool same_process = hh->consumer_pid.load() == ::getpid();
    if (!same_process && hh->ipc_ok == 0) {
      fail(name() + ": device payload across processes needs CUDA IPC, which the consumer did not export "
                    "(channel_options::across_processes false, or a MIG instance?); use payload_placement::pinned");
    }
    if (same_process) {
      pool_ = reinterpret_cast<void*>(hh->raw_pool);
    } else {
      mapping_ = ipc_mapping(hh->pool, config_.peer);
      pool_ = mapping_.get();
    }
    for (std::uint32_t s = 0; s < config_.slots; ++s) {
      filled_.push_back(shared_event::create(!same_process));
      consumed_.push_back(same_process ? shared_event::borrow(reinterpret_cast<cudaEvent_t>(hh->raw_consumed[s]))
                                       : shared_event::open(hh->consumed[s]));
      hh->raw_filled[s] = reinterpret_cast<std::uint64_t>(filled_[s].get());
      if (!same_process) hh->filled[s] = filled_[s].export_handle();
    }
  }
  void release_cuda() noexcept {
    filled_.clear();
    consumed_.clear();
    mapping_ = ipc_mapping();
    if (owns_pool_ && pool_) cudaFree(pool_);  // synchronises the device: no copy into the pool is still running
    owns_pool_ = false;
    pool_ = nullptr;
    if (registered_) cudaHostUnregister(registered_);
    registered_ = nullptr;
  }

  link_config config_;
  shm_segment segment_;
  spsc_ring full_, free_;
  bool consumer_side_ = false;
  bool attached_ = false;
  void* pool_ = nullptr;
  bool owns_pool_ = false;
  ipc_mapping mapping_;
  std::vector<shared_event> filled_, consumed_;
  void* registered_ = nullptr;
};

}  // namespace detail
}  // namespace gmi::comm
