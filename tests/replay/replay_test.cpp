// Host replay: specs, samplers (chi-square), windows at episode edges, removers, max_times_sampled, limiters.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <chrono>
#include <gmi/replay/replay.hpp>
#include <string>
#include <thread>
#include <vector>

#include "replay/support.hpp"

using namespace gmi::replay;
using replay_test::rollout_data;

namespace {

rollout as_rollout(const rollout_data& d) {
  rollout r;
  for (const auto& c : d.cols) r.columns.push_back(c.data());
  r.horizon = d.horizon;
  r.envs = d.envs;
  if (!d.priorities.empty()) r.priorities = d.priorities.data();
  return r;
}

std::string refusal(const table_spec& s) {
  try {
    host_table t(s);
  } catch (const gmi::config_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("replay.spec.bad_specs_refused_with_one_line") {
  const auto base = replay_test::small_spec(16);
  auto s = base;
  s.capacity = 0;
  std::string m = refusal(s);
  CHECK(m.find("capacity: got 0") != std::string::npos);
  s = base;
  s.columns[1].name = "obs";
  CHECK(refusal(s).find("used once") != std::string::npos);
  s = base;
  s.columns[0].width = 0;
  CHECK(refusal(s).find("\"obs\" width: got 0") != std::string::npos);
  s = base;
  s.done_column = "finished";
  CHECK(refusal(s).find("done_column: got \"finished\"") != std::string::npos);
  s = base;
  s.columns[3].width = 2;
  CHECK(refusal(s).find("done column \"done\" width: got 2") != std::string::npos);
  s = base;
  s.columns.clear();
  CHECK(refusal(s).find("columns: got 0") != std::string::npos);
  s = base;
  s.priority_exponent = -1;
  CHECK(refusal(s).find("priority_exponent") != std::string::npos);
  CHECK(refusal(base).empty());
  CHECK_THROWS_WITH_AS(rate_limiter::sample_to_insert_ratio(2.0, 10, 1.0), doctest::Contains("error_buffer: got 1"),
                       gmi::config_error);
  host_table t(base);
  auto w = t.make_writer(2);
  rollout_data d(4, 3);
  CHECK_THROWS_WITH_AS(t.insert(w, as_rollout(d)), doctest::Contains("rollout.envs: got 3"), gmi::config_error);
  rollout_data big(9, 2);
  CHECK_THROWS_WITH_AS(t.insert(w, as_rollout(big)), doctest::Contains("need <= the table's capacity 16"),
                       gmi::config_error);
  host_batch b;
  rollout_data ok(4, 2);
  t.insert(w, as_rollout(ok));
  CHECK_THROWS_WITH_AS(t.sample(sampler::top_k("reward2"), 2, 1, 1, b), doctest::Contains("replay column: got"),
                       gmi::config_error);
  CHECK_THROWS_WITH_AS(t.sample(sampler::fifo(), 9, 1, 1, b), doctest::Contains("fifo sample (items): got 9"),
                       gmi::config_error);
  CHECK(m.find('\n') == std::string::npos);
}

TEST_CASE("replay.sampler.uniform_chi_square") {
  host_table t(replay_test::small_spec(100));
  auto w = t.make_writer(50);
  rollout_data d(2, 50);
  t.insert(w, as_rollout(d));
  std::vector<double> counts(100, 0.0);
  const std::size_t per = 4096, rounds = 50;
  host_batch b;
  for (std::size_t r = 0; r < rounds; ++r) {
    t.sample(sampler::uniform(), per, 1, 1000 + r, b);
    for (std::size_t i = 0; i < per; ++i) {
      CHECK(b.info.probability[i] == doctest::Approx(0.01));
      counts[b.info.keys[i]] += 1;
    }
  }
  const std::vector<double> p(100, 0.01);
  const double x = replay_test::chi2(counts, p, per * rounds);
  CHECK(x < replay_test::chi2_critical(99));
  // The test can fail: the same counts against a skewed expectation are far past the critical value.
  std::vector<double> skew(100);
  for (int i = 0; i < 100; ++i) skew[i] = (i + 1) / 5050.0;
  CHECK(replay_test::chi2(counts, skew, per * rounds) > 10 * replay_test::chi2_critical(99));
}

TEST_CASE("replay.sampler.prioritized_chi_square") {
  for (double exponent : {1.0, 0.6}) {
    auto spec = replay_test::small_spec(64);
    spec.priority_exponent = exponent;
    host_table t(spec);
    auto w = t.make_writer(64);
    rollout_data d(1, 64);
    d.priorities.resize(64);
    for (int i = 0; i < 64; ++i) d.priorities[i] = (i % 8 == 0) ? 0.0f : static_cast<float>(i + 1);
    t.insert(w, as_rollout(d));
    std::vector<double> p(64), counts(64, 0.0);
    double total = 0;
    for (int i = 0; i < 64; ++i) total += p[i] = std::pow(d.priorities[i], exponent);
    for (auto& v : p) v /= total;
    host_batch b;
    const std::size_t per = 8192, rounds = 30;
    for (std::size_t r = 0; r < rounds; ++r) {
      t.sample(sampler::prioritized(), per, 1, 7 + r, b);
      for (std::size_t i = 0; i < per; ++i) {
        counts[b.info.keys[i]] += 1;
        CHECK(b.info.probability[i] == doctest::Approx(p[b.info.keys[i]]));
      }
    }
    for (int i = 0; i < 64; i += 8) CHECK(counts[i] == 0.0);  // zero priority: never drawn
    CHECK(replay_test::chi2(counts, p, per * rounds) < replay_test::chi2_critical(64 - 8 - 1));
    // Batched priority updates move the distribution: all weight on key 5.
    std::vector<std::int32_t> keys;
    std::vector<float> prios;
    for (int i = 0; i < 64; ++i) keys.push_back(i), prios.push_back(i == 5 ? 3.0f : 0.0f);
    t.update_priorities(keys, prios);
    t.sample(sampler::prioritized(), 256, 1, 99, b);
    for (auto k : b.info.keys) CHECK(k == 5);
  }
}

TEST_CASE("replay.window.episode_edges_and_links") {
  // env 0 ends an episode at time 3; env 1 never does. Horizon 4 per insert, windows cross inserts by links.
  host_table t(replay_test::small_spec(64));
  auto w = t.make_writer(2);
  const auto done = [](std::size_t e, std::size_t time) { return e == 0 && time == 3; };
  rollout_data a(4, 2, 0, done), b2(4, 2, 4, done);
  t.insert(w, as_rollout(a));
  t.insert(w, as_rollout(b2));
  host_batch b;
  t.sample(sampler::fifo(), 16, 6, 1, b);  // every item, oldest first: env 0 t0..3, env 1 t0..3, env 0 t4..7, ...
  const float* obs = b.column<float>(0);
  const auto check_window = [&](std::size_t i, float env, float t0, std::size_t valid) {
    for (std::size_t k = 0; k < 6; ++k) {
      const std::size_t r = i * 6 + k;
      CAPTURE(i);
      CAPTURE(k);
      CHECK(b.mask[r] == (k < valid ? 1.0f : 0.0f));
      CHECK(obs[r * 3 + 0] == (k < valid ? env : 0.0f));
      CHECK(obs[r * 3 + 1] == (k < valid ? t0 + k : 0.0f));
    }
  };
  check_window(0, 0, 0, 4);  // env 0 from t0: episode ends at t3 -> 4 steps, then padding
  check_window(2, 0, 2, 2);  // from t2: t2, t3, padding
  check_window(4, 1, 0, 6);  // env 1 from t0: crosses into the second insert through the link
  check_window(7, 1, 3, 5);  // env 1 from t3: t3..t7, then the end of what was inserted
  check_window(8, 0, 4, 4);  // env 0's new episode from t4: t4..t7
  // FIFO eviction of the oldest steps leaves the later windows whole.
  auto w2 = t.make_writer(1);
  rollout_data c(48, 1, 100);
  t.insert(w2, as_rollout(c));                     // 64 items now: nothing evicted yet
  rollout_data c2(4, 1, 148);
  t.insert(w2, as_rollout(c2));                    // evicts env 0's t0..t3
  t.sample(sampler::fifo(), 1, 6, 1, b);
  CHECK(b.column<float>(0)[0] == 1.0f);            // the oldest left is env 1's t0
  CHECK(b.mask[4] == 1.0f);
}

TEST_CASE("replay.sampler.fifo_lifo_top_k") {
  host_table t(replay_test::small_spec(32));
  auto w = t.make_writer(2);
  rollout_data d(5, 2);
  t.insert(w, as_rollout(d));
  host_batch b;
  t.sample(sampler::lifo(), 3, 1, 0, b);
  CHECK(b.column<float>(0)[0 * 3 + 0] == 1.0f);  // env 1 was written last (env-major order within an insert)
  CHECK(b.column<float>(0)[0 * 3 + 1] == 4.0f);
  CHECK(b.column<float>(0)[1 * 3 + 1] == 3.0f);
  t.sample(sampler::top_k("ret"), 4, 1, 0, b);  // ret = env * 1000 + time
  const float* ret = b.column<float>(4);
  CHECK(ret[0] == 1004.0f);
  CHECK(ret[1] == 1003.0f);
  CHECK(ret[3] == 1001.0f);
  t.sample(sampler::fifo(), 2, 1, 0, b);
  CHECK(b.column<float>(0)[1] == 0.0f);
  CHECK(b.column<float>(0)[4] == 1.0f);
}

TEST_CASE("replay.remover.semantics") {
  const auto times_of = [](host_table& t, std::size_t n) {
    host_batch b;
    t.sample(sampler::fifo(), n, 1, 0, b);
    std::vector<float> out;
    for (std::size_t i = 0; i < n; ++i) out.push_back(b.column<float>(0)[i * 3 + 1]);
    return out;
  };
  SUBCASE("fifo evicts the oldest") {
    host_table t(replay_test::small_spec(4));
    auto w = t.make_writer(1);
    for (std::size_t i = 0; i < 6; ++i) t.insert(w, as_rollout(rollout_data(1, 1, i)));
    CHECK(times_of(t, 4) == std::vector<float>{2, 3, 4, 5});
  }
  SUBCASE("lifo evicts the newest") {
    auto s = replay_test::small_spec(4);
    s.remove = remover::lifo;
    host_table t(s);
    auto w = t.make_writer(1);
    for (std::size_t i = 0; i < 6; ++i) t.insert(w, as_rollout(rollout_data(1, 1, i)));
    CHECK(times_of(t, 4) == std::vector<float>{0, 1, 2, 5});
  }
  for (remover r : {remover::min_heap, remover::max_heap}) {
    auto s = replay_test::small_spec(4);
    s.remove = r;
    host_table t(s);
    auto w = t.make_writer(1);
    const float prio[] = {5, 1, 9, 3, 4, 7};
    for (std::size_t i = 0; i < 6; ++i) {
      rollout_data d(1, 1, i);
      d.priorities = {prio[i]};
      t.insert(w, as_rollout(d));
    }
    // min_heap: inserting 4 evicts 1 (time 1), inserting 7 evicts 3 (time 3); max_heap: 9 then 5 go.
    CHECK(times_of(t, 4) == (r == remover::min_heap ? std::vector<float>{0, 2, 4, 5} : std::vector<float>{1, 3, 4, 5}));
  }
  SUBCASE("max_times_sampled removes after that many samples") {
    auto s = replay_test::small_spec(8);
    s.max_times_sampled = 2;
    host_table t(s);
    auto w = t.make_writer(4);
    t.insert(w, as_rollout(rollout_data(1, 4)));
    host_batch b;
    t.sample(sampler::fifo(), 2, 1, 0, b);
    CHECK(t.size() == 4);
    t.sample(sampler::fifo(), 2, 1, 0, b);
    CHECK(t.size() == 2);  // the two oldest reached 2 samples
    t.sample(sampler::fifo(), 2, 1, 0, b);
    CHECK(b.column<float>(0)[0] == 2.0f);
    CHECK(t.counters().deletes == 2);
  }
}

TEST_CASE("replay.rate_limiter.min_size_times_out_with_a_clear_error" * doctest::timeout(20)) {
  host_table t(replay_test::small_spec(16), rate_limiter::min_size(5), std::chrono::milliseconds(50));
  auto w = t.make_writer(2);
  t.insert(w, as_rollout(rollout_data(2, 2)));
  host_batch b;
  CHECK_THROWS_WITH_AS(t.sample(sampler::uniform(), 1, 1, 0, b),
                       doctest::Contains("rate limiter still says no: table size 4"), rate_limit_error);
  t.insert(w, as_rollout(rollout_data(1, 2)));
  t.sample(sampler::uniform(), 1, 1, 0, b);
  // A waiting sampler is released by an insert on another thread.
  host_table t2(replay_test::small_spec(16), rate_limiter::min_size(3), std::chrono::seconds(5));
  auto w2 = t2.make_writer(1);
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    t2.insert(w2, as_rollout(rollout_data(3, 1)));
  });
  t2.sample(sampler::uniform(), 2, 1, 0, b);
  later.join();
  CHECK(t2.counters().samples == 2);
}

TEST_CASE("replay.rate_limiter.sample_to_insert_ratio" * doctest::timeout(30)) {
  // 2 samples per insert, min size 4, error buffer 8: inserts stop 8 samples ahead, samples 8 behind.
  host_table t(replay_test::small_spec(1024), rate_limiter::sample_to_insert_ratio(2.0, 4, 8.0),
               std::chrono::milliseconds(40));
  auto w = t.make_writer(1);
  host_batch b;
  for (int i = 0; i < 4; ++i) t.insert(w, as_rollout(rollout_data(1, 1, i)));  // below min size: free
  // diff = inserts * 2 - samples = 8 = offset; the max is 16: 4 more inserts, then a wait.
  for (int i = 0; i < 4; ++i) t.insert(w, as_rollout(rollout_data(1, 1, 4 + i)));
  CHECK_THROWS_WITH_AS(t.insert(w, as_rollout(rollout_data(1, 1, 9))), doctest::Contains("(sample more)"),
                       rate_limit_error);
  t.sample(sampler::uniform(), 16, 1, 0, b);  // diff 0 = min
  CHECK_THROWS_WITH_AS(t.sample(sampler::uniform(), 1, 1, 0, b), doctest::Contains("(insert more)"),
                       rate_limit_error);
  CHECK_THROWS_WITH_AS(t.sample(sampler::uniform(), 17, 1, 0, b), doctest::Contains("2 * error_buffer"),
                       gmi::config_error);
  // Threads held to the ratio: a producer of 400 inserts and a consumer of 800 samples finish together.
  host_table q(replay_test::small_spec(4096), rate_limiter::sample_to_insert_ratio(2.0, 4, 8.0),
               std::chrono::seconds(10));
  auto wq = q.make_writer(1);
  std::atomic<long> worst{0};
  std::thread producer([&] {
    for (int i = 0; i < 400; ++i) q.insert(wq, as_rollout(rollout_data(1, 1, i)));
  });
  host_batch qb;
  for (int i = 0; i < 396; ++i) {
    q.sample(sampler::uniform(), 2, 1, i, qb);
    const auto c = q.counters();
    const long diff = static_cast<long>(c.inserts) * 2 - static_cast<long>(c.samples);
    worst = std::max(worst.load(), std::abs(diff - 8));
  }
  producer.join();
  CHECK(worst.load() <= 10);
  CHECK(q.counters().inserts == 400);
}

TEST_CASE("replay.rate_limiter.queue") {
  host_table t(replay_test::small_spec(64), rate_limiter::queue(3), std::chrono::milliseconds(30));
  auto w = t.make_writer(1);
  for (int i = 0; i < 3; ++i) t.insert(w, as_rollout(rollout_data(1, 1, i)));
  CHECK_THROWS_AS(t.insert(w, as_rollout(rollout_data(1, 1, 3))), rate_limit_error);
  host_batch b;
  t.sample(sampler::fifo(), 1, 1, 0, b);
  t.insert(w, as_rollout(rollout_data(1, 1, 3)));
}
