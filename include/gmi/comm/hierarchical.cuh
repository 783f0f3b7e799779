#pragma once
// gmi::comm::hierarchical<Inter>: the allreduce of flat float gradients over m GMIs on each of n GPUs.
// (a) the GPU's leader GMI sums the m buffers with one kernel, (b) the leaders allreduce across GPUs with
// NCCL on their own stream, (c) the leader writes the result into every GMI's buffer (or, with copy_back off,
// every GMI reads the sum from the leader's buffer: GMIs of one GPU share its memory, so m copies of one result
// are optional); large buffers go in chunks so (a), (b) and (c) of different chunks overlap. NCCL never sees
// two ranks on one GPU. With reducer::lanes (the paper's RP plan on top of an on-device reduce-scatter) every GMI
// sums a slice of every buffer and allreduces that slice itself over its lane, an NCCL communicator of the GMIs
// with its local rank on every GPU; the m lanes run side by side. The handshake between a GPU's GMIs is host-side
// by default (events plus generation counters in shared memory); a device-side one (stream memory operations) is
// there for measurement. See docs/comm.md for the steps and their waits.

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gmi/comm/detail/flag_kernel.cuh>
#include <gmi/comm/device_share.hpp>
#include <gmi/comm/intra_gpu_reduce.cuh>
#include <gmi/comm/ip_allreduce.hpp>
#include <gmi/comm/nccl.hpp>
#include <gmi/comm/row_exchange_across_gpus.hpp>
#include <gmi/comm/shm_segment.hpp>
#include <gmi/comm/wait.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/event.hpp>
#include <gmi/cuda/graph.hpp>
#include <gmi/comm/row_exchange.hpp>
#include <gmi/cuda/stream.hpp>

