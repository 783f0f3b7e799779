// CPU actors on host cores: same numbers as a serial rl::env_batch run for the same seed, the double-buffered
// loop overlaps one group's stepping with the other group's inference (shown by the order of events, no timing),
// and impossible core counts are refused in one line.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gmi/actors/cpu_actors.hpp>
#include <gmi/envs/pendulum.hpp>

namespace {
namespace ac = gmi::actors;
using pend = gmi::envs::pendulum;

// The deterministic "policy" both runs use: an action from the observation alone.
void act_from(const float* obs, float* action) { action[0] = 2.0f * std::tanh(1.3f * obs[0] - 0.7f * obs[2] + 0.2f * obs[1]); }

int cores_here() { return int(ac::available_cores().size()); }

// A policy that answers on the calling thread at once and records what it saw.
struct inline_policy {
  std::vector<std::vector<float>> obs_by_step_group;  // [(k * groups + g)] -> the group's observations
  std::vector<std::vector<float>> rewards_by_step_group;
  int groups = 2;
  int offset = 0;  // added to b.step, so that a later run's records follow the earlier run's
  void submit(const ac::group_batch& b, ac::handoff& ready) {
    const std::size_t at = std::size_t((offset + b.step) * groups + b.group);
    if (obs_by_step_group.size() <= at) obs_by_step_group.resize(at + 1), rewards_by_step_group.resize(at + 1);
    obs_by_step_group[at].assign(b.obs.data(), b.obs.data() + b.obs.size());
    if (b.step > 0) rewards_by_step_group[at].assign(b.rewards.data(), b.rewards.data() + b.rewards.size());
    if (!b.needs_actions) return;
    for (std::size_t i = 0; i < b.num_envs; ++i) act_from(b.obs.data() + i * 3, b.actions.data() + i);
    ready.signal();
  }
};

}  // namespace

TEST_CASE("actors.cores.refuse_impossible_counts") {
  const int n = cores_here();
  CHECK_THROWS_WITH_AS((void)ac::choose_cores(n + 1), doctest::Contains("actor cores: got"), gmi::config_error);
  CHECK_THROWS_AS((void)ac::choose_cores(0), gmi::config_error);
  CHECK_THROWS_WITH_AS(ac::actor_threads(std::vector<int>{100000}), doctest::Contains("actor core: got 100000"),
                       gmi::config_error);
  try {
    (void)ac::choose_cores(n + 7);
    FAIL("choose_cores accepted more cores than there are");
  } catch (const gmi::config_error& e) {
    const std::string what = e.what();
    CHECK(what.find('\n') == std::string::npos);  // one line
    CHECK(what.find("need 1.." + std::to_string(n)) != std::string::npos);
  }
  CHECK(ac::choose_cores(n).size() == std::size_t(n));
}

TEST_CASE("actors.threads.pinned_to_their_cores") {
  const auto cores = ac::choose_cores(std::min(2, cores_here()));
  ac::actor_threads threads(cores);
  std::vector<int> seen(cores.size(), -1);
  threads.run([&](int t) { seen[std::size_t(t)] = ac::current_core(); });
  for (std::size_t t = 0; t < cores.size(); ++t) CHECK(seen[t] == cores[t]);
}

TEST_CASE("actors.batch_env.equals_serial_env_batch") {
  static_assert(gmi::batch_env<ac::cpu_actors<ac::env_sim<pend>>>);
  constexpr int n = 40, steps = 450;  // past max_steps: auto-resets and truncation included
  const auto cores = ac::choose_cores(std::min(2, cores_here()));
  ac::cpu_actors<ac::env_sim<pend>> actors({cores, 2}, n, 11u);
  gmi::rl::env_batch<pend, gmi::exec::host> serial(n, 11u, {}, gmi::exec::host{1});
  std::vector<float> oa(n * 3), ob(n * 3), act(n), ra(n), rb(n);
  std::vector<std::uint8_t> ta(n), tb(n), ua(n), ub(n);
  actors.reset({oa.data(), oa.size()});
  serial.reset({ob.data(), ob.size()});
  CHECK(oa == ob);
  int resets = 0;
  for (int k = 0; k < steps; ++k) {
    for (int i = 0; i < n; ++i) act_from(oa.data() + i * 3, act.data() + i);
    actors.step({act.data(), act.size()}, {oa.data(), oa.size()}, {ra.data(), ra.size()}, {ta.data(), ta.size()},
                {ua.data(), ua.size()});
    serial.step({act.data(), act.size()}, {ob.data(), ob.size()}, {rb.data(), rb.size()}, {tb.data(), tb.size()},
                {ub.data(), ub.size()});
    REQUIRE(oa == ob);
    REQUIRE(ra == rb);
    REQUIRE(ua == ub);
    REQUIRE(ta == tb);
    for (auto u : ua) resets += u;
  }
  CHECK(resets >= n);  // every env hit its time limit at least once
  const auto sa = actors.read_stats(), sb = serial.read_stats();
  CHECK(sa.episodes == sb.episodes);
  CHECK(sa.return_sum == sb.return_sum);
}

