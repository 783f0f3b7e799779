#pragma once
// comm::row_exchange_across_gpus: the second level of a row exchange (cuda::row_exchange), where the GPUs of one
// host meet inside their step kernels with no NCCL call between the steps. One shared-memory segment for every
// GMI of the host, pinned and mapped into each GMI's device address space (cudaHostRegister), holds per GPU two
// slots of `count` floats (calls alternate between them) and one word (the last call whose sum is in its slot),
// plus a stall word any GMI's kernel sets when a wait gave up and the host sets when the group broke. Host memory
// rather than peer device memory, because an MPS GMI's process sees only its own GPU.
//
// Every GMI builds one with the same tag, GPU count, GMI count and row size; GMI 0 creates the segment, the
// others open it (bounded wait). attach() adds the level to a GPU's row exchange
// (comm::hierarchical_allreduce::row_exchange(&across)); check() after each replay throws if any GMI's kernel
// stalled or any GMI's process is gone.

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include <gmi/comm/ip_allreduce.hpp>
#include <gmi/comm/shm_segment.hpp>
#include <gmi/comm/wait.hpp>
#include <gmi/core/error.hpp>
#include <gmi/cuda/check.hpp>
#include <gmi/cuda/row_exchange.hpp>

namespace gmi::comm {

struct row_exchange_across_gpus_options {
  std::string tag;        // the same on every GMI of the run's host, unique per run
  int rank = 0;           // this GMI among every GMI of the host (0 creates the segment)
  int gpu = 0;            // this GMI's GPU among the host's GPUs
  int gpus = 2;           // GPUs taking part (2 .. cuda::row_exchange::max_gpus)
  int world = 2;          // GMIs over every GPU (equal on each GPU)
  std::size_t count = 0;  // floats in a row
  milliseconds timeout = default_timeout();
};

namespace detail {
inline constexpr std::size_t across_page = 4096;
inline constexpr int across_apart = 32;  // words between two GPUs' words (128 bytes)
struct across_control {
  group_control group;  // pids, broken flag and reason
  std::uint32_t gpus = 0, world = 0;
  std::uint64_t count = 0, stride = 0;
};
// The mapped part: the GPUs' words, the stall word, then the slots; starts on a page boundary.
inline constexpr std::size_t across_words = static_cast<std::size_t>(cuda::row_exchange::max_gpus + 1) * across_apart;
inline constexpr std::size_t across_words_bytes = (across_words * 4 + across_page - 1) / across_page * across_page;
inline std::size_t across_stride(std::size_t count) { return (count + 63) / 64 * 64; }  // slots 256-byte aligned
inline std::size_t across_mapped_bytes(int gpus, std::size_t count) {
  const std::size_t b = across_words_bytes + 2 * static_cast<std::size_t>(gpus) * across_stride(count) * sizeof(float);
  return (b + across_page - 1) / across_page * across_page;
}
inline std::size_t across_segment_bytes(int gpus, std::size_t count) {
  return sizeof(across_control) + across_page + across_mapped_bytes(gpus, count);
}
inline void* across_mapped_in(void* data) {
  const auto at = (reinterpret_cast<std::uintptr_t>(data) + sizeof(across_control) + across_page - 1) / across_page *
                  across_page;
  return reinterpret_cast<void*>(at);
}
}  // namespace detail

class row_exchange_across_gpus {
 public:
  explicit row_exchange_across_gpus(row_exchange_across_gpus_options o) : o_(std::move(o)) {
    require(o_.gpus >= 2 && o_.gpus <= cuda::row_exchange::max_gpus, "row exchange across GPUs: gpus", o_.gpus,
            "2.." + std::to_string(cuda::row_exchange::max_gpus));
    require(o_.world >= o_.gpus && o_.world <= max_group_ranks && o_.world % o_.gpus == 0,
            "row exchange across GPUs: GMIs", o_.world,
            "a multiple of " + std::to_string(o_.gpus) + " GPUs, at most " + std::to_string(max_group_ranks));
    require(o_.rank >= 0 && o_.rank < o_.world, "row exchange across GPUs: rank", o_.rank,
            "0.." + std::to_string(o_.world - 1));
    require(o_.gpu == o_.rank / (o_.world / o_.gpus), "row exchange across GPUs: GPU of rank " + std::to_string(o_.rank),
            o_.gpu, std::to_string(o_.rank / (o_.world / o_.gpus)) + " (GMIs numbered GPU by GPU)");
    require(o_.count >= 1, "row exchange across GPUs: floats in a row", o_.count, ">= 1");
    const std::size_t bytes = detail::across_segment_bytes(o_.gpus, o_.count);
    if (o_.rank == 0) {
      segment_ = shm_segment::create(o_.tag, bytes, [&](void* p, std::size_t) {
        auto* c = new (p) detail::across_control{};
        c->group.ranks = static_cast<std::uint32_t>(o_.world);
        c->gpus = static_cast<std::uint32_t>(o_.gpus);
        c->world = static_cast<std::uint32_t>(o_.world);
        c->count = o_.count;
        c->stride = detail::across_stride(o_.count);
      });
    } else {
      segment_ = shm_segment::open(o_.tag, o_.timeout);
    }
    barrier_ = detail::group_barrier(&control()->group, segment_.name());
    const auto* c = control();
    if (c->gpus != static_cast<std::uint32_t>(o_.gpus) || c->world != static_cast<std::uint32_t>(o_.world) ||
        c->count != o_.count) {
      const std::string why = got_need("row exchange across GPUs " + segment_.name() + " on GMI " + std::to_string(o_.rank),
                                       std::to_string(o_.gpus) + " GPUs, " + std::to_string(o_.world) + " GMIs, " +
                                           std::to_string(o_.count) + " floats",
                                       std::to_string(c->gpus) + " GPUs, " + std::to_string(c->world) + " GMIs, " +
                                           std::to_string(c->count) + " floats as on GMI 0");
      barrier_.mark_broken(why);
      throw config_error(why);
    }
    control()->group.pids[o_.rank].store(::getpid(), std::memory_order_release);
    mapped_ = detail::across_mapped_in(segment_.data());
    GMI_CUDA_TRY(cudaHostRegister(mapped_, detail::across_mapped_bytes(o_.gpus, o_.count),
                                  cudaHostRegisterMapped | cudaHostRegisterPortable));
    registered_ = true;
    try {
      GMI_CUDA_TRY(cudaHostGetDevicePointer(&device_, mapped_, 0));
    } catch (...) {
      cudaHostUnregister(mapped_);
      throw;
    }
  }
  row_exchange_across_gpus(const row_exchange_across_gpus&) = delete;
  row_exchange_across_gpus& operator=(const row_exchange_across_gpus&) = delete;
  ~row_exchange_across_gpus() {
    if (registered_) cudaHostUnregister(mapped_);
  }

