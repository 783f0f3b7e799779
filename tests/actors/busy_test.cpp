// cpu_actors::busy_seconds, the actor threads' stepping time: a policy that answers at once leaves the threads busy
// most of the wall time of a run; a policy that answers each hand-off late leaves them mostly waiting; the sum never
// exceeds threads x wall. Each env step of the sim below sleeps, so the fractions do not hang on the CPU's speed.
#include <doctest/doctest.h>

#include <chrono>
#include <cstddef>
#include <thread>
#include <vector>

#include <gmi/actors/cpu_actors.hpp>

namespace {
namespace ac = gmi::actors;

// A host_sim whose every env step takes `step_time` (slept): 1 observation, 1 action, no episodes end.
struct sleepy_sim {
  using host_sim_concept = ac::host_sim_tag;
  static constexpr int obs_size = 1, act_size = 1;
  std::size_t n;
  std::chrono::microseconds step_time;
  [[nodiscard]] std::size_t num_envs() const { return n; }
  [[nodiscard]] int obs_dim() const { return 1; }
  [[nodiscard]] int act_dim() const { return 1; }
  void reset_one(std::size_t, float* obs) { obs[0] = 0; }
  gmi::rl::step_result step_one(std::size_t, const float* a, float* obs, float*) {
    std::this_thread::sleep_for(step_time);
    obs[0] = a[0];
    return {0.0f, false, false};
  }
  gmi::rl::episode_stats read_stats() { return {}; }
};

struct answer_after {
  std::chrono::microseconds delay;
  void submit(const ac::group_batch& b, ac::handoff& ready) {
    if (!b.needs_actions) return;
    std::this_thread::sleep_for(delay);
    for (float& a : b.actions) a = 1.0f;
    ready.signal();
  }
};

// Busy fraction of one run of `steps` steps with the given policy delay.
double busy_fraction(std::chrono::microseconds delay, int steps) {
  const int threads = std::min(2, int(ac::available_cores().size()));
  ac::cpu_actors<sleepy_sim> actors({ac::choose_cores(threads), 2}, std::size_t(32 * threads),
                                    std::chrono::microseconds(300));
  answer_after policy{delay};
  const double busy0 = actors.busy_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  actors.run(policy, steps);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double busy = actors.busy_seconds() - busy0;
  CHECK(busy > 0.0);
  CHECK(busy <= threads * wall);
  return busy / (threads * wall);
}
}  // namespace

TEST_CASE("actors.run.busy_fraction_follows_the_policy" * doctest::timeout(120)) {
  // At once: while the cores step one group the other's actions are ready, so they rarely wait.
  CHECK(busy_fraction(std::chrono::microseconds(0), 10) > 0.5);
  // 50 ms per hand-off against about 5 ms of stepping a group and thread: the cores mostly wait.
  CHECK(busy_fraction(std::chrono::microseconds(50000), 4) < 0.3);
}
