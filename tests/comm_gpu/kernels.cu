#include "kernels.hpp"

#include <cmath>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include <gmi/comm/hierarchical.cuh>
#include <gmi/cuda/green_context.hpp>

namespace gmi_test {

double reduce_kernel_error(int m, std::size_t count, std::size_t offset) {
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<gmi::cuda::device_buffer<float>> bufs;
  std::vector<std::vector<float>> host(m, std::vector<float>(count));
  std::vector<const float*> in;
  gmi::cuda::stream s;
  for (int k = 0; k < m; ++k) {
    for (auto& x : host[k]) x = u(rng);
    bufs.emplace_back(count + offset);
    GMI_CUDA_TRY(cudaMemcpy(bufs[k].data() + offset, host[k].data(), count * 4, cudaMemcpyHostToDevice));
    in.push_back(bufs[k].data() + offset);
  }
  gmi::cuda::device_buffer<float> out(count + offset);
  gmi::comm::reduce_into(in, out.data() + offset, count, s);
  // In place as well: the first input becomes the sum.
  gmi::comm::reduce_into(in, bufs[0].data() + offset, count, s);
  s.synchronize();
  std::vector<float> got(count), got_in_place(count);
  GMI_CUDA_TRY(cudaMemcpy(got.data(), out.data() + offset, count * 4, cudaMemcpyDeviceToHost));
  GMI_CUDA_TRY(cudaMemcpy(got_in_place.data(), bufs[0].data() + offset, count * 4, cudaMemcpyDeviceToHost));
  double worst = 0;
  for (std::size_t i = 0; i < count; ++i) {
    double want = 0;
    for (int k = 0; k < m; ++k) want += host[k][i];
    worst = std::max({worst, std::fabs(got[i] - want), std::fabs(got_in_place[i] - want)});
  }
  return worst;
}

namespace {
__global__ void fill(float* x, std::size_t n, int rank, int round) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n; i += std::size_t{gridDim.x} * blockDim.x)
    x[i] = static_cast<float>(rank + 1) + 0.25f * static_cast<float>(i % 7) + static_cast<float>(round);
}
}  // namespace

std::size_t threads_hierarchical(int m, std::size_t count, int rounds, bool& used_green, std::string& error,
                                 bool copy_back, bool every_gmi) {
  const std::string tag = gmi::comm::unique_tag("thr");
  std::optional<gmi::cuda::sm_split> split;
  used_green = false;
  if (gmi::cuda::can_split(0, m, 8)) {
    split = gmi::cuda::split_sm(0, m, 8);
    used_green = true;
  }
  std::vector<std::size_t> wrong(m, 0);
  std::vector<std::string> errors(m);
  // Buffers outlive every thread: a GMI must not free memory its leader still reads.
  GMI_CUDA_TRY(cudaSetDevice(0));
  std::vector<gmi::cuda::device_buffer<float>> bufs;
  for (int r = 0; r < m; ++r) bufs.emplace_back(count);
  std::vector<std::thread> threads;
  for (int r = 0; r < m; ++r) {
    threads.emplace_back([&, r] {
      try {
        GMI_CUDA_TRY(cudaSetDevice(0));
        std::optional<gmi::cuda::green_context> g;
        std::optional<gmi::cuda::scoped_current> cur;
        std::optional<gmi::cuda::green_stream> gs;
        std::optional<gmi::cuda::stream> ps;
        if (split) {
          g.emplace(*split, static_cast<std::size_t>(r));
          cur.emplace(*g);
          gs.emplace(*g);
        } else {
          ps.emplace();
        }
        const cudaStream_t s = split ? gs->get() : ps->get();
        {
          auto& buf = bufs[r];
          gmi::comm::hierarchical_options o;
          o.tag = tag;
          o.local_rank = r;
          o.local_size = m;
          o.mode = gmi::comm::sharing::in_process;
          o.timeout = std::chrono::seconds(20);
          o.copy_back = copy_back;
          o.reduce = every_gmi ? gmi::comm::reducer::every_gmi : gmi::comm::reducer::leader;
          gmi::comm::hierarchical_allreduce h(o, buf.data(), count);
          std::vector<float> host(count);
          for (int round = 0; round < rounds; ++round) {
            fill<<<128, 256, 0, s>>>(buf.data(), count, r, round);
            h.allreduce(s);
            GMI_CUDA_TRY(cudaMemcpyAsync(host.data(), h.result(), count * 4, cudaMemcpyDeviceToHost, s));
            GMI_CUDA_TRY(cudaStreamSynchronize(s));
            for (std::size_t i = 0; i < count; ++i) {
              const float want = static_cast<float>(m * (m + 1) / 2) + m * (0.25f * (i % 7) + round);
              wrong[r] += host[i] != want;
            }
          }
        }
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  std::size_t total = 0;
  for (int r = 0; r < m; ++r) {
    total += wrong[r];
    if (!errors[r].empty()) error += "thread " + std::to_string(r) + ": " + errors[r] + "; ";
  }
  return total;
}

}  // namespace gmi_test