namespace gmi::comm {

// The policy a pipeline names: gmi::comm::hierarchical<gmi::comm::nccl>.
template <class Inter = nccl>
struct hierarchical {
  static_assert(communicator_policy<Inter>, "hierarchical<Inter>: Inter must be a communicator policy (gmi::comm::nccl)");
  using communicator_concept = communicator_tag;
  using inter = Inter;
  static constexpr const char* name = "hierarchical";
  static constexpr bool reduces = true;
};

// How the GMIs of one GPU see each other's buffers.
enum class sharing {
  in_process,  // green-context GMIs as threads of one process: plain pointers and events
  ipc,         // MPS GMIs as processes: CUDA IPC memory and event handles through shared memory
};

// How a GMI and its leader tell each other "my gradient is on the device" and "the sum is in your buffer".
enum class handshake {
  automatic,  // kernel between MPS clients (sharing::ipc on a device whose contexts MPS shares), else host. Measured
              // on 4 x H200 under MPS: kernel as fast as host or faster with the leader reducer. Without MPS the
              // GMI processes time-slice the GPU and a polling kernel holds its slice (H100: synchronous PPO over 4
              // processes at 112 k samples/s). Device waits on mapped host memory cost ms per call.
  host,       // CUDA events plus generation counters in shared memory; each side's host waits (spinning) for the other
  device,     // stream memory operations on flags in pinned shared memory: the streams wait, no host waits at all
              // (sharing::ipc only: streams of one process may share a hardware queue, and a wait queued
              // ahead of its write there would never finish)
  kernel,     // one-thread kernels set and poll flags in device memory: no host waits, no interprocess event
              // calls (sharing::ipc only, for the same reason as device)
};

// Which GMIs run step (a), the intra-GPU sum.
enum class reducer {
  automatic,  // leader (measured on 4 x H200 under MPS: every_gmi was slower where every GMI may use every SM, and
              // only helped with copy_back when each MPS GMI had 1/m of the SMs; see docs/comm.md)
  leader,     // the leader sums all m buffers with one kernel on its own share of the SMs (a MPS client gets 1/m)
  every_gmi,  // GMI r sums slice r of every buffer on its own SMs (all of the GPU's SMs work on (a)); the
              // leader then runs NCCL over the sum; with copy_back each GMI copies the sum into its buffer
              // (host handshake only)
  lanes,      // GMI r sums slice r of every buffer into the GPU's result buffer, then allreduces that slice across
              // GPUs over its lane (an NCCL communicator of GMI r of every GPU; every GMI passes its own): m NCCL
              // calls of 1/m of the bytes side by side, no leader in the way (kernel handshake only; with one GPU
              // the same as every_gmi)
};

struct hierarchical_options {
  std::string tag;          // names this GPU's group; the same on every GMI of the GPU, unique per run and GPU
  int local_rank = 0;       // 0 is the GPU's leader
  int local_size = 1;       // GMIs on this GPU
  sharing mode = sharing::ipc;
  milliseconds timeout = default_timeout();
  std::size_t chunk_bytes = 0;  // 0: one chunk up to 32 MiB, else max(32 MiB, bytes / 4) (GMI_HIER_CHUNK_BYTES overrides)
  // Chunked calls: the grid of a sum kernel, (a) of every chunk but the first and (c) of every chunk but the last,
  // that may run beside an NCCL call of another chunk, in blocks for the whole GPU; 0: uncapped
  // (GMI_HIER_OVERLAP_BLOCKS overrides). A small grid sums slower but leaves HBM and SMs to NCCL.
  unsigned overlap_blocks = 0;
  bool blocking = true;         // allreduce returns after the result is in this GMI's buffer (errors surface there)
  // false: step (c) is skipped; the sum goes to one result buffer the leader owns (not its gradient buffer, which
  // the leader refills while others still read) and every GMI reads it through result(), stream-ordered after
  // its allreduce and before its next one (the next call overwrites it).
  // The leader's choice holds for the group; members must ask for the same.
  bool copy_back = true;
  handshake sync = handshake::automatic;  // the leader's choice holds for the group (GMI_HIER_HANDSHAKE=host|device|kernel)
  reducer reduce = reducer::automatic;    // every GMI of a GPU must ask for the same (GMI_HIER_REDUCE=leader|every_gmi|lanes)
};

// Host-side timings of this GMI's last allreduce call, in microseconds (for diagnosis; a few clock reads).
struct hier_call_timing {
  double host_wait_us = 0;    // waiting on the host for the other side (host handshake; 0 with device)
  double enqueue_us = 0;      // enqueueing the device work (waits, kernels, NCCL, flag writes, events)
  double device_wait_us = 0;  // waiting for the device to finish (blocking calls)
  double total_us = 0;
};

namespace detail {
// reducer::every_gmi: each GMI's slices of the chunks, each followed by an event the leader's NCCL waits on.
inline constexpr int max_hier_chunks = 8;
struct hier_member {
  alignas(64) std::atomic<std::uint64_t> ready_gen;
  alignas(64) std::atomic<std::uint64_t> sliced_gen;  // every_gmi: the last generation whose slices are enqueued
  // The last generation whose done event this GMI has waited on (enqueued the wait for): after that the leader
  // may destroy the event. detached: this GMI's handle is gone (it will wait on nothing more).
  std::atomic<std::uint64_t> consumed_gen;
  std::atomic<std::uint32_t> detached;
  std::atomic<std::int32_t> pid;
  std::atomic<std::uint32_t> attached;
  std::uint64_t count;
  ipc_buffer_handle buffer;
  ipc_event_handle ready_event;
  std::uint64_t raw_buffer;  // in_process mode
  std::uint64_t raw_event;
  ipc_event_handle slice_event[max_hier_chunks];  // every_gmi: recorded after this GMI's slice of chunk i
  std::uint64_t raw_slice_event[max_hier_chunks];
};
struct hier_control {
  alignas(64) std::atomic<std::uint64_t> done_gen;
  std::atomic<std::uint32_t> setup_state;  // 0 pending, 1 ready (errors go through the barrier's broken flag)
  std::uint32_t members;
  std::uint32_t mode;
  std::uint32_t device_handshake;  // the leader's choice: 1 device, 0 host
  std::uint32_t copy_back;         // the leader's choice: 0 members read the leader's buffer (result())
  std::uint32_t every_gmi;         // the leader's choice: 0 leader, 1 every_gmi, 2 lanes (reducer_code())
  std::uint32_t across_gpus;       // 1: the leader has an NCCL communicator (the group spans GPUs)
  ipc_event_handle done_event;
  std::uint64_t raw_done_event;
  ipc_buffer_handle flags;         // kernel handshake: the flag words in the leader's device memory
  ipc_buffer_handle result;        // the GPU's result buffer, where there is one (result())
  std::uint64_t raw_result;
  std::uint32_t has_result;
  hier_member member[max_local_gmis];
  group_control group;  // broken flag, reason, pids (shared with ip_allreduce's liveness checks)
};
// The device handshake's flags, in pages of their own that every process registers with CUDA (mapped): streams
// write and wait on them with cuStreamWriteValue32/cuStreamWaitValue32, hosts read them and, when the group
// breaks, release every queued wait by writing them. 32-bit generations compared cyclically (GEQ).
struct hier_flag {
  alignas(128) std::atomic<std::uint32_t> v;
};
struct hier_flags {
  hier_flag ready[max_local_gmis];  // GMI r's last generation whose gradient is on the device
  hier_flag done;                   // the last generation whose sum is in every GMI's buffer
  hier_flag abort;                  // non-zero: kernels touch no buffer (the group broke)
  hier_flag stalled;                // kernel handshake: a flag kernel gave up waiting (deadline or abort)
};
static_assert(sizeof(std::atomic<std::uint32_t>) == 4 && std::atomic<std::uint32_t>::is_always_lock_free);
inline constexpr std::size_t hier_page = 4096;
inline constexpr std::size_t hier_flags_bytes = (sizeof(hier_flags) + hier_page - 1) / hier_page * hier_page;
// Flags start on the first page boundary after the control block (data() has the same page offset everywhere).
inline constexpr std::size_t hier_segment_bytes = sizeof(hier_control) + hier_page + hier_flags_bytes;
inline hier_flags* hier_flags_in(void* data) {
  const auto at = (reinterpret_cast<std::uintptr_t>(data) + sizeof(hier_control) + hier_page - 1) / hier_page * hier_page;
  return reinterpret_cast<hier_flags*>(at);
}

// cuStreamWaitValue32 / cuStreamWriteValue32 through the runtime's driver entry points (no link to libcuda).
struct stream_memops {
  using wait_fn = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
  using write_fn = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
  wait_fn wait = nullptr;
  write_fn write = nullptr;
  static const stream_memops& get() {
    static const stream_memops m{cuda::driver_entry<wait_fn>("cuStreamWaitValue32"),
                                 cuda::driver_entry<write_fn>("cuStreamWriteValue32")};
    return m;
  }
  [[nodiscard]] bool available() const noexcept { return wait && write; }
};
// A generation far ahead of any queued wait: written into every flag to release waits when the group breaks.
inline constexpr std::uint32_t hier_release_ahead = 1u << 30;
}  // namespace detail

// One GMI's handle on the hierarchical allreduce. Build it on every GMI of every GPU with the same count.
class hierarchical_allreduce {
 public:
  // buffer: this GMI's `count` floats on the current device (with sharing::ipc, the base of its own cudaMalloc).
  // leaders: the NCCL communicator of the GPUs' leaders, on local rank 0 only; nullptr with one GPU. With
  // reducer::lanes, every GMI's lane instead: the communicator of the GMIs of its local rank on every GPU (ranked
  // by GPU; lane_max_ctas() in nccl.hpp gives its NCCL options' max_ctas).
  hierarchical_allreduce(hierarchical_options options, float* buffer, std::size_t count,
                         nccl_communicator* leaders = nullptr)
      : o_(std::move(options)), buffer_(buffer), count_(count), leaders_(leaders) {
    require(o_.local_size >= 1 && o_.local_size <= max_local_gmis, "hierarchical local_size", o_.local_size,
            "1.." + std::to_string(max_local_gmis));
    require(o_.local_rank >= 0 && o_.local_rank < o_.local_size, "hierarchical local_rank", o_.local_rank,
            "0.." + std::to_string(o_.local_size - 1));
    if (const auto r = env_var::choice<reducer>("GMI_HIER_REDUCE", {{"leader", reducer::leader},
                                                                        {"every_gmi", reducer::every_gmi},
                                                                        {"lanes", reducer::lanes},
                                                                        {"automatic", reducer::automatic}})) {
      o_.reduce = *r;
    }
    require(leaders == nullptr || o_.local_rank == 0 || o_.reduce == reducer::lanes,
            "hierarchical NCCL communicator on local rank", o_.local_rank,
            "only the leader (local rank 0), or every GMI with reducer::lanes");
    if (const char* c = std::getenv("GMI_HIER_CHUNK_BYTES")) o_.chunk_bytes = std::stoull(c);
    if (const auto b = env_var::integer("GMI_HIER_OVERLAP_BLOCKS")) {
      require(*b >= 0, "GMI_HIER_OVERLAP_BLOCKS", *b, ">= 0 blocks (0: uncapped)");
      o_.overlap_blocks = static_cast<unsigned>(*b);
    }
    if (const auto h = env_var::choice<handshake>("GMI_HIER_HANDSHAKE", {{"host", handshake::host},
                                                                             {"device", handshake::device},
                                                                             {"kernel", handshake::kernel},
                                                                             {"automatic", handshake::automatic}})) {
      o_.sync = *h;
    }
    if (o_.reduce != reducer::leader && o_.reduce != reducer::automatic && o_.sync == handshake::device) {
      throw config_error(got_need("hierarchical reducer", std::string(o_.reduce == reducer::lanes ? "lanes" : "every_gmi") +
                                  " with the device handshake",
                                  "the host handshake (every GMI waits for the others' gradients on its host)"));
    }
    every_gmi_ = o_.local_size > 1 && o_.sync != handshake::device &&
                 (o_.reduce == reducer::every_gmi || o_.reduce == reducer::lanes);
    if (o_.sync == handshake::automatic && o_.mode == sharing::ipc && mps_shared_device()) o_.sync = handshake::kernel;
    lanes_ = every_gmi_ && o_.reduce == reducer::lanes;
    if (lanes_ && o_.sync != handshake::kernel) {
      throw config_error(got_need("hierarchical reducer", "lanes with the " + std::string(o_.sync == handshake::host ? "host" : "automatic (host)") +
                                  " handshake", "the kernel handshake (GMI processes that are MPS clients, or "
                                  "handshake::kernel): each GMI's NCCL call waits on the device for the GPU's gradients"));
    }
    if ((o_.sync == handshake::device || o_.sync == handshake::kernel) && o_.mode != sharing::ipc) {
      throw config_error(got_need("hierarchical handshake", std::string(o_.sync == handshake::kernel ? "kernel" : "device") +
                                  " with sharing::in_process",
                                  "sharing::ipc (streams of one process may share a hardware queue, where a "
                                  "device-side wait queued ahead of its write never finishes); use host"));
    }
    const std::size_t bytes = count * sizeof(float);
    // Measured on 4 x H200 under MPS (bench/results/*-chunks.jsonl): 16 MB went faster in one piece than in two
    // 8 MiB chunks (NCCL loses more on smaller messages than the overlap gains), 256 MB fastest in 4 chunks.
    chunk_floats_ = o_.chunk_bytes ? o_.chunk_bytes / sizeof(float)
                                   : (bytes <= (32u << 20) ? count : std::max<std::size_t>((32u << 20) / 4, (count + 3) / 4));
    // every_gmi: at most max_hier_chunks chunks (one exported event per GMI and chunk); lanes export none.
    const std::size_t most_chunks = lanes_ ? max_lane_chunks : detail::max_hier_chunks;
    if (every_gmi_) chunk_floats_ = std::max(chunk_floats_, (count + most_chunks - 1) / most_chunks);
    chunk_floats_ = std::max<std::size_t>(64, (chunk_floats_ + 63) / 64 * 64);  // chunks keep 256-byte alignment
    chunks_ = std::max<std::size_t>(1, (count_ + chunk_floats_ - 1) / chunk_floats_);
    // One GMI per GPU has no intra-GPU step to overlap with NCCL: one call, as a flat allreduce.
    single_ = leaders_ == nullptr || count_ <= chunk_floats_ || o_.local_size == 1;
    if (lanes_ && leaders_ && chunks_ > 1) {  // each GMI's NCCL calls on a stream of their own, beside its sums
      int least = 0, greatest = 0;
      GMI_CUDA_TRY(cudaDeviceGetStreamPriorityRange(&least, &greatest));
      lane_stream_.emplace(greatest);
    }
    try {
      if (o_.local_rank == 0) setup_leader(); else setup_member();
    } catch (const gmi::error& e) {
      if (segment_.data()) break_group(e.what());  // the GPU's other GMIs fail now, not at their timeout
      if (leaders_) leaders_->abort();
      unregister_flags();
      throw;
    }
  }
  hierarchical_allreduce(const hierarchical_allreduce&) = delete;
  hierarchical_allreduce& operator=(const hierarchical_allreduce&) = delete;

