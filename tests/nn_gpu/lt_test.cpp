// The cuBLASLt network path (lt_mlp.cuh) against the host path in double: outputs, weight, bias and input
// gradients in fp32, TF32 and bf16 for the paper's three policies and for odd sizes; the captured replay equals
// the eager calls; batch_mlp<auto_path> picks the path by width.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include <gmi/core/rng.hpp>
#include <gmi/nn/activation.hpp>
#include <gmi/nn/detail/lt_sums.hpp>

#include "lt_kernels.hpp"
#include "reference.hpp"

namespace {
using namespace gmi::nn;
using nn_gpu::lt_net;

using nn_gpu::host_reference;
using nn_gpu::rel_err;
// This file's draws come from Philox stream 7 (the values its tolerances were measured with).
std::vector<float> uniform(std::size_t n, std::uint64_t seed, float lo, float hi) {
  return nn_gpu::uniform(n, seed, lo, hi, 7);
}
template <class Net>
std::vector<float> init(std::uint64_t seed) {
  return nn_gpu::init_params<Net>(seed, 7);
}

double tolerance(precision p) { return p == precision::fp32 ? 2e-5 : p == precision::tf32 ? 5e-3 : 5e-2; }

template <class Net>
void check(lt_net net, precision p, std::size_t n, bool use_auto = false, const char* want_path = nullptr,
           network_config cfg = {}) {
  cfg.precision = p;
  const auto params = init<Net>(11);
  const auto x = uniform(n * Net::in, 21, -2, 2);
  const auto g = uniform(n * Net::out, 31, -1, 1);
  const auto r = nn_gpu::run_lt(net, cfg, use_auto, params, x, g);
  const auto ref = host_reference<Net>(params, x, g);
  const bool mma = cfg.kernels == layer_kernels::mma && p != precision::fp32;
  const std::string want = want_path ? want_path : std::string(mma ? "mma_" : "lt_") + precision_name(p);
  CHECK(r.path == want);
  const double tol = r.path == "fused_fp32" ? 1e-5 : tolerance(p);
  const double e_out = rel_err(r.out, ref.out), e_inf = rel_err(r.out_inference, ref.out),
               e_dp = rel_err(r.d_params, ref.d_params), e_dx = rel_err(r.d_x, ref.d_x);
  // Weight and bias gradients separately: a bias gradient is a plain sum (the BGRADB epilogue or the column sum).
  using L = typename Net::layers;
  std::vector<float> db;
  std::vector<double> db_ref;
  for (int l = 0; l < L::count; ++l)
    for (int o = 0; o < L::width(l + 1); ++o) {
      db.push_back(r.d_params[L::bias_offset(l) + o]);
      db_ref.push_back(ref.d_params[L::bias_offset(l) + o]);
    }
  const double e_db = rel_err(db, db_ref);
  MESSAGE(r.path << " n " << n << ": relative errors out " << e_out << ", inference " << e_inf << ", d_params "
                 << e_dp << ", bias grads " << e_db << ", d_x " << e_dx << " (tolerance " << tol << ")");
  CHECK(e_out < tol);
  CHECK(e_inf < tol);
  CHECK(e_dp < tol);
  CHECK(e_db < tol);
  CHECK(e_dx < tol);
  // The captured replay runs the same plans on the same data: the same bits.
  CHECK(r.graph_out == r.out);
  CHECK(r.graph_d_params == r.d_params);
  CHECK(r.graph_d_x == r.d_x);
  CHECK(r.plans_after_graph == r.plans_before_graph);
  if (!use_auto) {
    // Outputs left in the record and a backward reusing the forward's bf16 weights and inputs: the same bits.
    CHECK(r.out_from_record == r.out);
    CHECK(r.d_params_weights_ready == r.d_params);
    MESSAGE(r.path << ": bias gradients by the column-sum kernels (no BGRADB algorithm): " << r.bias_sums);
  }
}
// The own tensor-core kernels (network_config::kernels mma) against the cuBLASLt products with separate
// activation passes, on the same parameters and data: outputs, parameter and input gradients within the
// precision's tolerance of each other; with vs_host, mma also against the host by check() (skipped for the large
// batch, whose double-precision host pass would dominate the test's time).
template <class Net>
void check_mma_against_cublaslt(lt_net net, precision p, std::size_t n, bool vs_host = true) {
  const auto params = init<Net>(11);
  const auto x = uniform(n * Net::in, 21, -2, 2);
  const auto g = uniform(n * Net::out, 31, -1, 1);
  const auto lt = nn_gpu::run_lt(net, network_config{.precision = p}, false, params, x, g);
  const auto mma = nn_gpu::run_lt(net, network_config{.precision = p, .kernels = layer_kernels::mma}, false, params, x, g);
  REQUIRE(mma.path == std::string("mma_") + precision_name(p));
  auto as_double = [](const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); };
  const double tol = tolerance(p);
  const double e_out = rel_err(mma.out, as_double(lt.out)), e_dp = rel_err(mma.d_params, as_double(lt.d_params)),
               e_dx = rel_err(mma.d_x, as_double(lt.d_x));
  MESSAGE(mma.path << " vs " << lt.path << " n " << n << ": relative differences out " << e_out << ", d_params "
                   << e_dp << ", d_x " << e_dx << " (tolerance " << tol << ")");
  CHECK(e_out < tol);
  CHECK(e_dp < tol);
  CHECK(e_dx < tol);
  if (vs_host) check<Net>(net, p, n, false, nullptr, network_config{.kernels = layer_kernels::mma});
}
// The weight gradients as chunked products (network_config::weight_grad_chunks) against one product per layer,
// same data: the input gradients the same bits (the same products), the parameter gradients within the
// precision's tolerance, every layer split (counted), a rerun the same bits; then the split run against the host.
// must_split false: chunks whose start is less aligned than the whole may find no cuBLASLt algorithm and take one
// product (counted, not required).
template <class Net>
void check_split(lt_net net, precision p, std::size_t n, bool must_split = true) {
  const auto params = init<Net>(11);
  const auto x = uniform(n * Net::in, 21, -2, 2);
  const auto g = uniform(n * Net::out, 31, -1, 1);
  const network_config one{.precision = p, .weight_grad_chunks = 1}, split{.precision = p, .weight_grad_chunks = 16};
  const auto a = nn_gpu::run_lt(net, one, false, params, x, g);
  const auto b = nn_gpu::run_lt(net, split, false, params, x, g);
  const auto b2 = nn_gpu::run_lt(net, split, false, params, x, g);
  CHECK(a.split_products == 0);
  // eager, captured and the weights-ready backward: every layer
  if (must_split) CHECK(b.split_products == 3 * Net::count);
  else CHECK(b.split_products <= 3 * Net::count);
  const double e_dp = rel_err(b.d_params, std::vector<double>(a.d_params.begin(), a.d_params.end()));
  MESSAGE(b.path << " n " << n << ": split weight gradients (" << b.split_products << " chunked products) against "
                 << "one product, d_params relative difference " << e_dp << " (tolerance " << tolerance(p) << ")");
  CHECK(e_dp < tolerance(p));
  CHECK(b.d_x == a.d_x);
  CHECK(b2.d_params == b.d_params);
  check<Net>(net, p, n, false, nullptr, split);
}
}  // namespace

