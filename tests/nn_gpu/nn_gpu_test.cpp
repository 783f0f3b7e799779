#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include <gmi/core/rng.hpp>

#include "kernels.hpp"
#include "reference.hpp"

namespace {
using namespace gmi::nn;

using nn_gpu::host_reference;
using nn_gpu::init_params;
using nn_gpu::rel_err;
using nn_gpu::uniform;

template <class Net>
void check_path(nn_gpu::run_kind kind, std::size_t n, const char* want_path, double tol) {
  const auto params = init_params<Net>(100);
  const auto x = uniform(n * Net::in, 200, -2, 2);
  const auto d_out = uniform(n * Net::out, 300);
  const auto gpu = nn_gpu::run_mlp(kind, params, x, d_out);
  const auto ref = host_reference<Net>(params, x, d_out);
  CHECK(gpu.path == std::string(want_path));
  const double e_out = rel_err(gpu.out, ref.out), e_inf = rel_err(gpu.out_inference, ref.out),
               e_dp = rel_err(gpu.d_params, ref.d_params), e_dx = rel_err(gpu.d_x, ref.d_x);
  MESSAGE(want_path << ": relative errors out " << e_out << ", inference " << e_inf << ", d_params " << e_dp
                    << ", d_x " << e_dx << " (tolerance " << tol << ")");
  CHECK(e_out < tol);
  CHECK(e_inf < tol);
  CHECK(e_dp < tol);
  CHECK(e_dx < tol);
}
}  // namespace