  // Host handshake: the leader owns the done event every member waits on: a member that saw the last
  // generation's done_gen but has not yet enqueued its cudaStreamWaitEvent would use a destroyed event, so the
  // leader waits until each member has consumed the last generation or detached. Device handshake: each GMI
  // waits until its stream is past its last wait on the flags, then unregisters them. All bounded; a broken
  // group first releases every queued device wait.
  ~hierarchical_allreduce() {
    if (!segment_.data()) return;
    if ((device_ || kernel_) && generation_ > 0 && tail_) {
      const auto tail_done = [&] { return tail_->ready(); };
      try {
        if (barrier_.broken()) release_device_waits();
        bounded_wait(tail_done, [&] { check_group(); }, o_.timeout, msg_device_);
      } catch (...) {
        release_device_waits();
        try {
          bounded_wait(tail_done, [] {}, milliseconds(2000), msg_device_);
        } catch (...) {
          flags_leaked_ = true;  // the stream may still read the pages: keep them pinned (the process is failing)
        }
      }
    }
    if (is_leader() && (!device_ || sum_ != nullptr)) {
      try {
        bounded_wait(
            [&] {
              if (barrier_.broken()) return true;
              for (int r = 1; r < o_.local_size; ++r) {
                const auto& m = c()->member[r];
                const bool gone = m.detached.load(std::memory_order_acquire) != 0;
                // Members map the result buffer and the flag words this destructor frees: wait for them to let go.
                if ((sum_ != nullptr || kernel_) && !gone) return false;
                if (m.consumed_gen.load(std::memory_order_acquire) < generation_ && !gone) return false;
              }
              return true;
            },
            [&] { check_group(); }, o_.timeout, segment_.name() + ": leader waiting for its GMIs to finish",
            long_wait());
      } catch (...) {  // broken, dead or timed out: nobody is left to use the event, or nothing more can be done
      }
    } else if (!is_leader()) {
      result_mapping_.reset();  // before "detached": the leader frees the result buffer once every GMI let go
      flag_mapping_.reset();
      c()->member[o_.local_rank].detached.store(1, std::memory_order_release);
    }
    unregister_flags();
  }

  [[nodiscard]] bool is_leader() const noexcept { return o_.local_rank == 0; }
  [[nodiscard]] std::size_t count() const noexcept { return count_; }
  [[nodiscard]] std::size_t chunk_bytes() const noexcept { return chunk_floats_ * sizeof(float); }
  [[nodiscard]] bool broken() const noexcept { return barrier_.broken(); }
  // The handshake the group's leader chose (host or device).
  [[nodiscard]] handshake sync() const noexcept {
    return device_ ? handshake::device : kernel_ ? handshake::kernel : handshake::host;
  }
  [[nodiscard]] const hier_call_timing& last_timing() const noexcept { return timing_; }
  [[nodiscard]] bool copy_back() const noexcept { return o_.copy_back; }
  // Who ran step (a): every GMI of the GPU on its slice (and with lanes step (b) too), or the leader alone.
  [[nodiscard]] reducer reduced_by() const noexcept {
    return lanes_ ? reducer::lanes : every_gmi_ ? reducer::every_gmi : reducer::leader;
  }
  // Where this GMI reads the sum: its own buffer (copy_back or one GMI per GPU), else the GPU's result buffer.
  [[nodiscard]] const float* result() const noexcept { return sum_ != nullptr && !o_.copy_back ? sum_ : buffer_; }

  // In place: this GMI's buffer becomes the sum over every GMI of every GPU. The buffer's producer must have
  // enqueued its writes on `stream`; later work on `stream` sees the result. Non-blocking calls return once
  // the work is enqueued; call wait(stream) where the result is needed on the host (errors surface there).
  //
  // On a stream that is capturing a CUDA graph (replayable() only) the call is recorded, not run: its generation
  // comes from this GMI's device counter, so every replay is a new call; tell replayed() after each launch.
  void allreduce(cudaStream_t stream) {
    const auto t0 = clock::now();
    const bool captured = cuda::is_capturing(stream);
    if (captured && !replayable()) {
      throw config_error(got_need("hierarchical allreduce captured into a CUDA graph on " + segment_.name(),
                                  o_.blocking ? "a blocking call" : "a handshake with host waits",
                                  "a non-blocking call with the kernel handshake, or one GMI per GPU in one chunk"));
    }
    const std::uint64_t g = captured ? 0 : ++generation_;
    try {
      if (captured && !kernel_) enqueue_single(stream);  // one GMI per GPU: NCCL alone, nothing to hand over
      else if (kernel_) run_kernel(stream, g, t0, captured);
      else if (every_gmi_) run_every_gmi(stream, g, t0);
      else if (is_leader()) run_leader(stream, g, t0);
      else run_member(stream, g, t0);
    } catch (const gmi::error& e) {
      break_group(e.what());
      if (leaders_) leaders_->abort();  // the other GPUs' leaders then fail at their deadline, not hang
      throw;
    }
  }

  // A kernel's way to sum this GMI's buffer over the GPU's GMIs from inside the kernel (comm/row_exchange.cuh):
  // every GMI's buffer, the group's flags and a call counter of this GMI's own. There is one with the kernel
  // handshake (MPS GMIs), or with one GMI per GPU; none otherwise (threads of one process may share a hardware
  // queue). With several GPUs there is one only with `across`, the level where the GPUs' sums meet (built on
  // every GMI of the host over this buffer's size), since the GPU's sum alone is not the group's. The exchange
  // and allreduce calls use separate flags and may alternate; a stalled exchange shows up at replayed() and
  // wait(), or with `across` at its check().
  [[nodiscard]] std::optional<comm::row_exchange> row_exchange(const row_exchange_across_gpus* across = nullptr) {
    const bool several_gpus = leaders_ != nullptr || c()->across_gpus != 0;
    if (several_gpus != (across != nullptr)) return std::nullopt;
    const bool alone = o_.local_size == 1;
    if (alone && !across) return std::nullopt;  // one GMI on one GPU: nothing to exchange
    if (!alone && (!kernel_ || peer_rows_.empty())) return std::nullopt;
    if (!exchange_counter_) {
      exchange_counter_.emplace(1);
      exchange_counter_->fill_bytes(0, nullptr);
      GMI_CUDA_TRY(cudaDeviceSynchronize());
    }
    static_assert(comm::row_exchange::max_members == max_local_gmis);
    comm::row_exchange x;
    if (alone) x.rows[0] = buffer_;
    for (std::size_t k = 0; k < peer_rows_.size(); ++k) x.rows[k] = peer_rows_[k];
    x.count = count_;
    x.rank = o_.local_rank;
    x.size = o_.local_size;
    if (!alone) {
      x.posted = flag_words_ + detail::posted_slot(0) * detail::flag_words_apart;
      x.released = flag_words_ + detail::released_slot(0) * detail::flag_words_apart;
      x.apart = detail::flag_words_apart;
      x.abort = abort_dev_;
      x.stalled = stalled_dev_;
    }
    x.counter = exchange_counter_->data();
    x.timeout_ns = static_cast<unsigned long long>(o_.timeout.count()) * 1000000ull;
    if (across) across->attach(x);
    return x;
  }

