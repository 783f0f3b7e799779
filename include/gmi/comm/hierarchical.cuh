#pragma once
// gmi::comm::hierarchical<Inter>: the allreduce of flat float gradients over m GMIs on each of n GPUs.
// (a) the GPU's leader GMI sums the m buffers with one kernel, (b) the leaders allreduce across GPUs with
// NCCL on their own stream, (c) the leader writes the result into every GMI's buffer; large buffers go in
// chunks so (a), (b) and (c) of different chunks overlap. NCCL never sees two ranks on one GPU.

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gmi/comm/device_share.hpp>
#include <gmi/comm/intra_gpu_reduce.cuh>
#include <gmi/comm/ip_allreduce.hpp>
#include <gmi/comm/nccl.hpp>
#include <gmi/comm/shm_segment.hpp>
#include <gmi/comm/wait.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/event.hpp>
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

struct hierarchical_options {
  std::string tag;          // names this GPU's group; the same on every GMI of the GPU, unique per run and GPU
  int local_rank = 0;       // 0 is the GPU's leader
  int local_size = 1;       // GMIs on this GPU
  sharing mode = sharing::ipc;
  milliseconds timeout = default_timeout();
  std::size_t chunk_bytes = 0;  // 0: one chunk up to 8 MiB, else max(8 MiB, bytes / 4) (GMI_HIER_CHUNK_BYTES overrides)
  bool blocking = true;         // allreduce returns after the result is in this GMI's buffer (errors surface there)
};

namespace detail {
struct hier_member {
  alignas(64) std::atomic<std::uint64_t> ready_gen;
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
};
struct hier_control {
  alignas(64) std::atomic<std::uint64_t> done_gen;
  std::atomic<std::uint32_t> setup_state;  // 0 pending, 1 ready (errors go through the barrier's broken flag)
  std::uint32_t members;
  std::uint32_t mode;
  ipc_event_handle done_event;
  std::uint64_t raw_done_event;
  hier_member member[max_local_gmis];
  group_control group;  // broken flag, reason, pids (shared with ip_allreduce's liveness checks)
};
}  // namespace detail

// One GMI's handle on the hierarchical allreduce. Build it on every GMI of every GPU with the same count.
class hierarchical_allreduce {
 public:
  // buffer: this GMI's `count` floats on the current device (with sharing::ipc, the base of its own cudaMalloc).
  // leaders: the NCCL communicator of the GPUs' leaders, on local rank 0 only; nullptr with one GPU.
  hierarchical_allreduce(hierarchical_options options, float* buffer, std::size_t count,
                         nccl_communicator* leaders = nullptr)
      : o_(std::move(options)), buffer_(buffer), count_(count), leaders_(leaders) {
    require(o_.local_size >= 1 && o_.local_size <= max_local_gmis, "hierarchical local_size", o_.local_size,
            "1.." + std::to_string(max_local_gmis));
    require(o_.local_rank >= 0 && o_.local_rank < o_.local_size, "hierarchical local_rank", o_.local_rank,
            "0.." + std::to_string(o_.local_size - 1));
    require(leaders == nullptr || o_.local_rank == 0, "hierarchical NCCL communicator on local rank", o_.local_rank,
            "only the leader (local rank 0)");
    if (const char* c = std::getenv("GMI_HIER_CHUNK_BYTES")) o_.chunk_bytes = std::stoull(c);
    const std::size_t bytes = count * sizeof(float);
    chunk_floats_ = o_.chunk_bytes ? o_.chunk_bytes / sizeof(float)
                                   : (bytes <= (8u << 20) ? count : std::max<std::size_t>((8u << 20) / 4, (count + 3) / 4));
    chunk_floats_ = std::max<std::size_t>(64, (chunk_floats_ + 63) / 64 * 64);  // chunks keep 256-byte alignment
    try {
      if (o_.local_rank == 0) setup_leader(); else setup_member();
    } catch (const gmi::error& e) {
      if (segment_.data()) barrier_.mark_broken(e.what());  // the GPU's other GMIs fail now, not at their timeout
      if (leaders_) leaders_->abort();
      throw;
    }
  }
  hierarchical_allreduce(const hierarchical_allreduce&) = delete;
  hierarchical_allreduce& operator=(const hierarchical_allreduce&) = delete;

