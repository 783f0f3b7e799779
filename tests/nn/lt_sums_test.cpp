// The order of lt_mlp's bias-gradient column sums (nn/detail/lt_sums.hpp, the host twins of the GPU kernels in
// nn/detail/lt_column_sums.cuh): chunks of 256 rows, 8 strided lanes a column summed in lane order, chunks in
// order; the dz pass that forms the first stage on the way gives the same bits as summing its stored dz.
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <gmi/nn/activation.hpp>
#include <gmi/nn/detail/lt_sums.hpp>

namespace {
namespace d = gmi::nn::detail;

std::vector<float> draw(std::size_t n, std::uint64_t seed, float lo, float hi) {
  std::vector<float> v(n);
  std::uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  for (auto& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = lo + (hi - lo) * static_cast<float>(s >> 40) / static_cast<float>(1ull << 24);
  }
  return v;
}

const std::size_t row_counts[] = {1, 7, 255, 256, 257, 2049};
const int widths[] = {1, 20, 33, 200};
}  // namespace

// Stage one written out here (not through the header's loops): chunk g, lane k sums rows g * 256 + k, + 8, ...;
// the lanes then in order. The header's twin must give these bits.
TEST_CASE("nn.lt_sums.column_partials_follow_the_order") {
  for (const std::size_t rows : row_counts)
    for (const int w : widths) {
      CAPTURE(rows);
      CAPTURE(w);
      const auto m = draw(rows * w, rows + 3 * w, -1, 1);
      const auto got = d::lt_column_partials_host(m.data(), rows, w);
      const std::size_t chunks = (rows + 255) / 256;
      REQUIRE(d::lt_sum_chunks(rows) == chunks);
      REQUIRE(got.size() == chunks * w);
      int wrong = 0;
      for (std::size_t g = 0; g < chunks; ++g)
        for (int c = 0; c < w; ++c) {
          float lanes[8] = {};
          for (int k = 0; k < 8; ++k)
            for (std::size_t r = g * 256 + k; r < rows && r < (g + 1) * 256; r += 8) lanes[k] += m[r * w + c];
          float t = 0.0f;
          for (const float s : lanes) t += s;
          wrong += got[g * w + c] != t;
        }
      CHECK(wrong == 0);
    }
}

// The fused dz pass: dz = g * ELU'(y) elementwise, and its partials the same bits as stage one over the stored dz;
// the finished sums within fp32 rounding of a double sum.
TEST_CASE("nn.lt_sums.dz_pass_partials_equal_stored_sums") {
  for (const std::size_t rows : row_counts)
    for (const int w : widths) {
      CAPTURE(rows);
      CAPTURE(w);
      const auto g = draw(rows * w, 2 * rows + w, -1, 1);
      const auto y = draw(rows * w, 5 * rows + w, -1, 2);
      std::vector<float> dz(rows * w, -7.0f);
      const auto fused = d::lt_dz_partials_host<gmi::nn::elu>(g.data(), y.data(), rows, w, dz.data());
      int wrong_dz = 0;
      for (std::size_t k = 0; k < dz.size(); ++k) wrong_dz += dz[k] != g[k] * gmi::nn::elu::grad_from_output(y[k]);
      CHECK(wrong_dz == 0);
      CHECK(fused == d::lt_column_partials_host(dz.data(), rows, w));
      const auto sums = d::lt_column_finish_host(fused, d::lt_sum_chunks(rows), w);
      REQUIRE(sums.size() == static_cast<std::size_t>(w));
      double worst = 0, scale = 0;
      for (int c = 0; c < w; ++c) {
        double ref = 0;
        for (std::size_t r = 0; r < rows; ++r) {
          ref += dz[r * w + c];
          scale += std::abs(dz[r * w + c]);
        }
        worst = std::max(worst, std::abs(sums[c] - ref));
      }
      CHECK(worst <= 1e-6 * scale / w + 1e-6);
    }
}

// A sum that depends on the order: one large value and many small ones in a column. The fused and the stored
// sums agree bit for bit (the same order), and the twin is not a plain row-order sum (8 lanes of 32 rows each).
TEST_CASE("nn.lt_sums.order_is_lanes_not_rows") {
  const std::size_t rows = 256;
  std::vector<float> g(rows, 1.0f), y(rows, 1.0f);  // ELU'(1) = 1: dz = g
  g[0] = 1e8f;
  for (std::size_t r = 1; r < rows; ++r) g[r] = (r % 8 == 0) ? 4.0f : 3.0f;
  std::vector<float> dz(rows);
  const auto fused = d::lt_dz_partials_host<gmi::nn::elu>(g.data(), y.data(), rows, 1, dz.data());
  float row_order = 0.0f;
  for (const float v : g) row_order += v;
  // Lane 0 adds its 31 fours to 1e8 (each lost in rounding: spacing 8); a row-order sum loses every small value.
  CHECK(fused[0] == d::lt_column_partials_host(g.data(), rows, 1)[0]);
  CHECK(fused[0] != row_order);
}
