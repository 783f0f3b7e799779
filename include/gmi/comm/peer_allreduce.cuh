#pragma once
// comm::peer_allreduce: the hierarchical allreduce of m GMIs on each of n GPUs of one host as one kernel a GMI and
// call, over peer device memory (NVLink or PCIe peer access), with no NCCL in between. Each GMI sums its part of
// every GPU's slice from its own GPU's m buffers straight into the slice owner's landing rows; the owner's GMIs
// add the n rows and store the sum into every GPU's result (detail/peer_allreduce_kernel.cuh has the phases).
// So the intra-GPU sum rides on the stores that cross the links instead of running before them, and every GMI's
// SMs take part. One process per GMI (MPS GMIs: CUDA IPC between processes); the GPUs must reach each other.
//
// Every GMI builds one with the same tag, GPU count, GMI count, float count and copy_back; GMI 0 of the host
// creates the shared-memory segment, each GPU's first GMI allocates the GPU's landing rows, result and flag words.
// allreduce(stream) only enqueues one kernel (a CUDA graph may capture it); wait(stream) waits, bounded, and
// throws comm_error when a GMI's kernel gave up (deadline, or another GMI gave up first), the group broke or a
// GMI's process is gone.

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <gmi/comm/detail/peer_allreduce_kernel.cuh>
#include <gmi/comm/device_share.hpp>
#include <gmi/comm/ip_allreduce.hpp>
#include <gmi/comm/shm_segment.hpp>
#include <gmi/comm/wait.hpp>
#include <gmi/core/error.hpp>
#include <gmi/cuda/check.hpp>

