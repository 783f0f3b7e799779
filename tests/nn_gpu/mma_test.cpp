// The own tensor-core products (nn/fused_gemm.cuh) against a host product in double of the same rounded inputs,
// for TF32 and bf16, the three epilogues and odd shapes (rows, columns and K not multiples of the tiles, rows not
// 16-byte aligned, NaN in the padding past K that must never be read); and the one-kernel Adam (nn/adam.cuh)
// against the host Adam and the three-kernel path, eager and replayed from a CUDA graph.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include <gmi/nn/adam.hpp>

#include "mma_kernels.hpp"
#include "reference.hpp"

namespace {
using nn_gpu::mma_case;
using nn_gpu::mma_epi;
using nn_gpu::mma_type;

float round_bits(float x, mma_type t) {
  std::uint32_t b;
  std::memcpy(&b, &x, 4);
  if (t == mma_type::tf32) {
    b = (b + 0x1000u) & 0xffffe000u;  // cvt.rna.tf32.f32: nearest, ties away from zero
  } else {
    b = (b + 0x7fffu + ((b >> 16) & 1u)) & 0xffff0000u;  // __float2bfloat16_rn: nearest even
  }
  float r;
  std::memcpy(&r, &b, 4);
  return r;
}

// A [rows][ld] matrix with uniform values in its first k columns and NaN in the padding.
std::vector<float> padded(int rows, int k, int ld, std::uint64_t seed) {
  const auto v = nn_gpu::uniform(static_cast<std::size_t>(rows) * k, seed, -1, 1, 9);
  std::vector<float> m(static_cast<std::size_t>(rows) * ld + 1, std::numeric_limits<float>::quiet_NaN());
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < k; ++c) m[static_cast<std::size_t>(r) * ld + c] = v[static_cast<std::size_t>(r) * k + c];
  return m;
}

void check_case(const mma_case& c, bool want_vectorized) {
  CAPTURE(static_cast<int>(c.type));
  CAPTURE(static_cast<int>(c.epi));
  CAPTURE(c.M);
  CAPTURE(c.N);
  CAPTURE(c.K);
  CAPTURE(c.lda);
  const auto a = padded(c.M, c.K, c.lda, 100 + c.K);
  const auto b = padded(c.N, c.K, c.ldb, 200 + c.N);
  const auto bias = nn_gpu::uniform(c.N, 300, -0.5, 0.5, 9);
  auto y = nn_gpu::uniform(static_cast<std::size_t>(c.M) * c.N, 400, -0.99f, 2, 9);
  const auto r = nn_gpu::run_mma_gemm(c, a, b, bias, y);
  CHECK(r.vectorized == want_vectorized);
  std::vector<double> ref(static_cast<std::size_t>(c.M) * c.N);
  for (int m = 0; m < c.M; ++m)
    for (int n = 0; n < c.N; ++n) {
      double s = 0;
      for (int k = 0; k < c.K; ++k)
        s += static_cast<double>(round_bits(a[static_cast<std::size_t>(m) * c.lda + k], c.type)) *
             round_bits(b[static_cast<std::size_t>(n) * c.ldb + k], c.type);
      const std::size_t i = static_cast<std::size_t>(m) * c.N + n;
      if (c.epi == mma_epi::bias_elu) {
        s += bias[n];
        s = s > 0 ? s : std::expm1(s);
      } else if (c.epi == mma_epi::times_elu_grad) {
        s *= y[i] > 0 ? 1.0 : y[i] + 1.0;
      }
      ref[i] = s;
    }
  // The inputs are rounded alike on both sides: what is left is fp32 accumulation and ELU's expm1.
  const double e = nn_gpu::rel_err(r.d, ref);
  MESSAGE("mma " << (c.type == mma_type::tf32 ? "tf32" : "bf16") << " epi " << static_cast<int>(c.epi) << " " << c.M
                 << "x" << c.N << "x" << c.K << " lda " << c.lda << ": relative error " << e << " (tolerance 2e-5)");
  CHECK(e < 2e-5);
  CHECK(r.d2 == r.d);
  double worst16 = 0;
  for (std::size_t i = 0; i < r.d.size(); ++i)
    worst16 = std::max(worst16, std::abs(double(r.d16[i]) - r.d[i]) - std::abs(double(r.d[i])) / 256.0);
  CHECK(worst16 <= 1e-30);  // the bf16 copy is d rounded (within half a bf16 ulp, 2^-9 relative)
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double w = 0;
  for (std::size_t i = 0; i < a.size(); ++i) w = std::max(w, std::abs(double(a[i]) - b[i]));
  return w;
}
}  // namespace

