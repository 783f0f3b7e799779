// can_implement of every backend on a machine without a GPU (CI): bad counts, percentages, a missing MPS binary,
// no device, no NVML, more GMIs than cores. Each answers a status with the value and the limit, never throws.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include <gmi/cuda/device.hpp>
#include <gmi/partition/partition.hpp>

namespace gp = gmi::partition;

TEST_SUITE("cpu") {
  TEST_CASE("partition.none.can_implement") {
    CHECK(gp::none::can_implement(1));
    CHECK(gp::none::can_implement(0).message() == "gmis_per_gpu: got 0, need >= 1");
  }

  TEST_CASE("partition.mps.bad_counts_and_percentages") {
    gp::mps::config c;
    c.gmis_per_gpu = 49;
    auto st = gp::mps::can_implement(c);
    CHECK(st.value() == gmi::status::code::invalid);
    CHECK(st.message() == "gmis_per_gpu: got 49, need 1..48 (MPS client contexts per GPU)");
    c.gmis_per_gpu = 4;
    c.active_thread_percentage = 0;
    CHECK(gp::mps::can_implement(c).message() == "active_thread_percentage: got 0, need 1..100");
    c.active_thread_percentage = 101;
    CHECK(gp::mps::can_implement(c).message() == "active_thread_percentage: got 101, need 1..100");
    c.active_thread_percentage = 25;
    c.pinned_mem_limit = "lots";
    CHECK(gp::mps::can_implement(c).message() == "pinned_mem_limit: got \"lots\", need a size like 512M or 8G");
    CHECK(gp::mps::can_implement(0).value() == gmi::status::code::invalid);
    c.pinned_mem_limit.clear();
    c.active_thread_percentage.reset();
    CHECK(c.percentage() == 25);  // 100 / 4
    c.gmis_per_gpu = 8;
    CHECK(c.percentage() == 13);  // 100 / 8 rounded up
    c.gmis_per_gpu = 3;
    CHECK(c.percentage() == 34);
  }

  TEST_CASE("partition.mps.first_slice_percentage") {  // layout split's trainer: its own share
    gp::mps::config c;
    c.gmis_per_gpu = 8;
    CHECK(c.percentage_of(0) == 13);  // unset: as every GMI
    c.first_slice_percentage = 0;
    CHECK(gp::mps::can_implement(c).message() == "first_slice_percentage: got 0, need 1..100");
    c.first_slice_percentage = 100;
    CHECK(c.percentage_of(0) == 100);
    CHECK(c.percentage_of(1) == 13);
    CHECK(c.percentage_of(7) == 13);
    c.active_thread_percentage = 20;
    CHECK(c.percentage_of(0) == 100);
    CHECK(c.percentage_of(3) == 20);
  }

  TEST_CASE("partition.mps.missing_binary") {
    gp::mps::config c;
    c.control_program = "/nonexistent/nvidia-cuda-mps-control";
    const auto st = gp::mps::can_implement(c);
    CHECK(st.value() == gmi::status::code::unavailable);
    CHECK(st.message().starts_with("MPS control binary: got \"/nonexistent/nvidia-cuda-mps-control\", need it on PATH"));
    CHECK_THROWS_AS(gp::mps::session{c}, gmi::error);
  }

  TEST_CASE("partition.mps.gpu_ids_are_checked") {
    // A stand-in control binary, so the check reaches the GPUs on any machine.
    const std::string fake = "/tmp/gmi-test-fake-mps-control-" + std::to_string(getpid());
    std::ofstream(fake) << "#!/bin/sh\nexit 0\n";
    chmod(fake.c_str(), 0755);
    gp::mps::config c;
    c.control_program = fake;
    c.gpus = {99};
    const auto st = gp::mps::can_implement(c);
    unlink(fake.c_str());
    CHECK_FALSE(st.is_ok());
    if (gmi::cuda::device_count()) {
      CHECK(st.message().starts_with("gpu: got 99, need 0.."));
    } else {
      CHECK(st.value() == gmi::status::code::unavailable);  // no driver / no device: says so
      MESSAGE(st.message());
    }
  }

  TEST_CASE("partition.mps.expected_sms") {
    // Measured on H200: 25% of 132 SMs shows 32.
    const auto [lo25, hi25] = gp::mps::expected_sms(132, 25);
    CHECK(lo25 <= 32);
    CHECK(hi25 >= 32);
    const auto [lo100, hi100] = gp::mps::expected_sms(132, 100);
    CHECK(hi100 == 132);
    CHECK(lo100 <= 132);
  }

  TEST_CASE("partition.green_context.without_device") {
    const auto st = gp::green_context::can_implement(4);
    if (gmi::cuda::device_count()) {
      CHECK(st.is_ok());
    } else {
      CHECK(st.value() == gmi::status::code::unavailable);
      MESSAGE(st.message());
    }
    CHECK(gp::green_context::can_implement(0).message() == "gmis_per_gpu: got 0, need >= 1");
  }

  TEST_CASE("partition.mig.without_nvml_or_disabled") {
    const auto st = gp::mig::can_implement(7);
    CHECK_FALSE(st.is_ok());  // no machine of ours has MIG instances
    MESSAGE(st.message());
    CHECK(gp::mig::can_implement(8).message() == "gmis_per_gpu: got 8, need 1..7 (MIG instances per GPU)");
    if (!gmi::cuda::nvml::library::instance().available()) {
      CHECK(st.value() == gmi::status::code::unavailable);
      CHECK(st.message().starts_with("no NVIDIA driver"));
    }
  }

  TEST_CASE("partition.mig.plan") {
    CHECK(gp::mig::plan("NVIDIA H100 80GB HBM3", 0, 7) ==
          "7 x 1g.10gb (about 16 SMs each): nvidia-smi -i 0 -mig 1 && nvidia-smi mig -i 0 -cgi "
          "1g.10gb,1g.10gb,1g.10gb,1g.10gb,1g.10gb,1g.10gb,1g.10gb -C");
    CHECK(gp::mig::plan("NVIDIA H200", 1, 2).starts_with("2 x 3g.71gb"));
    CHECK(gp::mig::plan("NVIDIA H100 80GB HBM3", 0, 1).starts_with("1 x 7g.80gb"));
    CHECK(gp::mig::plan("NVIDIA H100 80GB HBM3", 0, 4).starts_with("4 x 1g.20gb"));
    CHECK(gp::mig::plan("NVIDIA H100 80GB HBM3", 0, 8).empty());
  }

  TEST_CASE("partition.cpu_cores.more_gmis_than_cores") {
    const int cores = static_cast<int>(gp::cpu_cores::available_cores().size());
    CHECK(gp::cpu_cores::can_implement(cores));
    const auto st = gp::cpu_cores::can_implement(cores + 1);
    CHECK(st.value() == gmi::status::code::invalid);
    CHECK(st.message().starts_with("gmis: got " + std::to_string(cores + 1) + ", need 1.." + std::to_string(cores)));
    CHECK(gp::cpu_cores::can_implement(gp::cpu_cores::config{3, {0, 1}}).message().starts_with("gmis: got 3, need 1..2"));
  }
}
