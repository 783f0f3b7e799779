// Streams, events and buffers: moves keep exactly one owner, and without a driver or device construction
// throws gmi::cuda_error instead of crashing.
#include <doctest/doctest.h>

#include <string>
#include <utility>

#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/device.hpp>
#include <gmi/cuda/event.hpp>
#include <gmi/cuda/stream.hpp>

TEST_SUITE("cpu") {
  TEST_CASE("cuda.objects.construction_without_device_throws_cuda_error") {
    const auto n = gmi::cuda::device_count();
    if (n) {
      MESSAGE("a CUDA device is visible (", *n, "): this case checks machines without one");
      return;
    }
    INFO("device_count: ", n.error().message());
    CHECK(n.error().value() != gmi::status::code::ok);
    CHECK_THROWS_AS(gmi::cuda::stream{}, gmi::cuda_error);
    CHECK_THROWS_AS(gmi::cuda::event{}, gmi::cuda_error);
    CHECK_THROWS_AS(gmi::cuda::event{gmi::cuda::event::timing::enabled}, gmi::cuda_error);
    CHECK_THROWS_AS(gmi::cuda::device_buffer<float>(1024), gmi::cuda_error);
    CHECK_THROWS_AS(gmi::cuda::pinned_buffer<float>(1024), gmi::cuda_error);
    try {
      gmi::cuda::stream s;
    } catch (const gmi::cuda_error& e) {
      CHECK(e.code() != 0);
      CHECK(std::string(e.what()).find("cudaStreamCreateWithPriority") != std::string::npos);
    }
  }

  TEST_CASE("cuda.objects.empty_buffers_need_no_driver") {
    gmi::cuda::device_buffer<float> d(0);
    gmi::cuda::pinned_buffer<int> p(0);
    CHECK(d.data() == nullptr);
    CHECK(d.size() == 0);
    CHECK(p.data() == nullptr);
    CHECK(p.span().empty());
  }

  TEST_CASE("cuda.objects.moves_transfer_ownership") {
    // An adopted, not owned stream handle moves like an owned one and is never destroyed here.
    auto fake = reinterpret_cast<cudaStream_t>(0x1234);
    gmi::cuda::stream a(fake, false);
    gmi::cuda::stream b(std::move(a));
    CHECK(a.get() == nullptr);
    CHECK(b.get() == fake);
    gmi::cuda::stream c(nullptr, false);
    c = std::move(b);
    CHECK(b.get() == nullptr);
    CHECK(c.get() == fake);

    if (!gmi::cuda::device_count()) return;  // the rest allocates
    gmi::cuda::device_buffer<float> d(256);
    float* const raw = d.data();
    gmi::cuda::device_buffer<float> e(std::move(d));
    CHECK(d.data() == nullptr);
    CHECK(d.size() == 0);
    CHECK(e.data() == raw);
    CHECK(e.size() == 256);
    gmi::cuda::device_buffer<float> f;
    f = std::move(e);
    CHECK(f.data() == raw);
    CHECK(e.data() == nullptr);

    gmi::cuda::pinned_buffer<int> p(64);
    int* const host = p.data();
    gmi::cuda::pinned_buffer<int> q(std::move(p));
    CHECK(p.data() == nullptr);
    CHECK(q.data() == host);

    gmi::cuda::stream s;
    const cudaStream_t handle = s.get();
    gmi::cuda::stream t(std::move(s));
    CHECK(s.get() == nullptr);
    CHECK(t.get() == handle);

    gmi::cuda::event ev;
    const cudaEvent_t eh = ev.get();
    gmi::cuda::event ew(std::move(ev));
    CHECK(ev.get() == nullptr);
    CHECK(ew.get() == eh);
  }

  TEST_CASE("cuda.objects.copy_size_mismatch_is_config_error") {
    // Checked before any CUDA call, so it holds with or without a device.
    float host[4] = {};
    gmi::device_span<float> dst(nullptr, 3);
    CHECK_THROWS_AS(gmi::cuda::copy(dst, gmi::host_span<const float>(host, 4), nullptr), gmi::config_error);
  }
}
