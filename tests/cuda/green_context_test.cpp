// Green-context requests checked without a GPU: can_split never throws and says why not; the split rules
// (minimum slice, multiples, total) produce messages that name the value and the limit.
#include <doctest/doctest.h>

#include <string>

#include <gmi/cuda/device.hpp>
#include <gmi/cuda/green_context.hpp>

namespace {
// An H100/H200-like SM resource: 132 SMs, slices of >= 8 in multiples of 8.
gmi::cuda::detail::device_sm hopper_like() {
  gmi::cuda::detail::device_sm d;
  d.info.device = 0;
  d.info.sm_count = 132;
  d.info.min_partition_size = 8;
  d.info.coscheduled_alignment = 2;
  d.info.granularity = gmi::cuda::detail::slice_granularity(9, 2);
  d.info.cc_major = 9;
  d.info.cc_minor = 0;
  return d;
}
}  // namespace

TEST_SUITE("cpu") {
  TEST_CASE("cuda.green.can_split_without_device_is_unavailable") {
    const auto n = gmi::cuda::device_count();
    if (n) {
      MESSAGE("a CUDA device is visible: this case checks machines without one");
      return;
    }
    gmi::status st;
    CHECK_NOTHROW(st = gmi::cuda::can_split(0, 2, 8));
    CHECK_FALSE(st.is_ok());
    CHECK(st.value() == n.error().value());
    CHECK(st.message() == n.error().message());
    CHECK_THROWS_AS((void)gmi::cuda::query_sm_resource(0), gmi::cuda_error);
    CHECK_THROWS_AS((void)gmi::cuda::split_sm(0, 2, 8), gmi::cuda_error);
  }

  TEST_CASE("cuda.green.slice_granularity_follows_cuda_h") {
    CHECK(gmi::cuda::detail::slice_granularity(9, 2) == 8);
    CHECK(gmi::cuda::detail::slice_granularity(10, 8) == 8);
    CHECK(gmi::cuda::detail::slice_granularity(8, 2) == 2);
    CHECK(gmi::cuda::detail::slice_granularity(9, 16) == 16);
  }

  TEST_CASE("cuda.green.split_rules_name_value_and_limit") {
    const auto d = hopper_like();
    using gmi::cuda::detail::check_split;
    CHECK(check_split(d, 4, 32, 0, false).is_ok());
    CHECK(check_split(d, 16, 8, 0, false).is_ok());

    const auto zero = check_split(d, 0, 8, 0, false);
    CHECK(zero.value() == gmi::status::code::invalid);
    CHECK(zero.message() == "groups: got 0, need >= 1");

    const auto too_many = check_split(d, 20, 8, 0, false);
    CHECK(too_many.value() == gmi::status::code::invalid);
    CHECK(too_many.message() ==
          "groups x min_sms: got 20 x 8 = 160 SMs, need <= 132 SMs of device 0; minimum slice 8 SMs in multiples of 8");

    const auto unaligned = check_split(d, 2, 12, 0, false);
    CHECK(unaligned.value() == gmi::status::code::invalid);
    CHECK(unaligned.message().starts_with("min_sms_per_group: got 12, need minimum slice 8 SMs in multiples of 8"));

    const auto small = check_split(d, 2, 4, 0, false);
    CHECK(small.value() == gmi::status::code::invalid);

    // Without co-scheduling the driver rounds finer slices itself: only the total is checked here.
    CHECK(check_split(d, 2, 12, CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING, false).is_ok());
  }

  TEST_CASE("cuda.green.bad_requests_on_a_device") {
    if (!gmi::cuda::device_count()) return;  // covered above without a device
    const auto r = gmi::cuda::query_sm_resource(0);
    const auto zero = gmi::cuda::can_split(0, 0, r.granularity);
    CHECK(zero.value() == gmi::status::code::invalid);
    const auto too_many = gmi::cuda::can_split(0, r.sm_count / r.granularity + 1, r.granularity);
    CHECK(too_many.value() == gmi::status::code::invalid);
    CHECK_THROWS_AS((void)gmi::cuda::split_sm(0, 0, r.granularity), gmi::config_error);
    CHECK(gmi::cuda::can_split(99, 2, 8).value() == gmi::status::code::invalid);
  }
}