namespace gmi::comm {

struct peer_allreduce_options {
  std::string tag;       // the same on every GMI of the host, unique per run
  int rank = 0;          // this GMI among the host's GMIs, numbered GPU by GPU (rank / (world / gpus) is its GPU)
  int gpus = 1;          // GPUs taking part (1 .. 8)
  int world = 1;         // GMIs over every GPU, the same number on each (at most 16 a GPU)
  bool copy_back = true;  // false: every GMI reads the sum in its GPU's result (result()) until its next call
  // A GMI's grid, 0..65535; 0: (the GPU's SMs x resident blocks an SM, at most 2) / GMIs a GPU, so that the m
  // grids of a GPU, which wait for each other, fit on it together (a grid that cannot fit is refused). Every GMI
  // must use GMI 0's.
  unsigned blocks = 0;
  // A block's piece of a part goes through the links in chunks of about this many floats (at most 16 chunks), so
  // the local sum of one chunk runs beside the stores of the one before; 0: 8192. Every GMI must use GMI 0's.
  std::size_t chunk_floats = 0;
  // Warps of a block (of 16) that sum chunks into the landing rows while the others add the arrived rows into the
  // results, 0..16; 16: every warp does both, in turn; 0: 12.
  unsigned producer_warps = 0;
  // Launch each call as a programmatic dependent of the stream's work before it (it waits for that work inside the
  // kernel, and lets the stream's next kernel launch once every grid of the GPU's GMIs is in): the GMIs' kernels
  // start closer together.
  bool early_launch = true;
  milliseconds timeout = default_timeout();
};

namespace detail {
inline constexpr std::size_t peer_page = 4096;
struct peer_control {
  group_control group;  // pids, broken flag and reason
  std::uint32_t gpus = 0, world = 0, copy_back = 0;
  std::uint64_t count = 0;
  std::atomic<std::uint32_t> blocks;  // GMI 0's grid, which every GMI must match (blocks pair up across GPUs)
  std::atomic<std::uint64_t> chunk_floats;  // GMI 0's chunk size, which every GMI must match
  std::atomic<std::uint32_t> gpu_ready[peer_max_gpus];
  ipc_buffer_handle gpu_block[peer_max_gpus];  // flags, result, landing rows
  std::atomic<std::uint32_t> buffer_ready[max_group_ranks];
  ipc_buffer_handle buffer[max_group_ranks];
  std::atomic<std::uint32_t> let_go;  // GMIs that map nothing of anyone any more
};
inline std::size_t peer_segment_bytes() { return sizeof(peer_control) + 2 * peer_page; }
inline void* peer_stall_page(void* data) {
  const auto at = (reinterpret_cast<std::uintptr_t>(data) + sizeof(peer_control) + peer_page - 1) / peer_page * peer_page;
  return reinterpret_cast<void*>(at);
}
// A landing row: the longest GPU slice, in whole float4s.
inline std::uint64_t peer_stride(std::uint64_t count, int gpus, int per_gpu) {
  std::uint64_t longest = 0;
  for (int j = 0; j < gpus; ++j)
    longest = std::max(longest, peer_bound(count, (j + 1) * per_gpu, gpus * per_gpu) - peer_bound(count, j * per_gpu, gpus * per_gpu));
  return (longest + 3) / 4 * 4;
}
// A GPU's block: flag words, then the result, then the landing rows (each part 256-byte aligned), 2 MiB multiples.
inline std::size_t peer_result_offset() { return peer_flag_bytes; }
inline std::size_t peer_landing_offset(std::uint64_t count) { return peer_flag_bytes + (count * 4 + 255) / 256 * 256; }
inline std::size_t peer_block_bytes(std::uint64_t count, int gpus, int per_gpu) {
  const std::size_t b = peer_landing_offset(count) + gpus * peer_stride(count, gpus, per_gpu) * 4;
  return (b + (2u << 20) - 1) / (2u << 20) * (2u << 20);
}
}  // namespace detail

class peer_allreduce {
 public:
  // buffer: this GMI's `count` floats on the current device, the base of its own cudaMalloc (others map it).
  peer_allreduce(peer_allreduce_options o, float* buffer, std::size_t count) : o_(std::move(o)), mine_(buffer), count_(count) {
    require(o_.gpus >= 1 && o_.gpus <= detail::peer_max_gpus, "peer allreduce: GPUs", o_.gpus,
            "1.." + std::to_string(detail::peer_max_gpus));
    require(o_.world >= o_.gpus && o_.world % o_.gpus == 0 && o_.world / o_.gpus <= detail::peer_max_local,
            "peer allreduce: GMIs", o_.world,
            "a multiple of " + std::to_string(o_.gpus) + " GPUs, at most " + std::to_string(detail::peer_max_local) +
                " a GPU");
    require(o_.rank >= 0 && o_.rank < o_.world, "peer allreduce: rank", o_.rank, "0.." + std::to_string(o_.world - 1));
    require(count_ >= 1, "peer allreduce: floats", count_, ">= 1");
    require(buffer != nullptr, "peer allreduce: buffer", "a null pointer", "the GMI's device buffer");
    require(o_.blocks <= 65535u, "peer allreduce options.blocks", o_.blocks, "0..65535 (0: the default grid)");
    if (o_.chunk_floats == 0) o_.chunk_floats = detail::peer_chunk_floats;
    require(o_.producer_warps <= static_cast<unsigned>(detail::peer_warps), "peer allreduce options.producer_warps",
            o_.producer_warps,
            "0.." + std::to_string(detail::peer_warps) + " (0: the default, " +
                std::to_string(detail::peer_producer_warps) + "; " + std::to_string(detail::peer_warps) +
                ": every warp runs both phases in turn)");
    if (o_.producer_warps == 0) o_.producer_warps = detail::peer_producer_warps;
    args_.early_launch = o_.early_launch ? 1 : 0;
    if (o_.rank == 0) {
      segment_ = shm_segment::create(o_.tag, detail::peer_segment_bytes(), [&](void* p, std::size_t) {
        auto* c = new (p) detail::peer_control{};
        c->group.ranks = static_cast<std::uint32_t>(o_.world);
        c->gpus = static_cast<std::uint32_t>(o_.gpus);
        c->world = static_cast<std::uint32_t>(o_.world);
        c->copy_back = o_.copy_back ? 1 : 0;
        c->count = count_;
      });
    } else {
      segment_ = shm_segment::open(o_.tag, o_.timeout);
    }
    barrier_ = detail::group_barrier(&c()->group, segment_.name());
    try {
      setup();
    } catch (const gmi::error& e) {
      barrier_.mark_broken(e.what());  // the other GMIs fail now, not at their timeout
      teardown(false);
      throw;
    }
  }
  peer_allreduce(const peer_allreduce&) = delete;
  peer_allreduce& operator=(const peer_allreduce&) = delete;
  ~peer_allreduce() { teardown(true); }

