// The CUDA side of the own-product and one-kernel Adam tests: upload, launch, download.
#include "mma_kernels.hpp"

#include <cuda_bf16.h>

#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/check.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/nn/activation.hpp>
#include <gmi/nn/adam.cuh>
#include <gmi/nn/fused_gemm.cuh>

namespace nn_gpu {
namespace {

template <class T>
gmi::cuda::device_buffer<T> upload_as(const std::vector<float>& v, cudaStream_t s) {
  std::vector<T> h(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    if constexpr (std::is_same_v<T, float>) h[i] = v[i];
    else h[i] = __float2bfloat16_rn(v[i]);
  }
  gmi::cuda::device_buffer<T> d(h.size() > 0 ? h.size() : 1);
  if (!h.empty()) GMI_CUDA_TRY(cudaMemcpyAsync(d.data(), h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice, s));
  return d;
}
template <class T>
std::vector<float> download_as(const gmi::cuda::device_buffer<T>& d, std::size_t n, cudaStream_t s) {
  std::vector<T> h(n);
  if (n) GMI_CUDA_TRY(cudaMemcpyAsync(h.data(), d.data(), n * sizeof(T), cudaMemcpyDeviceToHost, s));
  GMI_CUDA_TRY(cudaStreamSynchronize(s));
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<T, float>) v[i] = h[i];
    else v[i] = __bfloat162float(h[i]);
  }
  return v;
}

template <class T>
mma_result run_typed(const mma_case& c, const std::vector<float>& a, const std::vector<float>& b,
                     const std::vector<float>& bias, const std::vector<float>& y) {
  namespace nn = gmi::nn;
  gmi::cuda::stream s;
  auto ad = upload_as<T>(a, s);
  auto bd = upload_as<T>(b, s);
  auto biasd = upload_as<float>(bias, s);
  auto yd = upload_as<float>(y, s);
  const std::size_t mn = static_cast<std::size_t>(c.M) * c.N;
  gmi::cuda::device_buffer<float> d(mn > 0 ? mn : 1), d2(mn > 0 ? mn : 1);
  gmi::cuda::device_buffer<__nv_bfloat16> d16(mn > 0 ? mn : 1);
  nn::mma_gemm_args<T> g{.a = ad.data(), .b = bd.data(), .M = c.M, .N = c.N, .K = c.K, .lda = c.lda, .ldb = c.ldb,
                         .d = d.data(), .ldd = c.N, .d2 = d2.data(), .ldd2 = c.N, .d16 = d16.data(), .ld16 = c.N};
  mma_result r;
  r.vectorized = nn::mma_gemm_vectorized(g);
  switch (c.epi) {
    case mma_epi::plain: nn::mma_gemm(g, nn::mma_plain{}, s); break;
    case mma_epi::bias_elu: nn::mma_gemm(g, nn::mma_bias_act<nn::elu>{biasd.data()}, s); break;
    case mma_epi::times_elu_grad: nn::mma_gemm(g, nn::mma_times_grad<nn::elu>{yd.data(), c.N}, s); break;
  }
  r.d = download_as(d, mn, s);
  r.d2 = download_as(d2, mn, s);
  r.d16 = download_as(d16, mn, s);
  return r;
}

}  // namespace

mma_result run_mma_gemm(const mma_case& c, const std::vector<float>& a, const std::vector<float>& b,
                        const std::vector<float>& bias, const std::vector<float>& y) {
  return c.type == mma_type::tf32 ? run_typed<float>(c, a, b, bias, y) : run_typed<__nv_bfloat16>(c, a, b, bias, y);
}

adam_run_result run_adam_steps(const gmi::nn::adam_config& cfg, bool one_kernel, const std::vector<float>& params,
                               const std::vector<std::vector<float>>& grads) {
  gmi::cuda::stream s;
  const std::size_t n = params.size();
  auto run = [&](bool graph, adam_run_result& r) {
    gmi::nn::adam<gmi::exec::cuda> opt(cfg, n, gmi::exec::cuda{.stream = s});
    if (one_kernel != opt.one_kernel() && (!one_kernel || opt.one_kernel_available())) opt.set_one_kernel(one_kernel);
    auto p = upload_as<float>(params, s);
    std::vector<gmi::cuda::device_buffer<float>> g;
    for (const auto& v : grads) g.push_back(upload_as<float>(v, s));
    GMI_CUDA_TRY(cudaStreamSynchronize(s));
    if (graph) {
      cudaGraph_t gr = nullptr;
      GMI_CUDA_TRY(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
      for (auto& gk : g) opt.step({p.data(), n}, {gk.data(), n});
      GMI_CUDA_TRY(cudaStreamEndCapture(s, &gr));
      cudaGraphExec_t exec = nullptr;
      const cudaError_t e = cudaGraphInstantiate(&exec, gr, 0);
      cudaGraphDestroy(gr);
      GMI_CUDA_TRY(e);
      GMI_CUDA_TRY(cudaGraphLaunch(exec, s));
      GMI_CUDA_TRY(cudaStreamSynchronize(s));
      cudaGraphExecDestroy(exec);
      r.graph_params = download_as(p, n, s);
      return;
    }
    for (auto& gk : g) opt.step({p.data(), n}, {gk.data(), n});
    r.params = download_as(p, n, s);
    r.last_norm = opt.grad_norm();
    r.launches_per_step = opt.launches_per_step();
    r.one_kernel = opt.one_kernel();
  };
  adam_run_result r;
  run(false, r);
  run(true, r);
  return r;
}

}  // namespace nn_gpu
