#pragma once
// The staged env step of a physics task on the device (physics::step_path::staged; rl/physics_staged.hpp holds the
// passes and their host twin): a kernel per pass, a thread per environment in each: begin, then for each of the
// task's substeps one kernel per stage of physics::step_stage (each compiled with only its stage, so its registers
// and stack are its stage's alone), then end. The arrays between the kernels are one global buffer per task and
// device (the pipeline's, element-major, plus carry and valid flags), grown to the largest batch seen and kept to
// the process's end; every step waits for the previous one first (its event), so two batches of one task may step on
// two streams, one after the other; a step that grows the buffer allocates (and waits for the previous step), so
// the first step of the largest batch must not be under stream capture. Never chosen by
// the rule: params.step_path or physics::request_step_path("staged") asks for it; env_batch (rl/env_batch.cuh)
// launches it. physics::request_staged_shared_reals gives stages 0 to 3 slices of shared memory for their hottest
// arrays (physics/stage_shared.hpp; none by default). Needs nvcc.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

#include <gmi/core/cuda_try.hpp>
#include <gmi/core/error.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/event.hpp>
#include <gmi/physics/stage_shared.hpp>
#include <gmi/physics/step.hpp>
#include <gmi/physics/step_path.hpp>
#include <gmi/rl/env_batch.hpp>
#include <gmi/rl/physics_staged.hpp>

namespace gmi::rl {

namespace detail {

// The largest block the kernels are compiled for (physics::request_staged_block picks 32 to 256).
constexpr int physics_staged_max_block = 256;

template <class E>
__global__ static void __launch_bounds__(physics_staged_max_block) staged_begin_kernel(env_batch_view<E> v,
                                                                                   const float* __restrict__ actions,
                                                                                   staged_arrays<E> a) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < a.n) staged_begin<E>(v, actions, a, i);
}

// Stage K of physics::step_stage (0 positions, 1 collision, 2 forces and rows, 3 solve, 4 integration), the other
// stages' branches folded away.
template <class E, int K>
__global__ static void __launch_bounds__(physics_staged_max_block) staged_stage_kernel(gmi::physics::model_view<float> m,
                                                                                   staged_arrays<E> a) {
  namespace ph = gmi::physics;
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= a.n || !a.valid[i]) return;
  ph::step_stage<E::sim::colliders>(K, m, a.env(i));
}

// The same with stage K's hot arrays in a slice of the block's dynamic shared memory (physics/stage_shared.hpp):
// `reals` floats a thread, element-major over the block's threads.
template <class E, int K>
__global__ static void __launch_bounds__(physics_staged_max_block)
    staged_stage_shared_kernel(gmi::physics::model_view<float> m, staged_arrays<E> a, int reals) {
  extern __shared__ float staged_slice[];
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= a.n || !a.valid[i]) return;
  namespace ph = gmi::physics;
  constexpr ph::model_sizes sizes = E::sim::sizes_v;  // a copy: the static member has no device address
  const ph::data<float> g = a.env(i);
  const ph::data<float> d =
      ph::stage_bind(K, sizes, g, staged_slice, static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x), reals);
  ph::step_stage<E::sim::colliders>(K, m, d);
  ph::stage_unbind(K, sizes, g, d, reals);
}

template <class E>
__global__ static void __launch_bounds__(physics_staged_max_block) staged_end_kernel(env_batch_view<E> v,
                                                                                 const float* __restrict__ actions,
                                                                                 staged_arrays<E> a,
                                                                                 physics_step_out out) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < a.n) staged_end<E>(v, actions, a, out, i);
}

// One task's buffers on one device: capacity environments and the event of their last use.
struct staged_buffers {
  gmi::cuda::device_buffer<float> data, carry;
  gmi::cuda::device_buffer<std::uint8_t> valid;
  std::size_t capacity = 0;
  bool used = false;     // a step was enqueued and `done` recorded after it
  gmi::cuda::event done;  // the previous use's end, on whatever stream it ran (that stream may be gone since)
};

// E's buffers on the current device for n environments (grown if needed), ordered after their previous use when
// that was on another stream; the caller holds the returned lock while it enqueues, then records done on s.
template <class E>
static staged_buffers& staged_buffers_for(std::size_t n, cudaStream_t s, std::unique_lock<std::mutex>& held) {
  static std::mutex lock;
  static staged_buffers* cache[64] = {};  // per device; kept to the process's end (no cudaFree at teardown)
  int dev = 0;
  GMI_CUDA_TRY(cudaGetDevice(&dev));
  gmi::require(dev >= 0 && dev < 64, "physics staged step: CUDA device index", dev, "< 64");
  held = std::unique_lock<std::mutex>(lock);
  staged_buffers*& b = cache[dev];
  if (!b) b = std::make_unique<staged_buffers>().release();
  // After the previous use, through its event: the stream it ran on may have been destroyed (a batch ends), and a
  // new stream may even reuse its handle, so the handle is never kept (synchronizing a destroyed one crashed the
  // bench at 3aba6d2 when a larger batch followed a smaller one).
  if (b->used) b->done.wait_on(s);
  if (b->capacity < n) {
    if (b->used) b->done.synchronize();  // its kernels done before the free
    b->data = gmi::cuda::device_buffer<float>(staged_arrays<E>::data_reals(n));
    b->carry = gmi::cuda::device_buffer<float>(staged_arrays<E>::carry_reals(n));
    b->valid = gmi::cuda::device_buffer<std::uint8_t>(n);
    b->capacity = n;
  }
  b->used = true;
  return *b;
}