  // Enqueues this GMI's part of one allreduce on s. Every GMI must call it once per round.
  void allreduce(cudaStream_t s) {
    barrier_.throw_if_broken();
    if (args_.early_launch) {
      cudaLaunchConfig_t config{};
      config.gridDim = dim3(blocks_);
      config.blockDim = dim3(detail::peer_threads);
      config.stream = s;
      cudaLaunchAttribute attribute{};
      attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
      attribute.val.programmaticStreamSerializationAllowed = 1;
      config.attrs = &attribute;
      config.numAttrs = 1;
      GMI_CUDA_TRY(cudaLaunchKernelEx(&config, detail::peer_allreduce_kernel, args_));
    } else {
      detail::peer_allreduce_kernel<<<blocks_, detail::peer_threads, 0, s>>>(args_);
    }
    GMI_CUDA_TRY(cudaGetLastError());
  }
  // Waits (bounded) for s, then check().
  void wait(cudaStream_t s) {
    cudaEvent_t e = nullptr;
    GMI_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    const cudaError_t rec = cudaEventRecord(e, s);
    cudaError_t q = cudaErrorNotReady;
    try {
      GMI_CUDA_TRY(rec);
      bounded_wait([&] { return (q = cudaEventQuery(e)) != cudaErrorNotReady || stalled(); },
                   [&] { check_peers(); }, o_.timeout, segment_.name() + ": waiting for this GMI's allreduce");
    } catch (...) {
      cudaEventDestroy(e);
      throw;
    }
    cudaEventDestroy(e);
    if (q != cudaErrorNotReady) GMI_CUDA_TRY(q);
    check();
  }
  // Throws comm_error when a GMI's kernel gave up waiting, the group was marked broken or a GMI's process is gone.
  void check() {
    barrier_.throw_if_broken();
    if (stalled()) {
      const std::string why = segment_.name() + ": a GMI's allreduce kernel gave up waiting for another GMI (a GMI "
                              "died, stopped calling or fell more than the timeout behind)";
      barrier_.mark_broken(why);
      throw comm_error(why);
    }
    check_peers();
  }
  // Stops every GMI's kernel at its next wait and records why.
  void mark_broken(const std::string& why) noexcept {
    if (stall_) stall_->store(1, std::memory_order_seq_cst);
    barrier_.mark_broken(why);
  }

  // Where this GMI reads the sum after its call: its own buffer (copy back) or its GPU's result.
  [[nodiscard]] const float* result() const noexcept { return o_.copy_back ? mine_ : args_.result[args_.gpu]; }
  [[nodiscard]] unsigned blocks() const noexcept { return blocks_; }
  [[nodiscard]] int chunks() const noexcept { return args_.chunks; }
  [[nodiscard]] unsigned producer_warps() const noexcept { return o_.producer_warps; }
  // Traces this GMI's call number `call` (counted from 1 over this object's calls): `stamps` (device memory,
  // blocks() x detail::peer_trace_points) gets the GPU clock of each block at each point (detail::peer_trace_points).
  void trace(unsigned long long* stamps, std::uint32_t call) noexcept {
    args_.trace = stamps;
    args_.trace_call = call;
  }
  [[nodiscard]] std::size_t count() const noexcept { return count_; }
  [[nodiscard]] const std::string& name() const noexcept { return segment_.name(); }

 private:
  [[nodiscard]] int per_gpu() const noexcept { return o_.world / o_.gpus; }
  [[nodiscard]] int gpu() const noexcept { return o_.rank / per_gpu(); }
  [[nodiscard]] int local() const noexcept { return o_.rank % per_gpu(); }
  detail::peer_control* c() const { return static_cast<detail::peer_control*>(segment_.data()); }
  [[nodiscard]] bool stalled() const noexcept { return stall_ && stall_->load(std::memory_order_acquire) != 0; }
  void check_peers() {
    try {
      barrier_.check_peers();
    } catch (const gmi::error& e) {
      mark_broken(e.what());
      throw;
    }
  }
  void wait_for(const std::function<bool()>& ready, const std::string& what) {
    bounded_wait([&] { return ready() || barrier_.broken(); }, [&] { barrier_.check_peers(); }, o_.timeout,
                 segment_.name() + ": " + what, long_wait());
    barrier_.throw_if_broken();
  }

