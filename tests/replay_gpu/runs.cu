// Runs the device table for the GPU tests.
#include <gmi/replay/device_table.cuh>

#include "replay_gpu/runs.hpp"

namespace replay_gpu {

std::vector<run_result> run_device(const gmi::replay::table_spec& spec,
                                   const std::vector<replay_test::rollout_data>& inserts, const std::vector<draw>& draws,
                                   gmi::replay::snapshot* snap) {
  gmi::replay::device_table t(spec);
  auto w = t.make_writer(inserts.at(0).envs);
  for (const auto& d : inserts) {
    std::vector<gmi::cuda::device_buffer<float>> cols;
    gmi::cuda::device_buffer<float> prio(d.priorities.size());
    gmi::replay::rollout r;
    for (const auto& c : d.cols) {
      cols.emplace_back(c.size());
      GMI_CUDA_TRY(cudaMemcpy(cols.back().data(), c.data(), c.size() * 4, cudaMemcpyHostToDevice));
      r.columns.push_back(cols.back().data());
    }
    if (!d.priorities.empty()) {
      GMI_CUDA_TRY(cudaMemcpy(prio.data(), d.priorities.data(), d.priorities.size() * 4, cudaMemcpyHostToDevice));
      r.priorities = prio.data();
    }
    r.horizon = d.horizon;
    r.envs = d.envs;
    t.insert(w, r);
    GMI_CUDA_TRY(cudaStreamSynchronize(t.stream()));  // cols and prio are freed at scope exit
  }
  std::vector<run_result> out;
  gmi::replay::device_batch b;
  for (const auto& dr : draws) {
    t.sample(dr.smp, dr.n, dr.length, dr.seed, b);
    GMI_CUDA_TRY(cudaStreamSynchronize(t.stream()));
    run_result r;
    r.keys.resize(dr.n);
    r.probability.resize(dr.n);
    r.mask.resize(dr.n * dr.length);
    GMI_CUDA_TRY(cudaMemcpy(r.keys.data(), b.keys.data(), dr.n * 4, cudaMemcpyDeviceToHost));
    GMI_CUDA_TRY(cudaMemcpy(r.probability.data(), b.probability.data(), dr.n * 8, cudaMemcpyDeviceToHost));
    GMI_CUDA_TRY(cudaMemcpy(r.mask.data(), b.mask.data(), r.mask.size() * 4, cudaMemcpyDeviceToHost));
    for (std::size_t c = 0; c < spec.columns.size(); ++c) {
      r.columns.emplace_back(dr.n * dr.length * spec.columns[c].width);
      GMI_CUDA_TRY(cudaMemcpy(r.columns.back().data(), b.columns[c].data(), r.columns.back().size() * 4,
                              cudaMemcpyDeviceToHost));
    }
    r.size = t.size();
    out.push_back(std::move(r));
  }
  if (snap) *snap = t.take_snapshot();
  return out;
}

}  // namespace replay_gpu
