#pragma once
// The "latest weights" board from a trainer GMI back to its serving GMIs: one writer publishes versions 1, 2, ...
// into a few buffers in turn and never waits for anyone; readers copy the newest version whenever they look, and
// a read the writer overtook (a seqlock per buffer) is simply retried. Payload in shared host memory, pinned host
// memory, or the writer's GPU memory (plain pointers in-process, CUDA IPC across processes), as for channels.

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

#include <boost/interprocess/shared_memory_object.hpp>

#include <gmi/comm/detail/channel_link.hpp>
#include <gmi/comm/device_share.hpp>
#include <gmi/comm/shm_segment.hpp>
#include <gmi/comm/wait.hpp>
#include <gmi/core/error.hpp>
#include <gmi/cuda/check.hpp>

namespace gmi::comm {

struct weights_options {
  std::string tag;                 // names the board's segment; unique per run
  std::size_t bytes = 0;           // the weights' size; readers must agree
  int readers = 1;                 // readers that will attach: the name is unlinked once they all have
  payload_placement placement = payload_placement::host;
  std::uint32_t buffers = 3;       // 2..8: more buffers, fewer reads overtaken by a fast writer
  milliseconds timeout = default_timeout();
  bool peer = false;               // device placement: readers on another GPU with peer access read the writer's memory

  void validate() const {
    detail::check_tag(tag);
    require(bytes >= 1, "weights bytes", bytes, ">= 1");
    require(readers >= 0 && readers <= 4096, "weights readers", readers, "0..4096");
    require(buffers >= 2 && buffers <= 8, "weights buffers", buffers, "2..8");
  }
};

namespace detail {
inline constexpr std::uint64_t board_magic = 0x676d692d77747331ull;  // "gmi-wts1"

struct board_header {
  std::uint64_t magic;
  std::uint64_t bytes;
  std::uint64_t stride;
  std::uint64_t payload_offset;
  std::uint32_t buffers;
  std::uint32_t placement;
  std::int32_t device;
  std::uint32_t ipc_ok;
  ipc_buffer_handle pool;
  std::uint64_t raw_pool;
  std::atomic<std::int32_t> writer_pid;
  std::atomic<std::uint32_t> readers_attached;
  std::atomic<std::uint32_t> broken;
  char reason[192];
  alignas(64) std::atomic<std::uint64_t> latest;  // version * 16 + buffer; 0 before the first publish
  alignas(64) std::atomic<std::uint64_t> seq[8];  // per buffer: odd while the writer fills it
  std::uint64_t version[8];                      // per buffer: the version it holds (read under seq)
};

inline std::uint64_t board_payload_offset() {
  return round_up(sizeof(board_header) + segment_header_bytes, page_bytes) - segment_header_bytes;
}

// Shared by writer and reader: the broken flag and the payload's address in this process.
class board_view {
 public:
  [[nodiscard]] bool broken() const noexcept { return h()->broken.load(std::memory_order_acquire) == 1; }
  [[nodiscard]] std::string reason() const { return broken() ? std::string(h()->reason) : std::string(); }
  void mark_broken(const std::string& why) noexcept {
    std::uint32_t expected = 0;
    if (h()->broken.compare_exchange_strong(expected, 2, std::memory_order_acq_rel)) {
      const std::size_t n = std::min(why.size(), sizeof(h()->reason) - 1);
      std::memcpy(h()->reason, why.data(), n);
      h()->reason[n] = '\0';
      h()->broken.store(1, std::memory_order_release);
    }
  }
  void throw_if_broken() const {
    if (broken()) throw comm_error(segment_.name() + ": weights board is broken: " + reason());
  }
  [[nodiscard]] std::uint64_t latest_version() const noexcept {
    return h()->latest.load(std::memory_order_acquire) >> 4;
  }

 protected:
  board_header* h() const noexcept { return static_cast<board_header*>(segment_.data()); }
  std::byte* buffer(std::uint32_t b) const noexcept {
    std::byte* base = static_cast<payload_placement>(h()->placement) == payload_placement::device
                          ? static_cast<std::byte*>(pool_)
                          : static_cast<std::byte*>(segment_.data()) + h()->payload_offset;
    return base + std::uint64_t{b} * h()->stride;
  }
  void copy(void* dst, const void* src, std::size_t n, cudaStream_t stream) const {
    if (static_cast<payload_placement>(h()->placement) == payload_placement::host) {
      std::memcpy(dst, src, n);
      return;
    }
    GMI_CUDA_TRY(cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, stream));
    GMI_CUDA_TRY(cudaStreamSynchronize(stream));  // the seqlock is checked on the host: the copy must be done
  }
  void register_payload() {
    void* p = static_cast<std::byte*>(segment_.data()) + h()->payload_offset;
    GMI_CUDA_TRY(cudaHostRegister(p, h()->stride * h()->buffers, cudaHostRegisterPortable));
    registered_ = p;
  }
  void release_cuda() noexcept {
    mapping_ = ipc_mapping();
    if (owns_pool_ && pool_) cudaFree(pool_);
    owns_pool_ = false;
    pool_ = nullptr;
    if (registered_) cudaHostUnregister(registered_);
    registered_ = nullptr;
  }

