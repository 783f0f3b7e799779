// gmi.bench.wide: the product cases (their own translation unit: see wide_bench.hpp): the peak dense GEMM rate,
// one wide layer's product by cuBLASLt and by the own tensor-core kernel, and Adam's step at ShadowHand's size.
#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/check.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/envs/lq_proxy.hpp>
#include <gmi/nn/actor_critic.hpp>
#include <gmi/nn/adam.cuh>
#include <gmi/nn/fused_gemm.cuh>
#include <gmi/nn/lt_linear.cuh>
#include <gmi/nn/lt_mlp.cuh>

#include <cstddef>
#include <string>

#include "wide_bench.hpp"

namespace gmi_wide {

namespace nn = gmi::nn;

using shadow_hand_ac = nn::gaussian_actor_critic<gmi::envs::shadow_hand_proxy::obs_dim,
                                                  gmi::envs::shadow_hand_proxy::act_dim, nn::layers<512, 512, 512, 256>>;

// The peak dense rate: D (fp32) = A B for square 8192 matrices through cuBLASLt.
void peak_gemm(const options& o) {
  constexpr int n = 8192;
  gmi::cuda::stream s;
  gmi::cuda::device_buffer<float> a(std::size_t(n) * n), b(std::size_t(n) * n), d(std::size_t(n) * n);
  a.fill_bytes(0x3c, s);
  b.fill_bytes(0x3c, s);
  nn::lt_gemm g;
  for (const auto p : {nn::precision::tf32, nn::precision::bf16}) {
    const nn::lt_shape shape{.m = n, .n = n, .k = n, .lda = n, .ldb = n, .ldd = n, .prec = p};
    const double flops = 2.0 * n * n * static_cast<double>(n);
    const auto st = measure(o, flops / 1e12, [&](int k) {
      for (int i = 0; i < k; ++i) g.run(shape, a.data(), b.data(), d.data(), nullptr, s.get());
      GMI_CUDA_TRY(cudaStreamSynchronize(s.get()));
    });
    emit(o, {{"case", "peak_gemm"}, {"net", "square_8192"}, {"precision", nn::precision_name(p)},
             {"metric", "tflops"}, {"tflops", st.median}}, st);
  }
}

// One wide layer alone, M = 8192 rows, N = K = 512: the cuBLASLt product (BIAS epilogue) and the own kernel with
// bias + ELU in its epilogue (TF/s of the product), then the whole layer through lt_mlp (cuBLASLt: product +
// ELU pass; mma: one kernel; both with the weight copy the path makes per call).
void layer_gemm(const options& o) {
  constexpr int M = 8192, N = 512, K = 512;
  const double tflop = 2.0 * M * N * static_cast<double>(K) / 1e12;
  gmi::cuda::stream s;
  gmi::cuda::device_buffer<float> x(std::size_t(M) * K), w(std::size_t(N) * K), bias(N), d(std::size_t(M) * N);
  gmi::cuda::device_buffer<__nv_bfloat16> x16(std::size_t(M) * K), w16(std::size_t(N) * K);
  x.fill_bytes(0x3c, s);
  w.fill_bytes(0x3c, s);
  bias.fill_bytes(0, s);
  x16.fill_bytes(0x3c, s);
  w16.fill_bytes(0x3c, s);
  nn::lt_gemm g;
  auto sync = [&] { GMI_CUDA_TRY(cudaStreamSynchronize(s.get())); };
  for (const auto p : {nn::precision::tf32, nn::precision::bf16}) {
    const bool bf = p == nn::precision::bf16;
    const void* A = bf ? static_cast<const void*>(w16.data()) : w.data();
    const void* B = bf ? static_cast<const void*>(x16.data()) : x.data();
    const nn::lt_shape shape{.trans_a = true, .m = N, .n = M, .k = K, .lda = K, .ldb = K, .ldd = N, .prec = p,
                             .epilogue = nn::lt_epilogue::bias};
    const auto lt = measure(o, tflop, [&](int k) {
      for (int i = 0; i < k; ++i) g.run(shape, A, B, d.data(), bias.data(), s.get());
      sync();
    });
    emit(o, {{"case", "layer_gemm"}, {"net", "8192x512x512"}, {"precision", nn::precision_name(p)},
             {"kernel", "cublaslt_bias"}, {"metric", "tflops"}, {"tflops", lt.median}}, lt);
    const nn::mma_bias_act<nn::elu> epi{bias.data()};
    const auto mma = measure(o, tflop, [&](int k) {
      for (int i = 0; i < k; ++i) {
        if (bf)
          nn::mma_gemm(nn::mma_gemm_args<__nv_bfloat16>{.a = x16.data(), .b = w16.data(), .M = M, .N = N, .K = K,
                                                        .lda = K, .ldb = K, .d = d.data(), .ldd = N},
                       epi, s.get());
        else
          nn::mma_gemm(nn::mma_gemm_args<float>{.a = x.data(), .b = w.data(), .M = M, .N = N, .K = K, .lda = K,
                                                .ldb = K, .d = d.data(), .ldd = N},
                       epi, s.get());
      }
      sync();
    });
    emit(o, {{"case", "layer_gemm"}, {"net", "8192x512x512"}, {"precision", nn::precision_name(p)},
             {"kernel", "mma_bias_elu"}, {"metric", "tflops"}, {"tflops", mma.median}}, mma);
    using layer = nn::mlp<nn::layers<K, N>, nn::elu, nn::elu>;
    gmi::cuda::device_buffer<float> params(layer::param_count);
    params.fill_bytes(0, s);
    for (const auto kern : {nn::layer_kernels::cublaslt, nn::layer_kernels::mma}) {
      nn::lt_mlp<layer> net(gmi::exec::cuda{.stream = s.get()}, M, nn::network_config{.precision = p, .kernels = kern});
      const auto st = measure(o, tflop, [&](int k) {
        for (int i = 0; i < k; ++i) net.forward_raw(params.data(), x.data(), d.data(), nullptr, M);
        sync();
      });
      emit(o, {{"case", "layer_gemm"}, {"net", "8192x512x512"}, {"precision", nn::precision_name(p)},
               {"kernel", std::string(net.path()) + "_elu_layer"}, {"metric", "tflops"}, {"tflops", st.median}}, st);
    }
  }
}

// Adam's step at ShadowHand's parameter count: steps per second in one cooperative kernel and in three.
void adam_steps(const options& o) {
  constexpr std::size_t n = shadow_hand_ac::net::param_count;
  gmi::cuda::stream s;
  gmi::cuda::device_buffer<float> p(n), g(n);
  p.fill_bytes(0, s);
  g.fill_bytes(0x3c, s);
  for (const bool one : {true, false}) {
    nn::adam<gmi::exec::cuda> opt(nn::adam_config{}, n, gmi::exec::cuda{.stream = s.get()});
    if (one && !opt.one_kernel_available()) continue;
    opt.set_one_kernel(one);
    const auto st = measure(o, 1.0, [&](int k) {
      for (int i = 0; i < k; ++i) opt.step({p.data(), n}, {g.data(), n});
      GMI_CUDA_TRY(cudaStreamSynchronize(s.get()));
    });
    emit(o, {{"case", "adam"}, {"net", "shadow_hand_mlp"}, {"params", n}, {"kernel", one ? "one_kernel" : "three_kernels"},
             {"metric", "steps_per_s"}}, st);
  }
}

}  // namespace gmi_wide
