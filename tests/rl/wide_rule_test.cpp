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

static_assert(rl::is_wide<shadow_hand_net>() && rl::is_wide<ant_net>());
static_assert(!rl::is_wide<cartpole_net>() && !rl::is_wide<edge_net>());
static_assert(rl::is_wide<edge_net>(nn::network_config{.lt_min_width = 128}));
}  // namespace

TEST_CASE("rl.wide_rule.default_follows_width") {
  rl::request_collection_path("");
  CHECK(rl::chosen_collection_path<shadow_hand_net>() == rl::collection_path::batched);
  CHECK(rl::chosen_collection_path<ant_net>() == rl::collection_path::batched);
  CHECK(rl::chosen_collection_path<cartpole_net>() == rl::collection_path::threads);
  // The threshold is network_config::lt_min_width: raised above 256, Ant is no longer wide.
  CHECK(rl::chosen_collection_path<ant_net>(nn::network_config{.lt_min_width = 257}) == rl::collection_path::threads);
  CHECK(rl::chosen_collection_path<cartpole_net>(nn::network_config{.lt_min_width = 32}) == rl::collection_path::batched);
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