  // Whether a CUDA graph may capture allreduce and replay it: the call enqueues device work only (non-blocking;
  // the kernel handshake, whose generations a device counter follows, or one GMI per GPU in one chunk).
  [[nodiscard]] bool replayable() const noexcept {
    return !o_.blocking && !device_ && (kernel_ || (o_.local_size == 1 && single_));
  }

  // After a launch on `stream` of a graph that holds `calls` captured allreduce calls: the host's generation
  // follows the device counters, and the group is checked now and then (dead GMIs, NCCL errors, a handshake
  // kernel that gave up), as the calls themselves would.
  void replayed(std::size_t calls, cudaStream_t stream) {
    generation_ += calls;
    try {
      if (tail_) tail_->record(stream);
      barrier_.throw_if_broken();
      check_peers_now_and_then();
      if (leaders_) leaders_->check_async();
      if (kernel_ && flags_->stalled.v.load(std::memory_order_acquire) != 0) throw comm_error(msg_stalled());
    } catch (const gmi::error& e) {
      break_group(e.what());
      if (leaders_) leaders_->abort();
      throw;
    }
  }

  // Bounded wait (dead peers and NCCL errors checked) until `stream` has finished its work; throws if the group
  // broke. A blocking allreduce ends with this.
  void wait(cudaStream_t stream) {
    try {
      wait_device(stream);
    } catch (const gmi::error& e) {
      break_group(e.what());
      if (leaders_) leaders_->abort();
      throw;
    }
  }

