// The CUDA side of gathered_sum_test.cpp.
#include "gathered_sum_kernels.hpp"

#include <cuda_runtime_api.h>

#include <exception>
#include <mutex>
#include <thread>

#include <gmi/comm/gathered_sum.cuh>
#include <gmi/comm/nccl.hpp>
#include <gmi/comm/two_level_sum.cuh>
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

namespace {
// One rank's vector on its device and a stream: a float sum over `comm` of a host vector, eagerly or (replayed)
// captured once in a CUDA graph and launched on it, as a replayed update uses the sum; each read back once done.
struct rank_vector {
  gmi::comm::nccl_communicator& comm;
  std::size_t count;
  gmi::cuda::device_buffer<float> v;
  cudaStream_t s = nullptr;
  rank_vector(gmi::comm::nccl_communicator& c, std::size_t n) : comm(c), count(n), v(n) {
    GMI_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  }
  rank_vector(const rank_vector&) = delete;
  rank_vector& operator=(const rank_vector&) = delete;
  ~rank_vector() { cudaStreamDestroy(s); }
  std::vector<float> summed(const std::vector<float>& x) {
    load(x);
    comm.allreduce(v.data(), v.data(), count, s);
    return read();
  }
  std::vector<float> replayed(const std::vector<float>& x) {
    const gmi::cuda::graph_exec g = gmi::cuda::instantiate(gmi::cuda::capture(s, [&](cudaStream_t c) {
      comm.allreduce(v.data(), v.data(), count, c);
    }));
    load(x);
    g.launch(s);
    std::vector<float> h = read();
    comm.synchronize(s);
    return h;
  }

 private:
  void load(const std::vector<float>& x) {
    GMI_CUDA_TRY(cudaMemcpyAsync(v.data(), x.data(), count * sizeof(float), cudaMemcpyHostToDevice, s));
  }
  std::vector<float> read() {
    std::vector<float> h(count);
    GMI_CUDA_TRY(cudaMemcpyAsync(h.data(), v.data(), count * sizeof(float), cudaMemcpyDeviceToHost, s));
    comm.synchronize(s);
    return h;
  }
};

// Runs rank(r) for r = 0 .. n-1 on threads; each rank's exception goes to `error`.
template <class Rank>
void on_ranks(int n, std::string& error, Rank&& rank) {
  std::mutex m;
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        GMI_CUDA_TRY(cudaSetDevice(r));
        rank(r);
      } catch (const std::exception& e) {
        std::lock_guard lock(m);
        error += "rank " + std::to_string(r) + ": " + e.what() + "; ";
      }
    });
  }
  for (auto& t : threads) t.join();
}
}  // namespace

two_rank_sums two_rank_sums_of(const std::vector<float> (&first)[2], const std::vector<float> (&second)[2]) {
  two_rank_sums out;
  const gmi::comm::nccl_id id = gmi::comm::nccl_id::generate();
  on_ranks(2, out.error, [&](int r) {
    gmi::comm::nccl_communicator comm(2, id, r);
    rank_vector v(comm, first[r].size());
    out.allreduce[r] = v.summed(first[r]);
    gmi::comm::gathered_sum_rows rows(comm, first[r].size());
    out.gathered[r] = v.summed(first[r]);
    out.replayed[r] = v.replayed(second[r]);
    gmi::comm::gathered_sum_rows direct(comm, first[r].size(), true);  // the rows through sends and receives
    out.direct[r] = v.summed(first[r]);
    out.direct_replayed[r] = v.replayed(second[r]);
  });
  return out;
}

four_rank_sums four_rank_sums_of(const std::vector<float> (&first)[4], const std::vector<float> (&second)[4]) {
  four_rank_sums out;
  const gmi::comm::nccl_id all_id = gmi::comm::nccl_id::generate();
  gmi::comm::two_level_nccl_ids ids[2][2];  // [host][gpu]: host h's id, rail k's id
  for (int k = 0; k < 2; ++k) {
    const gmi::comm::nccl_id host_id = gmi::comm::nccl_id::generate(), rail_id = gmi::comm::nccl_id::generate();
    ids[k][0].host = ids[k][1].host = host_id;  // host k's GPUs
    ids[0][k].rail = ids[1][k].rail = rail_id;  // GPU k of both hosts
  }
  on_ranks(4, out.error, [&](int r) {
    const int host = r / 2, gpu = r % 2;
    gmi::comm::nccl_communicator all(4, all_id, r);
    gmi::comm::gathered_sum_rows rows(all, first[r].size());  // the one-level allgather over all 4
    rank_vector v(all, first[r].size());
    out.gathered[r] = v.summed(first[r]);
    gmi::comm::gathered_sum_rows direct(all, first[r].size(), true);  // every row straight from its rank
    out.direct[r] = v.summed(first[r]);
    out.direct_replayed[r] = v.replayed(second[r]);
    // Installed in `all`, the two levels take its float sums from here on (as in gmi::run across hosts).
    gmi::comm::two_level_sum levels(all, gmi::comm::two_level_shape{2, 2}, host, gpu, ids[host][gpu],
                                    first[r].size(), gmi::comm::nccl_options{});
    out.two_level[r] = v.summed(first[r]);
    out.replayed[r] = v.replayed(second[r]);
  });
  return out;
}

}  // namespace gmi_test