  shm_segment segment_;
  void* pool_ = nullptr;
  bool owns_pool_ = false;
  ipc_mapping mapping_;
  void* registered_ = nullptr;
};
}  // namespace detail

// The trainer's side: publish() copies the weights into the next buffer and makes them the newest.
class weights_writer : public detail::board_view {
 public:
  explicit weights_writer(weights_options o) : o_(std::move(o)) {
    o_.validate();
    const std::uint64_t stride = detail::round_up(o_.bytes, detail::page_bytes);
    const std::uint64_t offset = detail::board_payload_offset();
    const bool host_payload = o_.placement != payload_placement::device;
    ipc_buffer_handle handle{};
    bool ipc_ok = false;
    int device = -1;
    if (!host_payload) {
      GMI_CUDA_TRY(cudaGetDevice(&device));
      const std::size_t bytes = detail::round_up(stride * o_.buffers, std::size_t{2} << 20);
      GMI_CUDA_TRY(cudaMalloc(&pool_, bytes));
      owns_pool_ = true;
      try {
        handle = export_buffer(pool_, bytes);
        ipc_ok = true;
      } catch (const gmi::error&) {
        cudaGetLastError();
      }
    }
    try {
      segment_ = shm_segment::create(o_.tag, offset + (host_payload ? stride * o_.buffers : 0), [&](void* p, std::size_t) {
        auto* h = new (p) detail::board_header{};
        h->magic = detail::board_magic;
        h->bytes = o_.bytes;
        h->stride = stride;
        h->payload_offset = offset;
        h->buffers = o_.buffers;
        h->placement = static_cast<std::uint32_t>(o_.placement);
        h->device = device;
        h->ipc_ok = ipc_ok ? 1u : 0u;
        h->pool = handle;
        h->raw_pool = reinterpret_cast<std::uint64_t>(pool_);
        h->writer_pid.store(::getpid());
      });
      if (o_.placement == payload_placement::pinned) register_payload();
    } catch (...) {
      release_cuda();
      throw;
    }
    if (o_.readers == 0) segment_.unlink();
  }
  weights_writer(const weights_writer&) = delete;
  weights_writer& operator=(const weights_writer&) = delete;
  ~weights_writer() {
    if (segment_.data()) mark_broken("weights writer " + segment_.name() + " went away");
    release_cuda();
  }

  // Copies `bytes` bytes from src (host memory; with pinned or device placement also device memory, copied on
  // `stream`) and publishes them as the next version, which it returns. Never waits for readers.
  std::uint64_t publish(const void* src, cudaStream_t stream = nullptr) {
    throw_if_broken();
    auto* hh = h();
    const std::uint64_t latest = hh->latest.load(std::memory_order_relaxed);
    const std::uint32_t b = latest == 0 ? 0 : static_cast<std::uint32_t>((latest % 16 + 1) % hh->buffers);
    const std::uint64_t version = (latest >> 4) + 1;
    const std::uint64_t s = hh->seq[b].load(std::memory_order_relaxed);
    hh->seq[b].store(s + 1, std::memory_order_relaxed);  // odd: readers of b retry
    std::atomic_thread_fence(std::memory_order_release);
    try {
      copy(buffer(b), src, o_.bytes, stream);
    } catch (const gmi::error& e) {
      mark_broken(e.what());
      throw;
    }
    std::atomic_ref<std::uint64_t>(hh->version[b]).store(version, std::memory_order_relaxed);
    hh->seq[b].store(s + 2, std::memory_order_release);
    hh->latest.store(version * 16 + b, std::memory_order_release);
    // All readers in: the name goes, so no crash can leave the segment behind.
    if (!unlinked_ && hh->readers_attached.load(std::memory_order_acquire) >= static_cast<std::uint32_t>(o_.readers)) {
      segment_.unlink();
      unlinked_ = true;
    }
    return version;
  }
  [[nodiscard]] const weights_options& options() const noexcept { return o_; }

 private:
  weights_options o_;
  bool unlinked_ = false;
};

