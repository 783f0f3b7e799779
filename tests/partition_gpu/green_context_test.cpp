// green_context partition on a real GPU: slices of equal size with the leftover reported, one GMI thread per
// slice under the supervisor, each launching on its own green stream; the SMs the slices' blocks ran on are
// disjoint, and a fixed amount of work takes longer on a slice than on the whole GPU.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <set>
#include <vector>

#include <gmi/cuda/buffer.hpp>
#include <gmi/partition/green_context.hpp>
#include <gmi/runtime/supervisor.hpp>

#include "partition_gpu/kernels.hpp"

namespace gp = gmi::partition;

TEST_SUITE("gpu") {
  TEST_CASE("partition_gpu.green_context.disjoint_slices_per_thread" * doctest::timeout(120)) {
    if (auto st = gp::green_context::can_implement(4); !st) {
      MESSAGE("SKIPPED: ", st.message());
      return;
    }
    gp::green_context::config c;
    c.gmis_per_gpu = 4;
    gp::green_context::session s(c);
    MESSAGE(s.describe());
    CHECK(s.slice_sms(0) * 4 + s.leftover_sms(0) == s.split(0).total_sms);

    const int blocks = 512;
    std::mutex m;
    std::vector<std::set<int>> sms_of_slice(4);
    std::vector<double> ms_of_slice(4);
    auto spec = gmi::runtime::launch_spec::uniform(1, 4);
    spec.heartbeat_timeout = std::chrono::milliseconds(0);
    gmi::runtime::thread_group g(spec, [&](gmi::runtime::context& ctx) {
      gp::green_context::binding b(s, ctx.gpu(), ctx.slice());
      if (b.sm_count() != s.slice_sms(0)) throw std::runtime_error("slice size differs from the split");
      int* d = nullptr;
      GMI_CUDA_TRY(cudaMalloc(reinterpret_cast<void**>(&d), blocks * sizeof(int)));
      gmi_test::spin_record_sm(b.stream(), blocks, 20'000, d);  // warm-up
      b.stream().synchronize();
      const auto t0 = std::chrono::steady_clock::now();
      gmi_test::spin_record_sm(b.stream(), blocks, 2'000'000, d);
      b.stream().synchronize();
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      std::vector<int> h(blocks);
      GMI_CUDA_TRY(cudaMemcpy(h.data(), d, blocks * sizeof(int), cudaMemcpyDeviceToHost));
      GMI_CUDA_TRY(cudaFree(d));
      std::lock_guard lock(m);
      sms_of_slice[static_cast<std::size_t>(ctx.slice())] = std::set<int>(h.begin(), h.end());
      ms_of_slice[static_cast<std::size_t>(ctx.slice())] = ms;
    });
    const auto r = g.wait();
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.first_failure->message));
    for (int a = 0; a < 4; ++a) {
      CHECK(static_cast<int>(sms_of_slice[a].size()) <= s.slice_sms(0));
      for (int b = a + 1; b < 4; ++b) {
        std::vector<int> both;
        std::set_intersection(sms_of_slice[a].begin(), sms_of_slice[a].end(), sms_of_slice[b].begin(),
                              sms_of_slice[b].end(), std::back_inserter(both));
        CHECK_MESSAGE(both.empty(), "slices ", a, " and ", b, " share SMs");
      }
      MESSAGE("slice ", a, ": ", sms_of_slice[a].size(), " SMs used, ", ms_of_slice[a], " ms");
    }
    // The same work on the whole device (a plain stream on the primary context), for the scaling check.
    cudaStream_t full;
    GMI_CUDA_TRY(cudaStreamCreateWithFlags(&full, cudaStreamNonBlocking));
    int* d = nullptr;
    GMI_CUDA_TRY(cudaMalloc(reinterpret_cast<void**>(&d), blocks * sizeof(int)));
    gmi_test::spin_record_sm(full, blocks, 20'000, d);
    GMI_CUDA_TRY(cudaStreamSynchronize(full));
    const auto t0 = std::chrono::steady_clock::now();
    gmi_test::spin_record_sm(full, blocks, 2'000'000, d);
    GMI_CUDA_TRY(cudaStreamSynchronize(full));
    const double full_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    GMI_CUDA_TRY(cudaFree(d));
    GMI_CUDA_TRY(cudaStreamDestroy(full));
    // The slices ran concurrently; each had ~1/4 of the SMs, so each took well over the whole device's time.
    const double slowest = *std::max_element(ms_of_slice.begin(), ms_of_slice.end());
    MESSAGE("whole device: ", full_ms, " ms; slowest slice: ", slowest, " ms");
    CHECK(slowest > 2.0 * full_ms);
  }
}
