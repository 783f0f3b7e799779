// The CUDA side of the nn GPU tests: each function copies inputs in, runs a gmi::nn CUDA path, copies out.
#include "kernels.hpp"

#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/nn/nn.hpp>

namespace nn_gpu {
namespace {

template <class T>
gmi::cuda::device_buffer<T> upload(const std::vector<T>& v, cudaStream_t s) {
  gmi::cuda::device_buffer<T> d(v.size());
  if (!v.empty()) GMI_CUDA_TRY(cudaMemcpyAsync(d.data(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice, s));
  return d;
}
template <class T>
std::vector<T> download(const gmi::cuda::device_buffer<T>& d, cudaStream_t s) {
  std::vector<T> v(d.size());
  if (!v.empty()) GMI_CUDA_TRY(cudaMemcpyAsync(v.data(), d.data(), d.size_bytes(), cudaMemcpyDeviceToHost, s));
  GMI_CUDA_TRY(cudaStreamSynchronize(s));
  return v;
}

template <class Net, class Path>
mlp_run run(const std::vector<float>& params, const std::vector<float>& x, const std::vector<float>& d_out) {
  gmi::cuda::stream s;
  const std::size_t n = x.size() / Net::in;
  gmi::nn::batch_mlp<Net, gmi::exec::cuda, Path> b(gmi::exec::cuda{.stream = s}, n + 17);
  auto p = upload(params, s);
  auto xd = upload(x, s);
  auto g = upload(d_out, s);
  gmi::cuda::device_buffer<float> out(n * Net::out), out2(n * Net::out), acts(b.acts_size(n)),
      d_params(Net::param_count), d_x(n * Net::in);
  b.forward(p, xd, out, acts);
  b.forward(p, xd, out2);
  b.backward(p, xd, acts, g, d_params, d_x);
  mlp_run r;
  r.path = b.path();
  r.out = download(out, s);
  r.out_inference = download(out2, s);
  r.d_params = download(d_params, s);
  r.d_x = download(d_x, s);
  return r;
}

__global__ void actor_critic_kernel(const float* params, const float* obs, int n, std::uint64_t seed,
                                    float* actions, float* logp, float* values, float* d_params) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  using ac = cartpole_ac;
  gmi::rng g(seed, static_cast<std::uint64_t>(i));
  float mu[1], acts[ac::acts_size], dz[ac::acts_size];
  ac::act(params, obs + i * ac::obs_dim, g, actions + i, logp + i, values + i, mu);
  float v;
  ac::forward(params, obs + i * ac::obs_dim, mu, &v, acts);
  const float d_ls[1] = {1.0f};
  ac::backward(params, obs + i * ac::obs_dim, acts, mu, 1.0f, d_ls, d_params, dz, nullptr,
               gmi::nn::accumulate_atomic{});
}

}  // namespace

mlp_run run_mlp(run_kind kind, const std::vector<float>& params, const std::vector<float>& x,
                const std::vector<float>& d_out) {
  using namespace gmi::nn;
  switch (kind) {
    case run_kind::small_auto: return run<small_net, auto_path>(params, x, d_out);
    case run_kind::small_gemm_fp32: return run<small_net, gemm_path<gemm_precision::fp32>>(params, x, d_out);
    case run_kind::tanh_auto: return run<tanh_net, auto_path>(params, x, d_out);
    case run_kind::ant_auto: return run<ant_net, auto_path>(params, x, d_out);
    case run_kind::wide_tf32: return run<wide_net, gemm_path<gemm_precision::tf32>>(params, x, d_out);
    case run_kind::wide_fp32: return run<wide_net, gemm_path<gemm_precision::fp32>>(params, x, d_out);
  }
  return {};
}

std::vector<float> run_adam(const gmi::nn::adam_config& cfg, float lr2, std::vector<float> params,
                            const std::vector<std::vector<float>>& grads, double& last_norm) {
  gmi::cuda::stream s;
  gmi::nn::adam<gmi::exec::cuda> opt(cfg, params.size(), gmi::exec::cuda{.stream = s});
  auto p = upload(params, s);
  for (std::size_t k = 0; k < grads.size(); ++k) {
    auto g = upload(grads[k], s);
    opt.step(p, g);
    if (k == 0) opt.set_lr(lr2);
    last_norm = opt.grad_norm();  // also waits, so g outlives its use
  }
  return download(p, s);
}

normalizer_run run_normalizer(int dim, const std::vector<float>& a, const std::vector<float>& b,
                              const std::vector<float>& probe, double window) {
  gmi::cuda::stream s;
  const gmi::exec::cuda pol{.stream = s};
  const gmi::nn::normalizer_config c{.window = window};
  gmi::nn::running_mean_std<gmi::exec::cuda> seq(dim, c, pol), first(dim, c, pol), second(dim, c, pol),
      gathered(dim, c, pol);
  auto ad = upload(a, s);
  auto bd = upload(b, s);
  auto pd = upload(probe, s);
  seq.update(ad);
  seq.update(bd);
  first.update(ad);
  second.update(bd);
  first.merge(second.stats());
  const std::size_t record = 1 + 2 * static_cast<std::size_t>(dim);
  gmi::cuda::device_buffer<double> records(2 * record);
  gathered.moments(ad, {records.data(), record});
  gathered.moments(bd, {records.data() + record, record});
  gathered.merge_in_order({records.data(), records.size()});
  gmi::cuda::device_buffer<float> y(probe.size());
  seq.normalize(pd, y);
  normalizer_run r;
  r.stats_sequential = seq.stats_on_host();
  r.stats_merged = first.stats_on_host();
  r.stats_gathered = gathered.stats_on_host();
  r.normalized = download(y, s);
  return r;
}

per_sample_run run_actor_critic_per_sample(const std::vector<float>& params, const std::vector<float>& obs,
                                           std::uint64_t seed) {
  gmi::cuda::stream s;
  const int n = static_cast<int>(obs.size() / cartpole_ac::obs_dim);
  auto p = upload(params, s);
  auto o = upload(obs, s);
  gmi::cuda::device_buffer<float> actions(n), logp(n), values(n), d_params(cartpole_ac::param_count);
  d_params.fill_bytes(0, s);
  actor_critic_kernel<<<(n + 127) / 128, 128, 0, s>>>(p.data(), o.data(), n, seed, actions.data(), logp.data(),
                                                      values.data(), d_params.data());
  GMI_CUDA_TRY(cudaGetLastError());
  return {download(actions, s), download(logp, s), download(values, s), download(d_params, s)};
}

}  // namespace nn_gpu
