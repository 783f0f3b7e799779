#pragma once
// Sharing device buffers and events between GMIs: plain pointers between green-context GMIs of one process;
// CUDA IPC handles (memory and events) between MPS GMI processes, carried in shared memory. Each handle is
// opened once per process (CUDA allows one open per context and device) and the mapping is shared.

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>

#include <gmi/cuda/check.hpp>

namespace gmi::comm {

// What another process needs to map a buffer: trivially copyable, so it can sit in a shm segment.
struct ipc_buffer_handle {
  cudaIpcMemHandle_t handle{};
  std::uint64_t bytes = 0;
  std::int32_t device = 0;
  std::int32_t exporter_pid = 0;
};
static_assert(std::is_trivially_copyable_v<ipc_buffer_handle>);

struct ipc_event_handle {
  cudaIpcEventHandle_t handle{};
  std::int32_t exporter_pid = 0;
};
static_assert(std::is_trivially_copyable_v<ipc_event_handle>);

// Exports a buffer for other processes. `base` must be the start of a cudaMalloc allocation (IPC shares the
// whole allocation; allocate shared buffers on their own, in 2 MiB multiples, so nothing else leaks out).
inline ipc_buffer_handle export_buffer(const void* base, std::size_t bytes) {
  using range_fn = CUresult (*)(CUdeviceptr*, std::size_t*, CUdeviceptr);
  static const auto get_range = cuda::driver_entry<range_fn>("cuMemGetAddressRange");
  if (get_range) {
    CUdeviceptr start = 0;
    std::size_t size = 0;
    if (get_range(&start, &size, reinterpret_cast<CUdeviceptr>(base)) == CUDA_SUCCESS) {
      if (start != reinterpret_cast<CUdeviceptr>(base)) {
        throw config_error(got_need("export_buffer pointer", "an interior pointer (offset " +
                                                                 std::to_string(reinterpret_cast<CUdeviceptr>(base) - start) + ")",
                                    "the base of a cudaMalloc allocation"));
      }
      require(bytes <= size, "export_buffer bytes", bytes, "<= the allocation's " + std::to_string(size) + " bytes");
    }
  }
  ipc_buffer_handle h;
  GMI_CUDA_TRY(cudaIpcGetMemHandle(&h.handle, const_cast<void*>(base)));
  GMI_CUDA_TRY(cudaGetDevice(&h.device));
  h.bytes = bytes;
  h.exporter_pid = static_cast<std::int32_t>(::getpid());
  return h;
}

// Makes `owner`'s device memory reachable from the current device for copies and kernels: nothing on the same
// device; with `peer` allowed, peer access where cudaDeviceCanAccessPeer says yes (enabled once per context; CUDA
// IPC mappings enable it lazily themselves). Throws config_error naming `what` and both devices otherwise.
inline void reach_device_memory(int owner, bool peer, const std::string& what) {
  int current = 0;
  GMI_CUDA_TRY(cudaGetDevice(&current));
  if (current == owner) return;
  require(peer, what + ": device", current,
          std::to_string(owner) + ", the owner's GPU (peer access off: another GPU goes through host memory)");
  int reach = 0;
  GMI_CUDA_TRY(cudaDeviceCanAccessPeer(&reach, current, owner));
  require(reach != 0, what + ": device " + std::to_string(current) + "'s peer access to device " + std::to_string(owner),
          "none (cudaDeviceCanAccessPeer)", "peer access, or a transport through host memory");
  const cudaError_t e = cudaDeviceEnablePeerAccess(owner, 0);
  if (e == cudaErrorPeerAccessAlreadyEnabled) {
    (void)cudaGetLastError();
    return;
  }
  GMI_CUDA_TRY(e);
}

namespace detail {
struct ipc_open_entry {
  void* pointer = nullptr;
  int refs = 0;
};
inline std::mutex& ipc_cache_mutex() {
  static std::mutex m;
  return m;
}
inline std::map<std::string, ipc_open_entry>& ipc_cache() {
  static std::map<std::string, ipc_open_entry> cache;
  return cache;
}
inline std::string ipc_key(const cudaIpcMemHandle_t& h) { return std::string(h.reserved, sizeof h.reserved); }
}  // namespace detail

// A mapping of another process's buffer into this one. Mappings of one handle share one cudaIpcOpenMemHandle;
// the last to go closes it. The exporter must keep the buffer alive while it is mapped.
class ipc_mapping {
 public:
  ipc_mapping() = default;
  // peer: the buffer may live on another device this one reaches (peer access, enabled on first use).
  explicit ipc_mapping(const ipc_buffer_handle& h, bool peer = false)
      : key_(detail::ipc_key(h.handle)), bytes_(h.bytes) {
    require(h.exporter_pid != ::getpid(), "ipc_mapping exporter pid", h.exporter_pid,
            "another process (in-process GMIs share plain pointers)");
    std::lock_guard lock(detail::ipc_cache_mutex());
    auto& e = detail::ipc_cache()[key_];
    if (e.refs == 0) {
      int current = 0, reach = 0;
      GMI_CUDA_TRY(cudaGetDevice(&current));
      if (peer && current != h.device) {
        GMI_CUDA_TRY(cudaDeviceCanAccessPeer(&reach, current, h.device));
        if (!reach) detail::ipc_cache().erase(key_);
        require(reach != 0, "ipc_mapping of device " + std::to_string(h.device) + "'s buffer from device", current,
                "a device with peer access to it");
      } else {
        if (current != h.device) detail::ipc_cache().erase(key_);
        require(current == h.device, "ipc_mapping current device", current,
                "the exporter's device " + std::to_string(h.device) + " (call cudaSetDevice first)");
      }
      const cudaError_t r = cudaIpcOpenMemHandle(&e.pointer, h.handle, cudaIpcMemLazyEnablePeerAccess);
      if (r != cudaSuccess) {
        detail::ipc_cache().erase(key_);
        GMI_CUDA_TRY(r);
      }
    }
    ++e.refs;
    pointer_ = e.pointer;
  }
  ipc_mapping(const ipc_mapping&) = delete;
  ipc_mapping& operator=(const ipc_mapping&) = delete;
  ipc_mapping(ipc_mapping&& o) noexcept
      : key_(std::move(o.key_)), pointer_(std::exchange(o.pointer_, nullptr)), bytes_(o.bytes_) {}
  ipc_mapping& operator=(ipc_mapping&& o) noexcept {
    if (this != &o) {
      release();
      key_ = std::move(o.key_);
      pointer_ = std::exchange(o.pointer_, nullptr);
      bytes_ = o.bytes_;
    }
    return *this;
  }
  ~ipc_mapping() { release(); }

