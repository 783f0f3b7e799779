#pragma once
// A single-producer single-consumer ring of variable-length messages in shared memory (or any memory both
// sides map): lock-free atomics on the hot path, bounded waits, a "broken" flag and peer-pid liveness so a
// dead or failed peer becomes a comm_error within the timeout. MPSC = one ring per producer.

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>

#include <gmi/comm/shm_segment.hpp>
#include <gmi/comm/wait.hpp>
#include <gmi/core/error.hpp>

namespace gmi::comm {

namespace detail {
inline constexpr std::uint64_t ring_magic = 0x676d692d72696e67ull;  // "gmi-ring"
inline constexpr std::size_t cache_line = 64;

struct ring_control {
  alignas(cache_line) std::atomic<std::uint64_t> head;  // messages written (producer's line)
  alignas(cache_line) std::atomic<std::uint64_t> tail;  // messages read (consumer's line)
  alignas(cache_line) std::atomic<std::uint32_t> broken;
  std::atomic<std::uint32_t> closed;  // producer will push no more
  std::atomic<std::int32_t> producer_pid;
  std::atomic<std::int32_t> consumer_pid;
  std::uint64_t magic;
  std::uint32_t capacity;
  std::uint32_t slot_bytes;
  std::uint64_t slot_stride;
  char reason[192];
};
static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "ring counters must be address-free lock-free atomics");
static_assert(std::atomic<std::int32_t>::is_always_lock_free);
inline constexpr std::size_t ring_control_bytes = (sizeof(ring_control) + cache_line - 1) / cache_line * cache_line;
}  // namespace detail

// A view of a ring laid out in memory it does not own. Copyable; all state lives in that memory.
class spsc_ring {
 public:
  // Bytes of memory a ring of `capacity` (a power of two) slots of up to `slot_bytes` bytes needs.
  static std::size_t bytes_needed(std::uint32_t capacity, std::uint32_t slot_bytes) {
    return detail::ring_control_bytes + std::size_t{capacity} * stride(slot_bytes);
  }

