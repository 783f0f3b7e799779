// The CUDA side of the cuBLASLt network tests: copy in, run lt_mlp (or batch_mlp<auto_path>), copy out.
#include "lt_kernels.hpp"

#include <cuda_bf16.h>

#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/check.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/nn/detail/lt_column_sums.cuh>
#include <gmi/nn/detail/lt_layout.hpp>
#include <gmi/nn/nn.hpp>

namespace nn_gpu {
namespace {

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

template <class Net, class Impl>
lt_run run_with(Impl& b, cudaStream_t s, const std::vector<float>& params, const std::vector<float>& x,
                const std::vector<float>& d_out) {
  const std::size_t n = x.size() / Net::in;
  auto p = upload(params, s);
  auto xd = upload(x, s);
  auto g = upload(d_out, s);
  gmi::cuda::device_buffer<float> out(n * Net::out), out2(n * Net::out), acts(Net::activation_size * n),
      d_params(Net::param_count), d_x(n * Net::in);
  b.forward(p, xd, out, acts);
  b.forward(p, xd, out2);
  b.backward(p, xd, acts, g, d_params, d_x);
  lt_run r;
  r.path = b.path();
  if constexpr (requires { b.backward_path(); }) r.backward_path = b.backward_path();
  r.out = download(out, s);
  r.out_inference = download(out2, s);
  r.d_params = download(d_params, s);
  r.d_x = download(d_x, s);
  // Capture the same calls into fresh outputs and replay them.
  gmi::cuda::device_buffer<float> gout(n * Net::out), gd_params(Net::param_count), gd_x(n * Net::in);
  gout.fill_bytes(0, s);
  gd_params.fill_bytes(0, s);
  gd_x.fill_bytes(0, s);
  acts.fill_bytes(0, s);
  GMI_CUDA_TRY(cudaStreamSynchronize(s));
  if constexpr (requires { b.plans(); }) r.plans_before_graph = b.plans();
  cudaGraph_t graph = nullptr;
  GMI_CUDA_TRY(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  b.forward(p, xd, gout, acts);
  b.backward(p, xd, acts, g, gd_params, gd_x);
  GMI_CUDA_TRY(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  GMI_CUDA_TRY(e);
  GMI_CUDA_TRY(cudaGraphLaunch(exec, s));
  GMI_CUDA_TRY(cudaStreamSynchronize(s));
  cudaGraphExecDestroy(exec);
  if constexpr (requires { b.plans(); }) r.plans_after_graph = b.plans();
  r.graph_out = download(gout, s);
  r.graph_d_params = download(gd_params, s);
  r.graph_d_x = download(gd_x, s);
  if constexpr (requires { b.bias_sums(); }) {
    r.bias_sums = b.bias_sums();
    gmi::cuda::device_buffer<float> dp2(Net::param_count);
    acts.fill_bytes(0, s);
    b.forward_raw(p.data(), xd.data(), nullptr, acts.data(), n);
    gmi::cuda::device_buffer<float> rec(n * Net::out);
    GMI_CUDA_TRY(cudaMemcpyAsync(rec.data(), Impl::outputs_in(acts.data(), n), rec.size_bytes(),
                                 cudaMemcpyDeviceToDevice, s));
    b.backward_raw(p.data(), xd.data(), acts.data(), g.data(), dp2.data(), nullptr, n, true);
    r.out_from_record = download(rec, s);
    r.d_params_weights_ready = download(dp2, s);
    r.split_products = b.split_products();
  }
  return r;
}

template <class Net>
lt_run run_net(const nn::network_config& cfg, bool use_auto, const std::vector<float>& params,
               const std::vector<float>& x, const std::vector<float>& d_out) {
  gmi::cuda::stream s;
  const std::size_t n = x.size() / Net::in;
  if (use_auto) {
    nn::batch_mlp<Net, gmi::exec::cuda, nn::auto_path> b(gmi::exec::cuda{.stream = s}, n + 5, cfg);
    return run_with<Net>(b, s, params, x, d_out);
  }
  nn::lt_mlp<Net> b(gmi::exec::cuda{.stream = s}, n + 5, cfg);
  return run_with<Net>(b, s, params, x, d_out);
}

}  // namespace

offset_run critic_backward_at(std::size_t offset, const std::vector<float>& params, const std::vector<float>& x,
                              const std::vector<float>& d_out) {
  using Net = sac_critic_net;
  gmi::cuda::stream stream;
  const cudaStream_t s = stream.get();
  const std::size_t n = x.size() / Net::in;
  nn::lt_mlp<Net> m(gmi::exec::cuda{s}, n);
  auto p = upload(params, s);
  auto xd = upload(x, s);
  auto g = upload(d_out, s);
  gmi::cuda::device_buffer<float> out(n), acts(Net::activation_size * n), grads(offset + Net::param_count);
  grads.fill_bytes(0, s);
  const gmi::device_span<float> d_params(grads.data() + offset, Net::param_count);
  offset_run r;
  for (int run = 0; run < 2; ++run) {
    m.forward(p, xd, out, acts);
    m.backward(p, xd, acts, g, d_params);
    std::vector<float> all = download(grads, s);
    (run == 0 ? r.d_params : r.d_params_again).assign(all.begin() + std::ptrdiff_t(offset), all.end());
  }
  r.bias_sums = m.bias_sums();
  return r;
}

std::vector<std::vector<float>> column_sum_twice(const std::vector<float>& m, std::size_t rows, int w) {
  gmi::cuda::stream s;
  auto md = upload(m, s);
  gmi::cuda::device_buffer<float> partial(nn::detail::lt_sum_chunks(rows) * w), out(w);
  std::vector<std::vector<float>> r;
  for (int k = 0; k < 2; ++k) {
    out.fill_bytes(0, s);
    nn::detail::lt_column_sum(md.data(), rows, w, partial.data(), out.data(), s);
    r.push_back(download(out, s));
  }
  return r;
}

dz_pass_run dz_pass_elu(const std::vector<float>& g, const std::vector<float>& y, std::size_t rows, int w) {
  gmi::cuda::stream s;
  auto gd = upload(g, s);
  auto yd = upload(y, s);
  const int ld16 = nn::detail::bf16_ld(w);
  const std::size_t chunks = nn::detail::lt_sum_chunks(rows);
  gmi::cuda::device_buffer<float> dz(rows * w), part(chunks * w), stored(chunks * w), dz16f(rows * w);
  gmi::cuda::device_buffer<__nv_bfloat16> dz16(rows * ld16);
  nn::detail::lt_dz_partials<nn::elu>(gd.data(), yd.data(), rows, w, dz.data(), dz16.data(), ld16, part.data(), s);
  nn::detail::lt_column_partial(dz.data(), rows, w, stored.data(), s);
  std::vector<__nv_bfloat16> h16(rows * ld16);
  GMI_CUDA_TRY(cudaMemcpyAsync(h16.data(), dz16.data(), h16.size() * sizeof(__nv_bfloat16), cudaMemcpyDeviceToHost, s));
  dz_pass_run r;
  r.dz = download(dz, s);
  r.partials = download(part, s);
  r.stored_partials = download(stored, s);
  for (std::size_t k = 0; k < rows; ++k)
    for (int c = 0; c < w; ++c) r.dz16.push_back(__bfloat162float(h16[k * ld16 + c]));
  return r;
}

lt_run run_lt(lt_net net, const nn::network_config& cfg, bool use_auto, const std::vector<float>& params,
              const std::vector<float>& x, const std::vector<float>& d_out) {
  switch (net) {
    case lt_net::shadow_hand: return run_net<shadow_hand_net>(cfg, use_auto, params, x, d_out);
    case lt_net::humanoid: return run_net<humanoid_net>(cfg, use_auto, params, x, d_out);
    case lt_net::ant: return run_net<ant_lt_net>(cfg, use_auto, params, x, d_out);
    case lt_net::odd_tanh: return run_net<odd_tanh_net>(cfg, use_auto, params, x, d_out);
    case lt_net::odd_relu: return run_net<odd_relu_net>(cfg, use_auto, params, x, d_out);
    case lt_net::cartpole_body: return run_net<cartpole_body_net>(cfg, use_auto, params, x, d_out);
  }
  return {};
}

}  // namespace nn_gpu
