// Worker scenarios for the runtime tests, and the hook that makes a re-exec'd test binary a worker.
#include "runtime/scenarios.hpp"

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <numeric>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gmi/runtime/launcher.hpp>

namespace gmi_test {

namespace {

using namespace std::chrono_literals;

// Beats until the supervisor asks to stop, for at most `limit`.
void beat_until_stopped(gmi::runtime::context& ctx, std::chrono::milliseconds limit = 30'000ms) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!ctx.stop_requested() && std::chrono::steady_clock::now() < until) {
    ctx.heartbeat();
    std::this_thread::sleep_for(5ms);
  }
}

void expect(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error("check failed: " + what);
}

void comm(gmi::runtime::context& ctx) {
  const int r = ctx.rank(), n = ctx.world();
  // Ring: send my rank's vector to the right, receive from the left; larger than a ring to test streaming.
  std::vector<int> mine(50'000);
  std::iota(mine.begin(), mine.end(), r * 1'000'000);
  ctx.send(mine, (r + 1) % n);
  const std::vector<int> left = ctx.recv_as<int>((r + n - 1) % n);
  expect(left.size() == mine.size(), "ring message size");
  expect(left.front() == ((r + n - 1) % n) * 1'000'000 && left.back() == left.front() + 49'999, "ring message data");
  // Allreduce over everyone, then over the group of even ranks.
  std::vector<double> v(1000);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = r + static_cast<double>(i);
  ctx.allreduce(v, ctx.all());
  const double rank_sum = n * (n - 1) / 2.0;
  for (std::size_t i = 0; i < v.size(); ++i) expect(v[i] == rank_sum + n * static_cast<double>(i), "allreduce sum");
  std::vector<int> mx{r};
  ctx.allreduce(mx, ctx.all(), gmi::runtime::reduce_op::max);
  expect(mx[0] == n - 1, "allreduce max");
  if (!ctx.id().groups.empty()) {
    const auto& g = ctx.group(0);
    bool in = false;
    for (int m : g) in = in || m == r;
    if (in) {
      std::vector<long> one{1};
      ctx.allreduce(one, g);
      expect(one[0] == static_cast<long>(g.size()), "group allreduce");
    }
  }
  ctx.barrier(ctx.all());
}

}  // namespace

void run_scenario(gmi::runtime::context& ctx, const std::string& scenario, int victim) {
  const bool me = ctx.rank() == victim;
  if (scenario == "ok") {
    for (int i = 0; i < 5; ++i) ctx.heartbeat();
  } else if (scenario == "beat") {
    beat_until_stopped(ctx);
  } else if (scenario == "crash") {
    if (me) {
      std::this_thread::sleep_for(200ms);
      std::abort();
    }
    beat_until_stopped(ctx);
  } else if (scenario == "throw") {
    if (me) {
      std::this_thread::sleep_for(100ms);
      throw std::runtime_error("boom from rank " + std::to_string(ctx.rank()));
    }
    beat_until_stopped(ctx);
  } else if (scenario == "exit3") {
    if (me) std::exit(3);
    beat_until_stopped(ctx);
  } else if (scenario == "hang") {
    if (me) {
      // Stops beating but keeps honouring the stop flag (a livelocked loop).
      while (!ctx.stop_requested()) std::this_thread::sleep_for(5ms);
      return;
    }
    beat_until_stopped(ctx);
  } else if (scenario == "hang_hard") {
    if (me) {
      if (std::getenv("GMI_TEST_IGNORE_TERM")) signal(SIGTERM, SIG_IGN);
      std::this_thread::sleep_for(3s);  // ignores the stop flag (threads: detached; processes: killed)
      return;
    }
    beat_until_stopped(ctx);
  } else if (scenario == "comm") {
    comm(ctx);
  } else if (scenario == "quit_early") {
    // The victim finishes at once; everyone else waits for a message from it that never comes.
    if (me) return;
    ctx.set_timeout(5000ms);
    (void)ctx.recv(victim);
  } else if (scenario == "silent_peer") {
    // The victim stays alive but never sends: the receivers time out.
    if (me) {
      beat_until_stopped(ctx, 5000ms);
      return;
    }
    ctx.set_timeout(300ms);
    (void)ctx.recv(victim);
  } else {
    throw std::runtime_error("unknown scenario " + scenario);
  }
}

namespace {

// A re-exec'd test binary is a GMI: run its scenario and exit before doctest starts.
const int worker_hook = [] {
  const auto id = gmi::runtime::this_gmi();
  if (!id) return 0;
  const char* scenario = std::getenv("GMI_TEST_SCENARIO");
  const char* victim = std::getenv("GMI_TEST_VICTIM");
  std::exit(gmi::runtime::run_worker(*id, [&](gmi::runtime::context& ctx) {
    run_scenario(ctx, scenario ? scenario : "ok", victim ? std::atoi(victim) : -1);
  }));
}();

}  // namespace

}  // namespace gmi_test
