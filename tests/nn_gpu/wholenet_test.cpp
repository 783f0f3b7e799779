// The whole-network forward (wholenet.cuh, network_config::kernels wholenet) against the host forward in double:
// the paper's three policies and odd sizes (tanh and ReLU, widths off the 16/32 grid), TF32 and bf16, batches of
// 1 row to many tiles per block; a graph replay, a run on the kept packing and lt_mlp's forward with kernels
// wholenet give the same bits; fp32 and a network too wide for a block's shared memory are refused in one line.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "reference.hpp"
#include "wholenet_kernels.hpp"

namespace {
using namespace gmi::nn;
using nn_gpu::lt_net;

double tolerance(precision p) { return p == precision::tf32 ? 5e-3 : 5e-2; }

template <class Net>
void check(lt_net net, precision p, std::size_t n) {
  const auto params = nn_gpu::init_params<Net>(13, 9);
  const auto x = nn_gpu::uniform(n * Net::in, 23, -2, 2, 9);
  const auto r = nn_gpu::run_wholenet(net, p, params, x);
  const auto ref = nn_gpu::host_reference<Net>(params, x, std::vector<float>(n * Net::out, 0.0f));
  const std::string want = std::string("whole_") + precision_name(p);
  CHECK(r.path == want);
  CHECK(r.lt_path == want);
  const double e = nn_gpu::rel_err(r.out, ref.out);
  MESSAGE(want << " " << Net::in << "-...-" << Net::out << " n " << n << ": relative error " << e << " (tolerance "
               << tolerance(p) << "), weights in shared memory " << r.weights_in_smem << ", " << r.smem_bytes
               << " bytes per block");
  CHECK(e < tolerance(p));
  CHECK(r.out_graph == r.out);
  CHECK(r.out_again == r.out);
  CHECK(r.out_lt == r.out);
  // The bf16 input record the kernel writes is what the backward's own conversion would make: the same gradients.
  CHECK(r.kept16 == (p == precision::bf16));
  REQUIRE(r.d_params_kept16.size() == static_cast<std::size_t>(Net::param_count));
  CHECK(r.d_params_kept16 == r.d_params_converted);
}
}  // namespace

TEST_SUITE("gpu") {
  TEST_CASE("nn_gpu.wholenet.matches_host") {
    for (const precision p : {precision::bf16, precision::tf32}) {
      for (const std::size_t n : {std::size_t{1}, std::size_t{37}, std::size_t{301}}) {
        check<nn_gpu::ant_lt_net>(lt_net::ant, p, n);
        check<nn_gpu::humanoid_net>(lt_net::humanoid, p, n);
        check<nn_gpu::odd_tanh_net>(lt_net::odd_tanh, p, n);
        check<nn_gpu::odd_relu_net>(lt_net::odd_relu, p, n);
        check<nn_gpu::cartpole_body_net>(lt_net::cartpole_body, p, n);
      }
      check<nn_gpu::shadow_hand_net>(lt_net::shadow_hand, p, 67);
      // More tiles than resident blocks: each block loops over row tiles (and keeps its staged weights).
      check<nn_gpu::ant_lt_net>(lt_net::ant, p, 9000);
    }
  }

  TEST_CASE("nn_gpu.wholenet.fit_and_refusals") {
    // The Ant policy's packed bf16 weights and tiles fit one block (staged weights); Humanoid's and ShadowHand's read
    // their weights from global memory; TF32 doubles the bytes.
    const auto ant16 = nn_gpu::run_wholenet(lt_net::ant, precision::bf16, nn_gpu::init_params<nn_gpu::ant_lt_net>(1),
                                            std::vector<float>(nn_gpu::ant_lt_net::in, 0.5f));
    CHECK(ant16.weights_in_smem);
    const auto hum16 = nn_gpu::run_wholenet(lt_net::humanoid, precision::bf16,
                                            nn_gpu::init_params<nn_gpu::humanoid_net>(1),
                                            std::vector<float>(nn_gpu::humanoid_net::in, 0.5f));
    CHECK_FALSE(hum16.weights_in_smem);
    for (const precision p : {precision::bf16, precision::tf32}) {
      const std::string m = nn_gpu::wholenet_too_wide_error(p);
      MESSAGE(m);
      CHECK(m.find("per-block limit") != std::string::npos);
    }
    const std::string m = nn_gpu::wholenet_too_wide_error(precision::fp32);
    CHECK(m.find("got \"fp32\"") != std::string::npos);
  }
}
