#include "stats_gather_runs.hpp"

#include <cuda_runtime_api.h>

#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>

#include <gmi/cuda/check.hpp>
#include <gmi/rl/detail/ppo_stats_gather.cuh>

namespace {
// Device memory freed on scope exit.
template <class T>
struct device_array {
  T* p = nullptr;
  explicit device_array(std::size_t n) { GMI_CUDA_TRY(cudaMalloc(&p, n * sizeof(T))); GMI_CUDA_TRY(cudaMemset(p, 0, n * sizeof(T))); }
  ~device_array() { cudaFree(p); }
  device_array(const device_array&) = delete;
  device_array& operator=(const device_array&) = delete;
};
}  // namespace

int stats_gather_values(int obs_dim) { return 3 + (1 + 2 * obs_dim) + 3; }

std::vector<stats_gather_round> run_stats_gather(const stats_gather_rounds& o) {
  using gmi::rl::detail::gather_words;
  const int m = o.members, values = stats_gather_values(o.obs_dim);
  const std::size_t words = gather_words(m, static_cast<std::size_t>(values));
  const std::size_t count = words + 64;  // a row longer than the records, as a gradient row is
  std::vector<std::unique_ptr<device_array<float>>> rows, sums;
  std::vector<std::unique_ptr<device_array<double>>> local, merged;
  std::vector<std::unique_ptr<device_array<float>>> adv;
  std::vector<cudaStream_t> streams(static_cast<std::size_t>(m));
  for (int r = 0; r < m; ++r) {
    rows.push_back(std::make_unique<device_array<float>>(count));
    sums.push_back(std::make_unique<device_array<float>>(count));
    local.push_back(std::make_unique<device_array<double>>(static_cast<std::size_t>(values)));
    merged.push_back(std::make_unique<device_array<double>>(static_cast<std::size_t>(values)));
    adv.push_back(std::make_unique<device_array<float>>(2));
    GMI_CUDA_TRY(cudaStreamCreateWithFlags(&streams[static_cast<std::size_t>(r)], cudaStreamNonBlocking));
  }
  device_array<std::uint32_t> posted(static_cast<std::size_t>(m)), released(static_cast<std::size_t>(m)),
      counters(static_cast<std::size_t>(m)), abort_word(1), stalled(1);

  gmi::comm::row_exchange base{.count = count, .size = m, .posted = posted.p, .released = released.p,
                               .abort = abort_word.p, .stalled = stalled.p, .timeout_ns = 10'000'000'000ull};
  for (int r = 0; r < m; ++r) base.rows[r] = rows[static_cast<std::size_t>(r)]->p;

  std::mt19937_64 gen(o.seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> unit(0.1, 10.0);
  std::vector<stats_gather_round> out;
  const int part_at[3] = {0, 3, 3 + 1 + 2 * o.obs_dim}, part_dim[3] = {1, o.obs_dim, 1};
  for (int round = 0; round < o.rounds; ++round) {
    stats_gather_round res;
    for (int r = 0; r < m; ++r) {
      std::vector<double> rec(static_cast<std::size_t>(values));
      for (int p = 0; p < 3; ++p) {
        double* at = rec.data() + part_at[p];
        at[0] = 8192.0 * static_cast<double>(1 + (round + r) % 3);  // a rollout's samples
        for (int f = 0; f < part_dim[p]; ++f) {
          at[1 + f] = 300.0 * normal(gen) - 100.0;                 // means (returns are large and negative)
          at[1 + part_dim[p] + f] = at[0] * unit(gen) * unit(gen);  // M2 = count x variance
        }
      }
      GMI_CUDA_TRY(cudaMemcpy(local[static_cast<std::size_t>(r)]->p, rec.data(), rec.size() * sizeof(double),
                              cudaMemcpyHostToDevice));
      GMI_CUDA_TRY(cudaMemset(rows[static_cast<std::size_t>(r)]->p, 0x7F, count * sizeof(float)));  // garbage
      res.local.push_back(std::move(rec));
    }
    GMI_CUDA_TRY(cudaDeviceSynchronize());
    for (int r = 0; r < m; ++r) {
      const std::size_t i = static_cast<std::size_t>(r);
      gmi::rl::detail::ppo_stats_gather_args a;
      a.exchange = base;
      a.exchange.rank = r;
      a.exchange.counter = counters.p + r;
      a.local = local[i]->p;
      a.own = rows[i]->p;
      a.sums = sums[i]->p;
      a.merged = merged[i]->p;
      a.advantage_stats = adv[i]->p;
      a.values = values;
      for (int p = 0; p < 3; ++p) {
        a.part_at[p] = part_at[p];
        a.part_dim[p] = part_dim[p];
      }
      gmi::rl::detail::ppo_stats_gather_kernel<<<1, gmi::rl::detail::ppo_stats_gather_block, 0, streams[i]>>>(a);
      GMI_CUDA_TRY(cudaGetLastError());
    }
    GMI_CUDA_TRY(cudaDeviceSynchronize());
    std::uint32_t stall = 0;
    GMI_CUDA_TRY(cudaMemcpy(&stall, stalled.p, sizeof stall, cudaMemcpyDeviceToHost));
    if (stall != 0) throw std::runtime_error("stats gather: a wait gave up in round " + std::to_string(round));
    for (int r = 0; r < m; ++r) {
      const std::size_t i = static_cast<std::size_t>(r);
      std::vector<double> got(static_cast<std::size_t>(values));
      std::vector<float> scale(2);
      GMI_CUDA_TRY(cudaMemcpy(got.data(), merged[i]->p, got.size() * sizeof(double), cudaMemcpyDeviceToHost));
      GMI_CUDA_TRY(cudaMemcpy(scale.data(), adv[i]->p, 2 * sizeof(float), cudaMemcpyDeviceToHost));
      res.merged.push_back(std::move(got));
      res.advantage_stats.push_back(std::move(scale));
    }
    out.push_back(std::move(res));
  }
  for (cudaStream_t s : streams) cudaStreamDestroy(s);
  return out;
}
