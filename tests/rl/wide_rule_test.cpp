// The wide-network rule (rl/wide_rule.hpp): which networks are wide, the collection path it picks, overrides,
// and the one-line refusal of a bad value.
#include <doctest/doctest.h>

#include <string>

#include <gmi/agents/gaussian_mlp.hpp>
#include <gmi/core/error.hpp>
#include <gmi/rl/ppo_config.hpp>
#include <gmi/rl/wide_rule.hpp>

namespace {
namespace rl = gmi::rl;
namespace nn = gmi::nn;
using shadow_hand_net = gmi::agents::gaussian_mlp<nn::layers<512, 512, 512, 256>>::network<211, 20>;
using ant_net = gmi::agents::gaussian_mlp<nn::layers<256, 128, 64>>::network<60, 8>;
using cartpole_net = gmi::agents::gaussian_mlp<nn::layers<32, 32>>::network<4, 1>;
using edge_net = gmi::agents::gaussian_mlp<nn::layers<128, 64>>::network<4, 1>;
// Narrow networks of the suite's proxies: ant_proxy's 60 inputs, franka_cabinet_proxy's 23.
using narrow60_net = gmi::agents::gaussian_mlp<nn::layers<64, 64>>::network<60, 8>;
using narrow23_net = gmi::agents::gaussian_mlp<nn::layers<64, 64>>::network<23, 9>;

static_assert(rl::is_wide<shadow_hand_net>() && rl::is_wide<ant_net>());
static_assert(!rl::is_wide<cartpole_net>() && !rl::is_wide<edge_net>());
static_assert(rl::is_wide<edge_net>(nn::network_config{.lt_min_width = 128}));
}  // namespace

TEST_CASE("rl.wide_rule.default_follows_width") {
  rl::request_collection_path("");
  CHECK(rl::chosen_collection_path<shadow_hand_net>() == rl::collection_path::batched);
  CHECK(rl::chosen_collection_path<ant_net>() == rl::collection_path::batched);
  CHECK(rl::chosen_collection_path<cartpole_net>() == rl::collection_path::threads);
  // The threshold is network_config::lt_min_width: raised above 256, Ant is no longer wide (but collects batched by
  // its 60 inputs); edge_net (4 inputs) is wide at 128 and not above.
  CHECK(!rl::is_wide<ant_net>(nn::network_config{.lt_min_width = 257}));
  CHECK(rl::chosen_collection_path<ant_net>(nn::network_config{.lt_min_width = 257}) == rl::collection_path::batched);
  CHECK(rl::chosen_collection_path<edge_net>(nn::network_config{.lt_min_width = 128}) == rl::collection_path::batched);
  CHECK(rl::chosen_collection_path<edge_net>(nn::network_config{.lt_min_width = 129}) == rl::collection_path::threads);
  CHECK(rl::chosen_collection_path<cartpole_net>(nn::network_config{.lt_min_width = 32}) == rl::collection_path::batched);
}

TEST_CASE("rl.wide_rule.narrow_networks_with_many_inputs_collect_batched") {
  rl::request_collection_path("");
  static_assert(!rl::is_wide<narrow60_net>() && !rl::is_wide<narrow23_net>());
  static_assert(rl::collects_batched_by_default<narrow60_net>() && !rl::collects_batched_by_default<narrow23_net>());
  CHECK(rl::chosen_collection_path<narrow60_net>() == rl::collection_path::batched);
  CHECK(rl::chosen_collection_path<narrow23_net>() == rl::collection_path::threads);
  // the threshold is batched_collection_min_inputs, between the two
  CHECK(rl::batched_collection_min_inputs > 23);
  CHECK(rl::batched_collection_min_inputs <= 60);
  rl::request_collection_path("threads");
  CHECK(rl::chosen_collection_path<narrow60_net>() == rl::collection_path::threads);
  rl::request_collection_path("");
}