TEST_SUITE("gpu") {
  TEST_CASE("nn_gpu.mma.gemm_matches_host") {
    struct shape {
      int M, N, K, lda, ldb;
      bool vec;
    };
    // TF32 operands are fp32: 16-byte rows when ld % 4 == 0; bf16: when ld % 8 == 0 (else 4-byte copies).
    const shape tf32_shapes[] = {{1, 1, 1, 1, 1, false},        {7, 20, 60, 60, 60, true},
                                 {301, 21, 211, 211, 211, false}, {301, 21, 211, 216, 216, true},
                                 {129, 65, 33, 36, 40, true},     {1000, 8, 64, 64, 64, true},
                                 {333, 100, 400, 400, 401, false}};
    const shape bf16_shapes[] = {{1, 1, 1, 2, 2, false},          {7, 20, 60, 64, 64, true},
                                 {301, 21, 211, 216, 216, true},  {129, 65, 33, 34, 38, false},
                                 {1000, 8, 64, 64, 64, true},     {333, 100, 400, 400, 400, true}};
    for (const mma_epi epi : {mma_epi::plain, mma_epi::bias_elu, mma_epi::times_elu_grad}) {
      for (const auto& s : tf32_shapes) check_case({mma_type::tf32, epi, s.M, s.N, s.K, s.lda, s.ldb}, s.vec);
      for (const auto& s : bf16_shapes) check_case({mma_type::bf16, epi, s.M, s.N, s.K, s.lda, s.ldb}, s.vec);
    }
    // The size of the wide layers, once per type.
    check_case({mma_type::tf32, mma_epi::bias_elu, 2048, 512, 512, 512, 512}, true);
    check_case({mma_type::bf16, mma_epi::times_elu_grad, 2048, 512, 512, 512, 512}, true);
  }

  TEST_CASE("nn_gpu.mma.adam_one_kernel_matches_host") {
    // Above adam_fused_max parameters: the cooperative one-kernel step against the host Adam (the same element
    // update; the norm summed in another order) and against the three-kernel path; the graph replay gives the
    // eager bits. Gradients large enough to clip in three steps, small enough not to in the last.
    for (const std::size_t n : {std::size_t{32769}, std::size_t{100003}, std::size_t{770000}}) {
      CAPTURE(n);
      const auto p0 = nn_gpu::uniform(n, 500 + n, -1, 1, 9);
      std::vector<std::vector<float>> grads;
      for (int k = 0; k < 4; ++k) {
        auto g = nn_gpu::uniform(n, 600 + k, -1, 1, 9);
        if (k == 3)
          for (auto& x : g) x *= 1e-4f;
        grads.push_back(g);
      }
      gmi::nn::adam_config cfg;
      cfg.lr = 1e-2f;
      gmi::nn::adam<gmi::exec::host> host(cfg, n);
      auto ph = p0;
      double host_norm = 0;
      for (const auto& g : grads) host_norm = host.step({ph.data(), n}, {g.data(), n});
      const auto one = nn_gpu::run_adam_steps(cfg, true, p0, grads);
      const auto three = nn_gpu::run_adam_steps(cfg, false, p0, grads);
      CHECK(one.one_kernel);
      CHECK(one.launches_per_step == 1);
      CHECK(!three.one_kernel);
      CHECK(three.launches_per_step == 3);
      const double d_host = max_abs_diff(one.params, ph), d_three = max_abs_diff(one.params, three.params);
      MESSAGE("adam n " << n << ": one kernel vs host " << d_host << ", vs three kernels " << d_three
                        << " (max abs, tolerance 1e-6); norm " << one.last_norm << " host " << host_norm);
      CHECK(d_host <= 1e-6);
      CHECK(d_three <= 1e-6);
      CHECK(std::abs(one.last_norm - host_norm) <= 1e-9 * host_norm);
      CHECK(one.graph_params == one.params);
      CHECK(three.graph_params == three.params);
    }
  }
}
