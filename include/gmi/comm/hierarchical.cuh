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
#include <gmi/comm/detail/hierarchical_control.cuh>
#include <gmi/comm/device_share.hpp>
#include <gmi/comm/hierarchical_options.hpp>
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

// One GMI's handle on the hierarchical allreduce. Build it on every GMI of every GPU with the same count.
class hierarchical_allreduce {
 public:
  // buffer: this GMI's `count` floats on the current device (with sharing::ipc, the base of its own cudaMalloc).
  // leaders: the NCCL communicator of the GPUs' leaders, on local rank 0 only; nullptr with one GPU. With
  // reducer::lanes, every GMI's lane instead: the communicator of the GMIs of its local rank on every GPU (ranked
  // by GPU; lane_max_ctas() in nccl.hpp gives its NCCL options' max_ctas).
  hierarchical_allreduce(hierarchical_options options, float* buffer, std::size_t count,
                         nccl_communicator* leaders = nullptr);
  hierarchical_allreduce(const hierarchical_allreduce&) = delete;
  hierarchical_allreduce& operator=(const hierarchical_allreduce&) = delete;

  // Bounded: waits until the GPU's other GMIs are done with what this one owns (events, flags, the result).
  ~hierarchical_allreduce();

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

  // The leader: builds the segment, the handshake and the result buffer, then maps every member's buffer.
  void setup_leader();

  // A member: attaches to its leader's segment and takes the leader's choices (handshake, reducer, copy_back).
  void setup_member();

  // This GMI's buffer and events, for the GPU's other GMIs.
  void publish(detail::hier_member& m);
  // every_gmi: another GMI's slice events, one per chunk.
  std::vector<shared_event> open_slice_events(const detail::hier_member& m) const;
  // every_gmi: the sum kernels' arguments for this GMI's slice of each chunk.
  void build_slices(const std::vector<const float*>& inputs);

  // Leaders agree on the element count before the first collective.
  void check_sizes_across_gpus();

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

  // The whole buffer in one go on one stream.
  void enqueue_single(cudaStream_t s);
  // Chunks on three streams so steps (a), (b) and (c) of different chunks overlap.
  cudaStream_t enqueue_chunks();

  // One call with the kernel handshake (every reducer).
  void run_kernel(cudaStream_t stream, std::uint64_t g, clock::time_point t0, bool captured);

  // reducer::lanes: this GMI's slices summed, then allreduced over its lane.
  void enqueue_lane(cudaStream_t stream);

  // One call of reducer::every_gmi with the host handshake.
  void run_every_gmi(cudaStream_t stream, std::uint64_t g, clock::time_point t0);

  // One call of a member with the host or device handshake (leader reducer).
  void run_member(cudaStream_t stream, std::uint64_t g, clock::time_point t0);

  // One call of the leader with the host or device handshake (leader reducer).
  void run_leader(cudaStream_t stream, std::uint64_t g, clock::time_point t0);

  // Waits for the device where the call blocks, and records the call's host timings.
  void finish_call(cudaStream_t stream, clock::time_point t0, clock::time_point t1);

  // Dead peers, in non-blocking calls (which have no wait of their own), at most once a millisecond.
  void check_peers_now_and_then() {
    const auto now = clock::now();
    if (now < next_peer_check_) return;
    next_peer_check_ = now + std::chrono::milliseconds(1);
    check_group();
  }

  // Bounded wait until `stream` has finished (dead peers, NCCL errors and stalled kernels checked).
  void wait_device(cudaStream_t stream);
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

// The members defined out of the class: construction and setup, then the steps of a call.
#include <gmi/comm/hierarchical_setup.cuh>
#include <gmi/comm/hierarchical_steps.cuh>
