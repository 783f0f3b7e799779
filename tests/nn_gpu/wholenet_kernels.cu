// The CUDA side of the whole-network forward tests: copy in, run nn::wholenet and lt_mlp (kernels wholenet), copy
// out.
#include "wholenet_kernels.hpp"

#include <gmi/core/error.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/check.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/nn/nn.hpp>
#include <gmi/nn/wholenet.cuh>

namespace nn_gpu {
namespace {

// The weights-in-shared-memory kernel is compiled only where some device could fit it: of the paper's policies only
// Ant's at bf16 (fit_and_refusals checks that it is taken there).
static_assert(nn::wholenet_weights_may_fit<ant_lt_net>(nn::precision::bf16));
static_assert(!nn::wholenet_weights_may_fit<ant_lt_net>(nn::precision::tf32));
static_assert(!nn::wholenet_weights_may_fit<humanoid_net>(nn::precision::bf16));
static_assert(!nn::wholenet_weights_may_fit<shadow_hand_net>(nn::precision::bf16));
static_assert(nn::wholenet_weights_may_fit<cartpole_body_net>(nn::precision::tf32));

std::vector<float> download(const gmi::cuda::device_buffer<float>& d, cudaStream_t s) {
  std::vector<float> v(d.size());
  if (!v.empty()) GMI_CUDA_TRY(cudaMemcpyAsync(v.data(), d.data(), d.size_bytes(), cudaMemcpyDeviceToHost, s));
  GMI_CUDA_TRY(cudaStreamSynchronize(s));
  return v;
}
gmi::cuda::device_buffer<float> upload(const std::vector<float>& v, cudaStream_t s) {
  gmi::cuda::device_buffer<float> d(v.size());
  if (!v.empty()) GMI_CUDA_TRY(cudaMemcpyAsync(d.data(), v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice, s));
  return d;
}

template <class Net>
wholenet_run run_net(nn::precision p, const std::vector<float>& params, const std::vector<float>& x) {
  gmi::cuda::stream s;
  const std::size_t n = x.size() / Net::in;
  auto pd = upload(params, s);
  auto xd = upload(x, s);
  gmi::cuda::device_buffer<float> out(n * Net::out);
  const gmi::exec::cuda policy{.stream = s};
  nn::wholenet<Net> w(policy, p);
  wholenet_run r;
  r.path = w.path();
  r.weights_in_smem = w.weights_in_smem();
  r.smem_bytes = nn::wholenet_smem_bytes<Net>(p, r.weights_in_smem);
  w.forward(pd.data(), xd.data(), out.data(), n);
  r.out = download(out, s);

  out.fill_bytes(0, s);
  w.run(pd.data(), n, nn::detail::wholenet_rows_in{xd.data(), Net::in}, nn::detail::wholenet_rows_out{out.data(), Net::out});
  r.out_again = download(out, s);

  out.fill_bytes(0, s);
  GMI_CUDA_TRY(cudaStreamSynchronize(s));
  cudaGraph_t graph = nullptr;
  GMI_CUDA_TRY(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  w.forward(pd.data(), xd.data(), out.data(), n);
  GMI_CUDA_TRY(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  GMI_CUDA_TRY(e);
  GMI_CUDA_TRY(cudaGraphLaunch(exec, s));
  GMI_CUDA_TRY(cudaStreamSynchronize(s));
  cudaGraphExecDestroy(exec);
  r.out_graph = download(out, s);

  nn::lt_mlp<Net> lt(policy, n, nn::network_config{.precision = p, .kernels = nn::layer_kernels::wholenet});
  r.lt_path = lt.path();
  out.fill_bytes(0, s);
  lt.forward_raw(pd.data(), xd.data(), out.data(), nullptr, n);
  r.out_lt = download(out, s);

  // The forward with records (as PPO's minibatch), then the backward on the kept bf16 inputs and on its own
  // conversion of the fp32 record: the same inputs, so the same bits.
  gmi::cuda::device_buffer<float> acts(Net::activation_size * n), xrec(n * Net::in), g(n * Net::out),
      dp(Net::param_count);
  g.fill_bytes(0x3c, s);  // 0.0117 in every float
  lt.whole()->pack(pd.data());
  __nv_bfloat16* rec16 = lt.record16_for(n);
  r.kept16 = rec16 != nullptr;
  lt.whole()->run(pd.data(), n, nn::detail::wholenet_rows_in{xd.data(), Net::in},
                  nn::detail::wholenet_rows_out{out.data(), Net::out}, acts.data(), xrec.data(), rec16);
  lt.backward_raw(pd.data(), xrec.data(), acts.data(), g.data(), dp.data(), nullptr, n, false, true);
  r.d_params_kept16 = download(dp, s);
  dp.fill_bytes(0, s);
  lt.backward_raw(pd.data(), xrec.data(), acts.data(), g.data(), dp.data(), nullptr, n);
  r.d_params_converted = download(dp, s);
  return r;
}

}  // namespace

wholenet_run run_wholenet(lt_net net, nn::precision p, const std::vector<float>& params, const std::vector<float>& x) {
  switch (net) {
    case lt_net::shadow_hand: return run_net<shadow_hand_net>(p, params, x);
    case lt_net::humanoid: return run_net<humanoid_net>(p, params, x);
    case lt_net::ant: return run_net<ant_lt_net>(p, params, x);
    case lt_net::odd_tanh: return run_net<odd_tanh_net>(p, params, x);
    case lt_net::odd_relu: return run_net<odd_relu_net>(p, params, x);
    case lt_net::cartpole_body: return run_net<cartpole_body_net>(p, params, x);
  }
  return {};
}

std::string wholenet_too_wide_error(nn::precision p) {
  using too_wide = nn::mlp<nn::layers<16, 4096, 4>, nn::elu>;
  try {
    nn::wholenet<too_wide> w(gmi::exec::cuda{}, p);
  } catch (const gmi::config_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace nn_gpu