TEST_SUITE("gpu") {
  TEST_CASE("nn_gpu.mlp.fused_path_equals_host") {
    check_path<nn_gpu::small_net>(nn_gpu::run_kind::small_auto, 1000, "fused_fp32", 1e-5);
    check_path<nn_gpu::tanh_net>(nn_gpu::run_kind::tanh_auto, 777, "fused_fp32", 1e-5);
  }

  TEST_CASE("nn_gpu.mlp.gemm_fp32_path_equals_host") {
    check_path<nn_gpu::small_net>(nn_gpu::run_kind::small_gemm_fp32, 1000, "gemm_fp32", 1e-5);
    check_path<nn_gpu::wide_net>(nn_gpu::run_kind::wide_fp32, 300, "gemm_fp32", 1e-5);
  }

  TEST_CASE("nn_gpu.mlp.gemm_tf32_path_equals_host") {
    check_path<nn_gpu::ant_net>(nn_gpu::run_kind::ant_auto, 1000, "lt_fp32", 2e-5);  // auto: cuBLASLt, fp32 by default
    check_path<nn_gpu::wide_net>(nn_gpu::run_kind::wide_tf32, 300, "gemm_tf32", 3e-3);
  }

  TEST_CASE("nn_gpu.adam.kernel_equals_host") {
   // one block below adam_fused_max parameters, the three-kernel grid above it
   for (const std::size_t n : {std::size_t{1289}, std::size_t{10007}, std::size_t{100003}}) {
    CAPTURE(n);
    adam_config cfg{.lr = 1e-2f, .max_grad_norm = 1.0f};
    const auto p0 = uniform(n, 1);
    std::vector<std::vector<float>> grads = {uniform(n, 2), uniform(n, 3, -0.001f, 0.001f), uniform(n, 4, -3, 1)};
    double gpu_norm = 0;
    const auto gpu = nn_gpu::run_adam(cfg, 3e-3f, p0, grads, gpu_norm);
    adam<gmi::exec::host> host(cfg, n);
    std::vector<float> p = p0;
    double norm = 0;
    for (std::size_t k = 0; k < grads.size(); ++k) {
      norm = host.step({p.data(), n}, {grads[k].data(), n});
      if (k == 0) host.set_lr(3e-3f);
    }
    CHECK(gpu_norm == doctest::Approx(norm).epsilon(1e-9));
    std::vector<double> ref(p.begin(), p.end());
    CHECK(rel_err(gpu, ref) < 1e-6);
   }
  }

  // dim 37: a few short ranges; dim 4 and 70001 samples: a rollout-sized batch in 256 ranges of 274 samples, the
  // last one shorter, merged by the fixed tree. Feature `shifted` sits far from zero.
  TEST_CASE("nn_gpu.normalizer.kernel_equals_host") {
    struct shape { int dim; std::size_t n_a, n_b; int shifted; float shift; double window; };
    // The last shape forgets: its window keeps 2000 of a's 3001 samples when b's 1234 come in.
    for (const shape c : {shape{37, 3001, 1234, 3, 500.0f, 0.0}, shape{4, 70001, 100, 1, 1000.0f, 0.0},
                          shape{5, 3001, 1234, 2, 300.0f, 3234.0}}) {
      CAPTURE(c.dim);
      CAPTURE(c.window);
      auto a = uniform(c.n_a * c.dim, 5, -4, 9), b = uniform(c.n_b * c.dim, 6, 0, 2);
      for (std::size_t s = 0; s < c.n_a; ++s) a[s * c.dim + c.shifted] += c.shift;
      const auto probe = uniform(10 * c.dim, 7, -10, 10);
      const auto gpu = nn_gpu::run_normalizer(c.dim, a, b, probe, c.window);
      running_mean_std<gmi::exec::host> host(c.dim, {.window = c.window});
      host.update({a.data(), a.size()});
      host.update({b.data(), b.size()});
      const auto want = host.stats();
      // The two batches' records merged in order, then into a fresh instance as one batch (what the split
      // layout's trainers do with the group's moments).
      running_mean_std<gmi::exec::host> gathered(c.dim, {.window = c.window});
      std::vector<double> records = gathered.moments({a.data(), a.size()});
      const std::vector<double> rb = gathered.moments({b.data(), b.size()});
      records.insert(records.end(), rb.begin(), rb.end());
      const std::vector<double> batch = merge_in_order({records.data(), records.size()}, c.dim);
      gathered.merge({batch.data(), batch.size()});
      const auto want_gathered = gathered.stats();
      REQUIRE(gpu.stats_gathered.size() == want_gathered.size());
      CHECK(gpu.stats_gathered[0] == static_cast<double>(c.n_a + c.n_b));  // one batch: nothing held to forget
      for (std::size_t i = 0; i < want.size(); ++i)
        CHECK(gpu.stats_gathered[i] == doctest::Approx(want_gathered[i]).epsilon(1e-10));
      REQUIRE(gpu.stats_sequential.size() == want.size());
      CHECK(gpu.stats_sequential[0] == (c.window > 0 ? c.window : static_cast<double>(c.n_a + c.n_b)));
      for (std::size_t i = 0; i < want.size(); ++i) {
        CHECK(gpu.stats_sequential[i] == doctest::Approx(want[i]).epsilon(1e-10));
        CHECK(gpu.stats_merged[i] == doctest::Approx(want[i]).epsilon(1e-10));
      }
      std::vector<float> y(probe.size());
      host.normalize({probe.data(), probe.size()}, {y.data(), y.size()});
      for (std::size_t i = 0; i < y.size(); ++i) CHECK(gpu.normalized[i] == doctest::Approx(y[i]).epsilon(1e-6));
    }
  }

  TEST_CASE("nn_gpu.actor_critic.per_sample_device_calls_equal_host") {
    using ac = nn_gpu::cartpole_ac;
    const int n = 3000;
    auto params = uniform(ac::param_count, 8, -0.4f, 0.4f);
    params[ac::log_std_offset] = -0.3f;
    const auto obs = uniform(n * ac::obs_dim, 9, -1, 1);
    const auto gpu = nn_gpu::run_actor_critic_per_sample(params, obs, 77);
    std::vector<double> d_ref(ac::param_count, 0.0);
    using acd = ac::rebind<double>;
    const std::vector<double> pd(params.begin(), params.end());
    for (int i = 0; i < n; ++i) {
      gmi::rng g(77, static_cast<std::uint64_t>(i));
      float a, lp, v;
      ac::act(params.data(), obs.data() + i * ac::obs_dim, g, &a, &lp, &v);
      CHECK(gpu.actions[i] == doctest::Approx(a).epsilon(1e-4));
      CHECK(gpu.logp[i] == doctest::Approx(lp).epsilon(1e-4));
      CHECK(gpu.values[i] == doctest::Approx(v).epsilon(1e-5));
      const std::vector<double> od(obs.begin() + i * ac::obs_dim, obs.begin() + (i + 1) * ac::obs_dim);
      double mu[1], vd, acts[acd::acts_size], dz[acd::acts_size];
      acd::forward(pd.data(), od.data(), mu, &vd, acts);
      const double d_ls[1] = {1.0};
      acd::backward(pd.data(), od.data(), acts, mu, 1.0, d_ls, d_ref.data(), dz);
    }
    CHECK(rel_err(gpu.d_params, d_ref) < 1e-5);
  }
}
