#pragma once
// What a pipeline names and sets for the hierarchical allreduce: the policy gmi::comm::hierarchical<Inter>, how the
// GMIs of a GPU share buffers and hand over (sharing, handshake), who sums (reducer), and hierarchical_options.

#include <cstddef>
#include <string>

#include <gmi/comm/nccl.hpp>
#include <gmi/comm/wait.hpp>

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
  automatic,  // kernel between MPS clients (sharing::ipc on a device whose contexts MPS shares), else host: under
              // MPS kernel is as fast as host or faster; without MPS the GMI processes time-slice the GPU and a
              // polling kernel holds its slice. Device waits on mapped host memory cost ms per call (docs/comm.md).
  host,       // CUDA events plus generation counters in shared memory; each side's host waits (spinning) for the other
  device,     // stream memory operations on flags in pinned shared memory: the streams wait, no host waits at all
              // (sharing::ipc only: streams of one process may share a hardware queue, and a wait queued
              // ahead of its write there would never finish)
  kernel,     // one-thread kernels set and poll flags in device memory: no host waits, no interprocess event
              // calls (sharing::ipc only, for the same reason as device)
};

// Which GMIs run step (a), the intra-GPU sum.
enum class reducer {
  automatic,  // leader: every_gmi is slower where every GMI may use every SM, and only helps with copy_back when
              // each MPS GMI has 1/m of the SMs (docs/comm.md)
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
  std::size_t chunk_bytes = 0;  // 0: one chunk up to 32 MiB, else max(32 MiB, bytes / 4)
  // Chunked calls: the grid of a sum kernel, (a) of every chunk but the first and (c) of every chunk but the last,
  // that may run beside an NCCL call of another chunk, in blocks for the whole GPU; 0: uncapped. A small grid sums
  // slower but leaves HBM and SMs to NCCL.
  unsigned overlap_blocks = 0;
  bool blocking = true;         // allreduce returns after the result is in this GMI's buffer (errors surface there)
  // false: step (c) is skipped; the sum goes to one result buffer the leader owns (not its gradient buffer, which
  // the leader refills while others still read) and every GMI reads it through result(), stream-ordered after
  // its allreduce and before its next one (the next call overwrites it).
  // The leader's choice holds for the group; members must ask for the same.
  bool copy_back = true;
  handshake sync = handshake::automatic;  // the leader's choice holds for the group
  reducer reduce = reducer::automatic;    // every GMI of a GPU must ask for the same
};

// Host-side timings of this GMI's last allreduce call, in microseconds (for diagnosis; a few clock reads).
struct hier_call_timing {
  double host_wait_us = 0;    // waiting on the host for the other side (host handshake; 0 with device)
  double enqueue_us = 0;      // enqueueing the device work (waits, kernels, NCCL, flag writes, events)
  double device_wait_us = 0;  // waiting for the device to finish (blocking calls)
  double total_us = 0;
};

}  // namespace gmi::comm
