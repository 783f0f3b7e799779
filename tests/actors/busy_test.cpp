// cpu_actors::busy_seconds, the actor threads' stepping time: a policy that answers at once leaves the threads busy
// most of the wall time of a run; a policy that answers each hand-off late leaves them mostly waiting; the sum never
// exceeds threads x wall. Each env step of the sim below sleeps, so the fractions do not hang on the CPU's speed.
// With stealing, a thread done with its slice steps the rest of a slow slice; every env still steps once a step.
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

namespace {
// The first half of each group's environments (thread 0's slice of 2) step slowly (`slow`), the rest at once; every
// env counts its steps and those made by a thread other than the one that stepped it first.
struct lopsided_sim {
  using host_sim_concept = ac::host_sim_tag;
  static constexpr int obs_size = 1, act_size = 1;
  std::size_t n;
  std::chrono::microseconds slow;
  std::vector<int> steps = std::vector<int>(n, 0), elsewhere = std::vector<int>(n, 0);
  std::vector<std::thread::id> first = std::vector<std::thread::id>(n);
  [[nodiscard]] std::size_t num_envs() const { return n; }
  [[nodiscard]] int obs_dim() const { return 1; }
  [[nodiscard]] int act_dim() const { return 1; }
  void reset_one(std::size_t, float* obs) { obs[0] = 0; }
  gmi::rl::step_result step_one(std::size_t i, const float* a, float* obs, float*) {
    if ((i % (n / 2)) < n / 4) std::this_thread::sleep_for(slow);
    if (steps[i]++ == 0) first[i] = std::this_thread::get_id();
    if (first[i] != std::this_thread::get_id()) elsewhere[i] += 1;
    obs[0] = a[0] + obs[0];
    return {0.0f, false, false};
  }
  gmi::rl::episode_stats read_stats() { return {}; }
};
}  // namespace

TEST_CASE("actors.run.steal_takes_a_slow_slice" * doctest::timeout(120)) {
  if (ac::available_cores().size() < 2) {
    MESSAGE("actors.run.steal_takes_a_slow_slice needs 2 cores: not run");
    return;
  }
  constexpr int steps = 6;
  for (const bool steal : {false, true}) {
    ac::actor_config c{ac::choose_cores(2), 2};
    c.steal = steal;
    // 16 environments a group, 8 a thread: thread 0's 8 sleep 5 ms a step, thread 1's do not.
    ac::cpu_actors<lopsided_sim> actors(c, std::size_t(32), std::chrono::microseconds(5000));
    answer_after policy{std::chrono::microseconds(0)};
    actors.run(policy, steps);
    const auto& sim = actors.sim();
    int moved = 0;
    for (std::size_t i = 0; i < sim.n; ++i) {
      CHECK(sim.steps[i] == steps);  // every environment stepped once a step, by whichever thread
      moved += sim.elsewhere[i];
    }
    for (float o : actors.observations()) CHECK(o == float(steps));  // each step added its action (1) once
    if (steal) {
      // Thread 1 is done with its slice while thread 0 sleeps through its first env: it takes some of thread 0's.
      CHECK(actors.stolen_steps() > 0);
    } else {
      CHECK(actors.stolen_steps() == 0);
      CHECK(moved == 0);
    }
  }
}
