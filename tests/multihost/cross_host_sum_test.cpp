// How the GPUs' leaders sum across hosts (pipeline/cross_host_sum.hpp, --cross-host-sum): the word each flag value
// parses to, and the sum each choice gives for a shape of hosts x GPUs a host, with no NCCL or GPU.
#include <doctest/doctest.h>

#include <string>

#include <gmi/core/choice.hpp>
#include <gmi/pipeline/cross_host_sum.hpp>

namespace {
using gmi::cross_sum_choice;

cross_sum_choice flag(const char* word) {
  return gmi::parse_choice("--cross-host-sum", word, gmi::cross_sum_choice_names);
}
}  // namespace

TEST_CASE("multihost.cross_host_sum.flag_words") {
  CHECK(flag("auto") == cross_sum_choice::automatic);
  CHECK(flag("allreduce") == cross_sum_choice::allreduce);
  CHECK(flag("allgather") == cross_sum_choice::allgather);
  CHECK(flag("two_level") == cross_sum_choice::two_level);
  CHECK(flag("direct") == cross_sum_choice::direct);
  CHECK(std::string(gmi::choice_name(cross_sum_choice::direct, gmi::cross_sum_choice_names)) == "direct");
  CHECK_THROWS_WITH_AS((void)flag("ring"),
                       "--cross-host-sum: got \"ring\", need auto, allreduce, allgather, two_level or direct",
                       gmi::config_error);
}

TEST_CASE("multihost.cross_host_sum.choice_by_shape") {
  using gmi::cross_host_sum_used;
  SUBCASE("auto: two levels with several GPUs a host, the allgather with 2 leaders, else the allreduce") {
    CHECK(cross_host_sum_used(cross_sum_choice::automatic, 2, 2) == "two_level");
    CHECK(cross_host_sum_used(cross_sum_choice::automatic, 2, 1) == "allgather");
    CHECK(cross_host_sum_used(cross_sum_choice::automatic, 4, 1) == "allreduce");
    CHECK(cross_host_sum_used(cross_sum_choice::automatic, 65, 2) == "allreduce");  // more hosts than a level adds
  }
  SUBCASE("direct: whenever asked, up to max_gathered_ranks leaders, never by auto") {
    CHECK(cross_host_sum_used(cross_sum_choice::direct, 2, 1) == "direct");
    CHECK(cross_host_sum_used(cross_sum_choice::direct, 2, 2) == "direct");
    CHECK(cross_host_sum_used(cross_sum_choice::direct, 8, 8) == "direct");  // 64 leaders: the most
    CHECK(cross_host_sum_used(cross_sum_choice::direct, 9, 8) == "allreduce");
    CHECK(cross_host_sum_used(cross_sum_choice::direct, 65, 1) == "allreduce");
  }
  SUBCASE("the others as asked, within what a gathered sum adds") {
    CHECK(cross_host_sum_used(cross_sum_choice::allreduce, 2, 2) == "allreduce");
    CHECK(cross_host_sum_used(cross_sum_choice::allgather, 2, 2) == "allgather");
    CHECK(cross_host_sum_used(cross_sum_choice::allgather, 9, 8) == "allreduce");
    CHECK(cross_host_sum_used(cross_sum_choice::two_level, 2, 1) == "two_level");
    CHECK(cross_host_sum_used(cross_sum_choice::two_level, 9, 8) == "two_level");  // each level at most 64 ranks
  }
}