 private:
  using clock = std::chrono::steady_clock;
  // Whether contexts on the current device are shared through MPS (this process is an MPS client).
  static bool mps_shared_device() {
    int device = 0, on = 0;
    if (cudaGetDevice(&device) != cudaSuccess) return false;
    if (cudaDeviceGetAttribute(&on, cudaDevAttrMpsEnabled, device) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    return on != 0;
  }
  static double us(clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }
  static constexpr std::size_t max_lane_chunks = 64;

  detail::hier_control* c() const { return static_cast<detail::hier_control*>(segment_.data()); }
  std::uint32_t reducer_code() const noexcept { return lanes_ ? 2 : every_gmi_ ? 1 : 0; }

  // Every wait's health check: a dead GMI or a broken group also releases the device waits of this process.
  void check_group() {
    try {
      barrier_.check_peers();
    } catch (...) {
      release_device_waits();
      throw;
    }
  }
  void break_group(const std::string& why) noexcept {
    barrier_.mark_broken(why);
    release_device_waits();
  }
  // Kernels behind a released wait skip their buffers (abort first), then every flag jumps far ahead.
  void release_device_waits() noexcept {
    if (!flags_) return;
    flags_->abort.v.store(1, std::memory_order_seq_cst);
    const auto ahead = static_cast<std::uint32_t>(generation_) + detail::hier_release_ahead;
    for (auto& f : flags_->ready) f.v.store(ahead, std::memory_order_seq_cst);
    flags_->done.v.store(ahead, std::memory_order_seq_cst);
  }

  // Maps this process's view of the flag pages into the device's address space.
  void register_flags() {
    flags_ = detail::hier_flags_in(segment_.data());
    GMI_CUDA_TRY(cudaHostRegister(flags_, detail::hier_flags_bytes, cudaHostRegisterMapped | cudaHostRegisterPortable));
    registered_ = true;
    void* dev = nullptr;
    GMI_CUDA_TRY(cudaHostGetDevicePointer(&dev, flags_, 0));
    auto* d = static_cast<detail::hier_flags*>(dev);
    for (int r = 0; r < max_local_gmis; ++r) ready_dev_[r] = reinterpret_cast<CUdeviceptr>(&d->ready[r].v);
    done_dev_ = reinterpret_cast<CUdeviceptr>(&d->done.v);
    abort_dev_ = reinterpret_cast<const volatile std::uint32_t*>(&d->abort.v);
    stalled_dev_ = reinterpret_cast<std::uint32_t*>(&d->stalled.v);
  }
  void unregister_flags() noexcept {
    if (registered_ && !flags_leaked_) cudaHostUnregister(flags_);
    registered_ = false;
  }
  // Whether this device runs stream memory operations on the flags (one write and one wait on a scratch stream).
  bool probe_memops() {
    const auto& ops = detail::stream_memops::get();
    if (!ops.available()) return false;
    cuda::stream s;
    const CUstream cs = s.get();
    if (ops.write(cs, done_dev_, 0, CU_STREAM_WRITE_VALUE_DEFAULT) != CUDA_SUCCESS) return false;
    if (ops.wait(cs, done_dev_, 0, CU_STREAM_WAIT_VALUE_GEQ) != CUDA_SUCCESS) return false;
    return cudaStreamSynchronize(cs) == cudaSuccess;
  }
  void flag_write(cudaStream_t s, CUdeviceptr at, std::uint64_t g) {
    GMI_CUDA_TRY(detail::stream_memops::get().write(s, at, static_cast<std::uint32_t>(g), CU_STREAM_WRITE_VALUE_DEFAULT));
  }
  void flag_wait(cudaStream_t s, CUdeviceptr at, std::uint64_t g) {
    GMI_CUDA_TRY(detail::stream_memops::get().wait(s, at, static_cast<std::uint32_t>(g), CU_STREAM_WAIT_VALUE_GEQ));
  }

  void setup_messages() {
    msg_members_ = segment_.name() + ": leader waiting for the GPU's gradients";
    msg_leader_ = segment_.name() + ": GMI waiting for its leader's allreduce";
    msg_peers_ = segment_.name() + ": GMI waiting for the GPU's other gradients";
    msg_device_ = segment_.name() + ": waiting for the allreduce on the device";
  }

  void setup_leader() {
    // The control block is built before the segment is marked ready: a member opening it earlier would read
    // members == 0, or write its fields only to have them zeroed by this constructor.
    segment_ = shm_segment::create(o_.tag, detail::hier_segment_bytes, [&](void* p, std::size_t) {
      auto* fresh = new (p) detail::hier_control{};
      fresh->members = static_cast<std::uint32_t>(o_.local_size);
      fresh->mode = static_cast<std::uint32_t>(o_.mode);
      fresh->group.ranks = fresh->members;
      new (detail::hier_flags_in(p)) detail::hier_flags{};
    });
    setup_messages();
    auto* ctl = c();
    barrier_ = detail::group_barrier(&ctl->group, segment_.name());
    ctl->group.pids[0].store(::getpid());
    // The handshake: device only where asked for (ipc, several GMIs, stream memory operations work). Measured on
    // 4 x H200 under MPS, 1 MB to 256 MB: the device handshake took 0.6-17.8 ms a call, the host one 0.2-2.3 ms;
    // automatic means kernel between processes and host in-process.
    if (o_.mode == sharing::ipc && o_.local_size > 1 && o_.sync == handshake::device) {
      try {
        register_flags();
        device_ = probe_memops();
      } catch (const cuda_error&) {
        if (o_.sync == handshake::device) throw;
        device_ = false;
      }
      if (!device_ && o_.sync == handshake::device) {
        throw config_error(got_need("hierarchical handshake", "device, but stream memory operations (cuStreamWaitValue32 "
                                    "on registered host memory) fail on this device", "host or automatic"));
      }
      if (!device_) {
        unregister_flags();
        flags_ = nullptr;
        cudaGetLastError();  // a failed probe leaves no sticky error; keep it out of later checks
      }
    }
    ctl->device_handshake = device_ ? 1 : 0;
    // The kernel handshake: flags in device memory the members map, the abort and stall words in the shared
    // pages (mapped here and in every member).
    kernel_ = !device_ && o_.local_size > 1 && o_.sync == handshake::kernel;
    if (kernel_) {
      register_flags();
      flag_mem_.emplace(detail::flag_words);
      flag_mem_->fill_bytes(0, nullptr);
      counter_.emplace(1);
      counter_->fill_bytes(0, nullptr);
      GMI_CUDA_TRY(cudaDeviceSynchronize());  // zeros before any member maps them
      flag_words_ = flag_mem_->data();
      ctl->flags = export_buffer(flag_words_, detail::flag_words * sizeof(std::uint32_t));
      ctl->device_handshake = 2;
    }
    if (!device_ && !kernel_) {
      done_event_ = shared_event::create(o_.mode == sharing::ipc);
      if (o_.mode == sharing::ipc) ctl->done_event = done_event_.export_handle();
      ctl->raw_done_event = reinterpret_cast<std::uint64_t>(done_event_.get());
    }
    ctl->member[0].count = count_;
    ctl->copy_back = o_.copy_back ? 1 : 0;
    ctl->every_gmi = reducer_code();
    // The GPU's result buffer: where every GMI reads the sum (copy_back off), and where every_gmi's slices meet
    // for NCCL when there are several GPUs (the leader's buffer would be refilled while members still copy).
    if (o_.local_size > 1 && (!o_.copy_back || (every_gmi_ && leaders_))) {
      result_.emplace(count_);
      sum_ = result_->data();
      if (o_.mode == sharing::ipc) ctl->result = export_buffer(sum_, count_ * sizeof(float));
      ctl->raw_result = reinterpret_cast<std::uint64_t>(sum_);
      ctl->has_result = 1;
    }
    if (every_gmi_) {  // the members read the leader's buffer and wait on its ready event, as it does on theirs
      ready_event_ = shared_event::create(o_.mode == sharing::ipc);
      publish(ctl->member[0]);
    } else if (kernel_ && o_.mode == sharing::ipc) {  // for the members' row exchange
      ctl->member[0].buffer = export_buffer(buffer_, count_ * sizeof(float));
    }
    // Wait for every member to attach, then map their buffers and events.
    bounded_wait(
        [&] {
          for (int r = 1; r < o_.local_size; ++r) {
            if (ctl->member[r].attached.load(std::memory_order_acquire) == 0) return false;
          }
          return true;
        },
        [&] { check_group(); }, o_.timeout, segment_.name() + ": leader waiting for the GPU's GMIs to attach",
        long_wait());
    std::vector<const float*> inputs(o_.local_size, nullptr);
    std::vector<float*> members;
    inputs[0] = buffer_;
    for (int r = 1; r < o_.local_size; ++r) {
      auto& m = ctl->member[r];
      if (m.count != count_) {
        const std::string why = got_need("hierarchical allreduce: GMI " + std::to_string(r) + " of " + segment_.name() +
                                             " buffer floats", m.count, std::to_string(count_) + " as on its leader");
        barrier_.mark_broken(why);
        throw comm_error(why);
      }
      float* p = nullptr;
      if (o_.mode == sharing::ipc) {
        mappings_.emplace_back(m.buffer);
        p = mappings_.back().as<float>();
        if (!device_ && !kernel_) member_ready_.push_back(shared_event::open(m.ready_event));
      } else {
        p = reinterpret_cast<float*>(m.raw_buffer);
        member_ready_.push_back(shared_event::borrow(reinterpret_cast<cudaEvent_t>(m.raw_event)));
      }
      inputs[r] = p;
      members.push_back(p);
      if (every_gmi_ && !kernel_) peer_slices_.push_back(open_slice_events(m));
    }
    if (every_gmi_) build_slices(inputs);
    if (kernel_) peer_rows_ = inputs;
    ctl->across_gpus = leaders_ ? 1 : 0;
    // The kernels' arguments, once: (a) every buffer into the leader's, (c) the leader's into every member's,
    // and with one GPU every buffer into every buffer.
    const auto* skip = skip_word();
    sum_all_ = {};
    reduce_ = {};
    bcast_ = {};
    for (int k = 0; k < o_.local_size; ++k) {
      sum_all_.in[k] = inputs[k];
      sum_all_.out[k] = const_cast<float*>(inputs[k]);
      reduce_.in[k] = inputs[k];
    }
    sum_all_.inputs = sum_all_.outputs = reduce_.inputs = o_.local_size;
    reduce_.out[0] = gpu_sum();
    reduce_.outputs = 1;
    bcast_.in[0] = buffer_;
    bcast_.inputs = 1;
    for (std::size_t k = 0; k < members.size(); ++k) bcast_.out[k] = members[k];
    bcast_.outputs = static_cast<int>(members.size());
    sum_all_.count = reduce_.count = bcast_.count = count_;
    if (!o_.copy_back) bcast_.outputs = 0;  // (c) skipped: enqueue_* test outputs before launching
    sum_all_.skip_if_set = reduce_.skip_if_set = bcast_.skip_if_set = skip;
    if (!single_) {
      int least = 0, greatest = 0;
      GMI_CUDA_TRY(cudaDeviceGetStreamPriorityRange(&least, &greatest));
      reduce_stream_.emplace();
      nccl_stream_.emplace(greatest);
      bcast_stream_.emplace();
    }
    if (leaders_) check_sizes_across_gpus();
    if (device_ || kernel_) tail_.emplace();
    ctl->setup_state.store(1, std::memory_order_release);
  }

  void setup_member() {
    segment_ = shm_segment::open(o_.tag, o_.timeout);
    setup_messages();
    auto* ctl = c();
    barrier_ = detail::group_barrier(&ctl->group, segment_.name());
    require(ctl->members == static_cast<std::uint32_t>(o_.local_size), "hierarchical local_size", o_.local_size,
            std::to_string(ctl->members) + " as on the leader");
    auto& m = ctl->member[o_.local_rank];
    ctl->group.pids[o_.local_rank].store(::getpid());
    m.count = count_;
    ready_event_ = shared_event::create(o_.mode == sharing::ipc);
    publish(m);
    m.attached.store(1, std::memory_order_release);
    bounded_wait([&] { return ctl->setup_state.load(std::memory_order_acquire) == 1 || barrier_.broken(); },
                 [&] { check_group(); }, o_.timeout, segment_.name() + ": GMI waiting for its leader's setup",
                 long_wait());
    barrier_.throw_if_broken();
    if ((ctl->copy_back == 1) != o_.copy_back) {
      const std::string why = got_need("hierarchical copy_back on GMI " + std::to_string(o_.local_rank) + " of " +
                                           segment_.name(), o_.copy_back ? "true" : "false",
                                       std::string(ctl->copy_back ? "true" : "false") + " as on its leader");
      barrier_.mark_broken(why);
      throw config_error(why);
    }
    device_ = ctl->device_handshake == 1;
    kernel_ = ctl->device_handshake == 2;
    if (device_) {
      register_flags();
      tail_.emplace();
    } else if (kernel_) {
      register_flags();
      flag_mapping_.emplace(ctl->flags);
      flag_words_ = flag_mapping_->as<std::uint32_t>();
      counter_.emplace(1);
      counter_->fill_bytes(0, nullptr);
      GMI_CUDA_TRY(cudaDeviceSynchronize());
      tail_.emplace();
    } else {
      done_event_ = o_.mode == sharing::ipc ? shared_event::open(ctl->done_event)
                                            : shared_event::borrow(reinterpret_cast<cudaEvent_t>(ctl->raw_done_event));
    }
    if (ctl->every_gmi != reducer_code()) {
      static constexpr const char* names[] = {"leader", "every_gmi", "lanes"};
      const std::string why = got_need("hierarchical reducer on GMI " + std::to_string(o_.local_rank) + " of " +
                                           segment_.name(), names[reducer_code()],
                                       std::string(names[std::min<std::uint32_t>(ctl->every_gmi, 2)]) + " as on its leader");
      barrier_.mark_broken(why);
      throw config_error(why);
    }
    if (lanes_ && (ctl->across_gpus == 1) != (leaders_ != nullptr)) {
      const std::string why = got_need("hierarchical lanes on GMI " + std::to_string(o_.local_rank) + " of " +
                                           segment_.name(), leaders_ ? "a lane communicator" : "no lane communicator",
                                       std::string(ctl->across_gpus ? "one" : "none") + ", as its leader has");
      barrier_.mark_broken(why);
      throw config_error(why);
    }
    if (ctl->has_result) {
      if (o_.mode == sharing::ipc) {
        result_mapping_.emplace(ctl->result);
        sum_ = result_mapping_->as<float>();
      } else {
        sum_ = reinterpret_cast<float*>(ctl->raw_result);
      }
    }
    if (every_gmi_) {  // every other GMI's buffer and ready event (all published before the leader's setup ended)
      std::vector<const float*> inputs(o_.local_size, nullptr);
      for (int k = 0; k < o_.local_size; ++k) {
        if (k == o_.local_rank) {
          inputs[k] = buffer_;
          continue;
        }
        const auto& peer = ctl->member[k];
        if (o_.mode == sharing::ipc) {
          mappings_.emplace_back(peer.buffer);
          inputs[k] = mappings_.back().as<float>();
          if (!kernel_) member_ready_.push_back(shared_event::open(peer.ready_event));
        } else {
          inputs[k] = reinterpret_cast<const float*>(peer.raw_buffer);
          member_ready_.push_back(shared_event::borrow(reinterpret_cast<cudaEvent_t>(peer.raw_event)));
        }
      }
      build_slices(inputs);
      if (kernel_) peer_rows_ = inputs;
      if (lanes_ && leaders_) check_sizes_across_gpus();  // on its lane, as the leader does on lane 0
    } else if (kernel_) {  // the row exchange reads every GMI's buffer
      peer_rows_.assign(o_.local_size, nullptr);
      for (int k = 0; k < o_.local_size; ++k) {
        if (k == o_.local_rank) {
          peer_rows_[k] = buffer_;
          continue;
        }
        mappings_.emplace_back(ctl->member[k].buffer);
        peer_rows_[k] = mappings_.back().as<float>();
      }
    }
  }

  // What the GPU's other GMIs need from this one: its buffer and ready event, and with every_gmi one event per
  // chunk, recorded after this GMI's slice of that chunk.
  void publish(detail::hier_member& m) {
    if (o_.mode == sharing::ipc) {
      m.buffer = export_buffer(buffer_, count_ * sizeof(float));
      m.ready_event = ready_event_.export_handle();
    } else {
      m.raw_buffer = reinterpret_cast<std::uint64_t>(buffer_);
      m.raw_event = reinterpret_cast<std::uint64_t>(ready_event_.get());
    }
    if (!every_gmi_ || lanes_) return;  // lanes: the kernel handshake's flags, no events
    for (std::size_t i = 0; i < chunks_; ++i) {
      slice_events_.push_back(shared_event::create(o_.mode == sharing::ipc));
      if (o_.mode == sharing::ipc) m.slice_event[i] = slice_events_.back().export_handle();
      m.raw_slice_event[i] = reinterpret_cast<std::uint64_t>(slice_events_.back().get());
    }
  }
  std::vector<shared_event> open_slice_events(const detail::hier_member& m) const {
    std::vector<shared_event> events;
    for (std::size_t i = 0; i < chunks_; ++i) {
      events.push_back(o_.mode == sharing::ipc
                           ? shared_event::open(m.slice_event[i])
                           : shared_event::borrow(reinterpret_cast<cudaEvent_t>(m.raw_slice_event[i])));
    }
    return events;
  }
  // every_gmi: this GMI's slice of each chunk (slice r of chunk [off, off + n) starts at n * r / m rounded down
  // to 64 floats), summed over every GMI's buffer into the result buffer, or with one GPU and copy_back
  // straight into every GMI's buffer (slices are disjoint, so no GMI writes what another reads).
  void build_slices(const std::vector<const float*>& inputs) {
    const auto m = static_cast<std::size_t>(o_.local_size);
    const auto me = static_cast<std::size_t>(o_.local_rank);
    slices_.clear();
    for (std::size_t i = 0; i < chunks_; ++i) {
      const std::size_t off = i * chunk_floats_, n = std::min(chunk_floats_, count_ - off);
      const auto edge = [&](std::size_t r) { return r == m ? n : n * r / m / 64 * 64; };
      const std::size_t lo = off + edge(me), hi = off + edge(me + 1);
      detail::reduce_args a{};
      for (std::size_t k = 0; k < m; ++k) a.in[k] = inputs[k] + lo;
      a.inputs = o_.local_size;
      if (sum_ != nullptr) {
        a.out[0] = sum_ + lo;
        a.outputs = 1;
      } else {
        for (std::size_t k = 0; k < m; ++k) a.out[k] = const_cast<float*>(inputs[k]) + lo;
        a.outputs = o_.local_size;
      }
      a.count = hi - lo;
      a.skip_if_set = skip_word();  // queued behind a released wait: touch nothing
      slices_.push_back(a);
    }
  }

  // Leaders agree on the element count before the first collective (a mismatch would corrupt or hang NCCL).
  void check_sizes_across_gpus() {
    cuda::stream s;
    cuda::device_buffer<std::int64_t> v(2);
    const std::int64_t host[2] = {static_cast<std::int64_t>(count_), -static_cast<std::int64_t>(count_)};
    std::int64_t back[2] = {0, 0};
    GMI_CUDA_TRY(cudaMemcpyAsync(v.data(), host, sizeof host, cudaMemcpyHostToDevice, s));
    leaders_->allreduce(v.data(), v.data(), 2, ncclInt64, ncclMax, s);
    GMI_CUDA_TRY(cudaMemcpyAsync(back, v.data(), sizeof back, cudaMemcpyDeviceToHost, s));
    leaders_->synchronize(s, o_.timeout);
    if (back[0] != -back[1]) {
      const std::string why = got_need("hierarchical allreduce: buffer floats across GPUs", "from " +
                                           std::to_string(-back[1]) + " to " + std::to_string(back[0]),
                                       "the same count on every GPU");
      barrier_.mark_broken(why);
      throw comm_error(why);
    }
  }

  // What the sum kernels check before touching a buffer: with the kernel handshake this GMI's skip word in device
  // memory (its flag kernels set it), with the device handshake the abort word (mapped host memory).
  const volatile std::uint32_t* skip_word() const noexcept {
    if (kernel_) return flag_words_ + detail::skip_slot(o_.local_rank) * detail::flag_words_apart;
    return device_ ? abort_dev_ : nullptr;
  }

  // Where (a) puts the GPU's sum and (b) reduces it across GPUs: the result buffer, else the leader's buffer.
  float* gpu_sum() const noexcept { return sum_ != nullptr ? sum_ : buffer_; }

  static detail::reduce_args slice(detail::reduce_args a, std::size_t off, std::size_t n) {
    for (int k = 0; k < a.inputs; ++k) a.in[k] += off;
    for (int k = 0; k < a.outputs; ++k) a.out[k] += off;
    a.count = n;
    return a;
  }

  // The whole buffer in one go on one stream: (a), (b), (c) in order, or one kernel with one GPU.
  void enqueue_single(cudaStream_t s) {
    if (!leaders_) {
      detail::launch_reduce(o_.copy_back ? sum_all_ : reduce_, s);
      return;
    }
    if (o_.local_size > 1) detail::launch_reduce(reduce_, s);         // (a)
    leaders_->allreduce(gpu_sum(), gpu_sum(), count_, s);              // (b)
    if (bcast_.outputs > 0) detail::launch_reduce(bcast_, s);         // (c)
  }
  // Chunks on three streams so (a), (b) and (c) of different chunks overlap; reduce_stream_ must already be
  // ordered after the GMIs' gradients. Returns the stream the last step is on. Every caller joins that stream
  // back into its own before the call ends and forks reduce_stream_ from its own at the next call, so the next
  // round's (a) never overwrites the sum that this round's (c) still reads. NCCL's stream has the device's
  // greatest priority: its blocks go first onto SMs that the sum kernels leave, so (b) of one chunk runs while
  // (a) of the next sums.
  cudaStream_t enqueue_chunks() {
    for (std::size_t off = 0; off < count_; off += chunk_floats_) {
      const std::size_t n = std::min(chunk_floats_, count_ - off);
      const unsigned beside_nccl = o_.overlap_blocks ? o_.overlap_blocks : detail::uncapped_reduce_blocks;
      const bool first = off == 0, last = off + n == count_;
      if (o_.local_size > 1) {
        detail::launch_reduce(slice(reduce_, off, n), *reduce_stream_, first ? detail::uncapped_reduce_blocks : beside_nccl);  // (a)
      }
      reduced_.record(*reduce_stream_);
      reduced_.wait_on(*nccl_stream_);
      leaders_->allreduce(gpu_sum() + off, gpu_sum() + off, n, *nccl_stream_);  // (b)
      summed_.record(*nccl_stream_);
      summed_.wait_on(*bcast_stream_);
      if (bcast_.outputs > 0) {
        detail::launch_reduce(slice(bcast_, off, n), *bcast_stream_, last ? detail::uncapped_reduce_blocks : beside_nccl);  // (c)
      }
    }
    return *bcast_stream_;
  }

  // handshake::kernel: the host only enqueues. leader reducer: a member sets ready[r] and waits for done; the
  // leader waits for every ready, sums, runs NCCL and (c), sets done. every_gmi: every GMI sets ready[r] and
  // waits for every ready, sums its slices, then a member sets sliced[r] and waits for done, the leader waits
  // for every sliced, runs NCCL over the sum and sets done; with a result buffer and copy_back each GMI copies.
  // Reuse is safe for the same reasons as with the host handshake (each wait is stream-ordered the same way).
  // captured: the call goes into a CUDA graph (generations from the device counter, no tail event).
  void run_kernel(cudaStream_t stream, std::uint64_t g, clock::time_point t0, bool captured) {
    if (!o_.blocking) check_peers_now_and_then();
    barrier_.throw_if_broken();
    const int me = o_.local_rank, m = o_.local_size;
    bool first = true;
    const auto op = [&](int set, int wait_first, int wait_count) {
      detail::flag_op f;
      f.counter = counter_->data();
      f.bump = std::exchange(first, false);
      f.replayed = captured;
      f.flags = flag_words_;
      f.set_slot = set;
      f.wait_first = wait_first;
      f.wait_count = wait_count;
      f.generation = static_cast<std::uint32_t>(g);
      f.abort = abort_dev_;
      f.stalled = stalled_dev_;
      f.timeout_ns = static_cast<unsigned long long>(o_.timeout.count()) * 1000000ull;
      f.skip_slot = detail::skip_slot(me);
      detail::launch_flag(f, stream);
    };
    if (lanes_ && leaders_) {
      op(detail::ready_slot(me), detail::ready_slot(0), m);
      enqueue_lane(stream);
      op(detail::sliced_slot(me), detail::sliced_slot(0), m);  // every lane's slice is in the result buffer
      if (o_.copy_back) {
        GMI_CUDA_TRY(cudaMemcpyAsync(buffer_, sum_, count_ * sizeof(float), cudaMemcpyDeviceToDevice, stream));
      }
    } else if (every_gmi_) {
      op(detail::ready_slot(me), detail::ready_slot(0), m);
      for (const auto& s : slices_) detail::launch_reduce(s, stream);
      if (is_leader()) {
        op(detail::sliced_slot(0), detail::sliced_slot(0), m);
        if (leaders_) {
          for (std::size_t off = 0; off < count_; off += chunk_floats_) {
            leaders_->allreduce(sum_ + off, sum_ + off, std::min(chunk_floats_, count_ - off), stream);
          }
        }
        op(detail::done_slot, 0, 0);
      } else {
        op(detail::sliced_slot(me), detail::done_slot, 1);
      }
      if (o_.copy_back && sum_ != nullptr) {
        GMI_CUDA_TRY(cudaMemcpyAsync(buffer_, sum_, count_ * sizeof(float), cudaMemcpyDeviceToDevice, stream));
      }
    } else if (is_leader()) {
      op(detail::ready_slot(0), detail::ready_slot(0), m);
      if (single_) {
        enqueue_single(stream);
      } else {  // chunks overlap on three streams forked from the caller's and joined back before done
        own_ready_.record(stream);
        own_ready_.wait_on(*reduce_stream_);
        own_done_.record(enqueue_chunks());
        own_done_.wait_on(stream);
      }
      op(detail::done_slot, 0, 0);
    } else {
      op(detail::ready_slot(me), detail::done_slot, 1);
    }
    if (!captured) tail_->record(stream);
    finish_call(stream, t0, t0);
  }

  // reducer::lanes: this GMI's slice of each chunk summed into the result buffer, then allreduced in place over its
  // lane. In chunks, the NCCL calls go on a stream of their own (forked from the caller's, joined back), so the
  // sum of chunk i + 1 runs beside the NCCL call of chunk i. Reuse is safe as with every_gmi: the next round's
  // sums write the result buffer only after every GMI's next ready flag, which follows its copy or its reads.
  void enqueue_lane(cudaStream_t stream) {
    const auto lane_call = [&](const detail::reduce_args& a, cudaStream_t s) {
      if (a.count > 0) leaders_->allreduce(a.out[0], a.out[0], a.count, s);  // the same slices on every GPU
    };
    if (!lane_stream_) {
      for (const auto& a : slices_) {
        detail::launch_reduce(a, stream);
        lane_call(a, stream);
      }
      return;
    }
    for (const auto& a : slices_) {
      detail::launch_reduce(a, stream);
      reduced_.record(stream);
      reduced_.wait_on(*lane_stream_);
      lane_call(a, *lane_stream_);
    }
    own_done_.record(*lane_stream_);
    own_done_.wait_on(stream);
  }

  // reducer::every_gmi, host handshake. (1) every GMI says "my gradient is on the device" and waits (host) until
  // all have; (2) each sums its slice of every chunk on its own stream, after the others' ready events, and
  // records one event per chunk; (3) the leader waits (host) until every slice is enqueued, then per chunk waits
  // on the slices' events and runs NCCL (several GPUs), records done; (4) the members wait for done; with a result
  // buffer and copy_back each GMI copies the sum into its own buffer. Reuse is safe: a GMI refills its buffer
  // only after done (every slice kernel has read it), and the next round's slices write the result buffer only
  // after every GMI's next ready event (each has finished reading or copying it).
  void run_every_gmi(cudaStream_t stream, std::uint64_t g, clock::time_point t0) {
    barrier_.throw_if_broken();
    auto* ctl = c();
    auto& me = ctl->member[o_.local_rank];
    const auto all_at = [&](auto field) {
      return [&, field] {
        if (barrier_.broken()) return true;
        for (int r = 0; r < o_.local_size; ++r) {
          if ((ctl->member[r].*field).load(std::memory_order_acquire) < g) return false;
        }
        return true;
      };
    };
    ready_event_.record(stream);
    me.ready_gen.store(g, std::memory_order_release);
    bounded_wait(all_at(&detail::hier_member::ready_gen), [&] { check_group(); }, o_.timeout, msg_peers_);
    const auto t1 = clock::now();
    barrier_.throw_if_broken();
    for (auto& e : member_ready_) e.wait_on(stream);
    for (std::size_t i = 0; i < chunks_; ++i) {
      detail::launch_reduce(slices_[i], stream);
      slice_events_[i].record(stream);
    }
    me.sliced_gen.store(g, std::memory_order_release);
    if (is_leader()) {
      bounded_wait(all_at(&detail::hier_member::sliced_gen), [&] { check_group(); }, o_.timeout, msg_members_);
      barrier_.throw_if_broken();
      const cudaStream_t s = leaders_ && !single_ ? *nccl_stream_ : stream;
      for (std::size_t i = 0; i < chunks_; ++i) {
        if (s != stream) slice_events_[i].wait_on(s);
        for (auto& peer : peer_slices_) peer[i].wait_on(s);
        if (leaders_) {
          const std::size_t off = i * chunk_floats_, n = std::min(chunk_floats_, count_ - off);
          leaders_->allreduce(sum_ + off, sum_ + off, n, s);
        }
      }
      done_event_.record(s);
      if (s != stream) done_event_.wait_on(stream);
      ctl->done_gen.store(g, std::memory_order_release);
    } else {
      bounded_wait([&] { return ctl->done_gen.load(std::memory_order_acquire) >= g || barrier_.broken(); },
                   [&] { check_group(); }, o_.timeout, msg_leader_);
      barrier_.throw_if_broken();
      done_event_.wait_on(stream);
      me.consumed_gen.store(g, std::memory_order_release);
    }
    if (o_.copy_back && sum_ != nullptr) {
      GMI_CUDA_TRY(cudaMemcpyAsync(buffer_, sum_, count_ * sizeof(float), cudaMemcpyDeviceToDevice, stream));
    }
    finish_call(stream, t0, t1);
  }

  void run_member(cudaStream_t stream, std::uint64_t g, clock::time_point t0) {
    barrier_.throw_if_broken();
    auto& me = c()->member[o_.local_rank];
    clock::time_point t1;
    if (device_) {
      // The stream says "ready" and waits for "done" itself: nothing on this host waits for the leader.
      if (!o_.blocking) check_peers_now_and_then();
      flag_write(stream, ready_dev_[o_.local_rank], g);
      t1 = clock::now();
      flag_wait(stream, done_dev_, g);
      tail_->record(stream);
    } else {
      ready_event_.record(stream);
      me.ready_gen.store(g, std::memory_order_release);
      bounded_wait([&] { return c()->done_gen.load(std::memory_order_acquire) >= g || barrier_.broken(); },
                   [&] { check_group(); }, o_.timeout, msg_leader_);
      t1 = clock::now();
      barrier_.throw_if_broken();
      done_event_.wait_on(stream);
      me.consumed_gen.store(g, std::memory_order_release);
    }
    finish_call(stream, t0, t1);
  }

  void run_leader(cudaStream_t stream, std::uint64_t g, clock::time_point t0) {
    barrier_.throw_if_broken();
    clock::time_point t1 = t0;
    const bool members = o_.local_size > 1;
    if (device_) {
      if (!o_.blocking) check_peers_now_and_then();
      cudaStream_t first = stream;
      if (!single_) {
        own_ready_.record(stream);
        own_ready_.wait_on(*reduce_stream_);
        first = *reduce_stream_;
      }
      for (int r = 1; r < o_.local_size; ++r) flag_wait(first, ready_dev_[r], g);
      cudaStream_t last = stream;
      if (single_) enqueue_single(stream); else last = enqueue_chunks();
      flag_write(last, done_dev_, g);
      if (!single_) {
        own_done_.record(last);
        own_done_.wait_on(stream);
      }
      tail_->record(stream);
    } else {
      cudaStream_t first = stream;
      if (!single_) {
        own_ready_.record(stream);
        own_ready_.wait_on(*reduce_stream_);
        first = *reduce_stream_;
      }
      if (members) {
        bounded_wait(
            [&] {
              for (int r = 1; r < o_.local_size; ++r) {
                if (c()->member[r].ready_gen.load(std::memory_order_acquire) < g) return false;
              }
              return true;
            },
            [&] { check_group(); }, o_.timeout, msg_members_);
        t1 = clock::now();
        for (auto& e : member_ready_) e.wait_on(first);
      }
      cudaStream_t last = stream;
      if (single_) enqueue_single(stream); else last = enqueue_chunks();
      if (members) done_event_.record(last);
      if (members && !single_) done_event_.wait_on(stream);
      else if (!single_) {
        own_done_.record(last);
        own_done_.wait_on(stream);
      }
      c()->done_gen.store(g, std::memory_order_release);
    }
    finish_call(stream, t0, t1);
  }

  void finish_call(cudaStream_t stream, clock::time_point t0, clock::time_point t1) {
    const auto t2 = clock::now();
    if (o_.blocking) wait_device(stream);
    const auto t3 = clock::now();
    timing_.host_wait_us = us(t1 - t0);
    timing_.enqueue_us = us(t2 - t1);
    timing_.device_wait_us = us(t3 - t2);
    timing_.total_us = us(t3 - t0);
  }

  // Dead peers, in non-blocking calls (which have no wait of their own), at most once a millisecond.
  void check_peers_now_and_then() {
    const auto now = clock::now();
    if (now < next_peer_check_) return;
    next_peer_check_ = now + std::chrono::milliseconds(1);
    check_group();
  }

  void wait_device(cudaStream_t stream) {
    bounded_wait(
        [&] {
          const cudaError_t e = cudaStreamQuery(stream);
          if (e == cudaErrorNotReady) return false;
          GMI_CUDA_TRY(e);
          return true;
        },
        [&] {
          check_group();
          if (leaders_) leaders_->check_async();
        },
        o_.timeout, msg_device_);
    barrier_.throw_if_broken();  // a released device wait leaves garbage: never report it as a result
    if (kernel_ && flags_->stalled.v.load(std::memory_order_acquire) != 0) throw comm_error(msg_stalled());
  }
  std::string msg_stalled() const {
    return segment_.name() + ": a handshake kernel or row exchange gave up waiting for the GPU's other GMIs after " +
           std::to_string(o_.timeout.count()) + " ms (a GMI stopped calling allreduce or the exchange, or died)";
  }

  hierarchical_options o_;
  float* buffer_ = nullptr;
  std::size_t count_ = 0;
  nccl_communicator* leaders_ = nullptr;
  std::size_t chunk_floats_ = 0;
  bool single_ = true;  // one chunk on the caller's stream (always with one GPU)
  std::size_t chunks_ = 1;
  bool every_gmi_ = false;  // reducer::every_gmi or lanes (the same on every GMI of the GPU; checked at setup)
  bool lanes_ = false;      // reducer::lanes: leaders_ is this GMI's lane
  std::optional<cuda::stream> lane_stream_;  // lanes in chunks: this GMI's NCCL calls, beside its sums
  std::vector<detail::reduce_args> slices_;          // every_gmi: this GMI's slice of each chunk
  std::vector<shared_event> slice_events_;           // every_gmi: recorded after each of them
  std::vector<std::vector<shared_event>> peer_slices_;  // every_gmi, leader: the members' slice events
  bool device_ = false;
  bool kernel_ = false;  // handshake::kernel (the leader's choice)
  std::optional<cuda::device_buffer<std::uint32_t>> flag_mem_;  // kernel handshake, leader: the flag words
  std::optional<ipc_mapping> flag_mapping_;                      // kernel handshake, members: their mapping
  std::uint32_t* flag_words_ = nullptr;
  std::optional<cuda::device_buffer<std::uint32_t>> counter_;  // kernel handshake: this GMI's generation (flag_op)
  std::optional<cuda::device_buffer<std::uint32_t>> exchange_counter_;  // row_exchange(): this GMI's calls
  std::vector<const float*> peer_rows_;  // kernel handshake on one GPU: every GMI's buffer (row_exchange())
  std::uint64_t generation_ = 0;
  shm_segment segment_;
  detail::group_barrier barrier_;
  std::string msg_members_, msg_leader_, msg_device_, msg_peers_;
  hier_call_timing timing_;
  clock::time_point next_peer_check_{};
  // device handshake
  detail::hier_flags* flags_ = nullptr;
  bool registered_ = false, flags_leaked_ = false;
  CUdeviceptr ready_dev_[max_local_gmis] = {};
  CUdeviceptr done_dev_ = 0;
  const volatile std::uint32_t* abort_dev_ = nullptr;
  std::uint32_t* stalled_dev_ = nullptr;
  std::optional<cuda::event> tail_;  // after this GMI's last queued flag operation
  // the other GMIs' buffers (the leader's, and with every_gmi every GMI's)
  std::vector<ipc_mapping> mappings_;
  // copy_back off: the GPU's result buffer (the leader's own allocation; mapped in member processes)
  std::optional<cuda::device_buffer<float>> result_;
  std::optional<ipc_mapping> result_mapping_;
  float* sum_ = nullptr;
  std::vector<shared_event> member_ready_;
  detail::reduce_args sum_all_{}, reduce_{}, bcast_{};
  std::optional<cuda::stream> reduce_stream_, nccl_stream_, bcast_stream_;
  cuda::event own_ready_, own_done_, reduced_, summed_;
  // both (host handshake)
  shared_event done_event_;
  shared_event ready_event_;
};

}  // namespace gmi::comm