TEST_CASE("rl.wide_rule.request_overrides") {
  rl::request_collection_path("threads");
  CHECK(rl::chosen_collection_path<shadow_hand_net>() == rl::collection_path::threads);
  rl::request_collection_path("batched");
  CHECK(rl::chosen_collection_path<cartpole_net>() == rl::collection_path::batched);
  rl::request_collection_path("warps");
  try {
    (void)rl::chosen_collection_path<cartpole_net>();
    FAIL("a bad collection path was accepted");
  } catch (const gmi::config_error& e) {
    const std::string m = e.what();
    CHECK(m.find("--collection") != std::string::npos);
    CHECK(m.find("warps") != std::string::npos);
    CHECK(m.find("threads, batched") != std::string::npos);
  }
  rl::request_collection_path("");
}

TEST_CASE("rl.wide_rule.ppo_config_validates_network") {
  rl::ppo_config c;
  c.network.lt_min_width = 0;
  CHECK_THROWS_AS(c.validate(), gmi::config_error);
  c.network.lt_min_width = 129;
  CHECK_NOTHROW(c.validate());
}

// The layer-kernel rule against the cases bench/wide/device_wholenet.sh measured (docs/networks.md): each case
// gets the kernels that were faster there, fp32 and a network wholenet can not hold get cublaslt, and an explicit
// choice is kept.
TEST_CASE("rl.wide_rule.layer_kernels_follow_measurements") {
  using K = nn::layer_kernels;
  using P = nn::precision;
  constexpr auto serving = rl::kernels_use::serving, training = rl::kernels_use::training;
  constexpr int shadow = shadow_hand_net::net::max_width, ant = ant_net::net::max_width, humanoid = 400;
  static_assert(shadow == 512 && ant == 256);
  // Serving: wholenet in every measured case but ShadowHand-size at tf32 over 16384 rows.
  for (const P p : {P::tf32, P::bf16})
    for (const int w : {shadow, humanoid, ant}) {
      CAPTURE(w);
      CHECK(rl::default_layer_kernels(serving, p, w, 4096, true) == K::wholenet);
      CHECK(rl::default_layer_kernels(serving, p, w, 16384, true) ==
            (w == shadow && p == P::tf32 ? K::cublaslt : K::wholenet));
    }
  CHECK(rl::default_layer_kernels(serving, P::tf32, shadow, rl::kernels_large_tf32_rows - 1, true) == K::wholenet);
  CHECK(rl::default_layer_kernels(serving, P::tf32, shadow, rl::kernels_large_tf32_rows, true) == K::cublaslt);
  // Training at 4096 envs: tf32 cublaslt only for ShadowHand-size; bf16 wholenet only for it.
  CHECK(rl::default_layer_kernels(training, P::tf32, shadow, 4096, true) == K::cublaslt);
  CHECK(rl::default_layer_kernels(training, P::tf32, humanoid, 4096, true) == K::wholenet);
  CHECK(rl::default_layer_kernels(training, P::tf32, ant, 4096, true) == K::wholenet);
  CHECK(rl::default_layer_kernels(training, P::bf16, shadow, 4096, true) == K::wholenet);
  CHECK(rl::default_layer_kernels(training, P::bf16, humanoid, 4096, true) == K::cublaslt);
  // fp32 has only cublaslt; a network the kernel can not hold neither.
  for (const auto use : {serving, training}) {
    CHECK(rl::default_layer_kernels(use, P::fp32, ant, 4096, true) == K::cublaslt);
    CHECK(rl::default_layer_kernels(use, P::bf16, ant, 4096, false) == K::cublaslt);
  }
  // "auto" is settled, an explicit choice kept even where the rule would pick the other.
  static_assert(nn::network_config{}.kernels == K::automatic);
  CHECK(rl::resolve_layer_kernels({.precision = P::tf32}, serving, ant, 4096, true).kernels == K::wholenet);
  CHECK(rl::resolve_layer_kernels({.precision = P::tf32}, serving, shadow, 16384, true).kernels == K::cublaslt);
  CHECK(rl::resolve_layer_kernels({.precision = P::tf32, .kernels = K::cublaslt}, serving, ant, 4096, true).kernels ==
        K::cublaslt);
  CHECK(rl::resolve_layer_kernels({.precision = P::tf32, .kernels = K::mma}, training, ant, 4096, true).kernels ==
        K::mma);
  CHECK(rl::resolve_layer_kernels({}, training, ant, 4096, true).kernels == K::cublaslt);  // fp32 by default
}