  // The leader owns the done event every member waits on: a member that saw the last generation's done_gen but
  // has not yet enqueued its cudaStreamWaitEvent would use a destroyed event (cudaErrorInvalidResourceHandle,
  // or undefined behaviour for an IPC event), so the leader waits until each member has consumed the last
  // generation or detached (bounded; not when the group is broken or a member died).
  ~hierarchical_allreduce() {
    if (!segment_.data()) return;
    if (is_leader()) {
      try {
        bounded_wait(
            [&] {
              if (barrier_.broken()) return true;
              for (int r = 1; r < o_.local_size; ++r) {
                const auto& m = c()->member[r];
                if (m.consumed_gen.load(std::memory_order_acquire) < generation_ &&
                    m.detached.load(std::memory_order_acquire) == 0)
                  return false;
              }
              return true;
            },
            [&] { check_group(); }, o_.timeout, segment_.name() + ": leader waiting for its GMIs to finish");
      } catch (...) {  // broken, dead or timed out: nobody is left to use the event, or nothing more can be done
      }
    } else {
      c()->member[o_.local_rank].detached.store(1, std::memory_order_release);
    }
  }

  [[nodiscard]] bool is_leader() const noexcept { return o_.local_rank == 0; }
  [[nodiscard]] std::size_t count() const noexcept { return count_; }
  [[nodiscard]] std::size_t chunk_bytes() const noexcept { return chunk_floats_ * sizeof(float); }
  [[nodiscard]] bool broken() const noexcept { return barrier_.broken(); }

  // In place: this GMI's buffer becomes the sum over every GMI of every GPU. The buffer's producer must have
  // enqueued its writes on `stream`; later work on `stream` sees the result.
  void allreduce(cudaStream_t stream) {
    const std::uint64_t g = ++generation_;
    try {
      if (is_leader()) run_leader(stream, g); else run_member(stream, g);
    } catch (const gmi::error& e) {
      barrier_.mark_broken(e.what());
      if (leaders_) leaders_->abort();  // the other GPUs' leaders then fail at their deadline, not hang
      throw;
    }
  }

 private:
  detail::hier_control* c() const { return static_cast<detail::hier_control*>(segment_.data()); }

  void check_group() { barrier_.check_peers(); }