TEST_SUITE("gpu") {
  TEST_CASE("nn_gpu.lt.split_weight_grads_match") {
    for (const precision p : {precision::fp32, precision::tf32, precision::bf16}) {
      CAPTURE(precision_name(p));
      check_split<nn_gpu::shadow_hand_net>(lt_net::shadow_hand, p, 1024);
      check_split<nn_gpu::humanoid_net>(lt_net::humanoid, p, 2048);
      check_split<nn_gpu::ant_lt_net>(lt_net::ant, p, 8192);
      check_split<nn_gpu::odd_tanh_net>(lt_net::odd_tanh, p, 1536);
      // 4 chunks of 257 rows: at fp32 / TF32 a chunk of 13-wide inputs starts only 4-byte aligned (257 x 13 x 4
      // bytes), so the batch must be planned for that, not for the first chunk's 256 bytes.
      check_split<nn_gpu::odd_tanh_net>(lt_net::odd_tanh, p, 1028, false);
    }
    check_split<nn_gpu::odd_relu_net>(lt_net::odd_relu, precision::fp32, 768);
  }

  TEST_CASE("nn_gpu.lt.mma_matches_cublaslt") {
    for (const precision p : {precision::tf32, precision::bf16}) {
      CAPTURE(precision_name(p));
      check_mma_against_cublaslt<nn_gpu::shadow_hand_net>(lt_net::shadow_hand, p, 300);
      check_mma_against_cublaslt<nn_gpu::humanoid_net>(lt_net::humanoid, p, 333);
      check_mma_against_cublaslt<nn_gpu::ant_lt_net>(lt_net::ant, p, 1000);
      check_mma_against_cublaslt<nn_gpu::shadow_hand_net>(lt_net::shadow_hand, p, 4096, false);
      for (const std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{301}})
        check_mma_against_cublaslt<nn_gpu::odd_tanh_net>(lt_net::odd_tanh, p, n);
    }
    // fp32 keeps cuBLASLt whatever kernels says.
    check<nn_gpu::ant_lt_net>(lt_net::ant, precision::fp32, 100, false, "lt_fp32",
                              network_config{.kernels = layer_kernels::mma});
  }

  TEST_CASE("nn_gpu.lt.paper_nets_match_host") {
    for (const precision p : {precision::fp32, precision::tf32, precision::bf16}) {
      CAPTURE(precision_name(p));
      check<nn_gpu::shadow_hand_net>(lt_net::shadow_hand, p, 300);
      check<nn_gpu::humanoid_net>(lt_net::humanoid, p, 333);
      check<nn_gpu::ant_lt_net>(lt_net::ant, p, 1000);
    }
  }

  TEST_CASE("nn_gpu.lt.wholenet_backward_matches_host") {
    // network_config::backward wholenet (the input-gradient chain as one kernel, wholenet_backward.cuh): outputs,
    // weight, bias and input gradients against the host in double, the captured replay the same bits, and
    // against the cuBLASLt backward on the same data within the precision's tolerance; with the cuBLASLt forward
    // and with the whole-network forward; one tile, a partial tile, more tiles than resident blocks.
    auto against_cublaslt = [](lt_net net, precision p, std::size_t n, auto tag) {
      using Net = typename decltype(tag)::type;
      const auto params = init<Net>(11);
      const auto x = uniform(n * Net::in, 21, -2, 2);
      const auto g = uniform(n * Net::out, 31, -1, 1);
      const auto lt = nn_gpu::run_lt(net, network_config{.precision = p, .backward = backward_kernels::cublaslt},
                                     false, params, x, g);
      const auto wb = nn_gpu::run_lt(net, network_config{.precision = p, .backward = backward_kernels::wholenet},
                                     false, params, x, g);
      const auto wb2 = nn_gpu::run_lt(net, network_config{.precision = p, .backward = backward_kernels::wholenet},
                                      false, params, x, g);
      CHECK(lt.backward_path == std::string("lt_") + precision_name(p));
      CHECK(wb.backward_path == std::string("whole_") + precision_name(p));
      auto as_double = [](const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); };
      const double e_dp = rel_err(wb.d_params, as_double(lt.d_params)), e_dx = rel_err(wb.d_x, as_double(lt.d_x));
      MESSAGE(wb.backward_path << " vs " << lt.backward_path << " n " << n << ": relative differences d_params "
                               << e_dp << ", d_x " << e_dx << " (tolerance " << tolerance(p) << ")");
      CHECK(e_dp < tolerance(p));
      CHECK(e_dx < tolerance(p));
      CHECK(wb.out == lt.out);  // the same forward
      CHECK(wb2.d_params == wb.d_params);
      CHECK(wb2.d_x == wb.d_x);
    };
    for (const precision p : {precision::tf32, precision::bf16}) {
      CAPTURE(precision_name(p));
      const network_config wb{.backward = backward_kernels::wholenet};
      const std::string lt_path = std::string("lt_") + precision_name(p);
      check<nn_gpu::shadow_hand_net>(lt_net::shadow_hand, p, 300, false, lt_path.c_str(), wb);
      check<nn_gpu::humanoid_net>(lt_net::humanoid, p, 333, false, lt_path.c_str(), wb);
      check<nn_gpu::ant_lt_net>(lt_net::ant, p, 1000, false, lt_path.c_str(), wb);
      for (const std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{301}})
        check<nn_gpu::odd_tanh_net>(lt_net::odd_tanh, p, n, false, lt_path.c_str(), wb);
      // with the whole-network forward (the PPO minibatch's pairing)
      network_config both = wb;
      both.kernels = layer_kernels::wholenet;
      const std::string whole_path = std::string("whole_") + precision_name(p);
      check<nn_gpu::ant_lt_net>(lt_net::ant, p, 1000, false, whole_path.c_str(), both);
      check<nn_gpu::humanoid_net>(lt_net::humanoid, p, 333, false, whole_path.c_str(), both);
      against_cublaslt(lt_net::shadow_hand, p, 1024, std::type_identity<nn_gpu::shadow_hand_net>{});
      against_cublaslt(lt_net::humanoid, p, 2048, std::type_identity<nn_gpu::humanoid_net>{});
      against_cublaslt(lt_net::ant, p, 9000, std::type_identity<nn_gpu::ant_lt_net>{});
    }
  }

  TEST_CASE("nn_gpu.lt.odd_sizes_match_host") {
    for (const std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{301}}) {
      CAPTURE(n);
      for (const precision p : {precision::fp32, precision::tf32, precision::bf16})
        check<nn_gpu::odd_tanh_net>(lt_net::odd_tanh, p, n);
      // ReLU's derivative jumps at 0, where reduced-precision products may land on the other side: fp32 only.
      check<nn_gpu::odd_relu_net>(lt_net::odd_relu, precision::fp32, n);
    }
  }

  TEST_CASE("nn_gpu.lt.column_sum_matches_host") {
    // The bias gradient's fallback in two stages (chunks of rows, then the chunks in order): within fp32 rounding
    // of a double sum, and the same bits on a second run; sizes around the chunk of 256 rows and 32 columns.
    for (const std::size_t rows : {std::size_t{1}, std::size_t{255}, std::size_t{257}, std::size_t{8193}})
      for (const int w : {1, 20, 33, 513}) {
        CAPTURE(rows);
        CAPTURE(w);
        const auto m = uniform(rows * w, 41 + rows + w, -1, 1);
        std::vector<double> ref(w, 0.0);
        double scale = 0;
        for (std::size_t r = 0; r < rows; ++r)
          for (int c = 0; c < w; ++c) {
            ref[c] += m[r * w + c];
            scale += std::abs(m[r * w + c]);
          }
        const auto got = nn_gpu::column_sum_twice(m, rows, w);
        REQUIRE(got.size() == 2);
        CHECK(got[0] == got[1]);
        double worst = 0;
        for (int c = 0; c < w; ++c) worst = std::max(worst, std::abs(got[0][c] - ref[c]));
        CHECK(worst <= 1e-6 * scale / w + 1e-6);
      }
  }

  TEST_CASE("nn_gpu.lt.dz_pass_sums_match_host") {
    // The fused dz pass (dz = g * ELU'(y), its bf16 copy and the bias gradient's first stage in one kernel)
    // against its host twin (nn/detail/lt_sums.hpp) and against the column-sum kernel over the stored dz: the
    // same bits; the bf16 copy within its rounding.
    for (const std::size_t rows : {std::size_t{1}, std::size_t{257}, std::size_t{8193}})
      for (const int w : {20, 33, 512}) {
        CAPTURE(rows);
        CAPTURE(w);
        const auto g = uniform(rows * w, 51 + rows + w, -1, 1);
        const auto y = uniform(rows * w, 61 + rows + w, -1, 2);
        const auto r = nn_gpu::dz_pass_elu(g, y, rows, w);
        std::vector<float> dz(rows * w);
        const auto partials = detail::lt_dz_partials_host<elu>(g.data(), y.data(), rows, w, dz.data());
        CHECK(r.dz == dz);
        CHECK(r.partials == partials);
        CHECK(r.stored_partials == partials);
        REQUIRE(r.dz16.size() == dz.size());
        int off = 0;
        for (std::size_t k = 0; k < dz.size(); ++k) off += std::abs(r.dz16[k] - dz[k]) > std::abs(dz[k]) / 256;
        CHECK(off == 0);
      }
  }

  TEST_CASE("nn_gpu.lt.fused_dz_sums_same_bits") {
    // network_config::fuse_dz_sums (the dz pass forms the bias gradient's first stage; bf16 stores no fp32 dz)
    // against the separate passes: the same outputs, parameter and input gradients, bit for bit, in every
    // precision, chunked or one weight-gradient product, cuBLASLt or the own kernels, and with the column-sum
    // fallback (the odd ReLU net at fp32 has no BGRADB algorithm for some layers).
    auto same = [](lt_net net, const network_config& on, std::size_t n, auto tag) {
      using Net = typename decltype(tag)::type;
      const auto params = init<Net>(11);
      const auto x = uniform(n * Net::in, 21, -2, 2);
      const auto g = uniform(n * Net::out, 31, -1, 1);
      network_config fused = on, off = on;
      fused.fuse_dz_sums = true;  // the default is off: both set here
      off.fuse_dz_sums = false;
      const auto a = nn_gpu::run_lt(net, fused, false, params, x, g);
      const auto b = nn_gpu::run_lt(net, off, false, params, x, g);
      MESSAGE(a.path << " n " << n << " chunks cap " << on.weight_grad_chunks << ": " << a.split_products
                     << " chunked products, " << a.bias_sums << " column-sum bias gradients");
      CHECK(a.path == b.path);
      CHECK(a.out == b.out);
      CHECK(a.d_params == b.d_params);
      CHECK(a.d_x == b.d_x);
      CHECK(a.graph_d_params == b.graph_d_params);
      CHECK(a.d_params_weights_ready == b.d_params_weights_ready);
      CHECK(a.split_products == b.split_products);
      CHECK(a.bias_sums == b.bias_sums);
    };
    for (const precision p : {precision::fp32, precision::tf32, precision::bf16})
      for (const int chunks : {0, 16}) {
        CAPTURE(precision_name(p));
        CAPTURE(chunks);
        const network_config on{.precision = p, .weight_grad_chunks = chunks};
        same(lt_net::shadow_hand, on, 1024, std::type_identity<nn_gpu::shadow_hand_net>{});
        same(lt_net::humanoid, on, 2048, std::type_identity<nn_gpu::humanoid_net>{});
        same(lt_net::ant, on, 4096, std::type_identity<nn_gpu::ant_lt_net>{});
        same(lt_net::odd_tanh, on, 301, std::type_identity<nn_gpu::odd_tanh_net>{});
        if (p != precision::fp32) {
          network_config mma = on;
          mma.kernels = layer_kernels::mma;
          same(lt_net::humanoid, mma, 2048, std::type_identity<nn_gpu::humanoid_net>{});
        }
      }
    same(lt_net::odd_relu, network_config{}, 301, std::type_identity<nn_gpu::odd_relu_net>{});
  }

  TEST_CASE("nn_gpu.lt.gradients_at_odd_offset") {
    // Issue 39: the device SAC trainer wrote critic 2's gradient at float offset 75265 (critic 1's size) of one
    // buffer, so its bias gradients were 4-byte aligned; cuBLASLt's heuristic is not told the bias alignment and
    // its BGRADB kernel at batch 4096 may write 16 bytes at a time. lt_gemm now leaves such a bias to the
    // column-sum kernels: the gradients at that offset match the host's and the aligned run's, with no fault.
    using Net = nn_gpu::sac_critic_net;
    for (const std::size_t n : {std::size_t{256}, std::size_t{4096}}) {
      CAPTURE(n);
      const auto params = init<Net>(13);
      const auto x = uniform(n * Net::in, 23, -2, 2);
      const auto g = uniform(n * Net::out, 33, -1, 1);
      const auto ref = host_reference<Net>(params, x, g);
      const auto aligned = nn_gpu::critic_backward_at(0, params, x, g);
      const auto odd = nn_gpu::critic_backward_at(Net::param_count, params, x, g);
      const double e_aligned = rel_err(aligned.d_params, ref.d_params), e_odd = rel_err(odd.d_params, ref.d_params);
      MESSAGE("critic 35-256-256-1, n " << n << ": d_params relative error at offset 0 " << e_aligned << " ("
                                        << aligned.bias_sums << " column sums), at offset " << Net::param_count << " "
                                        << e_odd << " (" << odd.bias_sums << " column sums)");
      CHECK(e_aligned < tolerance(precision::fp32));
      CHECK(e_odd < tolerance(precision::fp32));
      CHECK(odd.d_params == odd.d_params_again);
      CHECK(odd.bias_sums == 2 * Net::count);  // every layer's bias gradient, both runs
    }
  }

  TEST_CASE("nn_gpu.lt.auto_path_picks_by_width") {
    // Cartpole's 32-32 keeps the shared-memory kernels by default and takes cuBLASLt when the threshold says so.
    check<nn_gpu::cartpole_body_net>(lt_net::cartpole_body, precision::fp32, 1000, true, "fused_fp32");
    check<nn_gpu::cartpole_body_net>(lt_net::cartpole_body, precision::fp32, 1000, true, "lt_fp32",
                                     network_config{.lt_min_width = 32});
    check<nn_gpu::ant_lt_net>(lt_net::ant, precision::fp32, 1000, true, "lt_fp32");
    check<nn_gpu::shadow_hand_net>(lt_net::shadow_hand, precision::tf32, 300, true, "lt_tf32");
  }
}
