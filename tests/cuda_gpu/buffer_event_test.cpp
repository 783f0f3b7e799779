// Device and pinned buffers round-trip data through gmi::cuda::copy; timing events measure a kernel.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <random>

#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/event.hpp>
#include <gmi/cuda/stream.hpp>

#include "cuda_gpu/kernels.hpp"

TEST_SUITE("gpu") {
  TEST_CASE("cuda.buffer.round_trip_through_device" * doctest::timeout(60)) {
    const std::size_t n = (1u << 20) + 7;
    gmi::cuda::stream s;
    gmi::cuda::pinned_buffer<std::uint32_t> in(n), out(n);
    std::mt19937 gen(2024);
    for (auto& x : in) x = gen();
    std::memset(out.data(), 0xCD, out.size_bytes());  // poison: a copy that does nothing can not pass
    gmi::cuda::device_buffer<std::uint32_t> a(n), b(n);
    a.fill_bytes(0xAB, s);
    b.fill_bytes(0xEF, s);
    gmi::cuda::copy(a.span(), in.span(), s);
    gmi::cuda::copy(b.span(), a.span(), s);  // device to device
    gmi::cuda::copy(out.span(), b.span(), s);
    s.synchronize();
    std::size_t mismatches = 0;
    for (std::size_t i = 0; i < n; ++i) mismatches += in[i] != out[i];
    CHECK(mismatches == 0);
  }

  TEST_CASE("cuda.buffer.size_mismatch_is_config_error") {
    gmi::cuda::stream s;
    gmi::cuda::pinned_buffer<float> host(8);
    gmi::cuda::device_buffer<float> dev(9);
    CHECK_THROWS_AS(gmi::cuda::copy(dev.span(), host.span(), s), gmi::config_error);
  }

  TEST_CASE("cuda.event.timing_is_positive" * doctest::timeout(60)) {
    gmi::cuda::stream s;
    gmi::cuda::event start(gmi::cuda::event::timing::enabled), stop(gmi::cuda::event::timing::enabled);
    start.record(s);
    gmi_test::spin(s, 64, 128, 2'000'000);  // about a millisecond
    stop.record(s);
    stop.synchronize();
    CHECK(stop.ready());
    const float ms = elapsed_ms(start, stop);
    MESSAGE("spin kernel: ", ms, " ms");
    CHECK(ms > 0.0f);
  }

  TEST_CASE("cuda.event.orders_streams" * doctest::timeout(60)) {
    gmi::cuda::stream producer, consumer;
    gmi::cuda::event done;
    const std::size_t n = 4096;
    gmi::cuda::device_buffer<int> d(n);
    gmi::cuda::pinned_buffer<int> h(n);
    gmi_test::spin(producer, 8, 32, 1'000'000);
    gmi_test::write_index(producer, d.data(), n, 7);
    done.record(producer);
    done.wait_on(consumer);
    gmi::cuda::copy(h.span(), d.span(), consumer);
    consumer.synchronize();
    for (std::size_t i = 0; i < n; ++i) REQUIRE(h[i] == 7 + static_cast<int>(i));
  }
}

// comm::comm_clock adds up the spans between its stamps on a stream (eager and replayed from a graph) and what
// kernels add through total(), and leaves out the work between spans.
TEST_SUITE("gpu") {
  TEST_CASE("cuda.comm_clock.adds_spans_eager_and_replayed" * doctest::timeout(60)) {
    gmi::cuda::stream s;
    constexpr unsigned long long ms = 1'000'000;
    for (const bool graph : {false, true}) {
      CAPTURE(graph);
      const double seconds = gmi_test::comm_clock_seconds(s, 5, 2 * ms, graph, 3 * ms);
      MESSAGE((graph ? "replayed" : "eager"), ": 5 spans of 2 ms + 3 ms from a kernel: ", seconds * 1e3, " ms");
      CHECK(seconds >= 0.0129);  // 13 ms, less the global timer's tick
      CHECK(seconds < 0.0175);   // the 10 ms of waits outside the spans are not in it
    }
  }
}
