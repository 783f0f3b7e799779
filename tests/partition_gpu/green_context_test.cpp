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

    // The work must saturate the device for the timing to scale with SM count: 512 blocks of 128 threads fit in
    // one wave on 32 SMs (16 per SM), so a slice and the whole device both took one spin. 16 full waves of the
    // whole device instead: ~66 waves on a 32-SM slice, so a slice takes ~total/slice (4 x 32 of 132: ~4.1x).
    const int per_sm = gmi_test::spin_record_sm_blocks_per_sm();
    REQUIRE(per_sm > 0);
    const int total_sms = s.split(0).total_sms;
    const int blocks = total_sms * per_sm * 16;
    const long long cycles = 200'000;  // about 0.1 ms per block
    MESSAGE(blocks, " blocks (", per_sm, " per SM at once, 16 waves on ", total_sms, " SMs) of ", cycles, " cycles");
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
      gmi_test::spin_record_sm(b.stream(), blocks, 2'000, d);  // warm-up
      b.stream().synchronize();
      const auto t0 = std::chrono::steady_clock::now();
      gmi_test::spin_record_sm(b.stream(), blocks, cycles, d);
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
    gmi_test::spin_record_sm(full, blocks, 2'000, d);
    GMI_CUDA_TRY(cudaStreamSynchronize(full));
    const auto t0 = std::chrono::steady_clock::now();
    gmi_test::spin_record_sm(full, blocks, cycles, d);
    GMI_CUDA_TRY(cudaStreamSynchronize(full));
    const double full_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    GMI_CUDA_TRY(cudaFree(d));
    GMI_CUDA_TRY(cudaStreamDestroy(full));
    // The slices ran concurrently; each had ~1/4 of the SMs, so each took well over the whole device's time
    // (ideal total/slice SMs, ~4.1; launch and synchronisation overheads lower it).
    const double ideal = double(total_sms) / s.slice_sms(0);
    MESSAGE("whole device: ", full_ms, " ms; ideal slice/whole ratio ", ideal);
    for (int a = 0; a < 4; ++a)
      CHECK_MESSAGE(ms_of_slice[a] > 2.0 * full_ms, "slice ", a, ": ", ms_of_slice[a], " ms vs whole device ", full_ms,
                    " ms: ratio ", ms_of_slice[a] / full_ms, " (ideal ", ideal, ")");
  }
}