  [[nodiscard]] void* get() const noexcept { return pointer_; }
  template <class T>
  [[nodiscard]] T* as() const noexcept {
    return static_cast<T*>(pointer_);
  }
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }

 private:
  void release() noexcept {
    if (!pointer_) return;
    std::lock_guard lock(detail::ipc_cache_mutex());
    auto it = detail::ipc_cache().find(key_);
    if (it != detail::ipc_cache().end() && --it->second.refs == 0) {
      cudaIpcCloseMemHandle(it->second.pointer);
      detail::ipc_cache().erase(it);
    }
    pointer_ = nullptr;
  }
  std::string key_;
  void* pointer_ = nullptr;
  std::size_t bytes_ = 0;
};

// An event usable across processes (cudaEventInterprocess, no timing), created here or opened from a handle.
class shared_event {
 public:
  // A new exportable event on the current device. The driver backs interprocess events with a file in /dev/shm
  // (cuda.shm.*) that stays until the process tears its contexts down: where every user of the event is in this
  // process, create_local is the one to use.
  static shared_event create() {
    shared_event e;
    GMI_CUDA_TRY(cudaEventCreateWithFlags(&e.event_, cudaEventInterprocess | cudaEventDisableTiming));
    return e;
  }
  // A new event for this process's streams only (no export_handle).
  static shared_event create_local() {
    shared_event e;
    GMI_CUDA_TRY(cudaEventCreateWithFlags(&e.event_, cudaEventDisableTiming));
    return e;
  }
  // create() where other processes will open the event, else create_local().
  static shared_event create(bool across_processes) { return across_processes ? create() : create_local(); }
  // Opens another process's event.
  static shared_event open(const ipc_event_handle& h) {
    shared_event e;
    GMI_CUDA_TRY(cudaIpcOpenEventHandle(&e.event_, h.handle));
    return e;
  }
  // Adopts an event of this process without owning it (the in-process, green-context case).
  static shared_event borrow(cudaEvent_t e) {
    shared_event s;
    s.event_ = e;
    s.owned_ = false;
    return s;
  }
  shared_event() = default;
  shared_event(const shared_event&) = delete;
  shared_event& operator=(const shared_event&) = delete;
  shared_event(shared_event&& o) noexcept : event_(std::exchange(o.event_, nullptr)), owned_(o.owned_) {}
  shared_event& operator=(shared_event&& o) noexcept {
    if (this != &o) {
      reset();
      event_ = std::exchange(o.event_, nullptr);
      owned_ = o.owned_;
    }
    return *this;
  }
  ~shared_event() { reset(); }

  [[nodiscard]] ipc_event_handle export_handle() const {
    ipc_event_handle h;
    GMI_CUDA_TRY(cudaIpcGetEventHandle(&h.handle, event_));
    h.exporter_pid = static_cast<std::int32_t>(::getpid());
    return h;
  }
  [[nodiscard]] cudaEvent_t get() const noexcept { return event_; }
  void record(cudaStream_t s) { GMI_CUDA_TRY(cudaEventRecord(event_, s)); }
  void wait_on(cudaStream_t s) const { GMI_CUDA_TRY(cudaStreamWaitEvent(s, event_, 0)); }
  [[nodiscard]] bool ready() const {
    const cudaError_t e = cudaEventQuery(event_);
    if (e == cudaErrorNotReady) return false;
    GMI_CUDA_TRY(e);
    return true;
  }

 private:
  void reset() noexcept {
    if (event_ && owned_) cudaEventDestroy(event_);
    event_ = nullptr;
  }
  cudaEvent_t event_ = nullptr;
  bool owned_ = true;
};

}  // namespace gmi::comm
