// The ant_v4's device runs for physics_tasks_gpu_test.cpp (physics_task_runs.cuh), in a file of their own.
#include <gmi/envs/ant_v4.hpp>

#include "physics_task_runs.cuh"

template struct physics_task_runs<gmi::envs::ant_v4>;

std::vector<float> run_local_batch_ant_v4(int n, const std::vector<float>& ctrl, int launches, int substeps) {
  using M = gmi::envs::ant_v4::sim::model_type;
  gmi::cuda::stream stream;
  gmi::physics::local_batch<M> b(n, stream.get());
  GMI_CUDA_TRY(cudaMemcpyAsync(b.ctrl(), ctrl.data(), ctrl.size() * sizeof(float), cudaMemcpyHostToDevice,
                               stream.get()));
  for (int l = 0; l < launches; ++l) b.step(stream.get(), substeps);
  std::vector<float> q(std::size_t(gmi::envs::ant_v4::sim::nq) * n);
  GMI_CUDA_TRY(cudaMemcpyAsync(q.data(), b.qpos(), q.size() * sizeof(float), cudaMemcpyDeviceToHost, stream.get()));
  GMI_CUDA_TRY(cudaStreamSynchronize(stream.get()));
  return q;
}
