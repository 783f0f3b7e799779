// gmi.bench.wide: one PPO minibatch's network passes alone (its own translation unit: see wide_bench.hpp): the
// forward with the activation record and the backward of the three paper policies through lt_mlp at 8192 rows,
// per training precision and --wgrad-chunks, so the weight gradients' products can be timed apart from training
// (us_per_pass: forward + backward; forward_us: the forward alone).
#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/check.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/nn/lt_mlp.cuh>

#include <cstddef>
#include <string>
#include <vector>

#include "wide_bench.hpp"
#include "wide_cases.cuh"

namespace gmi_wide {
namespace {

template <class Mlp>
void backward_case(const options& o, const char* net_name) {
  constexpr std::size_t n = 8192;  // ppo_config's minibatch
  gmi::cuda::stream s;
  gmi::cuda::device_buffer<float> params(Mlp::param_count), x(n * Mlp::in), acts(Mlp::activation_size * n),
      d_out(n * Mlp::out), d_params(Mlp::param_count);
  params.fill_bytes(0x3c, s);  // 0.0117 in every float: finite activations
  x.fill_bytes(0x3c, s);
  d_out.fill_bytes(0x3c, s);
  for (const auto& pname : o.training_precisions)
    for (const int wgrad : o.wgrad_chunks)
    for (const int keep16 : o.keep_inputs16)
    for (const int fuse : o.fuse_dz)
    for (const auto& bname : o.backward) {
      if (repeats_kept_run(o, keep16, pname)) continue;
      const nn::network_config cfg{.precision = nn::parse_precision(pname, "--training-precisions"),
                                   .kernels = nn::layer_kernels::cublaslt, .weight_grad_chunks = wgrad,
                                   .keep_bf16_inputs = keep16 != 0, .fuse_dz_sums = fuse != 0,
                                   .backward = nn::parse_backward_kernels(bname, "--network-backward")};
      if (cfg.precision == nn::precision::fp32 && cfg.backward == nn::backward_kernels::wholenet) continue;
      nn::lt_mlp<Mlp> m(gmi::exec::cuda{.stream = s.get()}, n, cfg);
      const double flops = 3.0 * 2.0 * static_cast<double>(Mlp::layers::forward_macs) * n;
      const auto st = measure(o, 1.0, [&](int k) {
        for (int i = 0; i < k; ++i) {
          m.forward_raw(params.data(), x.data(), nullptr, acts.data(), n);
          m.backward_raw(params.data(), x.data(), acts.data(), d_out.data(), d_params.data(), nullptr, n, true);
        }
        GMI_CUDA_TRY(cudaStreamSynchronize(s.get()));
      });
      const auto fw = measure(o, 1.0, [&](int k) {  // the forward with record alone: the rest is the backward
        for (int i = 0; i < k; ++i) m.forward_raw(params.data(), x.data(), nullptr, acts.data(), n);
        GMI_CUDA_TRY(cudaStreamSynchronize(s.get()));
      });
      emit(o,
           {{"case", "backward"}, {"net", net_name}, {"precision", pname}, {"rows", n}, {"wgrad_chunks", wgrad},
            {"keep_inputs16", keep16}, {"fuse_dz_sums", fuse}, {"backward", bname},
            {"backward_path", m.backward_path()}, {"wgrad_chunks_taken", chunks_taken<Mlp>(cfg, n)}, {"split_products", m.split_products()},
            {"bias_sums", m.bias_sums()}, {"metric", "passes_per_s"}, {"us_per_pass", 1e6 / st.median},
            {"forward_us", 1e6 / fw.median},
            {"tflops", flops * st.median / 1e12}},
           st);
    }
}

}  // namespace

void backward_passes(const options& o) {
  backward_case<shadow_hand_ac::net>(o, "shadow_hand_mlp");
  backward_case<humanoid_ac::net>(o, "humanoid_mlp");
  backward_case<ant_ac::net>(o, "ant_mlp");
}

}  // namespace gmi_wide
