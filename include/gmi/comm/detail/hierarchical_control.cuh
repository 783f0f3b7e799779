#pragma once
// The hierarchical allreduce's shared state (private): the control block every GMI of a GPU maps (generations,
// exported buffers and events, the leader's choices), the device handshake's flag pages, and the driver's stream
// memory operations.

#include <cuda.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include <gmi/comm/device_share.hpp>
#include <gmi/comm/intra_gpu_reduce.cuh>
#include <gmi/comm/ip_allreduce.hpp>
#include <gmi/cuda/check.hpp>

namespace gmi::comm {

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

}  // namespace gmi::comm
