// The "latest weights" board on the host placement: readers take the newest version and never see a torn copy
// while the writer publishes as fast as it can (threads and processes); a dead writer, a size mismatch.
#include <doctest/doctest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <gmi/comm/weights_channel.hpp>

#include "channel/channel_data.hpp"
#include "comm/fork_util.hpp"

using namespace std::chrono_literals;
namespace comm = gmi::comm;

namespace {
comm::weights_options board(const std::string& tag, std::size_t bytes, int readers) {
  comm::weights_options o;
  o.tag = tag;
  o.bytes = bytes;
  o.readers = readers;
  o.timeout = 10s;
  return o;
}
void fill(std::vector<std::uint64_t>& w, std::uint64_t version) {
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = version * 1000003 + i;
}
// Words that do not belong to `version` (a torn or mislabelled read).
std::size_t wrong(const std::vector<std::uint64_t>& w, std::uint64_t version) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < w.size(); ++i) n += w[i] != version * 1000003 + i;
  return n;
}
}  // namespace

TEST_SUITE("cpu") {
TEST_CASE("weights.threads.newest_version_never_torn_writer_never_blocks" * doctest::timeout(60)) {
  constexpr std::size_t words = 1 << 15;  // 256 KiB: a copy long enough for the writer to overtake readers
  const auto tag = comm::unique_tag("wts");
  comm::weights_writer writer(board(tag, words * 8, 3));
  std::atomic<bool> done{false};
  std::vector<std::size_t> bad(3, 0), reads(3, 0), regressions(3, 0);
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&, r] {
      comm::weights_reader reader(board(tag, words * 8, 3));
      std::vector<std::uint64_t> w(words);
      std::uint64_t have = 0;
      while (!done.load()) {
        if (auto v = reader.read_latest(w.data(), have)) {
          bad[r] += wrong(w, *v);
          regressions[r] += *v <= have;
          have = *v;
          ++reads[r];
        }
      }
    });
  }
  std::vector<std::uint64_t> w(words);
  std::uint64_t last = 0;
  const auto start = std::chrono::steady_clock::now();
  std::chrono::nanoseconds slowest{0};
  for (std::uint64_t v = 1; v <= 3000; ++v) {
    fill(w, v);
    const auto t0 = std::chrono::steady_clock::now();
    last = writer.publish(w.data());
    slowest = std::max<std::chrono::nanoseconds>(slowest, std::chrono::steady_clock::now() - t0);
    CHECK(last == v);
  }
  std::this_thread::sleep_for(50ms);
  done = true;
  for (auto& t : readers) t.join();
  MESSAGE("3000 publishes in " << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()
                               << " s; slowest publish " << slowest.count() / 1000 << " us");
  for (int r = 0; r < 3; ++r) {
    CHECK(bad[r] == 0);
    CHECK(regressions[r] == 0);
    CHECK(reads[r] > 0);
  }
  CHECK(writer.latest_version() == 3000);
  CHECK(gmi_test::segments_with(tag) == 0);  // every reader attached: the name is gone
}

TEST_CASE("weights.processes.readers_catch_up_to_the_last_version" * doctest::timeout(60)) {
  constexpr std::size_t words = 4096;
  const auto tag = comm::unique_tag("wtp");
  comm::weights_writer writer(board(tag, words * 8, 2));
  std::vector<pid_t> kids;
  for (int r = 0; r < 2; ++r) {
    kids.push_back(gmi_test::fork_child([&] {
      comm::weights_reader reader(board(tag, words * 8, 2));
      std::vector<std::uint64_t> w(words);
      std::uint64_t have = 0;
      std::size_t bad = 0;
      while (have < 500) {
        have = reader.wait_newer(w.data(), have);
        bad += wrong(w, have);
      }
      return bad == 0 && have == 500 ? 0 : 2;
    }));
  }
  std::vector<std::uint64_t> w(words);
  for (std::uint64_t v = 1; v <= 500; ++v) {
    fill(w, v);
    writer.publish(w.data());
    if (v % 50 == 0) std::this_thread::sleep_for(1ms);
  }
  for (pid_t k : kids) CHECK(gmi_test::reap(k, 30s) == 0);
  writer.publish(w.data());  // both readers have attached by now: this publish unlinks the name
  CHECK(gmi_test::segments_with(tag) == 0);
}

TEST_CASE("weights.faults.writer_killed_and_size_mismatch" * doctest::timeout(60)) {
  const auto tag = comm::unique_tag("wtk");
  const pid_t writer = gmi_test::fork_child([&] {
    comm::weights_writer wr(board(tag, 64, 1));
    std::uint64_t w[8] = {};
    for (std::uint64_t v = 1;; ++v) {
      w[0] = v;
      wr.publish(w);
      std::this_thread::sleep_for(1ms);
    }
    return 0;
  });
  comm::weights_reader reader(board(tag, 64, 1));
  CHECK_THROWS_WITH_AS(comm::weights_reader(board(tag, 128, 1)), doctest::Contains("weights bytes: got 128"),
                       gmi::comm_error);
  ::kill(writer, SIGKILL);
  CHECK(gmi_test::reap(writer) == -SIGKILL);
  std::uint64_t w[8] = {};
  const auto start = std::chrono::steady_clock::now();
  // The size mismatch already broke the board; either way the reader hears within its bound.
  CHECK_THROWS_AS(reader.wait_newer(w, ~std::uint64_t{0} >> 8), gmi::comm_error);
  CHECK(std::chrono::steady_clock::now() - start < 3s);
  CHECK(gmi_test::segments_with(tag) == 0);
}

TEST_CASE("weights.faults.dead_writer_is_an_error_for_readers" * doctest::timeout(60)) {
  const auto tag = comm::unique_tag("wtd");
  const pid_t writer = gmi_test::fork_child([&] {
    comm::weights_writer wr(board(tag, 64, 1));
    std::uint64_t w[8] = {1};
    wr.publish(w);
    ::pause();
    return 0;
  });
  comm::weights_reader reader(board(tag, 64, 1));
  std::uint64_t w[8] = {};
  CHECK(reader.wait_newer(w, 0) == 1);
  CHECK(w[0] == 1);
  ::kill(writer, SIGKILL);
  CHECK(gmi_test::reap(writer) == -SIGKILL);
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(reader.wait_newer(w, 1), doctest::Contains("died"), gmi::comm_error);
  CHECK(std::chrono::steady_clock::now() - start < 3s);
  CHECK(gmi_test::segments_with(tag) == 0);
}
}