  // Lays a fresh, empty ring out in `memory` (at least bytes_needed bytes, 64-byte aligned).
  static spsc_ring format(void* memory, std::size_t bytes, std::uint32_t capacity, std::uint32_t slot_bytes,
                          std::string name = "ring") {
    require(capacity >= 1 && (capacity & (capacity - 1)) == 0, "spsc_ring capacity", capacity, "a power of two >= 1");
    require(slot_bytes >= 1, "spsc_ring slot_bytes", slot_bytes, ">= 1");
    require(bytes >= bytes_needed(capacity, slot_bytes), "spsc_ring memory bytes", bytes,
            ">= " + std::to_string(bytes_needed(capacity, slot_bytes)));
    require(reinterpret_cast<std::uintptr_t>(memory) % detail::cache_line == 0, "spsc_ring memory alignment",
            reinterpret_cast<std::uintptr_t>(memory) % detail::cache_line, "0 (64-byte aligned)");
    auto* c = new (memory) detail::ring_control{};
    c->capacity = capacity;
    c->slot_bytes = slot_bytes;
    c->slot_stride = stride(slot_bytes);
    c->head.store(0, std::memory_order_relaxed);
    c->tail.store(0, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    std::atomic_ref<std::uint64_t>(c->magic).store(detail::ring_magic, std::memory_order_release);
    return spsc_ring(c, std::move(name));
  }

  // Attaches to a ring another side formatted.
  static spsc_ring attach(void* memory, std::size_t bytes, std::string name = "ring") {
    auto* c = static_cast<detail::ring_control*>(memory);
    require(bytes >= detail::ring_control_bytes, "spsc_ring memory bytes", bytes, ">= the ring's control block");
    if (std::atomic_ref<std::uint64_t>(c->magic).load(std::memory_order_acquire) != detail::ring_magic) {
      throw comm_error(got_need(name + ": ring header", "not formatted", "a ring formatted by spsc_ring::format"));
    }
    require(bytes >= bytes_needed(c->capacity, c->slot_bytes), "spsc_ring memory bytes", bytes,
            ">= " + std::to_string(bytes_needed(c->capacity, c->slot_bytes)));
    return spsc_ring(c, std::move(name));
  }

  spsc_ring() = default;

  // Records the calling process as the producer / consumer, so the other side can tell when it dies.
  void register_producer() { c_->producer_pid.store(::getpid(), std::memory_order_release); }
  void register_consumer() { c_->consumer_pid.store(::getpid(), std::memory_order_release); }

  [[nodiscard]] std::uint32_t capacity() const noexcept { return c_->capacity; }
  [[nodiscard]] std::uint32_t slot_bytes() const noexcept { return c_->slot_bytes; }
  [[nodiscard]] std::uint64_t size() const noexcept {
    return c_->head.load(std::memory_order_acquire) - c_->tail.load(std::memory_order_acquire);
  }
  [[nodiscard]] bool broken() const noexcept { return c_->broken.load(std::memory_order_acquire) != 0; }
  [[nodiscard]] bool closed() const noexcept { return c_->closed.load(std::memory_order_acquire) != 0; }
  [[nodiscard]] std::string reason() const { return broken() ? std::string(c_->reason) : std::string(); }

  // Marks the ring unusable; both sides' next operation throws comm_error naming the reason. First reason wins.
  void mark_broken(const std::string& why) noexcept {
    std::uint32_t expected = 0;
    if (c_->broken.compare_exchange_strong(expected, 2, std::memory_order_acq_rel)) {
      const std::size_t n = std::min(why.size(), sizeof(c_->reason) - 1);
      std::memcpy(c_->reason, why.data(), n);
      c_->reason[n] = '\0';
      c_->broken.store(1, std::memory_order_release);
    }
  }
  // The producer says it is done: a consumer that drains the ring then gets std::nullopt from pop.
  void close() noexcept { c_->closed.store(1, std::memory_order_release); }

  // Zero-copy push: a slot to fill (slot_bytes long), or empty when the ring is full. commit_push publishes it.
  [[nodiscard]] std::span<std::byte> try_begin_push() {
    throw_if_broken();
    const std::uint64_t head = c_->head.load(std::memory_order_relaxed);
    if (head - c_->tail.load(std::memory_order_acquire) >= c_->capacity) return {};
    return {slot(head) + sizeof(std::uint64_t), c_->slot_bytes};
  }
  std::span<std::byte> begin_push(milliseconds timeout = default_timeout()) {
    std::span<std::byte> s;
    bounded_wait([&] { return !(s = try_begin_push()).empty(); }, [&] { check_peer(c_->consumer_pid, "consumer"); },
                 timeout, name_ + ": push waiting for space");
    return s;
  }
  void commit_push(std::size_t bytes) {
    require(bytes <= c_->slot_bytes, name_ + ": message bytes", bytes, "<= slot_bytes " + std::to_string(c_->slot_bytes));
    const std::uint64_t head = c_->head.load(std::memory_order_relaxed);
    std::memcpy(slot(head), &bytes, sizeof(std::uint64_t));
    c_->head.store(head + 1, std::memory_order_release);
  }

  bool try_push(std::span<const std::byte> message) {
    check_size(message.size());
    auto s = try_begin_push();
    if (s.empty()) return false;
    std::memcpy(s.data(), message.data(), message.size());
    commit_push(message.size());
    return true;
  }
  void push(std::span<const std::byte> message, milliseconds timeout = default_timeout()) {
    check_size(message.size());
    auto s = begin_push(timeout);
    std::memcpy(s.data(), message.data(), message.size());
    commit_push(message.size());
  }

  // Zero-copy pop: the oldest message (valid until end_pop), or empty optional when the ring is empty.
  [[nodiscard]] std::optional<std::span<const std::byte>> try_begin_pop() {
    const std::uint64_t tail = c_->tail.load(std::memory_order_relaxed);
    if (c_->head.load(std::memory_order_acquire) == tail) {
      throw_if_broken();
      return std::nullopt;
    }
    std::uint64_t bytes = 0;
    std::memcpy(&bytes, slot(tail), sizeof bytes);
    return std::span<const std::byte>(slot(tail) + sizeof(std::uint64_t), bytes);
  }
  // The oldest message, or std::nullopt once the producer closed the ring and it is drained.
  std::optional<std::span<const std::byte>> begin_pop(milliseconds timeout = default_timeout()) {
    std::optional<std::span<const std::byte>> m;
    bool drained = false;
    bounded_wait(
        [&] {
          m = try_begin_pop();
          if (m) return true;
          // closed is read after an empty look: a message pushed before close is then visible on the next look.
          if (closed() && !(m = try_begin_pop())) drained = true;
          return m.has_value() || drained;
        },
        [&] { check_peer(c_->producer_pid, "producer"); }, timeout, name_ + ": pop waiting for a message");
    return m;
  }
  void end_pop() {
    const std::uint64_t tail = c_->tail.load(std::memory_order_relaxed);
    c_->tail.store(tail + 1, std::memory_order_release);
  }

  // Copies the oldest message into out; returns its size, or std::nullopt when the ring is closed and drained.
  std::optional<std::size_t> pop(std::span<std::byte> out, milliseconds timeout = default_timeout()) {
    auto m = begin_pop(timeout);
    if (!m) return std::nullopt;
    const std::size_t n = m->size();
    if (n > out.size()) throw comm_error(got_need(name_ + ": pop buffer bytes", out.size(), ">= message bytes " + std::to_string(n)));
    std::memcpy(out.data(), m->data(), n);
    end_pop();
    return n;
  }
  std::optional<std::size_t> try_pop(std::span<std::byte> out) {
    auto m = try_begin_pop();
    if (!m) return std::nullopt;
    const std::size_t n = m->size();
    if (n > out.size()) throw comm_error(got_need(name_ + ": pop buffer bytes", out.size(), ">= message bytes " + std::to_string(n)));
    std::memcpy(out.data(), m->data(), n);
    end_pop();
    return n;
  }

  [[nodiscard]] const std::string& name() const noexcept { return name_; }

 private:
  spsc_ring(detail::ring_control* c, std::string name) : c_(c), name_(std::move(name)) {}
  static std::uint64_t stride(std::uint32_t slot_bytes) {
    return (sizeof(std::uint64_t) + std::uint64_t{slot_bytes} + detail::cache_line - 1) / detail::cache_line *
           detail::cache_line;
  }
  std::byte* slot(std::uint64_t index) const noexcept {
    return reinterpret_cast<std::byte*>(c_) + detail::ring_control_bytes + (index & (c_->capacity - 1)) * c_->slot_stride;
  }
  void check_size(std::size_t n) const {
    if (n > c_->slot_bytes) throw comm_error(got_need(name_ + ": message bytes", n, "<= slot_bytes " + std::to_string(c_->slot_bytes)));
  }
  void throw_if_broken() const {
    if (broken()) throw comm_error(name_ + ": ring is broken: " + reason());
  }
  // Throws (and marks the ring broken, so every later operation fails fast) when the peer process is gone.
  void check_peer(const std::atomic<std::int32_t>& pid_slot, const char* role) {
    throw_if_broken();
    const int pid = pid_slot.load(std::memory_order_acquire);
    if (pid != 0 && !detail::process_alive(pid)) {
      mark_broken(std::string(role) + " pid " + std::to_string(pid) + " died");
      throw_if_broken();
    }
  }

  detail::ring_control* c_ = nullptr;
  std::string name_;
};

// A ring in its own shared-memory segment: the creator formats it, the peer opens it by tag.
class shm_ring {
 public:
  static shm_ring create(std::string_view tag, std::uint32_t capacity, std::uint32_t slot_bytes) {
    shm_ring r;
    // Formatted before the segment is marked ready, so open() never meets an unformatted ring.
    r.segment_ = shm_segment::create(tag, spsc_ring::bytes_needed(capacity, slot_bytes), [&](void* p, std::size_t bytes) {
      r.ring_ = spsc_ring::format(p, bytes, capacity, slot_bytes, segment_name(tag));
    });
    return r;
  }
  static shm_ring open(std::string_view tag, milliseconds timeout = default_timeout()) {
    shm_ring r;
    r.segment_ = shm_segment::open(tag, timeout);
    r.ring_ = spsc_ring::attach(r.segment_.data(), r.segment_.size(), r.segment_.name());
    return r;
  }
  spsc_ring& operator*() noexcept { return ring_; }
  spsc_ring* operator->() noexcept { return &ring_; }
  [[nodiscard]] shm_segment& segment() noexcept { return segment_; }

 private:
  shm_segment segment_;
  spsc_ring ring_;
};

}  // namespace gmi::comm
