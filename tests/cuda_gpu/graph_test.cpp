// CUDA graphs on a real stream: a captured sequence of kernels replayed N times equals eager execution, and
// update takes new parameters when the topology is unchanged and refuses otherwise.
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <vector>

#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/graph.hpp>
#include <gmi/cuda/stream.hpp>

#include "cuda_gpu/kernels.hpp"

namespace {
constexpr std::size_t n = 100'003;

// The per-iteration work: three dependent kernels.
void step(cudaStream_t s, float* x, float scale) {
  gmi_test::scale_add(s, x, n, scale, 1.0f);
  gmi_test::scale_add(s, x, n, 0.5f, -0.25f);
  gmi_test::scale_add(s, x, n, 1.0f / scale, 0.125f);
}

std::vector<float> start_values() {
  std::vector<float> v(n);
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (auto& x : v) x = u(gen);
  return v;
}

// Loads the start values into d and returns nothing until the copy is done.
void load(gmi::cuda::device_buffer<float>& d, gmi::cuda::pinned_buffer<float>& staging, const gmi::cuda::stream& s) {
  const auto v = start_values();
  std::memcpy(staging.data(), v.data(), n * sizeof(float));
  gmi::cuda::copy(d.span(), staging.span(), s);
  s.synchronize();
}

std::vector<float> read(const gmi::cuda::device_buffer<float>& d, gmi::cuda::pinned_buffer<float>& staging,
                        const gmi::cuda::stream& s) {
  std::memset(staging.data(), 0xFF, n * sizeof(float));  // poison (NaN pattern)
  gmi::cuda::copy(staging.span(), d.span(), s);
  s.synchronize();
  return {staging.begin(), staging.end()};
}

// Bitwise equality: the same kernels on the same data give the same bits, graph or not.
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}
}  // namespace

TEST_SUITE("gpu") {
  TEST_CASE("cuda.graph.replay_matches_eager" * doctest::timeout(60)) {
    const int iterations = 25;
    gmi::cuda::stream s;
    gmi::cuda::pinned_buffer<float> staging(n);
    gmi::cuda::device_buffer<float> eager(n), replayed(n);

    load(eager, staging, s);
    for (int i = 0; i < iterations; ++i) step(s, eager.data(), 3.0f);
    const auto want = read(eager, staging, s);

    load(replayed, staging, s);
    gmi::cuda::graph g = gmi::cuda::capture(s, [&](cudaStream_t cs) { step(cs, replayed.data(), 3.0f); });
    CHECK(g.node_count() == 3);
    // Capturing records the work without running it.
    CHECK(same_bits(read(replayed, staging, s), start_values()));
    gmi::cuda::graph_exec exec = gmi::cuda::instantiate(g);
    exec.upload(s);
    for (int i = 0; i < iterations; ++i) exec.launch(s);
    CHECK(same_bits(read(replayed, staging, s), want));
  }

  TEST_CASE("cuda.graph.begin_end_capture_and_double_begin" * doctest::timeout(60)) {
    gmi::cuda::stream s;
    gmi::cuda::device_buffer<float> x(n);
    gmi::cuda::begin_capture(s);
    CHECK_THROWS_AS(gmi::cuda::begin_capture(s), gmi::config_error);
    step(s, x.data(), 2.0f);
    gmi::cuda::graph g = gmi::cuda::end_capture(s);
    CHECK(g.node_count() == 3);
    CHECK_THROWS_AS((void)gmi::cuda::end_capture(s), gmi::config_error);
  }

  TEST_CASE("cuda.graph.exception_in_capture_ends_it" * doctest::timeout(60)) {
    gmi::cuda::stream s;
    gmi::cuda::device_buffer<float> x(n);
    struct boom {};
    CHECK_THROWS_AS((void)gmi::cuda::capture(s,
                                             [&](cudaStream_t cs) {
                                               step(cs, x.data(), 2.0f);
                                               throw boom{};
                                             }),
                    boom);
    cudaStreamCaptureStatus st{};
    REQUIRE(cudaStreamIsCapturing(s, &st) == cudaSuccess);
    CHECK(st == cudaStreamCaptureStatusNone);
    // The stream works normally afterwards.
    step(s, x.data(), 2.0f);
    s.synchronize();
  }

  TEST_CASE("cuda.graph.update_same_topology_applies" * doctest::timeout(60)) {
    const int iterations = 5;
    gmi::cuda::stream s;
    gmi::cuda::pinned_buffer<float> staging(n);
    gmi::cuda::device_buffer<float> eager(n), replayed(n);

    load(eager, staging, s);
    for (int i = 0; i < iterations; ++i) step(s, eager.data(), 5.0f);
    const auto want = read(eager, staging, s);

    gmi::cuda::graph first = gmi::cuda::capture(s, [&](cudaStream_t cs) { step(cs, replayed.data(), 3.0f); });
    gmi::cuda::graph_exec exec = gmi::cuda::instantiate(first);
    gmi::cuda::graph second = gmi::cuda::capture(s, [&](cudaStream_t cs) { step(cs, replayed.data(), 5.0f); });
    CHECK(exec.update(second));

    load(replayed, staging, s);
    for (int i = 0; i < iterations; ++i) exec.launch(s);
    CHECK(same_bits(read(replayed, staging, s), want));
  }

  TEST_CASE("cuda.graph.update_new_topology_is_refused" * doctest::timeout(60)) {
    gmi::cuda::stream s;
    gmi::cuda::pinned_buffer<float> staging(n);
    gmi::cuda::device_buffer<float> eager(n), replayed(n);

    load(eager, staging, s);
    step(s, eager.data(), 3.0f);
    const auto want = read(eager, staging, s);

    gmi::cuda::graph three = gmi::cuda::capture(s, [&](cudaStream_t cs) { step(cs, replayed.data(), 3.0f); });
    gmi::cuda::graph_exec exec = gmi::cuda::instantiate(three);
    gmi::cuda::graph four = gmi::cuda::capture(s, [&](cudaStream_t cs) {
      step(cs, replayed.data(), 3.0f);
      gmi_test::scale_add(cs, replayed.data(), n, 2.0f, 0.0f);
    });
    CHECK(four.node_count() == 4);
    CHECK_FALSE(exec.update(four));
    CHECK(cudaGetLastError() == cudaSuccess);  // the refusal leaves no error behind

    // The executable is as it was: one replay equals one eager step.
    load(replayed, staging, s);
    exec.launch(s);
    CHECK(same_bits(read(replayed, staging, s), want));
  }
}
