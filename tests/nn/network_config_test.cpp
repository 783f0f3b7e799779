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

TEST_CASE("nn.network_config.backward_kernels") {
  CHECK(network_config{}.backward == backward_kernels::automatic);  // auto: cublaslt until measured faster
  for (const backward_kernels k : {backward_kernels::cublaslt, backward_kernels::wholenet, backward_kernels::automatic})
    CHECK(parse_backward_kernels(backward_kernels_name(k)) == k);
  CHECK(parse_backward_kernels("wholenet") == backward_kernels::wholenet);
  try {
    parse_backward_kernels("mma", "--net-backward");
    FAIL("mma was accepted");
  } catch (const gmi::config_error& e) {
    const std::string m = e.what();
    CHECK(m.find("--net-backward") != std::string::npos);
    CHECK(m.find("mma") != std::string::npos);
    CHECK(m.find("cublaslt, wholenet or auto") != std::string::npos);
  }
  CHECK_THROWS_AS(validate(network_config{.backward = static_cast<backward_kernels>(3)}), gmi::config_error);
  CHECK_NOTHROW(validate(network_config{.precision = precision::bf16, .backward = backward_kernels::wholenet}));
}

TEST_CASE("nn.network_config.weight_grad_chunks") {
  constexpr int sms = 132;  // H100 / H200
  const network_config tf32{.precision = precision::tf32}, bf16{.precision = precision::bf16};
  CHECK(network_config{}.weight_grad_chunks == 0);  // auto
  // auto: one product at fp32 and tf32 (cuBLASLt's own split), chunks at bf16.
  CHECK(weight_grad_chunks(network_config{}, 108, 200, 8192, sms) == 1);
  CHECK(weight_grad_chunks(tf32, 108, 200, 8192, sms) == 1);
  CHECK(weight_grad_chunks(bf16, 108, 200, 8192, sms) == 16);  // 2 tiles: the cap
  CHECK(weight_grad_chunks(bf16, 64, 9, 8192, sms) == 16);
  // ShadowHand's 512 x 512: 16 tiles, doubled while under one wave (16 x 8 = 128 < 132).
  CHECK(weight_grad_chunks(bf16, 512, 512, 8192, sms) == 16);
  CHECK(weight_grad_chunks(bf16, 512, 512, 8192, 100) == 8);  // 16 x 8 = 128 >= 100 stops there
  CHECK(weight_grad_chunks(bf16, 2048, 2048, 8192, sms) == 1);  // 256 tiles fill the GPU alone
  // An explicit cap, also at tf32; chunks of at least 256 rows that divide the batch.
  network_config c{.precision = precision::tf32, .weight_grad_chunks = 4};
  CHECK(weight_grad_chunks(c, 108, 200, 8192, sms) == 4);
  c.weight_grad_chunks = 64;
  CHECK(weight_grad_chunks(c, 108, 200, 8192, sms) == 32);  // 8192 / 32 = 256 rows
  CHECK(weight_grad_chunks(c, 108, 200, 511, sms) == 1);
  CHECK(weight_grad_chunks(c, 108, 200, 512, sms) == 2);
  CHECK(weight_grad_chunks(c, 108, 200, 768, sms) == 2);   // 768 / 4 = 192 rows: too few
  CHECK(weight_grad_chunks(c, 108, 200, 6000, sms) == 16);  // 375 rows each
  CHECK(weight_grad_chunks(c, 108, 200, 6002, sms) == 2);   // 3001 odd
  c.weight_grad_chunks = 1;
  CHECK(weight_grad_chunks(c, 108, 200, 8192, sms) == 1);
  c.weight_grad_chunks = 3;  // a cap that is not a power of two: the power of two below it
  CHECK(weight_grad_chunks(c, 108, 200, 8192, sms) == 2);
  CHECK_THROWS_AS(validate(network_config{.weight_grad_chunks = -1}), gmi::config_error);
  try {
    validate(network_config{.weight_grad_chunks = 65});
    FAIL("weight_grad_chunks 65 was accepted");
  } catch (const gmi::config_error& e) {
    CHECK(std::string(e.what()).find("weight_grad_chunks: got 65, need 0 (auto) to 64") != std::string::npos);
  }
  CHECK_NOTHROW(validate(network_config{.weight_grad_chunks = 64}));
}