TEST_CASE("actors.run.equals_serial_env_batch") {
  constexpr int n = 24, steps = 230;
  const auto cores = ac::choose_cores(std::min(2, cores_here()));
  ac::cpu_actors<ac::env_sim<pend>> actors({cores, 2}, n, 5u);
  inline_policy policy;
  actors.run(policy, 120);
  policy.offset = 121;
  actors.run(policy, steps - 120);  // a second run continues the same episodes (its step 0 repeats the last obs)
  gmi::rl::env_batch<pend, gmi::exec::host> serial(n, 5u, {}, gmi::exec::host{1});
  std::vector<float> obs(n * 3), act(n), rew(n);
  std::vector<std::uint8_t> te(n), tr(n);
  serial.reset({obs.data(), obs.size()});
  const std::size_t half = n / 2;
  auto group_rows = [&](const std::vector<float>& all, int g, std::size_t width) {
    return std::vector<float>(all.begin() + long(g * half * width), all.begin() + long((g + 1) * half * width));
  };
  // policy records: first run steps 0..120, second run 0..(steps-120); map serial step s to them.
  auto recorded = [&](int s, int g) -> const std::vector<float>& {
    const int k = s <= 120 ? s : s - 120 + 121;
    return policy.obs_by_step_group[std::size_t(k * 2 + g)];
  };
  for (int s = 0; s <= steps; ++s) {
    for (int g = 0; g < 2; ++g) REQUIRE(recorded(s, g) == group_rows(obs, g, 3));
    if (s == steps) break;
    if (s > 0) {
      const int k = s <= 120 ? s : s - 120 + 121;
      for (int g = 0; g < 2; ++g) REQUIRE(policy.rewards_by_step_group[std::size_t(k * 2 + g)] == group_rows(rew, g, 1));
    }
    for (int i = 0; i < n; ++i) act_from(obs.data() + i * 3, act.data() + i);
    serial.step({act.data(), act.size()}, {obs.data(), obs.size()}, {rew.data(), rew.size()}, {te.data(), te.size()},
                {tr.data(), tr.size()});
  }
}

namespace {
// Answers on its own thread, in submission order, like a CUDA stream. The actions of group g at step k are
// handed back only after the actors began stepping the other group (at step k - 1 for group 0, at step k for
// group 1): a loop that waited for one group's actions before stepping the other could never finish.
struct deferred_policy {
  const ac::event_log* log;
  std::mutex m;
  std::condition_variable cv;
  std::deque<std::pair<ac::group_batch, ac::handoff*>> queue;
  bool quit = false;
  std::atomic<int> timeouts{0};
  std::thread worker{[this] { work(); }};

  explicit deferred_policy(const ac::event_log* l) : log(l) {}
  ~deferred_policy() {
    {
      std::lock_guard lock(m);
      quit = true;
    }
    cv.notify_all();
    worker.join();
  }
  void submit(const ac::group_batch& b, ac::handoff& ready) {
    if (!b.needs_actions) return;
    std::lock_guard lock(m);
    queue.emplace_back(b, &ready);
    cv.notify_all();
  }
  void work() {
    for (;;) {
      std::pair<ac::group_batch, ac::handoff*> job;
      {
        std::unique_lock lock(m);
        cv.wait(lock, [&] { return quit || !queue.empty(); });
        if (quit) return;
        job = queue.front();
        queue.pop_front();
      }
      const auto& [b, ready] = job;
      const int other = 1 - b.group, other_step = b.group == 0 ? b.step - 1 : b.step;
      if (other_step >= 0) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (log->find(ac::event_kind::step_begin, other, other_step) < 0) {
          if (std::chrono::steady_clock::now() > deadline) {
            timeouts += 1;
            break;
          }
          std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
      }
      for (std::size_t i = 0; i < b.num_envs; ++i) act_from(b.obs.data() + i * 3, b.actions.data() + i);
      ready->signal();
    }
  }
};
}  // namespace

TEST_CASE("actors.run.overlaps_groups" * doctest::timeout(120)) {
  constexpr int n = 16, steps = 30;
  const auto cores = ac::choose_cores(std::min(2, cores_here()));
  ac::cpu_actors<ac::env_sim<pend>> actors({cores, 2}, n, 3u);
  ac::event_log log(4096);
  deferred_policy policy(&log);
  actors.run(policy, steps, &log);
  CHECK(policy.timeouts == 0);
  REQUIRE_FALSE(log.overflowed());
  // Group 0's actions for step k arrive after group 1's stepping at k - 1 began: group 0's inference was in
  // flight while the cores stepped group 1.
  for (int k = 1; k < steps; ++k) {
    const long ready0 = log.find(ac::event_kind::actions_ready, 0, k);
    const long step1 = log.find(ac::event_kind::step_begin, 1, k - 1);
    REQUIRE(ready0 >= 0);
    CHECK(step1 < ready0);
  }
}

TEST_CASE("actors.run.missing_handoff_fails_in_time" * doctest::timeout(60)) {
  struct silent_policy {
    void submit(const ac::group_batch&, ac::handoff&) {}
  } policy;
  const auto cores = ac::choose_cores(1);
  ac::cpu_actors<ac::env_sim<pend>> actors({cores, 2, std::chrono::milliseconds(300)}, 4, 1u);
  CHECK_THROWS_WITH_AS(actors.run(policy, 3), doctest::Contains("none after 300 ms"), gmi::error);
}

TEST_CASE("actors.config.refused_in_one_line") {
  const auto cores = ac::choose_cores(1);
  CHECK_THROWS_WITH_AS((ac::cpu_actors<ac::env_sim<pend>>({cores, 2}, 5, 1u)), doctest::Contains("num_envs: got 5"),
                       gmi::config_error);
  CHECK_THROWS_WITH_AS((ac::cpu_actors<ac::env_sim<pend>>({cores, 0}, 4, 1u)), doctest::Contains("actor groups: got 0"),
                       gmi::config_error);
}
