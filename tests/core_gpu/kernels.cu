// Device code of the core_gpu tests: gmi::rng and exec::cuda for_each run on the GPU (kernels.hpp).
#include "core_gpu/kernels.hpp"

#include <gmi/core/rng.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/exec/cuda.cuh>

namespace gmi_test {
namespace {

__global__ void draw_kernel(std::uint64_t seed, std::uint64_t stream, int count, std::uint32_t* u32, float* uniform,
                            float* normal, float* uniform_range) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  gmi::rng a(seed, stream);
  for (int i = 0; i < count; ++i) u32[i] = a.next_u32();
  gmi::rng b(seed, stream);
  for (int i = 0; i < count; ++i) uniform[i] = b.uniform();
  gmi::rng c(seed, stream);
  for (int i = 0; i < count; ++i) normal[i] = c.normal();
  gmi::rng d(seed, stream);
  for (int i = 0; i < count; ++i) uniform_range[i] = d.uniform(-0.2f, 0.3f);
}

template <class T>
std::vector<T> to_host(const gmi::cuda::device_buffer<T>& d, const gmi::cuda::stream& s) {
  gmi::cuda::pinned_buffer<T> h(d.size());
  gmi::cuda::copy(h.span(), d.span(), s);
  s.synchronize();
  return {h.begin(), h.end()};
}

}  // namespace

device_draws rng_draws_on_device(std::uint64_t seed, std::uint64_t stream, int count) {
  gmi::cuda::stream s;
  const auto n = static_cast<std::size_t>(count);
  gmi::cuda::device_buffer<std::uint32_t> u32(n);
  gmi::cuda::device_buffer<float> uniform(n), normal(n), uniform_range(n);
  draw_kernel<<<1, 1, 0, s>>>(seed, stream, count, u32.data(), uniform.data(), normal.data(), uniform_range.data());
  GMI_CUDA_TRY(cudaGetLastError());
  return {to_host(u32, s), to_host(uniform, s), to_host(normal, s), to_host(uniform_range, s)};
}

std::vector<int> for_each_visits(std::size_t n) {
  gmi::cuda::stream s;
  gmi::cuda::device_buffer<int> hits(n);
  hits.fill_bytes(0, s);
  int* const h = hits.data();
  gmi::exec::for_each(gmi::exec::cuda{s.get()}, n, [=] __device__(std::size_t i) { atomicAdd(h + i, 1); });
  gmi::exec::synchronize(gmi::exec::cuda{s.get()});
  return to_host(hits, s);
}

}  // namespace gmi_test