// The current device's shared memory: multiprocessors, bytes an SM, the most a block may have (opt-in) and the
// bytes the system reserves a block.
struct staged_device_smem {
  int sms = 0;
  std::size_t per_sm = 0, per_block = 0, reserved = 0;
};
inline staged_device_smem staged_smem_of_device() {
  int dev = 0, sms = 0, per_sm = 0, per_block = 0, reserved = 0;
  GMI_CUDA_TRY(cudaGetDevice(&dev));
  GMI_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  GMI_CUDA_TRY(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev));
  GMI_CUDA_TRY(cudaDeviceGetAttribute(&per_block, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  GMI_CUDA_TRY(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, dev));
  return {sms, std::size_t(per_sm), std::size_t(per_block), std::size_t(reserved)};
}

// Stage K over all environments: with its slice where reals > 0 and the stage places anything in it, else plain.
template <class E, int K>
void staged_stage_launch(const gmi::physics::model_view<float>& m, const staged_arrays<E>& a, int reals,
                         unsigned blocks, unsigned threads, cudaStream_t s) {
  const int used = reals > 0 ? gmi::physics::stage_shared_used(E::sim::sizes_v, K, reals) : 0;
  if constexpr (gmi::physics::stage_slot_count(K) == 0) {  // integration: never a slice
    staged_stage_kernel<E, K><<<blocks, threads, 0, s>>>(m, a);
    return;
  }
  if (used == 0) {
    staged_stage_kernel<E, K><<<blocks, threads, 0, s>>>(m, a);
    return;
  }
  const std::size_t bytes = std::size_t(used) * threads * sizeof(float);
  if (bytes > 48 * 1024)
    GMI_CUDA_TRY(cudaFuncSetAttribute(staged_stage_shared_kernel<E, K>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(bytes)));
  staged_stage_shared_kernel<E, K><<<blocks, threads, bytes, s>>>(m, a, used);
}

}  // namespace detail

// The floats a thread's slice has in the staged kernels for n environments in blocks of `threads` on the current
// device (physics::request_staged_shared_reals: 0 none, -1 auto; physics::staged_slice_reals).
inline int staged_slice_reals_for(std::size_t n, int threads) {
  const int asked = gmi::physics::requested_staged_shared_reals();
  if (asked == 0) return 0;
  const detail::staged_device_smem d = detail::staged_smem_of_device();
  return gmi::physics::staged_slice_reals(asked, n, threads, d.sms, d.per_sm, d.per_block, d.reserved);
}

// Device memory the staged step of n environments of E keeps (its buffers; the batch's own state aside).
template <class E>
constexpr std::size_t staged_bytes(std::size_t n) {
  return (staged_arrays<E>::data_reals(n) + staged_arrays<E>::carry_reals(n)) * sizeof(float) + n;
}

// One env step of every environment of v, stage by stage, on stream s (enqueued, not waited for).
template <class E>
void staged_env_step(const env_batch_view<E>& v, const float* actions, const physics_step_out& out, cudaStream_t s) {
  if (v.num_envs == 0) return;
  namespace d = detail;
  std::unique_lock<std::mutex> held;
  d::staged_buffers& b = d::staged_buffers_for<E>(v.num_envs, s, held);
  const staged_arrays<E> a{b.data.data(), b.carry.data(), b.valid.data(), v.num_envs};
  const unsigned threads = static_cast<unsigned>(gmi::physics::requested_staged_block());
  const unsigned blocks = static_cast<unsigned>((v.num_envs + threads - 1) / threads);
  const gmi::physics::model_view<float>& m = v.params.model;
  d::staged_begin_kernel<E><<<blocks, threads, 0, s>>>(v, actions, a);
  const int substeps = E::physics_substeps(v.params);
  const int reals = staged_slice_reals_for(v.num_envs, static_cast<int>(threads));
  for (int k = 0; k < substeps; ++k) {
    d::staged_stage_launch<E, 0>(m, a, reals, blocks, threads, s);
    d::staged_stage_launch<E, 1>(m, a, reals, blocks, threads, s);
    d::staged_stage_launch<E, 2>(m, a, reals, blocks, threads, s);
    d::staged_stage_launch<E, 3>(m, a, reals, blocks, threads, s);
    d::staged_stage_launch<E, 4>(m, a, reals, blocks, threads, s);
  }
  d::staged_end_kernel<E><<<blocks, threads, 0, s>>>(v, actions, a, out);
  GMI_CUDA_TRY(cudaGetLastError());
  b.done.record(s);
}

}  // namespace gmi::rl
