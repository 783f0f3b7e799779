// The CUDA side of gathered_sum_test.cpp.
#include "gathered_sum_kernels.hpp"

#include <cuda_runtime_api.h>

#include <exception>
#include <mutex>
#include <thread>

#include <gmi/comm/gathered_sum.cuh>
#include <gmi/comm/nccl.hpp>
#include <gmi/core/cuda_try.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/graph.hpp>

namespace gmi_test {

std::vector<float> gathered_sum_kernel(const std::vector<float>& rows, int n, std::size_t count) {
  GMI_CUDA_TRY(cudaSetDevice(0));
  gmi::cuda::device_buffer<float> in(rows.size()), out(count);
  GMI_CUDA_TRY(cudaMemcpy(in.data(), rows.data(), rows.size() * sizeof(float), cudaMemcpyHostToDevice));
  gmi::comm::detail::launch_gathered_sum(in.data(), n, count, out.data(), nullptr);
  std::vector<float> host(count);
  GMI_CUDA_TRY(cudaMemcpy(host.data(), out.data(), count * sizeof(float), cudaMemcpyDeviceToHost));
  return host;
}

two_rank_sums two_rank_sums_of(const std::vector<float> (&first)[2], const std::vector<float> (&second)[2]) {
  two_rank_sums out;
  const gmi::comm::nccl_id id = gmi::comm::nccl_id::generate();
  std::mutex m;
  const auto rank = [&](int r) {
    try {
      GMI_CUDA_TRY(cudaSetDevice(r));
      const std::size_t count = first[r].size();
      gmi::comm::nccl_communicator comm(2, id, r);
      cudaStream_t s = nullptr;
      GMI_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      gmi::cuda::device_buffer<float> v(count);
      const auto load = [&](const std::vector<float>& x) {
        GMI_CUDA_TRY(cudaMemcpyAsync(v.data(), x.data(), count * sizeof(float), cudaMemcpyHostToDevice, s));
      };
      const auto read = [&] {
        std::vector<float> h(count);
        GMI_CUDA_TRY(cudaMemcpyAsync(h.data(), v.data(), count * sizeof(float), cudaMemcpyDeviceToHost, s));
        comm.synchronize(s);
        return h;
      };
      load(first[r]);
      comm.allreduce(v.data(), v.data(), count, s);
      out.allreduce[r] = read();
      {
        gmi::comm::gathered_sum_rows rows(comm, count);
        load(first[r]);
        comm.allreduce(v.data(), v.data(), count, s);
        out.gathered[r] = read();
        // As a replayed update uses it: captured once, launched on new values.
        const gmi::cuda::graph_exec g = gmi::cuda::instantiate(gmi::cuda::capture(s, [&](cudaStream_t c) {
          comm.allreduce(v.data(), v.data(), count, c);
        }));
        load(second[r]);
        g.launch(s);
        out.replayed[r] = read();
        comm.synchronize(s);
      }
      GMI_CUDA_TRY(cudaStreamDestroy(s));
    } catch (const std::exception& e) {
      std::lock_guard lock(m);
      out.error += "rank " + std::to_string(r) + ": " + e.what() + "; ";
    }
  };
  std::thread t0(rank, 0), t1(rank, 1);
  t0.join();
  t1.join();
  return out;
}

}  // namespace gmi_test
