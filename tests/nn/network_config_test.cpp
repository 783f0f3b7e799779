// network_config: parsing and validation of the precision, the cuBLASLt width threshold and the layer kernels (host only).
#include <doctest/doctest.h>

#include <string>

#include <gmi/nn/network_config.hpp>

using namespace gmi::nn;

TEST_CASE("nn.network_config.defaults_are_valid_fp32") {
  const network_config c;
  CHECK(c.precision == precision::fp32);
  CHECK_NOTHROW(validate(c));
}

TEST_CASE("nn.network_config.parse_precision") {
  CHECK(parse_precision("fp32") == precision::fp32);
  CHECK(parse_precision("tf32") == precision::tf32);
  CHECK(parse_precision("bf16") == precision::bf16);
  for (const precision p : {precision::fp32, precision::tf32, precision::bf16})
    CHECK(parse_precision(precision_name(p)) == p);
  try {
    parse_precision("fp16", "--precision");
    FAIL("fp16 was accepted");
  } catch (const gmi::config_error& e) {
    const std::string m = e.what();
    CHECK(m.find("--precision") != std::string::npos);
    CHECK(m.find("fp16") != std::string::npos);
    CHECK(m.find("fp32, tf32 or bf16") != std::string::npos);
  }
  CHECK_THROWS_AS(parse_precision("FP32"), gmi::config_error);
  CHECK_THROWS_AS(parse_precision(""), gmi::config_error);
}

TEST_CASE("nn.network_config.validate_refuses_bad_fields") {
  CHECK_THROWS_AS(validate(network_config{.lt_min_width = 0}), gmi::config_error);
  CHECK_THROWS_AS(validate(network_config{.lt_min_width = -5}), gmi::config_error);
  CHECK_THROWS_AS(validate(network_config{.lt_workspace_mib = -1}), gmi::config_error);
  CHECK_THROWS_AS(validate(network_config{.lt_workspace_mib = 4096}), gmi::config_error);
  CHECK_THROWS_AS(validate(network_config{.precision = static_cast<precision>(7)}), gmi::config_error);
  try {
    validate(network_config{.lt_min_width = 0});
    FAIL("lt_min_width 0 was accepted");
  } catch (const gmi::config_error& e) {
    CHECK(std::string(e.what()).find("lt_min_width: got 0, need >= 1") != std::string::npos);
  }
  CHECK_NOTHROW(validate(network_config{.precision = precision::bf16, .lt_min_width = 1, .lt_workspace_mib = 0}));
}

TEST_CASE("nn.network_config.uses_lt_by_width") {
  const network_config c{.lt_min_width = 129};
  CHECK_FALSE(uses_lt(c, 32, true));   // Cartpole's 32-32
  CHECK_FALSE(uses_lt(c, 128, true));
  CHECK(uses_lt(c, 129, true));
  CHECK(uses_lt(c, 32, false));        // the small kernels cannot hold it at all
  CHECK(uses_lt(network_config{.lt_min_width = 1}, 4, true));
}

TEST_CASE("nn.network_config.layer_kernels") {
  CHECK(network_config{}.kernels == layer_kernels::automatic);  // left to rl/wide_rule.hpp's rule
  CHECK(parse_layer_kernels("auto") == layer_kernels::automatic);
  CHECK(parse_layer_kernels("cublaslt") == layer_kernels::cublaslt);
  CHECK(parse_layer_kernels("mma") == layer_kernels::mma);
  CHECK(parse_layer_kernels("wholenet") == layer_kernels::wholenet);
  for (const layer_kernels k : {layer_kernels::cublaslt, layer_kernels::mma, layer_kernels::wholenet,
                              layer_kernels::automatic})
    CHECK(parse_layer_kernels(layer_kernels_name(k)) == k);
  try {
    parse_layer_kernels("wgmma", "--kernels");
    FAIL("wgmma was accepted");
  } catch (const gmi::config_error& e) {
    const std::string m = e.what();
    CHECK(m.find("--kernels") != std::string::npos);
    CHECK(m.find("wgmma") != std::string::npos);
    CHECK(m.find("cublaslt, mma, wholenet or auto") != std::string::npos);
  }
  CHECK_THROWS_AS(validate(network_config{.kernels = static_cast<layer_kernels>(4)}), gmi::config_error);
  CHECK_NOTHROW(validate(network_config{.precision = precision::bf16, .kernels = layer_kernels::wholenet}));
  CHECK_NOTHROW(validate(network_config{.precision = precision::tf32, .kernels = layer_kernels::mma}));
}
