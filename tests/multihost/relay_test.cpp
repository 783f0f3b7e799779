// runtime/host_relay.hpp in one process (the attempt and its launcher as two threads over a socket pair): a
// gather comes back as every host's bytes in host order, a launcher's failure as its one line, a launcher that
// gave no answer as a bounded wait, an attempt that closed its end as a stop for the launcher's gather.
#include <doctest/doctest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gmi/runtime/host_relay.hpp>

using namespace std::chrono_literals;

TEST_CASE("multihost.relay_gathers_through_the_launcher" * doctest::timeout(30)) {
  const gmi::runtime::relay_pair ends = gmi::runtime::relay_pair::make();
  int barriers = 0, calls = 0;
  // Host 1 of 3: the launcher's gather puts (host + 1) * 10 + byte around this host's bytes.
  gmi::runtime::relay_server server(ends.launcher, 3,
      [&](const void* mine, void* all, std::size_t bytes, const std::function<bool()>&) {
        if (++calls == 2) throw std::runtime_error("host 2 'b' lost: no heartbeat for 5.0 s");
        auto* out = static_cast<unsigned char*>(all);
        for (int h = 0; h < 3; ++h) {
          for (std::size_t i = 0; i < bytes; ++i) out[h * bytes + i] = static_cast<unsigned char>((h + 1) * 10 + i);
        }
        std::memcpy(out + bytes, mine, bytes);
      },
      [&] { ++barriers; });
  std::thread launcher([&] {
    for (int i = 0; i < 200; ++i) {
      try {
        if (!server.serve(10ms, 2000ms)) return;
      } catch (const std::exception&) {
      }
    }
  });
  {
    gmi::runtime::relay_client client(ends.attempt);
    const unsigned char mine[4] = {1, 2, 3, 4};
    std::vector<unsigned char> all(12);
    client.allgather(mine, all.data(), 4, 3, 2000ms);
    CHECK(all == std::vector<unsigned char>{10, 11, 12, 13, 1, 2, 3, 4, 30, 31, 32, 33});
    try {
      client.allgather(mine, all.data(), 4, 3, 2000ms);
      FAIL("the launcher's failure must come back as an exception");
    } catch (const gmi::comm_error& e) {
      CHECK(std::string(e.what()).find("host 2 'b' lost: no heartbeat for 5.0 s") != std::string::npos);
    }
    client.barrier(2000ms);
    CHECK(barriers == 1);
  }  // the client closes its end: the launcher's serve() returns false
  launcher.join();
  CHECK(server.served() == 3);
}

TEST_CASE("multihost.relay_waits_are_bounded" * doctest::timeout(30)) {
  const gmi::runtime::relay_pair ends = gmi::runtime::relay_pair::make();
  gmi::runtime::relay_client client(ends.attempt);
  const char mine[2] = {1, 2};
  char all[4];
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(client.allgather(mine, all, 2, 2, 200ms), gmi::comm_error);  // nobody serves
  CHECK(std::chrono::steady_clock::now() - t0 < 5s);
  std::atomic<bool> stop{false};
  std::thread stopper([&] {
    std::this_thread::sleep_for(50ms);
    stop = true;
  });
  CHECK_THROWS_WITH_AS(client.allgather(mine, all, 2, 2, 10000ms, [&] { return stop.load(); }), doctest::Contains("stopped"),
                       gmi::comm_error);
  stopper.join();
  ::close(ends.launcher);
}

TEST_CASE("multihost.relay_launcher_gives_up_a_gather_of_an_attempt_that_ended" * doctest::timeout(30)) {
  const gmi::runtime::relay_pair ends = gmi::runtime::relay_pair::make();
  bool saw_gone = false;
  gmi::runtime::relay_server server(ends.launcher, 2,
      [&](const void*, void*, std::size_t, const std::function<bool()>& gone) {
        const auto until = std::chrono::steady_clock::now() + 5s;
        while (!gone()) {  // a gather that never completes, as with a peer host that stopped sending
          if (std::chrono::steady_clock::now() > until) throw std::runtime_error("gone() never turned true");
          std::this_thread::sleep_for(5ms);
        }
        saw_gone = true;
        throw gmi::comm_error("stopped");
      },
      [] {});
  std::thread attempt([&] {  // sends one request, then ends without waiting for the answer
    const gmi::runtime::detail::relay_header h{gmi::runtime::detail::relay_allgather, 2};
    const char mine[2] = {7, 8};
    gmi::runtime::detail::relay_write(ends.attempt, &h, sizeof h);
    gmi::runtime::detail::relay_write(ends.attempt, mine, 2);
    std::this_thread::sleep_for(50ms);
    ::close(ends.attempt);
  });
  CHECK_THROWS(server.serve(2000ms, 2000ms));
  attempt.join();
  CHECK(saw_gone);
  CHECK_FALSE(server.serve(10ms, 100ms));  // the attempt's end is closed: nothing more to serve
}