  [[nodiscard]] int gpus() const noexcept { return o_.gpus; }
  [[nodiscard]] int world() const noexcept { return o_.world; }
  [[nodiscard]] std::size_t count() const noexcept { return o_.count; }
  [[nodiscard]] const std::string& name() const noexcept { return segment_.name(); }

  // Adds this level to x, a row exchange among the members of this GMI's GPU over rows of count() floats. The
  // stall word becomes this level's (one word for every GMI of the host); with one GMI per GPU it is also the
  // abort word the waits watch.
  void attach(cuda::row_exchange& x) const {
    require(x.count == o_.count, "row exchange across GPUs: floats in the GPU's rows", x.count,
            std::to_string(o_.count) + " as in " + segment_.name());
    require(x.size == o_.world / o_.gpus, "row exchange across GPUs: members on GPU " + std::to_string(o_.gpu), x.size,
            std::to_string(o_.world / o_.gpus) + " (" + std::to_string(o_.world) + " GMIs over " +
                std::to_string(o_.gpus) + " GPUs)");
    auto* words = static_cast<std::uint32_t*>(device_);
    x.gpu = o_.gpu;
    x.gpus = o_.gpus;
    x.world = o_.world;
    x.gpu_posted = words;
    x.gpu_sums = reinterpret_cast<float*>(static_cast<char*>(device_) + detail::across_words_bytes);
    x.gpu_stride = detail::across_stride(o_.count);
    x.stalled = words + static_cast<std::size_t>(cuda::row_exchange::max_gpus) * detail::across_apart;
    x.gpu_apart = detail::across_apart;
    if (x.size == 1) x.abort = x.stalled;
  }

  // Throws comm_error when a GMI's kernel gave up waiting, the group was marked broken or a GMI's process is gone
  // (the processes are looked at every 64th call).
  void check() {
    barrier_.throw_if_broken();
    if (stall_word().load(std::memory_order_acquire) != 0) {
      const std::string why = segment_.name() + ": a step kernel gave up waiting for another GPU's sums (a GMI died, "
                              "stopped or fell more than the timeout behind)";
      barrier_.mark_broken(why);
      throw comm_error(why);
    }
    if (++checks_ % 64 == 0) {
      try {
        barrier_.check_peers();
      } catch (...) {
        mark_broken("a GMI of the host is gone");
        throw;
      }
    }
  }

  // Stops every GMI's kernel at its next wait (the stall word) and records why for the hosts.
  void mark_broken(const std::string& why) noexcept {
    stall_word().store(1, std::memory_order_seq_cst);
    barrier_.mark_broken(why);
  }

 private:
  detail::across_control* control() const { return static_cast<detail::across_control*>(segment_.data()); }
  std::atomic<std::uint32_t>& stall_word() const {
    auto* words = static_cast<std::uint32_t*>(mapped_);
    return *reinterpret_cast<std::atomic<std::uint32_t>*>(
        words + static_cast<std::size_t>(cuda::row_exchange::max_gpus) * detail::across_apart);
  }

  row_exchange_across_gpus_options o_;
  shm_segment segment_;
  detail::group_barrier barrier_;
  void* mapped_ = nullptr;
  void* device_ = nullptr;
  bool registered_ = false;
  std::uint64_t checks_ = 0;
};

}  // namespace gmi::comm
