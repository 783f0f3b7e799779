// The consumer's CUDA translation unit: gmi's exec::cuda for_each and the device RNG.
#include <gmi/gmi.hpp>

#include <vector>

double device_mean_uniform(unsigned long long seed, int n) {
  float* out = nullptr;
  GMI_CUDA_TRY(cudaMalloc(&out, n * sizeof(float)));
  gmi::exec::for_each(gmi::exec::cuda{}, n, [=] __device__(std::size_t i) { out[i] = gmi::rng(seed, i).uniform(); });
  std::vector<float> host(n);
  GMI_CUDA_TRY(cudaMemcpy(host.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost));
  GMI_CUDA_TRY(cudaFree(out));
  double sum = 0;
  for (float x : host) sum += x;
  return sum / n;
}