// A serving GMI's side: read_latest() copies the newest weights when they are newer than what it has.
class weights_reader : public detail::board_view {
 public:
  explicit weights_reader(weights_options o) : o_(std::move(o)) {
    o_.validate();
    segment_ = shm_segment::open(o_.tag, o_.timeout);
    auto* hh = h();
    if (hh->magic != detail::board_magic) {
      throw comm_error(got_need(segment_.name() + ": header", "another layout", "a gmi weights board"));
    }
    const int writer = hh->writer_pid.load();
    if (!detail::process_alive(writer)) {
      mark_broken("writer pid " + std::to_string(writer) + " died");
      boost::interprocess::shared_memory_object::remove(segment_.name().c_str());
      throw_if_broken();
    }
    auto fail = [&](const std::string& why) {
      mark_broken(why);
      throw comm_error(why);
    };
    if (hh->bytes != o_.bytes) fail(got_need(segment_.name() + ": reader's weights bytes", o_.bytes, std::to_string(hh->bytes) + " as on the writer"));
    if (hh->placement != static_cast<std::uint32_t>(o_.placement)) {
      fail(got_need(segment_.name() + ": reader's placement", to_string(o_.placement),
                    std::string(to_string(static_cast<payload_placement>(hh->placement))) + " as on the writer"));
    }
    if (o_.placement == payload_placement::device) {
      int device = -1;
      GMI_CUDA_TRY(cudaGetDevice(&device));
      if (device != hh->device) {  // another GPU: read over peer access where allowed
        try {
          reach_device_memory(hh->device, o_.peer, segment_.name() + ": reader");
        } catch (const gmi::error& e) {
          fail(std::string(e.what()) + " (use pinned across GPUs without peer access)");
        }
      }
      if (writer == ::getpid()) {
        pool_ = reinterpret_cast<void*>(hh->raw_pool);
      } else {
        if (!hh->ipc_ok) fail(segment_.name() + ": device weights across processes need CUDA IPC, which the writer could not export; use pinned");
        mapping_ = ipc_mapping(hh->pool, o_.peer);
        pool_ = mapping_.get();
      }
    }
    if (o_.placement == payload_placement::pinned) register_payload();
    hh->readers_attached.fetch_add(1, std::memory_order_acq_rel);
    last_check_ = std::chrono::steady_clock::now();
  }
  weights_reader(const weights_reader&) = delete;
  weights_reader& operator=(const weights_reader&) = delete;
  ~weights_reader() { release_cuda(); }

  // Copies the newest weights into dst when their version is above `have`; returns that version, or nullopt
  // when nothing newer is there. Throws comm_error when the board is broken or the writer died.
  std::optional<std::uint64_t> read_latest(void* dst, std::uint64_t have, cudaStream_t stream = nullptr) {
    check_writer(false);
    std::optional<std::uint64_t> got;
    bounded_wait([&] { return try_read(dst, have, stream, got); }, [&] { check_writer(true); }, o_.timeout,
                 segment_.name() + ": reader overtaken by the writer on every try");
    return got;
  }
  // Waits (bounded) for a version above `have`, then reads it.
  std::uint64_t wait_newer(void* dst, std::uint64_t have, cudaStream_t stream = nullptr) {
    return wait_newer(dst, have, stream, o_.timeout);
  }
  std::uint64_t wait_newer(void* dst, std::uint64_t have, cudaStream_t stream, milliseconds timeout) {
    check_writer(true);
    std::optional<std::uint64_t> got;
    bounded_wait([&] { return try_read(dst, have, stream, got) && got.has_value(); }, [&] { check_writer(true); },
                 timeout, segment_.name() + ": reader waiting for weights newer than version " + std::to_string(have));
    return *got;
  }

 private:
  // One attempt: true when it finished (a version copied, or nothing newer); false when the writer overtook it.
  bool try_read(void* dst, std::uint64_t have, cudaStream_t stream, std::optional<std::uint64_t>& got) {
    throw_if_broken();
    auto* hh = h();
    const std::uint64_t latest = hh->latest.load(std::memory_order_acquire);
    got.reset();
    if ((latest >> 4) <= have) return true;
    const auto b = static_cast<std::uint32_t>(latest % 16);
    const std::uint64_t s1 = hh->seq[b].load(std::memory_order_acquire);
    if (s1 % 2) return false;
    const std::uint64_t version = std::atomic_ref<std::uint64_t>(hh->version[b]).load(std::memory_order_relaxed);
    copy(dst, buffer(b), o_.bytes, stream);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (hh->seq[b].load(std::memory_order_relaxed) != s1) return false;  // torn: the writer refilled b meanwhile
    if (version <= have) return true;
    got = version;
    return true;
  }
  // The writer's pid first, so a dead writer's name is removed even when the board broke for another reason.
  void check_writer(bool force) {
    const auto now = std::chrono::steady_clock::now();
    if (force || now - last_check_ >= std::chrono::milliseconds(5)) {
      last_check_ = now;
      const int pid = h()->writer_pid.load(std::memory_order_acquire);
      if (!detail::process_alive(pid)) {
        mark_broken("weights writer pid " + std::to_string(pid) + " died");
        boost::interprocess::shared_memory_object::remove(segment_.name().c_str());  // the dead owner's name
      }
    }
    throw_if_broken();
  }

  weights_options o_;
  std::chrono::steady_clock::time_point last_check_;
};

}  // namespace gmi::comm
