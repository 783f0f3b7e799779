#pragma once
// CUDA graphs: capture a GMI's per-iteration work (env step, forward, reduce) once from a stream, then replay
// it with one launch per iteration. Capture is thread-local so GMIs running as threads never disturb each other.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <utility>

#include <gmi/core/error.hpp>
#include <gmi/cuda/check.hpp>

namespace gmi::cuda {

namespace detail {
// The legacy default stream cannot be captured, and gmi never queues work on it anyway.
inline void require_capturable(cudaStream_t s, const char* what) {
  if (s == nullptr || s == cudaStreamLegacy) {
    throw gmi::config_error(std::string(what) +
                            ": got the legacy default stream, need a stream of this GMI (gmi::cuda::stream or a "
                            "green stream)");
  }
}

inline bool is_capturing(cudaStream_t s) {
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  GMI_CUDA_TRY(cudaStreamIsCapturing(s, &st));
  return st != cudaStreamCaptureStatusNone;
}
}  // namespace detail
using detail::is_capturing;  // also comm::hierarchical_allreduce's question

// An owned cudaGraph_t (a captured or built graph, not yet executable).
class graph {
 public:
  graph() = default;  // empty: holds no graph
  explicit graph(cudaGraph_t adopted) noexcept : handle_(adopted) {}
  graph(const graph&) = delete;
  graph& operator=(const graph&) = delete;
  graph(graph&& o) noexcept : handle_(std::exchange(o.handle_, nullptr)) {}
  graph& operator=(graph&& o) noexcept {
    if (this != &o) {
      reset();
      handle_ = std::exchange(o.handle_, nullptr);
    }
    return *this;
  }
  ~graph() { reset(); }

  [[nodiscard]] cudaGraph_t get() const noexcept { return handle_; }
  [[nodiscard]] bool empty() const noexcept { return handle_ == nullptr; }
  explicit operator bool() const noexcept { return handle_ != nullptr; }

  // Number of nodes (kernels, copies, memsets, ...) the graph holds.
  [[nodiscard]] std::size_t node_count() const {
    if (!handle_) throw gmi::config_error("graph::node_count: got an empty graph, need a captured or created graph");
    std::size_t n = 0;
    GMI_CUDA_TRY(cudaGraphGetNodes(handle_, nullptr, &n));
    return n;
  }

 private:
  void reset() noexcept {
    if (handle_) cudaGraphDestroy(handle_);
    handle_ = nullptr;
  }
  cudaGraph_t handle_ = nullptr;
};

// An owned cudaGraphExec_t: the instantiated graph that launches as a unit.
class graph_exec {
 public:
  graph_exec() = default;  // empty: holds nothing to launch
  explicit graph_exec(cudaGraphExec_t adopted) noexcept : handle_(adopted) {}
  graph_exec(const graph_exec&) = delete;
  graph_exec& operator=(const graph_exec&) = delete;
  graph_exec(graph_exec&& o) noexcept : handle_(std::exchange(o.handle_, nullptr)) {}
  graph_exec& operator=(graph_exec&& o) noexcept {
    if (this != &o) {
      reset();
      handle_ = std::exchange(o.handle_, nullptr);
    }
    return *this;
  }
  ~graph_exec() { reset(); }

  [[nodiscard]] cudaGraphExec_t get() const noexcept { return handle_; }
  [[nodiscard]] bool empty() const noexcept { return handle_ == nullptr; }
  explicit operator bool() const noexcept { return handle_ != nullptr; }

  // Queues one replay of the whole graph on s; returns without waiting.
  void launch(cudaStream_t s) const {
    require_instantiated("graph_exec::launch");
    GMI_CUDA_TRY(cudaGraphLaunch(handle_, s));
  }

  // Uploads the graph's device work ahead of the first launch, so that launch is not slower than the others.
  void upload(cudaStream_t s) const {
    require_instantiated("graph_exec::upload");
    GMI_CUDA_TRY(cudaGraphUpload(handle_, s));
  }

  // Takes the parameters of g (same topology, e.g. new kernel arguments or buffer pointers) without
  // re-instantiating. Returns false, leaving this executable as it was, when the driver refuses the update
  // (topology, node type or function changed): instantiate g instead.
  [[nodiscard]] bool update(const graph& g) {
    require_instantiated("graph_exec::update");
    if (g.empty()) throw gmi::config_error("graph_exec::update: got an empty graph, need a captured graph");
    cudaGraphExecUpdateResultInfo info{};
    const cudaError_t e = cudaGraphExecUpdate(handle_, g.get(), &info);
    if (e == cudaErrorGraphExecUpdateFailure) {
      cudaGetLastError();  // not sticky; keep it out of later checks
      return false;
    }
    GMI_CUDA_TRY(e);
    return true;
  }

 private:
  void require_instantiated(const char* what) const {
    if (!handle_) {
      throw gmi::config_error(std::string(what) + ": got an empty graph_exec, need one from gmi::cuda::instantiate");
    }
  }
  void reset() noexcept {
    if (handle_) cudaGraphExecDestroy(handle_);
    handle_ = nullptr;
  }
  cudaGraphExec_t handle_ = nullptr;
};

// Makes g executable. flags: cudaGraphInstantiateFlag* (0 for the usual host launch).
[[nodiscard]] inline graph_exec instantiate(const graph& g, unsigned long long flags = 0) {
  if (g.empty()) throw gmi::config_error("instantiate: got an empty graph, need a captured or created graph");
  cudaGraphExec_t exec = nullptr;
  GMI_CUDA_TRY(cudaGraphInstantiate(&exec, g.get(), flags));
  return graph_exec(exec);
}

// Starts recording the work queued on s (instead of running it). Thread-local mode: only this thread's
// unsafe calls (e.g. cudaMalloc) are refused during the capture; other GMI threads keep working.
inline void begin_capture(cudaStream_t s) {
  detail::require_capturable(s, "begin_capture");
  if (detail::is_capturing(s)) {
    throw gmi::config_error("begin_capture: got a stream that is already capturing, need a stream not in capture "
                            "(call end_capture first)");
  }
  GMI_CUDA_TRY(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
}

// Ends the capture begun on s and returns the recorded graph.
[[nodiscard]] inline graph end_capture(cudaStream_t s) {
  detail::require_capturable(s, "end_capture");
  if (!detail::is_capturing(s)) {
    throw gmi::config_error("end_capture: got a stream that is not capturing, need begin_capture(stream) first");
  }
  cudaGraph_t g = nullptr;
  GMI_CUDA_TRY(cudaStreamEndCapture(s, &g));
  return graph(g);
}

// Records what work(s) queues on s. If work throws, the capture is ended and dropped, and the exception passes on.
template <class Work>
[[nodiscard]] graph capture(cudaStream_t s, Work&& work) {
  begin_capture(s);
  try {
    std::forward<Work>(work)(s);
  } catch (...) {
    cudaGraph_t partial = nullptr;
    if (cudaStreamEndCapture(s, &partial) == cudaSuccess && partial) cudaGraphDestroy(partial);
    cudaGetLastError();  // an invalidated capture reports an error here; the user's exception is the one to see
    throw;
  }
  return end_capture(s);
}

}  // namespace gmi::cuda