  void setup() {
    auto* ctl = c();
    if (ctl->gpus != static_cast<std::uint32_t>(o_.gpus) || ctl->world != static_cast<std::uint32_t>(o_.world) ||
        ctl->count != count_ || ctl->copy_back != (o_.copy_back ? 1u : 0u)) {
      throw config_error(got_need("peer allreduce " + segment_.name() + " on GMI " + std::to_string(o_.rank),
                                  shape(o_.gpus, o_.world, count_, o_.copy_back),
                                  shape(static_cast<int>(ctl->gpus), static_cast<int>(ctl->world), ctl->count,
                                        ctl->copy_back != 0) + " as on GMI 0"));
    }
    ctl->group.pids[o_.rank].store(::getpid(), std::memory_order_release);
    // The m grids of a GPU wait for each other, so together they must fit on it at once: a larger grid would
    // wait for SMs that spinning blocks hold, until the deadline.
    int device = 0, sms = 0, resident = 0;
    GMI_CUDA_TRY(cudaGetDevice(&device));
    GMI_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    GMI_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, detail::peer_allreduce_kernel,
                                                               detail::peer_threads, 0));
    const int fit = std::max(1, sms * std::max(resident, 1) / per_gpu());
    blocks_ = o_.blocks ? o_.blocks : static_cast<unsigned>(std::max(1, sms * std::clamp(resident, 1, 2) / per_gpu()));
    if (blocks_ > static_cast<unsigned>(fit)) {
      throw config_error(got_need("peer allreduce: blocks a GMI (options.blocks)", blocks_,
                                  "<= " + std::to_string(fit) + " (" + std::to_string(sms) + " SMs x " +
                                      std::to_string(resident) + " resident blocks / " + std::to_string(per_gpu()) +
                                      " GMIs a GPU: the GPU's grids must fit on it together)"));
    }
    require(detail::peer_layout{o_.gpus, per_gpu(), static_cast<int>(blocks_)}.slots() <= detail::peer_max_slots,
            "peer allreduce: GMIs a GPU x blocks a GMI", per_gpu() * static_cast<int>(blocks_),
            "<= " + std::to_string(detail::peer_max_slots - 2 * per_gpu() - 1) + " (flag words)");
    // Block b of GMI r pairs with block b of GMI r on every GPU: one grid for all, GMI 0's.
    if (o_.rank == 0) {
      ctl->chunk_floats.store(o_.chunk_floats, std::memory_order_relaxed);
      ctl->blocks.store(blocks_, std::memory_order_release);
    }
    wait_for([&] { return ctl->blocks.load(std::memory_order_acquire) != 0; }, "waiting for GMI 0's grid");
    if (ctl->chunk_floats.load(std::memory_order_relaxed) != o_.chunk_floats) {
      throw config_error(got_need("peer allreduce: floats a chunk on GMI " + std::to_string(o_.rank), o_.chunk_floats,
                                  std::to_string(ctl->chunk_floats.load()) + " as on GMI 0 (set options.chunk_floats alike)"));
    }
    if (ctl->blocks.load(std::memory_order_acquire) != blocks_) {
      throw config_error(got_need("peer allreduce: blocks a GMI on GMI " + std::to_string(o_.rank), blocks_,
                                  std::to_string(ctl->blocks.load()) + " as on GMI 0 (every GMI's grid must match: set "
                                  "options.blocks alike, on GPUs alike)"));
    }
    void* page = detail::peer_stall_page(segment_.data());
    GMI_CUDA_TRY(cudaHostRegister(page, detail::peer_page, cudaHostRegisterMapped | cudaHostRegisterPortable));
    registered_ = page;
    stall_ = static_cast<std::atomic<std::uint32_t>*>(page);
    void* device_page = nullptr;
    GMI_CUDA_TRY(cudaHostGetDevicePointer(&device_page, page, 0));
    // The GPU's block, on its first GMI; every GMI's buffer.
    const std::uint64_t stride = detail::peer_stride(count_, o_.gpus, per_gpu());
    if (local() == 0) {
      const std::size_t bytes = detail::peer_block_bytes(count_, o_.gpus, per_gpu());
      GMI_CUDA_TRY(cudaMalloc(&own_block_, bytes));
      GMI_CUDA_TRY(cudaMemset(own_block_, 0, bytes));
      GMI_CUDA_TRY(cudaDeviceSynchronize());
      ctl->gpu_block[gpu()] = export_buffer(own_block_, bytes);
      ctl->gpu_ready[gpu()].store(1, std::memory_order_release);
    }
    ctl->buffer[o_.rank] = export_buffer(mine_, count_ * sizeof(float));
    ctl->buffer_ready[o_.rank].store(1, std::memory_order_release);
    wait_for(
        [&] {
          for (int j = 0; j < o_.gpus; ++j)
            if (ctl->gpu_ready[j].load(std::memory_order_acquire) == 0) return false;
          for (int r = 0; r < per_gpu(); ++r)
            if (ctl->buffer_ready[gpu() * per_gpu() + r].load(std::memory_order_acquire) == 0) return false;
          return true;
        },
        "waiting for every GPU's block and every buffer of GPU " + std::to_string(gpu()));
    // One process per GMI: IPC cannot map a buffer of the same process.
    for (int r = 0; r < o_.world; ++r) {
      if (r != o_.rank && ctl->buffer[r].exporter_pid == ::getpid() && r / per_gpu() == gpu()) {
        throw config_error(got_need("peer allreduce: GMIs " + std::to_string(o_.rank) + " and " + std::to_string(r),
                                    "one process", "one process a GMI (MPS GMIs)"));
      }
    }
    mappings_.reserve(static_cast<std::size_t>(o_.gpus + per_gpu()));
    detail::peer_args& a = args_;
    a.count = count_;
    a.stride = stride;
    a.n = o_.gpus;
    a.m = per_gpu();
    a.gpu = gpu();
    a.r = local();
    for (int j = 0; j < o_.gpus; ++j) {
      char* base = nullptr;
      if (j == gpu() && own_block_) {
        base = static_cast<char*>(own_block_);
      } else {
        mappings_.emplace_back(ctl->gpu_block[j], /*peer=*/j != gpu());  // refuses a GPU this one cannot reach
        base = mappings_.back().as<char>();
      }
      a.flags[j] = reinterpret_cast<std::uint32_t*>(base);
      a.result[j] = reinterpret_cast<float*>(base + detail::peer_result_offset());
      a.landing[j] = reinterpret_cast<float*>(base + detail::peer_landing_offset(count_));
    }
    for (int r = 0; r < per_gpu(); ++r) {
      if (r == local()) {
        a.local[r] = mine_;
        continue;
      }
      mappings_.emplace_back(ctl->buffer[gpu() * per_gpu() + r]);
      a.local[r] = mappings_.back().as<const float>();
    }
    a.mine = o_.copy_back ? mine_ : nullptr;
    a.abort = static_cast<const volatile std::uint32_t*>(device_page);
    a.stalled = static_cast<std::uint32_t*>(device_page);
    a.timeout_ns = static_cast<unsigned long long>(o_.timeout.count()) * 1000000ull;
    // Chunks of about chunk_floats for each block's piece of a part, at most peer_max_chunks.
    const std::uint64_t piece = count_ / static_cast<std::uint64_t>(o_.gpus * per_gpu()) / blocks_;
    a.chunks = static_cast<int>(std::clamp<std::uint64_t>((piece + o_.chunk_floats - 1) / o_.chunk_floats, 1,
                                                          detail::peer_max_chunks));
    a.producers = o_.producer_warps >= static_cast<unsigned>(detail::peer_warps) ? 0 : static_cast<int>(o_.producer_warps) * 32;
  }

  // Lets go of every mapping; a GMI whose memory others map (its buffer, its GPU's block) waits, bounded, until
  // every GMI has let go before it returns (then the caller may free the buffer); a broken group skips the wait.
  void teardown(bool wait) noexcept {
    if (!segment_.data()) return;
    if (stall_) cudaDeviceSynchronize();  // this GMI's kernels no longer touch anyone's memory
    mappings_.clear();
    if (stall_) c()->let_go.fetch_add(1, std::memory_order_acq_rel);
    bool all = false;
    if (stall_ && wait && !barrier_.broken()) {
      try {
        wait_for([&] { return c()->let_go.load(std::memory_order_acquire) == c()->world; },
                 "waiting for every GMI to let go of the shared buffers");
        all = true;
      } catch (...) {
      }
    }
    if (own_block_ && all) cudaFree(own_block_);  // else still mapped elsewhere: freed when this process ends
    own_block_ = nullptr;
    if (registered_) cudaHostUnregister(registered_);
    registered_ = nullptr;
    stall_ = nullptr;
  }
  static std::string shape(int gpus, int world, std::uint64_t count, bool copy_back) {
    return std::to_string(gpus) + " GPUs, " + std::to_string(world) + " GMIs, " + std::to_string(count) + " floats, " +
           (copy_back ? "copy back" : "shared result");
  }

  peer_allreduce_options o_;
  float* mine_ = nullptr;
  std::size_t count_ = 0;
  shm_segment segment_;
  detail::group_barrier barrier_;
  void* registered_ = nullptr;                   // the stall word's page (this process's view), registered
  std::atomic<std::uint32_t>* stall_ = nullptr;  // non-zero: a kernel gave up, or the group broke
  void* own_block_ = nullptr;                    // on each GPU's first GMI: the GPU's block (cudaMalloc)
  std::vector<ipc_mapping> mappings_;
  detail::peer_args args_{};
  unsigned blocks_ = 1;
};

}  // namespace gmi::comm
