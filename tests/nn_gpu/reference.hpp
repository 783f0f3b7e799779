#pragma once
// What the nn GPU tests compare against: seeded inputs, torch-style initial weights, the host batch path in double,
// and the largest error relative to the largest reference value.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <gmi/core/rng.hpp>
#include <gmi/core/span.hpp>
#include <gmi/exec/host.hpp>
#include <gmi/nn/mlp.hpp>

namespace nn_gpu {

// n draws U(lo, hi) from Philox stream `stream` of `seed`.
inline std::vector<float> uniform(std::size_t n, std::uint64_t seed, float lo = -1, float hi = 1,
                                  std::uint64_t stream = 1) {
  gmi::rng g(seed, stream);
  std::vector<float> v(n);
  for (auto& x : v) x = g.uniform(lo, hi);
  return v;
}

// torch.nn.Linear's default range, U(-1/sqrt(in), 1/sqrt(in)), so activations stay O(1) through wide layers.
template <class Net>
std::vector<float> init_params(std::uint64_t seed, std::uint64_t stream = 1) {
  using L = typename Net::layers;
  std::vector<float> p(Net::param_count);
  for (int l = 0; l < L::count; ++l) {
    const float r = 1.0f / std::sqrt(float(L::width(l)));
    const auto w = uniform(L::layer_params(l), seed + l, -r, r, stream);
    std::copy(w.begin(), w.end(), p.begin() + L::weight_offset(l));
  }
  return p;
}

// max |a - b| / max |b|
inline double rel_err(const std::vector<float>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num = std::max(num, std::abs(double(a[i]) - b[i]));
    den = std::max(den, std::abs(b[i]));
  }
  return num / std::max(den, 1e-30);
}

struct reference {
  std::vector<double> out, d_params, d_x;
};

// The host path in double, from the same float inputs.
template <class Net>
reference host_reference(const std::vector<float>& params, const std::vector<float>& x,
                         const std::vector<float>& d_out) {
  using D = typename Net::template rebind<double>;
  const std::vector<double> p(params.begin(), params.end()), xd(x.begin(), x.end()), g(d_out.begin(), d_out.end());
  const std::size_t n = x.size() / Net::in;
  reference r{std::vector<double>(n * Net::out), std::vector<double>(Net::param_count), std::vector<double>(n * Net::in)};
  std::vector<double> acts(n * Net::activation_size);
  gmi::nn::batch_mlp<D, gmi::exec::host> b;
  using cs = gmi::host_span<const double>;
  using ms = gmi::host_span<double>;
  b.forward(cs(p.data(), p.size()), cs(xd.data(), xd.size()), ms(r.out.data(), r.out.size()), ms(acts.data(), acts.size()));
  b.backward(cs(p.data(), p.size()), cs(xd.data(), xd.size()), cs(acts.data(), acts.size()), cs(g.data(), g.size()),
             ms(r.d_params.data(), r.d_params.size()), ms(r.d_x.data(), r.d_x.size()));
  return r;
}

}  // namespace nn_gpu
