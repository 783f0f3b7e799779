// The device side of physics_gpu_test.cpp: a gmi::physics::batch stepped in kernels.
#include "gpu_steps.hpp"

#include <gmi/cuda/stream.hpp>
#include <gmi/physics/batch.cuh>

namespace gmi::test {
void run_physics_on_device(const gmi::physics::model<float>& m, int n, std::vector<float>& qpos,
                           std::vector<float>& qvel, const std::vector<float>& ctrl, int steps) {
  gmi::cuda::stream stream;
  gmi::physics::batch<float> b(m, n, stream.get());
  const auto& l = b.layout();
  auto put = [&](std::size_t offset, const std::vector<float>& v) {
    if (!v.empty())
      GMI_CUDA_TRY(
          cudaMemcpyAsync(b.field(offset), v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice, stream.get()));
  };
  auto get = [&](std::size_t offset, std::vector<float>& v) {
    if (!v.empty())
      GMI_CUDA_TRY(
          cudaMemcpyAsync(v.data(), b.field(offset), v.size() * sizeof(float), cudaMemcpyDeviceToHost, stream.get()));
  };
  put(l.qpos, qpos);
  put(l.qvel, qvel);
  put(l.ctrl, ctrl);
  b.step(stream.get(), steps);
  get(l.qpos, qpos);
  get(l.qvel, qvel);
  GMI_CUDA_TRY(cudaStreamSynchronize(stream.get()));
}
}  // namespace gmi::test
