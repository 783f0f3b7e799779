#include <doctest/doctest.h>

#include <gmi/core/error.hpp>
#include <gmi/cuda/check.hpp>

#include <string>

TEST_SUITE("cpu") {
  TEST_CASE("core.error.got_need_message") {
    CHECK(gmi::got_need("num_envs", 0, ">= 1") == "num_envs: got 0, need >= 1");
    CHECK(gmi::got_need("task", "cartpol", "one of cartpole, pendulum") ==
          "task: got \"cartpol\", need one of cartpole, pendulum");
    CHECK(gmi::got_need("flag", true, "false") == "flag: got true, need false");
  }

  TEST_CASE("core.error.require_throws_config_error_with_location") {
    const int line = __LINE__ + 2;
    try {
      gmi::require(false, "gmis_per_gpu", 49, "1..48");
      FAIL("require(false) did not throw");
    } catch (const gmi::config_error& e) {
      CHECK(std::string(e.what()) == "gmis_per_gpu: got 49, need 1..48");
      CHECK(e.where().line() == static_cast<unsigned>(line));
      CHECK(std::string(e.where().file_name()).find("error_test.cpp") != std::string::npos);
      CHECK(e.describe().find("error_test.cpp") != std::string::npos);
    }
    CHECK_NOTHROW(gmi::require(true, "x", 1, "anything"));
  }

  TEST_CASE("core.error.family_is_catchable_as_gmi_error") {
    CHECK_THROWS_AS(throw gmi::cuda_error(2, "oom"), gmi::error);
    CHECK_THROWS_AS(throw gmi::nccl_error(3, "nccl"), gmi::error);
    CHECK_THROWS_AS(throw gmi::comm_error("peer died"), gmi::error);
    CHECK(gmi::cuda_error(2, "oom").code() == 2);
  }

  TEST_CASE("core.error.cuda_try_names_expression_and_error") {
    try {
      GMI_CUDA_TRY(cudaErrorMemoryAllocation);
      FAIL("GMI_CUDA_TRY did not throw");
    } catch (const gmi::cuda_error& e) {
      const std::string what = e.what();
      CHECK(what.find("cudaErrorMemoryAllocation") != std::string::npos);
      CHECK(e.code() == static_cast<int>(cudaErrorMemoryAllocation));
    }
    CHECK_NOTHROW(GMI_CUDA_TRY(cudaSuccess));
    CHECK_THROWS_AS(GMI_CUDA_TRY(CUDA_ERROR_INVALID_VALUE), gmi::cuda_error);
  }
}
