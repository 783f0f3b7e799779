// comm::row_exchange_across_gpus: what it refuses before any segment or device call (the sums themselves run on
// GPUs: tests/comm_multigpu, row_exchange_across_gpus).
#include <doctest/doctest.h>

#include <cstdlib>

#include <gmi/comm/row_exchange_across_gpus.hpp>
#include <gmi/comm/shm_segment.hpp>

namespace comm = gmi::comm;

namespace {
comm::row_exchange_across_gpus_options two_gpus() {
  comm::row_exchange_across_gpus_options o;
  o.tag = comm::unique_tag("across");
  o.gpus = 2;
  o.world = 4;
  o.count = 100;
  return o;
}
}  // namespace

TEST_SUITE("cpu") {
TEST_CASE("comm.row_exchange_across_gpus.refuses_bad_shapes") {
  auto o = two_gpus();
  o.gpus = 1;
  CHECK_THROWS_WITH_AS(comm::row_exchange_across_gpus{o}, "row exchange across GPUs: gpus: got 1, need 2..16",
                       gmi::config_error);
  o = two_gpus();
  o.gpus = 17;
  CHECK_THROWS_AS(comm::row_exchange_across_gpus{o}, gmi::config_error);
  o = two_gpus();
  o.world = 5;
  CHECK_THROWS_WITH_AS(comm::row_exchange_across_gpus{o},
                       "row exchange across GPUs: GMIs: got 5, need a multiple of 2 GPUs, at most 64",
                       gmi::config_error);
  o = two_gpus();
  o.rank = 4;
  CHECK_THROWS_WITH_AS(comm::row_exchange_across_gpus{o}, "row exchange across GPUs: rank: got 4, need 0..3",
                       gmi::config_error);
  o = two_gpus();
  o.rank = 2;  // GMIs 2 and 3 are GPU 1's
  CHECK_THROWS_WITH_AS(comm::row_exchange_across_gpus{o},
                       "row exchange across GPUs: GPU of rank 2: got 0, need 1 (GMIs numbered GPU by GPU)",
                       gmi::config_error);
  o = two_gpus();
  o.count = 0;
  CHECK_THROWS_WITH_AS(comm::row_exchange_across_gpus{o}, "row exchange across GPUs: floats in a row: got 0, need >= 1",
                       gmi::config_error);
}

TEST_CASE("comm.row_exchange_across_gpus.inbox_memory_names") {
  // The words --inbox-memory takes: each names its value both ways, anything else is one line listing them.
  for (const auto& [name, value] : comm::inbox_memory_names) {
    CHECK(gmi::parse_choice("--inbox-memory", name, comm::inbox_memory_names) == value);
    CHECK(std::string(gmi::choice_name(value, comm::inbox_memory_names)) == name);
  }
  CHECK_THROWS_WITH_AS((void)gmi::parse_choice("--inbox-memory", "nvlink", comm::inbox_memory_names),
                       "--inbox-memory: got \"nvlink\", need automatic, peer_to_peer or host", gmi::config_error);
}

TEST_CASE("comm.row_exchange_across_gpus.layout") {
  // An inbox: 256-byte aligned slots of 8-byte tagged entries; the mapped part (stall word's page, host inbox) is
  // whole pages and starts on a page boundary past the control block.
  CHECK(comm::detail::across_stride(1) == 32);
  CHECK(comm::detail::across_stride(32) == 32);
  CHECK(comm::detail::across_stride(33) == 64);
  CHECK(comm::detail::across_inbox_bytes(8, 2500) == 2 * 8 * 2528 * sizeof(std::uint64_t));
  const std::size_t b = comm::detail::across_mapped_bytes(8, 2500);
  CHECK(b % comm::detail::across_page == 0);
  CHECK(b >= comm::detail::across_page + comm::detail::across_inbox_bytes(8, 2500));
  alignas(4096) static char block[3 * 4096];
  CHECK(reinterpret_cast<std::uintptr_t>(comm::detail::across_mapped_in(block)) % comm::detail::across_page == 0);
  CHECK(static_cast<char*>(comm::detail::across_mapped_in(block)) >= block + sizeof(comm::detail::across_control));
}

TEST_CASE("comm.row_exchange_across_gpus.probe_area") {
  // The probe words (one a GPU) sit after every slot of an inbox, inside its 2 MiB allocation, so a probe never
  // touches an entry a host fallback's relay reads; each GPU's word is non-zero (a fresh inbox is zeroed) and its own.
  for (int gpus : {2, 4, 8, 16}) {
    for (std::size_t count : {std::size_t{1}, std::size_t{2500}, std::size_t{65536}, std::size_t{1} << 20}) {
      CAPTURE(gpus);
      CAPTURE(count);
      const std::size_t at = comm::detail::across_probe_offset(gpus, count);
      CHECK(at >= comm::detail::across_inbox_bytes(gpus, count));
      CHECK(at % 256 == 0);
      const std::size_t alloc = comm::detail::across_allocation_bytes(gpus, count);
      CHECK(alloc % (std::size_t{2} << 20) == 0);
      CHECK(alloc >= at + static_cast<std::size_t>(gpus) * sizeof(std::uint64_t));
    }
    for (int j = 0; j < gpus; ++j) {
      CHECK(comm::detail::across_probe_word(j) != 0);
      for (int k = 0; k < j; ++k) CHECK(comm::detail::across_probe_word(j) != comm::detail::across_probe_word(k));
    }
  }
}
}