  void setup_leader() {
    // The control block is built before the segment is marked ready: a member opening it earlier would read
    // members == 0, or write its fields only to have them zeroed by this constructor.
    segment_ = shm_segment::create(o_.tag, sizeof(detail::hier_control), [&](void* p, std::size_t) {
      auto* fresh = new (p) detail::hier_control{};
      fresh->members = static_cast<std::uint32_t>(o_.local_size);
      fresh->mode = static_cast<std::uint32_t>(o_.mode);
      fresh->group.ranks = fresh->members;
    });
    auto* ctl = c();
    barrier_ = detail::group_barrier(&ctl->group, segment_.name());
    ctl->group.pids[0].store(::getpid());
    done_event_ = shared_event::create();
    if (o_.mode == sharing::ipc) ctl->done_event = done_event_.export_handle();
    ctl->raw_done_event = reinterpret_cast<std::uint64_t>(done_event_.get());
    ctl->member[0].count = count_;
    own_ready_ = cuda::event();
    // Wait for every member to attach, then map their buffers and events.
    bounded_wait(
        [&] {
          for (int r = 1; r < o_.local_size; ++r) {
            if (ctl->member[r].attached.load(std::memory_order_acquire) == 0) return false;
          }
          return true;
        },
        [&] { check_group(); }, o_.timeout, segment_.name() + ": leader waiting for the GPU's GMIs to attach");
    inputs_.assign(o_.local_size, nullptr);
    inputs_[0] = buffer_;
    member_buffers_.clear();
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
        member_ready_.push_back(shared_event::open(m.ready_event));
      } else {
        p = reinterpret_cast<float*>(m.raw_buffer);
        member_ready_.push_back(shared_event::borrow(reinterpret_cast<cudaEvent_t>(m.raw_event)));
      }
      inputs_[r] = p;
      member_buffers_.push_back(p);
    }
    reduce_stream_.emplace();
    nccl_stream_.emplace();
    bcast_stream_.emplace();
    if (leaders_) check_sizes_across_gpus();
    ctl->setup_state.store(1, std::memory_order_release);
  }

  void setup_member() {
    segment_ = shm_segment::open(o_.tag, o_.timeout);
    auto* ctl = c();
    barrier_ = detail::group_barrier(&ctl->group, segment_.name());
    require(ctl->members == static_cast<std::uint32_t>(o_.local_size), "hierarchical local_size", o_.local_size,
            std::to_string(ctl->members) + " as on the leader");
    auto& m = ctl->member[o_.local_rank];
    ctl->group.pids[o_.local_rank].store(::getpid());
    m.count = count_;
    ready_event_ = shared_event::create();
    if (o_.mode == sharing::ipc) {
      m.buffer = export_buffer(buffer_, count_ * sizeof(float));
      m.ready_event = ready_event_.export_handle();
    } else {
      m.raw_buffer = reinterpret_cast<std::uint64_t>(buffer_);
      m.raw_event = reinterpret_cast<std::uint64_t>(ready_event_.get());
    }
    m.attached.store(1, std::memory_order_release);
    bounded_wait([&] { return ctl->setup_state.load(std::memory_order_acquire) == 1 || barrier_.broken(); },
                 [&] { check_group(); }, o_.timeout, segment_.name() + ": GMI waiting for its leader's setup");
    barrier_.throw_if_broken();
    done_event_ = o_.mode == sharing::ipc ? shared_event::open(ctl->done_event)
                                          : shared_event::borrow(reinterpret_cast<cudaEvent_t>(ctl->raw_done_event));
  }

  // Leaders agree on the element count before the first collective (a mismatch would corrupt or hang NCCL).
  void check_sizes_across_gpus() {
    cuda::device_buffer<std::int64_t> v(2);
    const std::int64_t host[2] = {static_cast<std::int64_t>(count_), -static_cast<std::int64_t>(count_)};
    std::int64_t back[2] = {0, 0};
    GMI_CUDA_TRY(cudaMemcpyAsync(v.data(), host, sizeof host, cudaMemcpyHostToDevice, *nccl_stream_));
    leaders_->allreduce(v.data(), v.data(), 2, ncclInt64, ncclMax, *nccl_stream_);
    GMI_CUDA_TRY(cudaMemcpyAsync(back, v.data(), sizeof back, cudaMemcpyDeviceToHost, *nccl_stream_));
    leaders_->synchronize(*nccl_stream_, o_.timeout);
    if (back[0] != -back[1]) {
      const std::string why = got_need("hierarchical allreduce: buffer floats across GPUs", "from " +
                                           std::to_string(-back[1]) + " to " + std::to_string(back[0]),
                                       "the same count on every GPU");
      barrier_.mark_broken(why);
      throw comm_error(why);
    }
  }

  void run_member(cudaStream_t stream, std::uint64_t g) {
    barrier_.throw_if_broken();
    ready_event_.record(stream);
    c()->member[o_.local_rank].ready_gen.store(g, std::memory_order_release);
    bounded_wait([&] { return c()->done_gen.load(std::memory_order_acquire) >= g || barrier_.broken(); },
                 [&] { check_group(); }, o_.timeout, segment_.name() + ": GMI waiting for its leader's allreduce");
    barrier_.throw_if_broken();
    done_event_.wait_on(stream);
    c()->member[o_.local_rank].consumed_gen.store(g, std::memory_order_release);
    if (o_.blocking) wait_stream(stream);
  }

  void run_leader(cudaStream_t stream, std::uint64_t g) {
    barrier_.throw_if_broken();
    own_ready_->record(stream);
    own_ready_->wait_on(*reduce_stream_);
    bounded_wait(
        [&] {
          for (int r = 1; r < o_.local_size; ++r) {
            if (c()->member[r].ready_gen.load(std::memory_order_acquire) < g) return false;
          }
          return true;
        },
        [&] { check_group(); }, o_.timeout, segment_.name() + ": leader waiting for the GPU's gradients");
    for (auto& e : member_ready_) e.wait_on(*reduce_stream_);
    // The previous round's broadcast reads the leader's buffer: the next reduce must not overwrite it early.
    GMI_CUDA_TRY(cudaEventRecord(bcast_done_.get(), *bcast_stream_));
    bcast_done_.wait_on(*reduce_stream_);

    if (!leaders_) {
      // One GPU: nothing to overlap with; one kernel reads every buffer once and writes every buffer once.
      std::vector<float*> outs(inputs_.size());
      for (std::size_t k = 0; k < inputs_.size(); ++k) outs[k] = const_cast<float*>(inputs_[k]);
      reduce_broadcast(inputs_, outs, count_, *reduce_stream_);
      done_event_.record(*reduce_stream_);
      GMI_CUDA_TRY(cudaEventRecord(bcast_done_.get(), *reduce_stream_));
      bcast_done_.wait_on(*bcast_stream_);
    } else {
      for (std::size_t off = 0; off < count_; off += chunk_floats_) {
        const std::size_t n = std::min(chunk_floats_, count_ - off);
        std::vector<const float*> in(inputs_.size());
        for (std::size_t k = 0; k < inputs_.size(); ++k) in[k] = inputs_[k] + off;
        if (inputs_.size() > 1) reduce_into(in, buffer_ + off, n, *reduce_stream_);  // (a)
        reduced_.record(*reduce_stream_);
        reduced_.wait_on(*nccl_stream_);
        leaders_->allreduce(buffer_ + off, buffer_ + off, n, *nccl_stream_);  // (b)
        summed_.record(*nccl_stream_);
        summed_.wait_on(*bcast_stream_);
        if (!member_buffers_.empty()) {  // (c)
          std::vector<float*> outs(member_buffers_.size());
          for (std::size_t k = 0; k < outs.size(); ++k) outs[k] = member_buffers_[k] + off;
          const float* src[1] = {buffer_ + off};
          reduce_broadcast(src, outs, n, *bcast_stream_);
        }
      }
      done_event_.record(*bcast_stream_);
    }
    c()->done_gen.store(g, std::memory_order_release);
    done_event_.wait_on(stream);
    if (o_.blocking) {
      if (leaders_) leaders_->synchronize(stream, o_.timeout);
      else wait_stream(stream);
    }
  }

  void wait_stream(cudaStream_t stream) {
    bounded_wait(
        [&] {
          const cudaError_t e = cudaStreamQuery(stream);
          if (e == cudaErrorNotReady) return false;
          GMI_CUDA_TRY(e);
          return true;
        },
        [&] { check_group(); }, o_.timeout, segment_.name() + ": waiting for the allreduce on the device");
  }

  hierarchical_options o_;
  float* buffer_ = nullptr;
  std::size_t count_ = 0;
  nccl_communicator* leaders_ = nullptr;
  std::size_t chunk_floats_ = 0;
  std::uint64_t generation_ = 0;
  shm_segment segment_;
  detail::group_barrier barrier_;
  // leader
  std::vector<const float*> inputs_;
  std::vector<float*> member_buffers_;
  std::vector<ipc_mapping> mappings_;
  std::vector<shared_event> member_ready_;
  std::optional<cuda::event> own_ready_;
  std::optional<cuda::stream> reduce_stream_, nccl_stream_, bcast_stream_;
  cuda::event reduced_, summed_, bcast_done_;
  // both
  shared_event done_event_;
  shared_event ready_event_;
};

}  // namespace gmi::comm
